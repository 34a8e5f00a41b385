"""JSON that round-trips NaN and infinities portably (PostgreSQL rejects bare NaN in JSON)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# The markers are the wire format's: the store keeps values as the API sends them.
from searchsvc.core.records import NO_VALUES
from searchsvc.core.wire import NON_FINITE, decode_floats, encode


def dumps(value: Any) -> str:
    return json.dumps(encode(value), allow_nan=False, default=str)


def optional(extra: tuple[Any, ...] | list[Any], index: int) -> str | None:
    """The ``index``-th optional mapping of a measurement row's tail (telemetry, then
    dimensionality) as JSON, or None when it is absent or empty."""
    found = extra[index] if len(extra) > index else None
    return dumps(dict(found)) if found else None


def loads_optional(text: str | None) -> Mapping[str, Any]:
    """What :func:`optional` wrote, decoded; for None, the one shared empty mapping
    (records.NO_VALUES: most measurements have neither telemetry nor dimensionality)."""
    return loads_metrics(text) if text else NO_VALUES


def loads_optional_many(texts: list[str | None]) -> list[Mapping[str, Any]]:
    """``[loads_optional(t) for t in texts]`` in one pass of the decoder, which then shares
    each key's string across the mappings (a decoder call per text makes new ones each time:
    most of a large study's telemetry in memory), as are equal string values; a mapping is
    copied only to turn a NaN/infinity marker back into a float."""
    present, seen = [t for t in texts if t], {}  # type: list[str], dict[str, str]
    decoded = iter([_shared_strings(decoded_floats(v), seen) for v in loads_many(present)])
    return [next(decoded) if t else NO_VALUES for t in texts]


def _shared_strings(values: dict[str, Any], seen: dict[str, str]) -> dict[str, Any]:
    """``values`` with each string value replaced, in place, by the first equal one ``seen``
    (a worker's telemetry repeats the same few, such as its GPU's name, at every step)."""
    for key, value in values.items():
        if isinstance(value, str):
            values[key] = seen.setdefault(value, value)
    return values


def decoded_floats(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` itself, or a copy with the NaN/infinity markers turned back into floats when
    it holds one (core.wire.decode_floats): most mappings hold none, nor need a copy."""
    return decode_floats(values) if any(
        isinstance(v, str) and v in NON_FINITE for v in values.values()) else values


def loads_metrics(text: str) -> dict[str, Any]:
    """Decode a metrics mapping, turning the NaN/infinity markers back into floats."""
    return decode_floats(json.loads(text))


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
