"""Public documentation as notes: real text for benches on the default model's own vectors.

Debian's documentation packages ship the sources of their pages: the Python 3.11 library
reference, tutorials and how-tos (`python3.11-doc`, Sphinx sources), the Linux kernel's
documentation (`linux-doc-6.1`, its `.rst` and `.txt` files), Node.js's API reference
(`nodejs-doc`, markdown), Git's manual pages and guides (`git-doc`, AsciiDoc text) and CMake's
reference (`cmake-doc`, Sphinx sources): 7,618 pages, 5.8M words, 69,433 chunks as recall
cuts them. The packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x`
into a cache folder; each page becomes one note (`PACKAGE/PATH.rst`, `.md` or `.txt`, as its
source is written).

`notes(cache, chunks)` gives a folder of about that many chunks: whole pages in a fixed order
(package by package, pages sorted by path), so a smaller folder is a prefix of a larger one.
`titles(root, count, seed)` gives section titles of those pages, the queries a reader would
type, in a seeded order.

Usage: python benches/public_docs.py [--cache DIR] [--chunks N]  (prints the folder made)
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import shutil
import subprocess
from pathlib import Path

#: Package → (folder of its page sources in the unpacked tree, glob under it).
PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "python3.11-doc": (("usr/share/doc/python3.11/html/_sources", "**/*.rst.txt"),),
    "linux-doc-6.1": (
        ("usr/share/doc/linux-doc-6.1/Documentation", "**/*.rst.gz"),
        ("usr/share/doc/linux-doc-6.1/Documentation", "**/*.txt.gz"),
    ),
    "nodejs-doc": (("usr/share/doc/nodejs/api", "*.md.gz"),),
    "git-doc": (("usr/share/doc/git", "**/*.txt"),),
    "cmake-doc": (("usr/share/doc/cmake-data/html/_sources", "**/*.rst.txt"),),
}
#: A source's ending → the note's (`.rst.txt` is Sphinx's copy of a `.rst` page).
SUFFIXES = ((".rst.txt", ".rst"), (".rst.gz", ".rst"), (".txt.gz", ".txt"), (".md.gz", ".md"))
#: Words per chunk as recall cuts these pages (15,458 chunks of the Python pages' 1.40M words).
WORDS_PER_CHUNK = 90
#: An underlined section title: a line of text, then a line of one repeated mark at least as long.
TITLE = re.compile(r"^([A-Za-z][^\n]{8,80})\n([=\-~^*#])\2+\s*$", re.MULTILINE)
#: A markdown heading.
HEADING = re.compile(r"^#{1,4} +([A-Za-z][^\n]{8,80})$", re.MULTILINE)


def unpacked(cache: Path) -> Path:
    """The packages unpacked under `cache/unpacked`, fetched on first use."""
    tree = cache / "unpacked"
    if (tree / ".complete").exists():
        return tree
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in PACKAGES if not any(debs.glob(f"{p}_*.deb"))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        (tree / deb.name.split("_")[0]).mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree / deb.name.split("_")[0])], check=True)
    (tree / ".complete").write_text("")
    return tree


def pages(cache: Path) -> list[tuple[str, Path]]:
    """Every page source as (the note's relative path, the source file), in a fixed order."""
    tree = unpacked(cache)
    out: list[tuple[str, Path]] = []
    for package, sources in PACKAGES.items():
        for folder, pattern in sources:
            base = tree / package / folder
            for source in sorted(f for f in base.glob(pattern) if f.is_file()):
                rel = source.relative_to(base).as_posix()
                for ending, suffix in SUFFIXES:
                    if rel.endswith(ending):
                        rel = rel.removesuffix(ending) + suffix
                        break
                out.append((f"{package}/{rel}", source))
    return out


def read(source: Path) -> str:
    data = gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()
    return data.decode("utf-8", errors="replace")


def notes(cache: Path, chunks: int | None = None) -> Path:
    """A folder of whole pages making about `chunks` chunks (every page when None)."""
    root = cache / ("notes-all" if chunks is None else f"notes-{chunks}")
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    budget = None if chunks is None else chunks * WORDS_PER_CHUNK
    words = 0
    for rel, source in pages(cache):
        if budget is not None and words >= budget:
            break
        text = read(source)
        words += len(text.split())
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / ".complete").write_text("")
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
