"""The `declare` tool: the notes a note `remember` wrote replaces, added to its frontmatter.

Owns: finding the note in the first corpus root, refusing any note that is not exactly as
`remember` would have written it, its mark and digest included (recall never edits a person's
notes, nor one edited since), adding the named references (and only those) to its `supersedes`,
replacing the file whole, and indexing the root, the old bytes put back when that run fails.
Does not own: the argument checks (`arguments`, `paths`), the note's shape (`remember.render`)
or indexing (`recall.api`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.mcp_server.arguments import MAX_PATH_CHARS, MAX_REFERENCES, bad, required, shown
from recall.mcp_server.paths import confined, real
from recall.mcp_server.remember import REMEMBERED, declared, references_in, render
from recall.walk import within
from recall.writing import write_whole

if TYPE_CHECKING:
    from recall.api import Memory

__all__ = ["declare"]


def declare(memory: Memory, roots: Sequence[Path], args: Mapping[str, Any]) -> dict[str, Any]:
    """Add `supersedes` to the note `file` names, one `remember` wrote, and index its root."""
    from recall.frontmatter import parse

    if not roots:
        raise bad("declare", "no corpus root is configured; start recall serve --corpus")
    root = roots[0]
    file = required("declare", args, "file", MAX_PATH_CHARS).strip()
    references = references_in("declare", args)
    if not references:
        raise bad("declare", "supersedes is required: name the notes this one replaces")
    path = confined("declare", "file", file, roots)
    path = path if path.is_absolute() else root / path
    if not within(real(path), root):
        raise bad("declare", f"file {shown(file)} is not in {root}, where remember writes")
    try:
        info = os.lstat(path)
    except OSError:
        raise bad(
            "declare", f"file {shown(file)} does not exist; pass the file remember returned"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise bad("declare", f"file {shown(file)} is not a regular file")
    before = path.read_bytes()
    fm = parse(before.decode("utf-8", errors="replace"))
    title, body = _heading(fm.body)
    mark = fm.fields.get(REMEMBERED)
    remembered = mark.split(" ", 1)[0] if isinstance(mark, str) else ""
    if (
        title is None
        or not remembered
        or before
        != render(
            title, body, list(fm.supersedes), fm.valid_from, fm.valid_until, remembered
        ).encode("utf-8")
    ):
        raise bad(
            "declare",
            f"{shown(file)} is not a note remember wrote, or it was edited since: recall "
            "never edits a person's notes; write a new note with remember and supersedes",
        )
    have = {r.casefold() for r in fm.supersedes}
    added = [r for r in dict.fromkeys(references) if r.casefold() not in have]
    together = [*fm.supersedes, *added]
    if len(together) > MAX_REFERENCES:
        raise bad(
            "declare", f"the note would name {len(together)} notes; the limit is {MAX_REFERENCES}"
        )
    rel = real(path).relative_to(root).as_posix()
    if added:
        after = render(title, body, together, fm.valid_from, fm.valid_until, remembered)
        if list(parse(after).supersedes) != together:
            raise bad("declare", "the frontmatter would not read back as given; simplify it")
        write_whole(path, after.encode("utf-8"))
    try:
        report = memory.index([str(root)])
    except BaseException:
        # The note and the memory stay in step: a run that failed keeps the note as it was.
        write_whole(path, before)
        raise
    data: dict[str, Any] = {"path": str(path), "file": rel, "added": added}
    data.update(declared(memory, title, rel, together, report))
    return data


def _heading(body: str) -> tuple[str | None, str]:
    """The title and text of a body `remember` wrote: `# TITLE`, a blank line, the text."""
    first, _, rest = body.partition("\n")
    if not first.startswith("# ") or not rest.startswith("\n"):
        return None, ""
    return first[2:], rest[1:]
