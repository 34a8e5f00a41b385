"""The `searchsvc` command line (docs/DESIGN.md, "Command line").

Every user-caused error is a :class:`SearchsvcError`: its message is printed (never a traceback)
and the process exits with the error's exit code (2 for a bad study file).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from searchsvc import __version__, startup
from searchsvc.core import StudyState
from searchsvc.core.records import MAX_PRIORITY
from searchsvc.errors import SearchsvcError, SpecError
from searchsvc.store import Store, open_store

if TYPE_CHECKING:
    from collections.abc import Sequence

    from searchsvc.api import Study
    from searchsvc.client import RemoteStudies
    from searchsvc.core import StudyRecord, TrialRecord
    from searchsvc.usecases import (
        Campaign,
        Comparison,
        PreflightResult,
        Replay,
        RunOutcome,
        StudyRun,
    )

app = typer.Typer(
    name="searchsvc", no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
    help="Hyperparameter search on Ray Tune, following the Deep Learning Tuning Playbook.",
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

StorageOpt = Annotated[str | None, typer.Option(
    "--storage", envvar="SEARCHSVC_STORAGE",
    help="SQLAlchemy URL of the store (default: SQLite in $SEARCHSVC_HOME).")]
AddressOpt = Annotated[str | None, typer.Option(
    "--address", help="Attach to a Ray cluster this machine is a node of: auto | host:port "
    "(default: start an embedded Ray).")]
ServerOpt = Annotated[str | None, typer.Option(
    "--server", envvar="SEARCHSVC_SERVER", help="URL of a searchsvc server.")]
TokenOpt = Annotated[str | None, typer.Option(
    "--token", envvar="SEARCHSVC_TOKEN", help="API token for the server.")]
OutageOpt = Annotated[float | None, typer.Option(
    "--store-outage", envvar="SEARCHSVC_STORE_OUTAGE", min=0,
    help="Seconds a run rides through an unreachable store (a database restart or failover), "
    "retrying, before it stops with exit code 7 [default: 120; 0: stop at the first failure].")]
ResultsOpt = Annotated[Path | None, typer.Option(
    "--results", help="Folder for results (default: $SEARCHSVC_HOME/results).")]


def _store(storage: str | None, store_outage: float | None = None) -> Store:
    if store_outage is not None:  # also for the study drivers a service starts
        os.environ["SEARCHSVC_STORE_OUTAGE"] = f"{store_outage:g}"
    return open_store(storage)


@app.command()
def validate(specs: Annotated[list[Path], typer.Argument(help="Study files to check.")]) -> None:
    """Check study files; print every problem as FILE:LINE: field: message (got VALUE)."""
    from searchsvc import usecases

    problems: list[str] = []
    for path in specs:
        try:
            spec = usecases.validate(path)
        except SpecError as exc:
            problems.extend(i.render() for i in exc.issues)
            continue
        out.print(f"{path}: ok — study {spec.name!r}, searcher {spec.searcher}, "
                  f"{len(spec.parameters)} parameters")
    if problems:
        for line in problems:
            err.print(line, markup=False)
        raise typer.Exit(2)


@app.command("import")
def import_(
    sweep: Annotated[Path, typer.Argument(help="A W&B sweep file (sweep.yaml).")],
    to: Annotated[Path | None, typer.Option(
        "--out", help="The study file to write (default: STEM-study.yaml beside the sweep).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Turn a W&B sweep file into a study file: its program runs as it is, its wandb.log calls
    are the reports, every searched parameter is a nuisance one; every key that could not be
    mapped is printed."""
    from searchsvc import usecases

    target = to or sweep.with_name(f"{sweep.stem}-study.yaml")
    if target.exists() and not force:
        err.print(f"{target} exists: give --out, or --force to replace it", markup=False)
        raise typer.Exit(2)
    try:
        spec, unmapped = usecases.import_sweep(sweep, target)
    except SpecError as exc:
        for issue in exc.issues:
            err.print(issue.render(), markup=False)
        err.print(f"{target} written; edit it where the lines above say", markup=False)
        raise typer.Exit(2) from None
    out.print(f"{target}: study {spec.name!r}, searcher {spec.searcher}, "
              f"{len(spec.parameters)} parameters", markup=False)
    for line in unmapped:
        out.print(f"  not mapped: {line}", markup=False)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the study file (for editor completion)."""
    from searchsvc.spec import json_schema

    print(json.dumps(json_schema(), indent=2))


@app.command()
def run(
    spec: Annotated[Path, typer.Argument(help="The study file.")],
    address: AddressOpt = None,
    storage: StorageOpt = None,
    store_outage: OutageOpt = None,
    results: ResultsOpt = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace an existing study of the same name.")] = False,
    num_cpus: Annotated[int | None, typer.Option(
        "--num-cpus", help="CPUs of the embedded Ray (default: all).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v",
                                          help="Show the objectives' own output.")] = False,
    no_preflight: Annotated[bool, typer.Option(
        "--no-preflight", help="Start the study without preflight (the objective at the "
        "centre of the space for a few steps, and the cost estimate).")] = False,
) -> None:
    """Run a study: validate it, preflight it, run its trials on Ray Tune, store them, write
    the report."""
    from searchsvc import usecases

    parsed = usecases.validate(spec)
    options = usecases.RunOptions(address=address, results_root=results, num_cpus=num_cpus,
                         verbose=verbose)
    _print_run(usecases.run(parsed, _store(storage, store_outage), options, overwrite=overwrite,
                            preflight=not no_preflight, on_preflight=_print_preflight))


@app.command()
def preflight(
    spec: Annotated[Path, typer.Argument(help="The study file.")],
    address: AddressOpt = None,
    num_cpus: Annotated[int | None, typer.Option(
        "--num-cpus", help="CPUs of the embedded Ray (default: all).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v",
                                          help="Show the objective's own output.")] = False,
) -> None:
    """Run the objective at the centre of the space for a few steps with one trial's
    resources: check it imports, reports the study's metrics, finite values (and the sdk's
    overfit-one-batch and initial-loss checks); print the time per step and the study's
    estimated cost. Exit 2 with FILE:LINE messages when a check fails."""
    from searchsvc import usecases

    parsed = usecases.validate(spec)
    found = usecases.preflight(parsed, usecases.RunOptions(address=address, num_cpus=num_cpus,
                                                           verbose=verbose))
    _print_preflight(found)
    usecases.raise_if_failed(found)


def _print_preflight(found: PreflightResult) -> None:
    from searchsvc.usecases import is_advisory

    marks = {True: "ok  ", False: "FAIL", None: "skip"}
    for check in found.checks:
        mark = "WARN" if check.ok is False and is_advisory(check.name) else marks[check.ok]
        out.print(f"preflight {mark} {check.name}: {check.detail}", markup=False)
    for line in found.lines():
        if not line.startswith("Preflight failed"):
            out.print(line, markup=False)


@app.command()
def resume(
    study: Annotated[str, typer.Argument(help="Name of the study to continue.")],
    address: AddressOpt = None,
    storage: StorageOpt = None,
    store_outage: OutageOpt = None,
    num_cpus: Annotated[int | None, typer.Option("--num-cpus")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    no_preflight: Annotated[bool, typer.Option(
        "--no-preflight", help="A study that never started (e.g. submitted) is preflighted "
        "first; this skips it.")] = False,
) -> None:
    """Continue an interrupted study: finished trials are kept and never re-run."""
    from searchsvc import usecases

    options = usecases.RunOptions(address=address, num_cpus=num_cpus, verbose=verbose)
    _print_run(usecases.resume(study, _store(storage, store_outage), options,
                               preflight=not no_preflight, on_preflight=_print_preflight))


@app.command("next")
def next_round(
    study: Annotated[str, typer.Argument(help="The study whose suggested next study to run.")],
    edit: Annotated[bool, typer.Option(
        "--edit", help="Open the suggested study file in $EDITOR before running it.")] = False,
    file: Annotated[Path | None, typer.Option(
        "--file", help="Run this study file (your edit of the suggestion) instead.")] = None,
    address: AddressOpt = None,
    storage: StorageOpt = None,
    results: ResultsOpt = None,
    num_cpus: Annotated[int | None, typer.Option("--num-cpus")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    no_preflight: Annotated[bool, typer.Option("--no-preflight")] = False,
) -> None:
    """Run the study's suggested next study as the next round of its campaign: warm-started
    from it, with the decisions that made it (and their evidence) recorded; see `searchsvc
    campaign`."""
    from searchsvc import usecases
    from searchsvc.errors import UsageError

    if edit and file is not None:
        raise UsageError("--edit and --file: give one")
    store = _store(storage)
    text = None
    if file is not None:
        text = file.read_text()
    elif edit:
        import click

        text = click.edit(usecases.suggested_next(study, store), extension=".yaml")
        if text is None:
            raise UsageError("the study file was not saved: nothing to run")
    options = usecases.RunOptions(address=address, results_root=results, num_cpus=num_cpus,
                                  verbose=verbose)
    _print_run(usecases.next_round(study, store, options, text=text, preflight=not no_preflight,
                                   on_preflight=_print_preflight))


@app.command()
def campaign(
    name: Annotated[str, typer.Argument(help="The campaign (its first study's name).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the timeline as JSON.")] = False,
    storage: StorageOpt = None,
    server: ServerOpt = None,
    token: TokenOpt = None,
) -> None:
    """A campaign's rounds as a timeline: each round's search space, best with its seed
    noise, verdicts, the decisions that made it with their evidence, and compute spent.
    With --server, one of your campaigns on that server."""
    from searchsvc import usecases

    found = (usecases.campaign_from_json(_client(server, token).campaign(name)) if server
             else usecases.campaign(name, _store(storage)))
    if as_json:
        sys.stdout.write(json.dumps(found.as_dict(), indent=2, default=str) + "\n")
        return
    for line in campaign_lines(found):
        out.print(line, markup=False)


def campaign_lines(found: Campaign) -> list[str]:
    """The timeline as text: a block per round."""
    lines = [f"campaign {found.name}: {len(found.rounds)} rounds"]
    for r in found.rounds:
        best = "no result yet" if r.best_value is None else (
            f"best {r.metric} {r.best_value:.4g} (trial {r.best_trial})"
            + ("" if r.noise is None else f" ± seed noise {r.noise:.3g}"))
        lines += ["", f"round {r.round}: {r.study} ({r.state}) — {best}",
                  f"  compute: {r.trials} trials, {r.steps} steps, "
                  f"{r.trial_hours:.3g} trial-hours, {r.gpu_hours:.3g} GPU-hours",
                  "  space: " + "; ".join(r.space)]
        lines += [f"  verdict: {v}" for v in r.verdicts]
        for d in r.decisions:
            evidence = ", ".join(f"{k}={_short(v)}" for k, v in d.evidence.items())
            lines.append(f"  decision ({d.kind}): {d.text}"
                         + (f" [evidence: {evidence}]" if evidence else ""))
    return lines


def run_summary(outcome: RunOutcome, front: list[int] | None = None) -> list[str]:
    """The lines ``run`` and ``resume`` end with (before the report's path): the study's
    state, its trials finished (an interrupted trial is not), why it stopped, and its best
    (core.judging's, as the store gives it) or, with several objectives, its Pareto front."""
    study = outcome.study
    lines = [f"study {study.name}: {study.state} — {outcome.counts()} ({outcome.reason})"]
    if front is not None:
        lines.append(f"Pareto front: {len(front)} trials ({', '.join(map(str, front))})"
                     if front else "Pareto front: no feasible trial reported every objective")
    elif study.best_value is not None:
        lines.append(f"best {study.metric}: {study.best_value:.6g}")
    if study.state == StudyState.INTERRUPTED:
        lines.append(f"continue it with: searchsvc resume {study.name}")
    elif study.state == StudyState.FAILED and outcome.finished < outcome.total:
        lines.append(f"once fixed, continue it with: searchsvc resume {study.name}")
    return lines


def _print_run(done: StudyRun) -> None:
    outcome, report = done.outcome, done.report
    front = None if report.pareto_front is None else list(report.pareto_front)
    for line in run_summary(outcome, front):
        out.print(line, markup=False)
    out.print(f"report: {report.main.resolve()}")
    if done.stopped_by_ctrl_c:
        raise typer.Exit(130)
    if outcome.study.state == StudyState.FAILED:
        raise typer.Exit(1)


@app.command("list")
def list_studies(storage: StorageOpt = None, server: ServerOpt = None,
                 token: TokenOpt = None) -> None:
    """List the studies in the store. With --server, your studies on that server."""
    studies = _reader(storage, server, token).list_studies()
    if not studies:
        out.print(f"no studies of yours on {server} yet — submit one with: searchsvc submit "
                  "STUDY.yaml" if server else
                  "no studies yet — run one with: searchsvc run spaces/quickstart.yaml")
        return
    out.print(_study_table(studies))


def _study_table(studies: list[StudyRecord]) -> Table:
    """`list`'s table, which fits the terminal (80 columns, say) with the best values whole:
    they, the states, counts and dates keep their width; the searcher is cut short first, then
    the wider of the study and metric names folds. The
    metric's name is in the header when the studies share one."""
    from rich import box

    metrics = {s.metric for s in studies}
    shared = metrics.pop() if len(metrics) == 1 else None
    rows = [[s.name, s.state, s.searcher, f"{s.counts.ended}/{s.total_trials or '?'}",
             *(() if shared is not None else (s.metric,)),
             "-" if s.best_value is None else f"{s.best_value:.4g}",
             time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at))] for s in studies]
    headers = ["study", "state", "searcher", "trials", *(() if shared else ("metric",)),
               "best" if shared is None else f"best {shared}", "created"]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    # What gives way, and how far: the searcher, then the study or metric name.
    least = {0: min(widths[0], 14), 2: min(widths[2], 5)} | (
        {} if shared else {4: min(widths[4], 7)})
    room = out.width - sum(widths) - 2 * len(widths) + 1  # a space after a cell and a divider
    while room < 0:
        wide = 2 if widths[2] > least[2] else max(  # the searcher first
            (i for i in least if widths[i] > least[i]), key=lambda i: widths[i], default=None)
        if wide is None:
            break
        widths[wide] -= 1
        room += 1
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))
    for i, (header, width) in enumerate(zip(headers, widths, strict=True)):
        table.add_column(header, width=width, justify="right" if header in ("trials", headers[-2])
                         else "left", overflow="ellipsis" if i == 2 else "fold",
                         no_wrap=i == 2)
    for row in rows:
        table.add_row(*row)
    return table


