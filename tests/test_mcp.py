"""The MCP server (SPEC §8.3): `recall serve` as a subprocess, driven by the MCP SDK's own stdio
client; the tools' argument checks and path confinement in process; and the clear failure when
the SDK is not installed."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app
from recall.errors import RecallError

from .conftest import EXAMPLES
from .test_search import certified

RATE_Q = "how many requests per second does the public API allow?"
AS_OF = "2026-11-30"


@pytest.fixture
def store(tmp_path: Path, backend: Callable[[str], str]) -> tuple[str, Path]:
    """A calibrated store over a copy of the example notes, on each backend: (db, corpus)."""
    corpus = tmp_path / "notes"
    shutil.copytree(EXAMPLES, corpus)
    db = backend("memory.db")
    with recall.open(db) as mem:
        mem.index(corpus, now=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
        certified(mem)
    return db, corpus


Session = Any  # mcp.ClientSession


def run_server(
    tmp_path: Path, args: list[str], scenario: Callable[[Session], Awaitable[None]]
) -> None:
    """Start `recall serve ARGS` and run `scenario(session)` against it over stdio."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "recall.cli", "serve", *args],
        env=dict(os.environ),
        cwd=str(tmp_path),
    )

    async def main() -> None:
        with open(tmp_path / "server.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await scenario(session)

    anyio.run(main)


def data(result: Any) -> dict[str, Any]:
    """The structured payload of a tool result, checked against its JSON text."""
    assert result.structured_content is not None
    if not result.is_error:
        assert json.loads(result.content[0].text) == result.structured_content
    payload: dict[str, Any] = result.structured_content
    return payload


def by_file(judgment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["provenance"]["file"]: h for h in judgment["hits"]}


# --- over stdio, through the SDK's client -----------------------------------------------------


async def check_tool_list(session: Session) -> None:
    listed = (await session.list_tools()).tools
    tools = {t.name: t for t in listed}
    assert set(tools) == {"search", "explain", "stats", "lint", "index", "remember", "declare"}
    for tool in listed:
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.input_schema["additionalProperties"] is False
        assert tool.description and len(tool.description) > 80
    search = tools["search"]
    assert search.input_schema["required"] == ["query"]
    k = search.input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"], k["default"]) == (1, 50, 5)
    assert search.input_schema["properties"]["query"]["maxLength"] == 2000
    # No judge is configured: recall's own is, so `entail` is offered.
    assert search.input_schema["properties"]["entail"]["type"] == "boolean"
    assert "only verdict you may act on" in (search.description or "")
    assert tools["search"].annotations.read_only_hint is True
    assert tools["remember"].annotations.read_only_hint is False
    assert set(tools["remember"].input_schema["required"]) == {"title", "text"}


def test_tools_are_listed_and_search_returns_the_judgment(
    tmp_path: Path, store: tuple[str, Path]
) -> None:
    db, corpus = store

    async def scenario(session: Session) -> None:
        await check_tool_list(session)
        res = await session.call_tool("search", {"query": RATE_Q, "k": 5, "as_of": AS_OF})
        assert not res.is_error
        judgment = data(res)
        assert judgment["abstained"] is False and judgment["reason"] == ""
        assert judgment["trust_state"] == "trusted" and judgment["mode"] == "strict"
        assert judgment["calibrated"] is True and judgment["calibration"]["certified"] is True
        top = judgment["hits"][0]
        assert (top["provenance"]["file"], top["verdict"]) == ("rate-limits-v2.md", "ok")
        assert top["confidence"] > 0.5 and "250 requests" in top["text"]
        stale = by_file(judgment)["rate-limits-v1.md"]
        assert stale["verdict"] == "superseded"
        assert stale["validity"]["superseded_by"] == "rate-limits-v2.md"
        assert len(judgment["hits"]) <= 5

        explained = data(
            await session.call_tool("explain", {"query": RATE_Q, "file": "rate-limits-v1.md"})
        )
        assert explained["verdict"] == "superseded"
        assert explained["chain"] == ["rate-limits-v1.md", "rate-limits-v2.md"]
        absolute = data(
            await session.call_tool(
                "explain", {"query": RATE_Q, "file": str(corpus / "rate-limits-v1.md")}
            )
        )
        assert absolute["path"] == "rate-limits-v1.md"

        stats = data(await session.call_tool("stats", {}))
        assert stats["store"]["documents"] == 10 and stats["mode"] == "strict"
        assert stats["calibration"]["certified"] is True
        assert stats["corpus_roots"] == [str(corpus.resolve())]

    run_server(tmp_path, ["--db", str(db), "--corpus", str(corpus)], scenario)


def test_remember_supersedes_and_search_serves_the_new_note(
    tmp_path: Path, store: tuple[str, Path]
) -> None:
    db, corpus = store
    v2 = (corpus / "rate-limits-v2.md").read_text(encoding="utf-8")
    note = {
        "title": "Public API rate limits (2027 revision)",
        "text": "The public API now allows **400 requests per second** per API key; burst "
        "capacity is 800 requests. Exceeding it returns HTTP `429` with `Retry-After`.",
        "supersedes": ["rate-limits-v2.md"],
        "valid_from": "2026-06-01",
    }

    async def scenario(session: Session) -> None:
        res = await session.call_tool("remember", note)
        assert not res.is_error, res.content[0].text
        written = data(res)
        assert written["file"] == "public-api-rate-limits-2027-revision.md"
        path = Path(written["path"])
        assert path.parent == corpus.resolve() and path.is_file()
        text = path.read_text(encoding="utf-8")
        assert text.startswith('---\nsupersedes:\n  - "rate-limits-v2.md"\nvalid_from: 2026-06-01')
        assert written["supersedes"] == [
            {
                "reference": "rate-limits-v2.md",
                "resolution": "resolved",
                "targets": ["rate-limits-v2.md"],
            }
        ]
        assert written["warnings"] == [] and written["index"]["added"] == [written["file"]]

        judgment = data(await session.call_tool("search", {"query": RATE_Q, "as_of": AS_OF}))
        assert not judgment["abstained"]
        top = judgment["hits"][0]
        assert (top["provenance"]["file"], top["verdict"]) == (written["file"], "ok")
        hits = by_file(judgment)
        # SPEC §5.3: the successor takes the place of the stale note that ranked best.
        assert top["promoted_from"] in {"rate-limits-v1.md", "rate-limits-v2.md"}
        for old in ("rate-limits-v1.md", "rate-limits-v2.md"):
            # SPEC §2.4: a chain reports its terminal successor.
            assert hits[old]["verdict"] == "superseded"
            assert hits[old]["validity"]["superseded_by"] == written["file"]

        # The same title again: a new file, the first one untouched.
        again = data(await session.call_tool("remember", {**note, "supersedes": []}))
        assert again["file"] == "public-api-rate-limits-2027-revision-2.md"
        assert path.read_text(encoding="utf-8") == text
        dangling = data(
            await session.call_tool(
                "remember", {"title": "x", "text": "y", "supersedes": ["no-such-note"]}
            )
        )
        assert dangling["supersedes"][0]["resolution"] == "dangling"
        assert "nothing was superseded" in dangling["warnings"][0]

    run_server(tmp_path, ["--db", str(db), "--corpus", str(corpus)], scenario)
    assert (corpus / "rate-limits-v2.md").read_text(encoding="utf-8") == v2


def test_bad_calls_are_tool_errors_and_the_server_keeps_serving(
    tmp_path: Path, store: tuple[str, Path]
) -> None:
    db, corpus = store
    bad = [
        ("search", {"query": RATE_Q, "k": 0}, "k must be an integer from 1 to 50"),
        ("search", {"query": RATE_Q, "k": 500}, "k must be an integer from 1 to 50"),
        ("search", {"query": "x" * 2001}, "the limit is 2000"),
        ("search", {"query": RATE_Q, "as_of": "soon"}, "is not a date"),
        ("search", {"query": RATE_Q, "judge": "x"}, "unknown argument(s) judge"),
        ("index", {"paths": ["../x"]}, "contains '..'"),
        ("index", {"paths": ["/etc"]}, "outside the corpus roots"),
        ("explain", {"query": RATE_Q, "file": "/etc/passwd"}, "outside the corpus roots"),
        ("remember", {"title": "t", "text": "x", "folder": "../out"}, "folder part '..'"),
    ]

    async def scenario(session: Session) -> None:
        for name, args, message in bad:
            res = await session.call_tool(name, args)
            assert res.is_error, (name, args)
            error = data(res)["error"]
            assert error["code"] == "INVALID_ARGUMENT" and message in error["message"]
            assert message in res.content[0].text
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError, match="unknown tool"):
            await session.call_tool("forget", {})
        res = await session.call_tool("search", {"query": RATE_Q, "as_of": AS_OF})
        assert not res.is_error and data(res)["hits"][0]["verdict"] == "ok"

    run_server(tmp_path, ["--db", str(db), "--corpus", str(corpus)], scenario)
    assert not (tmp_path / "out").exists() and not (tmp_path / "x").exists()


