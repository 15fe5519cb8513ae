"""Limits on what one caller may send a public app, applied before Gradio reads a request.

An ASGI middleware (plain ASGI: it never buffers a body) that refuses, with a short JSON
answer and nothing read:

* a request body larger than ``max_body`` (uploads excepted: they have their own limits),
  so that a ``data:`` URL or a 60 MB ``/queue/join`` body costs nothing;
* an upload once the caller has uploaded ``upload_quota`` bytes within ``window_s``
  seconds (uploads are written to disk before any event runs);
* a request to any route that starts work (``recourse.ui.serve.route_policy``) while the caller
  already has ``max_queued`` such requests in flight or events waiting or running, or, once
  ``crowd`` requests of all callers wait or run, while it has any: under a crowd each caller
  keeps one place, so that a newcomer still finds room in the queue;
* in public mode, any route the policy closes.

A request that makes the app raise before it answers gets a short JSON answer too (400 when
it is malformed), never a bare 500. Each refusal is logged in one line.

A caller is the socket's peer address, or, behind ``trusted_proxies`` proxies that each append
the address they were reached from to ``X-Forwarded-For`` (a Hugging Face Space: one), the
entry that many places from the right: the one the outermost trusted proxy wrote. Entries to
its left are whatever the caller sent, and anyone can send one. The caller is written into
the request's ``client`` so that Gradio and the queue count see the same one.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections import defaultdict, deque
from typing import Any, Awaitable, Callable

from recourse.ui.serve import route_policy

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
BODY_METHODS = ("POST", "PUT", "PATCH")


def client_of(scope: Scope, trusted_proxies: int = 0) -> str:
    """Who sent a request (see the module's note on ``X-Forwarded-For``)."""
    client = scope.get("client")
    peer = client[0] if client else "unknown"
    if trusted_proxies <= 0:
        return peer
    entries = [entry.strip() for name, value in scope.get("headers", ()) if name == b"x-forwarded-for"
               for entry in value.decode("latin-1").split(",")]
    entries = [entry for entry in entries if entry]
    if not entries:
        return peer  # the request did not come through the proxy
    # fewer entries than proxies: the request entered the chain further in; its first entry
    # was still written by a trusted proxy
    return entries[-min(trusted_proxies, len(entries))][:64]


class UploadQuota:
    """Bytes uploaded by each caller in a sliding window of ``window_s`` seconds."""

    def __init__(self, quota: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.quota, self.window_s, self.clock = quota, window_s, clock
        self._sent: dict[str, deque[tuple[float, int]]] = defaultdict(deque)
        self._lock = threading.Lock()

    def left(self, client: str) -> int:
        with self._lock:
            return self.quota - self._used(client)

    def add(self, client: str, size: int) -> None:
        with self._lock:
            self._sent[client].append((self.clock(), size))

    def _used(self, client: str) -> int:
        sent, horizon = self._sent[client], self.clock() - self.window_s
        while sent and sent[0][0] < horizon:
            sent.popleft()
        if not sent:
            del self._sent[client]  # forget idle callers: the table does not grow without bound
            return 0
        return sum(size for _, size in sent)


class RequestLimits:
    """The middleware. ``queued(client)`` counts the caller's events in the queue (waiting or
    running), ``queued_total()`` every caller's. Every route that starts work
    (``recourse.ui.serve.route_policy``: the queue, the ``/call`` routes, the direct runs) passes one cap:
    the caller's requests to such routes still being answered plus its events in the queue may
    not exceed ``max_queued``, or 1 once all callers' together reach ``crowd``. The requests in
    flight are counted because the queue learns of an event only when its request is answered:
    70 calls posted at once would otherwise all find an empty queue.
    ``public``: closed routes are answered 404, and body routes no rule covers are closed.
    ``malformed``: the server's own exception types that mean a malformed request (answered 400).
    An event route's 500 (Gradio's answer when a direct run's function refuses its input)
    becomes 422, its message kept."""

    def __init__(self, app: Callable, *, max_body: int, upload_quota: int, window_s: float, max_queued: int,
                 queued: Callable[[str], int], queued_total: Callable[[], int] = lambda: 0,
                 crowd: float = float("inf"), trusted_proxies: int = 0, public: bool = False,
                 malformed: tuple[type[BaseException], ...] = ()) -> None:
        self.app, self.max_body, self.max_queued, self.queued = app, max_body, max_queued, queued
        self.queued_total, self.crowd = queued_total, crowd
        self.malformed = MALFORMED + tuple(malformed)
        self.quota = UploadQuota(upload_quota, window_s)
        self.trusted_proxies, self.public = trusted_proxies, public
        self._in_flight: dict[str, int] = defaultdict(int)

    def in_flight(self, client: str) -> int:
        return self._in_flight.get(client, 0)

    def share_refused(self, client: str) -> str | None:
        """Why ``client`` may not start more work now, or None."""
        own = self.queued(client) + self.in_flight(client)
        if own >= self.max_queued:
            return f"You already have {self.max_queued} requests waiting or running; wait for one to finish."
        if own and self.queued_total() + sum(self._in_flight.values()) >= self.crowd:
            return ("The app is busy: while this many requests wait, each caller may have one at a time; "
                    "wait for yours to finish.")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        client = client_of(scope, self.trusted_proxies)
        scope = {**scope, "client": (client, 0)}  # Gradio, its queue and its logs see the caller
        method, path = scope.get("method", "GET"), _route_path(scope)
        kind = route_policy.public_kind(path, method) if self.public else route_policy.classify(path, method)
        if kind == route_policy.CLOSED:
            return await _refuse(send, 404, "Not found.", scope)
        if method not in BODY_METHODS:
            return await _answered(self.app, scope, receive, send, self.malformed)
        upload = kind == route_policy.UPLOAD
        limit = self.quota.left(client) if upload else self.max_body
        length = _content_length(scope)
        if length is None:
            return await _refuse(send, 411, "A request body needs a Content-Length.", scope)
        if upload and length > limit:
            return await _refuse(send, 429, f"Upload quota reached: at most {self.quota.quota // 2**20} MB per "
                                            f"{self.quota.window_s / 60:g} minutes. Try again later.", scope)
        if length > limit:
            return await _refuse(send, 413, f"Request body larger than {limit // 2**10} KB.", scope)
        if upload:
            self.quota.add(client, length)
        if kind != route_policy.EVENT:
            return await _answered(self.app, scope, _capped(receive, length), send, self.malformed)
        # no await between the count and the reservation: concurrent requests see each other
        refused = self.share_refused(client)
        if refused is not None:
            return await _refuse(send, 429, refused, scope)
        self._in_flight[client] += 1
        try:
            return await _answered(self.app, scope, _capped(receive, length), send, self.malformed, refused=422)
        finally:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]  # forget idle callers


def _route_path(scope: Scope) -> str:
    """The path as the app's routes see it (without a proxy's root path)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return (path[len(root):] or "/") if root and path.startswith(root) else path


# A request that makes Gradio raise before it answers is malformed (an event that does not
# exist, a missing index, a body of the wrong shape): a 400 that says so, not a bare 500.
MALFORMED = (LookupError, ValueError, TypeError, AttributeError)


async def _answered(app: Callable, scope: Scope, receive: Receive, send: Send,
                    malformed: tuple[type[BaseException], ...] = MALFORMED, refused: int | None = None) -> None:
    """Run the app; an exception before any answer is answered with a short JSON message
    (400 for a malformed request, 500 otherwise), and logged by the server as any exception is.
    ``refused``: the status that replaces the app's own 500s."""
    started = False

    async def watched(message: dict) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
            if refused is not None and message.get("status") == 500:
                message = {**message, "status": refused}
        await send(message)

    try:
        await app(scope, receive, watched)
    except Exception as error:
        if started:
            raise
        if isinstance(error, malformed):  # one line: a stranger's bad requests must not fill the log
            print(f"malformed request to {scope.get('path', '')[:200]}: {type(error).__name__}: {str(error)[:200]}",
                  flush=True)
            await _refuse(send, 400, "Malformed request: it names no event of this app, or its data does not fit "
                                     "the event's inputs.")
        else:
            traceback.print_exception(error)
            await _refuse(send, 500, "Something went wrong inside the app (logged on the server).")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None
            return length if length >= 0 else None
    return None


def _capped(receive: Receive, length: int) -> Receive:
    """A ``receive`` that ends the request (as a disconnect) if more than the declared
    ``length`` arrives; the server's HTTP parser should never let that happen."""
    received = 0

    async def wrapped() -> dict:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > length:
                return {"type": "http.disconnect"}
        return message

    return wrapped


async def _refuse(send: Send, status: int, message: str, scope: Scope | None = None) -> None:
    if scope is not None:  # one line a refusal: a stranger's floods must not fill the log
        print(f"refused {status} {scope.get('method', '')} {scope.get('path', '')[:120]} "
              f"from {scope['client'][0]}: {message[:120]}", flush=True)
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
