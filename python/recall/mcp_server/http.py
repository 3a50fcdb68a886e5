"""`recall serve --http`: the MCP server over streamable HTTP, one warm server for many clients.

Owns: the access token (`Token`: made once with `secrets`, kept in a file only its owner may
read, found through `token_path`), the guard every request passes before the SDK sees it
(`Guard`: an `Origin` that is not a loopback one is refused with 403, a missing or wrong bearer
token with 401, the token compared in constant time), whether a host is a loopback one, the
listening socket (a port in use is a `UsageError` saying what to do) and `run`, which serves an
SDK server on it with uvicorn until interrupted. Does not own: the tools, the store or the
watch (`recall.mcp_server.serve` builds the server once and hands it here).

The SDK, starlette and uvicorn are imported only inside `run` and `listening`: importing this
module costs nothing on the base install.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import ipaddress
import json
import os
import secrets
import signal
import socket
import stat
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recall.errors import UsageError

__all__ = [
    "DEFAULT_HOST",
    "Listen",
    "DEFAULT_PORT",
    "ENDPOINT",
    "TOKEN_ENV",
    "Guard",
    "Token",
    "is_loopback",
    "listening",
    "loopback_origin",
    "opened",
    "run",
    "token_path",
    "url_of",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7749
#: The one path the MCP endpoint answers on.
ENDPOINT = "/mcp"
#: Where the token file is, when `--token-file` does not say.
TOKEN_ENV = "RECALL_TOKEN_FILE"
#: Bytes of randomness in a token made here (43 URL-safe characters).
TOKEN_BYTES = 32
#: A token file written by hand must hold at least this many characters.
MIN_TOKEN_CHARS = 32

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def token_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where the access token is kept: `explicit`, else `$RECALL_TOKEN_FILE`, else
    `$XDG_CONFIG_HOME/recall/serve-token`, else `~/.config/recall/serve-token`."""
    if explicit is not None:
        return Path(explicit).expanduser()
    named = os.environ.get(TOKEN_ENV)
    if named:
        return Path(named).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME")
    folder = Path(config).expanduser() if config else Path.home() / ".config"
    return folder / "recall" / "serve-token"


