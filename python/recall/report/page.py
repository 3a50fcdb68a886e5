"""The report as one HTML page: inline CSS and SVG, no script, nothing fetched.

Owns: how each part of `Facts` reads on the page (the lineage drawing with its legend, the
calibration with its plot, freshness, lint, the evaluation), the words and marks for each
standing a reader gave, and escaping: every string that comes from a note, a path or the store
is escaped (and its control and direction characters shown as escapes) before it is written.
A Content-Security-Policy forbids scripts and every fetch, so the file renders the same offline.
Does not own: what any mark means for trust (the readers gathered in `gather`) or where things
go (`layout`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from recall.report import layout
from recall.report.plot import calibration_svg
from recall.walk import shown

if TYPE_CHECKING:
    from recall.lineage import Note
    from recall.report.gather import Facts

__all__ = ["Drawn", "STATES", "render"]

#: Each mark a note can carry on the drawing: class suffix -> (legend words, what it means).
STATES: dict[str, tuple[str, str]] = {
    "current": ("current", "nothing it declares or that is declared of it stands against it"),
    "superseded": ("superseded", "a later note replaced it; a search serves the successor"),
    "retired": ("retired", "it declares itself withdrawn, rejected, deprecated or similar"),
    "expired": ("expired", "its validity window ended"),
    "not-yet-valid": ("not yet valid", "its validity window has not started"),
    "ambiguous": ("ambiguous", "a reference names it and another note alike"),
    "invalid": ("invalid metadata", "its stored window cannot be read: never served"),
    "not-yet-known": ("not yet known", "indexed after the knowledge instant"),
}
_BY_VERDICT = {
    "superseded": "superseded",
    "expired": "expired",
    "not_yet_valid": "not-yet-valid",
    "ambiguous_supersession": "ambiguous",
    "invalid_metadata": "invalid",
    "not_yet_known": "not-yet-known",
}
#: Advance of characters at the drawing's bold 12-unit labels, measured on DejaVu Sans (the
#: widest of the fonts `system-ui` picks; narrower ones leave room): labels are cut to fit
#: their box, and each box clips what still overflows.
_WIDE = {c: 10.3 for c in "MWmw<>=+~^&%@#_"}
_NARROW = {c: 4.6 for c in " .,:;'|!iljfrt()[]{}-/\\"}
#: Regular 11-unit text (paths, states) is this much narrower.
_REGULAR = 0.86


def _advance(ch: str) -> float:
    if ch in _WIDE:
        return _WIDE[ch]
    if ch in _NARROW:
        return _NARROW[ch]
    if ch.isdigit():
        return 8.9
    return 9.6 if ch.isupper() else 8.2


def _width(text: str, bold: bool = True) -> float:
    return sum(_advance(c) for c in text) * (1.0 if bold else _REGULAR)


#: Findings and files listed in full on the page; past that, the counts and the command.
_LISTED = 400


@dataclass(frozen=True)
class Drawn:
    """What the page drew: note nodes, edges, lineages, unconnected notes, unread files."""

    notes: int
    edges: int
    lineages: int
    singles: int
    unread: int


@dataclass(frozen=True)
class _Edge:
    before: int
    after: int
    kind: str
    follows: bool
    applies: bool
    when: str | None
    statement: str


def _text(value: object) -> str:
    """A string from a note or the store, safe inside an element or an attribute."""
    return escape(shown(str(value)), quote=True)


def _fits(text: str, room: float, bold: bool) -> int:
    """How many of `text`'s first characters fit in `room`."""
    used, scale = 0.0, 1.0 if bold else _REGULAR
    for k, ch in enumerate(text):
        used += _advance(ch) * scale
        if used > room:
            return k
    return len(text)


def _cut(text: str, room: float, bold: bool = True) -> str:
    if _width(text, bold) <= room:
        return text
    return text[: max(1, _fits(text, room - 8, bold))].rstrip() + "…"


def _middle(text: str, room: float, bold: bool = True) -> str:
    """`text` cut in its middle, so both its start and its end (a revision's number) show."""
    if _width(text, bold) <= room:
        return text
    half = (room - 8) / 2
    head = text[: max(1, _fits(text, half, bold))].rstrip()
    tail = text[len(text) - max(1, _fits(text[::-1], half, bold)) :].lstrip()
    return head + "…" + tail


def _tail(text: str, room: float, bold: bool = False) -> str:
    if _width(text, bold) <= room:
        return text
    return "…" + text[len(text) - max(1, _fits(text[::-1], room - 8, bold)) :]


