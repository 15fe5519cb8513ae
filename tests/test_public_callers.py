"""The app as a Space runs it (``SPACE_ID`` set: public mode, one trusted proxy), on loopback:
forged X-Forwarded-For entries do not make one peer many callers, and a crowd of real callers
leaves a newcomer room in the queue. The pieces are tested on their own in test_callers.py."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from scripts.figures.app_screenshot import app_process

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "examples" / "grace-hopper.jpg"
TARGET = "flip the full-precision decision"
CHEAP = (20, 40, 0, 0.0, "denoised", 2, 1.0)  # steps, cone, seed, margin, method, edit steps, sigma

pytestmark = [pytest.mark.slow, pytest.mark.requires("committed_variants")]


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """``(url, fn_index, data)``: the app in Space mode, and one cheap audit of an uploaded photo
    as a raw queue request. The server is stopped at the end with its queue still full."""
    import httpx

    folder = tmp_path_factory.mktemp("space")
    saved = {name: os.environ.get(name) for name in ("SPACE_ID", "GRADIO_TEMP_DIR", "RECOURSE_PUBLIC")}
    os.environ.update(SPACE_ID="someone/recourse-audit", GRADIO_TEMP_DIR=str(folder / "gradio"))
    os.environ.pop("RECOURSE_PUBLIC", None)
    try:
        with app_process(timeout=600, log=folder / "app.log") as (url, _):
            uploaded = httpx.post(f"{url}gradio_api/upload", timeout=60,
                                  files={"files": ("face.jpg", EXAMPLE.read_bytes(), "image/jpeg")}).json()[0]
            image = {"path": uploaded, "meta": {"_type": "gradio.FileData"}, "orig_name": "face.jpg"}
            config = httpx.get(f"{url}config", timeout=30).json()
            index, event = next((i, d) for i, d in enumerate(config["dependencies"]) if d.get("api_name") == "audit")
            defaults = {c["id"]: c.get("props", {}).get("value") for c in config["components"]}
            leading = [image, None, "ptq-int8", "Smiling", TARGET, *CHEAP]
            data = [*leading, *(defaults.get(i) for i in event["inputs"][len(leading):])]
            yield url, index, data
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _joins(url: str, index: int, data: list, forwarded: list[str]) -> list[int]:
    """Status codes of one audit joined per entry of ``forwarded`` (its X-Forwarded-For), all at once."""
    import httpx

    async def flood():
        async with httpx.AsyncClient(timeout=120) as client:
            calls = [client.post(f"{url}gradio_api/queue/join", headers={"x-forwarded-for": header},
                                 json={"data": data, "fn_index": index, "session_hash": f"s{i}-{abs(hash(header))}",
                                       "trigger_id": None})
                     for i, header in enumerate(forwarded)]
            return [answer.status_code for answer in await asyncio.gather(*calls)]

    return asyncio.run(flood())


def test_forged_first_entries_from_one_peer_start_at_most_its_share(space):
    """Was: 12 of 12 audits accepted from one peer whose first X-Forwarded-For entry changed."""
    import app

    url, index, data = space
    # what the Space's proxy passes on: whatever the caller sent, then the caller's own address
    # (here loopback's); the forged part changes from call to call
    forged = [f"203.0.113.{i}, 127.0.0.1" for i in range(6)] + [f"10.0.{i}.1, 203.0.113.{i}, 127.0.0.1"
                                                                  for i in range(6)]
    codes = _joins(url, index, data, forged)
    assert codes.count(200) <= app.PUBLIC_MAX_QUEUED and codes.count(429) >= 12 - app.PUBLIC_MAX_QUEUED, codes


def test_a_stranger_still_joins_while_sixteen_addresses_wait_with_four_requests_each(space):
    """Was: 16 real addresses × 4 requests filled the global queue of 64."""
    import app
    from recourse.ui import limits

    url, index, data = space
    # loopback stands in for the Space's proxy: the entry it appends names the caller
    crowd = [f"198.51.100.{address}" for address in range(16) for _ in range(app.PUBLIC_MAX_QUEUED)]
    codes = _joins(url, index, data, crowd)
    # past half the queue each caller keeps one place: room is left for newcomers
    assert codes.count(200) <= limits.PUBLIC_QUEUE_SIZE // 2 + 16, codes
    assert _joins(url, index, data, ["192.0.2.77"]) == [200]
