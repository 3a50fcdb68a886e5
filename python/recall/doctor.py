"""`recall doctor` (SPEC §11): is this store file sound, and if not, the way out.

Owns: gathering the core's checks (SQLite's integrity, schema, vectors, their codes and the
lexical index against the chunk rows) with the calibration records', a plain verdict, and the
advice.
Does not own: the checks on the file itself (the Rust core) or printing (the CLI).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recall.calibration import history_key, load_history, load_record, meta_key

if TYPE_CHECKING:
    from collections.abc import Sequence

    from recall.rows import ExportedDocument
    from recall.store import Store
    from recall.vocabularies import Declarations

__all__ = ["Check", "DoctorReport", "diagnose", "unopenable"]


@dataclass(frozen=True)
class Check:
    """One check: `status` is `ok`, `warning` (works, but not as written) or `damaged`."""

    name: str
    status: str
    detail: str


@dataclass(frozen=True)
class DoctorReport:
    path: str
    checks: list[Check] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """`healthy`, `usable` (warnings only) or `damaged`."""
        statuses = {c.status for c in self.checks}
        if "damaged" in statuses:
            return "damaged"
        return "usable" if "warning" in statuses else "healthy"

    @property
    def advice(self) -> str:
        """What to do next, in commands."""
        if self.verdict != "damaged":
            return "nothing to do" if self.verdict == "healthy" else "see the warnings above"
        damaged = {c.name for c in self.checks if c.status == "damaged"}
        if damaged == {"lexical"}:
            # The chunk rows are whole: the next index run rebuilds the lexical index from them.
            return (
                "rebuild the lexical index from the chunk rows, which are whole:\n  "
                f"recall index NOTES... --db {self.path}"
            )
        if damaged == {"commits"}:
            # The store is whole at an older generation: the next run redoes what was lost.
            return (
                "redo the lost index runs from the notes, which are whole:\n  "
                f"recall index NOTES... --db {self.path}"
            )
        calibration_ok = all(c.status != "damaged" for c in self.checks if c.name == "calibration")
        steps = []
        if calibration_ok:
            steps.append(f"recall calibrate --export calibration.json --db {self.path}")
        steps.append("recall index NOTES... --db NEW.db")
        steps.append(
            "recall calibrate --import calibration.json --db NEW.db"
            if calibration_ok
            else "(the index run calibrates NEW.db from the notes; or import a calibration "
            "exported before, or fit your own: recall calibrate QUERIES --db NEW.db)"
        )
        return (
            "re-index the notes into a new store file (the notes are the source of truth; "
            "keep the damaged file until the new one answers):\n  " + "\n  ".join(steps)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "verdict": self.verdict,
            "checks": [c.__dict__ for c in self.checks],
            "advice": self.advice,
        }


def unopenable(path: str, err: Exception) -> DoctorReport:
    """The report on a store file SQLite cannot open at all (a truncation, a damaged header):
    what its first bytes say, and whether its calibration can still be read from them."""
    return DoctorReport(
        path=path,
        checks=[
            Check("sqlite", "damaged", f"{_header(path)}; opening it failed: {_unreferred(err)}"),
            _salvage(path),
        ],
    )


#: The referral to `recall doctor` an error carries, pointless inside doctor's own report.
_REFERRAL = re.compile(
    r"[:;] [^:;]* (?:is|may be|is probably) damaged[:;] run 'recall doctor .*$", re.DOTALL
)


def _unreferred(err: Exception) -> str:
    return _REFERRAL.sub("", str(err))


def _salvage(path: str, why: str = "the store cannot be read") -> Check:
    """The calibration check of a store SQLite cannot read: a record read from the file's bytes
    can still be exported (`calibrate --export` falls back to it), so it is not lost."""
    from recall.salvage import salvage_calibration

    found = salvage_calibration(path)
    if found is None:
        return Check("calibration", "damaged", f"{why}, and no record can be read from its bytes")
    return Check("calibration", "warning", f"{why}; {found.detail}")


def _header(path: str) -> str:
    """What the file's SQLite header says of it."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as err:
        return f"the file cannot be read ({err.strerror or err})"
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return f"the SQLite header is damaged (the file is {size} bytes)"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    if pages and size < page * pages:
        return (
            f"the file is truncated: {size} bytes, where its header counts {pages} pages of "
            f"{page} bytes ({page * pages} bytes)"
        )
    return f"the file is {size} bytes and its header looks whole"


