"""`searchsvc submit` without --code or --no-code follows the server's allow-list: a study
folder holding a copy of a module the server imports itself is not uploaded for a token that
may not upload code, and a module the server does not admit is refused before anything is
sent, naming --no-code and the allowed prefixes. The server queues and runs nothing here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import searchsvc
from searchsvc.testing.served import ROOT, SPEC, running_service

pytestmark = pytest.mark.slow


def study_folder(tmp_path: Path, name: str, objective: str) -> Path:
    """A user's folder with a study file and a copy of the server's objectives package."""
    folder = tmp_path / name
    shutil.copytree(ROOT / "objectives", folder / "objectives",
                    ignore=shutil.ignore_patterns("__pycache__"))
    text = SPEC.format(name=name, trials=2).replace("objectives.synthetic:playbook", objective)
    (folder / "study.yaml").write_text(text)
    return folder / "study.yaml"


def test_submit_uploads_no_code_the_server_imports_itself(tmp_path: Path) -> None:
    with running_service(tmp_path, args=("--allow-objectives", "objectives.",
                                         "--max-running", "0")) as s:
        plain = s.store.create_token("ada")
        assert s.call("GET", "/objectives/allowed", token=plain) == {
            "allow_objectives": ["objectives."], "may_upload_code": False}

        done = s.cli("submit", str(study_folder(tmp_path, "admitted",
                                                "objectives.synthetic:playbook")),
                     token=plain)
        assert done.returncode == 0, done.stderr
        assert "not uploaded" in done.stdout and "admitted: created" in done.stdout
        assert "code" not in s.store.get_study("admitted").provenance
        # The Python API's default is the same.
        searchsvc.run(study_folder(tmp_path, "from-python", "objectives.synthetic:playbook"),
                      server=s.url, token=plain, wait=False)
        assert "code" not in s.store.get_study("from-python").provenance

        # A module of the folder the server does not admit: refused, and nothing created.
        study_folder(tmp_path, "refused", "mine:train")
        (tmp_path / "refused" / "mine.py").write_text("def train(config): ...\n")
        refused = s.cli("submit", str(tmp_path / "refused" / "study.yaml"), token=plain)
        assert refused.returncode != 0
        assert "--no-code" in refused.stderr and "objectives." in refused.stderr
        assert "refused" not in [study.name for study in s.store.list_studies()]

        # A code token uploads the folder, as before.
        coder = s.store.create_token("ada", allow_code=True)
        uploaded = s.cli("submit", str(study_folder(tmp_path, "uploaded",
                                                    "objectives.synthetic:playbook")),
                         token=coder)
        assert uploaded.returncode == 0, uploaded.stderr
        assert s.store.get_study("uploaded").provenance["code"]["sha256"]