def _wrap(text: str, room: float, lines: int) -> list[str]:
    """`text` in at most `lines` lines of `room` width, cut with … where it does not fit."""
    out: list[str] = []
    rest = text.split()
    while rest and len(out) < lines:
        line = rest.pop(0)
        while rest and _width(line + " " + rest[0]) <= room:
            line += " " + rest.pop(0)
        out.append(line)
    if rest:
        out[-1] = out[-1] + " " + " ".join(rest)
    return [_cut(line, room) for line in out] or [""]


def _state(note: Note) -> str:
    if note.retired is not None and note.standing in ("expired", "current"):
        # The core holds a retirement as the end of the note's window (SPEC §2.5): expired
        # from its date. A retirement dated later than now leaves the note current.
        return "retired" if note.standing == "expired" else "current"
    return _BY_VERDICT.get(note.standing, "current")


def _name(path: str | None) -> str:
    return "" if path is None else path.rsplit("/", 1)[-1]


def _detail(note: Note, state: str) -> str:
    """The second line of a note's box: its path, or what stands against it."""
    if state == "superseded":
        return f"superseded by {_name(note.superseded_by)}"
    if state == "retired" and note.retired is not None:
        since = f" since {note.retired[1]}" if note.retired[1] else ""
        return f"{note.retired[0]}{since}"
    if state == "expired":
        return f"expired after {note.valid_until}"
    if state == "not-yet-valid":
        return f"valid from {note.valid_from}"
    if state == "ambiguous":
        return "named by an ambiguous reference"
    if state == "invalid":
        return f"invalid metadata: {note.metadata_error or ''}"
    return note.path


def _tag(note: Note, state: str) -> str:
    """The word a one-line box carries for its mark; none for a current or superseded note
    (the box's style and the arrows say those)."""
    if state in ("current", "superseded"):
        return ""
    if state == "retired" and note.retired is not None:
        return shown(note.retired[0])[:14]
    if state == "not-yet-valid" and note.valid_from:
        return f"from {note.valid_from}"[:16]
    return STATES[state][0].split()[0]


def _tooltip(note: Note, state: str) -> str:
    lines = [
        note.title,
        os.path.join(note.source, note.path),
        f"standing: {STATES[state][0]}",
        f"first indexed {note.first_indexed_at}; indexed {note.indexed_at}",
    ]
    if note.valid_from or note.valid_until:
        lines.append(f"valid {note.valid_from or '…'} to {note.valid_until or '…'}")
    if note.superseded_by:
        lines.append(f"chain: {' → '.join(note.chain)}")
    if note.retired is not None:
        lines.append(f"retired: {note.retired[0]} ({note.retired[2]}: {note.retired[4]})")
    for c in note.claims:
        where = f"{c.vocabulary}" + (f" line {c.line}" if c.line else "")
        targets = ", ".join(c.targets) or "no note"
        lines.append(f"declares {c.statement!r} ({where}): {c.resolution} → {targets}")
    for kind, vocabulary, line, statement, why in note.ignored:
        lines.append(f"not in force: {kind} {statement!r} ({vocabulary} line {line}): {why}")
    if note.file_state in ("changed", "missing"):
        lines.append(f"file {note.file_state} since it was indexed")
    if note.metadata_error:
        lines.append(f"metadata error: {note.metadata_error}")
    return "\n".join(lines)


def _edges(notes: Sequence[Note]) -> list[_Edge]:
    """The supersession edges the notes' claims make, predecessor first (SPEC §2.3–§2.5)."""
    where: dict[str, list[int]] = {}
    for i, n in enumerate(notes):
        where.setdefault(n.path, []).append(i)

    def find(path: str, near: Note) -> int | None:
        found = where.get(path, [])
        same = [i for i in found if notes[i].source == near.source]
        return (same or found)[0] if found else None

    out: list[_Edge] = []
    seen: set[tuple[int, int]] = set()
    for i, n in enumerate(notes):
        for c in n.claims:
            if c.resolution not in ("resolved", "ambiguous"):
                continue
            for target in c.targets:
                t = find(target, n)
                if t is None or t == i:
                    continue
                before, after = (i, t) if c.reversed else (t, i)
                if (before, after) in seen:
                    continue
                seen.add((before, after))
                # The chain the core walks from the older note says which claim it follows.
                chain = notes[before].chain
                follows = len(chain) > 1 and chain[1] == notes[after].path
                out.append(
                    _Edge(
                        before, after, c.resolution, follows, c.applies, c.recorded_at, c.statement
                    )
                )
    return out


_DEFS = (
    '<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>'
    '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
    'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>'
    '<marker id="arrow-faint" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
    'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
    'class="arrowhead-faint"/></marker>'
    '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbe9e9"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#e3a3a3" stroke-width="2"/></pattern>'
    '<pattern id="hatch-grey" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f4f5f7"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#cbd2d9" stroke-width="2"/></pattern>'
    "</defs></svg>"
)


