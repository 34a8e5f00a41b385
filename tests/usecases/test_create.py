"""usecases.create without Ray: what a new study records before its first run."""

from __future__ import annotations

from pathlib import Path

from searchsvc import usecases
from searchsvc.analysis.preflight import summary_lines
from searchsvc.store import open_store

ROOT = Path(__file__).resolve().parents[2]


def test_a_study_created_without_preflight_says_so_and_one_created_with_it_waits_for_it(
        ) -> None:
    store = open_store("memory:")
    spec = usecases.validate(ROOT / "spaces" / "quickstart.yaml")
    plain = usecases.create(spec, store)
    assert "preflight" not in plain.provenance  # resume preflights it before its first trial

    store.delete_study(spec.name)
    skipped = usecases.create(spec, store, preflight=False)
    recorded = store.get_study(spec.name).provenance["preflight"]
    assert recorded == skipped.provenance["preflight"] == usecases.PREFLIGHT_SKIPPED
    assert summary_lines(recorded) == [
        "Preflight: not run, started without preflight (--no-preflight)."]
