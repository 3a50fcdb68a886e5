"""The `remember` tool: a new note written into the first corpus root, then indexed.

Owns: the note a call asks for (a heading, the text, a frontmatter block of `supersedes`, the
validity window that must read back exactly as given, and the time it was remembered), refusing
a text whose own words would declare an edge or a status the arguments do not, its file name
(`slug`, then the first name free of every note's resolution key), and the write itself: whole
or not at all, never over an existing file, undone when the index run after it fails. Does not
own: the argument checks (`arguments`), keeping the folder inside the root (`paths`) or
indexing (`recall.api`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import os
import re
import tempfile
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall import _core
from recall.errors import RecallError
from recall.mcp_server.arguments import (
    MAX_NAME_CHARS,
    MAX_REFERENCE_CHARS,
    MAX_REFERENCES,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    bad,
    date,
    flag,
    required,
    shown,
    string,
    strings,
)
from recall.mcp_server.paths import note_folder, opened_folder
from recall.walk import why
from recall.writing import sweep, temporary

if TYPE_CHECKING:
    from recall.api import Memory

__all__ = [
    "MAX_NAME_TRIES",
    "REMEMBERED",
    "declared",
    "references_in",
    "remember",
    "render",
    "slug",
    "write_new",
]

#: The frontmatter key that marks a note `remember` wrote: the UTC time it was written and a
#: digest of the note below the frontmatter.
REMEMBERED = "remembered"

#: `remember` tries NAME.md, NAME-2.md, ... up to this suffix before giving up.
MAX_NAME_TRIES = 100

#: What the indexer reads (SPEC §2.1); a note name must not collide with any of these.
_NOTE_SUFFIXES = (".md", ".markdown", ".mdx", ".txt")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def slug(text: str) -> str:
    """A file name stem from a title: ASCII lowercase letters, digits and single hyphens."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return stem[:MAX_NAME_CHARS].rstrip("-") or "note"


def remember(memory: Memory, roots: Sequence[Path], args: Mapping[str, Any]) -> dict[str, Any]:
    """Write the note `args` describe into the first of `roots` and index that root; with
    `dry_run`, write nothing and only list the notes it may replace."""
    from recall.frontmatter import parse
    from recall.mcp_server.candidates import DRY_RUN_STEP, NEXT_STEP, candidates

    title = " ".join(required("remember", args, "title", MAX_TITLE_CHARS).split())
    text = required("remember", args, "text", MAX_TEXT_CHARS)
    name = string("remember", args, "name", MAX_TITLE_CHARS)
    references = references_in("remember", args)
    valid_from = date("remember", args, "valid_from")
    valid_until = date("remember", args, "valid_until")
    dry_run = flag("remember", args, "dry_run")
    if valid_from and valid_until and valid_from > valid_until:
        raise bad(
            "remember",
            f"valid_from {valid_from} is after valid_until {valid_until}: the note would "
            "never hold",
        )
    if not roots:
        raise bad("remember", "no corpus root is configured; start recall serve --corpus")
    root = roots[0]
    folder = note_folder(string("remember", args, "folder", 200), root)
    remembered = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    content = render(title, text, references, valid_from, valid_until, remembered)
    # The note must read back exactly as declared (SPEC §2): never write what the indexer
    # would read differently.
    fm = parse(content)
    if fm.errors or list(fm.supersedes) != references:
        raise bad("remember", "the frontmatter would not read back as given; simplify it")
    _own_words(memory, content, references)
    stem = slug(name or title)

    if dry_run:
        with tempfile.TemporaryDirectory(prefix=".recall-dry-run-") as scratch:
            draft = Path(scratch) / f"{stem}.md"
            draft.write_text(content, encoding="utf-8")
            found = candidates(memory, roots, draft)
        data: dict[str, Any] = {
            "dry_run": True,
            "file": (folder / f"{stem}.md").relative_to(root).as_posix(),
            "candidates": found,
        }
        if found:
            data["next_step"] = DRY_RUN_STEP
        return data

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise bad(
            "remember",
            f"folder {shown(str(folder.relative_to(root)))} cannot be made a folder here "
            f"({why(err)}): name a folder, or one that does not exist yet",
        ) from None
    if not folder.is_dir():
        raise bad("remember", f"folder {shown(str(folder.relative_to(root)))} is not a folder")
    path = write_new(folder, root, stem, content, roots=roots)
    try:
        report = memory.index([str(root)])
    except BaseException:
        # The note and the memory stay in step: an index run that failed keeps nothing.
        path.unlink()
        raise
    rel = path.relative_to(root).as_posix()
    data = {"path": str(path), "file": rel, "key": path.stem}
    data.update(declared(memory, title, rel, references, report))
    found = candidates(memory, roots, path)
    data["candidates"] = found
    if found:
        data["next_step"] = NEXT_STEP
    return data


def render(
    title: str,
    text: str,
    references: Sequence[str],
    valid_from: dt.date | None,
    valid_until: dt.date | None,
    remembered: str,
) -> str:
    """The note `remember` writes: a frontmatter block with what it declares and the mark
    `declare` looks for (when it was remembered, and a digest of the note below the block, so
    that an edit by hand unmarks it), then the title as its heading and the text."""
    body = f"# {title}\n\n{text.strip()}\n"
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    lines = []
    if references:
        lines.append("supersedes:")
        lines += [f'  - "{ref}"' for ref in references]
    if valid_from:
        lines.append(f"valid_from: {valid_from.isoformat()}")
    if valid_until:
        lines.append(f"valid_until: {valid_until.isoformat()}")
    lines.append(f"{REMEMBERED}: {remembered} sha256:{digest}")
    return "---\n" + "".join(f"{line}\n" for line in lines) + "---\n" + body


