"""Named factories for every pluggable kind (searchers, backends, trackers, stores,
schedulers): one registry helper, so each kind is looked up, listed and refused the same way.

An entry is registered by name either as the object itself or as ``"module:attribute"``, which
is imported on first use: a kind whose entries need heavy libraries (TensorFlow for a Keras
backend, MLflow for a tracker) costs nothing until a study names it. Looking up an unknown name
raises :class:`UnknownNameError`, whose message lists the valid names.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

from searchsvc.core.callables import CallableRef

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name no entry of the registry has (a KeyError, so ``in``-style lookups still work)."""

    def __init__(self, kind: str, name: object, valid: list[str]):
        super().__init__(name)
        self.kind, self.name, self.valid = kind, name, valid

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r} (valid: {', '.join(self.valid)})"


class Registry(Generic[T]):
    """The named entries of one pluggable ``kind`` (used in error messages: ``searcher``)."""

    def __init__(self, kind: str, entries: dict[str, T | str] | None = None,
                 default: str | None = None):
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        for name, entry in (entries or {}).items():
            self.register(name, entry)
        if default is not None and default not in self._entries:
            raise ValueError(f"default {kind} {default!r} is not registered")
        self.default = default  # what a study file that names none gets

    def register(self, name: str, entry: T | str) -> None:
        """Make ``entry`` available as ``name``: the object, or ``"module:attribute"`` to import
        when first looked up. A name is registered once."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        if isinstance(entry, str) and ":" not in entry:
            raise ValueError(f"{self.kind} {name!r}: a lazy entry is 'module:attribute', got "
                             f"{entry!r}")
        self._entries[name] = entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a plug-in that goes away; tests' throwaway entries)."""
        if name == self.default:
            raise ValueError(f"{self.kind} {name!r} is the default and stays registered")
        if self._entries.pop(name, None) is None:
            raise UnknownNameError(self.kind, name, self.names())

    def default_name(self) -> str:
        """The name a study file that names none gets (ValueError for a kind without one)."""
        if self.default is None:
            raise ValueError(f"no {self.kind} is the default")
        return self.default

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> T:
        """The entry registered as ``name`` (imported now if it was lazy);
        :class:`UnknownNameError` listing the valid names if there is none."""
        try:
            entry = self._entries[name]
        except (KeyError, TypeError):
            raise UnknownNameError(self.kind, name, self.names()) from None
        if isinstance(entry, str):
            ref = CallableRef.parse(entry)
            loaded: T = getattr(importlib.import_module(ref.module), ref.attribute)
            self._entries[name] = loaded
            return loaded
        return entry

    def having(self, capability: str) -> list[str]:
        """The names, sorted, whose entry declares ``capability`` as a true attribute (a
        searcher's ``multi_fidelity``): what rules and messages about a capability list."""
        return [name for name in self.names() if getattr(self.get(name), capability, False)]


__all__ = ["Registry", "UnknownNameError"]
