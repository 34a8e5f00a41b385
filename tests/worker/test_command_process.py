"""A command objective's script run for one trial (worker/command.py), without Ray: what it
prints becomes reports, its checkpoint folder rides with the report after it changed, a
failure carries its last lines of stderr, and a trial that stops ends the script and every
process it started."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from searchsvc.testing.processes import running
from searchsvc.worker.command import CommandFailed, run_command

SCRIPT = """
import os, signal, subprocess, sys, time
from pathlib import Path
if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
Path("pids.txt").write_text(f"{os.getpid()} {child.pid}")
ckpt = Path(os.environ["SEARCHSVC_CHECKPOINT_DIR"])
for epoch in range(1, 5):
    if epoch % 2 == 0:
        (ckpt / "ckpt.txt").write_text(str(epoch))
    print(f"epoch={epoch} val_loss={1 / epoch}", flush=True)
    print("a log line without the metric", flush=True)
    if "--fail" in sys.argv and epoch == 2:
        print("about to fail", file=sys.stderr)
        raise ValueError("diverged at epoch 2")
    time.sleep(0.3 if "--slow" in sys.argv else 0)
child.kill()
"""


def run(tmp_path: Path, *flags: str, stop_after: int | None = None, grace: float = 5.0,
        shell: bool = False, script: str = SCRIPT,
        then: Callable[[], None] | None = None) -> list[tuple[dict[str, float], str | None]]:
    """``script`` run as a trial's command; what each report carried. ``then``: called after
    each report."""
    (tmp_path / "train.py").write_text(textwrap.dedent(script))
    ckpt = tmp_path / "trial" / "checkpoint"
    ckpt.mkdir(parents=True)
    seen: list[tuple[dict[str, float], str | None]] = []

    def report(metrics: dict[str, float], checkpoint: Path | None) -> None:
        seen.append((metrics, None if checkpoint is None
                     else (checkpoint / "ckpt.txt").read_text()))
        if stop_after is not None and len(seen) == stop_after:
            raise SystemExit(0)  # as Ray ends a stopped trial's reporting thread
        if then is not None:
            then()

    argv = [sys.executable, "train.py", *flags]
    if shell:  # another program than the workers' Python: its output is not paced
        argv = ["/bin/sh", "-c", " ".join(["exec", *argv])]
    run_command(argv, cwd=str(tmp_path),
                env={**os.environ, "SEARCHSVC_CHECKPOINT_DIR": str(ckpt)},
                trial_dir=tmp_path / "trial", checkpoint_dir=ckpt, metrics=["val_loss"],
                pattern=None, report=report, stop_grace_s=grace)
    return seen




def test_each_metrics_line_is_a_report_with_the_checkpoint_written_before_it(
        tmp_path: Path) -> None:
    # The workers' Python waits after each line until it was read: however fast the script
    # runs, each report carries the checkpoint as it was when its line was printed.
    seen = run(tmp_path)
    assert [m for m, _ in seen] == [{"epoch": e, "val_loss": 1 / e} for e in (1.0, 2.0, 3.0, 4.0)]
    assert [c for _, c in seen] == [None, "2", None, "4"]  # only when the folder changed
    assert "a log line" in (tmp_path / "trial" / "stdout.log").read_text()


def test_another_programs_checkpoints_go_with_the_line_they_were_read_with(
        tmp_path: Path) -> None:
    # Unpaced, the script runs ahead of its reports: a checkpoint it writes just after a line
    # may be in the folder when that line is read, so it can go with the line before its own,
    # never further back, and every checkpoint written goes with some report, once.
    seen = run(tmp_path, shell=True)
    assert [m["epoch"] for m, _ in seen] == [1.0, 2.0, 3.0, 4.0]
    carried = [(int(m["epoch"]), c) for m, c in seen if c is not None]
    assert all(c in ("2", "4") and int(c) <= epoch + 1 for epoch, c in carried)
    assert len({c for _, c in carried}) == len(carried) and carried[-1][1] == "4"


def test_a_failing_script_fails_the_trial_with_its_last_lines_of_stderr(tmp_path: Path) -> None:
    with pytest.raises(CommandFailed) as raised:
        run(tmp_path, "--fail")
    message = str(raised.value)
    assert "exited with code 1" in message
    assert "about to fail" in message and "ValueError: diverged at epoch 2" in message


@pytest.mark.parametrize("flag", ["--slow", "--ignore-term"])
def test_a_stopped_trial_ends_the_script_and_what_it_started(tmp_path: Path, flag: str) -> None:
    started = time.monotonic()
    with pytest.raises(SystemExit):
        run(tmp_path, flag, stop_after=1, grace=1.0)
    script, child = map(int, (tmp_path / "pids.txt").read_text().split())
    assert not running(script) and not running(child)
    assert time.monotonic() - started < 30


WAITING_SCRIPT = """
import os, time
from pathlib import Path
ckpt = Path(os.environ["SEARCHSVC_CHECKPOINT_DIR"])
(ckpt / "ckpt.txt").write_text("1")
print("epoch=1 val_loss=1.0", flush=True)
deadline = time.monotonic() + 60
while not Path("go").exists() and time.monotonic() < deadline:  # its first report is in
    time.sleep(0.01)
