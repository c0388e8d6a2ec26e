"""compile: time of the training step (loss, backward, gradient clipping, Adam: PPOUpdater.step,
exactly what training runs per minibatch), eager vs torch.compile'd loss (reduce-overhead by
default), on the same minibatch, and how many times the compiled loss recompiled after warm-up."""

from __future__ import annotations

import argparse
import time

import torch
from torch._dynamo.utils import counters

from ..ppo import PPOUpdater, UpdateSettings
from .common import build_trainer, print_table

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--steps", type=int, default=200, help="timed optimizer steps per mode")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mode", default=None, help="compile mode (default: [train] compile_mode)")


def time_steps(updater: PPOUpdater, batch, params, coefs, steps: int) -> float:
    """Milliseconds per training step (PPOUpdater.step) on minibatch 0 of `batch`."""
    updater.load_minibatch(batch, torch.arange(updater.settings.minibatch_segments))
    start = time.perf_counter()
    for _ in range(steps):
        updater.step(params, coefs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3


def run(args: argparse.Namespace) -> dict:
    trainer = build_trainer(args.config, args.overrides)
    t = trainer.cfg.train
    mode = args.mode or t.compile_mode
    trainer.apply_anneals()
    params = trainer.sampler.params_tensor()
    trainer.collect(params)
    batch = trainer.buffer.pack(t.gamma, t.gae_lambda)
    coefs = trainer.loss_coefs()
    base = dict(
        minibatch_segments=t.minibatch_size // t.bptt_horizon,
        update_epochs=1,
        max_grad_norm=t.max_grad_norm,
        norm_adv=False,
        compile_mode=mode,
    )

    def make(compiled: bool) -> PPOUpdater:
        settings = UpdateSettings(compile=compiled, **base)
        return PPOUpdater(
            trainer.policy,
            trainer.sampler,
            trainer.optimizer,
            settings,
            t.bptt_horizon,
            batch.obs.shape[-1],
            trainer.cfg.policy.hidden_size,
            trainer.device,
        )

    eager, compiled = make(False), make(True)
    start = time.perf_counter()
    time_steps(compiled, batch, params, coefs, args.warmup)
    compile_seconds = time.perf_counter() - start
    graphs_after_warmup = counters["stats"]["unique_graphs"]
    time_steps(eager, batch, params, coefs, args.warmup)
    eager_ms = time_steps(eager, batch, params, coefs, args.steps)
    compiled_ms = time_steps(compiled, batch, params, coefs, args.steps)
    recompiles = counters["stats"]["unique_graphs"] - graphs_after_warmup
    figures = {
        "eager_ms": eager_ms,
        "compiled_ms": compiled_ms,
        "ratio": compiled_ms / eager_ms,
        "recompiles_after_warmup": int(recompiles),
        "timed_steps": args.steps,
        "compile_mode": mode,
        "warmup_seconds": compile_seconds,
        "minibatch_size": t.minibatch_size,
        "device": str(trainer.device),
    }
    print_table(
        f"training step, compiled loss ({mode}, {trainer.device})",
        [
            ("eager step", f"{eager_ms:.2f} ms", ""),
            ("compiled step", f"{compiled_ms:.2f} ms", ""),
            ("compiled / eager", f"{figures['ratio']:.3f}", "<= 1.05"),
            ("recompiles after warm-up", str(recompiles), "0"),
            ("warm-up (compile) time", f"{compile_seconds:.1f} s", ""),
        ],
    )
    return figures
