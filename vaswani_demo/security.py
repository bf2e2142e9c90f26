"""What the demo's server answers before Gradio sees a request: only its own host names, and no uploads.

`RequestGuard` is an ASGI middleware (`guard_middleware` wraps it for ``FastAPI(middleware=...)``, which is how
`vaswani_demo.app.DemoBlocks.launch` installs it on every launch):

* **Host names.** A server on 127.0.0.1 that answers any ``Host`` header can be read by any web page through DNS
  rebinding (a name of the attacker's that first points at the attacker's server, then at 127.0.0.1). As Jupyter
  does, a request whose ``Host`` is not one of the names the demo serves on is refused with 403: `served_host_names`
  (127.0.0.1, ``localhost``, ``[::1]``, the address the demo was started on and, with a share link, the link's
  host). An IP literal of this machine's loopback is always answered (no DNS is involved). A request without
  ``Host`` (HTTP/1.0) cannot come from a browser, so it cannot be a rebinding attack: it is answered. A demo bound
  to every interface (0.0.0.0, ``::``) is reachable under names it cannot know, so, as Jupyter's
  ``allow_remote_access``, it answers every ``Host``.
* **Files.** Gradio answers a ``/gradio_api/file=`` request for a file it does not serve with 403 and the path in
  its body; the guard answers it without the path (`_FILE_REFUSED`): the page learns nothing of the server's
  folders.
* **Uploads.** Gradio serves ``/gradio_api/upload`` to every app, and serves back what was uploaded. The demo has no
  input that takes a file (`needs_uploads`), so the route answers 404 and nothing is stored.
* **Queue calls.** A call of Gradio's queue (``/gradio_api/queue/join``, how the page runs its events) names its
  event by ``fn_index``; Gradio answers one it does not have with a 500 and a traceback in the log. (An API call,
  ``/gradio_api/call/NAME``, is checked the same way.) The guard reads
  the body first (at most `MAX_QUEUE_BODY_BYTES`) and answers a body that is not a JSON object, whose
  ``session_hash`` is not printable ASCII or whose ``fn_index`` is not one of the app's events, with 422 (413 for a
  body that is too large, JSON nested deeper than `MAX_JSON_DEPTH` too); a good call goes on unchanged.

A ``Host`` header that is not a host name with an optional port (``127.0.0.1:7860@evil.example``) is not one of
the demo's names: it is refused.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "LOCAL_HOST_NAMES",
    "MAX_JSON_DEPTH",
    "MAX_QUEUE_BODY_BYTES",
    "RequestGuard",
    "WILDCARD_ADDRESSES",
    "guard_middleware",
    "host_name",
    "needs_uploads",
    "queue_call_problem",
    "served_host_names",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The names of this machine a local demo always answers to.
LOCAL_HOST_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: Addresses that bind every interface: a demo bound to one answers every host name.
WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::", "*"})
#: Gradio's upload route, under the app's root path.
_UPLOAD_ROUTE = "/gradio_api/upload"
#: Gradio's routes that put an event on its queue, under the app's root path: the page's, an API client's.
_QUEUE_ROUTE = "/gradio_api/queue/join"
_CALL_ROUTE = "/gradio_api/call/"
#: The largest body of a queue call the guard reads: a translation's values are a few hundred bytes, and the
#: demo takes no file through the queue.
MAX_QUEUE_BODY_BYTES = 1 << 20
#: The deepest nesting of lists and objects a queue call may hold: the demo's values are texts and numbers in one
#: list (Gradio's own parsing of a much deeper one fails in its recursion).
MAX_JSON_DEPTH = 32
#: Gradio's route that serves files, under the app's root path.
_FILE_ROUTE = "/gradio_api/file="
# A Host header: a name or an IPv4 address, or an IPv6 address in brackets, then an optional port.
_HOST_HEADER = re.compile(r"(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_.-]*))(?::\d{0,5})?")

_HOST_REFUSED = (
    "403 Forbidden: this demo answers only requests for the host names it serves on ({names}), not {host!r}. "
    "Open it at the address it printed when it started.\n"
)
_FILE_REFUSED = "403 Forbidden: this demo does not serve that file.\n"
_UPLOAD_REFUSED = "404 Not Found: this demo takes no file uploads (none of its components reads a file).\n"
_TOO_LARGE = "The body of a queue call is larger than {limit} bytes: the demo's events take a few values."


def host_name(value: str | None) -> str | None:
    """The host name of a ``Host`` header (or an address): lower case, without its port, brackets or trailing dot
    (``"[::1]:7860"`` -> ``"::1"``); None for no header. A value that is not a name (or an address) with an
    optional port (``"127.0.0.1:7860@evil.example"``) is given back whole, lower case: it matches no name."""
    if value is None:
        return None
    value = value.strip().lower()
    if value.count(":") > 1 and not value.startswith("["):  # a bare IPv6 address, ::1
        return value
    found = _HOST_HEADER.fullmatch(value)
    if found is None:
        return value
    return found.group("ipv6") if found.group("ipv6") is not None else found.group("name").rstrip(".")


def served_host_names(address: str | None, share_url: str | None = None) -> frozenset[str] | None:
    """The host names a demo bound to `address` (with the share link `share_url`, if any) answers: the local ones,
    `address` itself and the share link's host; None (every name) when `address` binds every interface."""
    address = host_name(address if address is not None else "127.0.0.1")
    if address in WILDCARD_ADDRESSES:
        return None
    names = set(LOCAL_HOST_NAMES) | {address}
    if share_url:
        shared = host_name(urlsplit(share_url).hostname)
        if shared:
            names.add(shared)
    return frozenset(names)


