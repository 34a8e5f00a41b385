"""Code bundles: a user's own training code, packed by ``searchsvc submit --code DIR`` and
stored by the service under its content hash, so a study's objective can import from it on
every Ray worker (the driver ships the folder as the job's ``working_dir``).

Packing (client side) keeps what git would keep (the folder's ``.gitignore`` files, plus
``.git``, caches and virtual environments), refuses symlinks that leave the folder, and makes
the same archive for the same files (sorted, no timestamps), so the hash names the code.
Unpacking (server side) trusts nothing: only plain files and folders with relative paths inside
the bundle, bounded in count and size, checked before anything is written; a refused archive
leaves nothing on disk. The trust model: docs/service.md, "Submitting your own code" and
"Trust model".
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import secrets
import shutil
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from searchsvc.core.callables import CallableRef
from searchsvc.errors import CodeBundleError
from searchsvc.worker.objective import module_file

MAX_PACKED_BYTES = 20 * 1024 * 1024  # the archive as sent
MAX_UNPACKED_BYTES = 100 * 1024 * 1024  # Ray's own limit for a working_dir upload
MAX_FILES = 5_000
# Never part of a bundle, whatever .gitignore says: they are not the user's code.
ALWAYS_LEFT_OUT = (".git/", "__pycache__/", "*.pyc", ".venv/", "venv/", ".mypy_cache/",
                   ".pytest_cache/", ".ruff_cache/", ".ipynb_checkpoints/", "*.egg-info/")


@dataclass(frozen=True)
class BundleLimits:
    """What the service accepts: the archive's size as sent, and what it unpacks to."""

    max_packed_bytes: int = MAX_PACKED_BYTES
    max_unpacked_bytes: int = MAX_UNPACKED_BYTES
    max_files: int = MAX_FILES


@dataclass(frozen=True)
class CodeBundle:
    """An unpacked bundle: ``path`` holds the files; ``sha256`` is the archive's hash."""

    sha256: str
    path: Path
    files: int
    bytes: int

    def provenance(self) -> dict[str, object]:
        return {"sha256": self.sha256, "path": str(self.path), "files": self.files,
                "bytes": self.bytes}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- packing (the client) -----------------------------------------------------------------------

def pack(folder: Path, limits: BundleLimits | None = None) -> bytes:
    """A gzipped tar of ``folder``'s code, the same bytes for the same files.
    :class:`CodeBundleError` for a symlink leaving the folder, or a bundle over ``limits``."""
    limits = limits or BundleLimits()
    folder = folder.resolve()
    if not folder.is_dir():
        raise CodeBundleError(f"--code {folder}: not a folder")
    raw = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for count, (relative, real) in enumerate(_code_files(folder), start=1):
            data = real.read_bytes()
            total += len(data)
            if total > limits.max_unpacked_bytes or count > limits.max_files:
                raise CodeBundleError(
                    f"--code {folder}: more than {limits.max_files} files or "
                    f"{limits.max_unpacked_bytes} bytes; list what is not code in .gitignore")
            info = tarfile.TarInfo(relative)
            info.size, info.mode = len(data), 0o755 if os.access(real, os.X_OK) else 0o644
            tar.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue(), mtime=0)
    if len(packed) > limits.max_packed_bytes:
        raise CodeBundleError(f"--code {folder}: the archive is {len(packed)} bytes, over the "
                              f"limit of {limits.max_packed_bytes}")
    return packed


def _code_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """(path in the bundle, file to read) for every file kept, in sorted order."""
    import pathspec

    ignored = pathspec.GitIgnoreSpec.from_lines(ALWAYS_LEFT_OUT)
    found: list[tuple[str, Path]] = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        rel_root = here.relative_to(folder).as_posix()
        gitignore = here / ".gitignore"
        if gitignore.is_file():  # rules of a nested .gitignore are relative to its folder
            prefix = "" if rel_root == "." else rel_root + "/"
            ignored += pathspec.GitIgnoreSpec.from_lines(
                _rooted(line, prefix) for line in gitignore.read_text().splitlines())
        kept_dirs = []
        for name in sorted(dirs):
            rel = _join(rel_root, name)
            if not ignored.match_file(rel + "/"):
                _inside(folder, here / name, rel)
                if not (here / name).is_symlink():  # its real folder is walked on its own
                    kept_dirs.append(name)
        dirs[:] = kept_dirs
        for name in sorted(files):
            rel = _join(rel_root, name)
            if not ignored.match_file(rel):
                real = _inside(folder, here / name, rel)
                if real.is_file():
                    found.append((rel, real))
    return iter(sorted(found))


def _rooted(line: str, prefix: str) -> str:
    """A nested .gitignore's pattern, rewritten relative to the bundle's root."""
    stripped = line.strip()
    if not prefix or not stripped or stripped.startswith("#"):
        return line
    negate = "!" if stripped.startswith("!") else ""
    pattern = stripped.removeprefix("!")
    if "/" in pattern.rstrip("/"):
        return f"{negate}{prefix}{pattern.lstrip('/')}"
    return f"{negate}{prefix}**/{pattern}"


