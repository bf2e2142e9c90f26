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
* **Uploads.** Gradio serves ``/gradio_api/upload`` to every app, and serves back what was uploaded. The demo has no
  input that takes a file (`needs_uploads`), so the route answers 404 and nothing is stored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "LOCAL_HOST_NAMES",
    "RequestGuard",
    "WILDCARD_ADDRESSES",
    "guard_middleware",
    "host_name",
    "needs_uploads",
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

_HOST_REFUSED = (
    "403 Forbidden: this demo answers only requests for the host names it serves on ({names}), not {host!r}. "
    "Open it at the address it printed when it started.\n"
)
_UPLOAD_REFUSED = "404 Not Found: this demo takes no file uploads (none of its components reads a file).\n"


def host_name(value: str | None) -> str | None:
    """The host name of a ``Host`` header (or an address): lower case, without its port, brackets or trailing dot
    (``"[::1]:7860"`` -> ``"::1"``); None for no header."""
    if value is None:
        return None
    value = value.strip().lower()
    if value.startswith("["):  # an IPv6 literal, [::1]:7860
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:  # name:port (more than one colon is a bare IPv6 address)
        value = value.split(":", 1)[0]
    return value.rstrip(".")


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
    """ASGI middleware: refuses a request for a host name the demo does not serve on (403) and, when
    `uploads_allowed` says so, Gradio's upload route (404); everything else goes on to `app`.

    Args:
        app: the ASGI app it guards.
        allowed_hosts: called for every request: the host names answered (`served_host_names`), None for all.
            A callable, since the share link's host is known only once the server runs.
        uploads_allowed: called for every upload request: whether the route is served.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Callable[[], frozenset[str] | None],
        uploads_allowed: Callable[[], bool],
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.uploads_allowed = uploads_allowed

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
        await self.app(scope, receive, send)


def guard_middleware(allowed_hosts: Callable[[], frozenset[str] | None], uploads_allowed: Callable[[], bool]) -> Any:
    """`RequestGuard` as a Starlette ``Middleware`` entry, for ``FastAPI(middleware=[...])``."""
    from starlette.middleware import Middleware

    return Middleware(RequestGuard, allowed_hosts=allowed_hosts, uploads_allowed=uploads_allowed)


def _header(scope: Scope, wanted: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


async def _refuse(scope: Scope, send: Send, status: int, text: str) -> None:
    if scope["type"] == "websocket":  # before the handshake is accepted: the client sees the connection refused
        await send({"type": "websocket.close", "code": 1008})
        return
    body = text.encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