@app.command()
def show(study: Annotated[str, typer.Argument()], storage: StorageOpt = None,
         server: ServerOpt = None, token: TokenOpt = None) -> None:
    """Show a study's state, counts and best trials. With --server, a study on that server."""
    from searchsvc import api, usecases

    found = api.load(study, storage=None if server else storage, server=server or None,
                     token=token)
    record = found.record
    summary = usecases.summary(record, found.trials)
    out.print(f"[b]{record.name}[/b] — {record.state}, searcher {record.searcher}, "
              f"metric {record.metric} ({record.mode})")
    _print_failure(record)
    repeats = sum(summary.repeat_counts.values())
    out.print("trials: " + (", ".join(f"{n} {k}" for k, n in summary.counts.items() if n)
                            or "none yet")
              + (f"; {repeats} seed repeats" if repeats else "")
              + f" (of {record.total_trials})")
    if record.best_value is not None:
        out.print(f"best {record.metric}: {record.best_value:.6g}", markup=False)
    table = Table("trial", record.metric, "best step", "config")
    for t in summary.best_trials:
        config = ", ".join(f"{k}={_short(v)}" for k, v in t.config.items())
        table.add_row(str(t.number), f"{t.value:.6g}", f"{t.best_step}/{t.last_step}", config)
    out.print(table)
    _print_failed_trials(found.trials)
    if record.results_dir:
        out.print(f"results: {record.results_dir}")


