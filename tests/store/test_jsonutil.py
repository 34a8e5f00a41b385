"""Decoding what the store wrote: non-finite markers back into floats, absent mappings as
the one shared empty mapping, and a batch of mappings decoded in one pass that shares each
key's string (a large study's telemetry, read for its report, holds every key once)."""

from __future__ import annotations

import math

from searchsvc.core.records import NO_VALUES
from searchsvc.store import jsonutil


def test_a_batch_of_optional_mappings_decodes_as_one_at_a_time_does() -> None:
    texts = [jsonutil.optional(({"step_time_s": 0.1, "gpu": "none assigned"},), 0), None,
             jsonutil.optional(({"step_time_s": math.inf, "loss": math.nan},), 0), ""]
    batch = jsonutil.loads_optional_many(texts)
    one_by_one = [jsonutil.loads_optional(t) for t in texts]
    assert batch[0] == one_by_one[0] == {"step_time_s": 0.1, "gpu": "none assigned"}
    assert batch[1] is NO_VALUES and batch[3] is NO_VALUES
    assert batch[2]["step_time_s"] == math.inf and math.isnan(batch[2]["loss"])
    assert one_by_one[2]["step_time_s"] == math.inf


def test_a_batch_shares_each_keys_and_each_string_values_string_across_its_mappings() -> None:
    texts = [jsonutil.optional(({"step_time_s": float(i), "gpu": "none assigned"},), 0)
             for i in range(3)]
    first, second, _ = jsonutil.loads_optional_many(texts)
    [key_1] = [k for k in first if k == "step_time_s"]
    [key_2] = [k for k in second if k == "step_time_s"]
    assert key_1 is key_2
    assert first["gpu"] is second["gpu"] == "none assigned"  # equal string values too
    assert jsonutil.loads_optional_many([]) == []


def test_a_mapping_without_markers_is_not_copied_and_one_with_them_is() -> None:
    plain = {"loss": 0.5, "gpu": "none assigned"}
    assert jsonutil.decoded_floats(plain) is plain
    marked = {"loss": "NaN", "best": "-Infinity", "name": "x"}
    decoded = jsonutil.decoded_floats(marked)
    assert math.isnan(decoded["loss"]) and decoded["best"] == -math.inf
    assert decoded["name"] == "x" and marked["loss"] == "NaN"
