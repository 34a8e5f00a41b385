"""Execute the tutorial notebook (examples/tutorial/tutorial.ipynb) top to bottom and store it
with its outputs, so that it reads on a code host without being run: `.venv/bin/python
docs/execute_tutorial.py`. It runs the notebook's two small studies on an embedded Ray (about a
minute on 2 CPUs) from a temporary folder, as tests/test_notebook.py does, then tidies what is
stored: a progress bar's successive states kept as its last, consecutive prints of one stream
joined, no timing metadata, and the warnings of optional display packages (ipywidgets) that a
given Jupyter may lack dropped."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "tutorial" / "tutorial.ipynb"
ENVIRONMENT_NOISE = re.compile(r"ipywidgets|IProgress|notebook_tqdm")


def _final_states(text: str) -> str:
    """Each line as a terminal would leave it: what follows its last carriage return."""
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def tidy(notebook: nbformat.NotebookNode) -> None:
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        outputs: list[nbformat.NotebookNode] = []
        for output in cell.outputs:
            previous = outputs[-1] if outputs else None
            if (output.output_type == "stream" and previous is not None
                    and previous.output_type == "stream" and previous.name == output.name):
                previous.text += output.text
                continue
            outputs.append(output)
        for output in outputs:
            if output.output_type == "stream":
                lines = _final_states(output.text).split("\n")
                output.text = "\n".join(line for line in lines
                                        if not ENVIRONMENT_NOISE.search(line))
        cell.outputs = [o for o in outputs if o.output_type != "stream" or o.text.strip()]


def main() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel is this Python (its kernelspec runs `python` from the PATH).
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    with tempfile.TemporaryDirectory() as folder:
        NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": folder}}).execute()
    tidy(notebook)
    nbformat.validate(notebook)
    nbformat.write(notebook, NOTEBOOK)
    print(f"{NOTEBOOK}: executed and stored with its outputs")


if __name__ == "__main__":
    main()
