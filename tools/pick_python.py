"""Print the interpreter `make` builds .venv from: of the Pythons on PATH with the version of the
one running this script (``python3``), the one that runs Python code fastest.

A machine often has several builds of one version: pyenv's (its default build has no
profile-guided or link-time optimisation and links libpython as a shared library) and the
distribution's (Debian's is built with both and links it in). The suite is CPU-bound, and on
the first it takes about a fifth more CPU than on the second. Only interpreters that can make
a virtual environment (``ensurepip``: Debian ships it apart, in python3-venv) are candidates.
With none, or when timing fails, prints ``python3``. ``make PYTHON=...`` bypasses this.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

# Run by each candidate: its version, its real executable, and the best of three times of an
# empty loop (pure bytecode dispatch, what PGO and the linking differ on).
PROBE = """
import ensurepip, sys, time, venv
def loop():
    started = time.perf_counter()
    for _ in range(2_000_000):
        pass
    return time.perf_counter() - started
print("%d.%d" % sys.version_info[:2], sys.executable, min(loop() for _ in range(3)))
"""


def candidates(path: str, version: str) -> list[str]:
    """Every ``python3`` and ``python3.X`` (X: ``version``'s minor) on ``path``, in its order."""
    names = ("python3", f"python{version}")
    found = [str(Path(folder) / name) for folder in path.split(os.pathsep) if folder
             for name in names]
    return [f for f in found if os.access(f, os.X_OK) and Path(f).is_file()]


def probe(command: str) -> tuple[str, str, float] | None:
    """(version, executable, loop seconds) of one interpreter; None when it cannot run the
    probe (no venv or ensurepip, a broken shim)."""
    try:
        done = subprocess.run([command, "-c", PROBE], capture_output=True, text=True,
                              timeout=60, check=True)
        version, executable, seconds = done.stdout.split()
        return version, executable, float(seconds)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def fastest(commands: Iterable[str], version: str,
            measure: Callable[[str], tuple[str, str, float] | None] = probe) -> str | None:
    """The real executable of the fastest of ``commands`` at ``version``, each measured once
    (two names of one executable count once); None when none qualifies."""
    timed: dict[str, float] = {}
    for command in commands:
        found = measure(command)
        if found is None or found[0] != version:
            continue
        executable = os.path.realpath(found[1])
        timed[executable] = min(found[2], timed.get(executable, found[2]))
    return min(timed, key=timed.__getitem__) if timed else None


def main() -> None:
    version = "{}.{}".format(*sys.version_info[:2])
    commands = candidates(os.environ.get("PATH", ""), version)
    print(fastest(commands, version) or "python3")


if __name__ == "__main__":
    main()
