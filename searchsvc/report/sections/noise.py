"""Seed noise: the noise measured from seed repeats, and the repeats themselves."""

from __future__ import annotations

from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.noise import NoiseEstimate, method_name
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import Section


class Noise(Section):
    key = "noise"
    title = "Seed noise"
    json_rank = 70

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {
            "noise": noise_data(analysis.noise),
            "repeats": [
                {"trial_id": number, "number": number, "repeat_of": g.original, "seed": seed,
                 "value": value}
                for g in (analysis.noise.groups if analysis.noise else ())
                for number, seed, value in zip(g.numbers, g.seeds, g.values, strict=True)
            ],
        }


def noise_data(noise: NoiseEstimate | None) -> dict[str, Any] | None:
    """report.json's ``noise``: the seed noise measured from repeats (null without them)."""
    if noise is None:
        return None
    return {"sigma": noise.sigma, "dof": noise.dof, "sigma_ci": [noise.sigma_low,
                                                                noise.sigma_high],
            "per_arm": [{"arm": a.arm, "sigma": a.sigma, "dof": a.dof} for a in noise.per_arm],
            "equal_noise_p": noise.equal_noise_p, "min_resolvable": noise.min_resolvable,
            "seeds": noise.seeds, "failed_repeats": noise.failed_repeats,
            "method": method_name(noise)}
