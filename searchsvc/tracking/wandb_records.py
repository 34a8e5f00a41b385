"""Reading back what W&B wrote: a run's ``.wandb`` file, a log of protobuf ``Record``s
(``wandb.proto.wandb_internal_pb2``) in LevelDB's log format (32 KiB blocks of records, each
with a 7-byte header: CRC-32 of its type and data, length, type; a record larger than what is
left of a block is split into FIRST, MIDDLE and LAST pieces), after a 7-byte file header
(``:W&B``, a magic number, a version). wandb ships no reader of it, so this is one.

The W&B tracker reads its own offline runs with it when a study resumes (W&B cannot resume an
offline run: a resumed trial goes on in a new run, from the step after the last one written),
and the tests read what the tracker wrote. A file cut short (its writer was killed) is read up
to its last whole record."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
IDENT = b":W&B"


def records(path: Path) -> Iterator[Any]:
    """The ``Record`` messages of one ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2

    for raw in _payloads(path.read_bytes()):
        record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]
        record.ParseFromString(raw)
        yield record


def _payloads(data: bytes) -> Iterator[bytes]:
    if data[:4] != IDENT:
        raise ValueError(f"not a W&B run file (it starts {data[:4]!r})")
    pos, pieces = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # a block's trailer: zeros
            pos += left
            continue
        checksum, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        body = data[pos + HEADER:pos + HEADER + length]
        if kind == 0 or len(body) < length or zlib.crc32(bytes([kind]) + body) != checksum:
            return  # the end of what was written whole
        pos += HEADER + length
        if kind == FULL:
            yield body
        elif kind == FIRST:
            pieces = body
        elif kind == MIDDLE:
            pieces += body
        elif kind == LAST:
            yield pieces + body
            pieces = b""


@dataclass
class RunFile:
    """One run as its file has it: its id, config, every history row (by ``_step``), summary
    updates, and whether it ended (``exit_code``; None: it did not)."""

    path: Path
    run_id: str = ""
    name: str = ""
    group: str = ""
    started: float = 0.0  # seconds since the epoch
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None

    @property
    def steps(self) -> list[int]:
        return [int(row["_step"]) for row in self.history if "_step" in row]


def read_run(path: Path) -> RunFile:
    """The run in the ``.wandb`` file at ``path``."""
    run = RunFile(path)
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.run_id, run.name = record.run.run_id, record.run.display_name
            run.group = record.run.run_group
            run.started = record.run.start_time.ToNanoseconds() / 1e9
            run.config.update(_items(record.run.config.update))
        elif kind == "config":
            run.config.update(_items(record.config.update))
        elif kind == "history":
            run.history.append(_items(record.history.item))
        elif kind == "summary":
            run.summary.update(_items(record.summary.update))
        elif kind == "exit":
            run.exit_code = int(record.exit.exit_code)
    return run


def _items(items: Any) -> dict[str, Any]:
    return {(item.key or "/".join(item.nested_key)): json.loads(item.value_json)
            for item in items}


def run_files(root: Path) -> list[RunFile]:
    """Every run under a W&B ``dir`` (its ``wandb/*run-*/run-*.wandb`` files), oldest first."""
    runs = [read_run(p) for p in root.glob("wandb/*run-*/run-*.wandb")]
    return sorted(runs, key=lambda r: (r.started, str(r.path)))
