"""Small gzipped tar archives made by hand, for the code-bundle tests (names and contents as
given, hostile ones included)."""

from __future__ import annotations

import io
import tarfile


def tar_gz(*entries: tuple[str, bytes]) -> bytes:
    """A gzipped tar of plain files, each ``(name in the archive, contents)``."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()
