"""Adapts a searchsvc :class:`Searcher` to Ray Tune's search-algorithm interface."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ray.tune.search import Searcher as TuneSearcher

from searchsvc.allocation.allowance import binding
from searchsvc.driver.detach import PicklesDetached
from searchsvc.searchers import Searcher
from searchsvc.worker.context import META_KEY, RESTORE_KEY

Stage = tuple[Searcher, list[int]]  # a searcher and the trial numbers it proposes


class StudySearch(PicklesDetached, TuneSearcher):
    """Hands Ray Tune the proposals for the study's pending trial numbers, in order.

    The search says it is finished only once every trial it started has ended, not when the
    last one starts (run it with ``num_samples=-1``): Ray Tune keeps a stopped or paused
    trial's worker for reuse only while the search is not finished, and PBT pauses and
    resumes every trial many times; otherwise each resume would start a new worker process
    (imports, CUDA context, data) after the last trial has started.

    ``then``, asked once when every pending trial has been handed out and has ended: the
    next stage's searcher and trial numbers (the seed repeats, planned from the search's
    results), run in the same Tune run so that its workers carry over; None: no next stage.

    ``allowance``, asked before each trial starts: how many trials the study may run at once on
    a shared cluster (None: as many as its study file allows). At or above it the search
    proposes nothing, as Ray's ``ConcurrencyLimiter`` does, and Tune asks again later.
    :meth:`holds_back` says when an allowance below the study's own ``concurrency`` keeps it
    from starting a trial: its idle workers are then released (see
    :func:`~searchsvc.driver.raycompat.release_cached_workers_while`).

    ``restore_points``: trial number -> (checkpoint folder, step) of the interrupted trials a
    resumed study restores (:data:`~searchsvc.worker.context.RESTORE_KEY`).

    Searcher memory lives in the store and is rebuilt from it on resume, so Tune's own
    save/restore of search state is not used.
    """

    def __init__(self, searcher: Searcher, pending: list[int], metric: str, mode: str,
                 then: Callable[[], Stage | None] | None = None,
                 allowance: Callable[[], int | None] | None = None,
                 concurrency: int | None = None,
                 restore_points: Mapping[int, tuple[str, int]] | None = None):
        super().__init__(metric=metric, mode=mode)
        # Not named `searcher`: Ray Tune treats that attribute as a wrapped Tune searcher.
        self.study_searcher = searcher
        self.pending = list(pending)
        self.live: set[str] = set()  # Tune trial ids started and not yet ended
        self.then = then
        self.allowance, self.concurrency = allowance, concurrency
        self.restore_points = dict(restore_points or {})

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict,
                              **spec: Any) -> bool:
        return True

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if not self.pending and not self.live and self.then is not None:
            stage, self.then = self.then(), None
            if stage is not None:
                self.study_searcher, self.pending = stage[0], list(stage[1])
        if not self.pending:
            # Ray's own annotation (Optional[Dict]) leaves out its FINISHED sentinel.
            return None if self.live else TuneSearcher.FINISHED  # type: ignore[return-value]
        if self._at_allowance():
            return None
        self.live.add(trial_id)
        number = self.pending.pop(0)
        proposal = self.study_searcher.propose(number)
        config = dict(proposal.config)
        config[META_KEY] = {"number": number, "seed": proposal.seed,
                            "arm": dict(proposal.arm.values), "repeat_of": proposal.repeat_of}
        if number in self.restore_points:
            path, step = self.restore_points.pop(number)
            config[META_KEY][RESTORE_KEY] = {"path": path, "step": step}
        return config

    def _allowed(self) -> int | None:
        """The allowance where it binds (allocation.allowance.binding); None elsewhere."""
        return binding(self.allowance() if self.allowance is not None else None,
                       self.concurrency)

    def _at_allowance(self) -> bool:
        allowed = self._allowed()
        return allowed is not None and len(self.live) >= allowed

    def holds_back(self) -> bool:
        """Whether, under an allowance below the study's own concurrency, it starts no trial
        now: it is at its allowance, or has none left to start."""
        allowed = self._allowed()
        if allowed is None:
            return False
        return len(self.live) >= allowed or not self.pending

    def on_trial_complete(self, trial_id: str, result: dict | None = None,
                          error: bool = False) -> None:
        """Finished trials reach the searcher through the store callback, which knows the
        trial's best value and final state; here the trial only stops being live."""
        self.live.discard(trial_id)

    # Nothing to save or restore: the store is the searcher's memory.
    def get_state(self) -> dict[str, Any]:
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        pass

    def save(self, checkpoint_path: str) -> None:
        pass

    def restore(self, checkpoint_path: str) -> None:
        pass
