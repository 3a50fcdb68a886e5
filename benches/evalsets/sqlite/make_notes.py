"""Build the markdown notes of the sqlite evaluation set from the SQLite documentation.

The source is the HTML documentation shipped by Debian's ``sqlite3-doc`` package
(``apt-get install sqlite3-doc``), installed under ``/usr/share/doc/sqlite3/``.  The script
converts a fixed, listed subset of its pages (``PAGES`` below) into one markdown note per
page under ``notes/``, in four folders by kind:

- ``notes/lang/``: the SQL language reference (statements, functions, PRAGMAs, table and
  index features);
- ``notes/ext/``: the JSON, full-text search and R*Tree extensions;
- ``notes/articles/``: essays and technical articles (WAL, atomic commit, isolation,
  datatypes, query planning, limits, error codes, file format, ...);
- ``notes/capi/``: the C/C++ interface introduction and a few per-function pages.

Each note starts with ``# TITLE`` (the page's ``<title>``), then the page content as markdown:
``##``/``###`` headings for its sections (section numbers removed), paragraphs as text,
``<pre>`` blocks fenced with ```, lists as ``- `` items, tables as markdown tables and
definition lists as bold terms followed by their text.  Navigation menus, the page header,
the table of contents, the footer, scripts, images and the railroad syntax diagrams are
dropped.  Links keep their text only.

The script also writes ``meta.json``: the evaluation date, the indexing instant and, for every
note, a "last touched" time: the "This page last modified on" time printed at the foot of the
source page, or, for pages without one (the C interface reference pages), the release date of
the documented SQLite version.

The output is deterministic: the same package version gives byte-identical files.  Existing
notes under ``notes/`` are removed first.  The pages left out on purpose are listed in README.md.

Usage (from the repository root)::

    python benches/evalsets/sqlite/make_notes.py [--src /usr/share/doc/sqlite3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = "/usr/share/doc/sqlite3"
NOW = "2026-06-01"
INDEXED_AT = "2026-05-31T00:00:00Z"
# Release date of SQLite 3.40.1, the version the documentation describes (releaselog/3_40_1.html).
RELEASE_TIME = "2022-12-28T00:00:00Z"
MODIFIED = re.compile(
    r"This page last modified on\s*<a[^>]*>(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)</a>"
)

# (folder, source page relative to the documentation root, note file name without .md)
PAGES: list[tuple[str, str, str]] = []


def _add(folder: str, names: str, prefix: str = "") -> None:
    for name in names.split():
        stem = name.rsplit("/", 1)[-1]
        PAGES.append((folder, name + ".html", prefix + stem))


# SQL language reference.
_add(
    "lang",
    """
    lang_aggfunc lang_altertable lang_analyze lang_attach lang_comment lang_conflict
    lang_corefunc lang_createindex lang_createtable lang_createtrigger lang_createview
    lang_createvtab lang_datefunc lang_delete lang_detach lang_dropindex lang_droptable
    lang_droptrigger lang_dropview lang_explain lang_expr lang_indexedby lang_insert
    lang_keywords lang_mathfunc lang_naming lang_reindex lang_replace lang_returning
    lang_savepoint lang_select lang_transaction lang_update lang_upsert lang_vacuum lang_with
    pragma windowfunctions rowvalue gencol stricttables withoutrowid partialindex expridx
    foreignkeys autoinc rowidtable schematab printf
    """,
)
# Extensions that ship in the standard builds.
_add("ext", "json1 fts5 fts3 rtree geopoly")
# Essays and technical articles.
_add(
    "articles",
    """
    wal walformat atomiccommit isolation lockingv3 datatype3 flextypegood nulls floatingpoint
    queryplanner queryplanner-ng optoverview eqp opcode whentouse howtocorrupt limits
    tempfiles rescode inmemorydb mmap sharedcache threadsafe uri useovernet faq quirks
    different omitted np1queryprob fasterthanfs appfileformat security psow fileformat2 arch
    serverless zeroconf transactional cpu versionnumbers lts pgszchng2016 errlog invalidutf
    nulinstr intern-v-extern-blob undoredo whyc debugging malloc deterministic
    """,
)
# C/C++ interface: the essays, then a few per-function reference pages.
_add("capi", "cintro appfunc bindptr unlock_notify")
_add(
    "capi",
    """
    c3ref/busy_timeout c3ref/busy_handler c3ref/open c3ref/prepare c3ref/step c3ref/finalize
    c3ref/exec c3ref/errcode c3ref/last_insert_rowid c3ref/wal_checkpoint_v2 c3ref/interrupt
    """,
    prefix="c3ref_",
)

BLOCK_TAGS = {
    "p",
    "div",
    "blockquote",
    "center",
    "hr",
    "form",
    "body",
    "html",
    "section",
    "article",
    "dl",
    "dt",
    "dd",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "td",
    "th",
    "pre",
    "caption",
    "thead",
    "tbody",
    "tfoot",
}
SKIP_TAGS = {"script", "style", "svg", "title", "head", "button", "noscript", "select"}
# "h" is the hidden per-pragma heading of pragma.html.
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6, "h": 3}
DROP_PARAGRAPH = re.compile(r"^(This page last modified|See also lists of)", re.I)


class Converter(HTMLParser):
    """Turns one documentation page into a list of blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self._in_title = False
        self.blocks: list[tuple] = []  # ("para", indent, text) | ("head", level, text) | ...
        self._buf: list[str] = []
        self._drop = False  # the current paragraph holds a syntax-diagram toggle
        self._skip = 0  # depth inside skipped elements
        self._nosearch = 0  # div depth inside a skipped navigation div (0 = not inside)
        self._pre: list[str] | None = None
        self._head: int | None = None
        self._lists: list[int] = []  # one entry per open list: 0 before its first item
        self._item_fresh = False  # the next paragraph starts a new list item
        self._table: list[list[str]] | None = None
        self._table_depth = 0
        self._cell: list[str] | None = None
        self._term = False
        self._bold_end: int | None = None  # the paragraph so far is one bold run ending here
        self._bold_open = False

    # -- helpers ---------------------------------------------------------------
    def _text(self) -> str:
        text = "".join(self._buf)
        text = re.sub(r"\s+", " ", text)
        text = re.sub(r" *\x00 *", "\n", text)
        text = re.sub(r"\n{2,}", "\n", text).strip()
        return text

    def _flush(self) -> None:
        if self._cell is not None:
            return
        bold_only = self._bold_end is not None and not "".join(self._buf[self._bold_end :]).strip()
        self._bold_end = None
        self._bold_open = False
        text = self._text()
        self._buf = []
        drop, self._drop = self._drop, False
        if not text or drop or DROP_PARAGRAPH.match(text):
            return
        if self._head is not None:
            return
        if self._term or (bold_only and not self._lists and "\n" not in text):
            text = "**" + text.replace("\n", " ") + "**"
        depth = len(self._lists)
        if depth:
            indent = "  " * (depth - 1)
            if self._item_fresh:
                lines = text.split("\n")
                text = (
                    indent
                    + "- "
                    + lines[0]
                    + "".join("\n" + indent + "  " + ln for ln in lines[1:])
                )
                self._item_fresh = False
                self.blocks.append(("item", text))
            else:
                text = "\n".join(indent + "  " + ln for ln in text.split("\n"))
                self.blocks.append(("itemcont", text))
        else:
            self.blocks.append(("para", text))

    # -- parser callbacks ------------------------------------------------------
    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "title":
            self._in_title = True
        if self._nosearch:
            if tag == "div":
                self._nosearch += 1
            return
        if tag == "div" and "nosearch" in (attrs.get("class") or "").split():
            self._flush()
            self._nosearch = 1
            return
        if tag in SKIP_TAGS:
            if tag == "button":
                self._drop = True
            self._skip += 1
            return
        if self._skip:
            return
        if self._pre is not None:
            if tag == "br":
                self._pre.append("\n")
            return
        if self._table is not None:
            if tag == "table":
                self._table_depth += 1
            elif self._table_depth == 1 and tag == "tr":
                self._table.append([])
                self._cell = None
            elif self._table_depth == 1 and tag in ("td", "th"):
                self._end_cell()
                if not self._table:
                    self._table.append([])
                self._cell = []
            elif tag in ("br", "p", "li", "div", "tr", "td", "th", "dt", "dd"):
                if self._cell is not None:
                    self._cell.append(" ")
            elif tag in ("tt", "code"):
                if self._cell is not None:
                    self._cell.append("`")
            elif tag == "sup" and self._cell is not None:
                self._cell.append("^")
            return
        if tag in HEADINGS:
            self._flush()
            self._head = HEADINGS[tag]
            return
        if tag == "pre":
            self._flush()
            self._pre = []
            return
        if tag == "table":
            self._flush()
            self._table = []
            self._table_depth = 1
            self._cell = None
            return
        if tag in ("ul", "ol"):
            self._flush()
            self._lists.append(0)
            self._item_fresh = False
            return
        if tag == "li":
            self._flush()
            if not self._lists:
                self._lists.append(0)
            self._item_fresh = True
            return
        if tag == "dt":
            self._flush()
            self._term = True
            return
        if tag == "br":
            self._buf.append("\x00")  # a line break kept inside the paragraph
            return
        if tag in ("tt", "code"):
            self._buf.append("`")
            return
        if tag == "sup":
            self._buf.append("^")
            return
        if tag in ("b", "strong"):
            if not "".join(self._buf).strip():
                self._bold_open = True
            return
        if tag in BLOCK_TAGS:
            self._flush()

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "hr", "img", "p", "li", "div"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if self._nosearch:
            if tag == "div":
                self._nosearch -= 1
            return
        if tag in SKIP_TAGS:
            if self._skip:
                self._skip -= 1
            return
        if self._skip:
            return
        if self._pre is not None:
            if tag == "pre":
                code = "".join(self._pre).strip("\n")
                code = "\n".join(ln.rstrip() for ln in code.split("\n"))
                # Remove a common leading indentation.
                lines = [ln for ln in code.split("\n") if ln.strip()]
                if lines:
                    pad = min(len(ln) - len(ln.lstrip(" ")) for ln in lines)
                    code = "\n".join(ln[pad:] for ln in code.split("\n"))
                if code.strip():
                    self.blocks.append(("code", code))
                self._pre = None
            return
        if self._table is not None:
            if tag == "table":
                self._table_depth -= 1
                if self._table_depth == 0:
                    self._end_cell()
                    rows, self._table = self._table, None
                    self._emit_table(rows)
            elif tag in ("td", "th") and self._table_depth == 1:
                self._end_cell()
            elif tag in ("tt", "code") and self._cell is not None:
                self._cell.append("`")
            return
        if tag in HEADINGS:
            if self._head is not None:
                text = self._text().replace("\n", " ")
                self._buf = []
                self._drop = False
                text = re.sub(r"^\d+(\.\d+)*\.?\s+", "", text).strip()
                if text:
                    self.blocks.append(("head", self._head, text))
                self._head = None
            return
        if tag in ("ul", "ol"):
            self._flush()
            if self._lists:
                self._lists.pop()
            self._item_fresh = False
            return
        if tag == "li":
            self._flush()
            return
        if tag == "dt":
            self._flush()
            self._term = False
            return
        if tag in ("tt", "code"):
            self._buf.append("`")
            return
        if tag in ("b", "strong"):
            if self._bold_open:
                self._bold_end = len(self._buf)
                self._bold_open = False
            return
        if tag in BLOCK_TAGS:
            self._flush()

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._nosearch or self._skip:
            return
        if self._pre is not None:
            self._pre.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._table is not None:
            return
        else:
            self._buf.append(data)

    def close(self):
        super().close()
        self._flush()

    # -- tables ----------------------------------------------------------------
    def _end_cell(self):
        if self._cell is None or self._table is None:
            self._cell = None
            return
        text = re.sub(r"\s+", " ", "".join(self._cell)).strip()
        text = text.replace("``", "").replace("|", "\\|")
        self._table[-1].append(text)
        self._cell = None

    def _emit_table(self, rows):
        rows = [r for r in rows if any(c for c in r)]
        if not rows:
            return
        width = max(len(r) for r in rows)
        if width == 1:
            for r in rows:
                self.blocks.append(("para", r[0]))
            return
        rows = [r + [""] * (width - len(r)) for r in rows]
        keep = [i for i in range(width) if any(r[i] for r in rows)]
        rows = [[r[i] for i in keep] for r in rows]
        width = len(keep)
        if width == 1:
            for r in rows:
                self.blocks.append(("para", r[0]))
            return
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        self.blocks.append(("table", "\n".join(lines)))


