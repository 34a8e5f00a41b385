"""Preflight's worker side: runs one trial's objective, as a trial runs it (the study's backend,
seeds and trial context), for a few steps, recording each report and when it came, a crash with
the objective's own FILE:LINE, and what ``sdk.preflight_checks`` measured.

Runs as its own Ray task in a worker process of its own (``max_calls=1``), so the patches it
makes there (``ray.tune.report`` sends to this recorder) die with the process. Returns plain
data; the driver judges it (:mod:`searchsvc.analysis.preflight`).
"""

from __future__ import annotations

import math
import numbers
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from searchsvc.startup import collect_as_usual
from searchsvc.worker import dimensionality
from searchsvc.worker.context import (
    TELEMETRY_KEY,
    TrialContext,
    current,
    seed_trial,
    set_current,
    split_config,
)
from searchsvc.worker.objective import resolve_objective
from searchsvc.worker.shadowing import shadowing
from searchsvc.worker.workdir import explain_missing_file, working_directory

OVERFIT_STEPS = 30  # calls of the objective's overfit_step under preflight
LOADER_BATCHES = 64  # batches whose wait and compute time are kept

_hook: dict[str, Any] | None = None  # set while a preflight runs in this process


def active() -> bool:
    """Whether this process is running a preflight (``sdk.preflight_checks`` acts only then)."""
    return _hook is not None


def run_hook(overfit_step: Callable[[], float] | None, num_classes: int | None) -> None:
    """``sdk.preflight_checks`` under preflight: call ``overfit_step`` OVERFIT_STEPS times and
    keep its losses and ``num_classes`` for the driver's checks. A no-op outside preflight."""
    if _hook is None:
        return
    started = time.perf_counter()
    losses: list[float] = []
    error = None
    if overfit_step is not None:
        try:
            for _ in range(OVERFIT_STEPS):
                losses.append(float(overfit_step()))
                if not math.isfinite(losses[-1]):
                    break
        except Exception as exc:
            error = describe_exception(exc, _hook.get("paths", ()))
    spent = time.perf_counter() - started
    if "first_seconds" in _hook:  # the warm run's call: only its time counts
        _hook["seconds"] = _hook.get("seconds", 0.0) + spent
        return
    _hook.update(overfit_losses=losses, num_classes=None if num_classes is None
                 else int(num_classes), error=error, first_seconds=spent,
                 seconds=_hook.get("seconds", 0.0) + spent)


def loader_started(workers: int) -> None:
    """Under preflight, an ``sdk.data_loader`` began to be iterated, by a loader of ``workers``
    worker processes (whatever it wraps: its batches are what the input check times)."""
    if _hook is None:
        return
    known = _hook.get("loader") or {}
    _hook["loader"] = {"workers": max(int(known.get("workers", 0)), int(workers))}


def record_batch(wait_s: float, compute_s: float, item: Any) -> None:
    """Under preflight, one batch from ``sdk.data_loader``: how long the loop waited for it,
    how long it then worked before asking for the next, and how many samples it held (a
    no-op outside preflight)."""
    if _hook is None:
        return
    batches = _hook.setdefault("batches", [])
    if len(batches) < LOADER_BATCHES:
        batches.append((wait_s, compute_s, batch_size(item)))


