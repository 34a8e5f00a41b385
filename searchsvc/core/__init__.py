"""The domain model every layer shares: states, curves, and the immutable records of
studies, trials, measurements and events. Pure Python: imports nothing else of searchsvc."""

from searchsvc.core.curve import Curve, best_of, improves, is_finite_number
from searchsvc.core.direction import Direction, direction
from searchsvc.core.objectives import Constraint, Objective, final_metrics, objective_values
from searchsvc.core.records import Measurement, StudyRecord, TokenGrant, TrialEvent, TrialRecord
from searchsvc.core.states import (
    FINISHED_TRIAL_STATES,
    STUDY_EVENT,
    EventKind,
    StudyState,
    TrialState,
)

__all__ = [
    "FINISHED_TRIAL_STATES",
    "STUDY_EVENT",
    "Constraint",
    "Curve",
    "Direction",
    "EventKind",
    "Measurement",
    "Objective",
    "StudyRecord",
    "StudyState",
    "TokenGrant",
    "TrialEvent",
    "TrialRecord",
    "TrialState",
    "best_of",
    "direction",
    "final_metrics",
    "improves",
    "is_finite_number",
    "objective_values",
]
