"""Pure functions from trials to findings. No Ray, no plotting, no web."""

from searchsvc.analysis.boundary import BoundaryCheck, check_boundaries
from searchsvc.analysis.curves import CurveDiagnosis, diagnose, diagnose_best
from searchsvc.analysis.importance import parameter_importance
from searchsvc.analysis.isolation import Isolation, IsolationPoint, isolate
from searchsvc.analysis.next_study import NextStudy, suggest_next_study
from searchsvc.analysis.schedulers import Exploit, Rung, lineage, rungs
from searchsvc.analysis.study import StudyAnalysis, analyze
from searchsvc.analysis.summary import StudySummary, TrialSummary, best_trials, summarize

__all__ = [
    "BoundaryCheck", "CurveDiagnosis", "Exploit", "Isolation", "IsolationPoint", "NextStudy",
    "Rung", "StudyAnalysis", "StudySummary", "TrialSummary", "analyze", "best_trials",
    "check_boundaries", "diagnose", "diagnose_best", "isolate", "lineage",
    "parameter_importance", "rungs", "suggest_next_study", "summarize",
]
