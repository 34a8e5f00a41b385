"""A command objective's rules (core/commands.py): the command line a trial's config becomes,
and the metrics a line of the script's output reports."""

from __future__ import annotations

import re

from searchsvc.core.commands import (
    REPORT_PREFIX,
    command_line,
    command_words,
    outside_words,
    parse_metrics,
    placeholders,
    script_of,
    unknown_placeholders,
)

WORDS = command_words("python train.py --data 'my data'")
CONFIG = {"lr": 0.001, "width": 256, "amp": True, "tiny": False, "act": "relu"}


def test_argparse_styles_pass_every_parameter_and_booleans_as_flags() -> None:
    assert command_line(WORDS, CONFIG, {}) == [
        "python", "train.py", "--data", "my data", "--lr=0.001", "--width=256", "--amp",
        "--act=relu"]
    assert command_line(WORDS, CONFIG, {}, style="space", booleans="value")[4:] == [
        "--lr", "0.001", "--width", "256", "--amp", "true", "--tiny", "false", "--act", "relu"]


def test_hydra_overrides_nest_double_underscores_and_names_rename() -> None:
    config = {"optim__lr": 0.5, "batch_size": 32, "amp": False}
    assert command_line(["python", "app.py"], config, {}, style="hydra",
                        names={"batch_size": "data.batch_size"}) == [
        "python", "app.py", "optim.lr=0.5", "data.batch_size=32", "amp=false"]


def test_placeholders_place_values_and_are_not_passed_again() -> None:
    words = command_words("python train.py --lr {lr} --out {trial_dir}/run --seed={seed}")
    assert placeholders(words) == ["lr", "trial_dir", "seed"]
    argv = command_line(words, {"lr": 0.1, "width": 8}, {"trial_dir": "/t/3", "seed": 7})
    assert argv == ["python", "train.py", "--lr", "0.1", "--out", "/t/3/run", "--seed=7",
                    "--width=8"]
    assert command_line(words, {"lr": 0.1, "width": 8}, {"trial_dir": "/t", "seed": 7},
                        style="none")[-1] == "--seed=7"


def test_an_unknown_placeholder_is_found_and_known_ones_are_not() -> None:
    words = command_words("python train.py --lr {lr} --ckpt {checkpoint_dir} --x {nope}")
    assert unknown_placeholders(words, ["lr"]) == ["nope"]
    assert unknown_placeholders(command_words("echo {{literal}}"), []) == []


def test_the_script_of_a_command_is_its_python_file_or_relative_program() -> None:
    assert script_of(command_words("python -u src/train.py --x 1")) == "src/train.py"
    assert script_of(["./train.sh"]) == "./train.sh"
    assert script_of(["torchrun", "--nproc", "2", "-m", "pkg.train"]) is None


def test_a_line_reports_when_it_carries_the_metric_in_any_form() -> None:
    metrics = ["val_loss"]
    assert parse_metrics("epoch=3 val_loss=0.41", metrics) == {"epoch": 3.0, "val_loss": 0.41}
    found = parse_metrics("epoch: 3, val_loss: 4.1e-1", metrics)
    assert found == {"epoch": 3.0, "val_loss": 0.41}
    assert parse_metrics('{"val_loss": 0.5, "note": "x"}', metrics) == {"val_loss": 0.5}
    assert parse_metrics(REPORT_PREFIX + '{"val_loss": 0.2, "step": 4}', metrics) == {
        "val_loss": 0.2, "step": 4.0}
    assert parse_metrics("lr=0.01 batch=32 starting", metrics) is None
    assert parse_metrics("loading data...", metrics) is None
    pattern = re.compile(r"Epoch (?P<epoch>\d+).*loss (?P<val_loss>[0-9.]+)")
    assert parse_metrics("Epoch 2/10 - loss 0.75", metrics, pattern) == {
        "epoch": 2.0, "val_loss": 0.75}
    assert parse_metrics("epoch=3 val_loss=0.41", metrics, pattern) is None


def test_a_command_names_outside_its_folder_only_what_is_not_python_or_its_own_files() -> None:
    assert outside_words(command_words("python train.py --data data/x.csv --lr {lr}")) == []
    assert outside_words(command_words("./run.sh --out=out")) == []
    assert outside_words(command_words("bash run.sh")) == ["bash"]
    assert outside_words(command_words("python train.py --data=/srv/x.csv ../up.py")) == [
        "--data=/srv/x.csv", "../up.py"]
    assert outside_words(command_words("/usr/bin/python3 train.py")) == ["/usr/bin/python3"]
