"""The analysis package loads its modules on first use: its public names are those of the
modules that define them, and reading a study's summary does not load SciPy."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import searchsvc.analysis as analysis


def test_every_public_name_is_the_object_its_module_defines() -> None:
    for name in analysis.__all__:
        home = importlib.import_module(f"searchsvc.analysis.{analysis._HOMES[name]}")
        assert getattr(analysis, name) is getattr(home, name), name
    assert set(analysis.__all__) == set(analysis._HOMES)
    assert set(analysis.__all__) <= set(dir(analysis))
    with pytest.raises(AttributeError, match=r"has no attribute 'nope'"):
        analysis.nope  # noqa: B018


def test_a_studys_summary_is_read_without_loading_scipy() -> None:
    # What `searchsvc show` loads: the summary, through usecases and through the package.
    code = ("import sys\nfrom searchsvc import usecases\nusecases.summary\n"
            "from searchsvc.analysis import summarize\nprint('scipy' in sys.modules)\n"
            "from searchsvc.analysis import analyze\nprint('scipy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "True"]  # loaded by the first name that needs it
