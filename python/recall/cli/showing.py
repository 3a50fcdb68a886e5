"""How a judgment reads in a terminal: the table of hits under `recall search`, the answer
or the abstention below it, and `recall explain`'s account of one document (SPEC §8.2).

Owns: layout at the terminal's width (hits in the order they come, a file name kept whole or
broken after a `/`, never mid-word where a line can be avoided) and the escaping of names so a
control or bidi character cannot disguise one. Prints only what `recall.results` holds.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall.results import Result


#: How each calibration source reads in a line (`labelled`: the user's questions, or imported).
SOURCES = {"self": "made from the notes", "prior": "prior shipped with recall"}


def calibration_line(summary: dict[str, Any] | None, why: str) -> str:
    """The calibration in use, as `stats` and `search` show it."""
    if summary is None:
        return f"none ({why})"
    source = SOURCES.get(summary["source"], "labelled")
    state = "certified" if summary["certified"] else "not certified"
    stale = ", stale" if summary["stale"] else ""
    return f"{summary['id']} ({source}, {state}{stale}), threshold {summary['threshold']:.3f}"


def print_explanation(e: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape

    from recall.walk import shown

    out = Console(highlight=False)
    out.print(f"[bold]{escape(shown(e['path']))}[/] (key [bold]{escape(shown(e['key']))}[/])")
    out.print(f"  verdict: [bold]{e['verdict']}[/], confidence {e['confidence']:.3f}")
    searched = e.get("in_search")
    if searched is not None and searched["verdict"] != e["verdict"]:
        why = ""
        if searched["displaced_by"]:
            about = escape(shown(searched["displaced_by"]))
            why = f": the question is about {about}, retired and the best match by a clear margin"
        out.print(f"  in a search (k={searched['k']}): [bold]{searched['verdict']}[/]{why}")
    best = e["best_chunk"]
    cosine = "no chunk" if best is None else f"{best['score']:.3f}"
    calibration = (
        "calibrated" if e["calibrated"] else f"uncalibrated default ({e['calibration_note']})"
    )
    out.print(f"  cosine {cosine} vs threshold {e['threshold']:.3f} ({escape(calibration)})")
    asked = escape(", ".join(e["identifiers"]))
    held = "held" if e["identifiers_held"] else "[red]missing, so never ok[/]"
    ids = f"; asks for {asked}: {held}" if asked else ""
    out.print(f"  lexical share {e['lexical']:.3f} of the query's IDF mass{ids}")
    if e["asks_for"]:
        wanted = escape(", ".join(e["asks_for"]))
        lacks = e["lacks"]
        found = "held" if lacks is None else f"[red]{escape(lacks)} missing, so not_entailed[/]"
        out.print(f"  the question asks for {wanted}: {found}")
    legs = e["retrieval"]
    dense = f"#{legs['dense_rank']}" if legs["dense_rank"] else f"not in top {legs['depth']}"
    lexical = f"#{legs['lexical_rank']}" if legs["lexical_rank"] else f"not in top {legs['depth']}"
    out.print(
        f"  retrieval: dense {dense} ({legs['dense_rrf']:.4f}) + lexical {lexical} "
        f"({legs['lexical_rrf']:.4f}) = RRF {legs['fused']:.4f}"
    )
    window = "malformed or empty" if not e["window_ok"] else "sound"
    out.print(
        f"  window: {e['valid_from'] or '…'} → {e['valid_until'] or '…'} ({window}); now {e['now']}"
    )
    known = e["known_as_of"] or "not set"
    out.print(f"  first indexed {e['first_indexed_at'] or 'undated'}; knowledge instant {known}")
    for title, claims in (("declares", e["claims_out"]), ("named by", e["claims_in"])):
        if not claims:
            out.print(f"  {title}: nothing")
            continue
        out.print(f"  {title}:")
        for c in claims:
            targets = ", ".join(c["targets"]) or "no document"
            applies = "" if c["applies"] else " [yellow](recorded after the knowledge instant)[/]"
            verb = "is superseded by" if c["reversed"] else "supersedes"
            where = f"{c['vocabulary']} line {c['line']}" if c["line"] else c["vocabulary"]
            out.print(
                f"    {escape(shown(c['declarer']))} {verb} {escape(repr(c['reference']))} "
                f"→ key {escape(c['key'])}: {c['resolution']} ({escape(shown(targets))}), "
                f"recorded {c['recorded_at'] or 'undated'}{applies} [dim]({escape(where)})[/]"
            )
    retired = e.get("retired")
    if retired:
        since = f" since {retired['since']}" if retired["since"] else " (undated: at every instant)"
        out.print(
            f"  retired: [bold]{escape(retired['state'])}[/]{since} "
            f"({escape(retired['vocabulary'])} line {retired['line']}: "
            f"{escape(retired['statement'])})"
        )
    for ignored in e.get("ignored", []):
        out.print(
            f"  [dim]not in force ({ignored['why']}): {ignored['kind']} "
            f"{escape(ignored['statement'])} ({escape(ignored['vocabulary'])} line "
            f"{ignored['line']})[/]"
        )
    chain = " → ".join(shown(link) for link in e["chain"])
    out.print(f"  chain: {escape(chain)}")
    if e["ambiguous"]:
        out.print("  [red]an applying reference names this key among several documents[/]")


_VERDICT_STYLE = {
    "ok": "bold green",
    "low_confidence": "yellow",
    "unverified": "yellow",
    "not_entailed": "yellow",
}


def _legs(r: Any) -> str:
    """Per-leg ranks and reciprocal-rank contributions (SPEC §4), e.g. for `--explain`."""
    if r is None:
        return "fetched as successor (not retrieved)"
    dense = f"dense #{r.dense_rank} ({r.dense_rrf:.4f})" if r.dense_rank else "dense -"
    lexical = f"lexical #{r.lexical_rank} ({r.lexical_rrf:.4f})" if r.lexical_rank else "lexical -"
    return f"{dense} + {lexical} = {r.fused:.4f}"


#: Cells the separators between the five columns take, with their padding.
BORDERS = 12
#: The fewest cells the file column is given however narrow the terminal.
FILE_MIN = 12


def wrapped(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` cells: broken at spaces, a word too long for a line
    broken after a `/` (a path stays readable), and only a segment longer than a whole line
    folded inside."""
    from rich.cells import cell_len, chop_cells

    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        pieces = [p for p in re.split(r"(?<=/)", word) if p] if cell_len(word) > width else [word]
        for n, piece in enumerate(pieces):
            glue = " " if line and n == 0 else ""
            if line and cell_len(line + glue + piece) > width:
                lines.append(line)
                line, glue = "", ""
            while cell_len(piece) > width:
                head, *_ = chop_cells(piece, width)
                lines.append(head)
                piece = piece[len(head) :]
            line += glue + piece
    return [*lines, line] if line or not lines else lines


