"""Processes as the tests see them."""

from __future__ import annotations

import psutil  # type: ignore[import-untyped]


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs (one that exited but was not reaped does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
