"""Finding a corpus's notes: the walk that every reader of notes shares (the indexer, lint,
check and fix).

Owns: which files are eligible (suffixes, hidden names, symlinks leaving the root, names that are
not UTF-8, mount loops), refusing what cannot be listed with the reason and remembering what must
therefore be kept (SPEC §11), and opening a note without blocking. Does not own: reading, parsing
or storing documents.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from recall.errors import UsageError
from recall.pathlist import PathList

if TYPE_CHECKING:
    from recall.store import Store

__all__ = [
    "MARKDOWN_SUFFIXES",
    "MAX_FILE_BYTES",
    "NOTE_SUFFIXES",
    "RST_SUFFIXES",
    "MAX_SIDECAR_BYTES",
    "OPEN_FLAGS",
    "SIDECAR_SUFFIXES",
    "Listing",
    "Skipped",
    "TEXT_SUFFIXES",
    "discover",
    "read_metadata",
    "shown",
    "sidecar_of",
    "storable",
    "within",
    "why",
]

#: SPEC §2.1: indexed by default; `.txt` is body only (no frontmatter); `.rst` is body plus a
#: PEP-style preamble (SPEC §8.4).
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
RST_SUFFIXES = frozenset({".rst"})
TEXT_SUFFIXES = frozenset({".txt"})
NOTE_SUFFIXES = MARKDOWN_SUFFIXES | RST_SUFFIXES | TEXT_SUFFIXES
#: A note's metadata file: `NAME.yaml` beside `NAME.md`, or the one such file in the folder of
#: a note named like an index page (`kep.yaml` beside a KEP's `README.md`). Never a note.
SIDECAR_SUFFIXES = (".yaml", ".yml", ".json")
_INDEX_STEMS = frozenset({"readme", "index", "_index"})
#: SPEC §2.5 default size cap.
MAX_FILE_BYTES = 10 * 1024 * 1024
#: Opening a note never blocks (FIFOs) and never leaks into child processes.
OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


@dataclass(frozen=True)
class Skipped:
    """A file or folder the run did not index, and why (SPEC §2.5)."""

    path: str
    reason: str


@dataclass
class Listing:
    """The eligible files under one root, found before anything is written.

    SPEC §11: what could not be read keeps its indexed documents. `kept` holds the relative
    paths of unreadable files and `kept_folders` the prefixes of unreadable folders ("" is the
    whole root); no document they match is pruned.
    """

    source: Path
    #: The relative path of each eligible file (`paths` gives each with its path, made as it is
    #: asked for), held as one block of text: a listing of a million notes holds each path once,
    #: in about a third of what a list of strings takes.
    files: PathList = field(default_factory=PathList)
    #: A note's metadata file (SPEC §2.5, vocabulary `sidecar`): note's relative path ->
    #: (the metadata file's relative path, its path).
    sidecars: dict[str, tuple[str, str]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)
    kept_folders: list[str] = field(default_factory=list)
    whole_folder: bool = True

    def paths(self) -> Iterator[tuple[str, str]]:
        """(relative path, path) of each eligible file, in the listing's order."""
        root = str(self.source)
        return ((rel, os.path.join(root, rel)) for rel in self.files)

    def keeps(self, rel: str) -> bool:
        return rel in self.kept or any(rel.startswith(p) for p in self.kept_folders)

    def refuse_folder(self, prefix: str, name: str, err: OSError) -> None:
        self.kept_folders.append(prefix)
        self.refused.append(Skipped(name, f"unreadable folder: {why(err)}"))

    def refuse_entry(self, rel: str, err: OSError) -> None:
        # Neither a file nor a folder for sure: keep both what it was and what was under it.
        self.kept.add(rel)
        self.kept_folders.append(rel + "/")
        self.refused.append(Skipped(shown(rel), f"unreadable: {why(err)}"))


def why(err: OSError) -> str:
    return err.strerror or str(err)


def shown(name: str) -> str:
    """A path as text that is always valid UTF-8 and reads as it is: undecodable bytes appear
    as `\\xe9`, control characters and the marks that reorder text (a right-to-left override
    makes `\u202egnp.md` look like `dm.png`) as `\\u202e`."""
    try:
        text = os.fsencode(name).decode("utf-8", "backslashreplace")
    except UnicodeError:
        text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return _HIDDEN.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