def print_result(result: Result, explain_legs: bool = False) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from recall.walk import shown

    out = Console(highlight=False)
    table = Table(show_edge=False, pad_edge=False)
    # Hits come in the fused order (both legs' ranks), not by confidence or cosine: the first
    # column says so. The last column holds the file name and, dimmed below it, what the
    # verdict rests on; both are laid out here so no word is cut and no line runs past the edge.
    ranks = max(1, len(str(len(result.hits))))
    verdicts = max([7, *(len(hit.verdict) for hit in result.hits)])
    room = max(FILE_MIN, out.width - BORDERS - ranks - verdicts - len("conf") - len("cosine"))
    table.add_column("#", no_wrap=True, justify="right")
    table.add_column("verdict", no_wrap=True)
    table.add_column("conf", no_wrap=True)
    table.add_column("cosine", no_wrap=True)
    table.add_column("file", no_wrap=True, overflow="crop", width=room)
    for rank, hit in enumerate(result.hits, 1):
        notes = []
        if hit.validity.superseded_by:
            notes.append(f"superseded by {shown(hit.validity.superseded_by)}")
        retired = hit.validity.retired
        if retired is not None and not hit.validity.superseded_by:
            since = f" since {retired.since}" if retired.since else ""
            notes.append(f"{retired.state}{since} ({retired.vocabulary} line {retired.line})")
        for unread in hit.validity.unread:
            notes.append(f"unread status ({unread.vocabulary} line {unread.line}): check the note")
        if hit.validity.valid_from or hit.validity.valid_until:
            notes.append(
                f"valid {hit.validity.valid_from or '…'} → {hit.validity.valid_until or '…'}"
            )
        if hit.promoted_from:
            how = "promoted" if hit.promoted else "fetched" if hit.fetched else "moved up"
            notes.append(f"{how}: in place of {shown(hit.promoted_from)}, which it supersedes")
        elif hit.fetched:
            notes.append("fetched as successor")
        if hit.validity.possibly_superseded_by:
            notes.append(
                f"may be replaced by {shown(hit.validity.possibly_superseded_by)} (undeclared)"
            )
        if hit.displaced_by:
            notes.append(f"the question is about {shown(hit.displaced_by)}, the best match")
        elif hit.lacks and hit.verdict == "not_entailed":
            notes.append(f"does not hold {hit.lacks}, which the question asks for")
        if hit.entailment is not None:
            notes.append(f"answers the question: p = {hit.entailment:.2f}")
        if explain_legs:
            notes.append(_legs(hit.retrieval))
        cell = Text("\n".join(wrapped(shown(hit.provenance.file), room)))
        if notes:
            cell.append("\n" + "\n".join(wrapped("; ".join(notes), room)), style="dim")
        style = _VERDICT_STYLE.get(hit.verdict, "red")
        table.add_row(
            str(rank),
            f"[{style}]{hit.verdict}[/]",
            f"{hit.confidence:.2f}",
            f"{hit.score:.3f}",
            cell,
        )
    out.print(table)
    best = result.ok_hits[0] if result.ok_hits else None
    if best is not None:
        import textwrap

        # Whole words only: the answer is cut after a word, never inside one.
        snippet = textwrap.shorten(" ".join(best.text.split()), width=300, placeholder=" …")
        answer = escape(shown(best.provenance.file))
        out.print(f"\n[bold green]answer from {answer}:[/] {escape(snippet)}")
    else:
        out.print(f"\n[bold red]abstained:[/] {escape(result.reason)}")
    flags = list(result.warnings)
    if result.gap_warning:
        flags.append("gap warning: no passage is semantically close")
    if result.trust_state == "degraded":
        flags.append(f"degraded trust ({result.mode} mode)")
    if result.staleness.stale:
        flags.append(f"store last refreshed {result.staleness.newest_indexed_at}")
    for flag in flags:
        out.print(f"[yellow]{escape(flag)}[/]")
    if result.calibration is not None and result.calibration["source"] in SOURCES:
        # Measured, never hidden: a boundary fitted on questions recall made itself, or on
        # other corpora (the prior).
        out.print(
            f"[dim]calibration: {escape(calibration_line(result.calibration, ''))}; "
            "'recall calibrate QUERIES' fits one on your own questions[/]"
        )
