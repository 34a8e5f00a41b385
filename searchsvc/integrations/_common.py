"""What every framework callback shares: turning a framework's logged values into the
numbers a report carries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def numbers(values: Mapping[str, Any], only: Iterable[str] | None = None) -> dict[str, float]:
    """The entries of ``values`` that are single numbers (Python, NumPy or a one-element
    tensor), as floats; ``only``: keep just these names. Others (strings, arrays, None) are
    left out: a report's metrics are numbers."""
    keep = None if only is None else set(only)
    found: dict[str, float] = {}
    for name, value in values.items():
        if keep is not None and name not in keep:
            continue
        number = _as_float(value)
        if number is not None:
            found[str(name)] = number
    return found


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if hasattr(value, "numel") and callable(value.numel):  # a torch tensor
        if value.numel() != 1:
            return None
        value = value.detach().cpu().item()
    elif hasattr(value, "size") and hasattr(value, "item"):  # a NumPy scalar or array
        if value.size != 1:
            return None
        value = value.item()
    try:
        return float(value)  # NaN and infinities included: the study's outcome rules judge them
    except (TypeError, ValueError):
        return None
