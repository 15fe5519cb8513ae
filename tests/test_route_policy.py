"""One gate for every route that runs work: each route the app serves is classified
(``recourse.ui.serve.route_policy``), and the middleware holds one caller to its share by every route
that starts work, closes what a stranger has no business with, and answers malformed
requests with a 4xx, never a bare 500."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recourse.ui.serve import route_policy
from recourse.ui.serve.request_limits import RequestLimits

ROOT = Path(__file__).resolve().parents[1]

# What each route of Gradio 6.31 must be, where it matters most.
WORK = ["/gradio_api/queue/join", "/gradio_api/call/audit", "/gradio_api/call/v2/audit", "/gradio_api/run/predict",
        "/gradio_api/api/predict", "/gradio_api/call/audit/"]
CLOSED = [("GET", "/monitoring/summary"), ("GET", "/monitoring"), ("GET", "/gradio_api/monitoring/summary"),
          ("POST", "/gradio_api/run-history/connect"), ("POST", "/gradio_api/component_server"),
          ("POST", "/gradio_api/stream/abc"), ("POST", "/gradio_api/process_recording"), ("POST", "/login"),
          ("POST", "/gradio_api/vibe-edit"), ("GET", "/gradio_api/dev/reload")]


def _sample(path: str) -> str:
    """A concrete path for a route template (each ``{parameter}`` filled in)."""
    import re

    return re.sub(r"\{[^}]+\}", "x", path)


def app_routes() -> list[tuple[str, str]]:
    """``(method, path template)`` of every route the public app serves, read from the app
    object that ``demo.launch`` builds (a subprocess: public mode is fixed at import)."""
    probe = r"""
import json, gradio as gr, app
fastapi_app = gr.routes.App.create_app(app.demo)
found = []
def walk(routes, prefix=""):
    for route in routes:
        if hasattr(route, "path"):
            for method in sorted(getattr(route, "methods", None) or ["WEBSOCKET"]):
                found.append((method, prefix + route.path))
        else:  # an included router
            walk(route.original_router.routes, prefix + route.include_context.prefix)
walk(fastapi_app.routes)
print(json.dumps(found))
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RECOURSE_PUBLIC": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return [tuple(route) for route in json.loads(done.stdout.strip().splitlines()[-1])]


@pytest.fixture(scope="module")
def routes():
    return app_routes()


@pytest.mark.slow
def test_every_route_the_app_serves_is_classified(routes):
    """A route a future Gradio adds fails here until someone decides what it is."""
    assert len(routes) > 50
    unclassified = [(method, path) for method, path in routes
                    if route_policy.classify(_sample(path), method) is None]
    assert unclassified == []


def test_every_route_that_starts_work_is_an_event_route(routes):
    body_routes = {(method, path) for method, path in routes if method in route_policy.BODY}
    kinds = {(method, path): route_policy.classify(_sample(path), method) for method, path in body_routes}
    events = {path for (method, path), kind in kinds.items() if kind == route_policy.EVENT}
    # the queue, the /call routes (fire and forget included) and the direct runs
    assert {"/gradio_api/queue/join", "/gradio_api/call/{api_name}", "/gradio_api/call/v2/{api_name}",
            "/gradio_api/run/{api_name}", "/gradio_api/api/{api_name}"} <= events
    open_ones = {path for (method, path), kind in kinds.items() if kind == route_policy.OPEN}
    assert open_ones <= {"/gradio_api/cancel", "/gradio_api/reset", "/gradio_api/reset/"}, open_ones


@pytest.mark.parametrize("path", WORK)
def test_work_routes_are_events(path):
    assert route_policy.public_kind(path, "POST") == route_policy.EVENT


@pytest.mark.parametrize("method, path", CLOSED)
def test_routes_for_nobody_are_closed(method, path):
    assert route_policy.public_kind(path, method) == route_policy.CLOSED