def test_refusals_carry_their_code_and_index_brings_the_store_up(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    shutil.copytree(EXAMPLES, corpus)
    db = tmp_path / "memory.db"

    async def scenario(session: Session) -> None:
        res = await session.call_tool("search", {"query": RATE_Q})
        assert res.is_error
        error = data(res)["error"]
        assert (error["code"], error["refused"]) == ("INDEX_NOT_READY", True)
        assert "call the index tool" in error["next"]
        assert res.content[0].text.startswith("recall search refused (INDEX_NOT_READY)")
        report = data(await session.call_tool("index", {"paths": ["teams/platform"]}))
        assert report["roots"] == [str(corpus.resolve())] and len(report["added"]) == 10
        res = await session.call_tool("search", {"query": RATE_Q})
        assert data(res)["error"]["code"] == "CALIBRATION_MISSING" and res.is_error
        assert "do not act" in data(res)["error"]["next"]

    run_server(tmp_path, ["--db", str(db), "--corpus", str(corpus)], scenario)


def test_development_mode_answers_degraded(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    shutil.copytree(EXAMPLES, corpus)
    db = tmp_path / "memory.db"
    with recall.open(db) as mem:
        mem.index(corpus)

    async def scenario(session: Session) -> None:
        listed = {t.name for t in (await session.list_tools()).tools}
        assert listed == {"search", "explain", "stats"}, "no corpus: nothing to index or write"
        judgment = data(await session.call_tool("search", {"query": RATE_Q}))
        assert judgment["trust_state"] == "degraded" and judgment["abstained"]
        verdicts = {h["verdict"] for h in judgment["hits"]}
        assert "unverified" in verdicts and "ok" not in verdicts

    run_server(tmp_path, ["--db", str(db), "--mode", "development"], scenario)


# --- the tools in process: argument checks and confinement -------------------------------------


@pytest.fixture
def tools(store: tuple[str, Path]) -> Any:
    from recall.mcp_server import Tools

    db, corpus = store
    with recall.open(db) as mem:
        yield Tools(mem, [corpus])


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("search", {}, "query is required"),
        ("search", {"query": "  "}, "query must not be empty"),
        ("search", {"query": 5}, "query must be a string"),
        ("search", {"query": "q", "k": True}, "k must be an integer"),
        ("search", {"query": "q", "k": 2.0}, "k must be an integer"),
        ("search", {"query": "q", "k": 51}, "k must be an integer from 1 to 50"),
        ("stats", {"x": 1}, "it takes no arguments"),
        ("explain", {"query": "q", "file": "a/../../b.md"}, "contains '..'"),
        ("explain", {"query": "q", "file": "a\x00b"}, "NUL"),
        ("index", {"paths": []}, "paths is empty"),
        ("index", {"paths": "notes"}, "must be a list of strings"),
        ("index", {"paths": ["missing"]}, "does not exist in any corpus root"),
        ("index", {"paths": ["escape"]}, "leads outside the corpus roots"),
        ("remember", {"title": "t"}, "text is required"),
        ("remember", {"title": "t", "text": "a\x00b"}, "control character"),
        ("remember", {"title": "t", "text": "x", "folder": "/tmp"}, "relative folder"),
        ("remember", {"title": "t", "text": "x", "folder": ".hidden"}, "must not start with '.'"),
        ("remember", {"title": "t", "text": "x", "folder": "escape"}, "outside the corpus root"),
        ("remember", {"title": "t", "text": "x", "valid_from": "2026-02-30"}, "YYYY-MM-DD"),
        (
            "remember",
            {"title": "t", "text": "x", "valid_from": "2026-02-02", "valid_until": "2026-02-01"},
            "would never hold",
        ),
        ("remember", {"title": "t", "text": "x", "supersedes": ['a"b']}, "quote"),
        ("remember", {"title": "t", "text": "x", "supersedes": "a.md"}, "list of strings"),
    ],
)
def test_bad_arguments(tools: Any, tmp_path: Path, name: str, args: Any, message: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    link = tools.roots[0] / "escape"
    if not link.exists():
        link.symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in tools.roots[0].rglob("*"))
    reply = tools.call(name, args)
    assert reply.is_error
    assert reply.data["error"]["code"] == "INVALID_ARGUMENT"
    assert message in reply.data["error"]["message"]
    assert sorted(p.name for p in tools.roots[0].rglob("*")) == before, "nothing was written"
    assert not any(outside.iterdir())


