"""The MCP server over stdio (SPEC §8.3): `recall serve`.

Owns: the tools an agent sees (names, input schemas, descriptions written for a model), checking
their arguments (bounds, lengths, every path confined to the corpus roots), writing the note that
`remember` adds, and turning judgments, reports and errors into tool results. Does not own:
search, verdicts, indexing or calibration (`recall.api` and the Rust core).

The MCP SDK (the `mcp` extra) is imported only by `serve`: `Tools` is plain Python, so the base
install never imports it and the tool logic is usable and testable without it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import re
import sys
import threading
import traceback
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall import _core
from recall.errors import (
    EmbedderError,
    EmbedderMismatchError,
    FrontmatterError,
    JudgeError,
    PruneRefusedError,
    RecallError,
    StoreError,
    StoreLockedError,
    TrustRefusal,
    UsageError,
)
from recall.instants import parse_when
from recall.walk import within
from recall.writing import sweep, temporary

if TYPE_CHECKING:
    from recall.api import Memory

__all__ = ["INSTALL_HINT", "Reply", "Tools", "serve"]

INSTALL_HINT = (
    "recall serve: the MCP server needs the MCP Python SDK (Python 3.10 or newer); "
    "install it with: pip install 'recall-memory[mcp]'"
)

#: Bounds on tool arguments: a model can send anything, and every call must stay cheap.
MAX_K = 50
MAX_QUERY_CHARS = 2_000
MAX_TITLE_CHARS = 200
MAX_TEXT_CHARS = 100_000
MAX_PATH_CHARS = 1_000
MAX_PATHS = 32
MAX_REFERENCES = 20
MAX_REFERENCE_CHARS = 200
MAX_NAME_CHARS = 80
MAX_LINT_FINDINGS = 200
MAX_FOLDER_PARTS = 8
#: `remember` tries NAME.md, NAME-2.md, ... up to this suffix before giving up.
MAX_NAME_TRIES = 100

#: What the indexer reads (SPEC §2.1); a note name must not collide with any of these.
_NOTE_SUFFIXES = (".md", ".markdown", ".mdx", ".txt")
_FOLDER_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BAD_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_VERDICTS = (
    "Each hit has a verdict. ok: current, relevant and trusted; the only verdict you may act "
    "on. superseded: replaced by the note named in validity.superseded_by (served in its place "
    "when it qualifies); do not use it. expired / not_yet_valid: outside its validity window "
    "(valid_until / valid_from) at the judged time. low_confidence: below the calibrated "
    "relevance threshold, probably not about the question. invalid_metadata: malformed or empty "
    "validity window. ambiguous_supersession: a supersedes reference names several notes, so "
    "which one is current is unknown. not_yet_known: indexed after known_as_of. not_entailed: "
    "the judge says the passage does not answer the question. unverified: no calibration "
    "(development mode), nothing can be trusted. Only ok hits may be acted on."
)
_ABSTAIN = (
    "When abstained is true no hit is ok: say you do not know (reason says why: a corpus gap, a "
    "stale or expired note, malformed or ambiguous metadata), do not answer from the other hits, "
    "and do not retry the same question with a larger k. If you learn the answer elsewhere, "
    "store it with remember."
)
_ERRORS = (
    "A refusal comes back as a tool error with a code: INDEX_NOT_READY (call index, then search "
    "again), CALIBRATION_MISSING / CALIBRATION_UNCERTIFIED / CALIBRATION_STALE / "
    "LINEAGE_MISMATCH (the store's owner must act; memory cannot be trusted until then: do not "
    "act on remembered facts and do not retry), DEPENDENCY_UNAVAILABLE (search again without "
    "entail). INVALID_ARGUMENT means fix the arguments and call again."
)

INSTRUCTIONS = (
    "recall is a memory of markdown notes that answers a question with a judgment. Search before "
    "relying on what you remember. " + _VERDICTS + " " + _ABSTAIN + " " + _ERRORS + " To correct "
    "a memory, call remember with supersedes naming the note it replaces; never edit notes."
)

#: SPEC §5.6: what an agent should do next, per refusal code.
NEXT_STEP = {
    "INDEX_NOT_READY": "call the index tool, then search again",
    "LINEAGE_MISMATCH": (
        "the store was built with another embedder; its owner must re-index it. Do not act on "
        "remembered facts until then"
    ),
    "CALIBRATION_MISSING": (
        "call the index tool where it is offered (an index run calibrates the store from its "
        "notes); otherwise the store's owner must run 'recall calibrate --auto'. Until then "
        "memory cannot be trusted: do not act on remembered facts"
    ),
    "CALIBRATION_UNCERTIFIED": (
        "the store's owner must certify a calibration ('recall calibrate QUERIES' with at "
        "least 20 answerable and 20 unanswerable questions). Do not act on remembered facts and "
        "do not retry"
    ),
    "CALIBRATION_STALE": (
        "much of the memory changed since calibration; call the index tool where it is offered "
        "(it refits a calibration made from the notes), otherwise its owner must calibrate "
        "again. Do not act on remembered facts until then"
    ),
    "DEPENDENCY_UNAVAILABLE": "search again without entail",
    "INVALID_ARGUMENT": "fix the arguments as the message says and call again",
    "PRUNE_REFUSED": (
        "many notes are missing on disk; ask the user to check the corpus (the owner can run "
        "'recall index --allow-prune')"
    ),
    "STORE_LOCKED": "another process is writing the store; call again shortly",
}


def _error_code(err: BaseException) -> str:
    if isinstance(err, TrustRefusal):
        return err.code
    # Subclasses before the classes they derive from.
    table: tuple[tuple[type[BaseException], str], ...] = (
        (UsageError, "INVALID_ARGUMENT"),
        (PruneRefusedError, "PRUNE_REFUSED"),
        (StoreLockedError, "STORE_LOCKED"),
        (StoreError, "STORE_ERROR"),
        (EmbedderMismatchError, "LINEAGE_MISMATCH"),
        (EmbedderError, "EMBEDDER_ERROR"),
        (JudgeError, "DEPENDENCY_UNAVAILABLE"),
        (FrontmatterError, "FRONTMATTER_ERROR"),
        (RecallError, "RECALL_ERROR"),
    )
    return next((code for cls, code in table if isinstance(err, cls)), "INTERNAL_ERROR")


@dataclass(frozen=True)
class Reply:
    """One tool call's outcome: the JSON-ready payload and whether it is an error."""

    data: dict[str, Any]
    is_error: bool = False

    @property
    def text(self) -> str:
        if self.is_error:
            error = self.data["error"]
            shown = (
                f"recall {error['tool']} refused ({error['code']}): {error['message']}"
                if error["refused"]
                else f"{error['code']}: {error['message']}"
            )
            return shown + (f"\nNext: {error['next']}" if error.get("next") else "")
        return json.dumps(self.data, ensure_ascii=False)


