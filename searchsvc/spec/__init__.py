"""The study file: format, parsing with line numbers, validation, and the immutable spec.

Knows nothing of Ray, the store or searchers.
"""

from searchsvc.spec.file_schema import json_schema
from searchsvc.spec.limits import DEFAULT_LIMITS, SpecLimits
from searchsvc.spec.model import (
    Budget,
    Checkpoints,
    ChoiceParameter,
    Condition,
    FixedParameter,
    Noise,
    Parameter,
    RangeParameter,
    Resources,
    StudySpec,
    Tracking,
)
from searchsvc.spec.source import SpecSource
from searchsvc.spec.stored import spec_of
from searchsvc.spec.validate import load_spec, parse_spec

__all__ = [
    "DEFAULT_LIMITS",
    "Budget",
    "Checkpoints",
    "ChoiceParameter",
    "Condition",
    "FixedParameter",
    "Noise",
    "Parameter",
    "RangeParameter",
    "Resources",
    "SpecLimits",
    "SpecSource",
    "StudySpec",
    "Tracking",
    "json_schema",
    "load_spec",
    "parse_spec",
    "spec_of",
]