def test_a_sibling_folder_whose_name_extends_the_roots_is_outside(tools: Any) -> None:
    """`notes-evil` beside the root `notes` shares its name as a prefix, not its tree."""
    root = tools.roots[0]
    evil = root.parent / f"{root.name}-evil"
    evil.mkdir()
    (evil / "secret.md").write_text("# Secret\n\nThe vault code is 1234.\n")
    (root / "door").symlink_to(evil, target_is_directory=True)
    for name, args in (
        ("index", {"paths": [str(evil)]}),
        ("index", {"paths": ["door"]}),
        ("explain", {"query": "vault code", "file": str(evil / "secret.md")}),
        ("remember", {"title": "t", "text": "x", "folder": "door"}),
    ):
        reply = tools.call(name, args)
        assert reply.is_error and "outside the corpus root" in reply.text, (name, reply.text)
    assert [p.name for p in evil.iterdir()] == ["secret.md"]


def test_remember_names_are_sanitised_and_never_collide(tools: Any) -> None:
    root = tools.roots[0]
    reply = tools.call(
        "remember", {"title": "Rate Limits V1!", "text": "Short.", "folder": "inbox/2026"}
    )
    assert not reply.is_error, reply.text
    # `rate-limits-v1` is taken by an existing note's key (SPEC §2.3): another folder does not
    # make it unique, or a later `supersedes: rate-limits-v1` would be ambiguous.
    assert reply.data["file"] == "inbox/2026/rate-limits-v1-2.md"
    assert (root / "inbox/2026/rate-limits-v1-2.md").is_file()
    named = tools.call("remember", {"title": "t", "text": "x", "name": "../../Étude: café"})
    assert named.data["file"] == "etude-cafe.md"
    blank = tools.call("remember", {"title": "!!!", "text": "x"})
    assert blank.data["file"] == "note.md"


