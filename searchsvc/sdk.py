"""Helpers for objectives (seeding, step budget, device, checkpoints): see
:mod:`searchsvc.worker.sdk`. Never required: a plain Ray Tune trainable works unchanged."""

from searchsvc.worker.sdk import (
    data_loader,
    device,
    max_steps,
    preflight_checks,
    report,
    restore,
    restored_files,
    run_locally,
    seed_everything,
    trial_context,
    trial_dir,
    watch,
)

__all__ = ["data_loader", "device", "max_steps", "preflight_checks", "report", "restore",
           "restored_files", "run_locally", "seed_everything", "trial_context", "trial_dir",
           "watch"]
