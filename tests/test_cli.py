"""`list`, `show` and `report` read the store and say what a user needs, without running Ray."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from searchsvc.cli import main
from searchsvc.core import StudyState, TrialState
from searchsvc.store import SqlStore, Store

ROOT = Path(__file__).resolve().parents[1]


def seeded_store(home: Path) -> Store:
    store = SqlStore(f"sqlite:///{home / 'searchsvc.db'}")
    spec = ROOT / "spaces" / "quickstart.yaml"
    study = store.create_study(
        name="quickstart", metric="val_error", mode="min", searcher="quasi_random",
        spec_text=spec.read_text(), spec_file=str(spec), total_trials=16,
        results_dir=str(home / "results" / "quickstart"), provenance={})
    for n, (lr, values) in enumerate([(0.01, [0.3, 0.1, 0.2]), (0.001, [0.5, 0.4, 0.45])]):
        t = store.start_trial(study.id, number=n, config={"num_layers": n + 1,
                              "learning_rate": lr, "weight_decay": 1e-4}, arm={"num_layers": n + 1},
                              seed=n)
        store.record_measurements(t.id, 1, "min", [(s + 1, v, {"val_error": v})
                                                   for s, v in enumerate(values)])
        store.finish_trial(t.id, TrialState.COMPLETED)
    t = store.start_trial(study.id, number=2, config={"num_layers": 1, "learning_rate": 0.5,
                          "weight_decay": 1e-4}, arm={"num_layers": 1}, seed=2)
    store.finish_trial(t.id, TrialState.FAILED, error="Traceback...\nRuntimeError: boom")
    return store


def test_list_and_show(searchsvc_home: Path, capsys) -> None:
    seeded_store(searchsvc_home)
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "quickstart" in listed and "3/16" in listed and "best val_error" in listed
    assert main(["show", "quickstart"]) == 0
    shown = capsys.readouterr().out
    assert "2 completed, 1 failed" in shown
    assert shown.index("0.1") < shown.index("0.4")  # best first
    assert "2/3" in shown  # retrospective best step of trial 0
    assert "trial 2 (failed):\n  Traceback...\n  RuntimeError: boom" in shown  # its error's end


def test_a_run_refused_by_its_cluster_address_replaces_no_study(searchsvc_home: Path,
                                                                capsys) -> None:
    store = seeded_store(searchsvc_home)
    for preflight in (["--no-preflight"], []):
        code = main(["run", str(ROOT / "spaces" / "quickstart.yaml"), "--overwrite",
                     "--address", "ray://127.0.0.1:1", *preflight])
        assert code != 0 and "Ray Client (ray://) is not supported" in capsys.readouterr().err
        assert len(store.get_trials("quickstart")) == 3  # the study it would replace is kept


def test_a_cluster_address_where_nothing_answers_fails_after_20_seconds_naming_it(
        searchsvc_home: Path) -> None:
    from searchsvc.testing.served import free_port

    store = seeded_store(searchsvc_home)
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    done = subprocess.run([sys.executable, "-m", "searchsvc.cli", "run",
                           str(ROOT / "spaces" / "quickstart.yaml"), "--overwrite", "--address",
                           address, "--no-preflight"], capture_output=True, text=True,
                          timeout=300)  # ray.init alone would retry for many minutes
    assert done.returncode == 6, done.stderr
    assert f"could not start Ray at {address}: ClusterRefused: no Ray cluster answered at " \
        f"{address} within 20 s" in done.stderr
    assert "RAY_AUTH_TOKEN" not in done.stderr  # a token is not what is wrong
    assert len(store.get_trials("quickstart")) == 3  # the study it would replace is kept


def test_list_fits_80_columns_with_the_best_values_whole(searchsvc_home: Path, capsys,
                                                         monkeypatch) -> None:
    store = seeded_store(searchsvc_home)
    for name, metric in [("resnet50-learning-rate-sweep-with-warmup", "val_error"),
                         ("cifar10-wide-resnet-depth", "validation_cross_entropy")]:
        study = store.create_study(
            name=name, metric=metric, mode="min", searcher="hyperband_bayes", spec_text="",
            spec_file="study.yaml", total_trials=1000, results_dir=None, provenance={})
        trial = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(trial.id, 1, "min", [(1, 0.012345678, {metric: 0.012345678})])
        store.finish_trial(trial.id, TrialState.COMPLETED)
        store.update_study(name, state="interrupted")
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert max(map(len, listed.splitlines())) <= 80, listed
    assert listed.count("0.01235") == 2 and "  0.1  " in listed, listed
    assert "metric" in listed  # a column of its own when the studies' metrics differ
    for name in ("quickstart", "interrupted", "1/1000", "3/16"):
        assert name in listed


def test_report_writes_every_format(searchsvc_home: Path, tmp_path: Path, capsys) -> None:
    seeded_store(searchsvc_home)
    out = tmp_path / "out"
    assert main(["report", "quickstart", "--out", str(out)]) == 0
    data = json.loads((out / "report.json").read_text())
    assert data["counts"]["completed"] == 2 and data["counts"]["failed"] == 1
    assert [t["trial_id"] for t in data["best_trials"]] == [0, 1]
    assert data["best_trials"][0]["best_step"] == 2
    assert "RuntimeError: boom" in (out / "report.md").read_text()
    # one axis plot per searched parameter: num_layers, learning_rate, weight_decay
    assert (out / "report.html").read_text().count('id="fig-axis-') == 3
    assert sorted(p.name for p in (out / "plots").glob("axis_*.png")) == [
        "axis_learning_rate.png", "axis_num_layers.png", "axis_weight_decay.png"]
    assert (out / "next_study.yaml").read_text().count("study: quickstart-next") == 1
    assert (out / "trials.csv").read_text().splitlines()[0].startswith("number,state,best_value")


def test_unknown_study_and_format_are_clear_errors(searchsvc_home: Path, capsys) -> None:
    seeded_store(searchsvc_home)
    assert main(["show", "nope"]) == 3
    assert "no study named 'nope'" in capsys.readouterr().err
    assert main(["report", "quickstart", "--format", "pdf"]) == 1
    assert "unknown report format 'pdf' (valid: html, md, json)" in capsys.readouterr().err


def test_a_crash_in_native_code_shows_each_threads_python_stack() -> None:
    """The command line's process (`searchsvc`, `python -m searchsvc.cli`) dumps every
    thread's Python stack when native code crashes it, instead of ending with only SIGSEGV."""
    crash = ("import ctypes, searchsvc.cli as cli\n"
             "cli.main = lambda: ctypes.string_at(0)  # a read of address 0: SIGSEGV\n"
             "cli.entrypoint()\n")
    done = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == -signal.SIGSEGV, done
    assert "Fatal Python error: Segmentation fault" in done.stderr, done.stderr
    assert "in <lambda>" in done.stderr and "in entrypoint" in done.stderr, done.stderr