(ckpt / "ckpt.txt").write_text("two")
print("epoch=2 val_loss=0.5", flush=True)
"""


def test_a_checkpoint_written_before_the_reader_starts_still_goes_with_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # On a busy machine the script may write its first checkpoint before the worker has built
    # the thread that reads its output: that checkpoint is new all the same. Here the reader is
    # built only once the first checkpoint is written, and the script goes on to its second
    # only once its first report is in, however busy the machine.
    import searchsvc.worker.command as command

    ckpt = tmp_path / "trial" / "checkpoint"

    class LateReader(command._Reader):
        def __init__(self, *args: object, **kwargs: object) -> None:
            deadline = time.monotonic() + 60
            while not (ckpt / "ckpt.txt").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(command, "_Reader", LateReader)
    seen = run(tmp_path, shell=True, script=WAITING_SCRIPT,
               then=(tmp_path / "go").touch)
    assert [c for _, c in seen] == ["1", "two"]


LONG_SCRIPT = """
import os, signal, subprocess, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as a script busy in a clean-up would
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
Path("pids.txt").write_text(f"{os.getpid()} {child.pid}")
print("epoch=1 val_loss=1.0", flush=True)
time.sleep(120)
"""

WORKER = """
import sys
from pathlib import Path
from searchsvc.worker.command import run_command
folder = Path(sys.argv[1])
run_command([sys.executable, "train.py"], cwd=str(folder), env={}, trial_dir=folder / "trial",
            checkpoint_dir=folder / "trial" / "checkpoint", metrics=["val_loss"], pattern=None,
            report=lambda metrics, checkpoint: print("reported", flush=True),
            stop_grace_s=1.0)
"""


def test_a_killed_worker_leaves_no_script_or_what_it_started_running(tmp_path: Path) -> None:
    # SIGKILL (the out-of-memory killer, a lost node) gives the worker no chance to end the
    # script, which runs in a session of its own: it would hold its GPU for as long as it ran.
    import signal
    import subprocess

    (tmp_path / "train.py").write_text(textwrap.dedent(LONG_SCRIPT))
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    assert worker.stdout is not None and worker.stdout.readline() == "reported\n"
    script, child = map(int, (tmp_path / "pids.txt").read_text().split())
    assert running(script) and running(child)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    deadline = time.monotonic() + 60
    while (running(script) or running(child)) and time.monotonic() < deadline:
        time.sleep(0.1)
    # the script ignored SIGTERM: it was killed after the worker's 1 s of grace
    assert not running(script) and not running(child)
