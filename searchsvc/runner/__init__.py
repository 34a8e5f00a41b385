"""The only package that drives Ray: spec -> Ray Tune Tuner, results -> store, resume.

Importing this package does not import Ray; Ray is imported when a study actually runs. Nor
does it import the driver until one of its names is used: every trial worker imports
``searchsvc.runner.trainable`` (and objectives import ``searchsvc.runner.sdk``), and the
driver's imports (searchers, SciPy, SQLAlchemy, the store) would add about a second to each
worker's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from searchsvc.runner.driver import RunOptions, RunOutcome, create_study, run_study

__all__ = ["RunOptions", "RunOutcome", "create_study", "run_study"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from searchsvc.runner import driver

        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
