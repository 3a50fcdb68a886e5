"""`recall serve --http` (SPEC §8.3): a real server subprocess on a free port, driven by the MCP
SDK's own streamable HTTP client, several sessions at once on one warm store; the bearer token
(made once, 0600, reused), the 401 and 403 refusals, and the start-up errors with their exit
codes."""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recall.cli import app

from .mcp_http_session import bearer_session as client
from .test_mcp import AS_OF, RATE_Q, Session, by_file, data, store  # noqa: F401

pytest.importorskip("mcp")

START_S = 60.0  # spawn to listening, on a busy machine
WATCH_S = 15.0  # the watch's latency is about a second; generous on a busy machine


@pytest.fixture
def backend(tmp_path: Path) -> Callable[[str], str]:
    """The transport is under test, not the store: a store file only (the stdio tests run
    `store` on both backends)."""
    return lambda name: str(tmp_path / name)


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    #: What the server printed on stdout before it listened.
    said: list[str]


@contextlib.contextmanager
def http_server(tmp_path: Path, args: list[str], token_file: Path) -> Iterator[Server]:
    """`recall serve --http --port 0 ARGS` started, until it says where it listens; stopped
    with SIGTERM afterwards, which it must answer by exiting 0."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recall.cli",
            "serve",
            "--http",
            "--port",
            "0",
            "--token-file",
            str(token_file),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "server.log", "a"),  # noqa: SIM115 - the child holds it
        text=True,
        cwd=str(tmp_path),
        env=dict(os.environ),
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    said: list[str] = []
    url = None
    deadline = time.monotonic() + START_S
    try:
        while url is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the server did not listen within {START_S} s") from None
            if line is None:
                log = (tmp_path / "server.log").read_text()
                raise AssertionError(f"the server exited before listening: {said} {log}")
            said.append(line)
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].split()[0]
        yield Server(process, url, said)
    finally:
        process.terminate()
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, (tmp_path / "server.log").read_text()


def post(url: str, headers: dict[str, str]) -> Any:
    """One raw `initialize` POST with `headers` (the SDK client never sends a bad one)."""
    import httpx2

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    sent = {"Accept": "application/json, text/event-stream", **headers}
    return httpx2.post(url, json=body, headers=sent, timeout=30.0)


def run(scenario: Callable[[], Any]) -> None:
    import anyio

    anyio.run(scenario)


# --- several clients, one server ---------------------------------------------------------------


def test_two_clients_at_once_share_one_warm_server(
    tmp_path: Path,
    store: tuple[str, Path],  # noqa: F811 - the fixture of test_mcp
) -> None:
    """Two SDK clients on one server at the same time both get the judgment; a note one of
    them remembers is found by the other's search; a note written into the corpus by anyone
    is followed by the server's one watch and found by both."""
    pytest.importorskip("watchfiles")
    db, corpus = store
    token_file = tmp_path / "token"
    args = ["--db", db, "--corpus", str(corpus), "--watch"]
    with http_server(tmp_path, args, token_file) as server:
        token = token_file.read_text().strip()

        async def scenario() -> None:
            import anyio

            async with client(server.url, token) as a, client(server.url, token) as b:
                answers: dict[str, dict[str, Any]] = {}

                async def ask(name: str, session: Session) -> None:
                    for _ in range(5):
                        res = await session.call_tool("search", {"query": RATE_Q, "as_of": AS_OF})
                        assert not res.is_error, res.content[0].text
                        answers[name] = data(res)

                # The watch's first run commits whenever its watcher has started: two answers
                # are compared only when they read the same commit.
                for _ in range(20):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(ask, "a", a)
                        tg.start_soon(ask, "b", b)
                    if answers["a"]["generation"] == answers["b"]["generation"]:
                        break
                for judgment in answers.values():
                    top = judgment["hits"][0]
                    assert (top["provenance"]["file"], top["verdict"]) == (
                        "rate-limits-v2.md",
                        "ok",
                    )
                    assert judgment["trust_state"] == "trusted"
                for judgment in answers.values():
                    judgment.pop("timings_ms", None)
                assert answers["a"] == answers["b"]

                note = {
                    "title": "Kettle descaling",
                    "text": "The office kettle is descaled every Friday at 16:00 by facilities.",
                }
                written = data(await a.call_tool("remember", note))
                assert written["index"]["added"] == [written["file"]]
                await found_by(b, "kettle descaled every Friday", written["file"])

                (corpus / "plants.md").write_text(
                    "# Plants\n\nThe lobby ficus is watered on Tuesdays with rain water.\n",
                    encoding="utf-8",
                )
                for session in (a, b):
                    await found_by(session, "lobby ficus watered Tuesdays", "plants.md")

        run(scenario)
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log, log


async def found_by(session: Session, query: str, file: str) -> None:
    """`file` is among the hits of `query` within the watch's latency."""
    import anyio

    deadline = time.monotonic() + WATCH_S
    while time.monotonic() < deadline:
        res = await session.call_tool("search", {"query": query, "k": 5, "as_of": "2100-01-01"})
        assert not res.is_error, res.content[0].text
        if file in by_file(data(res)):
            return
        await anyio.sleep(0.1)
    raise AssertionError(f"{file} was not found by {query!r} within {WATCH_S} s")


# --- the token and the origin -----------------------------------------------------------------


