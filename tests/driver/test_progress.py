"""The progress display across a study's two phases (the search, then its seed repeats): the
second start must not open a second live display (Rich allows one) and says what comes next."""

from __future__ import annotations

import io

import pytest

from searchsvc.driver.progress import Progress


@pytest.mark.parametrize("live", [True, False])
def test_a_second_start_only_announces_the_repeats(live: bool) -> None:
    stream = io.StringIO()
    progress = Progress("s", 10, "loss", "min", stream=stream, live=live)
    progress.start()
    progress.trial_started(0)
    progress.trial_result(0, 0.5)
    progress.start("seed repeats: 4 trials rerun the best configurations with new seeds")
    progress.trial_started(8)
    progress.stop()
    text = stream.getvalue()
    assert "seed repeats: 4 trials" in text
    assert text.count("10 trials, 0 already finished") == (0 if live else 1)


def test_a_study_resumed_mid_repeat_announces_them_at_its_first_start() -> None:
    stream = io.StringIO()
    progress = Progress("s", 10, "loss", "min", finished_before=8, stream=stream, live=False)
    progress.start("seed repeats: 2 trials rerun the best configurations with new seeds")
    progress.stop()
    assert "10 trials, 8 already finished" in stream.getvalue()
    assert "seed repeats: 2 trials" in stream.getvalue()


def test_a_store_outage_shows_while_it_lasts_and_its_end_is_said() -> None:
    stream = io.StringIO()
    progress = Progress("s", 10, "loss", "min", stream=stream, live=False)
    progress.start()
    progress.store_outage(0.4, ended=False, window_s=120, error="connection refused")
    progress.store_outage(6.2, ended=False, window_s=120, error="connection refused")
    assert "store unreachable, retrying (6s)" in progress._line().plain
    progress.store_outage(7.0, ended=True, window_s=120, error="connection refused")
    assert "store unreachable" not in progress._line().plain
    progress.stop()
    text = stream.getvalue()
    # without a live line: the outage's start once (with the window), then its end
    assert text.count("warning: store unreachable (connection refused); retrying for up to "
                      "120 s, trials go on") == 1
    assert "store back after 7s: results written" in text


def test_live_progress_and_the_closing_summary_count_alike() -> None:
    """Search trials against the search, seed repeats apart: the live line and the summary
    the run ends with say the same (core.judging.count_line), never 4/16 beside 4/4."""
    from searchsvc.cli import run_summary
    from searchsvc.core import StudyRecord, StudyState
    from searchsvc.driver.run import RunOutcome

    stream = io.StringIO()
    progress = Progress("s", 4, "loss", "min", repeats=12, stream=stream, live=False)
    progress.start()
    for number in range(4):
        progress.trial_started(number)
        progress.trial_result(number, 0.5 + number)
        progress.trial_finished(number, "completed", final_metrics={"loss": 0.5 + number})
    progress.trial_finished(4, "completed", repeat_of=0, final_metrics={"loss": 0.6})
    live = progress._line().plain
    assert "4/4 trials finished, 1/12 seed repeats" in live
    study = StudyRecord(id=1, name="s", metric="loss", mode="min", searcher="random",
                        state=StudyState.RUNNING, spec_text="", spec_file="s.yaml", created_at=0.0)
    [summary, *_] = run_summary(RunOutcome(study, 4, 4, "stopped before all trials ran", 1, 12))
    assert "4/4 trials finished, 1/12 seed repeats" in summary
    assert "study s: 4 trials and 12 seed repeats, 0 already finished" in stream.getvalue()
