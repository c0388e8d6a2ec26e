"""What `auto` means on this machine: the device a run uses and whether its hot code is compiled.

    [base] device  = auto | cpu | cuda | cuda:N    auto = cuda when torch sees a GPU, else cpu
    [train] compile = auto | true | false          auto = on for CUDA, off on the CPU
    [env] overlap   = auto | true | false          auto = on for CUDA (native backend), off on the CPU
    [league] evaluation = auto | background | inline   auto = background on CUDA, inline on the CPU

On CUDA, compiling with `reduce-overhead` turns the PPO step and the rollout's decision step
into CUDA-graph replays, which removes the per-kernel launch cost that otherwise dominates at
these model sizes. On the CPU compiling also pays off in a long run (`bench compile`: about
0.85x the eager time for the training step, 0.65x for the decision step, default config), but
it costs 30-80 s of warm-up per process, which dominates the short runs, tests and evaluations
people start on a CPU; so auto leaves it off there and `--train.compile true` turns it on."""

from __future__ import annotations

import torch

from .config import Config, LeagueSection
from .game import game_of


def resolve_device(name: str, local_rank: int | None = None) -> torch.device:
    """The torch device for a validated `[base] device` value; under torchrun (`local_rank`
    given) `auto` and `cuda` mean this rank's own GPU, cuda:<local rank>. A CUDA device always
    carries its index: torch.cuda.set_device refuses a bare `cuda`."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        return torch.device("cuda", torch.cuda.current_device() if local_rank is None else local_rank)
    return torch.device(name)


def mark_static(*tensors: torch.Tensor) -> None:
    """Declares tensors whose address never changes, on CUDA, so a CUDA graph reads them in place
    instead of copying them into its own input buffers on every replay (no-op on the CPU)."""
    for t in tensors:
        if t.device.type == "cuda":
            torch._dynamo.mark_static_address(t)


def compile_mode_for(cfg: Config, device: torch.device) -> str | None:
    """The torch.compile mode for the loss and the rollout step, or None to run them eagerly."""
    t = cfg.train
    on = t.compile == "true" or (t.compile == "auto" and device.type == "cuda")
    return t.compile_mode if on else None


def env_parts(cfg: Config, device: torch.device) -> int:
    """How many parts of the games take turns in the rollout (vecenv.GameParts): 2 with overlap
    (the engine steps one half while the learner decides for the other), else 1. auto turns it on
    where the model runs on another chip than the engine: on CUDA. On the CPU the model and the
    engine would share the same cores (and the model is most of the time), so auto leaves it off."""
    e = cfg.env
    auto = device.type == "cuda" and cfg.vec.backend == "native" and e.num_games >= 2 and game_of(cfg).overlaps
    return 2 if e.overlap == "true" or (e.overlap == "auto" and auto) else 1


def league_evaluation(league: LeagueSection, device: torch.device) -> str:
    """Where a league candidate's evaluation matches play: "background" (on a worker thread while
    the learner trains the next epoch; the decision lands one epoch later: league/evaluation.py)
    or "inline" (the learner waits for them). auto picks background on CUDA, where the matches'
    forwards run on a second stream beside the learner's and their host work on a core the
    learner leaves idle. On the CPU the matches and the learner share the cores: on our 2-core
    machine `bench league --device cpu` measured candidate epochs 1.17x longer in the background
    than inline in two runs (10.3 -> 12.0 s, 9.8 -> 11.5 s: the learner's own work grew by more
    than the 2.5-2.7 s of matches it no longer waited for), so auto stays inline there."""
    if league.evaluation != "auto":
        return league.evaluation
    return "background" if device.type == "cuda" else "inline"


CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")  # torch.compile modes that record CUDA graphs


def loss_compile_mode(mode: str | None, device: torch.device, data_parallel: bool) -> str | None:
    """The loss's compile mode. Under DistributedDataParallel on CUDA it compiles without CUDA
    graphs: DDP's gradient hooks run on autograd's own thread, which torch's CUDA-graph trees do
    not support reliably (pytorch/pytorch#113809), and a crashed job loses more than graphs save.
    The rollout's decision step is not DDP-wrapped and keeps its graphs."""
    if data_parallel and device.type == "cuda" and mode in CUDA_GRAPH_MODES:
        return "max-autotune-no-cudagraphs" if mode == "max-autotune" else "default"
    return mode