def _is_loopback_literal(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def queue_call_problem(body: bytes, events: Collection[int]) -> str | None:
    """Why the body of a queue call (``/gradio_api/queue/join``) cannot be answered, or None when it can: not a
    JSON object, a ``session_hash`` that is not printable ASCII (Gradio's are random letters and digits; another
    breaks its session state), or an ``fn_index`` that is not one of `events` (the app's event indexes). Anything
    else is left to Gradio's own checks (a missing ``data`` or ``session_hash``), which answer 4xx."""
    try:
        call = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return "the body of a queue call must be JSON."
    except RecursionError:  # (deeper than Python's own recursion allows)
        call = None
    if call is None or _nesting(call) > MAX_JSON_DEPTH:
        return f"the body of a queue call must not nest lists and objects more than {MAX_JSON_DEPTH} deep."
    if not isinstance(call, dict):
        return f"the body of a queue call must be a JSON object, got {type(call).__name__}."
    session = call.get("session_hash")
    if session is not None and not (isinstance(session, str) and session.isascii() and session.isprintable()):
        return f"session_hash must be a string of printable ASCII characters, got {ascii(session)[:40]}."
    index = call.get("fn_index")
    if index is None:
        return None  # Gradio says "No function index provided." itself
    if isinstance(index, bool) or not isinstance(index, int) or index not in events:
        shown = json.dumps(index)[:40]
        return f"fn_index {shown} is not one of this app's events (0 to {max(events, default=-1)})."
    return None


def _nesting(value: Any) -> int:
    """How deep lists and objects nest in a parsed JSON value (0 for a number or a text), without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in children)
    return deepest


def needs_uploads(inputs: Iterable[Any]) -> bool:
    """True when one of `inputs` (the Gradio components that events read) takes files from the browser: it has an
    ``upload`` event and is not explicitly read-only (``interactive=False``). Output-only components (the record's
    gr.File, a gr.HTML, which has an ``upload`` event too) upload nothing."""
    for component in inputs:
        events = getattr(component, "EVENTS", ())
        names = {event if isinstance(event, str) else getattr(event, "event_name", None) for event in events}
        if "upload" in names and getattr(component, "interactive", None) is not False:
            return True
    return False


class RequestGuard:
    """ASGI middleware: refuses a request for a host name the demo does not serve on (403), when
    `uploads_allowed` says so Gradio's upload route (404), and a malformed queue call (422, `queue_call_problem`);
    everything else goes on to `app`.

    Args:
        app: the ASGI app it guards.
        allowed_hosts: called for every request: the host names answered (`served_host_names`), None for all.
            A callable, since the share link's host is known only once the server runs.
        uploads_allowed: called for every upload request: whether the route is served.
        events: called for every queue call: the app's event indexes (default: those of the Gradio app serving
            the request, ``scope["app"].get_blocks().fns``).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Callable[[], frozenset[str] | None],
        uploads_allowed: Callable[[], bool],
        events: Callable[[], Collection[int]] | None = None,
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.uploads_allowed = uploads_allowed
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        name = host_name(host)
        allowed = self.allowed_hosts()
        if name is not None and allowed is not None and name not in allowed and not _is_loopback_literal(name):
            shown = ", ".join(f"[{n}]" if ":" in n else n for n in sorted(allowed))
            await _refuse(scope, send, 403, _HOST_REFUSED.format(names=shown, host=host))
            return
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if path.startswith(root):
            path = path[len(root) :]
        if path.rstrip("/") == _UPLOAD_ROUTE and not self.uploads_allowed():
            await _refuse(scope, send, 404, _UPLOAD_REFUSED)
            return
        if scope["type"] == "http" and path.startswith(_FILE_ROUTE):
            send = _without_refused_path(send)
        if scope["type"] == "http" and scope.get("method") == "POST" and _is_queue_call(path.rstrip("/")):
            await self._checked_queue_call(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _checked_queue_call(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read a queue call's body, refuse it when it is malformed, else pass it on with its body replayed."""
        body = await _read_body(receive, MAX_QUEUE_BODY_BYTES)
        if body is None:
            await _refuse(scope, send, 413, _TOO_LARGE.format(limit=MAX_QUEUE_BODY_BYTES), as_json=True)
            return
        problem = queue_call_problem(body, self._event_indexes(scope))
        if problem is not None:
            await _refuse(scope, send, 422, f"Malformed queue call: {problem}", as_json=True)
            return
        replayed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # a disconnect, later

        await self.app(scope, replay, send)

    def _event_indexes(self, scope: Scope) -> Collection[int]:
        if self.events is not None:
            return self.events()
        get_blocks = getattr(scope.get("app"), "get_blocks", None)
        blocks = get_blocks() if get_blocks is not None else None
        return getattr(blocks, "fns", {}).keys()


def guard_middleware(allowed_hosts: Callable[[], frozenset[str] | None], uploads_allowed: Callable[[], bool]) -> Any:
    """`RequestGuard` as a Starlette ``Middleware`` entry, for ``FastAPI(middleware=[...])``."""
    from starlette.middleware import Middleware

    return Middleware(RequestGuard, allowed_hosts=allowed_hosts, uploads_allowed=uploads_allowed)


def _header(scope: Scope, wanted: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


def _without_refused_path(send: Send) -> Send:
    """`send` for a file request: a 403 answer's body (Gradio's names the path asked for) is `_FILE_REFUSED`."""
    refused = False

    async def sending(message: MutableMapping[str, Any]) -> None:
        nonlocal refused
        if message["type"] == "http.response.start" and message.get("status") == 403:
            refused = True
            headers = [
                (k, v) for k, v in message.get("headers", ()) if k.lower() not in (b"content-length", b"content-type")
            ]
            headers += [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(_FILE_REFUSED.encode())).encode()),
            ]
            message = {**message, "headers": headers}
        elif refused and message["type"] == "http.response.body":
            if message.get("more_body", False):
                return  # (the rest of Gradio's body is dropped; ours goes with its last part)
            message = {"type": "http.response.body", "body": _FILE_REFUSED.encode()}
        await send(message)

    return sending


def _is_queue_call(path: str) -> bool:
    """Whether `path` (under the root path) puts an event on Gradio's queue: the page's ``queue/join`` or an API
    client's ``call/NAME``."""
    return path == _QUEUE_ROUTE or (path.startswith(_CALL_ROUTE) and "/" not in path[len(_CALL_ROUTE) :])


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body of an HTTP request; None once it is longer than `limit` bytes (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _refuse(scope: Scope, send: Send, status: int, text: str, *, as_json: bool = False) -> None:
    """Answer with `status` and `text` (as FastAPI's ``{"detail": text}`` with `as_json`), or close a websocket."""
    if scope["type"] == "websocket":  # before the handshake is accepted: the client sees the connection refused
        await send({"type": "websocket.close", "code": 1008})
        return
    if as_json:
        body, kind = json.dumps({"detail": text}).encode("utf-8"), b"application/json"
    else:
        body, kind = text.encode("utf-8"), b"text/plain; charset=utf-8"
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
