"""A length of time as people read it: one format for every place searchsvc shows one (the
live progress line, the service's pages, preflight's estimate, waiting and outage messages)."""

from __future__ import annotations

import math


def format_duration(seconds: float) -> str:
    """``seconds`` as text, in whole seconds (a fraction is dropped; a negative length, e.g.
    from a clock that stepped back, reads as none): under a minute ``"42s"``, under an hour
    minutes and seconds (``"3m 05s"``), else hours and minutes (``"1h 02m"``; the hours go on
    counting past a day). :class:`ValueError` for a length that is not finite.

    >>> format_duration(0.4), format_duration(59.9), format_duration(65)
    ('0s', '59s', '1m 05s')
    >>> format_duration(3600), format_duration(93784)
    ('1h 00m', '26h 03m')
    """
    if not math.isfinite(seconds):
        raise ValueError(f"a duration is a finite number of seconds, got {seconds!r}")
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