FAILED_SHOWN = 5  # failed trials whose error's end `show` prints


def _print_failed_trials(trials: Sequence[TrialRecord]) -> None:
    """The end of each failed trial's error (core.failures.error_tail), the latest first."""
    from searchsvc.core.failures import error_tail

    failed = sorted((t for t in trials if t.error), key=lambda t: -t.number)
    for t in failed[:FAILED_SHOWN]:
        out.print(f"trial {t.number} ({t.state}):", markup=False)
        for line in error_tail(t.error):
            out.print(f"  {line}", markup=False, highlight=False)
    if len(failed) > FAILED_SHOWN:
        out.print(f"... and {len(failed) - FAILED_SHOWN} more failed trials (trials.csv, the "
                  "report)")


@app.command()
def compare(
    baseline: Annotated[str, typer.Argument(help="Study A (e.g. the parent).")],
    candidate: Annotated[str, typer.Argument(help="Study B (e.g. made from A's next_study.yaml).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON "
                                          "(report.json's `comparison`).")] = False,
    storage: StorageOpt = None,
    server: ServerOpt = None,
    token: TokenOpt = None,
) -> None:
    """Did B's best beat A's beyond seed noise? Each study's best configuration by its mean
    over seed repeats, with a Welch 95% interval of the difference. With --server, two of
    your studies on that server."""
    import json

    from searchsvc import usecases

    found = usecases.compare(baseline, candidate, _reader(storage, server, token))
    if as_json:
        sys.stdout.write(json.dumps(usecases.comparison_json(found), indent=2) + "\n")
        return
    for each in found.objectives or (found,):
        out.print(_comparison_table(each))
    out.print(Text.assemble((found.verdict, "bold"), f": {found.detail}"))


