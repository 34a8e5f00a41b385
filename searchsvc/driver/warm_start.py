"""Warm start: an earlier study's finished trials, fed to a new study's searcher as it would
have seen them live, and the record of which were used (a resume feeds the same ones)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from searchsvc.core import Constraint, StudyRecord, TrialRecord
from searchsvc.core.judging import is_search_trial, searcher_value
from searchsvc.errors import ConflictError, NotFoundError
from searchsvc.searchers import Observation, Searcher
from searchsvc.searchers.space import fits_space
from searchsvc.spec import StudySpec
from searchsvc.store import Store


def warm_start_trials(spec: StudySpec, store: Store, owner: str | None = None,
                       only: Collection[int] | None = None
                       ) -> tuple[int, list[int], list[Observation]]:
    """(finished trials of ``spec.warm_start``, the numbers of those that fit ``spec``'s space,
    and those as observations numbered -1, -2, ...). ``owner``: the service user this study
    belongs to, who may only warm-start from their own studies (another's is "not found");
    ``only``: the numbers chosen when the study first ran (a resume feeds the same ones)."""
    assert spec.warm_start is not None
    missing = NotFoundError(f"warm_start.study: no study named {spec.warm_start!r} in this "
                            "store (searchsvc list shows the studies)")
    try:
        parent = store.get_study(spec.warm_start)
        trials = store.get_trials(spec.warm_start, measurements=True)
    except NotFoundError:
        raise missing from None
    if parent.owner != owner:
        raise missing
    if (parent.metric, parent.mode) != (spec.metric, spec.mode):
        raise ConflictError(
            f"warm_start.study: study {spec.warm_start!r} optimised {parent.metric} "
            f"({parent.mode}), this one {spec.metric} ({spec.mode}): its values would mislead "
            "the model")
    finished = [t for t in trials if t.finished and is_search_trial(t)]
    fitting = [t for t in finished if fits_space(spec, t.config)
               and (only is None or t.number in only)]
    return len(finished), [t.number for t in fitting], [
        observation(t, -1 - i, parent.metric, parent.constraints)
        for i, t in enumerate(fitting)]


def observation(trial: TrialRecord, number: int, metric: str,
                 constraints: Sequence[Constraint]) -> Observation:
    """A finished trial as its searcher saw it live (core.judging.searcher_value)."""
    return Observation(number, trial.config, searcher_value(trial, constraints), trial.state,
                       curve=trial.curve(metric), final_metrics=trial.final_metrics)


def warm_start(spec: StudySpec, study: StudyRecord, store: Store, searcher: Searcher
                ) -> StudyRecord:
    """Feed the warm-start study's trials to ``searcher`` and record which were used. A resume
    feeds the trials chosen the first time, so the searcher proposes as it would have; if that
    study is gone by then, the resume goes on without it (a warning says so)."""
    recorded = study.provenance.get("warm_start")
    only = recorded.get("numbers") if recorded else None
    try:
        finished, numbers, observations = warm_start_trials(spec, store, study.owner, only)
    except NotFoundError:
        if recorded is None:
            raise
        logging.getLogger(__name__).warning(
            "warm_start.study %r is no longer in the store: resuming without it",
            spec.warm_start)
        record = {**recorded, "used_on_resume": 0}
        return store.update_study(study.name,
                                  provenance={**study.provenance, "warm_start": record})
    used = searcher.warm_start(observations)
    record = {"study": spec.warm_start, "finished_trials": finished,
              "fitting_trials": len(observations), "used": used, "numbers": numbers}
    return store.update_study(study.name, provenance={**study.provenance, "warm_start": record})
