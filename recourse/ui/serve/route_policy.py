"""What each of the server's routes may do in public mode: one table, consulted by the
request middleware (``recourse.ui.serve.request_limits``) before Gradio sees a request.

Every route Gradio serves falls in one class:

* ``event``: starts work (a queued event, or a direct run of an unqueued one). Each passes the
  same per-caller cap: a caller's requests in flight plus its events waiting or running.
* ``upload``: writes files; counted against the caller's upload quota.
* ``open``: reads or steers what the caller already has (the page, its files, its event
  stream, a cancel); costs nothing worth capping.
* ``closed``: not served in public mode (monitoring, run history, development and
  experimental routes, login): answered 404 before Gradio sees them.

A request that no rule covers is refused in public mode when it carries a body, and passed
on otherwise (the router answers 404 for a path it does not know): a body route a future
Gradio adds stays closed until it is classified here. The test that enumerates the running
app's routes (``tests/test_route_policy.py``) fails for any route, read or write, that no rule
covers, so that a new one is reviewed before an upgrade lands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EVENT, UPLOAD, OPEN, CLOSED = "event", "upload", "open", "closed"
ANY = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})
READ = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Rule:
    pattern: str  # a regular expression matched against the whole path
    kind: str
    methods: frozenset[str] = ANY

    def matches(self, path: str, method: str) -> bool:
        return method in self.methods and re.fullmatch(self.pattern, path) is not None


_API = r"(?:/gradio_api)?"  # Gradio serves most routes under its API prefix, a few at the root too
_NAME = r"[^/]+"

# First match wins: the closed and event rules come before broader open ones.
RULES: tuple[Rule, ...] = (
    # work
    Rule(rf"{_API}/queue/join/?", EVENT, frozenset({"POST"})),
    Rule(rf"{_API}/call/v2/{_NAME}/?", EVENT, frozenset({"POST"})),
    Rule(rf"{_API}/call/{_NAME}/?", EVENT, frozenset({"POST"})),
    Rule(rf"{_API}/(?:run|api)/{_NAME}/?", EVENT, frozenset({"POST"})),
    Rule(rf"{_API}/upload/?", UPLOAD, frozenset({"POST"})),
    # not for strangers
    Rule(r"(?:/gradio_api)?/monitoring(?:/.*)?", CLOSED),
    Rule(rf"{_API}/run-history/.*", CLOSED),
    Rule(rf"{_API}/runs/?", CLOSED),
    Rule(rf"{_API}/dev/reload", CLOSED),
    Rule(rf"{_API}/vibe-(?:edit|code|starter-queries)/?", CLOSED),
    Rule(rf"{_API}/undo-vibe-edit/?", CLOSED),
    Rule(rf"{_API}/mcp(?:/.*)?", CLOSED),
    Rule(rf"{_API}/component_server/?", CLOSED),  # no component of this app has server functions
    Rule(rf"{_API}/process_recording", CLOSED),  # no audio or video input
    Rule(rf"{_API}/stream/.*", CLOSED),  # no streaming input
    Rule(r"(?:/gradio_api)?/log(?:in|out)(?:/.*)?", CLOSED),  # no accounts
    Rule(rf"{_API}/(?:user|login_check|token)/?", CLOSED),
    Rule(r"/docs(?:/.*)?|/redoc(?:/.*)?", CLOSED),  # FastAPI's own pages
    # cheap, and only about the caller's own session
    Rule(rf"{_API}/cancel/?", OPEN, frozenset({"POST"})),
    Rule(rf"{_API}/reset/?", OPEN, frozenset({"POST"})),
    # reading: the page, its configuration and files, the caller's event streams (each route
    # that Gradio 6.31 serves by GET, reviewed: none starts work)
    Rule(r"/|/config/?|/favicon\.ico|/theme\.css|/robots\.txt|/manifest\.json|/pwa_icon(?:/[^/]+)?"
         r"|/openapi\.json|/(?:svelte|static|assets)/.*", OPEN, READ),
    Rule(rf"{_API}/(?:info|app_id|theme\.css|openapi\.json|deep_link|startup-events|upload_progress)/?", OPEN,
         READ),
    Rule(rf"{_API}/(?:file=|proxy=|file/|custom_component/).*", OPEN, READ),  # Gradio's own file checks apply
    Rule(rf"{_API}/heartbeat/{_NAME}", OPEN, READ),
    Rule(rf"{_API}/queue/(?:data|status)", OPEN, READ),
    Rule(rf"{_API}/call/(?:v2/)?{_NAME}/{_NAME}", OPEN, READ),  # an event's result stream
)


def classify(path: str, method: str) -> str | None:
    """The class of a request (``event``, ``upload``, ``open``, ``closed``), or None when no
    rule covers it."""
    for rule in RULES:
        if rule.matches(path, method):
            return rule.kind
    return None


def public_kind(path: str, method: str) -> str:
    """As :func:`classify`, with what public mode does with an unclassified request: a body
    route nobody classified is closed."""
    kind = classify(path, method)
    if kind is None:
        return CLOSED if method in BODY else OPEN
    return kind