def test_lint_reports_the_corpus_declarations(tools: Any) -> None:
    root = tools.roots[0]
    before = tools.call("lint", {})
    assert not before.is_error, before.text
    # The example notes declare one dangling and one ambiguous reference on purpose.
    assert before.data["counts"] == {"E001": 1, "E006": 1} and before.data["files"] > 0
    (root / "broken.md").write_text("---\nsupersedes: no-such-note.md\n---\n# Broken\n")
    reply = tools.call("lint", {})
    assert reply.data["ok"] is False and reply.data["truncated"] == 0
    broken = [f for f in reply.data["findings"] if f["file"].endswith("broken.md")]
    assert [(f["code"], f["line"], f["severity"]) for f in broken] == [("E001", 2, "error")]
    assert tools.call("lint", {"paths": ["x"]}).is_error


def test_internal_errors_are_tool_errors(tools: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(tools.memory, "stats", boom)
    reply = tools.call("stats", {})
    assert reply.is_error and reply.data["error"]["code"] == "INTERNAL_ERROR"
    assert "disk on fire" in reply.text


def test_serve_without_the_sdk_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    res = CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "m.db")])
    assert res.exit_code == 2
    assert "pip install 'recall-memory[mcp]'" in res.output


def test_base_import_does_not_import_the_sdk() -> None:
    import subprocess

    code = "import recall, recall.cli, recall.mcp_server, sys; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_entail_is_offered_only_with_a_judge(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recall.mcp_server import Tools

    db, corpus = store
    monkeypatch.setenv("RECALL_JUDGE", str(tmp_path / "no-such-judge"))
    with recall.open(db) as mem:
        plain = Tools(mem, [corpus])
        judged = Tools(mem, [corpus], judge=True)
        assert "entail" not in plain.specs()[0].input_schema["properties"]
        assert judged.specs()[0].input_schema["properties"]["entail"]["type"] == "boolean"
        reply = judged.call("search", {"query": RATE_Q, "entail": True})
        error = reply.data["error"]
        assert reply.is_error and (error["code"], error["refused"]) == (
            "DEPENDENCY_UNAVAILABLE",
            True,
        )
        assert error["next"] == "search again without entail"
        assert not judged.call("search", {"query": RATE_Q, "as_of": AS_OF}).is_error