def _badges(note: Note, w: float, h: float) -> str:
    out = []
    if note.file_state in ("changed", "missing"):
        out.append(f'<circle cx="{w - 8:.1f}" cy="8" r="4.5" class="badge-{note.file_state}"/>')
    if any(c.resolution in ("dangling", "self") for c in note.claims):
        out.append(
            f'<rect x="{w - 12:.1f}" y="{h - 12:.1f}" width="8" height="8" class="badge-dangling"/>'
        )
    return "".join(out)


def _node(note: Note, box: layout.Box, *, lines: int) -> str:
    """One note's box: its title (up to `lines` lines) and the line saying where it stands,
    drawn in a viewport of the box's size, which clips whatever a label still overflows."""
    state = _state(note)
    w, h = box.w, box.h
    # The text starts 12 units in, past the stripe, and stops 6 before the right edge.
    room = w - 18
    attrs = (
        f'class="note s-{state}" data-state="{state}" data-path="{_text(note.path)}" '
        f'data-title="{_text(note.title)}" data-file="{_text(note.file_state or "unknown")}"'
    )
    head = (
        f"<g {attrs}><title>{_text(_tooltip(note, state))}</title>"
        f'<svg x="{box.x:.1f}" y="{box.y:.1f}" width="{w:.1f}" height="{h:.1f}">'
    )
    frame = (
        f'<rect x="0.5" y="0.5" width="{w - 1:.1f}" height="{h - 1:.1f}" rx="5" class="box"/>'
        f'<rect x="0.5" y="0.5" width="5" height="{h - 1:.1f}" rx="2" class="stripe"/>'
    )
    if lines == 1:
        # A note alone in its row says in words what stands against it, at its right end.
        tag = _tag(note, state)
        if tag:
            room -= _width(tag, bold=False) + 8
        if _badges(note, w, h):
            room -= 12
        label = _middle(shown(note.title), room)
        text = (
            f'<svg x="12" y="0" width="{room:.1f}" height="{h:.1f}">'
            f'<text x="0" y="{h / 2 + 4:.1f}" class="t1">{escape(label)}</text></svg>'
        )
        if tag:
            text += (
                f'<text x="{w - 6:.1f}" y="{h / 2 + 4:.1f}" class="t3" text-anchor="end">'
                f"{escape(tag)}</text>"
            )
    else:
        title = _wrap(shown(note.title), room, lines)
        spans = "".join(
            f'<tspan x="12" dy="{0 if k == 0 else 14}">{escape(line)}</tspan>'
            for k, line in enumerate(title)
        )
        words = shown(_detail(note, state))
        detail = _tail(words, room) if state == "current" else _cut(words, room, bold=False)
        text = (
            f'<text x="12" y="16" class="t1">{spans}</text>'
            f'<text x="12" y="{h - 8:.1f}" class="t2">{escape(detail)}</text>'
        )
    return head + frame + text + _badges(note, w, h) + "</svg></g>"


def _edge_svg(edge: _Edge, a: layout.Box, b: layout.Box) -> str:
    kind = (
        f"edge e-{edge.kind}"
        + ("" if edge.follows else " e-passed")
        + ("" if edge.applies else " e-later")
    )
    if b.x > a.x + a.w:
        x1, y1, x2, y2 = a.x + a.w, a.cy, b.x - 2, b.cy
        mid = (x1 + x2) / 2
        d = f"M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        lx, ly = mid, (y1 + y2) / 2 - 5
    else:
        # A wrapped chain (or a loop): from under the older note to above the newer one.
        x1, y1, x2, y2 = a.x + a.w / 2, a.y + a.h, b.x + b.w / 2, b.y - 2
        d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + 40:.1f} {x2:.1f},{y2 - 40:.1f} {x2:.1f},{y2:.1f}"
        lx, ly = (x1 + x2) / 2, (y1 + y2) / 2 - 4
    marker = "arrow" if edge.follows and edge.kind == "resolved" else "arrow-faint"
    label = edge.when[:10] if edge.when else ""
    why = (
        edge.statement
        + ("" if edge.follows else " (the chain does not follow this claim)")
        + ("" if edge.applies else " (not yet known at the knowledge instant)")
    )
    return (
        f'<g class="{kind}"><title>{_text(why)}</title>'
        f'<path d="{d}" marker-end="url(#{marker})"/>'
        + (
            f'<text x="{lx:.1f}" y="{ly:.1f}" class="when" text-anchor="middle">'
            f"{_text(label)}</text>"
            if label
            else ""
        )
        + "</g>"
    )


