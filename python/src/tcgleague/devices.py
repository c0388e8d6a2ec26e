"""What `auto` means on this machine: the device a run uses and whether its hot code is compiled.

    [base] device  = auto | cpu | cuda | cuda:N    auto = cuda when torch sees a GPU, else cpu
    [train] compile = auto | true | false          auto = on for CUDA, off on the CPU

On CUDA, compiling with `reduce-overhead` turns the PPO step and the rollout's decision step
into CUDA-graph replays, which removes the per-kernel launch cost that otherwise dominates at
these model sizes. On the CPU there is no launch cost to save: the bench (`bench compile`)
shows eager as fast or faster, and compiling costs a minute of warm-up, so auto leaves it off."""

from __future__ import annotations

import torch

from .config import Config


def resolve_device(name: str) -> torch.device:
    """The torch device for a validated `[base] device` value."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def compile_mode_for(cfg: Config, device: torch.device) -> str | None:
    """The torch.compile mode for the loss and the rollout step, or None to run them eagerly."""
    t = cfg.train
    on = t.compile == "true" or (t.compile == "auto" and device.type == "cuda")
    return t.compile_mode if on else None
