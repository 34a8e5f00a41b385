"""``gpu: auto``'s decision from the first trials' telemetry, and its retry plan (no Ray)."""

from __future__ import annotations

from typing import Any

from searchsvc.core import Measurement, TrialRecord, TrialState
from searchsvc.driver.gpu_auto import decide, larger_share, packed_spec, retry_searcher
from searchsvc.searchers import create_searcher
from searchsvc.usecases import validate_text

GIB = 1024.0
STUDY = """\
study: auto
objective: m:f
metric: loss
mode: min
searcher: random
budget: {trials: 4}
resources: {cpu: 16, gpu: auto}
parameters:
  x: {low: 0.0, high: 1.0}
"""


def trial(number: int, rows: list[dict[str, Any]], config: dict[str, Any] | None = None
          ) -> TrialRecord:
    return TrialRecord(
        id=number + 1, study_id=1, number=number, state=TrialState.COMPLETED,
        config=config or {"x": 0.5}, arm={}, seed=7 + number, started_at=1.0, finished_at=2.0,
        measurements=tuple(Measurement(s, 1.0, {"loss": 1.0}, telemetry=r)
                           for s, r in enumerate(rows, 1)))


def gpu_row(util: float, used_gib: float, workers: int | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"step_time_s": 1.0, "gpu_util_mean": util,
                           "gpu_mem_peak_mb": used_gib * GIB, "gpu_mem_total_mb": 80 * GIB}
    return row if workers is None else row | {"loader_workers": workers}


def test_the_decision_packs_by_memory_utilisation_and_the_loaders_cpus() -> None:
    spec = validate_text(STUDY)
    # 5% busy, 2 GiB: the GPU would take 8, but a loader of 3 workers needs 4 of the 16 CPUs
    decision = decide(spec, [trial(0, [gpu_row(5, 1.5, 3), gpu_row(5, 2.0, 3)])])
    assert decision["measured_trials"] == [0] and decision["gpu_mem_peak_mb"] == 2 * GIB
    assert (decision["trials_per_gpu"], decision["gpu"], decision["cpu"]) == (4, 0.25, 4.0)
    assert "data loader" in decision["limit"]
    packed = packed_spec(spec, decision["gpu"], decision["cpus_per_gpu"])
    assert (packed.resources.gpu, packed.resources.cpu) == (0.25, 4.0)
    assert packed.resources.gpu_auto and spec.resources.gpu == 1.0  # the spec is untouched


def test_without_gpu_telemetry_every_trial_keeps_a_whole_gpu() -> None:
    spec = validate_text(STUDY)
    decision = decide(spec, [trial(0, [{"step_time_s": 1.0, "nvml": "unavailable: no driver"}])])
    assert (decision["trials_per_gpu"], decision["gpu"], decision["cpu"]) == (1, 1.0, 16.0)
    assert "no GPU telemetry" in decision["limit"] and "no driver" in decision["limit"]


def test_an_out_of_memory_trial_is_retried_as_it_was_at_a_larger_share() -> None:
    assert [larger_share(g) for g in (0.125, 0.25, 0.5, 1.0)] == [0.25, 0.5, 1.0, 1.0]
    spec = validate_text(STUDY)
    searcher = create_searcher(spec)
    stored = trial(2, [], config={"x": 0.123})
    retry = retry_searcher(searcher, [stored])
    proposal = retry.propose(2)
    assert (dict(proposal.config), proposal.seed, proposal.repeat_of) == ({"x": 0.123}, 9, None)
    assert retry.total_trials == 1
