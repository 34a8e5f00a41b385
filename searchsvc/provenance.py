"""What reproduces a study: versions, the objective's git commit, seed, host, command line."""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from searchsvc.core import StudyRecord

TRACKED_PACKAGES = ("searchsvc", "ray", "torch", "optuna", "numpy", "scipy")


def package_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_state(folder: Path) -> dict[str, Any] | None:
    """Commit and dirtiness of the git repository holding ``folder``, if any."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True,
                                 text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status), "root": git("rev-parse", "--show-toplevel")}


def collect(spec_file: str, seed: int) -> dict[str, Any]:
    folder = Path(spec_file).resolve().parent if not spec_file.startswith("<") else Path.cwd()
    return {
        "versions": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "git": git_state(folder),
        "seed": seed,
        "command": " ".join(sys.argv),
        # Where the study was launched from (its trials' working directory follows from it).
        "launched_from": str(Path.cwd()),
    }


def code_path(study: StudyRecord) -> str | None:
    """Where the study's uploaded code bundle lies, if it has one."""
    code = study.provenance.get("code") or {}
    return str(code["path"]) if code.get("path") else None


def launch_folder(code: str | None, recorded: str | None = None) -> str | None:
    """The folder a study was launched from (``recorded`` when it was created, else this
    process's current folder); None for a study with uploaded ``code``, whose workers start in
    that code (see driver.settings.trial_workdir)."""
    if code is not None:
        return None
    return recorded or str(Path.cwd())


def launch_of(study: StudyRecord) -> str | None:
    """The folder ``study`` was launched from (:func:`launch_folder`)."""
    recorded = study.provenance.get("launched_from")
    return launch_folder(code_path(study), str(recorded) if recorded else None)


def objective_paths(spec_file: str | None, code: str | None = None,
                    launch: str | None = None) -> tuple[str, ...]:
    """Where a study's objective is imported from, the one rule every layer uses: its uploaded
    ``code``, its study file's folder, then the folder it is launched from (``launch`` as
    recorded, see :func:`launch_folder`); worker.objective.search_paths_for orders them. A use
    case computes them once and hands them down (preflight, the Ray session, the run)."""
    from searchsvc.worker.objective import search_paths_for

    return tuple(search_paths_for(spec_file, code, launch_folder(code, launch)))


def objective_paths_of(study: StudyRecord) -> tuple[str, ...]:
    """:func:`objective_paths` of a stored study (its file, code and launch folder)."""
    from searchsvc.worker.objective import search_paths_for

    return tuple(search_paths_for(study.spec_file, code_path(study), launch_of(study)))