def test_a_mistyped_command_or_option_is_a_usage_error_not_a_traceback(capsys) -> None:
    assert main(["token", "--help"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'token'. Did you mean 'tokens'?" in err and "Traceback" not in err
    assert main(["run", "--bogus", "x"]) == 2
    assert "No such option: --bogus" in capsys.readouterr().err


def test_show_says_why_a_failed_study_failed(searchsvc_home: Path, capsys) -> None:
    store = seeded_store(searchsvc_home)
    assert main(["show", "quickstart"]) == 0
    assert "why:" not in capsys.readouterr().out  # it did not fail
    store.update_study("quickstart", state=StudyState.FAILED,
                       provenance={"failure": "the first 3 trials all failed with ValueError"})
    assert main(["show", "quickstart"]) == 0
    assert "why: the first 3 trials all failed with ValueError" in capsys.readouterr().out


def test_run_refuses_existing_study_and_points_to_resume(searchsvc_home: Path, capsys) -> None:
    seeded_store(searchsvc_home)
    assert main(["run", str(ROOT / "spaces" / "quickstart.yaml")]) == 4
    err = capsys.readouterr().err
    assert "already exists" in err and "searchsvc resume quickstart" in err


def test_an_admin_sets_quotas_and_token_priorities(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    assert main(["quota", "set", "ada", "--gpu", "1", "--storage", url]) == 0
    assert capsys.readouterr().out == "ada: at most 1 GPU\n"
    assert main(["quota", "set", "bob", "--cpu", "4", "--gpu", "0.5", "--storage", url]) == 0
    assert main(["quota", "set", "ada", "--storage", url]) == 0  # neither: removed
    capsys.readouterr()
    assert main(["quota", "list", "--storage", url]) == 0
    assert capsys.readouterr().out == "bob: at most 4 CPU, at most 0.5 GPU\n"
    assert main(["quota", "set", "bob", "--gpu", "-1", "--storage", url]) == 2
    assert "Invalid value for '--gpu'" in capsys.readouterr().err

    assert main(["tokens", "create", "cy", "--max-priority", "20", "--storage", url]) == 0
    token = capsys.readouterr().out.strip()
    store = SqlStore(url)
    grant = store.grant_for_token(token)
    assert grant is not None and grant.max_priority == 20
    assert store.get_quotas() == {"bob": {"CPU": 4.0, "GPU": 0.5}}
