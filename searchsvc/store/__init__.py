"""Studies, trials and measurements in a real database (SQLAlchemy: SQLite or PostgreSQL).

Knows nothing of Ray or searchers: the runner writes into it, analysis and reports read from it.
"""

from searchsvc.store.records import (
    EVENT_EXPLOIT,
    EVENT_RETRIED,
    EVENT_STOPPED_EARLY,
    FINISHED_TRIAL_STATES,
    STUDY_COMPLETED,
    STUDY_CREATED,
    STUDY_FAILED,
    STUDY_INTERRUPTED,
    STUDY_RUNNING,
    TRIAL_COMPLETED,
    TRIAL_FAILED,
    TRIAL_INFEASIBLE,
    TRIAL_INTERRUPTED,
    TRIAL_PRUNED,
    TRIAL_RUNNING,
    Measurement,
    StudyRecord,
    TokenGrant,
    TrialEvent,
    TrialRecord,
    improves,
)
from searchsvc.store.sql import Store, default_storage_url, searchsvc_home

__all__ = [
    "EVENT_EXPLOIT",
    "EVENT_RETRIED",
    "EVENT_STOPPED_EARLY",
    "FINISHED_TRIAL_STATES",
    "STUDY_COMPLETED",
    "STUDY_CREATED",
    "STUDY_FAILED",
    "STUDY_INTERRUPTED",
    "STUDY_RUNNING",
    "TRIAL_COMPLETED",
    "TRIAL_FAILED",
    "TRIAL_INFEASIBLE",
    "TRIAL_INTERRUPTED",
    "TRIAL_PRUNED",
    "TRIAL_RUNNING",
    "Measurement",
    "Store",
    "StudyRecord",
    "TokenGrant",
    "TrialEvent",
    "TrialRecord",
    "default_storage_url",
    "improves",
    "searchsvc_home",
]
