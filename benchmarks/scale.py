"""Scale: a 10,000-trial study with 50 steps each, in a real SQLite store.

Measures (1) store ingestion: results/s when each reported step is written on its own, as the
runner's store callback does; (2) the time to write the full report (analysis, HTML, Markdown,
JSON, CSV) of the 10,000-trial study; (3) the peak memory of this process and the HTML's size.
Prints a markdown table with PASS/FAIL against the targets and writes JSON with --json.

    .venv/bin/python benchmarks/scale.py [--trials 10000] [--steps 50] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchsvc.core import TrialState  # noqa: E402
from searchsvc.reporting import write_report  # noqa: E402
from searchsvc.searchers import create_searcher  # noqa: E402
from searchsvc.spec import parse_spec  # noqa: E402
from searchsvc.store import SqlStore, Store  # noqa: E402

SPEC = """study: scale
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: random
seed: 0
budget: {{trials: {trials}, max_steps: {steps}}}
parameters:
  depth: {{role: scientific, values: [1, 2, 3, 4]}}
  learning_rate: {{role: nuisance, low: 1.0e-5, high: 1.0, scale: log}}
  weight_decay: {{role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}}
  dropout: {{role: nuisance, low: 0.0, high: 0.5}}
"""


def curve(config: dict, rng: random.Random, steps: int) -> list[dict]:
    depth, lr = int(config["depth"]), float(config["learning_rate"])
    best_lr = 10 ** (-1.0 - 0.5 * depth)
    final = (0.3 - 0.03 * depth + 0.08 * (math.log10(lr / best_lr)) ** 2
             + 0.02 * (math.log10(float(config["weight_decay"])) + 4) ** 2)
    rows = []
    for step in range(1, steps + 1):
        val = 2.3 - (2.3 - final) * (1 - math.exp(-4 * step / steps)) + rng.gauss(0, 0.003)
        if lr > 30 * best_lr and step > steps // 3:
            val = float("nan")
        rows.append({"val_loss": val, "train_loss": val * 0.9})
    return rows


def ingest(store: Store, trials: int, steps: int, *, per_step: bool) -> tuple[float, int]:
    spec = parse_spec(SPEC.format(trials=trials, steps=steps))
    study = store.create_study(name=spec.name, metric=spec.metric, mode=spec.mode,
                               searcher=spec.searcher, spec_text=SPEC.format(
                                   trials=trials, steps=steps),
                               spec_file="scale.yaml", total_trials=trials, results_dir=None,
                               provenance={})
    searcher = create_searcher(spec)
    results = 0
    started = time.perf_counter()
    for number in range(trials):
        proposal = searcher.propose(number)
        trial = store.start_trial(study.id, number=number, config=proposal.config,
                                  arm=proposal.arm.values, seed=proposal.seed)
        rows = curve(dict(proposal.config), random.Random(number), steps)
        items = [(i, row["val_loss"], row) for i, row in enumerate(rows, 1)]
        if per_step:
            for item in items:
                store.record_measurements(trial.id, 1, "min", [item])
        else:
            store.record_measurements(trial.id, 1, "min", items)
        results += len(items)
        bad = any(not math.isfinite(r["val_loss"]) for r in rows)
        store.finish_trial(trial.id, TrialState.INFEASIBLE if bad else TrialState.COMPLETED)
    store.update_study(spec.name, state="completed")
    return time.perf_counter() - started, results


def browser_render_seconds(html: Path, shots: Path) -> float | None:
    """Seconds for Debian's chromium to load the page and draw every plot (None without it)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        started = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_function(
            "[...document.querySelectorAll('.plotly-graph-div')]"
            ".every(d => d.querySelector('.main-svg'))", timeout=120_000)
        took = time.perf_counter() - started
        page.screenshot(path=str(shots / "report" / "scale_full.png"), full_page=True)
        browser.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--sample-trials", type=int, default=200,
                        help="trials ingested one step per write to measure the rate")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy the report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sample = SqlStore(f"sqlite:///{tmp}/sample.sqlite")
        took, results = ingest(sample, args.sample_trials, args.steps, per_step=True)
        rate = results / took
        print(f"ingestion: {results} results one per write in {took:.1f}s = {rate:.0f}/s",
              flush=True)

        store = SqlStore(f"sqlite:///{tmp}/scale.sqlite")
        built, total = ingest(store, args.trials, args.steps, per_step=False)
        print(f"built {args.trials} trials ({total} results) in {built:.1f}s", flush=True)
        started = time.perf_counter()
        files = write_report(store, "scale", Path(tmp) / "report")
        report_s = time.perf_counter() - started
        html_mb = files.files["html"].stat().st_size / 1e6
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        render_s = browser_render_seconds(files.files["html"], Path(tmp))
        if args.keep:
            shutil.copytree(Path(tmp) / "report", args.keep, dirs_exist_ok=True)
    print(f"report: {report_s:.1f}s, report.html {html_mb:.1f} MB, peak RSS {peak_mb:.0f} MB")
    rows = [
        ("store ingestion, one result per write (SQLite)", f"{rate:.0f} results/s",
         ">= 500/s", rate >= 500),
        (f"report of {args.trials} trials x {args.steps} steps", f"{report_s:.1f} s", "< 20 s",
         report_s < 20),
        ("report.html size", f"{html_mb:.1f} MB", "", None),
        ("report.html: load and draw every plot in headless Chromium",
         "n/a (no chromium)" if render_s is None else f"{render_s:.1f} s", "", None),
        ("peak memory (RSS)", f"{peak_mb:.0f} MB", "", None),
    ]
    print("\n| measure | value | target | verdict |\n|---|---|---|---|")
    for name, value, target, ok in rows:
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        print(f"| {name} | {value} | {target} | {verdict} |")
    if args.json:
        args.json.write_text(json.dumps({
            "trials": args.trials, "steps": args.steps, "ingestion_per_s": rate,
            "report_s": report_s, "html_mb": html_mb, "peak_rss_mb": peak_mb,
            "browser_render_s": render_s}, indent=1))


if __name__ == "__main__":
    main()
