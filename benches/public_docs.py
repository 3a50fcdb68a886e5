"""Public documentation as notes: real text for benches on the default model's own vectors.

Debian's documentation packages ship their pages. Five ship the sources: the Python 3.11
library reference, tutorials and how-tos (`python3.11-doc`, Sphinx sources), the Linux kernel's
documentation (`linux-doc-6.1`, its `.rst` and `.txt` files), Node.js's API reference
(`nodejs-doc`, markdown), Git's manual pages and guides (`git-doc`, AsciiDoc text) and CMake's
reference (`cmake-doc`, Sphinx sources): 7,618 pages, 5.8M words, 69,433 chunks as recall
cuts them. Four more ship HTML or POD only, and their pages are turned into markdown (headings
kept, navigation, scripts and index pages left out): PostgreSQL 15's manual
(`postgresql-doc-15`), Django 3.2's (`python-django-doc`), SQLAlchemy 1.4's
(`python-sqlalchemy-doc`) and Perl 5.36's (`perl-doc`), which take the store past 100k chunks.
The packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x` into a cache
folder; each page becomes one note (`PACKAGE/PATH.rst`, `.md` or `.txt`, as its source is
written; `.md` for a converted page).

`notes(cache, chunks)` gives a folder of about that many chunks: whole pages in a fixed order
(package by package, in the order below, pages sorted by path), so a smaller folder is a prefix
of a larger one. `titles(root, count, seed)` gives section titles of those pages, the queries a
reader would type, in a seeded order.

Usage: python benches/public_docs.py [--cache DIR] [--chunks N]  (prints the folder made)
"""

from __future__ import annotations

import argparse
import gzip
import html
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

#: Package → (folder of its pages in the unpacked tree, glob under it, how a page is written:
#: `source` as it is, `html` or `pod` turned into markdown), in the order notes are made.
PACKAGES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "python3.11-doc": (("usr/share/doc/python3.11/html/_sources", "**/*.rst.txt", "source"),),
    "linux-doc-6.1": (
        ("usr/share/doc/linux-doc-6.1/Documentation", "**/*.rst.gz", "source"),
        ("usr/share/doc/linux-doc-6.1/Documentation", "**/*.txt.gz", "source"),
    ),
    "nodejs-doc": (("usr/share/doc/nodejs/api", "*.md.gz", "source"),),
    "git-doc": (("usr/share/doc/git", "**/*.txt", "source"),),
    "cmake-doc": (("usr/share/doc/cmake-data/html/_sources", "**/*.rst.txt", "source"),),
    "postgresql-doc-15": (("usr/share/doc/postgresql-doc-15/html", "*.html", "html"),),
    "python-django-doc": (("usr/share/doc/python-django-doc/html", "**/*.html", "html"),),
    "python-sqlalchemy-doc": (("usr/share/doc/python-sqlalchemy-doc/html", "**/*.html", "html"),),
    "perl-doc": (("usr/share/perl/5.36.0/pod", "*.pod", "pod"),),
}
#: A source's ending → the note's (`.rst.txt` is Sphinx's copy of a `.rst` page).
SUFFIXES = (
    (".rst.txt", ".rst"),
    (".rst.gz", ".rst"),
    (".txt.gz", ".txt"),
    (".md.gz", ".md"),
    (".html", ".md"),
    (".pod", ".md"),
)
#: How pages are turned into notes; bumped with every change to that, so cached folders are
#: made again.
CONVERSION = "conversion-2"
#: Generated pages that list words, not text: left out.
LISTINGS = frozenset({"genindex", "search", "py-modindex", "bookindex", "index"})
#: Words per chunk as recall cuts these pages (15,458 chunks of the Python pages' 1.40M words).
WORDS_PER_CHUNK = 90
#: An underlined section title: a line of text, then a line of one repeated mark at least as long.
TITLE = re.compile(r"^([A-Za-z][^\n]{8,80})\n([=\-~^*#])\2+\s*$", re.MULTILINE)
#: A markdown heading.
HEADING = re.compile(r"^#{1,4} +([A-Za-z][^\n]{8,80})$", re.MULTILINE)


