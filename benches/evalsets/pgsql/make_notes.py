"""Build the notes of the pgsql evaluation set from the PostgreSQL 15 documentation.

Reads the SQL command reference pages (``sql-*.html``) that Debian's ``postgresql-doc-15``
package installs under ``/usr/share/doc/postgresql-doc-15/html/`` and writes one markdown note
per page listed in ``KEEP`` into ``notes/`` next to this script:

- the first line is ``# TITLE``, the command name as the page titles it (``# CREATE TABLE``),
  followed by the page's one-line purpose;
- each section of the page (Synopsis, Description, Parameters, Notes, Examples, Compatibility,
  See Also) becomes a ``##`` heading, its subsections ``###`` and ``####`` headings;
- paragraphs become plain text on one line, inline code becomes backtick spans, synopses and
  example blocks become fenced code blocks, itemized and ordered lists become ``-`` and ``1.``
  items, definition lists become the term on its own line followed by its text, tables become
  pipe tables, and notes, tips and cautions become block quotes;
- the navigation header and footer of every page are dropped, and so are links (their text is
  kept).

Notes go into a folder by the command's first word: ``notes/create/``, ``notes/alter/``,
``notes/drop/`` and ``notes/other/`` for every other command; the file name is the title in
lower case with hyphens (``notes/create/create-table.md``), so file names are unique across the
folders. The pages in ``LEFT_OUT`` are deliberately not converted.

It also writes ``meta.json`` next to this script: the evaluation date, the indexing instant and a
"last touched" time for every note. The touched times do not come from the pages (the HTML carries
no per-page dates); each is a day between the PostgreSQL 15.0 release (2022-10-13) and 2026-02-12,
picked from a SHA-256 hash of the note's path, so that they are spread out and reproducible.

The output depends only on the input pages: ``notes/`` is removed and rewritten on every run, in
sorted order, and ``meta.json`` is rewritten with it.

Run it from the repository root (Python 3 standard library only):

    python benches/evalsets/pgsql/make_notes.py

Another folder holding the same HTML pages can be given with ``--html DIR``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

HTML_DIR = Path("/usr/share/doc/postgresql-doc-15/html")
HERE = Path(__file__).resolve().parent

# The SQL command reference pages that become notes (120 pages).
KEEP = [
    "sql-abort.html",
    "sql-alteraggregate.html",
    "sql-alterdatabase.html",
    "sql-alterdefaultprivileges.html",
    "sql-alterdomain.html",
    "sql-alterextension.html",
    "sql-alterfunction.html",
    "sql-altergroup.html",
    "sql-alterindex.html",
    "sql-altermaterializedview.html",
    "sql-alterpolicy.html",
    "sql-alterprocedure.html",
    "sql-alterrole.html",
    "sql-alterroutine.html",
    "sql-alterrule.html",
    "sql-alterschema.html",
    "sql-altersequence.html",
    "sql-altersystem.html",
    "sql-altertable.html",
    "sql-altertablespace.html",
    "sql-altertrigger.html",
    "sql-altertype.html",
    "sql-alteruser.html",
    "sql-alterview.html",
    "sql-analyze.html",
    "sql-begin.html",
    "sql-call.html",
    "sql-checkpoint.html",
    "sql-close.html",
    "sql-cluster.html",
    "sql-comment.html",
    "sql-commit-prepared.html",
    "sql-commit.html",
    "sql-copy.html",
    "sql-createaggregate.html",
    "sql-createdatabase.html",
    "sql-createdomain.html",
    "sql-createextension.html",
    "sql-createfunction.html",
    "sql-creategroup.html",
    "sql-createindex.html",
    "sql-creatematerializedview.html",
    "sql-createpolicy.html",
    "sql-createprocedure.html",
    "sql-createrole.html",
    "sql-createrule.html",
    "sql-createschema.html",
    "sql-createsequence.html",
    "sql-createtable.html",
    "sql-createtableas.html",
    "sql-createtablespace.html",
    "sql-createtrigger.html",
    "sql-createtype.html",
    "sql-createuser.html",
    "sql-createview.html",
    "sql-deallocate.html",
    "sql-declare.html",
    "sql-delete.html",
    "sql-discard.html",
    "sql-do.html",
    "sql-drop-owned.html",
    "sql-dropaggregate.html",
    "sql-dropdatabase.html",
    "sql-dropdomain.html",
    "sql-dropextension.html",
    "sql-dropfunction.html",
    "sql-dropgroup.html",
    "sql-dropindex.html",
    "sql-dropmaterializedview.html",
    "sql-droppolicy.html",
    "sql-dropprocedure.html",
    "sql-droprole.html",
    "sql-droproutine.html",
    "sql-droprule.html",
    "sql-dropschema.html",
    "sql-dropsequence.html",
    "sql-droptable.html",
    "sql-droptablespace.html",
    "sql-droptrigger.html",
    "sql-droptype.html",
    "sql-dropuser.html",
    "sql-dropview.html",
    "sql-end.html",
    "sql-execute.html",
    "sql-explain.html",
    "sql-fetch.html",
    "sql-grant.html",
    "sql-insert.html",
    "sql-listen.html",
    "sql-load.html",
    "sql-lock.html",
    "sql-merge.html",
    "sql-move.html",
    "sql-notify.html",
    "sql-prepare-transaction.html",
    "sql-prepare.html",
    "sql-reassign-owned.html",
    "sql-refreshmaterializedview.html",
    "sql-reindex.html",
    "sql-release-savepoint.html",
    "sql-reset.html",
    "sql-revoke.html",
    "sql-rollback-prepared.html",
    "sql-rollback-to.html",
    "sql-rollback.html",
    "sql-savepoint.html",
    "sql-select.html",
    "sql-selectinto.html",
    "sql-set-constraints.html",
    "sql-set-role.html",
    "sql-set-session-authorization.html",
    "sql-set-transaction.html",
    "sql-set.html",
    "sql-show.html",
    "sql-start-transaction.html",
    "sql-truncate.html",
    "sql-unlisten.html",
    "sql-update.html",
    "sql-vacuum.html",
    "sql-values.html",
]

# SQL command reference pages deliberately left out, by group (63 pages).
LEFT_OUT = {
    "logical replication publications and subscriptions": [
        "sql-createpublication.html",
        "sql-alterpublication.html",
        "sql-droppublication.html",
        "sql-createsubscription.html",
        "sql-altersubscription.html",
        "sql-dropsubscription.html",
    ],
    "text search configurations, dictionaries, parsers and templates": [
        "sql-createtsconfig.html",
        "sql-altertsconfig.html",
        "sql-droptsconfig.html",
        "sql-createtsdictionary.html",
        "sql-altertsdictionary.html",
        "sql-droptsdictionary.html",
        "sql-createtsparser.html",
        "sql-altertsparser.html",
        "sql-droptsparser.html",
        "sql-createtstemplate.html",
        "sql-altertstemplate.html",
        "sql-droptstemplate.html",
    ],
    "foreign data wrappers, foreign servers, user mappings and foreign tables": [
        "sql-createforeigndatawrapper.html",
        "sql-alterforeigndatawrapper.html",
        "sql-dropforeigndatawrapper.html",
        "sql-createserver.html",
        "sql-alterserver.html",
        "sql-dropserver.html",
        "sql-createusermapping.html",
        "sql-alterusermapping.html",
        "sql-dropusermapping.html",
        "sql-createforeigntable.html",
        "sql-alterforeigntable.html",
        "sql-dropforeigntable.html",
        "sql-importforeignschema.html",
    ],
    "event triggers": [
        "sql-createeventtrigger.html",
        "sql-altereventtrigger.html",
        "sql-dropeventtrigger.html",
    ],
    "extended statistics": [
        "sql-createstatistics.html",
        "sql-alterstatistics.html",
        "sql-dropstatistics.html",
    ],
    "user-defined operators, operator classes and operator families": [
        "sql-createoperator.html",
        "sql-alteroperator.html",
        "sql-dropoperator.html",
        "sql-createopclass.html",
        "sql-alteropclass.html",
        "sql-dropopclass.html",
        "sql-createopfamily.html",
        "sql-alteropfamily.html",
        "sql-dropopfamily.html",
    ],
    "index and table access methods": [
        "sql-create-access-method.html",
        "sql-drop-access-method.html",
    ],
    "casts": ["sql-createcast.html", "sql-dropcast.html"],
    "transforms": ["sql-createtransform.html", "sql-droptransform.html"],
    "encoding conversions": [
        "sql-createconversion.html",
        "sql-alterconversion.html",
        "sql-dropconversion.html",
    ],
    "collations": [
        "sql-createcollation.html",
        "sql-altercollation.html",
        "sql-dropcollation.html",
    ],
    "procedural languages": [
        "sql-createlanguage.html",
        "sql-alterlanguage.html",
        "sql-droplanguage.html",
    ],
    "security labels": ["sql-security-label.html"],
    "large objects": ["sql-alterlargeobject.html"],
}

VOID = {"br", "hr", "col", "meta", "link", "img", "input", "area", "base", "param"}
BLOCK = {"div", "p", "pre", "dl", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "blockquote"}
SKIP_CLASSES = {"navheader", "navfooter", "indexterm", "titlepage", "toc"}
ADMONITIONS = {"note", "tip", "caution", "warning", "important"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str]):
        self.tag = tag
        self.attrs = attrs
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(text: str) -> Node:
    builder = TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def find(node: Node, pred) -> Node | None:
    for child in node.children:
        if isinstance(child, Node):
            if pred(child):
                return child
            hit = find(child, pred)
            if hit is not None:
                return hit
    return None


def raw_text(node: Node | str) -> str:
    if isinstance(node, str):
        return node
    return "".join(raw_text(c) for c in node.children)


def skipped(node: Node) -> bool:
    return node.tag in {"head", "script", "style", "hr"} or bool(node.classes & SKIP_CLASSES)


# Inline rendering: a list of (kind, text) pieces, kind "text" or "code"; adjacent code pieces
# are merged so that `\x` followed by `digits` reads as one span.


def inline_pieces(node: Node | str, in_code: bool = False) -> list[tuple[str, str]]:
    if isinstance(node, str):
        return [("code" if in_code else "text", node)]
    if skipped(node) or node.tag in {"col", "colgroup"}:
        return []
    if node.tag == "br":
        return [("text", " ")]
    cls = node.classes
    if node.tag == "code" or (node.tag == "em" and cls & {"replaceable", "parameter"}):
        return [("code", raw_text(node))]
    if node.tag == "strong" and "userinput" in cls:
        return [("code", raw_text(node))]
    if node.tag == "a" and "footnote" in cls:
        return [("text", raw_text(node).strip())]
    pieces: list[tuple[str, str]] = []
    for child in node.children:
        pieces.extend(inline_pieces(child, in_code))
    if node.tag in {"em", "strong"} or "emphasis" in cls:
        mark = "**" if node.tag == "strong" or "bold" in node.attrs.get("role", "") else "*"
        text = render_pieces(pieces).strip()
        if text and not text.startswith("`"):
            return [("text", f"{mark}{text}{mark}")]
    return pieces


def code_span(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return ""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_pieces(pieces: list[tuple[str, str]]) -> str:
    merged: list[list[str]] = []
    for kind, text in pieces:
        if merged and merged[-1][0] == kind:
            merged[-1][1] += text
        else:
            merged.append([kind, text])
    out = []
    for kind, text in merged:
        if kind == "code":
            out.append(code_span(text))
        else:
            out.append(re.sub(r"\s+", " ", text))
    return re.sub(r" {2,}", " ", "".join(out))


def inline(node: Node | str) -> str:
    return render_pieces(inline_pieces(node)).strip()


# Block rendering: a list of markdown blocks (strings without surrounding blank lines).


def fenced(text: str) -> str:
    text = text.strip("\n").rstrip()
    lines = [line.rstrip() for line in text.split("\n")]
    fence = "~~~" if any(line.startswith("```") for line in lines) else "```"
    return "\n".join([fence, *lines, fence])


def render_table(node: Node) -> list[str]:
    rows: list[list[str]] = []
    header_rows = 0
    footnotes: list[Node] = []
    pending: dict[int, tuple[int, str]] = {}

    def add_row(tr: Node) -> None:
        cells: list[str] = []
        col = 0

        def spanned() -> None:
            """Fill the columns a cell of an earlier row spans down into."""
            nonlocal col
            while col in pending:
                left, text = pending[col]
                cells.append(text)
                if left > 1:
                    pending[col] = (left - 1, text)
                else:
                    del pending[col]
                col += 1

        tds = [c for c in tr.children if isinstance(c, Node) and c.tag in {"td", "th"}]
        for td in tds:
            spanned()
            text = inline(td).replace("|", "\\|")
            span = int(td.attrs.get("colspan", "1") or 1)
            rowspan = int(td.attrs.get("rowspan", "1") or 1)
            for k in range(span):
                cells.append(text if k == 0 else "")
                if rowspan > 1:
                    pending[col] = (rowspan - 1, text if k == 0 else "")
                col += 1
        spanned()
        rows.append(cells)

    def walk(n: Node, in_head: bool) -> None:
        nonlocal header_rows
        for child in n.children:
            if not isinstance(child, Node):
                continue
            if child.tag == "tbody" and "footnotes" in child.classes:
                footnotes.append(child)
            elif child.tag == "tr":
                add_row(child)
                if in_head:
                    header_rows += 1
            elif child.tag in {"thead", "tbody", "tfoot"}:
                walk(child, child.tag == "thead")

    walk(node, False)
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    if header_rows == 0:
        header_rows = 1
    header = [" / ".join(dict.fromkeys(x for x in col if x)) for col in zip(*rows[:header_rows])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[header_rows:]]
    blocks = ["\n".join(lines)]
    for tbody in footnotes:
        stack = [tbody]
        while stack:
            n = stack.pop(0)
            for child in n.children:
                if isinstance(child, Node) and child.tag == "div" and "footnote" in child.classes:
                    blocks.extend(render_blocks(child))
                elif isinstance(child, Node):
                    stack.append(child)
    return blocks


def render_list(node: Node, ordered: bool) -> list[str]:
    items = []
    n = 0
    for li in node.children:
        if not (isinstance(li, Node) and li.tag == "li"):
            continue
        n += 1
        marker = f"{n}. " if ordered else "- "
        indent = " " * len(marker)
        body = "\n\n".join(render_blocks(li)) or ""
        lines = body.split("\n")
        out = [marker + lines[0]] + [(indent + line) if line else "" for line in lines[1:]]
        items.append("\n".join(out))
    if not items:
        return []
    sep = "\n" if all("\n" not in item for item in items) else "\n\n"
    return [sep.join(items)]


def render_dl(node: Node) -> list[str]:
    blocks: list[str] = []
    for child in node.children:
        if not isinstance(child, Node):
            continue
        if child.tag == "dt":
            term = inline(child)
            if term:
                blocks.append(term)
        elif child.tag == "dd":
            blocks.extend(render_blocks(child))
    return blocks


def heading_level(tag: str) -> int:
    return {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5}[tag]


def render_blocks(node: Node | str) -> list[str]:
    """Render the children of a container as blocks, gathering inline runs into paragraphs."""
    if isinstance(node, str):
        text = re.sub(r"\s+", " ", node).strip()
        return [text] if text else []
    blocks: list[str] = []
    run: list[tuple[str, str]] = []

    def flush() -> None:
        text = render_pieces(run).strip()
        if text:
            blocks.append(text)
        run.clear()

    for child in node.children:
        if isinstance(child, str):
            run.extend(inline_pieces(child))
            continue
        if skipped(child):
            continue
        if child.tag not in BLOCK and not (child.tag == "span" and "simplelist" in child.classes):
            run.extend(inline_pieces(child))
            continue
        flush()
        blocks.extend(render_block(child))
    flush()
    return blocks


def render_block(node: Node) -> list[str]:
    tag, cls = node.tag, node.classes
    if tag == "pre":
        return [fenced(raw_text(node))]
    if tag in {"h1", "h2", "h3", "h4", "h5"}:
        text = inline(node)
        return [f"{'#' * heading_level(tag)} {text}"] if text else []
    if tag == "p":
        if "title" in cls:
            text = inline(node)
            return [f"**{text.strip('*')}**"] if text else []
        return render_blocks(node)
    if tag == "span":  # simplelist (See Also)
        text = inline(node)
        return [text] if text else []
    if tag == "dl":
        return render_dl(node)
    if tag in {"ul", "ol"}:
        return render_list(node, tag == "ol")
    if tag == "table":
        return render_table(node)
    if tag == "div" and cls & ADMONITIONS:
        inner: list[str] = []
        for child in node.children:
            if isinstance(child, Node) and child.tag in {"h3", "h4"} and "title" in child.classes:
                inner.append(f"**{inline(child)}**")
            elif isinstance(child, Node):
                inner.extend(render_block(child) if child.tag in BLOCK else [inline(child)])
            else:
                inner.extend(render_blocks(child))
        body = "\n\n".join(b for b in inner if b)
        return ["\n".join(("> " + line) if line else ">" for line in body.split("\n"))]
    return render_blocks(node)


def convert(html: str) -> tuple[str, str]:
    root = parse(html)
    entry = find(root, lambda n: n.tag == "div" and "refentry" in n.classes)
    if entry is None:
        raise ValueError("no reference entry in page")
    namediv = find(entry, lambda n: "refnamediv" in n.classes)
    title = inline(find(namediv, lambda n: n.tag == "h2"))
    purpose = inline(find(namediv, lambda n: n.tag == "p"))
    blocks = [f"# {title}", purpose]
    for child in entry.children:
        if isinstance(child, Node) and not skipped(child) and "refnamediv" not in child.classes:
            blocks.extend(render_block(child) if child.tag in BLOCK else render_blocks(child))
    text = "\n\n".join(b for b in blocks if b.strip())
    text = re.sub(r"\n{3,}", "\n\n", text)
    return title, text.rstrip() + "\n"


def note_path(title: str) -> Path:
    verb = title.split()[0].lower()
    folder = verb if verb in {"create", "alter", "drop"} else "other"
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return Path(folder) / f"{slug}.md"


NOW = "2026-06-01"
INDEXED_AT = "2026-05-31T00:00:00Z"
FIRST_DAY = dt.date(2022, 10, 13)
LAST_DAY = dt.date(2026, 2, 12)


def touched_time(path: str) -> str:
    """A reproducible "last touched" instant for a note, from a hash of its path."""
    span = (LAST_DAY - FIRST_DAY).days + 1
    offset = int.from_bytes(hashlib.sha256(path.encode("utf-8")).digest()[:8], "big") % span
    day = FIRST_DAY + dt.timedelta(days=offset)
    return f"{day.isoformat()}T09:00:00Z"


def write_meta(paths: list[str], meta_path: Path) -> None:
    touched = {p: touched_time(p) for p in sorted(paths)}
    assert all(t <= INDEXED_AT for t in touched.values())
    meta = {"now": NOW, "indexed_at": INDEXED_AT, "touched": touched}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=HTML_DIR, help="folder of the HTML pages")
    parser.add_argument("--out", type=Path, default=HERE / "notes", help="notes folder")
    parser.add_argument("--meta", type=Path, default=HERE / "meta.json", help="meta.json to write")
    args = parser.parse_args(argv)

    left_out = {page for pages in LEFT_OUT.values() for page in pages}
    assert not left_out & set(KEEP), "a page is both kept and left out"
    missing = [page for page in KEEP if not (args.html / page).is_file()]
    if missing:
        print(f"missing pages under {args.html}: {', '.join(missing)}", file=sys.stderr)
        return 1

    if args.out.exists():
        shutil.rmtree(args.out)
    written: dict[Path, str] = {}
    names: set[str] = set()
    for page in sorted(KEEP):
        title, text = convert((args.html / page).read_text(encoding="utf-8"))
        path = note_path(title)
        assert path.name not in names, f"file name repeats: {path.name}"
        names.add(path.name)
        written[path] = page
        (args.out / path).parent.mkdir(parents=True, exist_ok=True)
        (args.out / path).write_text(text, encoding="utf-8")
    write_meta([p.as_posix() for p in written], args.meta)
    print(f"wrote {len(written)} notes under {args.out} and {args.meta}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
