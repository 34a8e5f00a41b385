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
    # A result the trial's worker sent for another trial (the one before it on a reused
    # worker), kept out of its record: data: from (that trial's number)
    FOREIGN_RESULT = "foreign_result"
    # The trial saved a checkpoint with the step it reported: data: path (the checkpoint's
    # folder where the run keeps it), attempt. A resumed study restores an interrupted trial
    # from its attempt's last one.
    CHECKPOINT = "checkpoint"
    # The trial paused at a step whose report carried a checkpoint, giving its slot to a study
    # of higher priority on a shared cluster; it resumes from that checkpoint. data: reason,
    # allowance, running (the study's running trials when it paused)
    PAUSED = "paused"


# The trial number of an event about the whole study rather than one trial.
STUDY_EVENT = -1


FINISHED_TRIAL_STATES = frozenset({TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
                                   TrialState.INFEASIBLE})
