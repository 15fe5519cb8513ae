"""The app's start-up (``recourse.ui.startup``): the server answers before the models are loaded,
events that run a model wait for them and say so, and a model that fails to load in the
background stops the app as a failed check before serving does (one line, exit code 2)."""

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import gradio as gr
import pytest

from recourse.ui import startup
from recourse.ui.startup import RESOURCES, Loading, after_loading
from tests.conftest import ROOT

# --- the loading, in this process, with a stand-in loader -----------------------------------


class Gate:
    """A loader that stops before each resource until let through (``open``)."""

    def __init__(self, fail: BaseException | None = None, variants: int = 3):
        self.opened = threading.Event()
        self.began = threading.Event()
        self.fail, self.variants = fail, variants

    def load(self, log, loaded) -> None:
        self.began.set()
        assert self.opened.wait(30)
        if self.fail is not None:
            raise self.fail
        loaded("generator")
        loaded("judges")
        for _ in range(self.variants):
            loaded("variant")
        loaded("variants")


def started(gate: Gate, warm=lambda log: None) -> Loading:
    loading = Loading(load=gate.load, warm=warm, variants=gate.variants)
    loading.start(log=lambda line: None)
    assert gate.began.wait(30)
    return loading


class Recorded(gr.Progress):
    """A progress bar that keeps what it was told."""

    def __init__(self):
        super().__init__()
        self.told = []

    def __call__(self, progress, desc=None, *args, **kwargs):
        self.told.append(desc)


def steps(face, variant, progress=gr.Progress()):
    """An event function as the app's: a generator taking a progress bar."""
    yield {"status": f"audited {face} on {variant}"}


def test_nothing_waits_when_no_loading_was_started():
    """Tests and scripts import the app without launching it: its events run at once, as before."""
    loading = Loading(load=lambda log, loaded: pytest.fail("nothing loads"), warm=lambda log: pytest.fail("no warm-up"))
    assert loading.ready() and list(loading.waiting()) == []
    status = gr.Markdown()
    assert list(after_loading(steps, status, loading=loading)("face", "ptq-int8")) == [
        {"status": "audited face on ptq-int8"}]
    assert after_loading(lambda: "choices", loading=loading)() == "choices"


@pytest.mark.slow
def test_an_event_waits_for_the_loading_and_says_so():
    gate = Gate()
    loading = started(gate)
    status = gr.Markdown()
    event = after_loading(steps, status, loading=loading)
    progress = Recorded()
    seen = []
    runner = threading.Thread(target=lambda: seen.extend(event("face", "ptq-int8", progress)))
    runner.start()
    time.sleep(1.5)
    try:
        assert runner.is_alive() and not loading.ready()  # waiting, not failing
        assert seen and all(set(item) == {status} for item in seen)  # only notes so far
    finally:
        gate.opened.set()
    runner.join(30)
    notes = [item[status] for item in seen[:-1]]
    assert notes and all(note.startswith("Loading the models (first start), ") for note in notes)
    assert progress.told == notes  # the same words on its progress bar
    assert seen[-1] == {"status": "audited face on ptq-int8"}  # then the event's own outputs
    assert loading.ready() and loading.variants_loaded == 3
    assert loading.warmed.wait(30)  # the warm-up after the loading


def test_the_note_says_what_is_loading():
    begin = threading.Event()
    loading = Loading(load=lambda log, loaded: None, warm=lambda log: None, variants=35)
    loading.start(log=lambda line: None, when=begin.is_set)  # not begun: everything pending
    try:
        assert loading.note() == "Loading the models (first start), 0 s so far: the generator and the robust judge…"
        loading._loaded("generator")
        assert loading.note().endswith(": the stronger judge and the face descriptor…")
        loading._loaded("judges")
        for _ in range(12):
            loading._loaded("variant")
        assert loading.note().endswith(": 12 of 35 variants loaded…")
        assert not loading.ready() and loading.ready(needs=("generator", "judges"))
    finally:
        begin.set()


def test_a_blocking_event_waits_until_loaded():
    """The variant list's labels (the page's load event): no status line, so it only waits."""
    gate = Gate()
    loading = started(gate)
    answers = []
    runner = threading.Thread(target=lambda: answers.append(after_loading(lambda: "labels", loading=loading)()))
    runner.start()
    time.sleep(0.5)
    try:
        assert runner.is_alive() and answers == []
    finally:
        gate.opened.set()
    runner.join(30)
    assert answers == ["labels"]


class Demo:
    """What ``Loading.serve`` uses of a launched gr.Blocks."""

    def __init__(self):
        self.is_running = True
        self.closed = False

    def close(self, verbose=True):
        self.is_running, self.closed = False, True


@pytest.mark.parametrize("error, code, line", [
    (startup.CheckpointError("checkpoints/generator: the generator does not load (bad config)"), 2,
     "The app cannot start: checkpoints/generator: the generator does not load (bad config)"),
    (RuntimeError("nobody foresaw this"), 1, "The app cannot start: loading the models failed (RuntimeError)"),
], ids=["broken-generator", "unexpected"])
def test_a_failed_loading_stops_the_app_and_answers_whoever_waits(error, code, line, capsys):
    gate = Gate(fail=error)
    loading = started(gate, warm=lambda log: pytest.fail("no warm-up after a failure"))
    status = gr.Markdown()
    waiting = after_loading(steps, status, loading=loading)("face", "ptq-int8")
    assert next(waiting)[status].startswith("Loading the models")
    gate.opened.set()
    with pytest.raises(gr.Error, match="The app cannot start"):
        list(waiting)
    demo = Demo()
    with pytest.raises(SystemExit) as stopped:
        loading.serve(demo)
    assert stopped.value.code == code and demo.closed
    assert capsys.readouterr().err.strip() == line


