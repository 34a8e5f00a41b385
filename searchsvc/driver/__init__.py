"""The driver: the process that runs a study on Ray Tune (spec -> Tuner, results -> store,
resume). The only package, with :mod:`searchsvc.worker`, that imports Ray, and the only one that
imports Ray Tune's private names (through :mod:`searchsvc.driver.raycompat`).

Importing this package imports neither Ray nor the driver's modules until one of its names is
used, so ``searchsvc --help`` and the service's API stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from searchsvc.driver.run import RunOptions, RunOutcome, create_study, run_study

__all__ = ["RunOptions", "RunOutcome", "create_study", "run_study"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from searchsvc.driver import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
