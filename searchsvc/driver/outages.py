"""A run riding through a store outage: the live progress shows it while it lasts, and once the
store is back the outage is recorded as a study event, which the report lists."""

from __future__ import annotations

from collections.abc import Callable

from searchsvc.core import STUDY_EVENT, EventKind
from searchsvc.driver.progress import Progress
from searchsvc.store import Store
from searchsvc.store.outage import Outage


def watch_outages(store: Store, study_id: int, progress: Progress) -> Callable[[], None]:
    """Show and record the outages ``store`` rides through while a run goes on; returns the
    function that stops watching. A store without outage handling (in memory) has none."""
    watch = getattr(store, "outage", None)
    if watch is None:
        return lambda: None

    def seen(outage: Outage) -> None:
        ended = outage.ended is not None
        progress.store_outage(outage.seconds, ended=ended, window_s=watch.window_s,
                              error=outage.error)
        if ended:
            store.record_event(study_id, STUDY_EVENT, EventKind.STORE_OUTAGE, data={
                "started": outage.started, "seconds": round(outage.seconds, 3),
                "error": outage.error})

    watch.listeners.append(seen)
    return lambda: watch.listeners.remove(seen)