def test_serve_watch_follows_a_note_written_beside_it(
    tmp_path: Path, store: tuple[str, Path]
) -> None:
    """`recall serve --watch`: a note written into the corpus by anyone is searchable within
    a second or two, while the server keeps answering."""
    pytest.importorskip("watchfiles")
    db, corpus = store

    async def scenario(session: Session) -> None:
        import anyio

        (corpus / "tea.md").write_text(
            "# Tea\n\nThe office kettle descaling happens on Fridays.\n", encoding="utf-8"
        )
        for _ in range(100):
            found = data(
                await session.call_tool("search", {"query": "kettle descaling Fridays", "k": 3})
            )
            if "tea.md" in by_file(found):
                return
            await anyio.sleep(0.05)
        raise AssertionError("the written note never became searchable")

    run_server(
        tmp_path,
        ["--db", str(db), "--corpus", str(corpus), "--mode", "development", "--watch"],
        scenario,
    )


def test_without_a_corpus_the_next_step_is_the_owners(tmp_path: Path) -> None:
    """A server started without --corpus offers no index tool: it never tells the agent to
    call one."""
    db = tmp_path / "memory.db"

    async def scenario(session: Session) -> None:
        tools = {t.name for t in (await session.list_tools()).tools}
        assert "index" not in tools
        error = data(await session.call_tool("search", {"query": RATE_Q}))["error"]
        assert error["code"] == "INDEX_NOT_READY"
        assert "index tool" not in error["next"] and "recall index PATH" in error["next"]

    run_server(tmp_path, ["--db", str(db), "--mode", "development"], scenario)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("## Status\n\nSuperseded by [rate limits](rate-limits-v2.md)\n", "replaces this note"),
        ("## Status\n\nAccepted. Supersedes [old](rate-limits-v1.md)\n\nNew.", "supersedes"),
        ("## Status\n\nDeprecated\n\nDo not use.", "status 'deprecated'"),
    ],
)
def test_remember_refuses_text_that_declares_what_the_arguments_do_not(
    tools: Any, text: str, message: str
) -> None:
    """Declarations inside a remembered text (a status section, "Supersedes …") would retire
    notes, or the new one, while the reply said nothing: refused, nothing written."""
    root = tools.roots[0]
    before = sorted(p.name for p in root.rglob("*"))
    reply = tools.call("remember", {"title": "Limits", "text": text})
    assert reply.is_error and message in reply.data["error"]["message"], reply.text
    assert "supersedes" in reply.data["error"]["message"] or "valid_until" in reply.text
    assert sorted(p.name for p in root.rglob("*")) == before


