"""What the report tests share: a store built from the shipped examples with three notes added
(one withdrawn by its status line, one whose title is markup, one refused for its date), and a
reader of the page's note nodes, from the written file or from a browser's DOM."""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import recall
from tests.conftest import EXAMPLES

#: The instant the examples are judged at: rate-limits-v1 is superseded, the 2025 on-call
#: rotation has expired, the year-end deploy freeze has not started yet.
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
MARKUP_TITLE = "<script>alert(1)</script> & <b>bold</b>"

EXTRA = {
    "cache-policy.md": "# Cache policy\n\nStatus: Withdrawn\n\nWe cache API responses for ten "
    "minutes at the edge.\n",
    "markup-title.md": f'---\ntitle: "{MARKUP_TITLE}"\n---\nA note whose title is markup.\n',
    "broken-date.md": "---\nvalid_from: 2026-13-45\n---\n# Broken\n\nNot a date.\n",
}


def example_store(tmp_path: Path) -> tuple[Path, Path]:
    """(the store, the notes folder): the shipped examples and `EXTRA`, indexed."""
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    for rel, text in EXTRA.items():
        (notes / rel).write_text(text, encoding="utf-8")
    db = tmp_path / "memory.db"
    with recall.open(db, embedder="hashing-512") as mem:
        report = mem.index(notes)
    assert [s.path for s in report.refused] == ["broken-date.md"]
    return db, notes


@dataclass
class NoteNode:
    """One `<g class="note">` of the page: its attributes and the text it shows."""

    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The visible text (the tooltip's `<title>` left out), lines joined by a space."""
        return " ".join(t.strip() for t in self.text if t.strip())


class NoteNodes(HTMLParser):
    """Collects the note nodes of a page, and every element name it holds."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nodes: list[NoteNode] = []
        self.tags: set[str] = set()
        self._stack: list[tuple[str, NoteNode | None]] = []
        self._in_title = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        values = {k: v or "" for k, v in attrs}
        node = None
        if tag == "g" and "note" in values.get("class", "").split():
            node = NoteNode(values)
            self.nodes.append(node)
        self._stack.append((tag, node))
        if tag == "title":
            self._in_title += 1

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            name, _ = self._stack.pop()
            if name == "title":
                self._in_title -= 1
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_title:
            return
        owner = next((n for _, n in reversed(self._stack) if n is not None), None)
        if owner is not None:
            owner.text.append(data)


def note_nodes(page: str) -> NoteNodes:
    parser = NoteNodes()
    parser.feed(page)
    parser.close()
    return parser
