"""The wire format (core/wire.py): what the API writes, sent as strict JSON, reads back as
the same records in the client, non-finite metrics included."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from searchsvc.core import Constraint, Measurement, StudyRecord, StudyState, TrialRecord, TrialState
from searchsvc.core.wire import study_json, study_record, trial_json, trial_record


def over_http(payload: object) -> object:
    """As the server sends and the client reads it: JSON without NaN or infinity."""
    return json.loads(json.dumps(payload, allow_nan=False))


def test_a_trial_with_diverged_metrics_reads_back_as_it_was_sent() -> None:
    trial = TrialRecord(
        id=7, study_id=3, number=4, state=TrialState.INFEASIBLE, config={"lr": 0.1},
        arm={"depth": 2}, seed=11, attempts=2, error="non-finite at step 2", started_at=1.0,
        finished_at=2.5, best_value=0.5, best_step=1, last_step=2, node="host (127.0.0.1)",
        checkpoints=("ckpt-1",), repeat_of=None,
        final_metrics={"loss": math.inf, "acc": -math.inf, "f1": 0.25},
        measurements=(Measurement(1, 0.5, {"loss": 0.5}, attempt=2, recorded_at=1.5,
                                  telemetry={"step_s": 0.1}),
                      Measurement(2, None, {"loss": math.nan}, attempt=2, recorded_at=2.0)))

    back = trial_record(over_http(trial_json(trial, curves=True)))

    assert math.isnan(back.measurements[1].metrics["loss"])
    assert back.final_metrics["loss"] == math.inf and back.final_metrics["acc"] == -math.inf
    same = replace(back, id=trial.id, study_id=trial.study_id,
                   measurements=trial.measurements)
    assert same == trial
    assert [(m.step, m.value, m.attempt, m.recorded_at, dict(m.telemetry))
            for m in back.measurements] == [(1, 0.5, 2, 1.5, {"step_s": 0.1}),
                                            (2, None, 2, 2.0, {})]
    assert "measurements" not in trial_json(trial, curves=False)


def test_a_study_reads_back_with_its_counts_constraints_and_detail() -> None:
    study = StudyRecord(
        id=9, name="s", state=StudyState.COMPLETED, metric="loss", mode="min",
        searcher="random", spec_text="study: s\n", spec_file="s.yaml", created_at=1.0,
        total_trials=8, started_at=2.0, finished_at=3.0, provenance={"git": "abc"},
        trial_counts={"completed": 7, "failed": 1}, best_value=0.1, owner="alice",
        repeat_counts={"completed": 2}, constraints=(Constraint("mem", high=4.0),))

    assert replace(study_record(over_http(study_json(study, detail=True))), id=9) == study
    brief = study_record(over_http(study_json(study)))
    assert (brief.spec_text, brief.owner, dict(brief.provenance)) == ("", None, {})
    assert brief.trial_counts == study.trial_counts and brief.constraints == study.constraints


def test_the_shared_empty_mapping_of_measurements_is_a_read_only_empty_dict() -> None:
    import copy
    import json
    import pickle

    from searchsvc.core.records import NO_VALUES

    assert NO_VALUES == {} and json.dumps(NO_VALUES) == "{}" and dict(NO_VALUES) == {}
    assert pickle.loads(pickle.dumps(NO_VALUES)) == {} and copy.deepcopy(NO_VALUES) == {}
    for change in (lambda m: m.__setitem__("a", 1), lambda m: m.update(a=1),
                   lambda m: m.setdefault("a", 1), lambda m: m.pop("a", None),
                   lambda m: m.clear(), lambda m: m.__ior__({"a": 1})):
        with pytest.raises(TypeError, match="read-only"):
            change(NO_VALUES)
    assert NO_VALUES == {}