def references_in(tool: str, args: Mapping[str, Any]) -> list[str]:
    """`supersedes` as given: file names a frontmatter list can hold."""
    references = strings(tool, args, "supersedes", MAX_REFERENCES, MAX_REFERENCE_CHARS)
    for ref in references:
        if _CONTROL.search(ref) or '"' in ref:
            raise bad(tool, f"supersedes {shown(ref)} holds a quote or a line break")
    return references


def declared(
    memory: Memory, title: str, rel: str, references: Sequence[str], report: Any
) -> dict[str, Any]:
    """How the note's `supersedes` resolved once indexed, and the warnings a caller must see:
    a reference that matches no note or several, a note the indexer refused."""
    claims: list[dict[str, Any]] = []
    if references:
        try:
            explained = memory.explain(title, rel)
            claims = [
                {k: c[k] for k in ("reference", "resolution", "targets")}
                for c in explained["claims_out"]
            ]
        except RecallError:
            claims = []
    warnings = [
        f"supersedes {c['reference']!r} matches no note: nothing was superseded"
        for c in claims
        if c["resolution"] == "dangling"
    ] + [
        f"supersedes {c['reference']!r} matches several notes ({', '.join(c['targets'])}): "
        "ambiguous, nothing was superseded"
        for c in claims
        if c["resolution"] == "ambiguous"
    ]
    refused = [s for s in report.refused if s.path.endswith(rel)]
    warnings += [f"the note was refused by the indexer: {s.reason}" for s in refused]
    return {"supersedes": claims, "warnings": warnings, "index": report.to_dict()}


def _own_words(memory: Memory, content: str, references: Sequence[str]) -> None:
    """Refuse a text whose own words would declare what the arguments do not: a status
    section, "Supersedes …" or "Superseded by …" line, or a retiring status in any
    vocabulary the store reads. An agent (or text it copied) must not retire notes, or
    this one, without saying so in `supersedes` / `valid_until`, where the reply shows it.
    A forward edge to a note `supersedes` already names is allowed."""
    from recall.vocabularies import declare, in_force

    read = in_force(memory.stats().vocabularies if memory.exists else "all")
    said = declare("remembered.md", content)
    asked = {_core.resolution_key(r).casefold() for r in references}
    for edge in said.active_edges(read):
        if edge.origin.vocabulary == "frontmatter":
            continue
        keys = {k.casefold() for k in edge.key.split("\n")} | {
            _core.resolution_key(edge.reference).casefold()
        }
        if not edge.reversed and keys & asked:
            continue
        what = (
            f"that {shown(edge.reference)} replaces this note"
            if edge.reversed
            else f"that this note supersedes {shown(edge.reference)}"
        )
        raise bad(
            "remember",
            f"the text says {what} ({shown(edge.origin.text)}); name the notes it replaces "
            "in supersedes, or reword the text so that it does not declare it",
        )
    retired = said.active_retirement(read)
    if retired is not None and retired.origin.vocabulary != "frontmatter":
        raise bad(
            "remember",
            f"the text gives the note the status {retired.state!r} "
            f"({shown(retired.origin.text)}): a remembered note is in force; leave the "
            "status out, or pass valid_until for a note that stops holding",
        )


def _taken_keys(roots: Sequence[Path]) -> set[str]:
    """Resolution keys of every note under the roots (SPEC §2.3): a new note must not share
    one, or a later `supersedes` naming it would be ambiguous."""
    keys: set[str] = set()
    for root in roots:
        for _, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            keys.update(
                _core.resolution_key(f).casefold()
                for f in files
                if f.lower().endswith(_NOTE_SUFFIXES)
            )
    return keys


def write_new(folder: Path, root: Path, stem: str, content: str, *, roots: Sequence[Path]) -> Path:
    """Write `content` as a new note in `folder` under a free name, whole or not at all.
    The folder is opened once and checked to lie inside `root` as opened (a folder swapped
    for a symlink after any earlier check leads nowhere else), and the note is written
    beside it under a hidden temporary name, then linked to its name, which never
    overwrites: a full disk or a kill leaves no half-written note."""
    taken = _taken_keys(roots)
    with opened_folder(folder, root) as (where, fd):
        data = content.encode("utf-8")
        sweep(where, f"{stem}.md", dir_fd=fd)
        temp = temporary(f"{stem}.md")
        try:
            out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                os.fsync(out)
            finally:
                os.close(out)
            for n in range(1, MAX_NAME_TRIES + 1):
                candidate = stem if n == 1 else f"{stem}-{n}"
                if candidate.casefold() in taken:
                    continue
                try:
                    os.link(
                        temp,
                        f"{candidate}.md",
                        src_dir_fd=fd,
                        dst_dir_fd=fd,
                        follow_symlinks=False,
                    )
                except FileExistsError:
                    continue
                return where / f"{candidate}.md"
        except OSError as err:
            raise bad(
                "remember", f"cannot write the note in {shown(str(where))}: {_why(err)}"
            ) from err
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
    raise bad(
        "remember",
        f"no free file name for {stem!r} (tried {MAX_NAME_TRIES}); pass another name",
    )


def _why(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "the disk is full; free some space and retry"
    return err.strerror or str(err)