def test_an_unknown_body_route_is_closed_in_public_mode():
    assert route_policy.public_kind("/gradio_api/some-new-route", "POST") == route_policy.CLOSED
    assert route_policy.classify("/gradio_api/some-new-route", "POST") is None


# --- the middleware, on a stand-in app -------------------------------------------------------


class SlowApp:
    """An ASGI app that takes ``seconds`` to answer 200 and counts what reached it; raises
    ``error`` instead where given."""

    def __init__(self, seconds: float = 0.05, error: BaseException | None = None, status: int = 200):
        self.seconds, self.error, self.status, self.reached = seconds, error, status, 0

    async def __call__(self, scope, receive, send):
        self.reached += 1
        await asyncio.sleep(self.seconds)
        if self.error is not None:
            raise self.error
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def _request(middleware, path, method="POST", client="10.0.0.1", body=b"{}"):
    scope = {"type": "http", "method": method, "path": path, "client": (client, 1234), "root_path": "",
             "headers": [(b"content-length", str(len(body)).encode())] if method == "POST" else []}
    sent = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    async def run():
        await middleware(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return start["status"], body

    return run()


def _limits(app, queued=lambda client: 0, public=True, max_queued=4):
    return RequestLimits(app, max_body=2**20, upload_quota=2**30, window_s=600, max_queued=max_queued,
                         queued=queued, public=public)


@pytest.mark.parametrize("path", ["/gradio_api/call/audit", "/gradio_api/call/v2/audit", "/gradio_api/queue/join",
                                  "/gradio_api/run/predict"])
def test_seventy_calls_at_once_get_one_callers_share(path):
    """Was: /call/audit passed no cap, and 66 of 70 calls posted in 0.9 s were accepted. The
    queue learns of an event only once its request is answered, so the requests in flight
    count too."""
    inner = SlowApp()
    middleware = _limits(inner)

    async def flood():
        return await asyncio.gather(*(_request(middleware, path) for _ in range(70)))

    statuses = [status for status, _ in asyncio.run(flood())]
    assert statuses.count(200) == 4 and statuses.count(429) == 66 and inner.reached == 4
    # another caller is not held back by the first one's flood
    other = asyncio.run(_request(middleware, path, client="10.0.0.2"))
    assert other[0] == 200


def test_events_in_the_queue_and_in_flight_add_up_across_routes():
    queued = {"10.0.0.1": 3}
    middleware = _limits(SlowApp(), queued=lambda client: queued.get(client, 0))

    async def two():
        return await asyncio.gather(_request(middleware, "/gradio_api/queue/join"),
                                    _request(middleware, "/gradio_api/call/audit"))

    assert sorted(status for status, _ in asyncio.run(two())) == [200, 429]


def test_closed_routes_answer_404_in_public_mode_and_pass_locally():
    inner = SlowApp(seconds=0)
    assert asyncio.run(_request(_limits(inner), "/monitoring/summary", method="GET"))[0] == 404
    assert asyncio.run(_request(_limits(inner), "/gradio_api/brand-new", method="POST"))[0] == 404
    assert inner.reached == 0
    assert asyncio.run(_request(_limits(inner, public=False), "/gradio_api/brand-new", method="POST"))[0] == 200


@pytest.mark.parametrize("error, status", [(KeyError("/use_models"), 400), (ValueError("bad"), 400),
                                           (RuntimeError("bug"), 500)])
def test_a_request_that_makes_the_server_raise_gets_a_short_json_answer(error, status):
    """Was: ``/run/predict`` without ``fn_index`` and ``/call/use_models`` in public mode ended
    in a bare 500 ("Internal Server Error")."""
    answer, body = asyncio.run(_request(_limits(SlowApp(seconds=0, error=error)), "/gradio_api/call/use_models"))
    assert answer == status and json.loads(body)["error"]


def test_an_event_routes_own_500_becomes_422():
    answer, _ = asyncio.run(_request(_limits(SlowApp(seconds=0, status=500)), "/gradio_api/run/predict"))
    assert answer == 422