def _comparison_table(found: Comparison) -> Table:
    """Each study's best configuration on one metric: its mean over seeds, interval, runs."""
    table = Table("study", "best trial", f"mean {found.metric}", "95% interval", "seeds",
                  "single run")
    for side in (found.baseline, found.candidate):
        interval = ("" if side.ci_low is None or side.ci_high is None
                    else f"[{side.ci_low:.4g}, {side.ci_high:.4g}]")
        table.add_row(side.study, "" if side.number is None else str(side.number),
                      "" if side.mean is None else f"{side.mean:.4g}", interval,
                      str(side.repeats), "" if side.value is None else f"{side.value:.4g}")
    return table


@app.command()
def replay(
    study: Annotated[str, typer.Argument(help="A finished study whose trials ran every step.")],
    scheduler: Annotated[list[str] | None, typer.Option(
        "--scheduler", help="Replay only this rule: asha, hyperband, median or percentile "
        "(repeat for several; default: all).")] = None,
    concurrency: Annotated[int | None, typer.Option(
        min=1, help="Trials at a time (default: the study's budget.max_concurrent).")] = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, help="The best trials whose fate "
                                       "each setting's row lists.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print the replay as JSON "
                                          "(report.json's `replay`).")] = False,
    storage: StorageOpt = None,
) -> None:
    """Would early stopping have paid off? Replays the study's stored curves under ASHA,
    Hyperband, the median and a percentile rule (several settings each), in the order its
    trials ran, each scientific arm judged on its own as live rules judge it, and names the
    most aggressive setting that keeps every arm's best within the seed noise (a study file's
    `early_stopping:` block; the suggested next study carries it)."""
    import json

    from searchsvc import usecases

    found = usecases.replay(study, _store(storage), scheduler, concurrency=concurrency,
                            top_k=top_k)
    if as_json:
        sys.stdout.write(json.dumps(found.as_dict(), indent=2) + "\n")
        return
    out.print(_replay_table(found))
    out.print(Text.assemble(("recommended" if found.recommended else "no recommendation",
                             "bold"), f": {found.reason}"))


