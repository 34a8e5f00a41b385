"""Loaded by the Python of a command objective's script (its folder is put first on the
script's ``PYTHONPATH``):

- after each line the script prints, it waits until searchsvc has read that line and looked
  at the checkpoint folder, so a checkpoint is judged as it was when its metrics line was
  printed, however fast the script runs (``SEARCHSVC_ACK_FD``);
- with ``SEARCHSVC_WANDB_REPORTS`` set (a study's ``metrics: wandb``), each ``wandb.log`` of
  the script's W&B run also prints its numbers as a report line, so a W&B sweep's program
  reports to the study as it is.

A ``sitecustomize`` of the user's own is then loaded as usual."""

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


REPORT_PREFIX = "@searchsvc-report "  # searchsvc.core.commands.REPORT_PREFIX


def _report_wandb_logs() -> None:
    """Wrap W&B's ``Run.log`` (what ``wandb.log`` calls once a run started) when W&B's run
    module is first imported."""
    import importlib.abc
    import importlib.machinery
    import json

    def wrapped(original):
        def log(self, data, step=None, commit=None, *args, **kwargs):
            result = original(self, data, step, commit, *args, **kwargs)
            numbers = {k: v for k, v in dict(data).items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if numbers:
                print(REPORT_PREFIX + json.dumps(numbers), flush=True)
            return result
        return log

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "wandb.sdk.wandb_run":
                return None
            found = importlib.machinery.PathFinder.find_spec(name, path)
            if found is None or found.loader is None:
                return None
            load = found.loader.exec_module

            def exec_module(module):
                load(module)
                module.Run.log = wrapped(module.Run.log)
            found.loader.exec_module = exec_module  # type: ignore[method-assign]
            return found

    sys.meta_path.insert(0, Finder())


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
if os.environ.get("SEARCHSVC_WANDB_REPORTS"):
    _report_wandb_logs()
_users_own()
