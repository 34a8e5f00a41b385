"""The only package that drives Ray: spec -> Ray Tune Tuner, results -> store, resume.

Importing this package does not import Ray; Ray is imported when a study actually runs.
"""

from searchsvc.runner.driver import RunOptions, RunOutcome, create_study, run_study

__all__ = ["RunOptions", "RunOutcome", "create_study", "run_study"]
