"""JSON that round-trips NaN and infinities portably (PostgreSQL rejects bare NaN in JSON)."""

from __future__ import annotations

import json
import math
from typing import Any

_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _encode(value.item())
    return value


def encode(value: Any) -> Any:
    """``value`` as :func:`dumps` writes it: NaN and infinities as "NaN", "Infinity",
    "-Infinity" (JSON has no such numbers), numpy scalars as Python's."""
    return _encode(value)


def dumps(value: Any) -> str:
    return json.dumps(_encode(value), allow_nan=False, default=str)


def optional(extra: tuple[Any, ...] | list[Any], index: int) -> str | None:
    """The ``index``-th optional mapping of a measurement row's tail (telemetry, then
    dimensionality) as JSON, or None when it is absent or empty."""
    found = extra[index] if len(extra) > index else None
    return dumps(dict(found)) if found else None


def loads_optional(text: str | None) -> dict[str, Any]:
    """What :func:`optional` wrote, decoded; an empty mapping for None."""
    return loads_metrics(text) if text else {}


def loads_metrics(text: str) -> dict[str, Any]:
    """Decode a metrics mapping, turning the NaN/infinity markers back into floats."""
    return {k: _SPECIAL.get(v, v) if isinstance(v, str) else v for k, v in json.loads(text).items()}


def loads(text: str) -> Any:
    if text == "{}":  # most arms, drivers and checkpoint lists: no need to run the decoder
        return {}
    if text == "[]":
        return []
    return json.loads(text)


def loads_many(texts: list[str]) -> list[Any]:
    """``[loads(t) for t in texts]``, in one pass of the decoder (about twice as fast for many
    small texts, such as the configs of a study's trials)."""
    return json.loads(f"[{','.join(texts)}]") if texts else []
