"""The tutorial notebook (examples/tutorial/tutorial.ipynb) is stored with the outputs of a run
from top to bottom (docs/execute_tutorial.py writes them), so it reads on a code host, its
figures as PNG too; and it runs top to bottom in a real Jupyter kernel, from a folder of its
own: its objective defined in the notebook, a live progress bar, the trials as a DataFrame, the
best configuration, the figures, the next study and the comparison."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow
NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "tutorial" / "tutorial.ipynb"
BUDGET = '"budget": {"trials": 8, "max_concurrent": 2, "max_steps": 4}'
SHORT_BUDGET = '"budget": {"trials": 4, "max_concurrent": 1, "max_steps": 2}'


def test_the_notebook_is_stored_with_the_outputs_of_one_run_top_to_bottom() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and [c.execution_count for c in code] == list(range(1, len(code) + 1))
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o.data for o in outputs if o.output_type in ("display_data", "execute_result")]
    assert sum("image/png" in d for d in shown) >= 2  # figures a code host can show
    assert sum("application/vnd.plotly.v1+json" in d for d in shown) >= 4
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "tutorial: 100%" in text and "\r" not in text
    assert "against tutorial: " in text


def test_the_notebook_runs_top_to_bottom_in_a_kernel(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel is this Python (its kernelspec runs `python` from the PATH).
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # Every cell as it is but the study's budget: each study in a few trials on one worker
    # (the stored outputs above are of the full budget).
    [study] = [c for c in notebook.cells if c.cell_type == "code" and BUDGET in c.source]
    study.source = study.source.replace(BUDGET, SHORT_BUDGET)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    shown = [o.data for o in outputs if o.output_type in ("display_data", "execute_result")]
    # The progress bar: tqdm's (its text bar without ipywidgets), not a log line per trial.
    assert "tutorial: 100%" in text and "trial 0 finished" not in text, text
    assert any("text/html" in d and "final_val_error" in d["text/html"] for d in shown)
    figures = [d for d in shown if "application/vnd.plotly.v1+json" in d]
    assert len(figures) >= 4  # isolation, and a boundary figure per searched parameter
    assert "tutorial-next against tutorial: " in text or "against tutorial: " in text
    assert "report.html" in "".join(str(d.get("text/plain", "")) for d in shown)
