"""Checkpoint files: `experiments/<run>/model_<run_name>_<epoch:06d>.pt` plus a JSON sidecar,
written atomically (temp file, fsync, rename) so a crash never leaves a half-written file
where a complete one is expected; `max_checkpoints` retention keeps the newest."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch


def atomic_write_bytes(path: Path, write) -> None:
    """Writes via `write(fileobj)` into a temp file beside `path`, fsyncs, then renames."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def checkpoint_path(run_dir: Path, run_name: str, epoch: int) -> Path:
    return Path(run_dir) / f"model_{run_name}_{epoch:06d}.pt"


def uncompiled_state_dict(module: torch.nn.Module) -> dict:
    """State dict with torch.compile's `_orig_mod.` prefixes removed."""
    return {k.replace("_orig_mod.", ""): v for k, v in module.state_dict().items()}


def save_checkpoint(trainer, max_checkpoints: int) -> Path:
    cfg = trainer.cfg
    path = checkpoint_path(trainer.run_dir, cfg.base.run_name, trainer.epoch)
    state = {
        "policy": uncompiled_state_dict(trainer.policy),
        "policy_config": trainer.policy_config.to_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "global_step": trainer.global_step,
        "epoch": trainer.epoch,
        "sampling_params": trainer.sampler.get_sampling_params(),
        "config": cfg.to_dict(),
        "metrics": trainer.last_metrics,
    }
    atomic_write_bytes(path, lambda f: torch.save(state, f))
    sidecar = {k: state[k] for k in ("global_step", "epoch", "sampling_params", "policy_config", "metrics")}
    sidecar["file"] = path.name
    atomic_write_bytes(path.with_suffix(".json"), lambda f: f.write(json.dumps(sidecar, indent=2).encode()))
    prune_checkpoints(trainer.run_dir, cfg.base.run_name, max_checkpoints)
    return path


def list_checkpoints(run_dir: Path, run_name: str) -> list[Path]:
    return sorted(Path(run_dir).glob(f"model_{run_name}_[0-9][0-9][0-9][0-9][0-9][0-9].pt"))


def prune_checkpoints(run_dir: Path, run_name: str, keep: int) -> None:
    for old in list_checkpoints(run_dir, run_name)[:-keep]:
        old.unlink(missing_ok=True)
        old.with_suffix(".json").unlink(missing_ok=True)