@pytest.mark.parametrize(
    "args",
    [
        {"title": "Limits\x00", "text": "New limits."},
        {"title": "Limits", "text": "New limits.", "name": "lim\x07its"},
        {"title": "Limits", "text": "New limits.", "folder": "inbox\x1b"},
    ],
    ids=["nul-title", "bell-name", "escape-folder"],
)
def test_every_string_argument_refuses_control_characters(tools: Any, args: dict) -> None:
    """A NUL in a title wrote a note that was never indexed and reported success."""
    root = tools.roots[0]
    before = sorted(p.name for p in root.rglob("*"))
    reply = tools.call("remember", args)
    assert reply.is_error and reply.data["error"]["code"] == "INVALID_ARGUMENT", reply.text
    assert "control character" in reply.data["error"]["message"]
    assert sorted(p.name for p in root.rglob("*")) == before


@pytest.mark.parametrize("kind", ["a-file", "under-a-file", "dangling-link"])
def test_a_folder_that_cannot_be_one_is_an_invalid_argument(tools: Any, kind: str) -> None:
    """A `folder` naming a file, a path under a file or a dangling symlink answered
    INTERNAL_ERROR with a traceback."""
    root = tools.roots[0]
    (root / "plain.md").write_text("# Plain\n\nText.\n", encoding="utf-8")
    if kind == "dangling-link":
        (root / "gone").symlink_to(root / "nowhere")
    folder = {"a-file": "plain.md", "under-a-file": "plain.md/sub", "dangling-link": "gone"}
    reply = tools.call("remember", {"title": "Limits", "text": "New.", "folder": folder[kind]})
    assert reply.is_error and reply.data["error"]["code"] == "INVALID_ARGUMENT", reply.text
    assert "Traceback" not in reply.text and "folder" in reply.data["error"]["message"]


def test_remember_allows_a_text_that_names_what_supersedes_names(tools: Any) -> None:
    reply = tools.call(
        "remember",
        {
            "title": "Limits three",
            "text": "## Status\n\nAccepted. Supersedes [old](rate-limits-v1.md)\n\nNew limits.",
            "supersedes": ["rate-limits-v1.md"],
        },
    )
    assert not reply.is_error, reply.text
    assert [c["reference"] for c in reply.data["supersedes"]] == ["rate-limits-v1.md"]


def test_remember_writes_only_inside_the_folder_it_opened(tools: Any, tmp_path: Path) -> None:
    """A folder swapped for a symlink to elsewhere after the argument was checked: the folder
    opened is checked again, so the note never lands outside the corpus."""
    from recall.mcp_server.remember import write_new

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    swapped = tools.roots[0] / "inbox"
    swapped.symlink_to(outside, target_is_directory=True)
    with pytest.raises(RecallError, match="outside the corpus root"):
        write_new(swapped, tools.roots[0], "note", "# Note\n\nText.\n", roots=tools.roots)
    assert list(outside.iterdir()) == []