def _replay_table(found: Replay) -> Table:
    """One row per replayed setting: steps and GPU-hours saved, whether the best is kept, top
    trials kept, best value."""
    # A setting is copied into a study file as it is: never folded, whatever the width.
    table = Table(Column("setting", no_wrap=True), "steps saved", "GPU-hours saved",
                  "best kept", f"top {len(found.top_k)} kept", f"best {found.metric}",
                  "rank corr.", title=f"{found.trials} full curves, {found.concurrency} at a "
                  "time, each arm judged on its own")
    for s in found.settings:
        lost = [str(n) for n, kept in s.top_k.items() if not kept]
        table.add_row(s.rule.label, f"{s.step_saving:.0%}",
                      "" if s.gpu_hours_saved is None else f"{s.gpu_hours_saved:.3g}",
                      s.best_kept_text(),
                      "all" if not lost else "stops " + ", ".join(lost),
                      "" if s.best_value is None else f"{s.best_value:.4g}",
                      "" if s.rank_correlation is None else f"{s.rank_correlation:.2f}")
    return table


@app.command()
def report(
    study: Annotated[str, typer.Argument()],
    fmt: Annotated[str, typer.Option("--format", help="Comma-separated: html,md,json.")] =
    "html,md,json",
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder.")] = None,
    top_fraction: Annotated[float, typer.Option(
        "--top-fraction", help="Share of each arm's best trials the boundary checks examine "
        "(at least 3 trials).")] = 0.2,
    storage: StorageOpt = None,
    server: ServerOpt = None,
    token: TokenOpt = None,
) -> None:
    """Write a study's report: analysis (boundaries, isolation, curves, importance, next
    study) as html, md and json, plus trials.csv and next_study.yaml. With --server, download
    the report of a study on that server instead."""
    from searchsvc import usecases

    formats = [f.strip() for f in fmt.split(",") if f.strip()]
    if server:
        client = _client(server, token)
        folder = out_dir or Path(f"{study}-report")
        for kind in [*formats, "csv"]:
            out.print(f"{kind}: {client.report(study, kind, folder).resolve()}")
        return
    files = usecases.report(study, _store(storage), out_dir, formats, top_fraction=top_fraction)
    for kind, path in files.files.items():
        out.print(f"{kind}: {path.resolve()}")


def _reader(storage: str | None, server: str | None, token: str | None
            ) -> Store | RemoteStudies:
    """Where a command reads studies: the server when one is given (as `show` does), else the
    store."""
    from searchsvc.client import RemoteStudies

    return RemoteStudies(_client(server, token)) if server else _store(storage)


def _client(server: str | None, token: str | None):  # -> ServiceClient
    from searchsvc.client import ServiceClient

    return ServiceClient(server or "", token)


def _remote(study: str, server: str | None, token: str | None) -> Study:
    """Study ``study`` on ``server``, read through the Python API (no request made yet)."""
    from searchsvc.api import Study
    from searchsvc.client import RemoteStudies

    return Study(study, RemoteStudies(_client(server, token)))