#: Characters a terminal does not show as themselves: C0 and C1 controls, DEL, and the bidi
#: marks, embeddings, overrides and isolates.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def missing_roots(store: Store, indexed: frozenset[str] = frozenset()) -> list[tuple[str, int]]:
    """(root, documents) for the roots a store holds documents from that no longer exist on
    this machine, besides those in `indexed` (SPEC §11: their documents are kept and reported,
    never removed silently). A root that exists but cannot be read is not missing; a store
    several machines share (PostgreSQL) has none."""
    if store.shared:
        return []
    gone = []
    for source, documents in store.sources():
        if source in indexed:
            continue
        try:
            os.stat(source)
        except (FileNotFoundError, NotADirectoryError):
            gone.append((source, documents))
        except (OSError, ValueError):
            pass
    return gone


def storable(name: str) -> bool:
    """True when `name` is valid UTF-8, as the store (and every report reader) needs."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or lies under it, by path components: `/x/notes-evil` is not
    under `/x/notes`. Both are taken as given (resolve symlinks first where that matters)."""
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def walk(root: Path) -> Listing:
    """SPEC §2.5: hidden folders and symlinks leaving the root are skipped with a reason.

    Folders are listed one by one (not `os.walk`, which drops a folder it cannot list without a
    word) so that a folder or entry that cannot be read is refused and its documents kept.
    Symlinked folders are never followed, so a symlink loop cannot recur; a folder that is a
    mount of one above it is skipped.
    """
    corpus = Listing(root)
    # Depth first, files of a folder before those of its subfolders, names in sorted order.
    # Each folder carries the (device, inode) of the folders above it, to see a mount loop.
    stack: list[tuple[Path, str, frozenset[tuple[int, int]]]] = [(root, "", frozenset())]
    while stack:
        folder, prefix, above = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
            st = os.stat(folder)
        except OSError as err:
            name = shown(prefix) if prefix else shown(os.path.join(root, ""))
            corpus.refuse_folder(prefix, name, err)
            continue
        here = (st.st_dev, st.st_ino)
        if st.st_ino and here in above:
            corpus.skipped.append(Skipped(shown(prefix), "a mount of a folder above it (a loop)"))
            continue
        subfolders: list[tuple[Path, str, frozenset[tuple[int, int]]]] = []
        files: list[tuple[str, str, str, bool]] = []
        metadata: dict[str, str] = {}  # a metadata file's name -> its path
        for entry in entries:
            rel = prefix + entry.name
            try:
                is_link = entry.is_symlink()
            except OSError as err:
                corpus.refuse_entry(rel, err)
                continue
            try:
                is_dir = entry.is_dir()
            except OSError as err:
                if not is_link:
                    corpus.refuse_entry(rel, err)
                    continue
                is_dir = False  # a symlink loop or an unreachable target: read as a file
            if is_dir:
                reason = _folder_skip(entry.name, Path(entry.path), is_link, root)
                if reason:
                    corpus.skipped.append(Skipped(shown(rel) + "/", reason))
                else:
                    subfolders.append((Path(entry.path), rel + "/", above | {here}))
            elif os.path.splitext(entry.name)[1].lower() in NOTE_SUFFIXES:
                # Plain strings: a 50k-note walk pays for every object made per file.
                files.append((rel, entry.path, entry.name, is_link))
            elif (
                entry.name.lower().endswith(SIDECAR_SUFFIXES)
                and not is_link
                and not entry.name.startswith(".")
                and storable(entry.name)
            ):
                metadata[entry.name] = entry.path
        for rel, path, name, is_link in files:
            reason = _file_skip(name, path, is_link, root)
            if reason:
                corpus.skipped.append(Skipped(shown(rel), reason))
            else:
                corpus.files.append(rel)
                side = sidecar_of(name, metadata) if metadata else None
                if side is not None:
                    corpus.sidecars[rel] = (prefix + side, metadata[side])
        stack.extend(reversed(subfolders))
    return corpus


#: The largest metadata file read beside a note.
MAX_SIDECAR_BYTES = 1024 * 1024