def test_the_token_is_required_and_other_origins_are_refused(
    tmp_path: Path,
    store: tuple[str, Path],  # noqa: F811 - the fixture of test_mcp
) -> None:
    db, _ = store
    token_file = tmp_path / "config" / "recall" / "token"
    with http_server(tmp_path, ["--db", db], token_file) as server:
        token = token_file.read_text().strip()
        # Made now, owner-only, and shown this once.
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
        assert len(token) >= 43 and any(token in line for line in server.said)

        missing = post(server.url, {})
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert "needs its access token" in missing.json()["error"]["message"]
        assert "Authorization: Bearer" in missing.json()["error"]["message"]
        for wrong in (token[:-1] + ("A" if token[-1] != "A" else "B"), token[:8], "x" * 43):
            refused = post(server.url, {"Authorization": f"Bearer {wrong}"})
            assert refused.status_code == 401, wrong
            assert "the access token is wrong" in refused.json()["error"]["message"]
            assert 'error="invalid_token"' in refused.headers["www-authenticate"]
        basic = post(server.url, {"Authorization": f"Basic {token}"})
        assert basic.status_code == 401

        bearer = {"Authorization": f"Bearer {token}"}
        for origin in (
            "http://evil.example",
            "http://127.0.0.1.evil.example:8080",
            "https://localhost.evil.example",
            "null",
            "file://",
        ):
            refused = post(server.url, {**bearer, "Origin": origin})
            assert refused.status_code == 403, origin
            assert "requests from origin" in refused.json()["error"]["message"]
        for origin in ("http://127.0.0.1:3000", "http://localhost:5173", "http://[::1]:8080"):
            assert post(server.url, {**bearer, "Origin": origin}).status_code == 200, origin
        assert post(server.url, bearer).status_code == 200

        async def refused_by_the_sdk() -> None:
            with pytest.raises(Exception) as caught:  # noqa: PT011 - the SDK's error type varies
                async with client(server.url, "not-the-token"):
                    pass
            # The SDK client raises the refusal's own message (inside its task groups).
            assert "the access token is wrong" in repr(caught.value)

        run(refused_by_the_sdk)
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_the_token_is_kept_and_reused_on_restart(
    tmp_path: Path,
    store: tuple[str, Path],  # noqa: F811 - the fixture of test_mcp
) -> None:
    db, _ = store
    token_file = tmp_path / "token"
    with http_server(tmp_path, ["--db", db], token_file) as first:
        made = token_file.read_text().strip()
        assert any(made in line for line in first.said)
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

    with http_server(tmp_path, ["--db", db], token_file) as second:
        assert token_file.read_text().strip() == made
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        # Not shown again: the start says where it is kept.
        assert not any(made in line for line in second.said)
        assert any(f"kept in {token_file}" in line for line in second.said)

        async def scenario() -> None:
            async with client(second.url, made) as session:
                stats = data(await session.call_tool("stats", {}))
                assert stats["store"]["documents"] == 10

        run(scenario)


# --- start-up errors, before anything listens --------------------------------------------------


def serve(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "m.db"), *args])


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("y" * 43 + "\n")
    token_file.chmod(0o644)
    res = serve(tmp_path, "--http", "--port", "0", "--token-file", str(token_file))
    assert res.exit_code == 2
    assert "may be read or written by others (mode 0644)" in res.output
    assert f"chmod 600 {token_file}" in res.output

    token_file.chmod(0o600)
    token_file.write_text("short\n")
    res = serve(tmp_path, "--http", "--port", "0", "--token-file", str(token_file))
    assert res.exit_code == 2 and "holds no usable token" in res.output


def test_a_port_in_use_says_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = serve(tmp_path, "--http", "--port", str(port), "--token-file", str(tmp_path / "t"))
    assert res.exit_code == 2
    assert f"port {port} on 127.0.0.1 is in use" in res.output and "--port" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "--host", "0.0.0.0"], "pass --allow-remote to bind it anyway"),
        (["--http", "--port", "70000"], "70000 is not in the range"),
        (["--port", "8000"], "--port only apply with --http"),
        (["--host", "::1", "--allow-remote"], "--host, --allow-remote only apply with --http"),
        (["--http", "--host", "no-such-host.invalid"], "pass --allow-remote"),
    ],
)
def test_http_options_are_checked(tmp_path: Path, args: list[str], message: str) -> None:
    res = serve(tmp_path, *args)
    assert res.exit_code == 2 and message in res.output
    assert not (tmp_path / "m.db").exists()


def test_loopback_hosts_and_origins() -> None:
    from recall.mcp_server.http import is_loopback, loopback_origin

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "example.invalid"))
    allowed = ["http://127.0.0.1:9", "http://localhost", "https://localhost:1", "http://[::1]:80"]
    refused = [
        "http://localhost.evil:80",
        "http://evil/127.0.0.1",
        "http://user@localhost:1",
        "http://localhost:x",
        "ftp://localhost",
        "null",
        "",
    ]
    assert all(loopback_origin(o) for o in allowed)
    assert not any(loopback_origin(o) for o in refused)


def test_the_help_names_the_transports_defaults() -> None:
    from recall.mcp_server.http import DEFAULT_HOST, DEFAULT_PORT, TOKEN_ENV

    res = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert f"default {DEFAULT_HOST}" in text and f"default {DEFAULT_PORT}" in text
    assert f"${TOKEN_ENV}" in text


def test_http_without_the_sdk_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    token_file = tmp_path / "token"
    res = serve(tmp_path, "--http", "--port", "0", "--token-file", str(token_file))
    assert res.exit_code == 2
    assert "pip install 'recall-memory[mcp]'" in res.output
    assert not token_file.exists(), "nothing is made before the SDK is found"


def test_the_http_module_imports_no_server_library() -> None:
    code = (
        "import recall.mcp_server.http, sys; "
        "print(sorted(m for m in ('mcp', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
