"""GPU packing on the realistic objective: how many trials per hour the ResNet study
(objectives/resnet_images.py, GPU-bound: images in GPU memory, augmented there per batch) runs
with ``resources.gpu`` 1, 0.5, 0.25 and 0.125, with and without bf16 mixed precision, the GPU
utilisation and peak memory the trials' telemetry measured, and whether the packing the report
advises (its under-used-GPU diagnosis, from the ``gpu: 1`` run) is good: PASS when it is the
packing measured to run the most trials per hour, or one within :data:`ADVICE_TOLERANCE` of
that throughput (packings a few percent apart are within a run's noise).

    .venv/bin/python benchmarks/gpu.py [--quick] [--trials 8] [--steps 2]
        [--steps-per-epoch 20] [--packings 1,0.5,0.25,0.125] [--amp on,off] [--width 64]
        [--batch-size 512] [--objective resnet_images|resnet_input_bound] [--json FILE]

Defaults: all eight rows (bf16 and fp32, four packings) in under 5 minutes on one H100,
estimated from the rates measured there on 2026-11-26 (about 14 s of study start-up a row, and
each row's trials a few seconds each); ``--quick``: bf16 only, 4 trials of one 10-batch step,
in under 2 minutes. ``--objective resnet_input_bound``: the per-sample objective the first H100
rows were measured with (benchmarks/RESULTS.md, "GPU").

Every row is one study through searchsvc on embedded Ray (quasi-random learning rate and
weight decay, everything else fixed), its own SEARCHSVC_HOME in a temporary folder. Trials per
hour = trials / the study's wall time (from the first trial's start to the last one's end).
Needs a CUDA device; without one every row is printed as not measured, and the script says why.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ADVICE_TOLERANCE = 0.10  # advice within this share of the best measured throughput passes
QUICK = {"trials": 4, "steps": 1, "steps_per_epoch": 10, "amp": "on"}


def study_file(gpu: float, amp: bool, args: argparse.Namespace) -> dict[str, Any]:
    # The machine's CPUs shared as the GPU is: 4 trials per GPU get a quarter each.
    cpus = max(1, int((os.cpu_count() or 2) * min(gpu, 1.0)))
    return {
        "study": f"gpu-{str(gpu).replace('.', '')}-{'amp' if amp else 'fp32'}",
        "objective": f"objectives.{args.objective}:train",
        "metric": "val_error", "mode": "min", "searcher": "quasi_random",
        "budget": {"trials": args.trials, "max_steps": args.steps},
        "resources": {"cpu": cpus, "gpu": 0 if args.smoke else gpu},
        "noise": "off", "seed": 0,
        "parameters": {
            "learning_rate": {"low": 0.02, "high": 0.4, "scale": "log"},
            "weight_decay": {"low": 1e-5, "high": 1e-3, "scale": "log"},
            "width": {"value": args.width}, "depth": {"value": 2},
            "batch_size": {"value": args.batch_size}, "amp": {"value": amp},
            "channels_last": {"value": True}, "dataset_size": {"value": args.dataset_size},
            "steps_per_epoch": {"value": args.steps_per_epoch},
            **({"workers": {"value": 2}} if args.objective == "resnet_input_bound" else {}),
            **({"image_size": {"value": 16}, "workers": {"value": 0}} if args.smoke else {}),
        },
    }


def measure(gpu: float, amp: bool, args: argparse.Namespace) -> dict[str, Any]:
    import searchsvc

    with tempfile.TemporaryDirectory() as home:
        os.environ["SEARCHSVC_HOME"] = home
        os.chdir(ROOT)
        study = searchsvc.run(study_file(gpu, amp, args), preflight=False)
        trials = study.trials
        report = json.loads((Path(study.record.results_dir or home) / "report.json")
                            .read_text())
    started = min(t.started_at for t in trials if t.started_at)
    ended = max(t.finished_at for t in trials if t.finished_at)
    telemetry = report.get("telemetry") or {}
    summaries = telemetry.get("trials") or []
    utils = [s["gpu_util_mean"] for s in summaries if s.get("gpu_util_mean") is not None]
    peaks = [s["gpu_mem_peak_mb"] for s in summaries if s.get("gpu_mem_peak_mb") is not None]
    advice = next((d for d in telemetry.get("diagnoses", []) if d["kind"] == "underused_gpu"),
                  None)
    return {"gpu": gpu, "amp": amp, "trials": len(trials),
            "completed": sum(t.state == "completed" for t in trials),
            "wall_s": ended - started, "trials_per_hour": len(trials) * 3600 / (ended - started),
            "gpu_util_mean": statistics.mean(utils) if utils else None,
            "gpu_mem_peak_mb": max(peaks) if peaks else None,
            "gpu_name": next((s.get("gpu_name") for s in summaries if s.get("gpu_name")), None),
            "advised_gpu": advice.get("suggested_gpu") if advice else None}


def judge_advice(rows: list[dict[str, Any]]) -> str:
    """The verdict on the ``gpu: 1`` report's packing advice among one precision's finished
    rows: PASS when the advised packing (none advised: gpu 1) was measured within
    ADVICE_TOLERANCE of the best trials/hour, FAIL when it ran slower, UNJUDGED when the
    advised packing was not measured."""
    best = max(rows, key=lambda r: r["trials_per_hour"])
    whole = next((r for r in rows if r["gpu"] == 1), None)
    if whole is None:
        return "UNJUDGED (no gpu: 1 row to take the advice from)"
    advised = whole["advised_gpu"] if whole["advised_gpu"] is not None else 1.0
    said = ("no packing (gpu: 1)" if whole["advised_gpu"] is None
            else f"gpu: {advised:g}")
    row = next((r for r in rows if abs(r["gpu"] - advised) < 1e-9), None)
    head = f"measured best packing gpu: {best['gpu']:g}; the gpu: 1 report advised {said}"
    if row is None:
        return f"{head}: UNJUDGED (that packing was not measured)"
    share = row["trials_per_hour"] / best["trials_per_hour"]
    verdict = "PASS" if share >= 1 - ADVICE_TOLERANCE else "FAIL"
    return (f"{head}, which ran {share:.1%} of the best's trials/hour (pass: at least "
            f"{1 - ADVICE_TOLERANCE:.0%}): {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=(
        "bf16 only, 4 trials of one 10-batch step: under 2 minutes on an H100"))
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, default=20)
    parser.add_argument("--packings", default="1,0.5,0.25,0.125")
    parser.add_argument("--amp", default="on,off")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--dataset-size", type=int, default=20_000)
    parser.add_argument("--objective", default="resnet_images",
                        choices=["resnet_images", "resnet_input_bound"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help=(
        "check this script's plumbing on the CPU: tiny images, no GPU requested (the numbers "
        "mean nothing)"))
    args = parser.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    if args.smoke:  # tiny images and model (16 x 16 images, set in study_file)
        args.width, args.batch_size, args.dataset_size = 8, 64, 512
    packings = [float(p) for p in args.packings.split(",")]
    amps = [a == "on" for a in args.amp.split(",")]

    import torch

    if not torch.cuda.is_available() and not args.smoke:
        print("No CUDA device (torch.cuda.is_available() is False): GPU rows not measured.\n")
        print("| gpu per trial | amp | trials/hour | GPU util | peak memory |\n"
              "|---|---|---|---|---|")
        for gpu in packings:
            for amp in amps:
                print(f"| {gpu:g} | {'bf16' if amp else 'fp32'} | not measured | not measured "
                      "| not measured |")
        return
    rows = []
    for amp in amps:
        for gpu in packings:
            started = time.perf_counter()
            row = measure(gpu, amp, args)
            rows.append(row)
            print(f"gpu {gpu:g} {'bf16' if amp else 'fp32'}: {row['trials_per_hour']:.0f} "
                  f"trials/h ({time.perf_counter() - started:.0f} s)", flush=True)
    name = next((r["gpu_name"] for r in rows if r["gpu_name"]),
                "CPU (smoke run)" if args.smoke else torch.cuda.get_device_name(0))
    lines = [f"GPU: {name}; {args.trials} trials x {args.steps} steps x "
             f"{args.steps_per_epoch} batches of {args.batch_size}, width {args.width}, "
             f"{args.objective}\n",
             "| gpu per trial | amp | trials/hour | GPU util (mean) | peak memory | "
             "report's advice |", "|---|---|---|---|---|---|"]
    for r in rows:
        util = "-" if r["gpu_util_mean"] is None else f"{r['gpu_util_mean']:.0f}%"
        peak = "-" if r["gpu_mem_peak_mb"] is None else f"{r['gpu_mem_peak_mb'] / 1024:.2f} GiB"
        advice = "-" if r["advised_gpu"] is None else f"gpu: {r['advised_gpu']:g}"
        lines.append(f"| {r['gpu']:g} | {'bf16' if r['amp'] else 'fp32'} | "
                     f"{r['trials_per_hour']:.0f} | {util} | {peak} | {advice} |")
    for amp in amps:
        same = [r for r in rows if r["amp"] == amp and r["completed"] == r["trials"]]
        if same:
            lines.append(f"\n{'bf16' if amp else 'fp32'}: {judge_advice(same)}")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({"gpu": name, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
