"""compile: eager vs torch.compile'd for the two hot functions, on the run's device: the training
step (loss, backward, gradient clipping, Adam: PPOUpdater.step, exactly what training runs per
minibatch) and the rollout's decision step (PolicyActor.decide for one row per game). Reports
recompiles after warm-up and, on CUDA, the CUDA-graph recordings (reduce-overhead replays one
recording per compiled graph; a re-recording every step would erase the gain)."""

from __future__ import annotations

import argparse
import time

import torch
from torch._dynamo.utils import counters

from ..actors import PolicyActor
from ..ppo import PPOUpdater, UpdateSettings
from ..transfer import ROW
from .common import GraphRecordings, build_trainer, print_table, timed

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--steps", type=int, default=200, help="timed steps per mode")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mode", default=None, help="compile mode (default: [train] compile_mode)")


def _contenders(trainer, batch, mode: str) -> dict[str, dict]:
    """The eager and the compiled PPOUpdater ("step") and PolicyActor ("decide") on the trainer's
    policy, sampler and optimizer."""
    t, device = trainer.cfg.train, trainer.device

    def updater(compiled: bool) -> PPOUpdater:
        settings = UpdateSettings(
            t.minibatch_size // t.bptt_horizon, 1, t.max_grad_norm, False, mode if compiled else None, t.precision
        )
        return PPOUpdater(
            trainer.policy,
            trainer.sampler,
            trainer.learner.optimizer,
            settings,
            t.bptt_horizon,
            trainer.env.rows,
            trainer.cfg.policy.hidden_size,
            device,
        )

    def actor(compiled: bool) -> PolicyActor:
        generator = torch.Generator(device=device).manual_seed(0)
        return PolicyActor(
            trainer.policy, trainer.sampler, trainer.env.num_rows, generator, compile_mode=mode if compiled else None
        )

    return {
        "step": {m: updater(m == "compiled") for m in ("eager", "compiled")},
        "decide": {m: actor(m == "compiled") for m in ("eager", "compiled")},
    }


def _time_all(
    args: argparse.Namespace, device: torch.device, kinds: dict, calls: dict, recordings: GraphRecordings
) -> tuple[dict, float, int, int]:
    """Warms every contender up, then times it: (ms per step by (kind, mode), warm-up seconds,
    recompiles after warm-up, CUDA-graph recordings in warm-up)."""
    start = time.perf_counter()
    for kind, pair in kinds.items():
        for obj in pair.values():
            timed(device, calls[kind](obj), args.warmup)
    warmup_seconds = time.perf_counter() - start
    graphs, recorded = counters["stats"]["unique_graphs"], recordings.count
    ms = {
        (kind, m): timed(device, calls[kind](obj), args.steps) / args.steps * 1e3
        for kind, pair in kinds.items()
        for m, obj in pair.items()
    }
    recompiles = counters["stats"]["unique_graphs"] - graphs
    return ms, warmup_seconds, recompiles, recorded


def run(args: argparse.Namespace) -> dict:
    recordings = GraphRecordings()
    trainer = build_trainer(args.config, [*args.overrides, "--train.compile", "false"])
    t, device = trainer.cfg.train, trainer.device
    mode = args.mode or t.compile_mode
    trainer.apply_anneals()
    params = trainer.sampler.params_tensor(device)
    trainer.collect(params)
    batch = trainer.learner.buffer.pack(t.gamma, t.gae_lambda)
    coefs = trainer.loss_coefs()

    first = trainer.transfers[0]  # the rollout's own input tensors (its first part's, with overlap)
    obs, rows = first.obs, first.values[ROW].long()
    kinds = _contenders(trainer, batch, mode)
    for u in kinds["step"].values():
        u.load_minibatch(batch, torch.arange(u.settings.minibatch_segments, device=device))
    calls = {
        "step": lambda u: lambda: u.step(params, coefs),
        "decide": lambda a: lambda: a.decide(obs, rows, params),
    }
    ms, warmup_seconds, recompiles, recorded = _time_all(args, device, kinds, calls, recordings)
    figures = {
        "eager_ms": ms["step", "eager"],
        "compiled_ms": ms["step", "compiled"],
        "ratio": ms["step", "compiled"] / ms["step", "eager"],
        "decide_eager_ms": ms["decide", "eager"],
        "decide_compiled_ms": ms["decide", "compiled"],
        "decide_ratio": ms["decide", "compiled"] / ms["decide", "eager"],
        "recompiles_after_warmup": int(recompiles),
        "cudagraph_recordings_in_warmup": recorded if recordings.supported else None,
        "cudagraph_recordings_after_warmup": recordings.count - recorded if recordings.supported else None,
        "timed_steps": args.steps,
        "compile_mode": mode,
        "warmup_seconds": warmup_seconds,
        "minibatch_size": t.minibatch_size,
        "num_games": trainer.env.num_games,
        "precision": t.precision,
        "device": str(device),
    }
    cuda = device.type == "cuda"
    print_table(
        f"compiled vs eager ({mode}, {device}, {t.precision})",
        [
            ("training step eager / compiled", f"{ms['step', 'eager']:.2f} / {ms['step', 'compiled']:.2f} ms", ""),
            ("  compiled / eager", f"{figures['ratio']:.3f}", "<= 0.6" if cuda else "<= 1.05"),
            ("decision step eager / compiled", f"{ms['decide', 'eager']:.2f} / {ms['decide', 'compiled']:.2f} ms", ""),
            ("  compiled / eager", f"{figures['decide_ratio']:.3f}", ""),
            ("recompiles after warm-up", str(recompiles), "0"),
            (
                "CUDA-graph recordings in warm-up / after",
                f"{recorded} / {recordings.count - recorded}" if recordings.supported else "not reported by this torch",
                "- / 0",
            ),
            ("warm-up (compile) time", f"{warmup_seconds:.1f} s", ""),
        ],
    )
    return figures
