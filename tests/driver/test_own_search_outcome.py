"""A backend that runs its own search (``autokeras``) has its trials judged by the same outcome
rule as a Ray Tune trial, on their final metrics: a NaN objective is infeasible, a trial that
never reports the metric failed, and a trial whose final metrics break the study's
``constraints:`` is infeasible, naming the bound (driver/own_search.py, written straight into a
store; no Ray started)."""

from __future__ import annotations

from pathlib import Path

from searchsvc.backends.base import SearchedTrial
from searchsvc.core import TrialState
from searchsvc.core.judging import best_trial, trial_outcome
from searchsvc.driver.own_search import _store_trial, searched_trial_end
from searchsvc.driver.progress import Progress
from searchsvc.spec import parse_spec
from searchsvc.store import open_store

ROOT = Path(__file__).resolve().parents[2]
SPEC = (ROOT / "spaces" / "autokeras_tabular.yaml").read_text() + (
    "constraints:\n  - {metric: params_k, max: 100}\n")


def test_an_own_search_trial_is_judged_like_a_ray_trial() -> None:
    spec = parse_spec(SPEC)
    assert spec.backend == "autokeras" and spec.constraints
    store = open_store("memory:")
    study = store.create_study(name=spec.name, metric=spec.metric, mode=spec.mode,
                               searcher=spec.searcher, spec_text=SPEC, spec_file="s.yaml",
                               total_trials=5, results_dir=None, provenance={},
                               constraints=spec.constraints)
    progress = Progress(spec.name, 5, spec.metric, spec.mode, constraints=spec.constraints,
                        live=False)

    def epochs(*accuracy: float, params_k: float = 50) -> list[dict[str, float]]:
        return [{"val_accuracy": a, "params_k": params_k} for a in accuracy]

    searched = [
        SearchedTrial(0, {"units": 8}, epochs(0.7, 0.8)),
        SearchedTrial(1, {"units": 512}, epochs(0.9, 0.95, params_k=900)),  # over the bound
        SearchedTrial(2, {"units": 16}, epochs(0.99, float("nan"))),
        SearchedTrial(3, {"units": 4}, [{"loss": 0.3}]),
        SearchedTrial(4, {"units": 2}, [], completed=False, error="Traceback: boom"),
    ]
    for trial in searched:
        _store_trial(spec, study, store, progress, trial, "here")
    stored = store.get_trials(spec.name)
    assert [t.state for t in stored] == [TrialState.COMPLETED, TrialState.INFEASIBLE,
                                         TrialState.INFEASIBLE, TrialState.FAILED,
                                         TrialState.FAILED]
    assert stored[1].error == "outside the constraint params_k <= 100: params_k = 900"
    assert stored[2].error == "val_accuracy became non-finite at step 2"
    assert "without reporting the metric 'val_accuracy' (it reported: loss)" in (
        stored[3].error or "")
    assert stored[4].error == "Traceback: boom"
    assert stored[1].final_metrics == {"val_accuracy": 0.95, "params_k": 900}
    for trial, record in zip(searched, stored, strict=True):
        assert trial_outcome(searched_trial_end(spec, trial)).state == record.state
    # The constraint judges the stored final metrics, as for a Ray study: 0 is the best.
    assert best_trial(stored, spec.mode, spec.constraints).number == 0  # type: ignore[union-attr]
    assert store.get_study(spec.name).best_value == 0.8
    assert progress.best == 0.8 and progress.failed == 4


def test_a_backends_own_search_trains_with_the_usual_garbage_collection(
        tmp_path: Path, monkeypatch) -> None:
    # Its Ray task started collecting rarely (the node's setup hook) for the imports; once the
    # user's objective is built, the search's training is collected as it would be anywhere.
    import gc
    from types import SimpleNamespace

    import ray

    from searchsvc import startup
    from searchsvc.backends.base import Backend
    from searchsvc.driver.own_search import _search

    seen: dict[str, tuple[int, ...]] = {}

    class OwnSearch(Backend):
        @classmethod
        def own_search(cls, objective, options, **kwargs) -> Path:
            seen["importing"] = gc.get_threshold()
            objective()
            seen["training"] = gc.get_threshold()
            return tmp_path / "best"

    (tmp_path / "userdata.py").write_text("def data():\n    return 'the data'\n")
    monkeypatch.setattr(ray, "get_runtime_context",
                        lambda: SimpleNamespace(get_node_id=lambda: "node"))
    before = gc.get_threshold()  # the test worker's, whatever ran in it before
    monkeypatch.setattr(startup, "_usual", None)  # as in a fresh worker process
    try:
        gc.set_threshold(700, 10, 10)  # CPython's own
        startup.collect_rarely()  # as the node's setup hook does
        _search(OwnSearch, "userdata:data", [str(tmp_path)], {}, "loss", 1, 1, 0,
                tmp_path / "search", False, None, None)
    finally:
        gc.set_threshold(*before)
    assert seen["importing"][0] == startup.STARTING_THRESHOLD
    assert seen["training"] == (700, 10, 10)