def _print_remote(study: StudyRecord | dict) -> None:
    """One line on a study on a server (a record, or the server's JSON of it)."""
    from searchsvc.client import study_record

    s = study_record(study) if isinstance(study, dict) else study
    counts = s.counts.describe()
    best = "" if s.best_value is None else f" · best {s.metric} {s.best_value:.6g}"
    out.print(f"{s.name}: {s.state} · {counts} of {s.total_trials}{best}")
    _print_failure(s)


def _print_failure(study: StudyRecord) -> None:
    """Why a failed study failed, when that was recorded."""
    why = study.failure
    if why:
        out.print(f"  why: {why}", markup=False)


@app.command()
def submit(spec: Annotated[Path, typer.Argument(help="Study file to submit.")],
           server: ServerOpt = None, token: TokenOpt = None,
           code: Annotated[Path | None, typer.Option(
               "--code", help="Upload this folder's code (as git would keep it) for the "
               "objective to import on the cluster; needs a token made with --allow-code. "
               "Default: the study file's folder when the objective's module is there, unless "
               "the token may not upload and the server imports that module itself "
               "(its --allow-objectives).")] = None,
           no_code: Annotated[bool, typer.Option(
               "--no-code", help="Upload no code: the server must have the objective.")] = False,
           no_preflight: Annotated[bool, typer.Option(
               "--no-preflight", help="The server starts the study without preflight (the "
               "objective at the centre of the space for a few steps).")] = False,
           priority: Annotated[int | None, typer.Option(
               min=0, max=MAX_PRIORITY, help="The study's priority on the server's shared "
               "cluster, instead of the study file's `priority` (at most the token's "
               "--max-priority).")] = None,
           ) -> None:
    """Submit a study file to a searchsvc server, which runs it."""
    from searchsvc.client import submit_study
    from searchsvc.spec import load_spec

    done = submit_study(_client(server, token), spec.read_text(), load_spec(spec).objective,
                        spec.parent, False if no_code else code, not no_preflight, priority)
    if done.server_imports:
        out.print(f"code: not uploaded — the server imports {done.server_imports} itself "
                  "(serve --allow-objectives)", markup=False)
    if done.upload is not None:
        out.print(f"code: {done.code} ({done.upload['files']} files, "
                  f"{done.upload['bytes']} bytes) sha256 {done.upload['sha256'][:12]}")
    _print_remote(done.study)


@app.command()
def status(study: Annotated[str, typer.Argument()], server: ServerOpt = None,
           token: TokenOpt = None,
           wait: Annotated[bool, typer.Option(
               "--wait", help="Poll until the study has finished, printing each change; exit "
               "0 if it completed, 1 if it failed or was interrupted.")] = False,
           every: Annotated[float, typer.Option(help="Seconds between polls (--wait).")] = 2.0,
           ) -> None:
    """Show a study on a searchsvc server."""
    remote = _remote(study, server, token)
    shown, share = remote.record, _share_line(study, server, token)
    _print_remote(shown)
    if share:
        out.print(f"  {share}", markup=False)
    while wait and shown.state in (StudyState.CREATED, StudyState.RUNNING):
        time.sleep(every)
        now, line = remote.record, _share_line(study, server, token)
        if (now.state, now.trial_counts, now.best_value) != (
                shown.state, shown.trial_counts, shown.best_value):
            _print_remote(now)
        if line and line != share:
            out.print(f"  {line}", markup=False)
        shown, share = now, line
    if wait and shown.state != StudyState.COMPLETED:
        raise typer.Exit(1)


def _share_line(study: str, server: str | None, token: str | None) -> str:
    """How a queued or running study is doing on the server's shared cluster (empty when it
    is neither, or the server runs no studies)."""
    from searchsvc.errors import NotFoundError, ServiceError

    try:
        queue = _client(server, token).queue()
    except (ServiceError, NotFoundError):  # a server that runs no studies, or an older one
        return ""
    return next((s["line"] for s in queue["studies"] if s["name"] == study), "")


@app.command()
def queue(server: ServerOpt = None, token: TokenOpt = None,
          as_json: Annotated[bool, typer.Option("--json", help="Print the server's JSON.")
                             ] = False) -> None:
    """Your queued and running studies on a searchsvc server's shared cluster: each one's
    priority, allowance (trials it may run at once), running trials, place in the queue and
    why it waits; other users' work only as load."""
    found = _client(server, token).queue()
    if as_json:
        sys.stdout.write(json.dumps(found, indent=2) + "\n")
        return
    out.print(_queue_header(found), markup=False)
    for s in found["studies"]:
        place = f"#{s['position']} in queue" if s["position"] else (
            f"{s['running']} running, allowance {s['allowance']}"
            if s["allowance"] is not None else f"{s['running']} running")
        out.print(f"  {s['name']}: {s['state']} · priority {s['priority']} · {place} · "
                  f"{s['line']}", markup=False)
    if not found["studies"]:
        out.print("  none of your studies is queued or running", markup=False)


