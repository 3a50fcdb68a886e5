"""What a client is told: the server's instructions and each tool as it is listed.

Owns: the instructions a model reads on connecting (the verdicts, abstention, the error codes
and what each asks of it) and `ToolSpec`s, each tool's name, title, description written for a
model, input schema (the bounds from `arguments`) and hints, in the order a client lists them:
`search`, `explain` and `stats` always, `lint`, `index`, `remember` and `declare` where the
server has a corpus to work in, and `entail` on `search` where an entailment judge is
available (recall's own, unless the install lacks it). Does not own: checking the arguments a
call sends (`arguments`, `paths`) or running it (`tools`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recall.mcp_server.arguments import (
    MAX_K,
    MAX_LINT_FINDINGS,
    MAX_PATH_CHARS,
    MAX_PATHS,
    MAX_QUERY_CHARS,
    MAX_REFERENCE_CHARS,
    MAX_REFERENCES,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
)
from recall.mcp_server.candidates import MAX_CANDIDATES

__all__ = ["INSTRUCTIONS", "ToolSpec", "tool_specs"]

_VERDICTS = (
    "Each hit has a verdict. ok: current, relevant and trusted; the only verdict you may act "
    "on. superseded: replaced by the note named in validity.superseded_by (served in its place "
    "when it qualifies); do not use it. expired / not_yet_valid: outside its validity window "
    "(valid_until / valid_from) at the judged time. low_confidence: below the calibrated "
    "relevance threshold, probably not about the question. invalid_metadata: malformed or empty "
    "validity window. ambiguous_supersession: a supersedes reference names several notes, so "
    "which one is current is unknown. not_yet_known: indexed after known_as_of. not_entailed: "
    "the passage does not answer the question (it lacks the asked value, named in lacks; a "
    "retired note is the clearly better match: the question is about it; or the judge says "
    "so). source_changed / source_missing: the note's file was edited, moved or deleted since "
    "it was indexed, so the passage may no longer be true; call index before relying on it. "
    "unverified: no calibration "
    "(development mode), nothing can be trusted. Only ok hits may be acted on. A hit whose "
    "validity.possibly_superseded_by names another ok hit may be an outdated value that nobody "
    "declared replaced (the result's warnings say why): prefer the newer, and if you wrote the "
    "newer with remember and it does replace the older, call declare."
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
    "a memory, call remember with supersedes naming the note it replaces; never edit notes. "
    "remember's reply lists candidates, notes the new one may replace: call declare for those "
    "it does replace, and only those."
)

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


def _references(description: str) -> dict[str, Any]:
    """A `supersedes` argument: file names of the notes a note replaces."""
    return {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": MAX_REFERENCE_CHARS},
        "maxItems": MAX_REFERENCES,
        "description": description,
    }


def tool_specs(*, judge: bool, corpus: bool) -> list[ToolSpec]:
    """The list an MCP client sees: `search` takes `entail` only with a `judge`; `lint`,
    `index` and `remember` need a `corpus` root to work in."""
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
            "description": "Judge validity windows at this date or time instead of now. " + _WHEN,
        },
        "known_as_of": {
            **_DATE_OR_TIME,
            "description": "Answer from what had been indexed by this time only (notes "
            "indexed later are not_yet_known). " + _WHEN,
        },
    }
    if judge:
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
    if corpus:
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
                "no note matches), the index report, and candidates: notes the new one may "
                f"replace (at most {MAX_CANDIDATES}, best first), each with its note name, "
                "file, relation and evidence (a closure phrase, a versioned name, the same "
                "title, shared terms, closeness). A candidate is only a suggestion: when the "
                "new note states a newer value of the same fact (or reverses it), call "
                "declare naming it; leave candidates that are merely related. dry_run lists "
                "the candidates and writes nothing, so supersedes can be given at once.",
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
                        "supersedes": _references("Notes this one replaces, by file name."),
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
                        "dry_run": {
                            "type": "boolean",
                            "default": False,
                            "description": "List the candidates the note may replace and "
                            "write nothing.",
                        },
                    },
                    ["title", "text"],
                ),
                read_only=False,
                idempotent=False,
            ),
            ToolSpec(
                "declare",
                "Declare what a note replaces",
                "Add supersedes to a note that remember wrote (file as remember returned "
                "it), then index: search serves that note and marks each named note "
                "superseded. Only the notes named are declared, and only a note remember "
                "wrote and nobody edited since can be changed; anything else is refused "
                "(write a new note with remember instead). Name a candidate from "
                "remember's reply only when the note truly replaces it: the same fact with "
                "a newer value, or a reversed decision. Returns the supersedes claims "
                "(resolved, dangling or ambiguous), warnings and the index report.",
                _object(
                    {
                        "file": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_PATH_CHARS,
                            "description": "The note, as remember returned it (file).",
                        },
                        "supersedes": {
                            **_references(
                                "Notes this one replaces, by file name (a candidate's note)."
                            ),
                            "minItems": 1,
                        },
                    },
                    ["file", "supersedes"],
                ),
                read_only=False,
                idempotent=True,
            ),
        ]
    return specs
