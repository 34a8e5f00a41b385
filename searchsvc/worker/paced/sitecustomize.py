"""Loaded by the Python of a command objective's script (its folder is put first on the
script's ``PYTHONPATH``): after each line the script prints, it waits until searchsvc has read
that line and looked at the checkpoint folder, so a checkpoint is judged as it was when its
metrics line was printed, however fast the script runs. A ``sitecustomize`` of the user's own
is then loaded as usual. Nothing changes when ``SEARCHSVC_ACK_FD`` is not set."""

import os
import sys


def _install(ack_fd: int) -> None:
    class PacedStdout:
        """sys.stdout, waiting for one acknowledgement per line written."""

        def __init__(self, stream):
            self._stream, self._paced = stream, True

        def write(self, text):
            written = self._stream.write(text)
            lines = text.count("\n")
            if lines and self._paced:
                self._stream.flush()
                for _ in range(lines):
                    if not os.read(ack_fd, 1):  # searchsvc went away: stop waiting
                        self._paced = False
                        break
            return written

        def __getattr__(self, name):
            return getattr(self._stream, name)

    sys.stdout = PacedStdout(sys.stdout)


def _users_own() -> None:
    """Import the ``sitecustomize`` this one stands in front of, if there is one."""
    here = os.path.dirname(os.path.abspath(__file__))
    module = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401  (the user's)
    except ImportError:
        if module is not None:
            sys.modules["sitecustomize"] = module
    finally:
        sys.path[:] = saved


_fd = os.environ.pop("SEARCHSVC_ACK_FD", None)
if _fd is not None and _fd.isdigit():
    _install(int(_fd))
_users_own()
