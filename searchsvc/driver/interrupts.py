"""Ctrl-C during a run: the first stops it gracefully, the second at once."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

STOPPED_BY_CTRL_C = "stopped by Ctrl-C"


class CtrlC:
    """First Ctrl-C: stop gracefully (running trials are marked interrupted, the study stays
    resumable). Second Ctrl-C: abort at once."""

    def __init__(self) -> None:
        self.pressed = False

    @contextmanager
    def graceful(self) -> Iterator[None]:
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)

        def handler(signum: int, frame: Any) -> None:
            if self.pressed:
                raise KeyboardInterrupt
            self.pressed = True
            # Ray Tune ends a run gracefully on SIGUSR1 (its own SIGINT handler is disabled).
            os.kill(os.getpid(), signal.SIGUSR1)

        signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
