"""Finds the objective a study names ("module:callable") on the study's import path, or the
function given for it in this process (:func:`give_objective`)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from searchsvc.core.callables import CallableRef
from searchsvc.errors import ObjectiveError
from searchsvc.worker.shadowing import named_shadowing


def search_paths_for(spec_file: str | None, code: str | None = None,
                     workdir: str | None = None) -> list[str]:
    """The study's code bundle (a service study's uploaded code), the study file's folder,
    then the folder it was launched from (``workdir``; default: the current folder)."""
    paths = [code] if code else []
    if spec_file and not spec_file.startswith("<"):
        paths.append(str(Path(spec_file).resolve().parent))
    paths.append(workdir or str(Path.cwd()))
    return list(dict.fromkeys(paths))


def add_to_import_path(paths: Sequence[str]) -> None:
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)


# Objectives given as functions (the Python API's ``objective=``, e.g. one defined in a
# notebook, which no worker could import): the driver ships each to the workers by value with
# the trial's settings, and each process that runs it gives it here first.
_GIVEN: dict[str, Callable[..., Any]] = {}


def give_objective(ref: str, function: Callable[..., Any]) -> None:
    """From now on in this process, ``ref`` names ``function``."""
    if not callable(function):
        raise ObjectiveError(f"objective {ref!r}: {function!r} is not callable")
    _GIVEN[ref] = function


def given_objective(ref: str) -> Callable[..., Any] | None:
    """The function given for ``ref`` in this process, if any."""
    return _GIVEN.get(ref)


def objective_ref(function: Callable[..., Any]) -> str:
    """The name a function given as an objective goes by (``module:qualname``)."""
    module = getattr(function, "__module__", None) or "__main__"
    name = str(getattr(function, "__qualname__", None) or "objective")
    return f"{module}:{name.replace('<', '').replace('>', '')}"


def resolve_objective(ref: str, search_paths: Sequence[str]) -> Callable[..., Any]:
    """The function given for ``ref``, else import ``module:callable``;
    :class:`ObjectiveError` says precisely what is missing."""
    if ref in _GIVEN:
        return _GIVEN[ref]
    parsed = CallableRef.parse(ref)
    module_name = parsed.module
    add_to_import_path(search_paths)
    try:
        with named_shadowing(search_paths):
            module = importlib.import_module(module_name)
    except ObjectiveError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ObjectiveError(
                f"objective {ref!r}: no module named {exc.name!r} on the import path "
                f"(searched {', '.join(search_paths)} and the installed packages)"
            ) from None
        raise ObjectiveError(f"objective {ref!r}: importing {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        raise ObjectiveError(
            f"objective {ref!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for part in parsed.attributes:
        if not hasattr(target, part):
            raise ObjectiveError(f"objective {ref!r}: module {module_name!r} has no "
                                 f"attribute {part!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ObjectiveError(f"objective {ref!r} is not callable (it is {type(target).__name__})")
    return target


def locate_objective(ref: str, search_paths: Sequence[str]) -> Path | None:
    """Check that the module of ``ref`` exists on the study's import path **without importing
    it** (no user code runs): the file of a module under ``search_paths``, or None for an
    installed module. :class:`ObjectiveError` when it is nowhere. Whether the callable exists
    is known only once a worker imports it."""
    module_name = CallableRef.parse(ref).module
    parts = module_name.split(".")
    if not module_name or any(not p.isidentifier() for p in parts):
        raise ObjectiveError(f"objective {ref!r}: {module_name!r} is not a module name")
    for base in search_paths:
        found = module_file(Path(base), parts)
        if found is not None:
            return found
    top = importlib.util.find_spec(parts[0]) if parts[0] not in sys.modules else True
    if top is not None and (len(parts) == 1 or _installed_submodule(parts)):
        return None
    raise ObjectiveError(f"objective {ref!r}: no module named {module_name!r} on the import "
                         f"path (searched {', '.join(search_paths)} and the installed packages)")


def module_file(base: Path, parts: Sequence[str]) -> Path | None:
    """The file of the module named by ``parts`` under folder ``base`` (``a/b.py`` or
    ``a/b/__init__.py``), found without importing; None when there is none."""
    path = base.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _installed_submodule(parts: Sequence[str]) -> bool:
    """Whether an installed package has the submodule, judged by its files (not importing)."""
    spec = importlib.util.find_spec(parts[0]) if parts[0] not in sys.modules else None
    locations = (list(spec.submodule_search_locations or []) if spec is not None
                 else list(getattr(sys.modules[parts[0]], "__path__", [])))
    return any(module_file(Path(folder), parts[1:]) is not None for folder in locations)


def module_base(ref: str, search_paths: Sequence[str]) -> str | None:
    """The folder of ``search_paths`` that holds the objective's module (found without
    importing); None when it is an installed module."""
    parts = CallableRef.parse(ref).parts
    return next((base for base in search_paths if module_file(Path(base), parts) is not None),
                None)


def module_root(ref: str, search_paths: Sequence[str]) -> Path | None:
    """Folder or file of the objective's top-level package, to ship to a remote cluster; None
    when it is an installed package (the cluster's image must have it)."""
    top = CallableRef.parse(ref).top
    for base in search_paths:
        for candidate in (Path(base) / top, Path(base) / f"{top}.py"):
            if candidate.exists():
                return candidate
    return None
