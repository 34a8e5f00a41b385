"""A script as it is, through the service: `searchsvc submit` from the script's folder uploads
it with a code token and the study runs on the service's Ray; without a code token the CLI and
the API refuse it, and an uploaded command may name nothing outside its code but the workers'
Python. Real processes: `searchsvc serve` and its study driver."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import urllib.error
from pathlib import Path

import pytest

from searchsvc.codebundle import pack
from searchsvc.testing.served import running_service

pytestmark = pytest.mark.slow

TRAIN = '''
import argparse
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
args = parser.parse_args()
offset = float(Path("data/offset.txt").read_text())  # the uploaded folder is its working dir
for epoch in range(1, 4):
    print(f"epoch={epoch} loss={abs(args.lr - 0.1) + offset + 1 / epoch}")
'''
STUDY = """\
study: {name}
objective:
  command: {command}
metric: loss
mode: min
noise: off
budget: {{trials: 3, max_concurrent: 2, max_steps: 3}}
parameters:
  lr: {{role: nuisance, low: 0.01, high: 1.0, scale: log}}
"""


def users_folder(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "data" / "offset.txt").write_text("0.5\n")
    (root / "train.py").write_text(textwrap.dedent(TRAIN))
    (root / "study.yaml").write_text(STUDY.format(name="cmd-served", command="python train.py"))
    return root


def refusal(call, *args: object) -> tuple[int, str]:
    with pytest.raises(urllib.error.HTTPError) as refused:
        call(*args)
    return refused.value.code, refused.value.read().decode()


def test_a_command_study_runs_from_uploaded_code_and_only_from_it(tmp_path: Path) -> None:
    folder = users_folder(tmp_path / "project")
    with running_service(tmp_path) as service:
        code_token = service.store.create_token("ada", allow_code=True)

        def submit(token: str) -> subprocess.CompletedProcess:
            env = {**service.env, "SEARCHSVC_SERVER": service.url, "SEARCHSVC_TOKEN": token}
            return subprocess.run([sys.executable, "-m", "searchsvc.cli", "submit",
                                   "study.yaml", "--no-preflight"], env=env, cwd=folder,
                                  capture_output=True, text=True, timeout=120)

        plain = submit(service.token)
        assert plain.returncode != 0 and "may not upload code" in plain.stderr, plain
        done = submit(code_token)
        assert done.returncode == 0 and "cmd-served: created" in done.stdout, done
        study = service.wait_for("cmd-served", "completed")
        assert study["trial_counts"] == {"completed": 3}
        trials = service.call("GET", "/studies/cmd-served/trials?curves=true", token=code_token)
        for t in trials:
            first = t["measurements"][0]["value"]
            assert first == pytest.approx(abs(t["config"]["lr"] - 0.1) + 1.5)

        # Straight to the API: a command with no uploaded code, then one that names a
        # program outside the uploaded code.
        text = STUDY.format(name="cmd-bare", command="python train.py")
        code, said = refusal(service.call, "POST", "/studies", text, code_token)
        assert code == 422 and "runs a script of the study's uploaded code" in said
        sha = service.call("POST", "/code", pack(folder), code_token)["sha256"]
        text = STUDY.format(name="cmd-out", command="'/bin/sh -c \"cat /etc/passwd\"'")
        code, said = refusal(service.call, "POST", f"/studies?code={sha}", text, code_token)
        assert code == 422 and "may name only the uploaded files" in said, said
        assert "not /bin/sh" in said
        assert os.path.isdir(folder)
