"""What a running service allows: the limits one study and one request may ask for, the
modules and tracking servers studies may use, and where uploaded code lives."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from searchsvc.codebundle import BundleLimits
from searchsvc.errors import UsageError
from searchsvc.spec import DEFAULT_LIMITS, SpecLimits
from searchsvc.store import searchsvc_home

MAX_BODY_BYTES = 256 * 1024  # a study file is a few KB
# What one study may ask of a shared server (each a `serve` option); tighter than what
# `searchsvc validate` accepts on a user's own machine (searchsvc.spec.limits).
SERVER_LIMITS = SpecLimits(max_trials=10_000, max_parameters=100, max_grid_points=10_000,
                           max_arms=1_000)


@dataclass(frozen=True)
class ServiceConfig:
    """What a running service is allowed to do."""

    allow_objectives: tuple[str, ...] = ("objectives.",)
    allow_tracking_uris: tuple[str, ...] = ()  # MLflow tracking URI prefixes studies may use
    max_body_bytes: int = MAX_BODY_BYTES
    limits: SpecLimits = SERVER_LIMITS
    max_queued_per_user: int = 20  # studies created or running at once, per user
    request_timeout_s: float = 10.0  # validating a study file, unpacking a bundle
    code_root: Path = field(default_factory=lambda: searchsvc_home() / "code")
    code_limits: BundleLimits = field(default_factory=BundleLimits)



def server_limits(**given: int | None) -> SpecLimits:
    """:data:`SERVER_LIMITS` with the ``serve`` options ``given`` (None: the default). Each must
    lie within what searchsvc itself accepts (a study's driver builds its searcher within
    :data:`~searchsvc.spec.DEFAULT_LIMITS`), else :class:`UsageError` naming the option."""
    for name, value in given.items():
        ceiling = getattr(DEFAULT_LIMITS, name)
        if value is not None and not 1 <= value <= ceiling:
            raise UsageError(f"--{name.replace('_', '-')} must be between 1 and {ceiling} "
                             f"(got {value})")
    return replace(SERVER_LIMITS, **{k: v for k, v in given.items() if v is not None})