def _queue_header(found: dict) -> str:
    """The cluster and the load other users put on it, in one line."""
    cluster = found["cluster"]
    size = ("size not known yet" if cluster is None
            else f"{cluster.get('CPU', 0):g} CPUs, {cluster.get('GPU', 0):g} GPUs")
    others = found["others"]
    held = sum(o["running"] for o in others)
    return (f"cluster: {size} · {found['other_users']} other user(s) with "
            f"{len(others)} studies running {held} trial(s)")


@app.command()
def cancel(study: Annotated[str, typer.Argument()], server: ServerOpt = None,
           token: TokenOpt = None) -> None:
    """Stop a study on a searchsvc server (it can be resumed)."""
    _print_remote(_client(server, token).cancel(study))


tokens = typer.Typer(help="API tokens of the service.", no_args_is_help=True)
app.add_typer(tokens, name="tokens")


@tokens.command("create")
def tokens_create(user: Annotated[str, typer.Argument(help="The user the token acts as.")],
                  storage: StorageOpt = None,
                  allow_code: Annotated[bool, typer.Option(
                      "--allow-code", help="The token may upload code (submit --code), which "
                      "then runs on the cluster with the service's rights: give it only to "
                      "people you would give a shell on the cluster.")] = False,
                  max_priority: Annotated[int, typer.Option(
                      min=0, max=MAX_PRIORITY, help="The highest priority the token's studies "
                      "may ask for on the shared cluster.")] = 0) -> None:
    """Create an API token for USER and print it (only its hash is stored: keep it)."""
    sys.stdout.write(_store(storage).create_token(user, allow_code=allow_code,
                                                  max_priority=max_priority) + "\n")


quota = typer.Typer(help="Users' quotas on the service's shared cluster.", no_args_is_help=True)
app.add_typer(quota, name="quota")


@quota.command("set")
def quota_set(user: Annotated[str, typer.Argument(help="The user (all their tokens).")],
              storage: StorageOpt = None,
              cpu: Annotated[float | None, typer.Option(
                  min=0, help="The most CPUs their studies' trials hold at once.")] = None,
              gpu: Annotated[float | None, typer.Option(
                  min=0, help="The most GPUs (fractions count) at once.")] = None) -> None:
    """Limit what USER's studies hold at once on the shared cluster; beyond it a study waits and
    says so. With neither --cpu nor --gpu, USER's quota is removed."""
    limits = {k: v for k, v in (("CPU", cpu), ("GPU", gpu)) if v is not None}
    _store(storage).set_quota(user, limits)
    out.print(f"{user}: " + (", ".join(f"at most {v:g} {k}" for k, v in limits.items())
                             or "no quota"), markup=False)


