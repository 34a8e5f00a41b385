"""Pure functions from trials to findings. No Ray, no plotting, no web."""

from searchsvc.analysis.summary import StudySummary, TrialSummary, best_trials, summarize

__all__ = ["StudySummary", "TrialSummary", "best_trials", "summarize"]