def _lineage_svg(notes: Sequence[Note], edges: Sequence[_Edge], placed: layout.Placed) -> str:
    if not placed.groups:
        return '<p class="muted">No note replaces another: there is no lineage to draw.</p>'
    parts = [
        f'<svg class="drawing lineage" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {placed.width:.0f} {placed.height:.0f}" width="{placed.width:.0f}" '
        f'height="{placed.height:.0f}" role="img" aria-label="lineages of the notes">'
    ]
    boxes = {i: b for g in placed.groups for i, b in g.boxes.items()}
    group_of = {i: k for k, g in enumerate(placed.groups) for i in g.nodes}
    edges_of: dict[int, list[_Edge]] = {}
    for e in edges:
        edges_of.setdefault(group_of.get(e.before, -1), []).append(e)
    for k, group in enumerate(placed.groups, 1):
        inside = edges_of.get(k - 1, [])
        dates = sorted(e.when for e in inside if e.when)
        newest = max(group.nodes, key=lambda i: (group.columns[i], notes[i].first_indexed_at))
        caption = (
            f"{k}. {len(group.nodes)} notes, {len(inside)} "
            + ("replacement" if len(inside) == 1 else "replacements")
            + (f", last {dates[-1][:10]}" if dates else "")
            + f" · newest: {shown(notes[newest].title)}"
        )
        parts.append(
            f'<g class="lineage-group"><text x="{group.x:.1f}" y="{group.y + 12:.1f}" '
            f'class="caption">{escape(_cut(caption, group.w))}</text></g>'
        )
    for e in edges:
        if e.before in boxes and e.after in boxes:
            parts.append(_edge_svg(e, boxes[e.before], boxes[e.after]))
    for i, box in boxes.items():
        parts.append(_node(notes[i], box, lines=1 if box.h <= layout.SMALL_H else 2))
    parts.append("</svg>")
    return "".join(parts)


def _singles_svg(notes: Sequence[Note], singles: Sequence[int]) -> str:
    if not singles:
        return ""
    grid = layout.grid(len(singles))
    parts = [
        f'<svg class="drawing singles" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {grid.width:.0f} {grid.height:.0f}" width="{grid.width:.0f}" '
        f'height="{grid.height:.0f}" role="img" aria-label="notes in no lineage">'
    ]
    parts += [_node(notes[i], box, lines=1) for i, box in zip(singles, grid.boxes)]
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    items = []
    for state, (words, meaning) in STATES.items():
        if state == "not-yet-known":
            continue
        items.append(
            f'<li><svg width="34" height="18" aria-hidden="true"><g class="key s-{state}">'
            '<rect x="1" y="1" width="32" height="16" rx="3" class="box"/>'
            '<rect x="1" y="1" width="4" height="16" rx="2" class="stripe"/></g></svg>'
            f"<b>{words}</b> <span>{meaning}</span></li>"
        )
    items += [
        '<li><svg width="34" height="18" aria-hidden="true"><g class="unread key">'
        '<rect x="1" y="1" width="32" height="16" rx="3"/></g></svg><b>unread</b> '
        "<span>a note file the memory does not hold (refused, forgotten, not indexed)</span></li>",
        '<li><svg width="34" height="18" aria-hidden="true"><g class="edge e-resolved">'
        '<path d="M2,9 L30,9" marker-end="url(#arrow)"/></g></svg><b>A → B</b> '
        "<span>B replaced A, dated when B was first indexed</span></li>",
        '<li><svg width="34" height="18" aria-hidden="true"><g class="edge e-ambiguous">'
        '<path d="M2,9 L30,9" marker-end="url(#arrow-faint)"/></g></svg><b>ambiguous</b> '
        "<span>a reference that names several notes: no edge is guessed</span></li>",
        '<li><svg width="34" height="18" aria-hidden="true"><g class="edge e-resolved e-passed">'
        '<path d="M2,9 L30,9" marker-end="url(#arrow-faint)"/></g></svg><b>passed over</b> '
        "<span>a claim the chain does not follow (another claim on the note wins)</span></li>",
        '<li><svg width="34" height="18" aria-hidden="true"><circle cx="17" cy="9" r="5" '
        'class="badge-changed"/></svg><b>changed</b> <span>file edited since it was indexed '
        '(<i class="dot missing"></i> gone)</span></li>',
        '<li><svg width="34" height="18" aria-hidden="true"><rect x="13" y="5" width="8" '
        'height="8" class="badge-dangling"/></svg><b>dangling</b> '
        "<span>declares a reference that names no note</span></li>",
    ]
    return '<ul class="legend">' + "".join(items) + "</ul>"


