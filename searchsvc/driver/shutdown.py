"""Ending the driver's Ray so that nothing else in the process can end the process with it.
Kept apart from :mod:`searchsvc.driver.raycompat`, which loads Ray Tune's schedulers: a study
that never used Ray Tune (a backend running its own search) must not import them to stop."""

from __future__ import annotations

import gc


def shutdown_ray() -> None:
    """``ray.shutdown()`` with Python's cyclic garbage collector held off while it runs.

    Ray tears the driver's core worker down (``shutdown_driver``) before it drops its handle to
    it, and releases the GIL meanwhile. A collection that another thread of the driver (the
    trackers' thread, say) happens to trigger in that window frees Ray Tune's garbage, whose
    ``ObjectRef``s then call into the dead core worker, and Ray ends the whole process with exit
    code 1 ("The core worker has already been shutdown"), after a study that finished. So the
    garbage is collected first, while Ray is up, and no collection runs until Ray is down; what
    becomes garbage later finds no core worker and is freed quietly."""
    import ray

    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        ray.shutdown()
    finally:
        if enabled:
            gc.enable()
    return_freed_memory()


def return_freed_memory() -> None:
    """Give the memory the C library holds freed back to the system (glibc's
    ``malloc_trim``; nothing elsewhere). A long run frees most of what Ray's core worker and
    Tune held once Ray is down, but the allocator keeps freed pages for reuse: the driver
    would carry the run's peak into the report written after it."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)