def last_modified(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        m = MODIFIED.search(fh.read())
    return f"{m.group(1)}T{m.group(2)}Z" if m else RELEASE_TIME


def convert(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        html = fh.read()
    conv = Converter()
    conv.feed(html)
    conv.close()
    title = re.sub(r"\s+", " ", conv.title).strip()
    blocks = conv.blocks
    # Drop a heading that only repeats the page title.
    heads = [b for b in blocks if b[0] == "head"]
    if heads and heads[0][2].lower() == title.lower():
        blocks = [b for b in blocks if b is not heads[0]]
        heads = heads[1:]
    top = min((b[1] for b in heads), default=1)
    # Drop headings left empty by the removal of syntax diagrams.
    kept = []
    for i, block in enumerate(blocks):
        if block[0] == "head":
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            if nxt is None or (nxt[0] == "head" and nxt[1] <= block[1]):
                continue
        kept.append(block)
    blocks = kept
    out = ["# " + title]
    prev = None
    for block in blocks:
        kind = block[0]
        if kind == "head":
            level = min(3, 2 + block[1] - top)
            out.append("#" * level + " " + block[2])
        elif kind == "code":
            out.append("```\n" + block[1] + "\n```")
        elif kind == "item" and prev in ("item", "itemcont"):
            out[-1] += "\n" + block[1]
        else:
            out.append(block[1])
        prev = kind
    text = "\n\n".join(out).strip() + "\n"
    text = re.sub(r"\u00a0", " ", text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=DEFAULT_SRC, help="root of the HTML documentation")
    ap.add_argument("--out", default=os.path.join(HERE, "notes"), help="notes folder")
    ap.add_argument("--meta", default=os.path.join(HERE, "meta.json"), help="meta.json path")
    args = ap.parse_args(argv)
    names = [f"{stem}.md" for _, _, stem in PAGES]
    if len(set(names)) != len(names):
        sys.exit("note file names are not unique")
    missing = [src for _, src, _ in PAGES if not os.path.exists(os.path.join(args.src, src))]
    if missing:
        sys.exit("missing pages (is sqlite3-doc installed?): " + ", ".join(missing))
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    touched = {}
    for folder, src, stem in PAGES:
        text = convert(os.path.join(args.src, src))
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
        with open(os.path.join(args.out, folder, stem + ".md"), "w", encoding="utf-8") as fh:
            fh.write(text)
        touched[f"{folder}/{stem}.md"] = last_modified(os.path.join(args.src, src))
    meta = {"now": NOW, "indexed_at": INDEXED_AT, "touched": dict(sorted(touched.items()))}
    with open(args.meta, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")
    print(f"wrote {len(PAGES)} notes under {args.out} and {args.meta}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
