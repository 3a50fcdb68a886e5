"""`remember` proposes and the agent declares (SPEC §8.3, §8.4): the reply lists the notes a new
note may replace with their evidence, `dry_run` lists them and writes nothing, and `declare`
adds to a remembered note exactly the references the agent names, never to a person's note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import recall

from .test_mcp import AS_OF, RATE_Q, Session, by_file, data, run_server
from .test_mcp import store as store  # noqa: F401  (the calibrated example store, both backends)

NEWER_LIMITS = {
    "title": "Public API rate limits (2027 revision)",
    "text": "The public API now allows **400 requests per second** per API key; burst "
    "capacity is 800 requests. Exceeding it returns HTTP `429` with `Retry-After`.",
}


def test_an_agent_is_shown_the_note_it_replaces_declares_it_and_search_follows(
    tmp_path: Path, store: tuple[str, Path]
) -> None:
    db, corpus = store

    async def scenario(session: Session) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["declare"].input_schema["required"] == ["file", "supersedes"]
        assert "candidates" in (tools["remember"].description or "")
        assert "dry_run" in tools["remember"].input_schema["properties"]

        # The agent forgets supersedes: the note is written, and the reply says what it may
        # replace.
        written = data(await session.call_tool("remember", NEWER_LIMITS))
        assert written["supersedes"] == [] and written["warnings"] == []
        top = written["candidates"][0]
        # rate-limits-v1.md matched too, but v2 already replaces it: the note in force is named.
        assert (top["note"], top["file"], top["relation"]) == (
            "rate-limits-v2.md",
            "rate-limits-v2.md",
            "predecessor",
        )
        assert any("replaces rate-limits-v1.md" in e for e in top["evidence"])
        assert "rate-limits-v1.md" not in {c["note"] for c in written["candidates"]}
        assert "call declare" in written["next_step"]
        # Nothing was declared that the agent did not name: both limits are still served.
        before = by_file(data(await session.call_tool("search", {"query": RATE_Q, "k": 5})))
        assert before[written["file"]]["verdict"] == "ok"
        assert before["rate-limits-v2.md"]["verdict"] == "ok"

        declared = data(
            await session.call_tool(
                "declare", {"file": written["file"], "supersedes": [top["note"]]}
            )
        )
        assert declared["added"] == ["rate-limits-v2.md"] and declared["warnings"] == []
        assert declared["supersedes"] == [
            {
                "reference": "rate-limits-v2.md",
                "resolution": "resolved",
                "targets": ["rate-limits-v2.md"],
            }
        ]

        judgment = data(await session.call_tool("search", {"query": RATE_Q, "as_of": AS_OF}))
        assert not judgment["abstained"]
        first = judgment["hits"][0]
        assert (first["provenance"]["file"], first["verdict"]) == (written["file"], "ok")
        hits = by_file(judgment)
        for old in ("rate-limits-v1.md", "rate-limits-v2.md"):
            assert hits[old]["verdict"] == "superseded"
            assert hits[old]["validity"]["superseded_by"] == written["file"]
        again = data(await session.call_tool("remember", {**NEWER_LIMITS, "dry_run": True}))
        assert "rate-limits-v2.md" not in {c["note"] for c in again["candidates"]}

    run_server(tmp_path, ["--db", str(db), "--corpus", str(corpus)], scenario)


@pytest.fixture
def tools(store: tuple[str, Path]) -> Any:  # noqa: F811
    from recall.mcp_server import Tools

    db, corpus = store
    with recall.open(db) as mem:
        yield Tools(mem, [corpus])


def _notes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_dry_run_lists_the_candidates_and_writes_nothing(tools: Any) -> None:
    root = tools.roots[0]
    files = _notes(root)
    generation = tools.memory.stats().generation
    reply = tools.call("remember", {**NEWER_LIMITS, "dry_run": True})
    assert not reply.is_error, reply.data
    assert reply.data["dry_run"] is True
    assert reply.data["file"] == "public-api-rate-limits-2027-revision.md"
    assert reply.data["candidates"][0]["note"] == "rate-limits-v2.md"
    assert "call remember again with supersedes" in reply.data["next_step"]
    assert _notes(root) == files and tools.memory.stats().generation == generation
    # With supersedes named at once, the named note is no longer a candidate.
    named = tools.call(
        "remember", {**NEWER_LIMITS, "supersedes": ["rate-limits-v2.md"], "dry_run": True}
    )
    assert "rate-limits-v2.md" not in {c["note"] for c in named.data["candidates"]}
    assert tools.call("remember", {**NEWER_LIMITS, "dry_run": "yes"}).is_error


def test_a_note_with_nothing_like_it_has_no_candidates(tools: Any) -> None:
    reply = tools.call(
        "remember",
        {"title": "Office plants", "text": "The ficus by the window is watered on Fridays."},
    )
    assert reply.data["candidates"] == [] and "next_step" not in reply.data


def test_declare_adds_only_the_named_references_to_a_remembered_note(tools: Any) -> None:
    root = tools.roots[0]
    written = tools.call("remember", {**NEWER_LIMITS, "valid_from": "2026-06-01"}).data
    path = root / written["file"]
    text = path.read_text(encoding="utf-8")
    assert "supersedes" not in text and text.startswith("---\nvalid_from: 2026-06-01\nremembered: ")
    reply = tools.call(
        "declare", {"file": written["file"], "supersedes": ["rate-limits-v2.md", "no-such.md"]}
    )
    assert not reply.is_error, reply.data
    assert reply.data["added"] == ["rate-limits-v2.md", "no-such.md"]
    assert reply.data["warnings"] == [
        "supersedes 'no-such.md' matches no note: nothing was superseded"
    ]
    after = path.read_text(encoding="utf-8")
    assert after.startswith(
        '---\nsupersedes:\n  - "rate-limits-v2.md"\n  - "no-such.md"\nvalid_from: 2026-06-01\n'
    )
    assert after.split("---\n", 2)[2] == text.split("---\n", 2)[2]  # the note itself unchanged
    # Declaring again adds nothing and rewrites nothing.
    again = tools.call("declare", {"file": written["file"], "supersedes": ["rate-limits-v2.md"]})
    assert again.data["added"] == [] and path.read_text(encoding="utf-8") == after


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("a person's note", "not a note remember wrote"),
        ("edited since", "not a note remember wrote, or it was edited since"),
        ("missing", "does not exist"),
        ("outside", "outside the corpus roots"),
        ("a folder", "not a regular file"),
        ("nothing named", "supersedes is required"),
    ],
)
def test_declare_refuses_every_note_but_an_unedited_remembered_one(
    tools: Any, tmp_path: Path, how: str, message: str
) -> None:
    root = tools.roots[0]
    written = tools.call("remember", NEWER_LIMITS).data
    file, supersedes = written["file"], ["rate-limits-v2.md"]
    if how == "a person's note":
        file = "rate-limits-v1.md"  # frontmatter and all in the very shape remember writes
    elif how == "edited since":
        with open(root / file, "a", encoding="utf-8") as note:
            note.write("Edited by hand.\n")
    elif how == "missing":
        file = "never-written.md"
    elif how == "outside":
        (tmp_path / "elsewhere.md").write_text("# x\n\ny\n", encoding="utf-8")
        file = str(tmp_path / "elsewhere.md")
    elif how == "a folder":
        (root / "a-folder").mkdir()
        file = "a-folder"
    else:
        supersedes = []
    files = _notes(root)
    reply = tools.call("declare", {"file": file, "supersedes": supersedes})
    assert reply.is_error and reply.data["error"]["code"] == "INVALID_ARGUMENT"
    assert message in reply.data["error"]["message"], reply.data
    assert _notes(root) == files


def test_a_failed_index_run_puts_the_note_back_as_it_was(
    tools: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tools.roots[0]
    written = tools.call("remember", NEWER_LIMITS).data
    before = (root / written["file"]).read_bytes()

    def failing(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("the disk went away")

    monkeypatch.setattr(tools.memory, "index", failing)
    reply = tools.call("declare", {"file": written["file"], "supersedes": ["rate-limits-v2.md"]})
    assert reply.is_error
    assert (root / written["file"]).read_bytes() == before


def test_closeness_alone_lists_only_the_closest_and_never_through_a_retired_note(
    tools: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing's rules over what `check` found (its legs are tested in test_check)."""
    from recall.authoring import check as checking
    from recall.authoring.predecessors import Reason
    from recall.mcp_server.candidates import candidates

    root = tools.roots[0]

    def found(name: str, rank: float, *kinds: str, current: tuple[str, ...] = ()) -> Any:
        reasons = tuple(Reason(k, f"{k} evidence", 0.5) for k in kinds)  # type: ignore[arg-type]
        return checking.Candidate(
            str(root / name), reasons, "predecessor", False, f"supersedes: {name}", rank,
            current=current,
        )  # fmt: skip

    listed = [
        found("a.md", 2.0, "same-title", "semantic"),
        found("b.md", 0.9, "semantic"),  # the closest found by closeness alone: listed
        found("c.md", 0.8, "semantic"),  # a second: left out
        found("d.md", 0.7, "semantic", current=(str(root / "e.md"),)),  # retired: left out
        found("f.md", 0.6, "lexical", current=(str(root / "g.md"),)),  # named through g.md
    ]
    report = checking.CheckReport(
        files=[checking.FileCheck("new.md", "New", (), None, tuple(listed), 0, "fail")]
    )
    monkeypatch.setattr(checking, "check", lambda *_a, **_k: report)
    shown = candidates(tools.memory, tools.roots, root / "new.md")
    assert [c["note"] for c in shown] == ["a.md", "b.md", "g.md"]
    assert shown[2]["evidence"] == ["replaces f.md, which matched (lexical)"]
    assert shown[2]["suggestion"] == "supersedes: g.md" and shown[2]["rank"] == 0.6
