"""The tools over one open memory: `Tools`, which checks a call and runs it.

Owns: `Tools` (the store open and warm for the server's life, the corpus roots resolved once)
and each call's path through it: the tool and its arguments checked against the listed specs,
then the handler (`search`, `explain`, `stats`, `lint`, `index`; `remember` and `declare` hand
over to their modules), its result returned as a `Reply` and any failure as an error `Reply`.
Plain Python: usable and testable without the MCP SDK. Does not own: the specs (`specs`), the
checks of one argument (`arguments`) or one path (`paths`), error codes (`replies`), writing a
note (`remember`, `declare`), or search, verdicts and indexing themselves (`recall.api` and the
Rust core).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import UsageError
from recall.mcp_server.arguments import (
    MAX_K,
    MAX_LINT_FINDINGS,
    MAX_PATH_CHARS,
    MAX_PATHS,
    MAX_QUERY_CHARS,
    bad,
    flag,
    instant,
    required,
    shown,
    strings,
)
from recall.mcp_server.declare import declare
from recall.mcp_server.paths import confined, real, root_of
from recall.mcp_server.remember import remember
from recall.mcp_server.replies import Reply, failed
from recall.mcp_server.specs import ToolSpec, tool_specs
from recall.walk import within

if TYPE_CHECKING:
    from recall.api import Memory
    from recall.call_log import CallLog

__all__ = ["Tools"]


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
        log: CallLog | None = None,
    ) -> None:
        self.memory = memory
        #: Where each call is logged (`recall serve --log`), or None.
        self.log = log
        self.mode = mode
        self.judge = judge
        resolved: list[Path] = []
        for root in roots:
            where = real(Path(root))
            if not where.is_dir():
                raise UsageError(f"recall serve: --corpus {root} is not a folder")
            if where not in resolved:
                resolved.append(where)
        self.roots: tuple[Path, ...] = tuple(resolved)
        self._specs = self.specs()

    def specs(self) -> list[ToolSpec]:
        """The list an MCP client sees, as `specs.tool_specs` makes it for this server."""
        return tool_specs(judge=self.judge, corpus=bool(self.roots))

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Reply:
        """Run one tool; every failure becomes an error `Reply` with a code. With a log, the
        call and what it answered are appended to it."""
        reply = self._call(name, arguments)
        if self.log is not None:
            given = arguments if isinstance(arguments, Mapping) else {}
            self.log.append(name, given, reply.data, reply.is_error)
        return reply

    def _call(self, name: str, arguments: Mapping[str, Any] | None) -> Reply:
        try:
            spec = next((s for s in self._specs if s.name == name), None)
            if spec is None:
                known = ", ".join(s.name for s in self._specs)
                raise bad(name, f"unknown tool; the tools are {known}")
            args = dict(arguments or {})
            allowed = spec.input_schema["properties"]
            unknown = sorted(set(args) - set(allowed))
            if unknown:
                accepted = ", ".join(allowed) or "no arguments"
                raise bad(name, f"unknown argument(s) {', '.join(unknown)}; it takes {accepted}")
            handler = getattr(self, f"_{name}")
            data: dict[str, Any] = handler(args)
            return Reply(data)
        except Exception as err:
            return failed(name, err, indexes=bool(self.roots))

    # --- handlers (each returns a JSON-ready dict) ---

    def _search(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query = required("search", args, "query", MAX_QUERY_CHARS)
        k = args.get("k", 5)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise bad("search", f"k must be an integer from 1 to {MAX_K}, got {shown(k)}")
        entail = flag("search", args, "entail")
        result = self.memory.search(
            query,
            k=k,
            now=instant("search", args, "as_of"),
            known_as_of=instant("search", args, "known_as_of"),
            mode=self.mode,
            entail=entail,
        )
        return result.to_dict()

    def _explain(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query = required("explain", args, "query", MAX_QUERY_CHARS)
        file = required("explain", args, "file", MAX_PATH_CHARS).strip()
        now = instant("explain", args, "as_of")
        known = instant("explain", args, "known_as_of")
        path = confined("explain", "file", file, self.roots)
        if path.is_absolute():
            # An absolute path inside a root: the store knows the note by its path in the root.
            root = next(r for r in self.roots if within(real(path), r))
            file = real(path).relative_to(root).as_posix()
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
        paths = strings("index", args, "paths", MAX_PATHS, MAX_PATH_CHARS)
        if "paths" in args and not paths:
            raise bad("index", "paths is empty; leave it out to index every corpus root")
        roots = [root_of("index", p, self.roots) for p in paths] if paths else list(self.roots)
        chosen = [r for r in self.roots if r in roots]
        report = self.memory.index([str(r) for r in chosen])
        return {"roots": [str(r) for r in chosen], **report.to_dict()}

    def _remember(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return remember(self.memory, self.roots, args)

    def _declare(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return declare(self.memory, self.roots, args)