def read_bounded(path: str, limit: int, too_large: str) -> tuple[bytes | None, str | None]:
    """A regular file's bytes, opened without blocking and checked on the open file, or (None,
    why it cannot be read: not a regular file, `too_large` past `limit` bytes, unreadable)."""
    try:
        with os.fdopen(os.open(path, OPEN_FLAGS), "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None, "not a regular file"
            if st.st_size > limit:
                return None, too_large
            return handle.read(), None
    except OSError as err:
        return None, f"unreadable: {why(err)}"


def read_metadata(path: str) -> tuple[bytes | None, str | None]:
    """A note's metadata file's bytes, or (None, why it cannot be read): the one reading the
    index run and lint share."""
    return read_bounded(path, MAX_SIDECAR_BYTES, f"larger than {MAX_SIDECAR_BYTES // 1024} KiB")


def sidecar_beside(path: str, rel: str) -> tuple[str, str] | None:
    """The metadata file of the note at `path` (`rel` in its corpus), as a walk of its folder
    finds it: (its path in the corpus, its path), or None."""
    folder = os.path.dirname(path)
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    metadata = {
        n: os.path.join(folder, n)
        for n in names
        if n.lower().endswith(SIDECAR_SUFFIXES)
        and not n.startswith(".")
        and storable(n)
        and not os.path.islink(os.path.join(folder, n))
    }
    side = sidecar_of(os.path.basename(path), metadata) if metadata else None
    if side is None:
        return None
    prefix = rel[: len(rel) - len(os.path.basename(rel))]
    return prefix + side, metadata[side]


def sidecar_of(name: str, metadata: dict[str, str] | list[str]) -> str | None:
    """The metadata file (of those in its folder) that belongs to the note `name`: the one of
    its stem (`0005-x.yaml` for `0005-x.md`), else, for an index page (`README.md`), the only
    one in the folder; None when none does."""
    stem = os.path.splitext(name)[0]
    for suffix in SIDECAR_SUFFIXES:
        for candidate in (stem + suffix, stem + suffix.upper()):
            if candidate in metadata:
                return candidate
    if stem.lower() in _INDEX_STEMS and len(metadata) == 1:
        return next(iter(metadata))
    return None


def _target(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _folder_skip(name: str, path: Path, is_link: bool, root: Path) -> str | None:
    if name.startswith("."):
        return "hidden folder"
    if not storable(name):
        return "folder name is not valid UTF-8 (rename it to index its notes)"
    if is_link:
        target = _target(path)
        if within(target, root):
            return "symlinked folder inside the corpus (its target is indexed directly)"
        return f"symlink leaves the corpus root (points to {shown(str(target))})"
    return None


def _file_skip(name: str, path: str, is_link: bool, root: Path) -> str | None:
    if name.startswith("."):
        return "hidden file"
    if not storable(name):
        return "file name is not valid UTF-8 (rename it to index it)"
    if is_link:
        target = _target(Path(path))
        if not within(target, root):
            return f"symlink leaves the corpus root (points to {shown(str(target))})"
    return None


def discover(path: Path, command: str = "recall index") -> Listing:
    """The eligible files of a folder (walked) or one file; UsageError when it does not exist."""
    try:
        resolved = _target(path)
        st = os.stat(resolved)
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(
            f"{command}: {shown(str(path))} does not exist; pass a folder of notes"
        ) from None
    except OSError as err:
        # It may exist but cannot be reached: refused, and with no listing nothing is pruned.
        corpus = Listing(Path(os.path.abspath(path)), whole_folder=False)
        corpus.refused.append(Skipped(shown(str(path)), f"unreadable: {why(err)}"))
        return corpus
    folder = stat.S_ISDIR(st.st_mode)
    source = resolved if folder else resolved.parent
    if not storable(str(source)):
        corpus = Listing(source, whole_folder=False)
        corpus.refused.append(
            Skipped(shown(str(source)), "folder name is not valid UTF-8 (rename it to index it)")
        )
        return corpus
    if folder:
        return walk(resolved)
    corpus = Listing(source, whole_folder=False)
    if resolved.suffix.lower() not in NOTE_SUFFIXES:
        # Named explicitly, it is still not a note: a notes file is markdown or plain text.
        corpus.refused.append(
            Skipped(
                shown(str(path)),
                "not a note: recall indexes " + ", ".join(sorted(NOTE_SUFFIXES)) + " files",
            )
        )
    elif storable(resolved.name):
        corpus.files.append(resolved.name)
        side = sidecar_beside(str(resolved), resolved.name)
        if side is not None:
            corpus.sidecars[resolved.name] = side
    else:
        corpus.refused.append(
            Skipped(shown(str(path)), "file name is not valid UTF-8 (rename it to index it)")
        )
    return corpus
