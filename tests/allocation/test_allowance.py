"""The allowance file between the service and a study's driver: none means no limit, a new
allowance is read once the file changes, and a file that is not an allowance keeps the last
one read."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.allocation.allowance import Allowance, AllowanceReader, binding, write_allowance


def test_the_driver_reads_each_new_allowance_and_keeps_the_last_through_a_bad_file(
        tmp_path: Path) -> None:
    path = tmp_path / "allowances" / "s.json"
    reader = AllowanceReader(path)
    assert reader() is None  # no file: no limit
    write_allowance(path, 2)
    assert reader() == Allowance(2, "", preempt=False)
    write_allowance(path, 1, why="1 of 2 slot(s)", preempt=True)
    assert reader() == Allowance(1, "1 of 2 slot(s)", preempt=True)
    path.write_text("not an allowance")
    assert reader() == Allowance(1, "1 of 2 slot(s)", preempt=True)  # kept; asked again later
    write_allowance(path, 0)
    assert reader() == Allowance(0, "", preempt=False)
    with pytest.raises(ValueError, match="got -1"):
        write_allowance(path, -1)


def test_an_allowance_binds_only_below_the_studys_own_concurrency() -> None:
    assert binding(1, 2) == 1 and binding(0, 2) == 0
    assert binding(2, 2) is None and binding(3, 2) is None  # the study's own limit rules
    assert binding(5, None) == 5  # a study without a limit of its own
    assert binding(None, 2) is None
