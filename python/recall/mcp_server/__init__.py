"""The MCP server (SPEC §8.3): `recall serve`, over stdio or streamable HTTP, one module per job.

Owns: `serve` (the store opened once, `--watch` following the roots on a thread of its own, the
SDK's server answering with `Tools`, one call at a time off the event loop, over stdio for one
client or over HTTP for as many as connect) and `INSTALL_HINT`. The rest lives in the package's
modules, which import one another and never this one: `http` (the HTTP transport: the access
token, the origin and token guard, the listening socket), `tools`
(`Tools`: a call checked and run, the read tools' handlers), `specs` (the instructions and each
tool's name, input schema and description written for a model), `arguments` (the bounds and the
check of one argument), `paths` (every path confined to the corpus roots), `remember` (the note
`remember` writes: its text, its name, the write) and `replies` (`Reply`, error codes and next
steps). Does not own: search, verdicts, indexing or calibration (`recall.api` and the Rust core).

The MCP SDK (the `mcp` extra) is imported only by `serve`: `Tools` is plain Python, so the base
install never imports it and the tool logic is usable and testable without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from recall.errors import RecallError, UsageError
from recall.mcp_server.http import Listen
from recall.mcp_server.remember import slug
from recall.mcp_server.replies import NEXT_STEP, Reply
from recall.mcp_server.specs import INSTRUCTIONS, ToolSpec
from recall.mcp_server.tools import Tools

__all__ = [
    "INSTALL_HINT",
    "INSTRUCTIONS",
    "NEXT_STEP",
    "Listen",
    "Reply",
    "ToolSpec",
    "Tools",
    "serve",
    "slug",
]

INSTALL_HINT = (
    "recall serve: the MCP server needs the MCP Python SDK (Python 3.10 or newer); "
    "install it with: pip install 'recall-memory[mcp]'"
)


def _tool_list(tools: Tools) -> list[Any]:
    import mcp.types as types

    return [
        types.Tool(
            name=s.name,
            title=s.title,
            description=s.description,
            input_schema=s.input_schema,
            annotations=types.ToolAnnotations(
                title=s.title,
                read_only_hint=s.read_only,
                destructive_hint=False,
                idempotent_hint=s.idempotent,
                open_world_hint=False,
            ),
        )
        for s in tools.specs()
    ]


#: The tool name a `tools/call` whose params are not an object is answered under: the SDK
#: drops a message that fails its validation without a reply, so such a request is rewritten
#: to one the server refuses with INVALID_PARAMS under the request's own id.
MALFORMED = "\x00malformed"


def repaired(line: str) -> str:
    """A request line as read from stdin, with a `tools/call` whose params are not an object
    (a string, a list, a number) rewritten to call `MALFORMED`; every other line unchanged."""
    if '"tools/call"' not in line:
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line
    if (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and "id" in message
        and not isinstance(message.get("params"), dict)
    ):
        message["params"] = {"name": MALFORMED, "arguments": {}}
        return json.dumps(message) + "\n"
    return line


class _Stdin:
    """The process's stdin as lines of UTF-8 text for the SDK's stdio transport, each passed
    through `repaired`."""

    def __init__(self) -> None:
        import io

        import anyio

        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines = anyio.wrap_file(text)

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            yield repaired(line)


def serve(
    db: str,
    corpus: Sequence[str | os.PathLike[str]] = (),
    *,
    mode: str | None = None,
    judge: str | os.PathLike[str] | None = None,
    watch: bool = False,
    log: str | os.PathLike[str] | None = None,
    http: Listen | None = None,
) -> None:
    """Serve the tools over stdio until the client closes the connection (SPEC §8.3), or, with
    `http`, over MCP's streamable HTTP transport until interrupted: every client session is
    answered by the one server, so the store, the model and the watch are shared by all.

    `log`: a file each call is appended to, one JSON line with what it answered
    (`recall.call_log`).

    `watch` keeps the index following the corpus roots (recall.watch) on a thread with its own
    store handle: searches are answered from the last committed generation meanwhile.

    The store opens once and stays open; strict mode unless `mode` (or $RECALL_TRUST_MODE)
    says development. Raises `UsageError` with `INSTALL_HINT` when the SDK is not installed, and
    for an HTTP host, port or token file that cannot be used (`recall.mcp_server.http`).
    """
    try:
        import anyio
        import anyio.to_thread
        import mcp.types as types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
        from mcp.shared.exceptions import MCPError

        if http is not None:
            import uvicorn  # noqa: F401
    except ImportError as err:
        raise UsageError(INSTALL_HINT) from err

    import recall
    from recall.judge import available

    chosen = mode or os.environ.get("RECALL_TRUST_MODE") or "strict"
    if chosen not in ("strict", "development"):
        raise UsageError(f"recall serve: unknown mode {chosen!r}; use strict or development")
    has_judge = available(judge)
    if watch and not corpus:
        raise UsageError("recall serve: --watch needs at least one --corpus folder to follow")
    if http is not None:
        from recall.mcp_server import http as transport

        # Before the store opens: a taken port or a bad token file is said at once.
        token, sock, loopback = transport.opened(http)
        if token.made:
            print(
                f"recall serve: made an access token, kept in {token.path} (readable by you "
                f"only); it is shown this once:\n\n    {token.value}\n\nClients send it as "
                "the header 'Authorization: Bearer TOKEN'.",
                flush=True,
            )
        else:
            print(
                f"recall serve: the access token is kept in {token.path}; clients send it as "
                "the header 'Authorization: Bearer TOKEN'.",
                flush=True,
            )
        if not loopback:
            print(
                f"recall serve: listening on {http.host}, which other machines reach, over "
                "plain HTTP: the token crosses the network unencrypted",
                file=sys.stderr,
                flush=True,
            )
    memory = recall.open(db, judge=judge)
    stop = threading.Event()
    try:
        if watch:
            from recall.watch import Batch
            from recall.watch import watch as follow

            def logged(batch: Batch) -> None:
                if batch.error is not None:
                    print(f"recall serve --watch: {batch.error}", file=sys.stderr, flush=True)

            try:
                import watchfiles  # noqa: F401
            except ImportError as err:
                raise UsageError(INSTALL_HINT) from err

            def following() -> None:
                try:
                    follow(db, corpus, on_batch=logged, stop=stop)
                except Exception as err:  # noqa: BLE001 - the server keeps serving searches
                    print(f"recall serve --watch stopped: {err}", file=sys.stderr, flush=True)

            threading.Thread(target=following, name="recall-watch", daemon=True).start()
        from recall.call_log import CallLog

        calls = CallLog(log) if log is not None else None
        tools = Tools(memory, corpus, mode=chosen, judge=has_judge, log=calls)
        if memory.exists and memory.stats().embedder is not None:
            # Warm: the embedder loads now, not inside the first call. A model that will not
            # load is reported by the calls that need it.
            with contextlib.suppress(RecallError):
                _ = memory.embedder
        listed = _tool_list(tools)
        names = [t.name for t in listed]
        lock = anyio.Lock()

        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
            return types.ListToolsResult(tools=listed)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
            if params.name == MALFORMED:
                raise MCPError(
                    types.INVALID_PARAMS,
                    "recall: tools/call params must be an object with the tool's name and "
                    "its arguments",
                )
            if params.name not in names:
                raise MCPError(
                    types.INVALID_PARAMS,
                    f"recall: unknown tool {params.name!r}; the tools are {', '.join(names)}",
                )
            # One call at a time on the one store, off the event loop so the connection
            # keeps answering (pings, cancellations) during a long index run.
            async with lock:
                reply = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=reply.text)],
                structured_content=reply.data,
                is_error=reply.is_error,
            )

        server: Server[Any] = Server(
            "recall",
            version=recall.__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

        if http is not None:
            url = transport.url_of(sock)

            def ready() -> None:
                print(
                    f"recall serve: listening on {url} (MCP streamable HTTP); Ctrl-C stops",
                    flush=True,
                )

            transport.run(server, sock, token=token.value, remote=not loopback, ready=ready)
            return

        async def run() -> None:
            async with stdio_server(stdin=cast(Any, _Stdin())) as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
    finally:
        stop.set()
        memory.close()
        if http is not None:
            sock.close()
