"""The lifecycles of studies and trials, and the kinds of scheduler events.

The states are ``str`` enums: they compare equal to, print as and are stored as their plain
string values, so report.json, trials.csv, the REST API and the database keep the strings
users' scripts already match on.
"""

from __future__ import annotations

from enum import StrEnum


class StudyState(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    INTERRUPTED = "interrupted"  # stopped before its budget was spent: resumable
    COMPLETED = "completed"
    FAILED = "failed"


class TrialState(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    PRUNED = "pruned"  # stopped early by a scheduler; its measurements are kept
    FAILED = "failed"  # the objective raised, timed out or its worker died
    INFEASIBLE = "infeasible"  # the metric went NaN/inf (divergence)
    INTERRUPTED = "interrupted"  # the study stopped while it ran; it is re-run on resume

    @property
    def finished(self) -> bool:
        """Whether the trial ended for good (an interrupted one is run again on resume)."""
        return self in FINISHED_TRIAL_STATES


class EventKind(StrEnum):
    """What a scheduler (or Ray Tune's retry) did to a running trial, or what happened to the
    whole study (recorded with trial number :data:`STUDY_EVENT`)."""

    STOPPED_EARLY = "stopped_early"  # data: rung, cutoff, value
    EXPLOIT = "exploit"  # data: parent (trial number), parent_step, old_config, new_config
    RETRIED = "retried"  # data: error (its last lines), failures, timed_out
    # The store was unreachable and the run rode through it: data: started (epoch seconds),
    # seconds, error (the first failure)
    STORE_OUTAGE = "store_outage"


# The trial number of an event about the whole study rather than one trial.
STUDY_EVENT = -1


FINISHED_TRIAL_STATES = frozenset({TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
                                   TrialState.INFEASIBLE})

# The names the rest of the package has long used (the enum members themselves).
STUDY_CREATED = StudyState.CREATED
STUDY_RUNNING = StudyState.RUNNING
STUDY_INTERRUPTED = StudyState.INTERRUPTED
STUDY_COMPLETED = StudyState.COMPLETED
STUDY_FAILED = StudyState.FAILED
STUDY_STATES = tuple(StudyState)
TRIAL_RUNNING = TrialState.RUNNING
TRIAL_COMPLETED = TrialState.COMPLETED
TRIAL_PRUNED = TrialState.PRUNED
TRIAL_FAILED = TrialState.FAILED
TRIAL_INFEASIBLE = TrialState.INFEASIBLE
TRIAL_INTERRUPTED = TrialState.INTERRUPTED
TRIAL_STATES = tuple(TrialState)
EVENT_STOPPED_EARLY = EventKind.STOPPED_EARLY
EVENT_EXPLOIT = EventKind.EXPLOIT
EVENT_RETRIED = EventKind.RETRIED
EVENT_STORE_OUTAGE = EventKind.STORE_OUTAGE
