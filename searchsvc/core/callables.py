"""A ``module:callable`` reference (a study's objective, a searcher's model factory), parsed in
one place. Pure Python."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CallableRef:
    """``package.module:attribute.path``: the module to import and the attribute path in it
    (empty when the reference names a module only)."""

    module: str
    attribute: str = ""

    @classmethod
    def parse(cls, ref: str) -> CallableRef:
        module, _, attribute = ref.partition(":")
        return cls(module, attribute)

    @property
    def parts(self) -> tuple[str, ...]:
        """The module's dotted name, split: ``("package", "module")``."""
        return tuple(self.module.split("."))

    @property
    def top(self) -> str:
        """The top-level package (or module) to find or ship."""
        return self.parts[0]

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attribute path inside the module, split."""
        return tuple(self.attribute.split(".")) if self.attribute else ()

    def __str__(self) -> str:
        return f"{self.module}:{self.attribute}" if self.attribute else self.module
