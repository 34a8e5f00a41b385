"""What a running trial knows about itself (number, seed, budget), set by searchsvc's wrapper
around the objective. Plain Python: usable and testable without Ray."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

META_KEY = "__searchsvc__"  # reserved config key the runner uses to tell the wrapper its trial


@dataclass(frozen=True)
class TrialContext:
    study: str = "adhoc"
    number: int = 0
    seed: int = 0
    max_steps: int | None = None
    metric: str | None = None
    mode: str | None = None
    keep_checkpoints: bool = False


_current: TrialContext | None = None


def set_current(context: TrialContext | None) -> None:
    global _current
    _current = context


def current() -> TrialContext:
    """The running trial's context; a default one when called outside searchsvc."""
    return _current or TrialContext()


def split_config(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the user's config, searchsvc's trial metadata)."""
    user = {k: v for k, v in config.items() if k != META_KEY}
    return user, dict(config.get(META_KEY) or {})
