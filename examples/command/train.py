"""A plain training script, written without searchsvc: argparse options, data read by a relative
path, `epoch=N val_loss=X` printed each epoch, and a checkpoint it resumes from when its folder
has one. `searchsvc run study.yaml` tunes it as it is (see docs/command-objectives.md)."""

import argparse
import json
from pathlib import Path

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--width", type=int, default=16)
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--ckpt-dir", default="checkpoints")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

data = np.loadtxt("data/points.csv", delimiter=",")
x, y = data[:, :-1], data[:, -1]
rng = np.random.default_rng(args.seed)
weights = rng.normal(0, 1 / np.sqrt(x.shape[1]), (x.shape[1], args.width))
head = np.zeros(args.width)
start = 1
ckpt = Path(args.ckpt_dir) / "ckpt.json"
if ckpt.exists():  # a restored trial continues where its checkpoint left off
    state = json.loads(ckpt.read_text())
    start, head = state["epoch"] + 1, np.array(state["head"])
features = np.tanh(x @ weights)
for epoch in range(start, args.epochs + 1):
    error = features @ head - y
    head -= args.lr * features.T @ error / len(y)
    val_loss = float(np.mean((features @ head - y) ** 2))
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    ckpt.write_text(json.dumps({"epoch": epoch, "head": head.tolist()}))
    print(f"epoch={epoch} val_loss={val_loss:.6f}", flush=True)
