"""Who a caller is, and how much of the queue one caller may hold: the right-most
X-Forwarded-For entries that trusted proxies wrote, never the ones a caller sent; uvicorn's own
header trust switched off; under a crowd, one place a caller; each refusal one line in the log."""

from __future__ import annotations

from collections import Counter

import pytest

from recourse.ui.serve.request_limits import RequestLimits, client_of


def _scope(peer: str, *forwarded: bytes) -> dict:
    return {"client": (peer, 5000), "headers": [(b"x-forwarded-for", value) for value in forwarded]}


def test_without_trusted_proxies_the_caller_is_the_peer_whatever_the_header_says():
    assert client_of(_scope("10.0.0.1", b"1.2.3.4"), 0) == "10.0.0.1"
    assert client_of(_scope("10.0.0.1"), 0) == "10.0.0.1"


def test_behind_one_proxy_the_caller_is_the_entry_it_appended_not_the_first():
    # the proxy appends its peer to whatever the caller sent: entries to the left are the caller's
    forged = [client_of(_scope("10.0.0.9", f"203.0.113.{i}, 198.51.100.7".encode()), 1) for i in range(12)]
    assert set(forged) == {"198.51.100.7"}
    assert client_of(_scope("10.0.0.9", b"198.51.100.7"), 1) == "198.51.100.7"
    # several headers read as one list, in order (the proxy's entry is still the last)
    assert client_of(_scope("10.0.0.9", b"203.0.113.1", b"198.51.100.7"), 1) == "198.51.100.7"
    assert client_of(_scope("10.0.0.9"), 1) == "10.0.0.9"  # not through the proxy: the peer
    assert client_of(_scope("10.0.0.9", b" , "), 1) == "10.0.0.9"


def test_behind_two_proxies_the_caller_is_the_outer_proxys_entry():
    assert client_of(_scope("10.0.0.9", b"203.0.113.1, 198.51.100.7, 10.0.0.8"), 2) == "198.51.100.7"
    assert client_of(_scope("10.0.0.9", b"198.51.100.7"), 2) == "198.51.100.7"  # entered at the inner one


