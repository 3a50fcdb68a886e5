"""`recall serve`, `recall watch` and `recall log`: the memory kept running, for agents over MCP
(stdio, or streamable HTTP with `--http`) and for folders that change, and what it told agents.

Owns: the commands' arguments, one line per re-indexed batch (one JSON object per line with
`--json`), a server's logged calls shown, and their exit codes. Does not own: the MCP server
and its tools (`recall.mcp_server`), following the folders (`recall.watch`) or the log's lines
(`recall.call_log`), imported only when the command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from recall.cli.exits import fail
from recall.cli.options import DbOption, JsonOption, NamespaceOption, store_named


def register(app: typer.Typer) -> None:
    """Add `serve`, `watch` and `log` to the `recall` app."""
    app.command()(serve)
    app.command("watch")(watch_cmd)
    app.command("log")(log_cmd)


def serve(
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    corpus: Optional[list[Path]] = typer.Option(
        None,
        "--corpus",
        help="A folder of notes the server may index and write into (repeat for several; "
        "'remember' writes into the first).",
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", help="strict (default) or development. Also $RECALL_TRUST_MODE."
    ),
    judge: Optional[Path] = typer.Option(
        None,
        "--judge",
        help="Judge model directory for entail. Default: $RECALL_JUDGE, else recall's own.",
    ),
    watch: bool = typer.Option(
        False,
        "--watch",
        help="Keep the index following the --corpus folders: changed notes are re-indexed "
        "within a second while searches go on.",
    ),
    log: Optional[Path] = typer.Option(
        None,
        "--log",
        help="Append each call to this file, one JSON line with the hits, verdicts and "
        "calibration it answered with (rotated past 10 MiB). Read it with 'recall log'.",
    ),
    http: bool = typer.Option(
        False,
        "--http",
        help="Serve over MCP's streamable HTTP transport instead of stdio: one warm server "
        "(one store, one model, one --watch) for every agent that connects, each request "
        "carrying the access token.",
    ),
    host: Optional[str] = typer.Option(
        None,
        "--host",
        help="With --http: the address to listen on (default 127.0.0.1, this machine "
        "only). Another needs --allow-remote.",
    ),
    port: Optional[int] = typer.Option(
        None,
        "--port",
        min=0,
        max=65535,
        help="With --http: the port to listen on (default 7749; 0 takes any free one).",
    ),
    token_file: Optional[Path] = typer.Option(
        None,
        "--token-file",
        help="With --http: where the access token is kept (made on the first start, readable "
        "by its owner only). Default: $RECALL_TOKEN_FILE, else "
        "$XDG_CONFIG_HOME/recall/serve-token (~/.config/recall/serve-token).",
    ),
    allow_remote: bool = typer.Option(
        False,
        "--allow-remote",
        help="With --http: let --host name an address other machines reach. The server "
        "speaks plain HTTP, so the token crosses the network unencrypted.",
    ),
) -> None:
    """Serve the memory to agents over MCP (stdio, or --http for several agents at once):
    search, explain, stats, lint, index, remember."""
    from recall.errors import RecallError
    from recall.mcp_server import Listen
    from recall.mcp_server import serve as run_server

    given = [
        name
        for name, value in (
            ("--host", host),
            ("--port", port),
            ("--token-file", token_file),
            ("--allow-remote", allow_remote or None),
        )
        if value is not None
    ]
    if given and not http:
        fail(f"recall serve: {', '.join(given)} only apply with --http; add --http")
    chosen: dict[str, Any] = {"host": host, "port": port, "token_file": token_file}
    listen = (
        Listen(**{k: v for k, v in chosen.items() if v is not None}, remote=allow_remote)
        if http
        else None
    )
    try:
        target = store_named(db, namespace)
        run_server(
            target,
            [str(p) for p in corpus or []],
            mode=mode,
            judge=judge,
            watch=watch,
            log=log,
            http=listen,
        )
    except RecallError as err:
        fail(str(err))


def watch_cmd(
    paths: list[Path] = typer.Argument(..., help="Folders of notes to follow."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
) -> None:
    """Index the folders, then re-index whatever changes in them until interrupted (Ctrl-C).

    One line per batch (one JSON object per line with --json). Searches from other processes
    keep being answered while a batch is written.
    """
    from recall.errors import RecallError
    from recall.watch import Batch, watch

    def show(batch: Batch) -> None:
        report = batch.report
        if as_json:
            line: dict[str, object] = {"changed": batch.changed, "error": batch.error}
            if report is not None:
                line["report"] = report.to_dict()
            print(json.dumps(line), flush=True)
        elif batch.error is not None:
            print(f"{batch.changed} changed: {batch.error}", file=sys.stderr, flush=True)
        elif report is not None:
            print(
                f"{batch.changed} changed: added {len(report.added)} · updated "
                f"{len(report.updated)} · removed {len(report.removed)} · refused "
                f"{len(report.refused)} · generation {report.generation}",
                flush=True,
            )

    try:
        watch(store_named(db, namespace), [str(p) for p in paths], on_batch=show)
    except RecallError as err:
        fail(str(err))


def log_cmd(
    file: Path = typer.Argument(..., help="A log written by 'recall serve --log FILE'."),
    last: int = typer.Option(20, "--last", "-n", min=1, help="Show the last N calls."),
    as_json: bool = JsonOption,
) -> None:
    """What agents were told: the last calls a server logged, each with its hits, verdicts
    and calibration."""
    from recall.call_log import read

    try:
        lines, bad = read(file)
    except OSError as err:
        fail(f"recall log: cannot read {file}: {err.strerror or err}")
    shown = lines[-last:]
    if as_json:
        typer.echo(json.dumps({"calls": shown, "unreadable_lines": bad}, ensure_ascii=False))
        return
    for line in shown:
        args = line.get("arguments") or {}
        asked = args.get("query") or args.get("file") or args.get("path") or ""
        head = f"{line.get('at', '?')}  {line.get('tool', '?')}"
        typer.echo(f"{head}  {asked}" if asked else head)
        if "error" in line:
            error = line["error"] or {}
            typer.echo(f"    error {error.get('code')}: {error.get('message')}")
        for hit in line.get("hits") or []:
            source = hit.get("source")
            state = f" (file {source})" if source not in (None, "current") else ""
            verdict, confidence = hit.get("verdict"), hit.get("confidence") or 0.0
            typer.echo(f"    {verdict}  {confidence:.3f}  {hit.get('file')}{state}")
        if line.get("abstained"):
            typer.echo(f"    abstained: {line.get('reason')}")
        if "calibration" in line:
            calibration, generation = line.get("calibration"), line.get("generation")
            typer.echo(f"    calibration {calibration}, generation {generation}")
    if bad:
        typer.echo(f"{bad} line(s) could not be read", err=True)
