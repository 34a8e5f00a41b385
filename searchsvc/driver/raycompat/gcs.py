"""Whether a Ray cluster's GCS answers this process, asked once before ``ray.init`` attaches.

``ray.init(address=HOST:PORT)`` retries its first request for 20 s when the cluster refuses
the process's token (a refusal that never changes), and for minutes when nothing answers at
the address at all, printing a warning a second. One request to the GCS says which it is."""

from __future__ import annotations

import time

# Each request gives up after this; Ray's client adds its own waits for the channel (about
# 10 s in all when nothing listens at the address).
_REQUEST_MS = 2000


def gcs_problem(address: str, *, wait_s: float) -> tuple[str, str] | None:
    """None when the GCS at ``address`` (HOST:PORT) answers this process; otherwise
    ``(kind, why)``: kind ``"token"`` when it refuses this process's token (said at once: that
    will not change), ``"silent"`` when nothing answered within ``wait_s`` seconds (asked again
    each second until then: a head that is still starting gets that long)."""
    from ray._raylet import InnerGcsClient  # type: ignore[attr-defined]
    from ray.exceptions import AuthenticationError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            InnerGcsClient.standalone(address, None, _REQUEST_MS)
            return None
        except AuthenticationError as exc:
            return "token", f"the cluster refused this process's token ({_first_sentence(exc)})"
        except Exception as exc:
            if time.monotonic() >= deadline:
                return "silent", (
                    f"no Ray cluster answered at {address} within {wait_s:.0f} s "
                    f"({type(exc).__name__}: {_first_sentence(exc)}): check that its head is "
                    "started and that this is its GCS address, the port `ray start --head "
                    "--port` was given (6379 by default)")
            time.sleep(1)


def _first_sentence(exc: BaseException) -> str:
    """The first sentence of Ray's message, without its "RPC error:" prefix."""
    text = str(exc).strip().removeprefix("RPC error:").strip()
    return text.split(". ")[0].rstrip(".")
