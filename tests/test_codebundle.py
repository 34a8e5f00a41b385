"""Code bundles: what packing keeps and refuses, and what the service's unpacking refuses (with
nothing left on disk)."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from searchsvc.codebundle import (
    BundleLimits,
    digest,
    find_bundle,
    module_in_bundle,
    pack,
    store_bundle,
)
from searchsvc.errors import CodeBundleError


def user_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "pkg").mkdir(parents=True)
    (folder / "train.py").write_text("def train(config):\n    return 1.0\n")
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "pkg" / "model.py").write_text("WIDTH = 3\n")
    (folder / "run.sh").write_text("#!/bin/sh\n")
    (folder / "run.sh").chmod(0o755)
    (folder / ".gitignore").write_text("data/\n*.ckpt\n!keep.ckpt\n")
    (folder / "data").mkdir()
    (folder / "data" / "big.npy").write_bytes(b"x" * 1000)
    (folder / "model.ckpt").write_bytes(b"weights")
    (folder / "keep.ckpt").write_bytes(b"kept")
    (folder / "pkg" / ".gitignore").write_text("scratch.py\n")
    (folder / "pkg" / "scratch.py").write_text("junk\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "pkg" / "__pycache__").mkdir()
    (folder / "pkg" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    return folder


def names(archive: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return sorted(tar.getnames())


def archive_of(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return gzip.compress(raw.getvalue())


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_packing_keeps_what_git_would_and_is_reproducible(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    archive = pack(folder)
    assert names(archive) == [".gitignore", "keep.ckpt", "pkg/.gitignore", "pkg/__init__.py",
                              "pkg/model.py", "run.sh", "train.py"]
    assert pack(folder) == archive  # the same files give the same bytes, so the same hash


def test_a_symlink_inside_the_folder_is_packed_as_its_file_one_outside_is_refused(
        tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    (folder / "alias.py").symlink_to(folder / "train.py")
    assert "alias.py" in names(pack(folder))
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    (folder / "leak.txt").symlink_to(secret)
    with pytest.raises(CodeBundleError, match=r"leak.txt is a symlink to .*secret.txt, outside"):
        pack(folder)


def test_packing_refuses_a_folder_over_the_limits(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    with pytest.raises(CodeBundleError, match="more than 3 files"):
        pack(folder, BundleLimits(max_files=3))


def test_a_bundle_is_stored_under_its_hash_and_found_again(tmp_path: Path) -> None:
    archive = pack(user_folder(tmp_path))
    root = tmp_path / "code"
    bundle = store_bundle(archive, root)
    assert bundle.sha256 == digest(archive) and bundle.path == root / bundle.sha256
    assert (bundle.path / "pkg" / "model.py").read_text() == "WIDTH = 3\n"
    assert os.access(bundle.path / "run.sh", os.X_OK)
    assert not os.access(bundle.path / "train.py", os.X_OK)
    assert store_bundle(archive, root) == bundle  # a second upload changes nothing
    assert find_bundle(root, bundle.sha256) == bundle
    assert find_bundle(root, "0" * 64) is None and find_bundle(root, "../etc") is None
    assert sorted(p.name for p in root.iterdir()) == [bundle.sha256]
    assert module_in_bundle(bundle.path, "train") and module_in_bundle(bundle.path, "pkg.model")
    assert not module_in_bundle(bundle.path, "os") and not module_in_bundle(bundle.path, "../x")


@pytest.mark.parametrize(("members", "message"), [
    ([(entry("../escape.py"), b"x")], "not a relative path"),
    ([(entry("ok/../../escape.py"), b"x")], "not a relative path"),
    ([(entry("/etc/cron.d/x"), b"x")], "not a relative path"),
    ([(entry("link", tarfile.SYMTYPE, "/etc/passwd"), b"")], "not a plain file"),
    ([(entry("hard", tarfile.LNKTYPE, "train.py"), b"")], "not a plain file"),
    ([(entry("dev", tarfile.CHRTYPE), b"")], "not a plain file"),
    # the refused entry comes last: what came before it must not stay on disk either
    ([(entry("train.py"), b"ok"), (entry("../../escape.py"), b"x")], "not a relative path"),
])
def test_a_hostile_archive_is_refused_and_leaves_nothing_on_disk(
        tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]], message: str) -> None:
    root = tmp_path / "code" / "bundles"
    with pytest.raises(CodeBundleError, match=message):
        store_bundle(archive_of(*members), root)
    assert not root.exists() or list(root.iterdir()) == []
    assert not (tmp_path / "escape.py").exists() and not (tmp_path / "code" / "escape.py").exists()


def test_archives_over_the_limits_or_not_archives_are_refused_leaving_nothing(
        tmp_path: Path) -> None:
    root = tmp_path / "code"
    big = archive_of((entry("a.py"), b"x" * 5000))
    with pytest.raises(CodeBundleError, match="unpacks to more than 4000 bytes"):
        store_bundle(big, root, BundleLimits(max_unpacked_bytes=4000))
    incompressible = archive_of((entry("a.bin"), os.urandom(500)))
    with pytest.raises(CodeBundleError, match="over the limit of 100"):
        store_bundle(incompressible, root, BundleLimits(max_packed_bytes=100))
    many = archive_of(*[(entry(f"m{i}.py"), b"") for i in range(4)])
    with pytest.raises(CodeBundleError, match="more than 3 entries"):
        store_bundle(many, root, BundleLimits(max_files=3))
    with pytest.raises(CodeBundleError, match="not a gzipped tar"):
        store_bundle(b"PK\x03\x04 a zip file", root)
    assert not root.exists() or list(root.iterdir()) == []
