"""Data for an AutoKeras structured-data search: scikit-learn's bundled breast-cancer table
(no download) written once as a CSV, whose path the ``autokeras`` backend reads with the label
column named in ``backend_options.target``. No TensorFlow import here."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def breast_cancer_csv() -> str:
    """The CSV's path (written on first use; 569 rows, 30 features, column ``target``)."""
    folder = Path(os.environ.get("SEARCHSVC_HOME") or tempfile.gettempdir()) / "data"
    path = folder / "breast_cancer.csv"
    if not path.exists():
        from sklearn.datasets import load_breast_cancer

        folder.mkdir(parents=True, exist_ok=True)
        frame = load_breast_cancer(as_frame=True).frame
        partial = path.with_suffix(".partial")
        frame.to_csv(partial, index=False)
        partial.replace(path)  # never a half-written file for a concurrent reader
    return str(path)