class _Markdown(HTMLParser):
    """An HTML page's text as markdown: headings as `#` lines, blocks as paragraphs, and
    nothing of the page's head, scripts, styles or navigation."""

    SKIP = frozenset({"head", "script", "style", "nav", "header", "footer", "button", "form"})
    #: Words of a class, id or role that mark a page's chrome, not its text.
    CHROME = frozenset(
        {
            "nav",
            "navigation",
            "navheader",
            "navfooter",
            "sidebar",
            "sphinxsidebar",
            "related",
            "footer",
            "header",
            "breadcrumbs",
            "headerlink",
            "search",
        }
    )
    BLOCKS = frozenset({"p", "div", "li", "pre", "tr", "dt", "dd", "table", "ul", "ol", "br"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skipping: list[str] = []
        self.heading = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = " ".join(v or "" for k, v in attrs if k in ("class", "id", "role")).lower()
        words = set(re.split(r"[\s_-]+", names))
        if self.skipping or tag in self.SKIP or words & self.CHROME:
            if tag not in ("br", "img", "hr", "input", "meta", "link"):
                self.skipping.append(tag)
            return
        if tag in ("h1", "h2", "h3", "h4"):
            self.heading = int(tag[1])
            self.out.append("\n\n" + "#" * self.heading + " ")
        elif tag in self.BLOCKS:
            self.out.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            # Tags left open inside the skipped element (`<p>`, `<li>`) close with it.
            if tag in self.skipping:
                while self.skipping.pop() != tag:
                    pass
            return
        if tag in ("h1", "h2", "h3", "h4"):
            self.heading = 0
            self.out.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.out.append(" ".join(data.split()) + " " if self.heading else data)

    def text(self) -> str:
        blocks = (" ".join(b.split()) for b in re.split(r"\n\s*\n", "".join(self.out)))
        return "\n\n".join(b for b in blocks if b) + "\n"


def html_markdown(raw: str) -> str:
    """An HTML page's text as markdown (`_Markdown`)."""
    parser = _Markdown()
    parser.feed(raw)
    parser.close()
    return parser.text()


def pod_markdown(raw: str) -> str:
    """A POD page as markdown: `=headN` lines as headings, `=item` as list items, other
    commands left out, the text as it is."""
    out = []
    for line in raw.splitlines():
        head = re.match(r"^=head([1-4])\s+(.*)$", line)
        if head:
            out.append("#" * int(head.group(1)) + " " + head.group(2).strip())
        elif line.startswith("=item"):
            out.append("- " + line.removeprefix("=item").strip())
        elif not line.startswith("="):
            out.append(line)
    return html.unescape("\n".join(out)) + "\n"


def unpacked(cache: Path) -> Path:
    """The packages unpacked under `cache/unpacked`, each fetched on first use."""
    tree = cache / "unpacked"
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in PACKAGES if not (tree / p / ".complete").exists()]
    fetch = [p for p in missing if not any(debs.glob(f"{p}_*.deb"))]
    if fetch:
        subprocess.run(["apt-get", "download", *fetch], cwd=debs, check=True)
    for package in missing:
        (deb,) = debs.glob(f"{package}_*.deb")
        (tree / package).mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree / package)], check=True)
        (tree / package / ".complete").write_text("")
    return tree


def pages(cache: Path) -> list[tuple[str, Path, str]]:
    """Every page as (the note's relative path, the source file, how it is written), in a
    fixed order."""
    tree = unpacked(cache)
    out: list[tuple[str, Path, str]] = []
    for package, sources in PACKAGES.items():
        for folder, pattern, kind in sources:
            base = tree / package / folder
            for source in sorted(f for f in base.glob(pattern) if f.is_file()):
                if kind == "html" and source.stem in LISTINGS:
                    continue
                rel = source.relative_to(base).as_posix()
                for ending, suffix in SUFFIXES:
                    if rel.endswith(ending):
                        rel = rel.removesuffix(ending) + suffix
                        break
                out.append((f"{package}/{rel}", source, kind))
    return out


def read(source: Path, kind: str = "source") -> str:
    data = gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()
    text = data.decode("utf-8", errors="replace")
    if kind == "html":
        return html_markdown(text)
    if kind == "pod":
        return pod_markdown(text)
    return text


def notes(cache: Path, chunks: int | None = None) -> Path:
    """A folder of whole pages making about `chunks` chunks (every page when None)."""
    root = cache / ("notes-all" if chunks is None else f"notes-{chunks}")
    # A folder made from another list of packages, or by another conversion, is made again.
    made = f"{CONVERSION} " + " ".join(PACKAGES)
    marker = root / ".complete"
    if marker.exists() and marker.read_text() == made:
        return root
    if root.exists():
        shutil.rmtree(root)
    budget = None if chunks is None else chunks * WORDS_PER_CHUNK
    words = 0
    for rel, source, kind in pages(cache):
        if budget is not None and words >= budget:
            break
        text = read(source, kind)
        words += len(text.split())
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    marker.write_text(made)
    return root


def titles(root: Path, count: int, seed: int) -> list[str]:
    """`count` distinct section titles of the pages under `root`, in a seeded order."""
    found: set[str] = set()
    for page in sorted(root.rglob("*")):
        if page.is_file() and not page.name.startswith("."):
            text = page.read_text(encoding="utf-8", errors="replace")
            found.update(m.group(1).strip() for m in TITLE.finditer(text))
            found.update(m.group(1).strip() for m in HEADING.finditer(text))
    ordered = sorted(found)
    random.Random(seed).shuffle(ordered)
    if len(ordered) < count:
        raise SystemExit(f"{root} has {len(ordered)} section titles, fewer than {count}")
    return ordered[:count]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options a bench takes to run on these pages: `--corpus` and `--cache`."""
    ap.add_argument(
        "--corpus",
        choices=("zipf", "public-docs"),
        default="zipf",
        help="public-docs: Debian's documentation pages embedded by minilm-l6 (public_docs.py)",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "recall-public-docs",
        help="where public-docs keeps the packages and the notes made of them",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "recall-public-docs")
    ap.add_argument("--chunks", type=int, default=None, help="about this many chunks (all pages)")
    args = ap.parse_args()
    root = notes(args.cache, args.chunks)
    files = [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")]
    words = sum(len(p.read_text(encoding="utf-8").split()) for p in files)
    print(f"{root}: {len(files):,} pages, {words:,} words")


if __name__ == "__main__":
    main()