# --- arguments -------------------------------------------------------------------------------


def _bad(tool: str, message: str) -> UsageError:
    return UsageError(f"recall {tool}: {message}")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string(tool: str, args: Mapping[str, Any], name: str, limit: int) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(tool, f"{name} must be a string, got {_shown(value)}")
    if not value.strip():
        raise _bad(tool, f"{name} must not be empty")
    if len(value) > limit:
        raise _bad(tool, f"{name} is {len(value)} characters; the limit is {limit}")
    return value


def _required(tool: str, args: Mapping[str, Any], name: str, limit: int) -> str:
    value = _string(tool, args, name, limit)
    if value is None:
        raise _bad(tool, f"{name} is required")
    return value


def _instant(tool: str, args: Mapping[str, Any], name: str) -> dt.datetime | None:
    value = _string(tool, args, name, 64)
    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError:
        raise _bad(
            tool, f"{name} {_shown(value)} is not a date (YYYY-MM-DD) or an ISO 8601 time"
        ) from None


def _date(tool: str, args: Mapping[str, Any], name: str) -> dt.date | None:
    from recall.frontmatter import parse_date

    value = _string(tool, args, name, 10)
    if value is None:
        return None
    try:
        return parse_date(value)
    except ValueError:
        raise _bad(tool, f"{name} must be a YYYY-MM-DD date, got {_shown(value)}") from None