def test_the_app_serves_until_closed():
    loading = Loading(load=lambda log, loaded: [loaded(r) for r in RESOURCES], warm=lambda log: None)
    loading.start(log=lambda line: None)
    demo = Demo()
    threading.Timer(0.3, demo.close).start()
    loading.serve(demo)  # returns: no error, no exit
    assert loading.error is None


# --- python app.py, for real --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_env(tmp_path: Path, **more) -> tuple[dict, str]:
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_TEMP_DIR": str(tmp_path / "gradio"), **more}
    env.pop("RECOURSE_TEMP_BASE", None)
    return env, f"http://127.0.0.1:{port}/"


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


BLOCKED = """
import threading
import gradio as gr
from recourse.ui import startup
never = threading.Event()
startup.LOADING._load = lambda log, loaded: never.wait()
startup.LOADING.start(log=print)  # the loading begins at once, and never ends
import app
assert isinstance(app.demo, gr.Blocks) and app.demo.fns and not startup.LOADING.ready()
print("layout built while loading")
"""


@pytest.mark.slow
def test_the_layout_is_built_without_waiting_for_the_loading(tmp_path):
    env, _ = app_env(tmp_path)
    done = subprocess.run([sys.executable, "-c", BLOCKED], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0 and "layout built while loading" in done.stdout, done.stderr[-2000:]


# app.py as ``python app.py`` runs it, its loading held until a file appears, then the real one
HELD = """
import os, runpy, sys, time
from recourse.ui import startup
flag = sys.argv[1]
def held(log, loaded):
    while not os.path.exists(flag):
        time.sleep(0.1)
    startup.load_models(log, loaded)
startup.LOADING._load = held
sys.argv = ["app.py"]
runpy.run_path("app.py", run_name="__main__")
"""


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_the_app_serves_before_its_models_load_and_its_first_audit_waits_for_them(tmp_path):
    """The layout is built and served while the loading is held; an audit asked for meanwhile
    says that the models are loading, then runs once they are."""
    from gradio_client import Client, handle_file

    flag = tmp_path / "let-it-load"
    env, url = app_env(tmp_path)
    log = open(tmp_path / "app.log", "w")
    process = subprocess.Popen([sys.executable, "-c", HELD, str(flag)], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not answers(url):
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "app.log").read_text()[-3000:]
            time.sleep(0.2)
        client = Client(url, verbose=False)
        caption, _, _ = client.predict("test split, denoised generator", api_name="/benchmark")  # no model: at once
        assert "test split" in caption
        job = client.submit(handle_file(str(ROOT / "assets" / "examples" / "grace-hopper.jpg")), "ptq-int8",
                            "Smiling", "flip the full-precision decision", 120, 40, 0, 1.0, "denoised", 2, 1.0,
                            api_name="/audit")
        while not job.outputs() and not job.done():
            time.sleep(0.2)
        status = "".join(str(value) for value in job.outputs()[0])
        assert "Loading the models (first start)" in status and "the generator and the robust judge" in status
        assert not job.done()
        flag.touch()
        outputs = job.result(timeout=600)
        values = next(o for o in outputs if isinstance(o, dict) and "recourse" in o)
        assert values["verdict"] and values["recourse"]
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
    text = (tmp_path / "app.log").read_text()
    assert "models loaded in" in text and "Traceback" not in text, text[-3000:]


@pytest.mark.slow
def test_a_generator_that_fails_to_load_in_the_background_stops_the_app(tmp_path):
    """Its files match their manifest (checked before serving), but diffusers cannot read its
    denoiser's config: found by the background loading, after the server answered; the app
    stops with the same one line and exit code 2 as a broken classifier."""
    from recourse.checkpoints import write_manifest

    home = tmp_path / "home"
    shutil.copytree(ROOT / "checkpoints" / "classifier", home / "checkpoints" / "classifier")
    shutil.copytree(ROOT / "checkpoints" / "generator", home / "checkpoints" / "generator")
    (home / "assets").symlink_to(ROOT / "assets")
    (home / "checkpoints" / "generator" / "denoiser" / "config.json").write_text("{not json")
    write_manifest(home / "checkpoints" / "generator")
    env, url = app_env(tmp_path, RECOURSE_HOME=str(home))
    done = subprocess.run([sys.executable, "app.py"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Running on local URL" in done.stdout  # it served first
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("The app cannot start: checkpoints/generator: the generator does not load"), done.stderr
    assert "Traceback" not in done.stderr and str(home) not in done.stderr


def test_the_warm_up_audit_can_be_switched_off(monkeypatch):
    from recourse.ui import startup

    monkeypatch.setattr(startup, "audit_image", lambda *a, **k: pytest.fail("no warm-up audit under the switch"))
    monkeypatch.setenv(startup.WARM_UP, "0")
    lines = []
    startup.warm_up(log=lines.append)
    assert lines == ["warm-up skipped (RECOURSE_WARM_UP=0)"]