def batch_size(item: Any) -> int | None:
    """The number of samples in a batch: the length of a tensor, array or list, or of the
    first element of an (inputs, targets) pair; None when it has none."""
    first = item[0] if isinstance(item, tuple | list) and item and hasattr(
        item[0], "__len__") and not isinstance(item[0], str) else item
    shape = getattr(first, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    try:
        return len(first)
    except TypeError:
        return None


class _Enough(BaseException):
    """Raised from the reporter once preflight has its steps: stops the objective (not an
    Exception, so an objective's own ``except Exception`` does not swallow it)."""


def _stop(metrics: Mapping[str, Any]) -> None:
    raise _Enough


def probe(config: dict[str, Any], settings: Any, steps: int, submitted_at: float
          ) -> dict[str, Any]:
    """Run the objective of ``settings`` (a ``TrialSettings``) on ``config`` for at most
    ``steps`` reports; plain data on what happened (see :class:`analysis.preflight.Probe`)."""
    global _hook
    started = time.time()
    t0 = time.perf_counter()
    paths = tuple(settings.search_paths)
    _hook = {"paths": paths}
    reports: list[dict[str, Any]] = []
    times: list[float] = []

    def reporter(metrics: Mapping[str, Any]) -> None:
        times.append(time.perf_counter() - t0)
        reports.append(plain_metrics(metrics))
        if len(reports) >= steps:
            raise _Enough

    settings.give()
    user_config, meta = split_config(config)
    warm_first_s: float | None = None
    scratch = tempfile.mkdtemp(prefix="searchsvc-preflight-")
    try:
        # As a trial runs: in the study's working directory (worker/workdir.py).
        with working_directory(settings.workdir):
            set_current(_context(settings, meta, reporter, scratch))
            crash, at_import, returned, import_s = _first_run(settings, user_config, paths, t0)
            if crash is None and reports:
                warm_first_s = _warm_run(settings, user_config, meta, paths, scratch)
    finally:
        set_current(None)
        dimensionality.close_all()
        hook, _hook = _hook, None
        # Whatever the objective wrote (checkpoints, logs) belongs to no trial: gone with it.
        shutil.rmtree(scratch, ignore_errors=True)
    measured = None if "first_seconds" not in hook else {
        "overfit_losses": hook["overfit_losses"], "num_classes": hook["num_classes"],
        "error": hook["error"]}
    return {"reports": reports, "times_s": times, "crash": crash,
            "crashed_at_import": at_import, "returned": returned, "hook": measured,
            "hook_s": float(hook.get("first_seconds", 0.0)),
            "start_s": max(started - submitted_at, 0.0), "import_s": import_s,
            "warm_first_s": warm_first_s, "loader": hook.get("loader"),
            "batches": hook.get("batches", [])}


def _context(settings: Any, meta: Mapping[str, Any],
             reporter: Callable[[Mapping[str, Any]], None], trial_dir: str) -> TrialContext:
    """The trial context a probe runs the objective in (nothing kept, reports to
    ``reporter``, ``trial_dir`` its output folder)."""
    return TrialContext(
        study=settings.study, number=int(meta.get("number", 0)), seed=int(meta.get("seed", 0)),
        max_steps=settings.max_steps, metric=settings.metric, mode=settings.mode,
        keep_checkpoints=False, reporter=reporter, trial_dir=trial_dir)


def _first_run(settings: Any, user_config: dict[str, Any], paths: tuple[str, ...],
               t0: float) -> tuple[str | None, bool, bool, float]:
    """Import the objective, then run it until the reporter has enough: (the crash described,
    whether it crashed at import, whether it returned, seconds to import)."""
    try:
        _route_ray_reports()
        resolve_objective(settings.objective, paths)
    except Exception as exc:
        said = shadowing(paths, exc)
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        described = "; ".join(said) if said else describe_exception(cause, paths)
        return described, True, False, time.perf_counter() - t0
    import_s = time.perf_counter() - t0
    collect_as_usual()  # the objective runs as in a trial (searchsvc.startup)
    try:
        backend = settings.backend(settings.objective, paths, settings.metric,
                                   settings.max_steps, dict(settings.backend_options))
        seed_trial()
        backend.run(user_config)
    except _Enough:
        return None, False, False, import_s
    except Exception as exc:
        explain_missing_file(exc, settings.workdir)
        return describe_exception(exc, paths), False, False, import_s
    return None, False, True, import_s


def _warm_run(settings: Any, user_config: dict[str, Any], meta: Mapping[str, Any],
              paths: tuple[str, ...], trial_dir: str) -> float:
    """Once more, warm (as a trial on Tune's reused actor runs), to its first report: times
    the objective's own per-trial setup apart from first-call caches (and the hook's time)."""
    assert _hook is not None
    hook_before = _hook.get("seconds", 0.0)
    warm_t0 = time.perf_counter()
    try:
        set_current(_context(settings, meta, _stop, trial_dir))
        seed_trial()
        settings.backend(settings.objective, paths, settings.metric, settings.max_steps,
                         dict(settings.backend_options)).run(user_config)
    except _Enough:
        pass
    except Exception:  # the first run is what preflight judges
        pass
    return time.perf_counter() - warm_t0 - (_hook.get("seconds", 0.0) - hook_before)


def describe_exception(exc: BaseException, paths: Sequence[str]) -> str:
    """``ExcType: message (at FILE:LINE)``, the line being the deepest frame in the user's code
    (under the study's import path, outside installed packages and searchsvc), else the
    deepest frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    roots = [Path(p).resolve() for p in paths]
    own = Path(__file__).resolve().parents[1]

    def users(filename: str) -> bool:
        path = Path(filename).resolve()
        if "site-packages" in path.parts or path.is_relative_to(own):
            return False
        return any(path.is_relative_to(root) for root in roots)

    chosen = next((f for f in reversed(frames) if users(f.filename)),
                  frames[-1] if frames else None)
    where = ""
    if chosen is not None:
        shown = chosen.filename
        for root in roots:
            if Path(shown).resolve().is_relative_to(root):
                shown = str(Path(shown).resolve().relative_to(root))
                break
        where = f" (at {shown}:{chosen.lineno})"
    notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))
    return f"{type(exc).__name__}: {exc}{where}{notes}"


def plain_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A report as plain data (numbers as floats), the worker's telemetry left out."""
    return {k: _plain(v) for k, v in dict(metrics).items() if k != TELEMETRY_KEY}


def _plain(value: Any) -> Any:
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    try:
        return float(value)  # a 0-d tensor or NumPy scalar
    except (TypeError, ValueError):
        return repr(value)


def _route_ray_reports() -> None:
    """An objective calling ``ray.tune.report`` directly reports to preflight's recorder too
    (there is no Tune session in this task); ``get_checkpoint`` finds none. Ray Tune is
    imported here whether the objective uses it or not, as a trial's worker imports it: a
    user's module that breaks that import (one shadowing a package pandas probes for) fails
    preflight, not the study's first trials."""
    if "ray" not in sys.modules:
        return
    from ray import tune

    def report(metrics: Mapping[str, Any], *, checkpoint: Any = None) -> None:
        reporter = current().reporter
        if reporter is not None:
            reporter(dict(metrics))

    tune.report = report
    tune.get_checkpoint = lambda: None