@quota.command("list")
def quota_list(storage: StorageOpt = None) -> None:
    """Every user's quota."""
    found = _store(storage).get_quotas()
    for user, limits in sorted(found.items()):
        out.print(f"{user}: " + ", ".join(f"at most {v:g} {k}" for k, v in limits.items()),
                  markup=False)
    if not found:
        out.print("no user has a quota", markup=False)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    storage: StorageOpt = None,
    store_outage: OutageOpt = None,
    allow_objectives: Annotated[str, typer.Option(
        "--allow-objectives", help="Comma-separated module prefixes submitted studies may "
        "name as objective.")] = "objectives.",
    allow_tracking_uri: Annotated[list[str] | None, typer.Option(
        "--allow-tracking-uri", help="An MLflow tracking URI prefix submitted studies may send "
        "their runs to (repeatable; default: none, only the store in the study's results "
        "folder).")] = None,
    address: AddressOpt = None,
    max_running: Annotated[int, typer.Option(
        help="Studies driven at once; they share the cluster fairly between users.")] = 4,
    num_cpus: Annotated[int | None, typer.Option(
        "--num-cpus", help="CPUs of the Ray the service starts for its studies (without "
        "--address).")] = None,
    driver_niceness: Annotated[int | None, typer.Option(
        min=0, max=19, help="Nice value of each study's driver and the Ray it starts (its "
        "whole session): the API stays responsive while studies run. 0 runs them at the "
        "service's own priority, for a machine other work keeps busy [default: 10].")] = None,
    preemption: Annotated[bool, typer.Option(
        help="A study of higher priority has running trials of lower ones pause at their next "
        "checkpoint, to resume from it later; off: they finish first. Trials that report no "
        "checkpoint always finish first.")] = True,
    max_trials: Annotated[int | None, typer.Option(
        help="Trials one study may ask for [default: 10000].")] = None,
    max_parameters: Annotated[int | None, typer.Option(
        help="Parameters one study may declare [default: 100].")] = None,
    max_grid_points: Annotated[int | None, typer.Option(
        help="Points of a grid search [default: 10000].")] = None,
    max_arms: Annotated[int | None, typer.Option(
        help="Combinations of scientific values in one study [default: 1000].")] = None,
    max_queued_per_user: Annotated[int, typer.Option(
        help="Studies a user may have queued or running at once (creating and resuming "
        "a study both count).")] = 20,
    max_code_mb: Annotated[float, typer.Option(
        help="Size of an uploaded code bundle once unpacked, in MB.")] = 100,
    request_timeout: Annotated[float, typer.Option(
        help="Seconds a request may spend validating a study file or unpacking a code bundle "
        "before it is answered 503.")] = 10.0,
) -> None:
    """Run the REST API (OpenAPI at /docs and /openapi.json) and the studies submitted to it,
    each in its own driver process, on the Ray cluster at --address, else on one Ray the service
    starts on this machine for every study (it outlives the service: a restarted service
    attaches to it; `ray stop` ends it)."""
    from searchsvc.codebundle import BundleLimits
    from searchsvc.service import ServiceConfig, create_app, serve_app
    from searchsvc.service.config import server_limits
    from searchsvc.service.runner import StudyRunner
    from searchsvc.store import searchsvc_home

    config = ServiceConfig(
        allow_objectives=tuple(p.strip() for p in allow_objectives.split(",") if p.strip()),
        max_queued_per_user=max_queued_per_user,
        allow_tracking_uris=tuple(allow_tracking_uri or ()),
        limits=server_limits(max_trials=max_trials, max_parameters=max_parameters,
                             max_grid_points=max_grid_points, max_arms=max_arms),
        code_limits=BundleLimits(max_unpacked_bytes=int(max_code_mb * 1024 * 1024)),
        request_timeout_s=request_timeout)
    store = _store(storage, store_outage)
    runner = StudyRunner(store, address=address, max_running=max_running,
                               num_cpus=num_cpus, logs=searchsvc_home() / "service-logs",
                               home=searchsvc_home(), preemption=preemption,
                               **({} if driver_niceness is None
                                  else {"driver_niceness": driver_niceness}))
    api = create_app(store, config, runner)
    serve_app(api, host, port)


spaces = typer.Typer(help="Study-file helpers.", no_args_is_help=True)
app.add_typer(spaces, name="spaces")


@spaces.command("infer")
def spaces_infer(
    objective: Annotated[str, typer.Argument(help='A KerasTuner hypermodel, "module:build".')],
    out_file: Annotated[Path | None, typer.Option("--out", help="Write here (default: print)."
                                                  )] = None,
) -> None:
    """Write a starter study file from a KerasTuner hypermodel's declared hyperparameters
    (those it registers when built once with default values)."""
    from searchsvc.usecases import keras_starter_study

    text = keras_starter_study(objective)
    if out_file is None:
        sys.stdout.write(text)
    else:
        out_file.write_text(text)
        out.print(f"wrote {out_file}")


@app.command()
def version() -> None:
    """Print searchsvc's version."""
    out.print(__version__)


def _short(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main(argv: list[str] | None = None) -> int:
    try:
        code = app(args=argv, standalone_mode=False)
    except SearchsvcError as exc:
        err.print(str(exc), markup=False)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        err.print("aborted")
        return 130
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except typer.TyperException as exc:
        # Usage errors (an unknown command or option, a bad value) arrive here in
        # non-standalone mode, as the click that typer carries raises them: shown as click
        # shows them (usage line, "Error: ..."), never as a traceback.
        show = getattr(exc, "show", None)
        if show is None:
            raise
        show()
        return int(getattr(exc, "exit_code", 2))
    return code if isinstance(code, int) else 0


def entrypoint() -> None:
    # A crash in native code (Ray's core worker, a C extension) would end the process with
    # nothing but its signal for an exit code: every thread's Python stack goes to stderr
    # first, into the terminal or the service's log of the driver (not where stderr is no
    # file, as under an embedding host).
    with contextlib.suppress(AttributeError, ValueError, OSError):
        faulthandler.enable(all_threads=True)
    startup.collect_rarely()  # a batch process: what it imports lives as long as it does
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
