"""Where a trial runs: the folder the user launched the study from, so that the objective's
relative paths (``np.loadtxt("data/points.csv")``) resolve as they do in ``python train.py``.

Ray Tune would move each trial into its own results folder; the driver turns that off
(``RAY_CHDIR_TO_TRIAL_DIR=0``) and every process that runs the objective — a trial, preflight's
probe, each worker of a data-parallel trial — enters the same folder through
:func:`working_directory`. A study run from uploaded code (a service study, or a cluster job
with a ``working_dir``) has no launch folder on the nodes: Ray starts its workers in the
unpacked code, which is then the working directory. The trial's own output folder stays
available as ``sdk.trial_dir()``."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Ray Tune's and Ray Train's switch for moving each trial (or training worker) into its own
# results folder: off, so the trial's working directory is the launch folder.
NO_TRIAL_DIR_CHANGE = {"RAY_CHDIR_TO_TRIAL_DIR": "0"}


@contextmanager
def working_directory(launch: str | None) -> Iterator[Path]:
    """Run the body in ``launch`` (the folder the study was launched from) when this node has
    it, else in the folder the process started in (the unpacked code of a study that shipped
    it); the previous folder is restored after (Tune reuses a trial's process)."""
    before = os.getcwd()
    target = launch if launch and os.path.isdir(launch) else before
    os.chdir(target)
    try:
        yield Path(target)
    finally:
        os.chdir(before)


def explain_missing_file(exc: BaseException, launch: str | None) -> None:
    """Add to a file-not-found error raised by the objective where a relative path was looked
    for: the working directory, the node, and, when the launch folder is not on this node,
    that the data was not shipped (the exception stays itself: same type and traceback)."""
    if not isinstance(exc, FileNotFoundError) and not (
            isinstance(exc, OSError) and exc.errno == errno.ENOENT):
        return
    here = os.getcwd()
    note = f"searchsvc: the trial's working directory is {here} on node {socket.gethostname()}"
    if launch and not os.path.isdir(launch):
        note += (f"; the folder the study was launched from ({launch}) is not on this node: "
                 "data not shipped with the code must be on storage every node reaches "
                 "(give its absolute path)")
    if note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)
