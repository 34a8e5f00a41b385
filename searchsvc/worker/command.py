"""Runs a command objective's script for one trial, inside the trial's worker: starts it with
the trial's arguments and environment, turns its output into reports, keeps its output in the
trial's folder, carries its checkpoint folder to and from Ray, and ends it when the trial is
stopped.

- **Environment.** ``SEARCHSVC_TRIAL``, ``SEARCHSVC_SEED`` (and ``PYTHONHASHSEED``),
  ``SEARCHSVC_MAX_STEPS``, ``SEARCHSVC_TRIAL_DIR`` and ``SEARCHSVC_CHECKPOINT_DIR``;
  ``CUDA_VISIBLE_DEVICES`` as Ray assigned it to the worker. ``sdk.report`` called inside the
  script writes its report as a line of output (:data:`~searchsvc.core.commands.
  REPORT_PREFIX`) that this module reads back.
- **Checkpoints.** The script saves into its checkpoint folder; a checkpoint counts once the
  script has printed a metrics line after writing it: each report carries the folder's files
  when they changed since the last one. A trial restored from a checkpoint (PBT, resume, a
  retry) finds its files in the folder before the script starts; a half-written folder is
  never one Ray restores.
- **Stopping.** Ray ends a stopped trial's reporting thread (``SystemExit`` from its report);
  the script then gets SIGTERM and, after ``stop_grace_s``, SIGKILL, with every process it
  started (it runs in a session of its own).
- **Failure.** A script that exits non-zero fails the trial with its last lines of stderr.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from searchsvc.core.commands import PYTHONS, REPORT_VARIABLE, parse_metrics
from searchsvc.errors import ObjectiveError
from searchsvc.worker.context import current

TAIL_LINES = 20  # of stderr, in a failed trial's error
STDOUT_FILE, STDERR_FILE = "stdout.log", "stderr.log"
CHECKPOINT_FOLDER = "checkpoint"


class CommandFailed(ObjectiveError):
    """The script exited with an error; the message ends with its last lines of stderr."""


def wandb_environment(trial_dir: Path, config: Mapping[str, Any]) -> dict[str, str]:
    """What a script whose ``wandb.log`` calls are its reports runs with: W&B offline in the
    trial's folder (nothing leaves the machine; ``wandb sync`` uploads it later), quiet, each
    log call printed as a report line (:mod:`searchsvc.worker.paced`), and the trial's config
    where a W&B sweep agent puts a run's parameters, so ``wandb.config`` holds them as it
    does under ``wandb agent``."""
    import yaml

    params = trial_dir / "wandb-sweep-params.yaml"
    params.write_text("wandb_version: 1\n\n" + yaml.safe_dump(
        {name: {"value": value} for name, value in config.items()}, sort_keys=False))
    return {"SEARCHSVC_WANDB_REPORTS": "1", "WANDB_MODE": "offline",
            "WANDB_DIR": str(trial_dir), "WANDB_SILENT": "true",
            "WANDB_SWEEP_PARAM_PATH": str(params)}


def trial_environment(*, number: int, seed: int, max_steps: int | None, trial_dir: Path,
                      checkpoint_dir: Path) -> dict[str, str]:
    """The variables a trial's script finds besides the worker's own environment."""
    return {"SEARCHSVC_TRIAL": str(number), "SEARCHSVC_SEED": str(seed),
            "PYTHONHASHSEED": str(seed), "SEARCHSVC_MAX_STEPS": str(max_steps or ""),
            "SEARCHSVC_TRIAL_DIR": str(trial_dir),
            "SEARCHSVC_CHECKPOINT_DIR": str(checkpoint_dir),
            REPORT_VARIABLE: "output",  # sdk.report in the script prints its reports
            "PYTHONUNBUFFERED": "1"}  # lines as the script prints them, not at exit


def run_command(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], trial_dir: Path,
                checkpoint_dir: Path, metrics: Sequence[str], pattern: re.Pattern[str] | None,
                report: Callable[[dict[str, float], Path | None], None],
                stop_grace_s: float, reports_only: bool = False) -> None:
    """Run ``argv`` in ``cwd`` to its end, calling ``report(metrics, checkpoint)`` for each
    line of output that reports ``metrics`` (``checkpoint``: a copy of the checkpoint folder
    as it was when the line came, when it changed since the last report, else None). Raises
    :class:`CommandFailed` when the script exits non-zero; whatever ends this call early (the
    trial stopped) ends the script first."""
    trial_dir.mkdir(parents=True, exist_ok=True)
    # taken before the script starts: a checkpoint it writes before the reader is built is new
    restored = _signature(checkpoint_dir)
    with tempfile.TemporaryDirectory(prefix="searchsvc-checkpoints-",
                                     ignore_cleanup_errors=True) as copies, \
            open(trial_dir / STDERR_FILE, "ab") as errors, \
            open(trial_dir / STDOUT_FILE, "ab") as output, \
            _acknowledgements(argv) as (ack_env, ack_read, ack_write), \
            _started(argv, cwd, {**env, **ack_env}, errors, stop_grace_s, ack_read) as p:
        assert p.stdout is not None
        lines: queue.Queue[tuple[dict[str, float], Path | None] | None] = queue.Queue()
        reader = _Reader(p.stdout, output, lines, metrics, pattern, checkpoint_dir,
                         Path(copies), ack_write, restored, reports_only)
        reader.start()
        try:
            while (item := _next(lines, p)) is not None:
                found, copy = item
                report(found, copy)
                if copy is not None:
                    shutil.rmtree(copy, ignore_errors=True)
        finally:
            if p.poll() is None:  # the trial stopped: the script goes first
                end_process(p, grace_s=stop_grace_s)
            reader.join(timeout=30)
        code = p.wait()
    if code != 0:
        raise CommandFailed(_failure(argv, code, trial_dir / STDERR_FILE))


def _next(lines: queue.Queue[tuple[dict[str, float], Path | None] | None],
          process: subprocess.Popen[bytes]) -> tuple[dict[str, float], Path | None] | None:
    """The next metrics line (None: the output ended). Once the script has exited, what it
    started and left running is ended too: it holds the output open."""
    while True:
        try:
            return lines.get(timeout=0.5)
        except queue.Empty:
            if process.poll() is not None:
                _kill_rest(process.pid)


class _Reader(threading.Thread):
    """Reads the script's output as it prints it (while the trial's thread may wait in a
    report), keeps it in stdout.log, and queues each metrics line with a copy of the
    checkpoint folder taken at once. A copy counts only when every file in it was written
    before the line was read, no later metrics line was waiting and none changed while it was
    copied: never a half-written one. A paced script waits for each line to be read, so its
    copy is the folder as the line was printed; another program may have written its next
    checkpoint by then. None on the queue: the output ended."""

    def __init__(self, stream: IO[bytes], output: IO[bytes],
                 lines: queue.Queue[tuple[dict[str, float], Path | None] | None],
                 metrics: Sequence[str], pattern: re.Pattern[str] | None, folder: Path,
                 copies: Path, ack: int | None, restored: tuple[tuple[str, int, int], ...],
                 reports_only: bool = False):
        super().__init__(daemon=True)
        self.reports_only = reports_only
        self.stream, self.output, self.lines, self.ack = stream, output, lines, ack
        self.metrics, self.pattern, self.folder, self.copies = metrics, pattern, folder, copies
        self.seen = restored  # the folder before the script started: not a new checkpoint
        self.copied = itertools.count()  # names the copies

    def run(self) -> None:
        try:
            for raw, read_at, waiting in _lines_of(self.stream.fileno()):
                self.output.write(raw)
                self.output.flush()
                found = self._metrics(raw)
                if found is not None:
                    # a later metrics line already waiting: the script ran ahead of this one
                    # and its folder may hold a later checkpoint, which that line carries
                    ahead = any(self._metrics(line) for line in waiting.splitlines())
                    self.lines.put((found, None if ahead else self._copy(read_at)))
                self._acknowledge()
        finally:
            self.lines.put(None)

    def _acknowledge(self) -> None:
        """Let a paced script (:mod:`searchsvc.worker.paced`) go on past its line."""
        if self.ack is not None:
            with suppress(BlockingIOError, BrokenPipeError):
                os.write(self.ack, b"\x01")

    def _metrics(self, raw: bytes) -> dict[str, float] | None:
        return parse_metrics(raw.decode(errors="replace"), self.metrics, self.pattern,
                             reports_only=self.reports_only)

    def _copy(self, read_at: int) -> Path | None:
        before = _signature(self.folder)
        if not before or before == self.seen or max(m for _, _, m in before) > read_at:
            return None
        copy = self.copies / str(next(self.copied))
        shutil.copytree(self.folder, copy)
        if _signature(self.folder) != before:
            shutil.rmtree(copy, ignore_errors=True)
            return None
        self.seen = before
        return copy


PACED = str(Path(__file__).with_name("paced"))  # the sitecustomize a paced Python loads


@contextmanager
def _acknowledgements(argv: Sequence[str]
                      ) -> Iterator[tuple[dict[str, str], int | None, int | None]]:
    """For a script run by the workers' own Python: a pipe on which the reader acknowledges
    each line, and the environment that makes the script wait for it after each line it
    prints (``searchsvc/worker/paced``), so that its checkpoint folder is seen as it was when
    the line was printed. (environment, the script's end, the reader's end); nothing for any
    other program."""
    if not argv or argv[0] != python_executable():
        yield {}, None, None
        return
    read, write = os.pipe()
    os.set_blocking(write, False)  # an unpaced line's acknowledgement is never waited on
    path = os.pathsep.join(p for p in (PACED, os.environ.get("PYTHONPATH", "")) if p)
    try:
        yield {"SEARCHSVC_ACK_FD": str(read), "PYTHONPATH": path}, read, write
    finally:
        for fd in (read, write):
            with suppress(OSError):
                os.close(fd)


@contextmanager
def _started(argv: Sequence[str], cwd: str, env: Mapping[str, str], errors: IO[bytes],
             grace_s: float, keep: int | None = None) -> Iterator[subprocess.Popen[bytes]]:
    try:
        process = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                                   stderr=errors, stdin=subprocess.DEVNULL,
                                   start_new_session=True,
                                   pass_fds=() if keep is None else (keep,))
    except FileNotFoundError as exc:
        raise ObjectiveError(f"command {' '.join(argv)!r}: {exc.strerror}: {exc.filename} "
                             f"(working directory {cwd})") from None
    try:
        with _ended_if_the_worker_dies(process.pid, grace_s):
            yield process
    finally:
        if process.poll() is None:
            end_process(process, grace_s=grace_s)


# Waits for a line on its stdin: "done" ends it; anything else (the end of input: the worker
# that held the pipe died) ends the script's process group as end_process would.
_WATCHER = """
read -r word
[ "$word" = done ] && exit 0
kill -s TERM -- "-$1" 2>/dev/null || exit 0
waited=0
while [ "$waited" -lt "$2" ] && kill -s 0 -- "-$1" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
done
kill -s KILL -- "-$1" 2>/dev/null
exit 0
"""


@contextmanager
def _ended_if_the_worker_dies(group: int, grace_s: float) -> Iterator[None]:
    """Keep, while the trial runs, a watcher that ends the script's process group should this
    worker die without ending it (SIGKILL, the out-of-memory killer, a lost node): the
    script runs in a session of its own, so nothing else would, and it would hold its GPU
    for as long as it runs. The watcher is a shell reading a pipe only this process holds;
    the end of its input means the worker is gone."""
    read, write = os.pipe()
    try:
        watcher = subprocess.Popen(["/bin/sh", "-c", _WATCHER, "watcher", str(group),
                                    str(max(1, math.ceil(grace_s)))],
                                   stdin=read, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
    finally:
        os.close(read)
    try:
        yield
    finally:
        with suppress(BrokenPipeError):
            os.write(write, b"done\n")
        os.close(write)
        with suppress(subprocess.TimeoutExpired):
            watcher.wait(timeout=5)


def end_process(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to the script's whole process group, then SIGKILL after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            _kill_rest(process.pid)
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_rest(group: int) -> None:
    """What the script started and left behind in its group (its own children)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _lines_of(fd: int) -> Iterator[tuple[bytes, int, bytes]]:
    """Each line read from ``fd`` (the last one may lack its newline), the time it was read,
    and the output already waiting after it then (read at once, without blocking)."""
    pending = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            read_at = time.time_ns()
            while _readable(fd) and (more := os.read(fd, 1 << 16)):
                pending += more
            yield line + b"\n", read_at, pending
    if pending:
        yield pending, time.time_ns(), b""


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def _signature(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """What tells a changed checkpoint folder: each file's path, size and modification time."""
    if not folder.is_dir():
        return ()
    return tuple(sorted((str(p.relative_to(folder)), s.st_size, s.st_mtime_ns)
                        for p in folder.rglob("*") if p.is_file() and (s := p.stat())))


def restore_checkpoint(source: Path | None, folder: Path) -> None:
    """Fill the script's checkpoint ``folder`` with ``source``'s files (the checkpoint the
    trial resumes from); an empty folder when there is none."""
    if folder.exists():
        shutil.rmtree(folder)
    if source is not None and source.is_dir():
        shutil.copytree(source, folder)
    folder.mkdir(parents=True, exist_ok=True)


def _failure(argv: Sequence[str], code: int, stderr: Path) -> str:
    tail = list(collections.deque(_lines(stderr), maxlen=TAIL_LINES))
    how = (f"was killed by signal {-code}" if code < 0 else f"exited with code {code}")
    text = f"command {' '.join(argv)!r} {how}"
    return text + (":\n" + "\n".join(tail) if tail else " and wrote nothing to stderr")


def _lines(path: Path) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                yield line.rstrip("\n")
    except FileNotFoundError:
        return


def python_executable() -> str:
    """The worker's own Python: what ``python`` in a command means, so that the script sees
    the packages the study runs with."""
    return sys.executable


def resolve_program(words: Sequence[str]) -> list[str]:
    """``words`` with a leading ``python``/``python3`` turned into the worker's Python."""
    if words and words[0] in PYTHONS:
        return [python_executable(), *words[1:]]
    return list(words)


@contextmanager
def resumed_from() -> Iterator[Path | None]:
    """The folder of the checkpoint this trial resumes from (PBT, resume, a retry), as Ray
    has it locally; None for a fresh start or outside Ray."""
    checkpoint = None
    if current().reporter is None:
        from ray import tune

        checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        yield None
        return
    with checkpoint.as_directory() as folder:
        yield Path(folder)


def report(metrics: dict[str, float], checkpoint: Path | None) -> None:
    """One report of the script's, with its checkpoint folder's files when they changed."""
    reporter = current().reporter
    if reporter is not None:
        reporter(dict(metrics))
        return
    from ray import tune

    if checkpoint is None:
        tune.report(metrics)
    else:
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(str(checkpoint)))