def diagnose(store: Store, path: str) -> DoctorReport:
    """Every check of the store at `path` (as the user named it), in order."""
    checks = [Check(name, status, detail) for name, status, detail in store.doctor()]
    checks.append(_meta(store))
    checks.append(_declarations(store))
    checks.append(_calibration(store, path))
    checks.append(_roots(store))
    return DoctorReport(path=path, checks=checks)


#: Meta values that are counts or generations: whole numbers.
_COUNTS = ("generation", "lexical_generation", "documents")


def _meta(store: Store) -> Check:
    """SPEC §11: the meta values a search reads mean something. A store whose embedder is
    recorded as `NaN` failed every search with "unknown embedder" while doctor said healthy."""
    from recall.embedders import is_embedder_name
    from recall.instants import parse_stored
    from recall.vocabularies import SETTINGS

    wrong: list[str] = []
    try:
        bound = store.embedder()
        values = {key: store.meta(key) for key in (*_COUNTS, "vocabularies", "last_run_at")}
    except Exception as err:  # noqa: BLE001 - a damaged meta table is what is reported
        return Check("meta", "damaged", f"the store's metadata cannot be read: {_unreferred(err)}")
    if bound is not None and not is_embedder_name(bound[0]):
        wrong.append(f"the embedder is recorded as {bound[0]!r}, which names none")
    for key in _COUNTS:
        raw = values[key]
        if raw is not None and not (raw.isascii() and raw.isdigit()):
            wrong.append(f"{key} is {raw!r}, not a whole number")
    setting = values["vocabularies"]
    if setting is not None and setting not in SETTINGS:
        wrong.append(f"vocabularies is {setting!r}, none of {', '.join(SETTINGS)}")
    last_run = values["last_run_at"]
    if last_run is not None and parse_stored(last_run) is None:
        wrong.append(f"last_run_at is {last_run!r}, not an instant recall writes")
    if wrong:
        return Check("meta", "damaged", "; ".join(wrong))
    return Check("meta", "ok", "every value a search reads means something")


def _declarations(store: Store) -> Check:
    """SPEC §11: the declarations the store holds are the ones its notes make. Each note that
    still holds what was indexed is read again as an index run reads it (with its metadata
    file), and its edge rows, retirement and alias must be what that reading gives: an edge
    row no note declares (forged, or an empty key left by damage) changes answers, and so does
    a declaration the store lost."""
    from recall.indexing import DECLARATIONS_KEY, DECLARATIONS_VERSION, declarations_now

    try:
        version = store.meta(DECLARATIONS_KEY)
    except Exception as err:  # noqa: BLE001 - a damaged meta table is what is reported
        return Check("declarations", "damaged", f"cannot be read: {_unreferred(err)}")
    if version not in (None, DECLARATIONS_VERSION):
        return Check(
            "declarations",
            "warning",
            "not compared with the notes: an earlier reader read them, and the next index run "
            "reads them again",
        )
    listings: dict[str, tuple[dict[str, str], dict[str, tuple[str, str]]] | None] = {}
    compared = changed = 0
    wrong: list[str] = []
    after = 0
    try:
        while page := store.export(after, 512, bodies=False):
            after = page[-1]["id"]
            for doc in page:
                source, rel = doc["source"], doc["path"]
                if source not in listings:
                    listings[source] = _listing(source)
                found = listings[source]
                now = None
                if found is not None and rel in found[0]:
                    file, side = found[0][rel], found[1].get(rel)
                    now = declarations_now(source, rel, file, side, doc["content_hash"])
                if now is None:
                    changed += 1
                    continue
                compared += 1
                if _held(doc) != _made(now):
                    wrong.append(rel)
    except Exception as err:  # noqa: BLE001 - rows that cannot be read are the finding
        return Check("declarations", "damaged", f"cannot be read: {_unreferred(err)}")
    unread = f"; {changed} notes changed or gone since they were indexed, not compared"
    if wrong:
        shown = ", ".join(wrong[:5]) + (", …" if len(wrong) > 5 else "")
        return Check(
            "declarations",
            "damaged",
            f"{len(wrong)} notes whose stored declarations are not the ones they make "
            f"({shown}): the store holds an edge or retirement no note declares, or lost one"
            + (unread if changed else ""),
        )
    return Check(
        "declarations",
        "ok",
        f"{compared} notes read again declare what the store holds" + (unread if changed else ""),
    )


