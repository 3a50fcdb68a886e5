"""`recall eval` and `recall quickstart`: measuring recall on labelled questions, and showing it
on a demo corpus.

Owns: the commands' arguments, the evaluation's table, JSON or markdown report, the
quickstart's walk-through (index, calibrate, three questions) for people or scripts (`--json`),
and their exit codes. Does not own: the measurements (`recall.evaluation`) or the demo's memos
and questions (`recall.demo`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from recall.cli.calibrate import print_fit
from recall.cli.exits import emit_json, fail
from recall.cli.options import (
    DbOption,
    JsonOption,
    NamespaceOption,
    embedder_name,
    missing,
    store_named,
    when,
)
from recall.cli.showing import print_result
from recall.postgres import shown_db


def register(app: typer.Typer) -> None:
    """Add `quickstart` and `eval` to the `recall` app."""
    app.command()(quickstart)
    app.command("eval")(evaluate)


def quickstart(
    db: Optional[Path] = typer.Option(
        None, "--db", help="Store for the demo (default: a new file in a temporary folder)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Index a demo corpus, calibrate, and answer three questions: see what recall does."""
    import tempfile

    import recall
    from recall import demo
    from recall.errors import RecallError

    db_path = str(db) if db is not None else str(Path(tempfile.mkdtemp()) / "quickstart.db")
    try:
        with recall.open(db_path) as mem:
            ran = demo.run(mem)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(
            {
                "db": shown_db(db_path),
                "now": ran.now.isoformat(),
                "index": ran.report.to_dict(),
                "calibration": ran.calibration.to_dict(),
                "questions": [
                    {**q, "result": r.to_dict()} for q, r in zip(ran.questions, ran.results)
                ],
            }
        )
        return
    _print_quickstart(ran, db_path)


def _print_quickstart(ran: Any, db_path: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    out = Console(highlight=False)
    r = ran.report
    out.print(
        f"[bold]recall quickstart[/] · demo store {escape(shown_db(db_path))} · "
        f"today is {ran.now:%Y-%m-%d}"
    )
    out.print(
        f"\n[bold]1. index[/] {len(r.added) + len(r.updated) + r.unchanged} demo memos "
        f"({r.chunks} chunks written) in {r.seconds:.2f} s"
    )
    out.print(
        f"\n[bold]2. calibrate[/] on {ran.fit.n_answerable} answerable + "
        f"{ran.fit.n_unanswerable} unanswerable labelled questions"
    )
    print_fit(ran.calibration, ran.fit, None)
    titles = {
        "ok": "answered: the best match is current and trusted",
        "superseded": "the nearest memo is stale: its successor is served first",
        "abstain": "refused, with the reason",
    }
    out.print("\n[bold]3. ask[/]")
    for i, (q, res) in enumerate(zip(ran.questions, ran.results), 1):
        out.print(f"\n[bold]Q{i}. {escape(q['query'])}[/]  [dim]({titles.get(q['expect'], '')})[/]")
        print_result(res)
    out.print(
        "\n[bold]Your own notes[/]\n"
        "  recall index ~/notes                 # markdown, frontmatter supersedes/valid_*\n"
        "  recall calibrate my-questions.jsonl  # >= 20 answerable + >= 20 unanswerable questions\n"
        '  recall search "your question"        # --json for agents, --explain for the legs\n'
        f'  (explore this demo: recall search "..." --db {escape(shown_db(db_path))} --as-of '
        f"{ran.now:%Y-%m-%d})",
        soft_wrap=True,
    )


def evaluate(
    questions: Optional[Path] = typer.Argument(
        None,
        help="Labelled questions (JSONL, see recall/evalset/README.md) to run against --db. "
        "Default: the shipped evaluation set, indexed and cross-fitted per embedder.",
    ),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    embedder: Optional[list[str]] = typer.Option(
        None,
        "--embedder",
        help="Shipped set: an embedder to evaluate (repeat for several).",
        callback=embedder_name,
    ),
    as_of: Optional[str] = typer.Option(
        None, "--as-of", help="Judge at this date/time (default now; the shipped set: its date)."
    ),
    k: int = typer.Option(5, "-k", "--k", min=1, max=100, help="Documents judged per question."),
    entail: bool = typer.Option(False, "--entail", help="Also judge near misses with the judge."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a markdown report."),
    evalset: Optional[Path] = typer.Option(
        None,
        "--set",
        help="Instead of the shipped set, a folder laid out like it (notes/, questions.jsonl, "
        "meta.json), e.g. benches/evalsets/platform.",
    ),
    calibration: str = typer.Option(
        "all",
        "--calibration",
        help="Shipped set: judge with the calibration cross-fitted on its labels (labelled), "
        "the one recall makes from the notes alone (self), the prior shipped for a built-in "
        "embedder (prior), labelled and self (both), or all three side by side.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Measure retrieval, abstention and trust on a labelled question set."""
    import recall
    from recall import evaluation
    from recall.errors import RecallError

    try:
        if questions is None:
            if db is not None:
                fail(
                    "recall eval: --db goes with QUESTIONS, labelled questions to run against "
                    "that store; without them eval indexes its evaluation set itself"
                )
            names = embedder or ["hashing-512", "minilm-l6"]
            sources = {
                "labelled": ("labelled",),
                "self": ("self",),
                "prior": ("prior",),
                "both": ("labelled", "self"),
                "all": ("labelled", "self", "prior"),
            }
            if calibration not in sources:
                fail(
                    f"recall eval: --calibration {calibration!r} is not one of "
                    + ", ".join(sources)
                )
            reports = evaluation.evaluate_shipped(
                names, k=k, entail=entail, calibrations=sources[calibration], evalset=evalset
            )
        else:
            if evalset is not None:
                fail("recall eval: --set names a whole evaluation set; give QUESTIONS or --set")
            if embedder and len(embedder) > 1:
                fail("recall eval: a store has one embedder; pass at most one --embedder")
            db_path = store_named(db, namespace)
            if missing(db_path):
                fail(
                    f"recall eval: {shown_db(db_path)} does not exist; "
                    "run 'recall index PATH' first"
                )
            with recall.open(db_path, embedder=embedder[0] if embedder else None) as mem:
                reports = [
                    evaluation.evaluate_store(
                        mem, questions, now=when(as_of, "--as-of"), k=k, entail=entail
                    )
                ]
    except RecallError as err:
        fail(str(err))
    if report is not None:
        from recall.writing import write_whole

        try:
            write_whole(report, evaluation.format_markdown(reports).encode("utf-8"))
        except OSError as err:
            fail(f"recall eval: cannot write {report}: {err.strerror or err}")
    if as_json:
        emit_json([r.to_dict() for r in reports])
        return
    typer.echo(evaluation.format_table(reports))
    if report is not None:
        typer.echo(f"report written to {report}")
