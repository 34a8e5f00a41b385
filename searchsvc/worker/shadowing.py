"""A user's module that shadows a package: ``bottleneck.py`` beside a study (a natural name for a
study of bottleneck layers) is what pandas finds when it probes its optional ``bottleneck``
package, and Ray then reports "Can't import ray.tune as some dependencies are missing" — the
opposite of the cause. When an import fails, :func:`shadowing` names the user's file and the
package it hides, so the error can ask to rename it."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from searchsvc.errors import ObjectiveError


@cache
def _installed_names() -> frozenset[str]:
    """Top-level modules of the installed distributions."""
    return frozenset(importlib.metadata.packages_distributions())


@cache
def _optional_names() -> frozenset[str]:
    """The optional packages pandas probes for (its ``compat/_optional.py`` VERSIONS), read
    from its file without importing pandas (which may be what failed)."""
    try:
        found = importlib.util.find_spec("pandas")
    except (ImportError, ValueError):
        return frozenset()
    folders = list(found.submodule_search_locations or []) if found else []
    for folder in folders:
        path = Path(folder) / "compat" / "_optional.py"
        if path.is_file():
            return frozenset(_dict_keys(path.read_text(), "VERSIONS"))
    return frozenset()


def _dict_keys(source: str, name: str) -> list[str]:
    for node in ast.walk(ast.parse(source)):
        target = getattr(node, "target", None) or next(iter(getattr(node, "targets", [])),
                                                       None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Dict):
            return [k.value for k in value.keys if isinstance(k, ast.Constant)
                    and isinstance(k.value, str)]
    return []


def _what(name: str, users: Sequence[str]) -> str | None:
    """What ``name`` is besides the user's module: the kind of package it hides. A standard
    or installed one only counts when a copy exists outside the user's folders ``users`` (a
    project installed in development mode is the user's own folder, hiding nothing)."""
    if name in _optional_names():
        return "optional package"
    if name not in sys.stdlib_module_names and name not in _installed_names():
        return None
    roots = [Path(u).resolve() for u in users]
    elsewhere = [p for p in sys.path if p and Path(p).resolve() not in roots]
    if importlib.machinery.PathFinder.find_spec(name, elsewhere) is None:
        return None
    return ("standard-library module" if name in sys.stdlib_module_names
            else "installed package")


def _user_modules(paths: Sequence[str]) -> dict[str, Path]:
    """Top-level modules in the user's folders: name -> file or package folder."""
    found: dict[str, Path] = {}
    for folder in map(Path, paths):
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.suffix == ".py" and entry.stem.isidentifier():
                found.setdefault(entry.stem, entry)
            elif entry.is_dir() and (entry / "__init__.py").is_file():
                found.setdefault(entry.name, entry)
    return found


def shadowing(paths: Sequence[str], failure: BaseException | None = None) -> list[str]:
    """Each user module in ``paths`` that hides a package and plausibly caused ``failure``
    (named in its message, imported by it, or loaded from the user's folder), in words:
    ``/work/bottleneck.py shadows the optional package 'bottleneck' ...``. Without a
    ``failure``: every user module that hides a package."""
    if failure is not None and not _imports_failed(failure):
        return []
    text = _chain_text(failure) if failure is not None else ""
    said = []
    for name, where in sorted(_user_modules(paths).items()):
        kind = _what(name, paths)
        if kind is None:
            continue
        loaded = getattr(sys.modules.get(name), "__file__", None)
        if failure is None or re.search(rf"\b{re.escape(name)}\b", text) or (
                loaded and Path(loaded).resolve().is_relative_to(where.resolve())):
            why = (" (pandas, which Ray Tune imports, looks for it)"
                   if kind == "optional package" else "")
            said.append(f"{where} shadows the {kind} {name!r}{why}: rename it (and its "
                        "imports)")
    return said


def _chain(failure: BaseException) -> Iterator[BaseException]:
    """``failure`` and the exceptions behind it (causes and contexts)."""
    seen: set[int] = set()
    current: BaseException | None = failure
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _imports_failed(failure: BaseException) -> bool:
    return any(isinstance(e, ImportError) for e in _chain(failure))


def _chain_text(failure: BaseException) -> str:
    """Messages and module names of ``failure`` and the exceptions behind it."""
    return " ".join(f"{e} {getattr(e, 'name', '') or ''}" for e in _chain(failure))


@contextmanager
def named_shadowing(paths: Sequence[str]) -> Iterator[None]:
    """Turn an import that fails because a user's module shadows a package into an
    :class:`ObjectiveError` naming the file and the package (other failures pass as they
    are)."""
    try:
        yield
    except ImportError as exc:
        said = shadowing(paths, exc)
        if not said:
            raise
        raise ObjectiveError("; ".join(said) + f". The import that failed: "
                             f"{type(exc).__name__}: {exc}") from exc