def _app(received: Counter, **limits):
    """A Starlette app behind the middleware whose queue route keeps every accepted request
    queued (as a long audit would), counted by the caller the app sees."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def join(request):
        received[request.client.host] += 1
        return PlainTextResponse("queued")

    settings = dict(max_body=10_000, upload_quota=10_000, window_s=60, max_queued=4,
                    queued=lambda client: received[client], queued_total=lambda: sum(received.values()))
    settings.update(limits)
    return Starlette(routes=[Route("/gradio_api/queue/join", join, methods=["POST"])],
                     middleware=[Middleware(RequestLimits, **settings)])


def _join(client, forwarded: str) -> int:
    return client.post("/gradio_api/queue/join", content=b"{}", headers={"x-forwarded-for": forwarded}).status_code


def test_forged_first_entries_from_one_peer_get_one_callers_share():
    from starlette.testclient import TestClient

    received = Counter()
    client = TestClient(_app(received, trusted_proxies=1))
    codes = [_join(client, f"203.0.113.{i}, 198.51.100.7") for i in range(12)]
    assert codes.count(200) == 4 and codes.count(429) == 8, codes
    assert received == {"198.51.100.7": 4}  # the app sees the same caller as the cap


def test_under_a_crowd_each_caller_keeps_one_place_and_a_stranger_still_joins():
    from starlette.testclient import TestClient

    received = Counter()
    client = TestClient(_app(received, trusted_proxies=1, crowd=32))
    codes = [_join(client, f"198.51.100.{address}") for address in range(16) for _ in range(4)]
    assert codes.count(200) == 8 * 4 + 8, codes  # 8 callers fill half the queue; the other 8 get one place each
    assert all(count <= 4 for count in received.values())
    assert _join(client, "192.0.2.200") == 200  # a newcomer finds room
    assert _join(client, "192.0.2.200") == 429  # and, under the crowd, one place


def test_uvicorn_no_longer_rewrites_the_caller_from_a_loopback_peers_header(monkeypatch):
    import asyncio

    import uvicorn
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    from recourse.ui.startup import distrust_forwarded_headers

    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    distrust_forwarded_headers()
    config = uvicorn.Config(app=lambda *args: None)
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"]

    scope = {"type": "http", **_scope("127.0.0.1", b"203.0.113.5, 127.0.0.1")}
    asyncio.run(ProxyHeadersMiddleware(app, trusted_hosts=config.forwarded_allow_ips)(scope, None, None))
    assert seen["client"] == ("127.0.0.1", 5000)


def test_a_space_trusts_one_proxy_and_elsewhere_none_unless_told(monkeypatch):
    import importlib

    from recourse.ui import limits

    try:
        monkeypatch.delenv("RECOURSE_TRUSTED_PROXIES", raising=False)
        monkeypatch.setenv("SPACE_ID", "someone/space")
        assert importlib.reload(limits).TRUSTED_PROXIES == 1
        monkeypatch.delenv("SPACE_ID")
        assert importlib.reload(limits).TRUSTED_PROXIES == 0
        monkeypatch.setenv("RECOURSE_TRUSTED_PROXIES", "2")
        assert importlib.reload(limits).TRUSTED_PROXIES == 2
        monkeypatch.setenv("RECOURSE_TRUSTED_PROXIES", "first")
        with pytest.raises(SystemExit, match="whole number"):
            importlib.reload(limits)
    finally:
        monkeypatch.undo()
        importlib.reload(limits)


def test_a_refusal_is_one_line_in_the_log_without_a_traceback(capsys):
    from recourse.ui.errors import Refusal

    error = Refusal("unknown choice 'x'; choose one of the list")
    assert error.print_exception is False  # Gradio then prints no traceback for it
    assert capsys.readouterr().out.strip().splitlines() == ["refused: unknown choice 'x'; choose one of the list"]


def test_a_middleware_refusal_is_logged_in_one_line(capsys):
    from starlette.testclient import TestClient

    received = Counter()
    client = TestClient(_app(received, max_queued=0))
    assert _join(client, "") == 429
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("refused 429 POST /gradio_api/queue/join from ")


def test_an_out_of_range_setting_is_refused_in_one_line(capsys):
    """Was: Gradio's own range error, which prints a traceback for every request that sends one."""
    from recourse.ui.errors import Refusal
    from recourse.ui.serve.inputs import Bounded, WholeNumber

    for component, value in ((Bounded(10, 120, value=20, label="Walk steps"), 400),
                             (WholeNumber(value=0, precision=0, minimum=0, label="Seed"), -1)):
        with pytest.raises(Refusal, match="than (maximum|minimum) value") as refused:
            component.preprocess(value)
        assert refused.value.print_exception is False
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


def test_a_scan_checks_its_time_limit_inside_each_photo(monkeypatch, tmp_path):
    """Was: checked only after each photo was decoded and aligned, so a photo that was slow to
    decode was then aligned too, and the next photo started, before the limit was seen."""
    from PIL import Image

    from recourse import faces
    from recourse.ui import failures

    photos = []
    for index in range(3):
        photos.append(tmp_path / f"p{index}.png")
        Image.new("RGB", (64, 64), (90, 90, 90)).save(photos[-1])
    stages, aligned = [], []
    monkeypatch.setattr(faces, "align_face", lambda *args, **kwargs: aligned.append(args) or None)

    def past_the_limit(stage: str) -> None:
        stages.append(stage)
        raise TimeoutError("past the limit")

    with pytest.raises(TimeoutError):
        failures._scan_inputs("uploaded photos", "", "", "test", 3, [str(p) for p in photos], 64, past_the_limit)
    assert stages == ["decode"] and aligned == []  # stopped between the first photo's decoding and its alignment
