"""`ragstream eval`: offline metrics of a TREC run against qrels, as trec_eval computes them."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ragstream.metrics import Gain, MetricSpec, parse_metric, trec_name
from ragstream.trec import DEFAULT_METRICS, Engine, TrecFormatError, evaluate_files
from ragstream.trec._compiled import AVAILABLE
from ragstream.trec.report import Format, render

__all__ = ["eval_command"]

_FILE = click.Path(exists=True, dir_okay=False, readable=True)


def _metrics(values: Sequence[str]) -> list[MetricSpec]:
    """Parse repeatable, comma-separated metric names; defaults when none are given."""
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    specs: list[MetricSpec] = []
    for name in names or DEFAULT_METRICS:
        try:
            spec = parse_metric(name)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--metrics") from None
        if spec.decayed:
            raise click.BadParameter(
                f"{spec.name}: decayed metrics need document timestamps, which TREC files "
                "do not have",
                param_hint="--metrics",
            )
        if spec not in specs:
            specs.append(spec)
    return specs


def _digits(value: str) -> int | None:
    if value == "full":
        return None
    if value.isdigit() and int(value) <= 17:
        return int(value)
    raise click.BadParameter(f"{value!r}: give 0 to 17, or 'full'", param_hint="--digits")


@click.command("eval", short_help="Evaluate a TREC run against qrels as trec_eval does.")
@click.option("--qrels", "qrels", type=_FILE, required=True, help="Qrels: qid iter docid rel.")
@click.option(
    "--run",
    "run",
    type=_FILE,
    required=True,
    help="Run: qid Q0 docid rank score tag (text after the tag is ignored).",
)
@click.option(
    "-m",
    "--metrics",
    multiple=True,
    metavar="LIST",
    help="Comma-separated, repeatable: rr, ap (map), precision@k (P_k), recall@k, "
    "hit_rate@k (success_k), ndcg@k (ndcg_cut_k), dcg@k. "
    "[default: rr,precision@5,precision@10,recall@5,recall@10,ndcg@5,ndcg@10]",
)
@click.option("-q", "per_query", is_flag=True, help="Print per-query values too.")
@click.option(
    "-c",
    "complete",
    is_flag=True,
    help="Average over all qrels queries; queries missing from the run count 0 (trec_eval -c).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "trec"]),
    default="table",
    show_default=True,
    help="trec = trec_eval -q layout (measure, qid, value).",
)
@click.option(
    "--digits",
    default="4",
    show_default=True,
    metavar="N|full",
    help="Decimals in table and trec output (trec_eval prints 4); 'full' prints every "
    "digit. JSON is always full precision.",
)
@click.option(
    "--gain",
    type=click.Choice(["linear", "exponential"]),
    default="linear",
    show_default=True,
    help="DCG gain: rel (trec_eval) or 2^rel - 1.",
)
@click.option(
    "--relevance-level",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Smallest grade that counts as relevant (trec_eval -l).",
)
@click.option(
    "--engine",
    type=click.Choice(["auto", "compiled", "numpy"]),
    default="auto",
    show_default=True,
    help="compiled: one C pass over both files (needs the built extension); numpy: the "
    "reference implementation; auto: compiled when built. Same results.",
)
@click.option(
    "--keep-best",
    is_flag=True,
    help="A document repeated within a query of the run keeps its best-scored line "
    "(the earliest on equal scores) instead of being an error.",
)
def eval_command(
    qrels: str,
    run: str,
    metrics: tuple[str, ...],
    per_query: bool,
    complete: bool,
    fmt: Format,
    digits: str,
    gain: Gain,
    relevance_level: int,
    engine: Engine,
    keep_best: bool,
) -> None:
    """Evaluate a TREC run against qrels with trec_eval's conventions.

    Each query's results are ordered by score (descending), ties by document id
    (descending, byte order); the rank column is ignored. The mean is over the queries
    in both files, or over all qrels queries with -c.
    """
    if engine == "compiled" and not AVAILABLE:
        raise click.BadParameter(
            "the compiled scanner is not built (a C compiler is needed when installing)",
            param_hint="--engine",
        )
    specs = _metrics(metrics)
    places = _digits(digits)
    if fmt == "trec":
        for spec in specs:
            try:
                trec_name(spec)
            except ValueError as error:
                raise click.BadParameter(
                    f"{error}; use --format table or json", param_hint="--metrics"
                ) from None
    try:
        result = evaluate_files(
            qrels,
            run,
            specs,
            gain=gain,
            relevance_level=relevance_level,
            complete=complete,
            keep_best=keep_best,
            engine=engine,
        )
    except TrecFormatError as error:
        raise click.ClickException(str(error)) from None
    click.echo(render(result, fmt, per_query=per_query, digits=places), nl=False)
