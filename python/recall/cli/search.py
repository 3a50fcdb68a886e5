"""`recall search` and `recall explain`: a question answered with a judgment, and why one
document gets its verdict.

Owns: the commands' arguments (`--as-of`, `--known-as-of`, `--mode`, the judge), a trust
refusal's exit code (3) and JSON, and handing the result to the terminal view or `--json`. Does
not own: searching (`Memory.search`, `Memory.explain`) or the layout of hits
(`recall.cli.showing`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from recall.cli.exits import EXIT_REFUSED, emit_json, fail
from recall.cli.options import (
    DbOption,
    JsonOption,
    NamespaceOption,
    embedder_name,
    missing,
    store_named,
    when,
)
from recall.cli.showing import print_explanation, print_result
from recall.postgres import shown_db


def register(app: typer.Typer) -> None:
    """Add `search` and `explain` to the `recall` app."""
    app.command()(search)
    app.command()(explain)


def search(
    query: str = typer.Argument(..., help="The question."),
    k: int = typer.Option(5, "-k", "--k", min=1, max=100, help="Documents to judge."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
    as_of: Optional[str] = typer.Option(
        None, "--as-of", help="Judge validity windows at this date/time instead of now."
    ),
    known_as_of: Optional[str] = typer.Option(
        None, "--known-as-of", help="Only trust what had been indexed by this time."
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", help="strict (default) or development. Also $RECALL_TRUST_MODE."
    ),
    explain_legs: bool = typer.Option(
        False, "--explain", help="Show each hit's rank in the dense and lexical legs."
    ),
    embedder: Optional[str] = typer.Option(
        None,
        "--embedder",
        help="Embed the query with this embedder (default: the store's).",
        callback=embedder_name,
    ),
    entail: bool = typer.Option(
        False, "--entail", help="Ask the entailment judge whether each ok hit answers."
    ),
    judge: Optional[Path] = typer.Option(
        None,
        "--judge",
        help="Judge model directory for --entail. Default: $RECALL_JUDGE, else recall's own.",
    ),
) -> None:
    """Answer a question with a judgment: only `ok` hits may be relied on."""
    import recall
    from recall.errors import RecallError, TrustRefusal

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall search: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    if mode is not None and mode not in ("strict", "development"):
        fail(f"recall search: --mode {mode!r} is not one of strict, development")
    now = when(as_of, "--as-of")
    known = when(known_as_of, "--known-as-of")
    try:
        with recall.open(db_path, embedder=embedder, judge=judge) as mem:
            result = mem.search(query, k=k, now=now, known_as_of=known, mode=mode, entail=entail)
    except TrustRefusal as err:
        if as_json:
            emit_json({"refused": True, "code": err.code, "message": err.message})
            raise typer.Exit(EXIT_REFUSED) from None
        fail(f"recall search refused ({err.code}): {err.message}", EXIT_REFUSED)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(result.to_dict())
    else:
        print_result(result, explain_legs)


def explain(
    query: str = typer.Argument(..., help="The question."),
    file: str = typer.Argument(..., help="A document, as shown by 'recall search'."),
    db: Optional[str] = DbOption,
    namespace: Optional[str] = NamespaceOption,
    as_json: bool = JsonOption,
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Judge the window at this time."),
    known_as_of: Optional[str] = typer.Option(
        None, "--known-as-of", help="Apply only what had been indexed by this time."
    ),
) -> None:
    """Explain why one document gets its verdict for a query."""
    import recall
    from recall.errors import RecallError

    db_path = store_named(db, namespace)
    if missing(db_path):
        fail(f"recall explain: {shown_db(db_path)} does not exist; run 'recall index PATH' first")
    now = when(as_of, "--as-of")
    known = when(known_as_of, "--known-as-of")
    try:
        with recall.open(db_path) as mem:
            data = mem.explain(query, file, now=now, known_as_of=known)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(data)
        return
    print_explanation(data)
