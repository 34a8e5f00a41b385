"""Every malformed study file gets `FILE:LINE: field.path: message (got VALUE)` and exit 2."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from searchsvc.cli import main

HEAD = """\
study: t
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
"""
# HEAD is 4 lines: a case's first line after HEAD is line 5.

CASES: list[tuple[str, str, int | None, str, str, str | None]] = [
    # id, file text, line, field, message fragment, echoed value (None: no value echoed)
    ("empty-file", "", 1, "(file)", "file is empty", None),
    ("only-comments", "# nothing here\n# at all\n", 1, "(file)", "holds no YAML document", None),
    ("not-yaml", HEAD + "parameters: [unclosed\n", 6, "(file)", "not valid YAML", None),
    ("top-level-list", "- a\n- b\n", 1, "(file)", "must be a mapping of fields", "['a', 'b']"),
    ("unknown-top-key", HEAD + "sercher: random\nparameters: {x: {low: 0, high: 1}}\n", 5,
     "sercher", "unknown field (did you mean 'searcher'?)", None),
    ("unknown-parameter-key", HEAD + "parameters:\n  x: {low: 0, hi: 1}\n", 6, "parameters.x.hi",
     "unknown field (did you mean 'high'?)", None),
    ("wrong-type-trials", HEAD + "budget: {trials: ten}\nparameters: {x: {low: 0, high: 1}}\n",
     5, "budget.trials", "must be an integer", "'ten'"),
    ("bool-as-number", HEAD + "parameters:\n  x: {low: true, high: 1}\n", 6, "parameters.x.low",
     "must be a number", "True"),
    ("low-not-below-high", HEAD + "parameters:\n  lr:\n    low: 0.5\n    high: 0.1\n", 7,
     "parameters.lr.low", "low must be less than high (0.1)", "0.5"),
    ("log-scale-nonpositive-low", HEAD + "parameters:\n  lr: {low: 0.0, high: 1.0, scale: log}\n",
     6, "parameters.lr.low", "a log-scale range needs low > 0", "0.0"),
    ("unknown-searcher", HEAD + "searcher: bayes\nbudget: {trials: 4}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "searcher",
     "unknown searcher (valid: asha, bayesian, bohb, grid, hyperband, keras_tuner, nas, pbt, "
     "quasi_random, random)", "'bayes'"),
    ("scientific-continuous", HEAD + "parameters:\n  depth: {role: scientific, low: 0.0, "
     "high: 3.0}\n", 6, "parameters.depth", "must take discrete values", None),
    ("when-missing-parameter", HEAD + "parameters:\n  optimizer: {values: [adam, sgd]}\n"
     "  momentum: {low: 0.5, high: 0.99, when: {optimiser: sgd}}\n", 7,
     "parameters.momentum.when.optimiser",
     "names a parameter that is not declared (did you mean 'optimizer'?)", "'optimiser'"),
    ("when-cycle", HEAD + "parameters:\n  a: {values: [1, 2], when: {b: 1}}\n"
     "  b: {values: [1, 2], when: {a: 1}}\n", 6, "parameters.a.when",
     "conditions form a cycle: a -> b -> a", None),
    ("when-self", HEAD + "parameters:\n  a: {values: [1, 2], when: {a: 1}}\n", 6,
     "parameters.a.when.a", "cannot depend on itself", "'a'"),
    ("when-value-never-taken", HEAD + "parameters:\n  opt: {values: [adam, sgd]}\n"
     "  mom: {low: 0.5, high: 0.9, when: {opt: sgdd}}\n", 7, "parameters.mom.when.opt",
     "'opt' never takes this value", "'sgdd'"),
    ("when-continuous-parent", HEAD + "parameters:\n  lr: {low: 0.1, high: 1.0}\n"
     "  mom: {low: 0.5, high: 0.9, when: {lr: 0.5}}\n", 7, "parameters.mom.when.lr",
     "conditions need a parameter with discrete values", "'lr'"),
    ("scientific-depends-on-nuisance", HEAD + "parameters:\n  opt: {values: [adam, sgd]}\n"
     "  depth: {role: scientific, values: [1, 2], when: {opt: sgd}}\n", 7,
     "parameters.depth.when.opt", "can only depend on scientific or fixed", "'opt'"),
    ("fixed-without-value", HEAD + "parameters:\n  bs: {role: fixed}\n", 6, "parameters.bs",
     "a fixed parameter needs `value`", None),
    ("fixed-with-range", HEAD + "parameters:\n  bs: {role: fixed, value: 64, low: 1}\n", 6,
     "parameters.bs.low", "a fixed parameter takes only `value`", None),
    ("value-on-nuisance", HEAD + "parameters:\n  bs: {role: nuisance, value: 64}\n", 6,
     "parameters.bs.value", "`value` is only for fixed parameters", "64"),
    ("duplicate-parameter", HEAD + "parameters:\n  lr: {low: 0.1, high: 1.0}\n"
     "  lr: {low: 0.2, high: 2.0}\n", 7, "parameters.lr", "duplicate key (first defined on line 6)",
     None),
    ("yaml-bomb", HEAD + "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, "
     "*a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, "
     "*c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, "
     "*e, *e, *e, *e]\nparameters: {x: {low: 0, high: 1}}\n", None, "(file)", "alias bomb", None),
    ("huge-file", HEAD + "description: \"" + "x" * (1 << 20) + "\"\n", None, "(file)",
     "file is too large", None),
    ("bad-mode", "study: t\nobjective: objectives.synthetic:playbook\nmetric: val_loss\n"
     "mode: minimize\nparameters: {x: {low: 0, high: 1}}\n", 4, "mode", "must be 'min' or 'max'",
     "'minimize'"),
    ("bad-study-name", "study: My Study\nobjective: objectives.synthetic:playbook\n"
     "metric: val_loss\nmode: min\nparameters: {x: {low: 0, high: 1}}\n", 1, "study",
     "must be lowercase letters", "'My Study'"),
    ("bad-objective-ref", "study: t\nobjective: objectives/synthetic.py\nmetric: val_loss\n"
     "mode: min\nparameters: {x: {low: 0, high: 1}}\n", 2, "objective",
     'must be "module:callable"', "'objectives/synthetic.py'"),
    ("missing-metric", "study: t\nobjective: objectives.synthetic:playbook\nmode: min\n"
     "parameters: {x: {low: 0, high: 1}}\n", 1, "metric", "is required", None),
    ("int-with-fraction", HEAD + "parameters:\n  layers: {type: int, low: 0.5, high: 4}\n", 6,
     "parameters.layers.low", "type int needs whole numbers", "0.5"),
    ("step-with-log", HEAD + "parameters:\n  lr: {low: 0.1, high: 1.0, scale: log, step: 0.1}\n",
     6, "parameters.lr.step", "`step` cannot be combined with scale: log", "0.1"),
    ("step-not-dividing", HEAD + "parameters:\n  x: {low: 0.0, high: 1.0, step: 0.3}\n", 6,
     "parameters.x.step", "must divide high - low (1) evenly", "0.3"),
    ("empty-values", HEAD + "parameters:\n  act: {values: []}\n", 6, "parameters.act.values",
     "must list at least one value", "[]"),
    ("duplicate-values", HEAD + "parameters:\n  act:\n    values:\n      - relu\n      - relu\n",
     9, "parameters.act.values.1", "duplicate value", "'relu'"),
    ("range-and-values", HEAD + "parameters:\n  x: {low: 0, high: 1, values: [0, 1]}\n", 6,
     "parameters.x", "give either low/high or values, not both", None),
    ("range-missing-high", HEAD + "parameters:\n  x: {low: 0}\n", 6, "parameters.x",
     "`high` is missing", None),
    ("fractional-gpus-above-one", HEAD + "resources: {gpu: 1.5}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "resources.gpu", "whole GPUs", "1.5"),
    ("gpu-misspelt-auto", HEAD + "resources: {gpu: automatic}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "resources.gpu", "a number of GPUs or `auto`",
     "'automatic'"),
    ("gpu-auto-with-workers", HEAD + "resources: {gpu: auto, workers: 2}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "resources.gpu", "needs a number", "'auto'"),
    ("zero-workers", HEAD + "resources: {workers: 0}\nparameters: {x: {low: 0, high: 1}}\n", 5,
     "resources.workers", "must be at least 1", "0"),
    ("fractional-workers", HEAD + "resources: {workers: 1.5}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "resources.workers", "integer", "1.5"),
    ("workers-on-keras", HEAD + "backend: keras_tuner\nresources: {workers: 2}\n"
     "budget: {trials: 4}\nparameters: {x: {low: 0, high: 1}}\n", 6, "resources.workers",
     "`workers` needs backend 'ray'", "2"),
    ("dimensionality-every-zero", HEAD + "dimensionality: {every: 0}\nbudget: {trials: 4}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "dimensionality.every",
     "must be `auto` or a positive whole number", "0"),
    ("dimensionality-until-negative", HEAD + "dimensionality: {until: -0.5}\n"
     "budget: {trials: 4}\nparameters: {x: {low: 0, high: 1}}\n", 5, "dimensionality.until",
     "must be `off`, a fraction of max_steps", "-0.5"),
    ("dimensionality-unknown-key", HEAD + "dimensionality: {evry: 5}\nbudget: {trials: 4}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "dimensionality.evry",
     "unknown field (did you mean 'every'?)", None),
    ("dimensionality-on-keras", HEAD + "backend: keras_tuner\ndimensionality: {every: 5}\n"
     "budget: {trials: 4}\nparameters: {x: {low: 0, high: 1}}\n", 6, "dimensionality",
     "measured by sdk.watch in PyTorch objectives", None),
    ("stop-collapsed-without-rungs", HEAD + "searcher: random\nbudget: {trials: 4}\n"
     "dimensionality: {stop_collapsed: true}\nparameters: {x: {low: 0, high: 1}}\n", 7,
     "dimensionality.stop_collapsed", "through a multi-fidelity searcher", "True"),
    ("grid-continuous", HEAD + "searcher: grid\nparameters:\n  x: {low: 0.0, high: 1.0}\n", 7,
     "parameters.x", "grid search needs discrete values", None),
    ("fewer-trials-than-arms", HEAD + "budget: {trials: 2}\nparameters:\n"
     "  depth: {role: scientific, values: [1, 2, 3]}\n  lr: {low: 0.1, high: 1.0}\n", 5,
     "budget.trials", "fewer trials than the 3 scientific combinations", "2"),
    ("unknown-backend", HEAD + "backend: sklearn\nbudget: {trials: 4}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 5, "backend", "unknown or unavailable backend", None),
    ("unknown-searcher-option", HEAD + "searcher: random\nsearcher_options: {sampler: tpe}\n"
     "budget: {trials: 4}\nparameters: {x: {low: 0, high: 1}}\n", 6, "searcher_options.sampler",
     "unknown field", None),
    ("missing-trials", HEAD + "parameters: {x: {low: 0, high: 1}}\n", None, "budget.trials",
     "needs budget.trials", None),
    ("bad-parameter-name", HEAD + "parameters:\n  2lr: {low: 0.1, high: 1.0}\n", 6,
     "parameters.2lr", "parameter names must be identifiers", "'2lr'"),
    ("early-stopping-beside-asha", HEAD + "searcher: asha\nbudget: {trials: 4, max_steps: 9}\n"
     "early_stopping: {rule: median}\nparameters: {x: {low: 0, high: 1}}\n", 7,
     "early_stopping.rule", "searcher 'asha' stops trials at its own rungs", "'median'"),
    ("early-stopping-beside-pbt", HEAD + "searcher: pbt\nbudget: {trials: 4, max_steps: 9}\n"
     "early_stopping:\n  rule: asha\nparameters: {x: {low: 0, high: 1}}\n", 8,
     "early_stopping.rule", "pauses trials and copies", "'asha'"),
    ("early-stopping-without-max-steps", HEAD + "budget: {trials: 4}\n"
     "early_stopping: {rule: median}\nparameters: {x: {low: 0, high: 1}}\n", 6,
     "early_stopping", "set budget.max_steps", None),
    ("early-stopping-grace-at-the-budget", HEAD + "budget: {trials: 4, max_steps: 9}\n"
     "early_stopping:\n  rule: asha\n  grace_period: 9\nparameters: {x: {low: 0, high: 1}}\n",
     8, "early_stopping.grace_period", "must be below budget.max_steps (9)", "9"),
    ("early-stopping-keep-above-1", HEAD + "budget: {trials: 4, max_steps: 9}\n"
     "early_stopping: {rule: percentile, keep: 1.5}\nparameters: {x: {low: 0, high: 1}}\n",
     6, "early_stopping.keep", "must be between 0 and 1", "1.5"),
    ("early-stopping-unknown-rule", HEAD + "budget: {trials: 4, max_steps: 9}\n"
     "early_stopping: {rule: successive_halving}\nparameters: {x: {low: 0, high: 1}}\n",
     6, "early_stopping.rule", "'asha'", "'successive_halving'"),
    ("early-stopping-several-metrics", "study: t\nobjective: objectives.synthetic:playbook\n"
     "metrics: [{name: a, mode: min}, {name: b, mode: max}]\nsearcher: bayesian\n"
     "budget: {trials: 4, max_steps: 9}\nearly_stopping: {rule: median}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 6, "early_stopping", "ranks trials on one metric",
     None),
    ("early-stopping-own-search-backend", HEAD + "backend: autokeras\n"
     "budget: {trials: 4, max_steps: 9}\nearly_stopping: {rule: median}\n"
     "parameters: {x: {low: 0, high: 1}}\n", 7, "early_stopping", "runs its own search", None),
    ("early-stopping-brackets-on-asha", HEAD + "budget: {trials: 4, max_steps: 9}\n"
     "early_stopping: {rule: asha, brackets: 2}\nparameters: {x: {low: 0, high: 1}}\n", 6,
     "early_stopping.brackets", "only the hyperband rule has brackets", "2"),
    ("too-deep", HEAD + "description: " + "[" * 60 + "]" * 60 + "\nparameters: {x: {low: 0, "
     "high: 1}}\n", 5, "(file)", "nesting is deeper than 50 levels", None),
]


@pytest.mark.parametrize(("text", "line", "field", "message", "value"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_file_reports_location_and_exits_2(tmp_path: Path, capsys, text, line, field,
                                                     message, value) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    errors = capsys.readouterr().err
    where = f"{path}:{line}: " if line is not None else f"{path}"
    matching = [e for e in errors.splitlines() if e.startswith(where) and f" {field}: " in e]
    assert matching, f"no error at {where} for {field} in:\n{errors}"
    assert any(message in e for e in matching), errors
    if value is not None:
        assert any(f"(got {value})" in e for e in matching), errors
    assert "Traceback" not in errors


def test_gpu_auto_is_accepted(tmp_path: Path, capsys) -> None:
    """``gpu: auto``: the first trials hold a whole GPU, the driver packs the rest."""
    from searchsvc.spec import load_spec

    path = tmp_path / "study.yaml"
    path.write_text(HEAD + "budget: {trials: 4}\nresources: {cpu: 4, gpu: auto}\n"
                    "parameters: {x: {low: 0, high: 1}}\n")
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    resources = load_spec(path).resources
    assert (resources.gpu, resources.gpu_auto, resources.cpu) == (1.0, True, 4.0)


def test_at_least_25_distinct_malformed_files() -> None:
    assert len({c[0] for c in CASES}) >= 25


def test_non_utf8_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "study.yaml"
    path.write_bytes(b"study: t\nobjective: \xff\xfe\n")
    assert main(["validate", str(path)]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_missing_file(tmp_path: Path, capsys) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read file" in capsys.readouterr().err


def test_every_problem_reported_at_once(tmp_path: Path, capsys) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(HEAD + "parameters:\n  a: {low: 2, high: 1}\n  b: {role: fixed}\n"
                    "  b: {role: fixed, value: 1}\n")
    assert main(["validate", str(path)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert [e.split(": ")[0].rsplit(":", 1)[1] for e in errors] == ["6", "7", "8"]


def test_run_of_malformed_file_exits_2_without_traceback(tmp_path: Path) -> None:
    """The real console script, as a user types it."""
    path = tmp_path / "study.yaml"
    path.write_text(textwrap.dedent(HEAD + "parameters:\n  lr: {low: 1, high: 0.1}\n"))
    proc = subprocess.run([sys.executable, "-m", "searchsvc.cli", "run", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert f"{path}:6: parameters.lr.low: low must be less than high (0.1) (got 1)" in proc.stderr
    assert "Traceback" not in proc.stderr