def test_remember_on_a_full_disk_leaves_nothing_half_made(
    tools: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tools.roots[0]
    before = sorted(p.name for p in root.rglob("*"))
    real_write = os.write

    def full(fd: int, data: Any) -> int:
        if len(data) > 20:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    reply = tools.call("remember", {"title": "Limits", "text": "A long enough note text."})
    monkeypatch.undo()
    assert reply.is_error and "the disk is full" in reply.data["error"]["message"], reply.text
    assert sorted(p.name for p in root.rglob("*")) == before


def test_a_server_killed_during_remember_leaves_no_note_without_its_body(
    store: tuple[str, Path],
) -> None:
    """`kill -9` at the worst instant, the note's text written and synced but not yet linked
    to its name: no note appears (the corpus never holds a name with half a body), and the next
    remember of that name sweeps the leftover and writes the note whole."""
    import subprocess

    from recall.mcp_server import Tools

    db, corpus = store
    script = (
        "import os, signal, recall\n"
        "from recall.mcp_server import Tools\n"
        "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"with recall.open({db!r}) as mem:\n"
        f"    Tools(mem, [{str(corpus)!r}]).call(\n"
        "        'remember', {'title': 'Limits', 'text': 'The whole note.'})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()
    assert not list(corpus.rglob("limits*.md"))
    assert [p.name.split(".")[1:3] for p in corpus.rglob(".*")] == [["limits", "md"]]
    with recall.open(db) as mem:
        reply = Tools(mem, [corpus]).call("remember", {"title": "Limits", "text": "Whole."})
    assert not reply.is_error, reply.text
    assert "Whole." in (corpus / "limits.md").read_text()
    assert not list(corpus.rglob(".*"))


def test_remember_sweeps_what_a_killed_remember_left(tools: Any) -> None:
    """A server killed between writing a note's hidden temporary file and linking it leaves the
    file; the next note of that name removes it (its process is gone)."""
    import subprocess

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    root = tools.roots[0]
    leftover = root / f".limits.md.{gone.pid}.0badf00d.tmp"
    leftover.write_text("# Limits\n\nhalf")
    reply = tools.call("remember", {"title": "Limits", "text": "The whole note, this time."})
    assert not reply.is_error, reply.text
    assert not leftover.exists()
    assert not [p.name for p in root.rglob(".*")], "the new note's own temporary file is gone too"


def test_a_damaged_store_is_an_error_reply_and_the_server_keeps_serving(tmp_path: Path) -> None:
    """Damage found under a running server is a tool error that says what to do; the server
    answers the next calls rather than dying at the first search."""
    corpus = tmp_path / "notes"
    shutil.copytree(EXAMPLES, corpus)
    db = tmp_path / "memory.db"
    with recall.open(db) as mem:
        mem.index(corpus)

    async def scenario(session: Session) -> None:
        raw = bytearray(db.read_bytes())
        raw[4096:] = bytes([0xA5]) * (len(raw) - 4096)
        db.write_bytes(bytes(raw))
        first = await session.call_tool("search", {"query": "rate limit"})
        # What memory still holds answers; the server is alive for the next search too.
        assert "store" in data(await session.call_tool("stats", {}))
        again = await session.call_tool("search", {"query": "deploy freeze"})
        for reply in (first, again):
            assert reply.is_error, reply
            error = data(reply)["error"]
            said = error["message"]
            assert error["code"] == "STORE_ERROR" and "malformed" in said, error
            assert "recall doctor" in said or "re-index into a new --db" in said, error

    run_server(tmp_path, ["--db", str(db), "--mode", "development"], scenario)


@pytest.mark.parametrize("params", ['"x"', "[1, 2]", "7", "null"])
def test_a_tools_call_whose_params_are_not_an_object_is_rewritten_to_a_refusal(
    params: str,
) -> None:
    from recall.mcp_server import MALFORMED, repaired

    line = '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": ' + params + "}\n"
    message = json.loads(repaired(line))
    assert message["id"] == 9 and message["params"]["name"] == MALFORMED
    good = '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "stats"}}\n'
    assert repaired(good) == good and repaired("not json\n") == "not json\n"


def test_a_malformed_request_gets_a_json_rpc_error_reply(tmp_path: Path) -> None:
    """A `tools/call` whose params is a string got no reply at all: the client waited forever.
    Over the real stdio transport it is answered with INVALID_PARAMS under its own id, and the
    server goes on answering."""
    import select

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-64") as mem:
        mem.index(notes, calibrate=False)
    server = subprocess.Popen(
        [sys.executable, "-m", "recall.cli", "serve", "--db", str(db), "--corpus", str(notes)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict) -> None:
        server.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]

    def receive() -> dict:
        ready, _, _ = select.select([server.stdout], [], [], 30)
        assert ready, "no reply"
        return json.loads(server.stdout.readline())  # type: ignore[union-attr]

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {**hello, "clientInfo": {"name": "test", "version": "1"}},
            }
        )
        assert receive()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "stats"})
        reply = receive()
        assert reply["id"] == 2 and reply["error"]["code"] == -32602
        assert "must be an object" in reply["error"]["message"]
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "stats", "arguments": {}},
            }
        )
        assert receive()["id"] == 3
    finally:
        server.kill()
        server.wait(10)
