"""`recall models list/check/quantize`: the embedding models, for people or scripts (`--json`).

Owns: the `models` group's commands, their arguments, output and exit codes. Does not own:
finding, loading, timing or quantising a model (`recall.model_tools`, imported only when a
command runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from recall.cli.exits import emit_json, fail
from recall.cli.group import HELP
from recall.cli.options import JsonOption


def register(app: typer.Typer) -> None:
    """Add the `models` group to the `recall` app."""
    app.add_typer(models_app, name="models")


models_app = typer.Typer(
    help="Embedding models: list the built-ins, check a model, quantize an export.",
    no_args_is_help=True,
    context_settings=HELP,
)


@models_app.command("list")
def models_list(as_json: bool = JsonOption) -> None:
    """Built-in models: where their files are, their sha256 pins and licences."""
    from rich.console import Console
    from rich.markup import escape

    from recall import model_tools

    rows = model_tools.listing()
    if as_json:
        emit_json(rows)
        return
    out = Console(highlight=False, soft_wrap=True)
    for row in rows:
        default = " [green](default for new stores)[/]" if row["default"] else ""
        out.print(f"[bold]{row['name']}[/]{default}: {escape(row['description'])}")
        where = row["model"] or f"[red]missing[/]: {escape(row['problem'] or '')}"
        out.print(f"  model      {where}  (from {row['model_package']})")
        out.print(f"  tokenizer  {escape(row['tokenizer'])}")
        out.print(f"  licence    {escape(row['licence'])}")
    out.print(
        "Also: onnx:DIR (any sentence-embedding ONNX export with tokenizer.json) and hashing-D "
        "(no model; hashing-512 for speed and tests)."
    )


@models_app.command("check")
def models_check(
    target: str = typer.Argument(..., help="A model directory, onnx:DIR, or a built-in name."),
    as_json: bool = JsonOption,
) -> None:
    """Load a model, embed a probe, and print its dimension and speed."""
    from recall import model_tools
    from recall.errors import RecallError

    try:
        row = model_tools.check(target)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(row)
        return
    typer.echo(
        f"{row['embedder']}: dim {row['dim']}, fingerprint {row['fingerprint']}, loaded in "
        f"{row['load_seconds']:.2f} s"
        + (f"\n  output {row['pooling']}" if row["pooling"] else "")
        + f"\n  {row['passages_per_second']:.1f} passages/s "
        f"(~180 tokens each) · query p50 {row['query_ms_p50']:.1f} ms, "
        f"p95 {row['query_ms_p95']:.1f} ms"
    )


@models_app.command("quantize")
def models_quantize(
    source: Path = typer.Argument(..., help="An ONNX embedder directory (fp32 export)."),
    out: Path = typer.Argument(..., help="New directory for the int8 model."),
    judge: bool = typer.Option(
        False, "--judge", help="SOURCE is a judge: compare its probabilities, not vectors."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Dynamic int8 quantisation, with its quality and speed change on the evaluation set."""
    from recall import model_tools
    from recall.errors import RecallError

    try:
        report = model_tools.quantize(source, out, judge=judge)
    except RecallError as err:
        fail(str(err))
    if as_json:
        emit_json(report)
        return
    if judge:
        typer.echo(
            f"wrote {report['out']} ({report['bytes_before'] / 1e6:.1f} MB -> "
            f"{report['bytes_after'] / 1e6:.1f} MB)\n"
            f"on {report['pairs']} (question, passage) pairs of the evaluation set:\n"
            f"  probability change: mean {report['probability_change_mean']}, "
            f"max {report['probability_change_max']}\n"
            f"  pairs on the other side of 0.5: {report['crossed_half']:.1%}\n"
            f"  pairs/s: {report['baseline']['pairs_per_second']:.1f} -> "
            f"{report['candidate']['pairs_per_second']:.1f}"
        )
        return
    b, c = report["baseline"], report["candidate"]

    def auc(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    typer.echo(
        f"wrote {report['out']} ({report['bytes_before'] / 1e6:.1f} MB -> "
        f"{report['bytes_after'] / 1e6:.1f} MB)\n"
        f"on {report['passages']} passages and {report['questions']} labelled questions:\n"
        f"  cosine to the original: mean {report.get('cosine_mean', 'n/a')}, "
        f"min {report.get('cosine_min', 'n/a')}\n"
        f"  same top passage for answerable questions: {report['same_top1_answerable']:.1%}\n"
        f"  AUC (answerable vs not): {auc(b['auc'])} -> {auc(c['auc'])}\n"
        f"  passages/s: {b['passages_per_second']:.1f} -> {c['passages_per_second']:.1f}"
    )
