"""Trainers for tests: the smoke config with the periodic evaluation off, and one rollout."""

from __future__ import annotations

from tcgleague.build import build_trainer
from tcgleague.config import load_config
from tcgleague.trainer import Trainer

SMOKE = "configs/smoke.ini"


def smoke_trainer(run_dir=None, *overrides) -> Trainer:
    cfg = load_config(SMOKE, ["--train.eval-interval", "0", *overrides])
    return build_trainer(cfg, run_dir)


def collect(trainer: Trainer) -> dict:
    return trainer.collect(trainer.sampler.params_tensor())