def _strings(tool: str, args: Mapping[str, Any], name: str, most: int, limit: int) -> list[str]:
    value = args.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(tool, f"{name} must be a list of strings, got {_shown(value)}")
    if len(value) > most:
        raise _bad(tool, f"{name} holds {len(value)} items; the limit is {most}")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _bad(tool, f"each of {name} must be a non-empty string, got {_shown(item)}")
        if len(item) > limit:
            raise _bad(tool, f"an item of {name} is {len(item)} characters; the limit is {limit}")
    return [item.strip() for item in value]


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@contextlib.contextmanager
def _opened_folder(folder: Path, root: Path) -> Iterator[tuple[Path, int]]:
    """`folder` opened as a directory, with the real path of what was opened; refused unless
    that lies inside `root`."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        where = _fd_path(fd, folder)
        if where is None or not within(where, root):
            raise _bad("remember", f"folder {_shown(str(folder))} leads outside the corpus root")
        yield where, fd
    finally:
        os.close(fd)


def _fd_path(fd: int, folder: Path) -> Path | None:
    """The real path of the directory open as `fd`: from the descriptor itself where the
    system tells it (Linux, macOS), else `folder` resolved, when it is the same directory."""
    with contextlib.suppress(OSError):
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    try:
        import fcntl

        raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), bytes(1024))
        return Path(os.fsdecode(raw.split(b"\0", 1)[0]))
    except (ImportError, OSError):
        pass
    real = _real(folder)
    opened, named = os.fstat(fd), os.stat(real)
    return real if (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino) else None


def _why(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "the disk is full; free some space and retry"
    return err.strerror or str(err)


def slug(text: str) -> str:
    """A file name stem from a title: ASCII lowercase letters, digits and single hyphens."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return stem[:MAX_NAME_CHARS].rstrip("-") or "note"


# --- schemas ---------------------------------------------------------------------------------

_WHEN = "A date (YYYY-MM-DD, start of that day UTC) or an ISO 8601 time (naive = UTC)."
_DATE_OR_TIME: dict[str, Any] = {"type": "string", "maxLength": 64}


