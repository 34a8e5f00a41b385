"""backend: autokeras: a real AutoKeras structured-data search runs inside Ray, every one of its
trials lands in the store with its architecture choices and every epoch, and the exported best
model loads and predicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from objectives.autokeras_tabular import breast_cancer_csv
from searchsvc.core import TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate as validate_file

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_an_autokeras_search_stores_every_trial_and_exports_a_working_best_model(
        ray_local, tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    spec = validate_file(ROOT / "spaces" / "autokeras_tabular.yaml")
    options = RunOptions(live_progress=False, results_root=tmp_path / "results")
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    outcome = run_study(spec.name, store, options, searcher=searcher)
    assert outcome.study.state == "completed"

    trials = store.get_trials("autokeras_tabular", measurements=True)
    assert [t.number for t in trials] == [0, 1, 2]
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 3
    for t in trials:
        # its architecture and hyperparameter choices are its config
        assert any(k.startswith("structured_data_block_1/") for k in t.config)
        assert {"optimizer", "learning_rate"} <= set(t.config)
        assert [m.step for m in t.measurements] == [1, 2, 3]  # every epoch
        assert 0 <= t.best_value <= 1 and "val_loss" in t.measurements[0].metrics
    assert len({tuple(sorted(t.config.items())) for t in trials}) == 3  # three architectures

    import autokeras as ak
    import keras
    import pandas as pd

    best = Path(store.get_study("autokeras_tabular").provenance["best_model"])
    assert best.is_file() and best.is_relative_to(tmp_path / "results")
    model = keras.models.load_model(best, custom_objects=ak.CUSTOM_OBJECTS)
    frame = pd.read_csv(breast_cancer_csv())
    y = frame.pop("target").to_numpy()
    predicted = model.predict(frame.to_numpy("float32"), verbose=0)
    assert predicted.shape == (len(y), 1)
    assert np.mean((predicted[:, 0] > 0.5) == y) > 0.8

    files = write_report(store, "autokeras_tabular", tmp_path / "report")
    assert '<section id="best">' in files.files["html"].read_text()
