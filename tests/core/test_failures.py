"""A failed trial's exception read from its stored traceback, and the fail-fast rule."""

from __future__ import annotations

from searchsvc.core.failures import Failure, fail_fast, failure_of

# As Ray records a function trainable's error (its error file), trimmed.
RAY_ERROR = """Failure # 1 (occurred at 2026-11-26_18-37-10)
\x1b[36mray::ImplicitFunc.train()\x1b[39m (pid=1, ip=192.0.2.2, actor_id=ab)
  File "/venv/lib/python3.11/site-packages/ray/tune/trainable/trainable.py", line 331, in train
    raise skipped from exception_cause(skipped)
  File "/work/searchsvc/worker/trainable.py", line 97, in run_trial
    backend.run(user_config)
  File "/home/ada/project/my_train.py", line 8, in train
    points = np.loadtxt("data/points.csv")
  File "/venv/lib/python3.11/site-packages/numpy/lib/_datasource.py", line 529, in open
    raise FileNotFoundError(f"{path} not found.")
FileNotFoundError: data/points.csv not found.
searchsvc: the trial's working directory is /home/ada/project on node gpu-1
"""


def test_the_exception_and_the_users_line_are_read_from_rays_error_text() -> None:
    found = failure_of(RAY_ERROR)
    assert found == Failure("FileNotFoundError", "my_train.py:8", "data/points.csv not found.")
    assert found.describe() == "FileNotFoundError at my_train.py:8: data/points.csv not found."


def test_a_text_naming_no_exception_is_no_failure() -> None:
    assert failure_of("timed out: the trial ran longer than budget.trial_timeout_s") is None
    assert failure_of(None) is None
    raised = failure_of("Traceback (most recent call last):\n  File \"<x>\", line 1\n"
                        "mylib.errors.DataLoaderTimeout: worker 3 hung")
    assert raised is not None and raised.type == "DataLoaderTimeout" and raised.where == ""


MISSING = Failure("FileNotFoundError", "my_train.py:8", "data/points.csv not found.")
KEY = Failure("KeyError", "my_train.py:3", "'lr'")


def test_the_first_three_failing_alike_stop_the_run_with_the_users_line() -> None:
    assert fail_fast([MISSING, MISSING], 3, produced=False) is None  # not yet three
    said = fail_fast([MISSING, MISSING, MISSING], 3, produced=False)
    assert said == ("the first 3 trials all failed with FileNotFoundError at my_train.py:8: "
                    "data/points.csv not found. (budget.fail_fast: 3)")


def test_no_stop_after_a_result_a_different_error_or_when_turned_off() -> None:
    assert fail_fast([MISSING, None, MISSING, MISSING], 3, produced=False) is None
    assert fail_fast([MISSING, MISSING, MISSING], 3, produced=True) is None
    assert fail_fast([MISSING, KEY, MISSING], 3, produced=False) is None
    assert fail_fast([MISSING] * 10, 0, produced=False) is None
    assert fail_fast([KEY], 1, produced=False) is not None