@dataclass(frozen=True)
class Token:
    """The bearer token a server requires, the file it is kept in, and whether this start made
    it (then, and only then, it is shown to the user)."""

    value: str
    path: Path
    made: bool

    @classmethod
    def kept_in(cls, path: Path) -> Token:
        """The token kept in `path`, made there (owner-only, 0600) when the file does not exist.

        Raises `UsageError` for a file others may read or write, one that is not a regular
        file, or one that holds no usable token: each message says how to put it right."""
        try:
            return cls(_read(path), path, made=False)
        except FileNotFoundError:
            pass
        value = secrets.token_urlsafe(TOKEN_BYTES)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            # Another server made it between the read and the create: use that one.
            return cls(_read(path), path, made=False)
        except OSError as err:
            raise UsageError(
                f"recall serve: cannot make the token file {path}: {err.strerror or err}; "
                f"name a writable place with --token-file or ${TOKEN_ENV}"
            ) from err
        try:
            os.fchmod(fd, 0o600)  # whatever the umask left
            os.write(fd, (value + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return cls(value, path, made=True)


def _read(path: Path) -> str:
    """The token in an existing file, checked; FileNotFoundError when there is none."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"recall serve: the token file {path} is not a regular file")
        if info.st_mode & 0o077:
            raise UsageError(
                f"recall serve: the token file {path} may be read or written by others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); run 'chmod 600 {path}', or delete it so "
                "that a new token is made"
            )
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise UsageError(
                f"recall serve: the token file {path} belongs to another user; delete it so "
                "that a new token is made, or name another with --token-file"
            )
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    value = raw.decode("ascii", errors="replace").strip()
    if (
        len(value) < MIN_TOKEN_CHARS
        or not value.isascii()
        or not value.isprintable()
        or any(c.isspace() for c in value)
    ):
        raise UsageError(
            f"recall serve: the token file {path} holds no usable token (one line of at least "
            f"{MIN_TOKEN_CHARS} printable characters, no spaces); delete it so that a new one "
            "is made"
        )
    return value


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or a name) reaches this machine only: every address it
    resolves to is a loopback one."""
    name = host.strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    addresses = {str(info[4][0]).split("%")[0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


#: The host names an `Origin` may carry: a page served from this machine.
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def loopback_origin(origin: str) -> bool:
    """Whether an `Origin` header names a page served from this machine over http or https:
    `http://127.0.0.1:*`, `http://localhost:*` or `http://[::1]:*` (any port, or none)."""
    try:
        parts = urlsplit(origin.strip())
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and (parts.hostname or "") in _LOOPBACK_NAMES
        and not parts.path.strip("/")
        and not parts.username
        and not parts.password
    )


class Guard:
    """The ASGI app every request passes first: an `Origin` that is not a loopback one gets
    403 (a page elsewhere reaching this server through DNS rebinding), a request without the
    bearer token, or with another, gets 401. Other requests go on to `app`."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self._token = token.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for key, value in scope.get("headers") or ():
            headers.setdefault(bytes(key).decode("latin-1").lower(), bytes(value).decode("latin-1"))
        origin = headers.get("origin")
        if origin is not None and not loopback_origin(origin):
            await _refuse(
                send,
                403,
                f"recall serve: requests from origin {origin[:200]!r} are refused; only pages "
                "served from this machine (http://127.0.0.1, http://localhost, http://[::1]) "
                "may call this server",
            )
            return
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            await _refuse(
                send,
                401,
                "recall serve: this server needs its access token; send the header "
                "'Authorization: Bearer TOKEN' with the token from the file 'recall serve "
                "--http' names when it starts",
                challenge='Bearer realm="recall"',
            )
            return
        # Constant time: how much of a guess matches never shows in how long the answer takes.
        if not hmac.compare_digest(given.strip().encode("latin-1"), self._token):
            await _refuse(
                send,
                401,
                "recall serve: the access token is wrong; send the one kept in the file "
                "'recall serve --http' names when it starts",
                challenge='Bearer realm="recall", error="invalid_token"',
            )
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, challenge: str | None = None) -> None:
    """Answer with `status` and a JSON-RPC error body carrying `message`, as MCP clients read
    an HTTP-level failure."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    ).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    if challenge is not None:
        headers.append((b"www-authenticate", challenge.encode("ascii")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class Listen:
    """Where `recall serve --http` listens and where its token is kept. `remote`: binding a
    host that is not a loopback one was asked for explicitly (`--allow-remote`)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token_file: str | os.PathLike[str] | None = None
    remote: bool = False


def opened(listen: Listen) -> tuple[Token, socket.socket, bool]:
    """The token (made on the first start), the listening socket, and whether the host is a
    loopback one. A host other machines reach is refused unless `listen.remote` says so."""
    if not 0 <= listen.port <= 65535:
        raise UsageError(f"recall serve: --port {listen.port} is not a port (0 to 65535)")
    loopback = is_loopback(listen.host)
    if not loopback and not listen.remote:
        raise UsageError(
            f"recall serve: --host {listen.host} can be reached from other machines, and the "
            "server speaks plain HTTP (its token would cross the network unencrypted); keep "
            f"the default {DEFAULT_HOST}, or pass --allow-remote to bind it anyway"
        )
    token = Token.kept_in(token_path(listen.token_file))
    return token, listening(listen.host, listen.port), loopback


def listening(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` and listening (port 0: any free one). Raises
    `UsageError` saying what to do when the port is taken, the address is not this machine's,
    or the host cannot be resolved."""
    try:
        found = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as err:
        raise UsageError(f"recall serve: cannot resolve --host {host}: {err.strerror}") from err
    family, kind, proto, _, address = found[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise UsageError(
                f"recall serve: port {port} on {host} is in use; stop what holds it, or choose "
                "another with --port (--port 0 takes any free one)"
            ) from err
        if err.errno == errno.EADDRNOTAVAIL:
            raise UsageError(
                f"recall serve: {host} is not an address of this machine; choose one with "
                f"--host (the default is {DEFAULT_HOST})"
            ) from err
        if err.errno == errno.EACCES:
            raise UsageError(
                f"recall serve: port {port} needs privileges this user lacks; choose a port "
                "above 1023 with --port"
            ) from err
        raise UsageError(f"recall serve: cannot listen on {host}:{port}: {err}") from err
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """The endpoint's URL on a listening socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{ENDPOINT}"


def run(
    server: Any,
    sock: socket.socket,
    *,
    token: str,
    remote: bool = False,
    ready: Callable[[], None] = lambda: None,
) -> None:
    """Serve the SDK `server` over streamable HTTP on `sock`, behind `Guard`, until SIGINT or
    SIGTERM (either stops it gracefully, and it returns). Every client session shares the one
    `server` (and so the one store and watch). `ready` is called once requests are answered.

    `remote`: the socket is bound to an address other machines reach; the SDK's check of the
    `Host` header then lets any name through (the token still guards every request)."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=not remote,
        allowed_hosts=["127.0.0.1", "localhost", "[::1]", "127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    # JSON responses, not an SSE stream per POST: the tools send no progress, and a plain body
    # about halves the search round trip (benches/mcp_latency.py).
    app = server.streamable_http_app(
        streamable_http_path=ENDPOINT, json_response=True, transport_security=security
    )
    guarded = Guard(app, token)

    async def serving(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await guarded(scope, receive, send)
            return

        async def sent(message: MutableMapping[str, Any]) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                ready()

        await guarded(scope, receive, sent)

    config = uvicorn.Config(
        serving,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=3,
        access_log=False,
    )
    with contextlib.closing(sock), _stopped_quietly():
        uvicorn.Server(config).run(sockets=[sock])


@contextlib.contextmanager
def _stopped_quietly() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM do nothing of their own: uvicorn stops gracefully on
    either, then raises it again for the handler it found, so the caller returns normally
    (and closes the store) rather than dying of the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {sig: signal.signal(sig, _ignored) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


def _ignored(sig: int, frame: object) -> None:
    """A signal received once the server has already stopped for it."""
