"""Limits on what one caller may send a public app, applied before Gradio reads a request.

An ASGI middleware (plain ASGI: it never buffers a body) that refuses, with a short JSON
answer and nothing read:

* a request body larger than ``max_body`` (uploads excepted: they have their own limits),
  so that a ``data:`` URL or a 60 MB ``/queue/join`` body costs nothing;
* an upload once the caller has uploaded ``upload_quota`` bytes within ``window_s``
  seconds (uploads are written to disk before any event runs);
* joining the queue while the caller already has ``max_queued`` events waiting or running.

A caller is the socket's peer address; behind a proxy that sets ``X-Forwarded-For`` (a
Hugging Face Space) its first entry, when ``trust_forwarded`` is set. Only a proxy that
writes that header itself may be trusted with it: anyone can send one.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
BODY_METHODS = ("POST", "PUT", "PATCH")


def client_of(scope: Scope, trust_forwarded: bool) -> str:
    """Who sent a request (see the module's note on ``X-Forwarded-For``)."""
    if trust_forwarded:
        for name, value in scope.get("headers", ()):
            if name == b"x-forwarded-for":
                first = value.decode("latin-1").split(",")[0].strip()
                if first:
                    return first
    client = scope.get("client")
    return client[0] if client else "unknown"


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
    running); ``upload_path`` and ``join_path`` are the routes' path suffixes."""

    def __init__(self, app: Callable, *, max_body: int, upload_quota: int, window_s: float, max_queued: int,
                 queued: Callable[[str], int], trust_forwarded: bool = False,
                 upload_path: str = "/gradio_api/upload", join_path: str = "/gradio_api/queue/join") -> None:
        self.app, self.max_body, self.max_queued, self.queued = app, max_body, max_queued, queued
        self.quota = UploadQuota(upload_quota, window_s)
        self.trust_forwarded, self.upload_path, self.join_path = trust_forwarded, upload_path, join_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            return await self.app(scope, receive, send)
        path = scope.get("path", "").rstrip("/")
        client = client_of(scope, self.trust_forwarded)
        upload = path.endswith(self.upload_path)
        limit = self.quota.left(client) if upload else self.max_body
        length = _content_length(scope)
        if length is None:
            return await _refuse(send, 411, "A request body needs a Content-Length.")
        if upload and length > limit:
            return await _refuse(send, 429, f"Upload quota reached: at most {self.quota.quota // 2**20} MB per "
                                            f"{self.quota.window_s / 60:g} minutes. Try again later.")
        if length > limit:
            return await _refuse(send, 413, f"Request body larger than {limit // 2**10} KB.")
        if path.endswith(self.join_path) and self.queued(client) >= self.max_queued:
            return await _refuse(send, 429, f"You already have {self.max_queued} requests waiting or running; "
                                            "wait for one to finish.")
        if upload:
            self.quota.add(client, length)
        return await self.app(scope, _capped(receive, length), send)


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


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