def _join(root: str, name: str) -> str:
    return name if root == "." else f"{root}/{name}"


def _inside(folder: Path, path: Path, rel: str) -> Path:
    """``path`` resolved; :class:`CodeBundleError` when a symlink takes it out of ``folder``."""
    real = path.resolve()
    if real != folder and folder not in real.parents:
        raise CodeBundleError(f"--code {folder}: {rel} is a symlink to {real}, outside the "
                              "folder; copy what it points to into the folder, or list it in "
                              ".gitignore")
    return real


# -- unpacking (the service) --------------------------------------------------------------------

def store_bundle(data: bytes, root: Path, limits: BundleLimits | None = None) -> CodeBundle:
    """Unpack archive ``data`` into ``root/<sha256>`` (kept as it is when already there) and
    describe it. :class:`CodeBundleError` for an archive that is not a gzipped tar, has a
    member that is not a plain file or folder, a path that is absolute or climbs out with
    ``..``, or more than ``limits`` allow; then nothing is left on disk."""
    limits = limits or BundleLimits()
    if len(data) > limits.max_packed_bytes:
        raise CodeBundleError(f"the archive is {len(data)} bytes, over the limit of "
                              f"{limits.max_packed_bytes}")
    sha = digest(data)
    members = _checked_members(data, limits)
    final = root / sha
    if final.is_dir():
        return CodeBundle(sha, final, len(members), sum(m.size for m in members))
    root.mkdir(parents=True, exist_ok=True)
    incoming = root / f".incoming-{secrets.token_hex(8)}"
    try:
        _extract(data, members, incoming, limits)
        with contextlib.suppress(OSError):  # another upload of the same bytes won the race
            incoming.rename(final)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    return CodeBundle(sha, final, len(members), sum(m.size for m in members))


def find_bundle(root: Path, sha256: str) -> CodeBundle | None:
    """The stored bundle named ``sha256``, or None."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        return None
    path = root / sha256
    if not path.is_dir():
        return None
    files = [p for p in path.rglob("*") if p.is_file()]
    return CodeBundle(sha256, path, len(files), sum(p.stat().st_size for p in files))


def _checked_members(data: bytes, limits: BundleLimits) -> list[tarfile.TarInfo]:
    """Every member of the archive, each checked, before any is written."""
    members: list[tarfile.TarInfo] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                _check_member(member)
                members.append(member)
                total += member.size
                if len(members) > limits.max_files:
                    raise CodeBundleError(f"the archive has more than {limits.max_files} "
                                          "entries")
                if total > limits.max_unpacked_bytes:
                    raise CodeBundleError(f"the archive unpacks to more than "
                                          f"{limits.max_unpacked_bytes} bytes")
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise CodeBundleError(f"not a gzipped tar archive: {exc}") from None
    return members


def _check_member(member: tarfile.TarInfo) -> None:
    name = member.name
    if not (member.isfile() or member.isdir()):
        raise CodeBundleError(f"archive entry {name!r} is not a plain file or folder "
                              "(links and devices are refused)")
    path = PurePosixPath(name)
    if (not name or "\\" in name or "\x00" in name or path.is_absolute()
            or any(part in ("..", "") for part in name.rstrip("/").split("/"))):
        raise CodeBundleError(f"archive entry {name!r} is not a relative path inside the "
                              "bundle")


def _extract(data: bytes, members: list[tarfile.TarInfo], into: Path,
             limits: BundleLimits) -> None:
    into.mkdir()
    written = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in members:
            target = into / member.name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a plain file always has data
            with source, target.open("wb") as out:
                while chunk := source.read(1 << 16):
                    written += len(chunk)
                    if written > limits.max_unpacked_bytes:
                        raise CodeBundleError(f"the archive unpacks to more than "
                                              f"{limits.max_unpacked_bytes} bytes")
                    out.write(chunk)
            target.chmod(0o755 if member.mode & 0o100 else 0o644)


def own_code_folder(objective: str, folder: Path) -> Path | None:
    """``folder`` (resolved) when the objective's module (``module:callable``) lives there: the
    user's own code, which a server cannot have and so is uploaded with the study; None for an
    objective the server is to provide."""
    folder = folder.resolve()
    return folder if module_in_bundle(folder, CallableRef.parse(objective).module) else None


def allowed_module(module: str, prefixes: Sequence[str]) -> bool:
    """Whether ``module`` is under one of ``prefixes`` ("objectives." allows objectives.x): a
    server's allow-list (``serve --allow-objectives``)."""
    return any(module.startswith(p) or module == p.rstrip(".") for p in prefixes)


def module_in_bundle(folder: Path, module: str) -> bool:
    """Whether ``module`` (dotted) is a file or package of ``folder``, found without importing."""
    parts = module.split(".")
    if any(not p.isidentifier() for p in parts):
        return False
    return module_file(folder, parts) is not None
