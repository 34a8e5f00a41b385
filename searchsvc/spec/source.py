"""Reads YAML safely and remembers the line of every key, so errors can say FILE:LINE.

PyYAML's safe loader builds the node graph; we convert it ourselves to catch what PyYAML lets
through silently (duplicate keys, alias bombs, non-string keys) and to record line numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from searchsvc.errors import SpecError, SpecIssue

MAX_FILE_BYTES = 1 << 20  # a study file is hand-written; anything this big is a mistake
MAX_NODES = 100_000  # bounds alias expansion ("billion laughs") and absurdly large files
MAX_DEPTH = 50
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_SURROGATE = re.compile("[\ud800-\udfff]")

Path = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """Safe loader that also reads ``1e-4`` as a float (YAML 1.1 wants ``1.0e-4``)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


@dataclass(frozen=True)
class SpecSource:
    """Where a spec came from: file name, text, and the 1-based line of every field path, so
    checks made long after parsing can still point at FILE:LINE."""

    file: str = "<spec>"
    text: str = ""
    lines: Mapping[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path) -> int | None:
        """Line of ``path``, or of its nearest ancestor that exists in the file."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def has(self, path: Path) -> bool:
        """Whether the file itself sets ``path`` (not a default)."""
        return tuple(path) in self.lines

    def issue(self, path: Path, message: str, *value: Any) -> SpecIssue:
        """A :class:`SpecIssue` located in this file; pass the bad value to have it echoed."""
        return SpecIssue(
            tuple(path), message, value=value[0] if value else None, has_value=bool(value),
            line=self.line_of(path), file=self.file,
        )


class _Converter:
    """Turns the node graph into plain data. Every node is counted each time it is reached, so
    a node reached through many aliases counts many times: the count is the size of the data
    being built, and conversion stops once it passes MAX_NODES, whatever the aliases multiply
    to. PyYAML's own merge ("<<") and alias expansion, which count nothing, are never used."""

    def __init__(self, loader: _Loader, file: str):
        self.loader = loader
        self.file = file
        self.lines: dict[Path, int] = {}
        self.issues: list[SpecIssue] = []
        self.nodes = 0
        self.seen: set[int] = set()  # ids of the nodes reached so far
        self.aliased = False  # some node was reached twice (through an alias)
        self.open: set[int] = set()  # ids of the nodes being converted (to spot recursion)

    def issue(self, path: Path, line: int, message: str) -> None:
        self.issues.append(SpecIssue(path, message, line=line, file=self.file))

    def convert(self, node: yaml.Node, path: Path, depth: int = 0) -> Any:
        line = node.start_mark.line + 1
        self._count(node, line, path)
        if id(node) in self.open:
            raise _Recursive(line)
        if depth > MAX_DEPTH:
            raise _TooDeep(line)
        self.lines.setdefault(path, line)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path, line)
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path, depth)
            return [self.convert(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        finally:
            self.open.discard(id(node))

    def _count(self, node: yaml.Node, line: int, path: Path) -> None:
        self.nodes += 1
        if id(node) in self.seen:
            self.aliased = True
        self.seen.add(id(node))
        if self.nodes > MAX_NODES:
            # Point at the top-level field that grew too large: where an alias bomb goes off,
            # not somewhere inside the anchor it repeats.
            raise _TooLarge(self.lines.get(path[:1], line), self.aliased)

    def _scalar(self, node: yaml.ScalarNode, path: Path, line: int) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
        except ValueError as exc:  # e.g. an int of more than 4300 digits, a 13th month
            self.issue(path, line, _unreadable(node, exc))
            return None
        if isinstance(value, str):
            value = self._text(value, path, line)
        return value

    def _text(self, value: str, path: Path, line: int) -> str:
        """``value`` as Unicode text. YAML's ``\\u`` escapes give UTF-16 halves one by one, so
        JSON's escaped pairs ("\\ud83d\\ude00") are joined here; a half left alone is no
        character (nothing could store or print it): an issue, and U+FFFD in its place."""
        if not _SURROGATE.search(value):
            return value
        joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        lone = _SURROGATE.search(joined)
        if lone is None:
            return joined
        self.issue(path, line, f"not valid Unicode: \\u{ord(lone.group()):04x} is half of a "
                   "UTF-16 surrogate pair, and its other half is missing")
        return _SURROGATE.sub("\ufffd", joined)

    def _mapping(self, node: yaml.MappingNode, path: Path, depth: int) -> dict[str, Any]:
        # YAML merge keys ("<<: *defaults"): the merged keys come first, keys written here
        # override them, and of several merged mappings the first one listed wins.
        result = self._merged(node, path, depth)
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self.issue(path, line, "keys must be plain names, not lists or mappings")
                continue
            key = self._key(key_node, path, line)
            if key is None:
                continue
            if key in first_line:
                self.issue(
                    (*path, key), line, f"duplicate key (first defined on line {first_line[key]})"
                )
                continue
            first_line[key] = line
            key_path = (*path, key)  # not `lines[(*path, key)]`: mypy reads that as 3.11 syntax
            self.lines[key_path] = line
            result[key] = self.convert(value_node, key_path, depth + 1)
        return result

    def _key(self, node: yaml.ScalarNode, path: Path, line: int) -> str | None:
        if node.tag == _VALUE_TAG:  # a bare "=" key: plain text, as PyYAML reads it
            node.tag = "tag:yaml.org,2002:str"
        try:
            key = self.loader.construct_object(node)
        except ValueError as exc:
            self.issue(path, line, _unreadable(node, exc))
            return None
        return self._text(key, path, line) if isinstance(key, str) else str(key)

    def _merged(self, node: yaml.MappingNode, path: Path, depth: int) -> dict[str, Any]:
        """The keys that the mapping's "<<" entries merge into it."""
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                continue
            line = key_node.start_mark.line + 1
            sources = (value_node.value if isinstance(value_node, yaml.SequenceNode)
                       else [value_node])
            if not all(isinstance(source, yaml.MappingNode) for source in sources):
                self.issue(path, line, "`<<` (a YAML merge key) takes a mapping or a list of "
                           "mappings")
                continue
            for source in sources:
                for key, value in self.convert(source, path, depth).items():
                    merged.setdefault(key, value)
        return merged


def _unreadable(node: yaml.ScalarNode, exc: ValueError) -> str:
    if node.tag.endswith(":int"):
        return f"integer is too long ({len(node.value)} characters)"
    return f"cannot read {node.value[:40]!r} as a {node.tag.rsplit(':', 1)[-1]}: {exc}"


class _TooLarge(Exception):
    def __init__(self, line: int, aliased: bool = False):
        self.line = line
        self.aliased = aliased


class _TooDeep(_TooLarge):
    pass


class _Recursive(_TooLarge):
    pass


def _too_large(aliased: bool) -> str:
    if aliased:
        return (f"the file expands to more than {MAX_NODES} values (YAML aliases repeat "
                "what they name: an alias bomb?)")
    return f"the file holds more than {MAX_NODES} values; a study file needs far fewer"


def load_yaml(text: str | bytes, file: str = "<spec>") -> tuple[Any, SpecSource]:
    """Parse one YAML document into plain data and its :class:`SpecSource`.

    Raises :class:`SpecError`, with line numbers, for any problem."""
    data, source, issues = read_yaml(text, file)
    if issues:
        raise SpecError(issues)
    return data, source


def read_yaml(text: str | bytes, file: str = "<spec>") -> tuple[Any, SpecSource, list[SpecIssue]]:
    """Like :func:`load_yaml`, but returns problems that still leave usable data (a duplicate
    key keeps its first value) instead of raising, so they can be reported with later ones."""

    def fail(message: str, line: int | None = None, **value: Any) -> SpecError:
        return SpecError(
            [SpecIssue((), message, line=line, file=file, has_value=bool(value), **value)]
        )

    if isinstance(text, bytes):
        if len(text) > MAX_FILE_BYTES:
            raise fail(f"file is too large ({len(text)} bytes; the limit is {MAX_FILE_BYTES})")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(f"file is not UTF-8 text (bad byte at offset {exc.start})") from None
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise fail(f"file is too large (the limit is {MAX_FILE_BYTES} bytes)")
    if not text.strip():
        raise fail("file is empty: a study file needs at least study, objective, metric, "
                   "mode and parameters", line=1)
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:  # the reader refuses control characters up front
        raise fail(f"not valid YAML: unacceptable character #x{exc.character:04x} "
                   f"({exc.reason})", line=text.count("\n", 0, exc.position) + 1) from None
    try:
        root = loader.get_single_node()
        if root is None:
            raise fail("file holds no YAML document (only comments?)", line=1)
        converter = _Converter(loader, file)
        data = converter.convert(root, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise fail(f"not valid YAML: {problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise fail(f"not valid YAML: {exc}") from None
    except _Recursive as exc:
        raise fail("document is recursive (an alias refers to a node that contains it)",
                   line=exc.line) from None
    except _TooDeep as exc:
        raise fail(f"nesting is deeper than {MAX_DEPTH} levels", line=exc.line) from None
    except _TooLarge as exc:
        raise fail(_too_large(exc.aliased), line=exc.line) from None
    except RecursionError:  # PyYAML's parser recurses once per level of nesting
        raise fail(f"nesting is deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    return data, SpecSource(file=file, text=text, lines=converter.lines), converter.issues
