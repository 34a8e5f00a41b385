"""Pure functions from trials to findings. No Ray, no plotting, no web.

The names below are loaded on first use (PEP 562): a surface that reads one module of the
package (``searchsvc show`` its study summary) does not pay for SciPy, which the noise,
isolation and comparison modules need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from searchsvc.analysis.boundary import BoundaryCheck, check_boundaries
    from searchsvc.analysis.curves import CurveDiagnosis, diagnose, diagnose_best
    from searchsvc.analysis.importance import parameter_importance
    from searchsvc.analysis.isolation import Isolation, IsolationPoint, isolate
    from searchsvc.analysis.next_study import NextStudy, suggest_next_study
    from searchsvc.analysis.schedulers import Exploit, Rung, lineage, rungs
    from searchsvc.analysis.study import StudyAnalysis, analyze
    from searchsvc.analysis.summary import StudySummary, TrialSummary, best_trials, summarize

# Each public name, and the module of this package that defines it.
_HOMES = {
    "BoundaryCheck": "boundary", "check_boundaries": "boundary",
    "CurveDiagnosis": "curves", "diagnose": "curves", "diagnose_best": "curves",
    "parameter_importance": "importance",
    "Isolation": "isolation", "IsolationPoint": "isolation", "isolate": "isolation",
    "NextStudy": "next_study", "suggest_next_study": "next_study",
    "Exploit": "schedulers", "Rung": "schedulers", "lineage": "schedulers", "rungs": "schedulers",
    "StudyAnalysis": "study", "analyze": "study",
    "StudySummary": "summary", "TrialSummary": "summary", "best_trials": "summary",
    "summarize": "summary",
}

__all__ = [
    "BoundaryCheck", "CurveDiagnosis", "Exploit", "Isolation", "IsolationPoint", "NextStudy",
    "Rung", "StudyAnalysis", "StudySummary", "TrialSummary", "analyze", "best_trials",
    "check_boundaries", "diagnose", "diagnose_best", "isolate", "lineage",
    "parameter_importance", "rungs", "suggest_next_study", "summarize",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