def _listing(source: str) -> tuple[dict[str, str], dict[str, tuple[str, str]]] | None:
    """The notes (relative path -> path) and their metadata files under the root `source`, as
    an index run lists them; None when the root is not a folder here."""
    from pathlib import Path

    from recall.walk import walk

    if not os.path.isdir(source):
        return None
    listing = walk(Path(source))
    return dict(listing.paths()), listing.sidecars


def _held(doc: ExportedDocument) -> tuple[object, ...]:
    """A stored document's declarations, in a form to compare."""
    return _said(doc["edges"], doc.get("retired"), doc.get("alias"))


def _made(decl: Declarations) -> tuple[object, ...]:
    """What a note's reading declares, in the same form."""
    from recall.indexing import edge_rows, retired_row

    return _said(edge_rows(decl), retired_row(decl), decl.alias)


def _said(
    edges: Sequence[Sequence[object]], retired: Sequence[object] | None, alias: str | None
) -> tuple[object, ...]:
    rows = sorted(
        (
            (str(e[0]), str(e[1]), bool(e[2]), str(e[3]), e[4], str(e[5] or ""), bool(e[6]), e[7])
            for e in edges
        ),
        key=repr,
    )
    gone = None
    if retired is not None:
        r = retired
        gone = (r[0], r[1], str(r[2] or ""), r[3], str(r[4] or ""), bool(r[5]))
    return (rows, gone, alias)


def _roots(store: Store) -> Check:
    """SPEC §11: documents from a root that no longer exists are kept, and said so."""
    from recall.walk import missing_roots

    gone = missing_roots(store)
    if not gone:
        return Check("roots", "ok", "every folder the notes were indexed from exists")
    return Check("roots", "warning", "; ".join(missing_root_advice(s, n) for s, n in gone))


def missing_root_advice(root: str, documents: int) -> str:
    """What to say of a root that no longer exists, and the way out."""
    return (
        f"{documents} document{'s' if documents != 1 else ''} from {root}, which no longer "
        f"exists here, are kept; if the notes moved, index their new folder and drop these "
        f"with 'recall forget {root} --apply'"
    )


def _calibration(store: Store, path: str) -> Check:
    try:
        bound = store.embedder()
    except Exception as err:  # noqa: BLE001 - a damaged meta table is what is reported
        if store.shared:
            return Check("calibration", "damaged", f"the store's metadata cannot be read: {err}")
        return _salvage(path, "the store's metadata cannot be read")
    if bound is None:
        return Check("calibration", "ok", "nothing indexed, nothing to calibrate")
    fingerprint = bound[2]
    raw = store.meta(meta_key(fingerprint))
    record, why = load_record(raw, fingerprint)
    entries = load_history(store.meta(history_key(fingerprint)), fingerprint, record)
    if record is None and raw is not None:
        return Check("calibration", "damaged", f"the record in use cannot be read: {why}")
    if record is None:
        return Check("calibration", "ok", f"none recorded for {bound[0]}")
    state = "certified" if record.certified else "not certified"
    return Check(
        "calibration",
        "ok",
        f"{record.id} in use ({state}); {len(entries)} in the history",
    )
