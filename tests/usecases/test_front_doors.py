"""What the front doors (CLI, Python API, client, service) get from usecases instead of the
layers below: the run options the driver reads, and the service's warm-up."""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from searchsvc import usecases
from searchsvc.core import StudyRecord, StudyState
from searchsvc.driver import run as driver_run
from searchsvc.report.writer import ReportFiles

ROOT = Path(__file__).resolve().parents[2]


def test_the_front_doors_and_the_driver_share_one_run_options() -> None:
    """One class: what a front door builds is what the driver reads, field for field."""
    assert usecases.RunOptions is driver_run.RunOptions
    stream = io.StringIO()
    given = usecases.RunOptions(address="auto", results_root=Path("r"), num_cpus=2, num_gpus=1,
                                verbose=True, progress_stream=stream, live_progress=False)
    assert [f.name for f in fields(given)] == ["address", "results_root", "num_cpus",
                                               "num_gpus", "verbose", "progress_stream",
                                               "live_progress"]


def test_a_run_stopped_by_ctrl_c_says_so() -> None:
    study = StudyRecord(id=1, name="s", state=StudyState.INTERRUPTED, metric="loss", mode="min",
                        searcher="random", spec_text="", spec_file="s.yaml", created_at=0.0)
    files = ReportFiles(Path("."), {})

    def ended(reason: str) -> usecases.StudyRun:
        return usecases.StudyRun(driver_run.RunOutcome(study, 1, 4, reason), files)

    assert ended(driver_run.STOPPED_BY_CTRL_C).stopped_by_ctrl_c
    assert not ended("all trials finished").stopped_by_ctrl_c


def test_the_service_imports_the_driver_and_report_only_when_it_warms_up() -> None:
    code = ("import sys\nimport searchsvc.service\n"
            "parts = ('searchsvc.driver', 'searchsvc.report', 'searchsvc.backends', "
            "'searchsvc.searchers')\n"
            "print([p for p in parts if p in sys.modules])\n"
            "from searchsvc import usecases\nusecases.warm_up()\n"
            "print([p for p in parts if p in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    before, after = done.stdout.splitlines()
    assert before == "[]"
    assert after == ("['searchsvc.driver', 'searchsvc.report', 'searchsvc.backends', "
                     "'searchsvc.searchers']")


def test_a_use_case_that_is_one_lower_function_is_that_function_imported_when_asked() -> None:
    """Exported, not wrapped: the name the front doors call is the lower function itself, and
    a name usecases does not export is an AttributeError naming it."""
    import pytest

    from searchsvc.analysis.campaign import Campaign
    from searchsvc.analysis.summary import summarize
    from searchsvc.report.charts.progress import progress_plot

    assert usecases.summary is summarize and usecases.progress_plot is progress_plot
    assert usecases.campaign_from_json == Campaign.from_dict
    for name in usecases._EXPORTED:
        assert callable(getattr(usecases, name)), name
    with pytest.raises(AttributeError, match="'summarise'"):
        _ = usecases.summarise