def _table(
    rows: Iterable[Sequence[object]], head: Sequence[str] | None = None, cls: str = ""
) -> str:
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if head:
        out.append("<thead><tr>" + "".join(f"<th>{_text(h)}</th>" for h in head) + "</tr></thead>")
    out.append("<tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{_text(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _unread_svg(facts: Facts) -> str:
    if not facts.unread:
        return '<p class="muted">Every note file under the corpus roots is in the memory.</p>'
    shownfiles = facts.unread[:_LISTED]
    grid = layout.grid(len(shownfiles))
    parts = [
        f'<svg class="drawing unread-files" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {grid.width:.0f} {grid.height:.0f}" width="{grid.width:.0f}" '
        f'height="{grid.height:.0f}" role="img" aria-label="note files the memory does not hold">'
    ]
    for u, box in zip(shownfiles, grid.boxes):
        label = _tail(shown(f"{u.kind}: {os.path.basename(u.path)}"), box.w - 16)
        parts.append(
            f'<g class="unread k-{u.kind.replace(" ", "-")}" data-path="{_text(u.path)}">'
            f"<title>{_text(u.path)}\n{_text(u.reason)}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
            f'height="{box.h:.1f}" rx="5"/>'
            f'<text x="{box.x + 8:.1f}" y="{box.y + box.h / 2 + 4:.1f}" class="t2">'
            f"{escape(label)}</text></g>"
        )
    parts.append("</svg>")
    more = len(facts.unread) - len(shownfiles)
    rows = _table(((u.kind, u.path, u.reason) for u in shownfiles), ("", "file", "why"), "files")
    tail = f'<p class="muted">{more} more not listed.</p>' if more > 0 else ""
    return "".join(parts) + rows + tail


def _summary(facts: Facts, states: dict[str, int], drawn_edges: int) -> str:
    st = facts.stats
    chips = [("notes", st.documents), ("replacements", drawn_edges)]
    chips += [(STATES[s][0], n) for s, n in states.items() if n and s != "current"]
    changed = sum(1 for n in facts.notes if n.file_state in ("changed", "missing"))
    chips += [("files changed since indexed", changed), ("unread files", len(facts.unread))]
    if facts.lint is not None:
        chips += [("lint errors", facts.lint.errors), ("lint warnings", facts.lint.warnings)]
    return (
        '<div class="chips">'
        + "".join(f'<span class="chip"><b>{n}</b> {escape(label)}</span>' for label, n in chips)
        + "</div>"
    )


def _calibration(facts: Facts) -> str:
    record = facts.calibration
    trust = facts.trust
    out = [
        f'<p class="trust trust-{_text(trust.get("state", ""))}">{_text(trust.get("line", ""))}</p>'
    ]
    if record is None:
        out.append(
            f"<p>No calibration is in force: {_text(facts.calibration_note or 'none recorded')}. "
            "The plot shows the uncalibrated default that development mode uses "
            "(every hit <code>unverified</code>).</p>"
        )
        from recall.calibration import DEFAULT_SCALE, DEFAULT_THRESHOLD

        out.append(
            calibration_svg(
                DEFAULT_THRESHOLD,
                DEFAULT_SCALE,
                title="uncalibrated default (development mode)",
                subtitle="no calibration in force",
                default=True,
            )
        )
        return "".join(out)
    summary = facts.stats.calibration or {}
    certified = {True: "certified", False: "not certified", None: "cannot say (imported)"}[
        record.certified
    ]
    auc = "n/a" if record.auc is None else f"{record.auc:.3f}"
    lower = "n/a" if record.auc_lower is None else f"{record.auc_lower:.3f}"
    source = {
        "labelled": "labelled: fitted on your questions, or imported",
        "self": "self: made by recall from the notes",
        "prior": "prior: shipped with recall for this embedder",
    }.get(record.source, record.source)
    rows: list[tuple[str, object]] = [
        ("source", source),
        ("id", record.id),
        ("embedder", f"{record.embedder} ({record.fingerprint})"),
        ("threshold", f"{record.threshold:.3f}"),
        ("scale", f"{record.scale:.4f}"),
        (
            "certified",
            certified + (f": {record.certified_reason}" if record.certified_reason else ""),
        ),
        ("AUC", f"{auc} (95 % lower bound {lower})"),
        (
            "questions",
            f"{record.n_answerable} answerable, {record.n_unanswerable} unanswerable"
            + (f" ({record.made} made by recall)" if record.made else ""),
        ),
        ("features", ", ".join(record.features)),
        ("weights", f"lexical {record.lexical_weight:g}, identifier {record.identifier_weight:g}"),
        (
            "fitted",
            f"{record.fitted_at or 'unknown'} at generation {record.generation}, "
            f"{record.chunk_count} chunks",
        ),
        (
            "stale",
            "yes: refit (recall calibrate --auto, or QUERIES)" if summary.get("stale") else "no",
        ),
    ]
    out.append('<div class="cal">')
    out.append(_table(rows, cls="kv"))
    out.append(
        calibration_svg(
            record.threshold,
            record.scale,
            title=f"calibration in force ({record.source})",
            subtitle=f"AUC {auc} (lower {lower}), {certified}",
            span=record.relevance_span,
        )
    )
    out.append("</div>")
    out.append(
        '<p class="muted">A record keeps no samples: the score distributions are drawn by '
        "<code>recall calibrate QUERIES --plot FILE.png</code> when a fit is made.</p>"
    )
    if facts.history:
        out.append("<h3>History</h3>")
        out.append(
            _table(
                (
                    (
                        e.number,
                        e.when or "",
                        e.source,
                        e.record.source,
                        f"{e.record.threshold:.3f}",
                        {True: "yes", False: "no", None: "?"}[e.record.certified],
                        "in use" if e.in_use else "",
                    )
                    for e in facts.history
                ),
                ("#", "saved", "how", "source", "threshold", "certified", ""),
            )
        )
    return "".join(out)


def _freshness(facts: Facts) -> str:
    st = facts.stats
    changed = [n for n in facts.notes if n.file_state == "changed"]
    missing = [n for n in facts.notes if n.file_state == "missing"]
    unknown = sum(1 for n in facts.notes if n.file_state is None)
    churn = ""
    if facts.calibration is not None and facts.calibration.churn is not None:
        churn = (
            f"{st.chunk_churn - facts.calibration.churn} chunks since the calibration was fitted"
        )
    rows: list[tuple[str, object]] = [
        ("store", st.path),
        ("generation", st.generation),
        ("documents / chunks", f"{st.documents} / {st.chunks}"),
        ("embedder", f"{st.embedder} ({st.embedder_dim} dims)" if st.embedder else "none yet"),
        ("newest indexed", st.newest_indexed_at or "never"),
        ("last index run", st.last_run_at or "never"),
        ("files changed since indexed", len(changed)),
        ("files gone since indexed", len(missing)),
        (
            "chunk churn",
            f"{st.chunk_churn} over the store's life" + (f"; {churn}" if churn else ""),
        ),
        (
            "edges",
            f"{st.edges_resolved} resolved, {st.edges_dangling} dangling, "
            f"{st.edges_ambiguous} ambiguous, {st.edges_self} self",
        ),
        ("statements", f"{st.partial} partial, {st.unread} unread"),
        ("forgotten", st.forgotten),
        ("vocabularies", st.vocabularies),
    ]
    if unknown:
        rows.append(("files not looked at", f"{unknown} (their folder is not on this machine)"))
    for root, n in st.missing_roots:
        rows.append(("missing root", f"{root} ({n} documents)"))
    out = [_table(rows, cls="kv")]
    if changed or missing:
        out.append("<h3>Notes whose file moved on</h3>")
        out.append(
            _table(
                ((n.file_state, n.path, n.indexed_at) for n in (changed + missing)[:_LISTED]),
                ("file", "note", "indexed"),
            )
        )
        out.append('<p class="muted">The next <code>recall index</code> reads them again.</p>')
    out.append("<h3>Doctor</h3>")
    if facts.doctor is None:
        out.append(f'<p class="muted">Not run: {_text(facts.doctor_note)}</p>')
    else:
        out.append(
            _table(
                ((c.name, c.status, c.detail) for c in facts.doctor.checks),
                ("check", "status", "detail"),
                "checks",
            )
        )
        out.append(f"<p><b>{_text(facts.doctor.verdict)}</b>: {_text(facts.doctor.advice)}</p>")
    return "".join(out)


def _lint(facts: Facts) -> str:
    report = facts.lint
    if report is None:
        return f'<p class="muted">Not run: {_text(facts.lint_note)}</p>'
    head = (
        f"<p>{report.errors} errors, {report.warnings} warnings, {report.infos} notes in "
        f"{report.files} files (vocabularies: {_text(report.vocabularies)}).</p>"
    )
    if not report.findings:
        return head
    from recall.authoring.lint import RULES

    counts = _table(
        ((code, RULES[code][0] if code in RULES else "", n) for code, n in report.counts().items()),
        ("code", "rule", "findings"),
    )
    listed = report.findings[:_LISTED]
    rows = _table(
        (
            (f.severity, f"{f.file}:{f.line}", f"{f.code} {f.rule}", f.message, f.fix)
            for f in listed
        ),
        ("", "where", "rule", "finding", "fix"),
        "findings",
    )
    more = len(report.findings) - len(listed)
    tail = (
        f'<p class="muted">{more} more: <code>recall lint</code> lists them all.</p>'
        if more > 0
        else ""
    )
    return head + counts + rows + tail


def _evaluation(facts: Facts) -> str:
    if facts.evaluation is None:
        return (
            f'<p class="muted">{_text(facts.evaluation_note)}</p>' if facts.evaluation_note else ""
        )
    from recall.evaluation import table_cells

    reports = facts.evaluation
    if not reports:
        return '<p class="muted">Nothing evaluated.</p>'
    table = table_cells(reports)
    head = ["measurement", *table[0][1]]
    body = _table(((label, *cells) for label, cells in table[1:]), head, "eval")
    notes = [f"{r.embedder} ({r.calibration_source}): {n}" for r in reports for n in r.notes]
    first = reports[0]
    intro = (
        f"<p>{_text(first.questions)} questions at {_text(first.now[:10])} (k={first.k}); "
        "rates are successes/n with their 95 % interval.</p>"
    )
    listed = "".join(f"<li>{_text(n)}</li>" for n in notes)
    return intro + body + (f"<ul class='notes'>{listed}</ul>" if listed else "")


_CSS = """
:root{--ink:#1f2933;--muted:#616e7c;--line:#d9e2ec;--bg:#f7f9fb}
*{box-sizing:border-box}
body{margin:0;padding:24px 40px 48px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--bg)}
header h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:30px 0 10px;padding-top:10px;border-top:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 8px}
nav a{margin-right:14px;color:#1d4ed8;text-decoration:none}
.muted{color:var(--muted)}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin:12px 0}
.chip{background:#fff;border:1px solid var(--line);border-radius:14px;padding:2px 10px}
.trust{background:#fff;border-left:4px solid #2f855a;padding:6px 10px}
.trust-missing,.trust-uncertified,.trust-stale,.trust-empty{border-left-color:#c05621}
.drawing{display:block;width:100%;max-width:1360px;height:auto;background:#fff;
border:1px solid var(--line);border-radius:6px;margin:8px 0}
.legend{list-style:none;padding:0;margin:8px 0;display:grid;
grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:2px 16px;font-size:12.5px}
.legend li{display:flex;align-items:center;gap:6px}
.legend span{color:var(--muted)}
.dot{display:inline-block;width:8px;height:8px;border-radius:4px;background:#c53030}
table{border-collapse:collapse;background:#fff;margin:6px 0;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef2f6}
table.kv td:first-child{font-weight:600;white-space:nowrap}
table.findings td:nth-child(2),table.files td:nth-child(2){
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
.cal{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.cal table{max-width:660px}
.plot{background:#fff;border:1px solid var(--line);border-radius:6px;max-width:100%;height:auto}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
.note .box,.key .box{fill:#fff;stroke:#52606d;stroke-width:1}
.note .stripe,.key .stripe{fill:#2f855a}
.note .t1{font-size:12px;font-weight:600;fill:#1f2933}
.t2{font-size:11px;fill:#52606d}
.t3{font-size:10.5px;fill:#52606d;font-style:italic}
.s-superseded .box{fill:#eef1f4;stroke:#9aa5b1;stroke-dasharray:4 3}
.s-superseded .stripe{fill:#9aa5b1}.s-superseded .t1{fill:#616e7c}
.s-retired .box{fill:#fde8e8;stroke:#c53030;stroke-width:1.5}.s-retired .stripe{fill:#c53030}
.s-retired .t1{fill:#9b1c1c}
.s-expired .box{fill:#fff3e0;stroke:#c05621}.s-expired .stripe{fill:#dd6b20}
.s-not-yet-valid .box{fill:#ebf4ff;stroke:#3182ce}.s-not-yet-valid .stripe{fill:#3182ce}
.s-ambiguous .box{fill:#f4edfd;stroke:#805ad5;stroke-dasharray:2 2}
.s-ambiguous .stripe{fill:#805ad5}
.s-invalid .box{fill:url(#hatch);stroke:#9b2c2c}.s-invalid .stripe{fill:#9b2c2c}
.s-not-yet-known .box{fill:#f0f4f8;stroke:#829ab1}.s-not-yet-known .stripe{fill:#829ab1}
.unread rect{fill:url(#hatch-grey);stroke:#7b8794;stroke-dasharray:3 3}
.edge path{fill:none;stroke:#334e68;stroke-width:1.6}
.edge.e-ambiguous path{stroke:#805ad5;stroke-dasharray:5 4}
.edge.e-passed path{stroke:#9aa5b1;stroke-dasharray:5 4}
.edge.e-later path{opacity:.45}
.arrowhead{fill:#334e68}.arrowhead-faint{fill:#9aa5b1}
.when{font-size:9.5px;fill:#616e7c}
.caption{font-size:11.5px;fill:#486581;font-weight:600}
.badge-changed{fill:#dd6b20;stroke:#fff}.badge-missing{fill:#c53030;stroke:#fff}
.badge-dangling{fill:#805ad5}
.pl-abstain{fill:#fdf0f0}.pl-ok{fill:#eef8f1}.pl-frame{fill:none;stroke:#9aa5b1}
.pl-grid{stroke:#d9e2ec;stroke-dasharray:3 3}.pl-axis{stroke:#616e7c}
.pl-curve{fill:none;stroke:#c53030;stroke-width:2}.pl-default{stroke-dasharray:6 4}
.pl-threshold{stroke:#1f2933;stroke-width:1.4;stroke-dasharray:5 4}.pl-point{fill:#1f2933}
.pl-tick,.pl-region{font-size:11px;fill:#52606d}.pl-label{font-size:11.5px;fill:#1f2933}
.pl-title{font-size:13px;font-weight:600;fill:#1f2933}.pl-sub{font-size:12px;fill:#52606d}
.pl-axis-label{font-size:11.5px;fill:#52606d}
"""


def render(facts: Facts, *, title: str | None = None) -> tuple[str, Drawn]:
    """The page for `facts`, and what it drew."""
    notes = facts.notes
    edges = _edges(notes)
    # Reading order: what stands against a note first, then by path.
    rank = {
        s: k
        for k, s in enumerate(
            (
                "retired",
                "expired",
                "invalid",
                "ambiguous",
                "not-yet-valid",
                "not-yet-known",
                "superseded",
                "current",
            )
        )
    }
    states = [_state(n) for n in notes]
    order = sorted(
        range(len(notes)), key=lambda i: (rank[states[i]], notes[i].source, notes[i].path)
    )
    sizes = [
        (layout.SMALL_W, layout.SMALL_H) if s == "superseded" else (layout.NODE_W, layout.NODE_H)
        for s in states
    ]
    # Lineages where something stands against a note other than its replacement come first.
    marked = [s not in ("current", "superseded") for s in states]
    for e in edges:
        if e.kind != "resolved" or not e.follows:
            marked[e.before] = marked[e.after] = True
    placed = layout.lineages(len(notes), [(e.before, e.after) for e in edges], order, sizes, marked)
    counts = {s: states.count(s) for s in STATES}
    st = facts.stats
    name = title or f"recall report: {st.path}"
    when = facts.now.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = [
        "<header>",
        f"<h1>{_text(name)}</h1>",
        f'<p class="muted">As of {when} · {st.documents} notes, {st.chunks} chunks, '
        f"generation {st.generation} · embedder {_text(st.embedder or 'none')}</p>",
        _summary(facts, counts, len(edges)),
        '<nav><a href="#lineage">Lineage</a><a href="#calibration">Calibration</a>'
        '<a href="#freshness">Freshness</a><a href="#lint">Lint</a>'
        + ('<a href="#eval">Evaluation</a>' if facts.evaluation is not None else "")
        + "</nav></header>",
        '<section id="lineage"><h2>Lineage</h2>',
        f"<p>{len(placed.groups)} lineages ({sum(len(g.nodes) for g in placed.groups)} notes "
        f"joined by {len(edges)} replacements): those with a note retired, expired, ambiguous "
        "or passed over first, then the longest. An arrow runs from a note to the one that "
        "replaced it; hover a note for its declarations and dates.</p>",
        _legend(),
        _lineage_svg(notes, edges, placed),
        f"<h3>Notes in no lineage ({len(placed.singles)})</h3>",
        '<p class="muted">What stands against a note first, then by path.</p>'
        if placed.singles
        else "",
        _singles_svg(notes, placed.singles),
        f"<h3>Note files the memory does not hold ({len(facts.unread)})</h3>",
        _unread_svg(facts),
        "</section>",
        '<section id="calibration"><h2>Calibration</h2>',
        _calibration(facts),
        "</section>",
        '<section id="freshness"><h2>Freshness</h2>',
        _freshness(facts),
        "</section>",
        '<section id="lint"><h2>Lint</h2>',
        _lint(facts),
        "</section>",
    ]
    if facts.evaluation is not None or facts.evaluation_note:
        sections += ['<section id="eval"><h2>Evaluation</h2>', _evaluation(facts), "</section>"]
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(name)}</title><style>{_CSS}</style></head><body>"
        + _DEFS
        + "".join(sections)
        + "</body></html>\n"
    )
    drawn = Drawn(
        notes=sum(len(g.nodes) for g in placed.groups) + len(placed.singles),
        edges=len(edges),
        lineages=len(placed.groups),
        singles=len(placed.singles),
        unread=min(len(facts.unread), _LISTED),
    )
    return page, drawn
