"""The domain model every layer shares: states, curves, and the immutable records of
studies, trials, measurements and events. Pure Python: imports nothing else of searchsvc."""

from searchsvc.core.curve import Curve, best_of, improves, is_finite_number
from searchsvc.core.objectives import Constraint, Objective, final_metrics, objective_values
from searchsvc.core.records import Measurement, StudyRecord, TokenGrant, TrialEvent, TrialRecord
from searchsvc.core.states import (
    EVENT_EXPLOIT,
    EVENT_RETRIED,
    EVENT_STOPPED_EARLY,
    FINISHED_TRIAL_STATES,
    STUDY_COMPLETED,
    STUDY_CREATED,
    STUDY_FAILED,
    STUDY_INTERRUPTED,
    STUDY_RUNNING,
    STUDY_STATES,
    TRIAL_COMPLETED,
    TRIAL_FAILED,
    TRIAL_INFEASIBLE,
    TRIAL_INTERRUPTED,
    TRIAL_PRUNED,
    TRIAL_RUNNING,
    TRIAL_STATES,
    EventKind,
    StudyState,
    TrialState,
)

__all__ = [
    "EVENT_EXPLOIT", "EVENT_RETRIED", "EVENT_STOPPED_EARLY", "FINISHED_TRIAL_STATES",
    "STUDY_COMPLETED", "STUDY_CREATED", "STUDY_FAILED", "STUDY_INTERRUPTED", "STUDY_RUNNING",
    "STUDY_STATES", "TRIAL_COMPLETED", "TRIAL_FAILED", "TRIAL_INFEASIBLE", "TRIAL_INTERRUPTED",
    "TRIAL_PRUNED", "TRIAL_RUNNING", "TRIAL_STATES", "Constraint", "Curve", "EventKind",
    "Measurement", "Objective", "StudyRecord", "StudyState", "TokenGrant", "TrialEvent",
    "TrialRecord", "TrialState", "best_of", "final_metrics", "improves", "is_finite_number",
    "objective_values",
]