@dataclass(frozen=True)
class ToolSpec:
    """One tool as an MCP client lists it."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    idempotent: bool


def _object(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


# --- the tools -------------------------------------------------------------------------------


class Tools:
    """The tools over one open `Memory`: the store stays open and warm for the server's life.

    `call` checks the arguments, runs the call and returns a `Reply`; it never raises for a bad
    call, so the server keeps serving. Calls are not thread-safe: the server runs one at a time.
    """

    def __init__(
        self,
        memory: Memory,
        roots: Sequence[str | os.PathLike[str]] = (),
        *,
        mode: str = "strict",
        judge: bool = False,
    ) -> None:
        self.memory = memory
        self.mode = mode
        self.judge = judge
        resolved: list[Path] = []
        for root in roots:
            real = _real(Path(root))
            if not real.is_dir():
                raise UsageError(f"recall serve: --corpus {root} is not a folder")
            if real not in resolved:
                resolved.append(real)
        self.roots: tuple[Path, ...] = tuple(resolved)
        self._specs = self.specs()

    # The list an MCP client sees. `index` and `remember` need a corpus root to work in.
    def specs(self) -> list[ToolSpec]:
        search_props: dict[str, Any] = {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "The question, in natural language; identifiers verbatim.",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_K,
                "default": 5,
                "description": "How many notes to judge (default 5).",
            },
            "as_of": {
                **_DATE_OR_TIME,
                "description": "Judge validity windows at this date or time instead of now. "
                + _WHEN,
            },
            "known_as_of": {
                **_DATE_OR_TIME,
                "description": "Answer from what had been indexed by this time only (notes "
                "indexed later are not_yet_known). " + _WHEN,
            },
        }
        if self.judge:
            search_props["entail"] = {
                "type": "boolean",
                "default": False,
                "description": "Also ask the entailment judge whether each ok hit answers the "
                "question; those that do not become not_entailed.",
            }
        specs = [
            ToolSpec(
                "search",
                "Search memory",
                "Search the memory (markdown notes) and get a judgment, not a ranked list: hits "
                "(ok first) with verdict, calibrated confidence (0.5 at the threshold), text, "
                "provenance (file, lines) and validity; abstained and reason; trust_state. "
                + _VERDICTS
                + " "
                + _ABSTAIN
                + " "
                + _ERRORS,
                _object(search_props, ["query"]),
                read_only=True,
                idempotent=True,
            ),
            ToolSpec(
                "explain",
                "Explain a verdict",
                "Explain why one note gets its verdict for a query: its supersedes claims out "
                "and in (resolved, dangling or ambiguous), the supersession chain, its validity "
                "window against now, its best passage's cosine against the threshold, and its "
                "rank in the dense and lexical legs. Diagnostic only: it never makes a hit "
                "usable; act only on ok hits from search.",
                _object(
                    {
                        "query": search_props["query"],
                        "file": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_PATH_CHARS,
                            "description": "The note as search shows it (provenance.file), or "
                            "a path inside a corpus root.",
                        },
                        "as_of": search_props["as_of"],
                        "known_as_of": search_props["known_as_of"],
                    },
                    ["query", "file"],
                ),
                read_only=True,
                idempotent=True,
            ),
            ToolSpec(
                "stats",
                "Memory summary",
                "Summarise the memory: notes, chunks, embedder, when it was last indexed, "
                "supersedes edges (resolved, dangling, ambiguous), metadata errors, the "
                "calibration in use, the trust mode and the corpus roots.",
                _object({}),
                read_only=True,
                idempotent=True,
            ),
        ]
        if self.roots:
            specs += [
                ToolSpec(
                    "lint",
                    "Check the notes' declarations",
                    "Check the notes on disk (every corpus root) for broken declarations: "
                    "dangling, self-referencing, cyclic or ambiguous supersedes edges, malformed "
                    "dates, empty windows, unreadable files (errors), and versioned siblings or "
                    "prose that narrates a replacement with no declared edge (warnings). Each "
                    f"finding has a rule code, file, line, message and a suggested fix; at most "
                    f"{MAX_LINT_FINDINGS} are returned (errors first). Reads files only.",
                    _object({}),
                    read_only=True,
                    idempotent=True,
                ),
                ToolSpec(
                    "index",
                    "Index notes",
                    "Bring the memory up to date with the notes on disk: incremental (unchanged "
                    "notes are not re-read), one transaction. paths name corpus roots or files "
                    "and folders inside them (relative to a root, or absolute); a path inside "
                    "a root re-indexes the root that holds it, so every note keeps one "
                    "identity. Default: every root. Returns what was added, updated, removed, "
                    "refused (with reasons) and skipped.",
                    _object(
                        {
                            "paths": {
                                "type": "array",
                                "items": {
                                    "type": "string",
                                    "minLength": 1,
                                    "maxLength": MAX_PATH_CHARS,
                                },
                                "maxItems": MAX_PATHS,
                                "description": "Paths inside the corpus roots (default: all).",
                            }
                        }
                    ),
                    read_only=False,
                    idempotent=True,
                ),
                ToolSpec(
                    "remember",
                    "Remember a note",
                    "Write a NEW markdown note into memory and index it; existing notes are "
                    "never changed or overwritten. To correct or update something remembered, "
                    "name the outdated note(s) in supersedes (as search shows them, e.g. "
                    "'rate-limits-v1.md'): search then serves the new note and marks the old "
                    "one superseded. valid_from / valid_until bound when the fact holds. "
                    "Returns the note's path, its supersedes claims (resolved, or dangling when "
                    "no note matches) and the index report.",
                    _object(
                        {
                            "title": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_TITLE_CHARS,
                                "description": "The note's heading; also its file name unless "
                                "name is given.",
                            },
                            "text": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_TEXT_CHARS,
                                "description": "The note's body (markdown).",
                            },
                            "name": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_TITLE_CHARS,
                                "description": "File name for the note (sanitised to "
                                "lowercase letters, digits and hyphens; a number is added when "
                                "taken).",
                            },
                            "supersedes": {
                                "type": "array",
                                "items": {
                                    "type": "string",
                                    "minLength": 1,
                                    "maxLength": MAX_REFERENCE_CHARS,
                                },
                                "maxItems": MAX_REFERENCES,
                                "description": "Notes this one replaces, by file name.",
                            },
                            "valid_from": {
                                "type": "string",
                                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                                "description": "First day the note holds (YYYY-MM-DD, UTC).",
                            },
                            "valid_until": {
                                "type": "string",
                                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                                "description": "Last day the note holds (YYYY-MM-DD, UTC).",
                            },
                            "folder": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": 200,
                                "description": "Subfolder of the first corpus root to write "
                                "into (letters, digits, '.', '_', '-'; '/' between parts).",
                            },
                        },
                        ["title", "text"],
                    ),
                    read_only=False,
                    idempotent=False,
                ),
            ]
        return specs

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Reply:
        """Run one tool; every failure becomes an error `Reply` with a code."""
        try:
            spec = next((s for s in self._specs if s.name == name), None)
            if spec is None:
                known = ", ".join(s.name for s in self._specs)
                raise _bad(name, f"unknown tool; the tools are {known}")
            args = dict(arguments or {})
            allowed = spec.input_schema["properties"]
            unknown = sorted(set(args) - set(allowed))
            if unknown:
                accepted = ", ".join(allowed) or "no arguments"
                raise _bad(name, f"unknown argument(s) {', '.join(unknown)}; it takes {accepted}")
            handler = getattr(self, f"_{name}")
            data: dict[str, Any] = handler(args)
            return Reply(data)
        except Exception as err:
            code = _error_code(err)
            if code == "INTERNAL_ERROR":
                traceback.print_exc(file=sys.stderr)
            message = err.message if isinstance(err, TrustRefusal) else str(err)
            if code == "INTERNAL_ERROR":
                message = f"unexpected {type(err).__name__}: {err}"
            error = {
                "tool": name,
                "code": code,
                "refused": isinstance(err, TrustRefusal),
                "message": message,
                "next": self._next_step(code),
            }
            return Reply({"error": error}, is_error=True)

    def _next_step(self, code: str) -> str | None:
        """What the agent should do next; without --corpus there is no index tool to call."""
        if code == "INDEX_NOT_READY" and not self.roots:
            return (
                "this server indexes nothing (it was started without --corpus); the store's "
                "owner must run 'recall index PATH'. Do not act on remembered facts until then"
            )
        if code in ("CALIBRATION_MISSING", "CALIBRATION_STALE") and not self.roots:
            return (
                "the store's owner must run 'recall index PATH' or 'recall calibrate --auto'. "
                "Do not act on remembered facts until then"
            )
        return NEXT_STEP.get(code)

    # --- handlers (each returns a JSON-ready dict) ---

    def _search(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query = _required("search", args, "query", MAX_QUERY_CHARS)
        k = args.get("k", 5)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise _bad("search", f"k must be an integer from 1 to {MAX_K}, got {_shown(k)}")
        entail = args.get("entail", False)
        if not isinstance(entail, bool):
            raise _bad("search", f"entail must be true or false, got {_shown(entail)}")
        result = self.memory.search(
            query,
            k=k,
            now=_instant("search", args, "as_of"),
            known_as_of=_instant("search", args, "known_as_of"),
            mode=self.mode,
            entail=entail,
        )
        return result.to_dict()

    def _explain(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query = _required("explain", args, "query", MAX_QUERY_CHARS)
        file = _required("explain", args, "file", MAX_PATH_CHARS).strip()
        now = _instant("explain", args, "as_of")
        known = _instant("explain", args, "known_as_of")
        path = self._confined("explain", "file", file)
        if path.is_absolute():
            # An absolute path inside a root: the store knows the note by its path in the root.
            root = next(r for r in self.roots if within(_real(path), r))
            file = _real(path).relative_to(root).as_posix()
        return self.memory.explain(query, file, now=now, known_as_of=known)

    def _stats(self, args: Mapping[str, Any]) -> dict[str, Any]:
        data: dict[str, Any] = {"store": self.memory.stats().to_dict()}
        calibration, why = self.memory.calibration()
        data["calibration"] = (
            None
            if calibration is None
            else {
                "id": calibration.id,
                "certified": calibration.certified,
                "threshold": calibration.threshold,
            }
        )
        data["calibration_note"] = why
        data["mode"] = self.mode
        data["entailment_judge"] = self.judge
        data["corpus_roots"] = [str(r) for r in self.roots]
        return data

    def _lint(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from recall.authoring.lint import lint

        setting = self.memory.stats().vocabularies if self.memory.exists else "all"
        report = lint([str(r) for r in self.roots], vocabularies=setting).to_dict()
        findings = sorted(report["findings"], key=lambda f: f["severity"] != "error")
        report["findings"] = findings[:MAX_LINT_FINDINGS]
        report["truncated"] = max(0, len(findings) - MAX_LINT_FINDINGS)
        return report

    def _index(self, args: Mapping[str, Any]) -> dict[str, Any]:
        paths = _strings("index", args, "paths", MAX_PATHS, MAX_PATH_CHARS)
        if "paths" in args and not paths:
            raise _bad("index", "paths is empty; leave it out to index every corpus root")
        roots = [self._root_of("index", p) for p in paths] if paths else list(self.roots)
        chosen = [r for r in self.roots if r in roots]
        report = self.memory.index([str(r) for r in chosen])
        return {"roots": [str(r) for r in chosen], **report.to_dict()}

    def _remember(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from recall.frontmatter import parse

        title = " ".join(_required("remember", args, "title", MAX_TITLE_CHARS).split())
        text = _required("remember", args, "text", MAX_TEXT_CHARS)
        if _BAD_TEXT.search(text):
            raise _bad("remember", "text holds control characters (NUL and the like)")
        name = _string("remember", args, "name", MAX_TITLE_CHARS)
        references = _strings("remember", args, "supersedes", MAX_REFERENCES, MAX_REFERENCE_CHARS)
        for ref in references:
            if _CONTROL.search(ref) or '"' in ref:
                raise _bad("remember", f"supersedes {_shown(ref)} holds a quote or a line break")
        valid_from = _date("remember", args, "valid_from")
        valid_until = _date("remember", args, "valid_until")
        if valid_from and valid_until and valid_from > valid_until:
            raise _bad(
                "remember",
                f"valid_from {valid_from} is after valid_until {valid_until}: the note would "
                "never hold",
            )
        if not self.roots:
            raise _bad("remember", "no corpus root is configured; start recall serve --corpus")
        root = self.roots[0]
        folder = self._folder(_string("remember", args, "folder", 200), root)

        lines = []
        if references:
            lines.append("supersedes:")
            lines += [f'  - "{ref}"' for ref in references]
        if valid_from:
            lines.append(f"valid_from: {valid_from.isoformat()}")
        if valid_until:
            lines.append(f"valid_until: {valid_until.isoformat()}")
        block = "---\n" + "".join(f"{line}\n" for line in lines) + "---\n" if lines else ""
        content = f"{block}# {title}\n\n{text.strip()}\n"
        # The note must read back exactly as declared (SPEC §2): never write what the indexer
        # would read differently.
        fm = parse(content)
        if fm.errors or list(fm.supersedes) != references:
            raise _bad("remember", "the frontmatter would not read back as given; simplify it")
        self._own_words(content, references)

        folder.mkdir(parents=True, exist_ok=True)
        path = self._write_new(folder, root, slug(name or title), content)
        try:
            report = self.memory.index([str(root)])
        except BaseException:
            # The note and the memory stay in step: an index run that failed keeps nothing.
            path.unlink()
            raise
        rel = path.relative_to(root).as_posix()
        data: dict[str, Any] = {"path": str(path), "file": rel, "key": path.stem}
        claims: list[dict[str, Any]] = []
        if references:
            try:
                explained = self.memory.explain(title, rel)
                claims = [
                    {k: c[k] for k in ("reference", "resolution", "targets")}
                    for c in explained["claims_out"]
                ]
            except RecallError:
                claims = []
        data["supersedes"] = claims
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
        data["warnings"] = warnings
        data["index"] = report.to_dict()
        return data

    def _own_words(self, content: str, references: Sequence[str]) -> None:
        """Refuse a text whose own words would declare what the arguments do not: a status
        section, "Supersedes …" or "Superseded by …" line, or a retiring status in any
        vocabulary the store reads. An agent (or text it copied) must not retire notes, or
        this one, without saying so in `supersedes` / `valid_until`, where the reply shows it.
        A forward edge to a note `supersedes` already names is allowed."""
        from recall.vocabularies import declare, in_force

        read = in_force(self.memory.stats().vocabularies if self.memory.exists else "all")
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
                f"that {_shown(edge.reference)} replaces this note"
                if edge.reversed
                else f"that this note supersedes {_shown(edge.reference)}"
            )
            raise _bad(
                "remember",
                f"the text says {what} ({_shown(edge.origin.text)}); name the notes it replaces "
                "in supersedes, or reword the text so that it does not declare it",
            )
        retired = said.active_retirement(read)
        if retired is not None and retired.origin.vocabulary != "frontmatter":
            raise _bad(
                "remember",
                f"the text gives the note the status {retired.state!r} "
                f"({_shown(retired.origin.text)}): a remembered note is in force; leave the "
                "status out, or pass valid_until for a note that stops holding",
            )

    # --- paths ---

    def _confined(self, tool: str, name: str, value: str) -> Path:
        """`value` as a path that cannot leave the corpus roots: no `..`, and an absolute path
        (symlinks resolved) must lie inside a root."""
        if "\x00" in value:
            raise _bad(tool, f"{name} holds a NUL character")
        path = Path(value)
        if ".." in path.parts:
            raise _bad(tool, f"{name} {_shown(value)} contains '..'; paths stay in the corpus")
        if path.is_absolute() and not any(within(_real(path), r) for r in self.roots):
            roots = ", ".join(str(r) for r in self.roots) or "none configured"
            raise _bad(tool, f"{name} {_shown(value)} is outside the corpus roots ({roots})")
        return path

    def _root_of(self, tool: str, value: str) -> Path:
        """The corpus root that holds `value` (absolute, or relative to a root)."""
        path = self._confined(tool, "path", value)
        candidates = [path] if path.is_absolute() else [r / path for r in self.roots]
        for candidate in candidates:
            if not os.path.lexists(candidate):
                continue
            real = _real(candidate)
            root = next((r for r in self.roots if within(real, r)), None)
            if root is None:
                raise _bad(tool, f"path {_shown(value)} leads outside the corpus roots")
            return root
        raise _bad(tool, f"path {_shown(value)} does not exist in any corpus root")

    def _folder(self, value: str | None, root: Path) -> Path:
        if value is None:
            return root
        parts = [p for p in value.strip().replace("\\", "/").split("/") if p]
        if value.strip().startswith("/") or not parts or len(parts) > MAX_FOLDER_PARTS:
            raise _bad("remember", f"folder {_shown(value)} must be a relative folder name")
        for part in parts:
            if not _FOLDER_PART.fullmatch(part) or part == "..":
                raise _bad(
                    "remember",
                    f"folder part {_shown(part)} may hold letters, digits, '.', '_' and '-' and "
                    "must not start with '.' (hidden folders are not indexed)",
                )
        folder = root.joinpath(*parts)
        if not within(_real(folder), root):
            raise _bad("remember", f"folder {_shown(value)} leads outside the corpus root")
        return folder

    def _taken_keys(self) -> set[str]:
        """Resolution keys of every note under the roots (SPEC §2.3): a new note must not share
        one, or a later `supersedes` naming it would be ambiguous."""
        keys: set[str] = set()
        for root in self.roots:
            for _, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                keys.update(
                    _core.resolution_key(f).casefold()
                    for f in files
                    if f.lower().endswith(_NOTE_SUFFIXES)
                )
        return keys

    def _write_new(self, folder: Path, root: Path, stem: str, content: str) -> Path:
        """Write `content` as a new note in `folder` under a free name, whole or not at all.
        The folder is opened once and checked to lie inside `root` as opened (a folder swapped
        for a symlink after any earlier check leads nowhere else), and the note is written
        beside it under a hidden temporary name, then linked to its name, which never
        overwrites: a full disk or a kill leaves no half-written note."""
        taken = self._taken_keys()
        with _opened_folder(folder, root) as (where, fd):
            data = content.encode("utf-8")
            sweep(where, f"{stem}.md", dir_fd=fd)
            temp = temporary(f"{stem}.md")
            try:
                out = os.open(
                    temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644, dir_fd=fd
                )
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
                raise _bad(
                    "remember", f"cannot write the note in {_shown(str(where))}: {_why(err)}"
                ) from err
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=fd)
        raise _bad(
            "remember",
            f"no free file name for {stem!r} (tried {MAX_NAME_TRIES}); pass another name",
        )


def _tool_list(tools: Tools) -> list[Any]:
    import mcp.types as types

    return [
        types.Tool(
            name=s.name,
            title=s.title,
            description=s.description,
            input_schema=s.input_schema,
            annotations=types.ToolAnnotations(
                title=s.title,
                read_only_hint=s.read_only,
                destructive_hint=False,
                idempotent_hint=s.idempotent,
                open_world_hint=False,
            ),
        )
        for s in tools.specs()
    ]


def serve(
    db: str,
    corpus: Sequence[str | os.PathLike[str]] = (),
    *,
    mode: str | None = None,
    judge: str | os.PathLike[str] | None = None,
    watch: bool = False,
) -> None:
    """Serve the tools over stdio until the client closes the connection (SPEC §8.3).

    `watch` keeps the index following the corpus roots (recall.watch) on a thread with its own
    store handle: searches are answered from the last committed generation meanwhile.

    The store opens once and stays open; strict mode unless `mode` (or $RECALL_TRUST_MODE)
    says development. Raises `UsageError` with `INSTALL_HINT` when the SDK is not installed.
    """
    try:
        import anyio
        import anyio.to_thread
        import mcp.types as types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
        from mcp.shared.exceptions import MCPError
    except ImportError as err:
        raise UsageError(INSTALL_HINT) from err

    import recall
    from recall.judge import ENV_JUDGE

    chosen = mode or os.environ.get("RECALL_TRUST_MODE") or "strict"
    if chosen not in ("strict", "development"):
        raise UsageError(f"recall serve: unknown mode {chosen!r}; use strict or development")
    has_judge = judge is not None or bool(os.environ.get(ENV_JUDGE, "").strip())
    if watch and not corpus:
        raise UsageError("recall serve: --watch needs at least one --corpus folder to follow")
    memory = recall.open(db, judge=judge)
    stop = threading.Event()
    try:
        if watch:
            from recall.watch import Batch
            from recall.watch import watch as follow

            def logged(batch: Batch) -> None:
                if batch.error is not None:
                    print(f"recall serve --watch: {batch.error}", file=sys.stderr, flush=True)

            try:
                import watchfiles  # noqa: F401
            except ImportError as err:
                raise UsageError(INSTALL_HINT) from err

            def following() -> None:
                try:
                    follow(db, corpus, on_batch=logged, stop=stop)
                except Exception as err:  # noqa: BLE001 - the server keeps serving searches
                    print(f"recall serve --watch stopped: {err}", file=sys.stderr, flush=True)

            threading.Thread(target=following, name="recall-watch", daemon=True).start()
        tools = Tools(memory, corpus, mode=chosen, judge=has_judge)
        if memory.exists and memory.stats().embedder is not None:
            # Warm: the embedder loads now, not inside the first call. A model that will not
            # load is reported by the calls that need it.
            with contextlib.suppress(RecallError):
                _ = memory.embedder
        listed = _tool_list(tools)
        names = [t.name for t in listed]
        lock = anyio.Lock()

        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
            return types.ListToolsResult(tools=listed)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
            if params.name not in names:
                raise MCPError(
                    types.INVALID_PARAMS,
                    f"recall: unknown tool {params.name!r}; the tools are {', '.join(names)}",
                )
            # One call at a time on the one store, off the event loop so the connection
            # keeps answering (pings, cancellations) during a long index run.
            async with lock:
                reply = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=reply.text)],
                structured_content=reply.data,
                is_error=reply.is_error,
            )

        server: Server[Any] = Server(
            "recall",
            version=recall.__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
    finally:
        stop.set()
        memory.close()
