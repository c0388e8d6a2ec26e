"""The one place a trainer is made from a config: env, policy, sampler, opponent side, trainer,
each of the config's game (game.py).

    trainer = build_trainer(cfg, run_dir, logger, dashboard)

Self-play and league runs differ only in the opponent side built here; a rank of a torchrun
job differs only in its `dist` (its env shard's seed, its GPU, DDP, rank 0's league owner)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from .average import PolicyAverage
from .config import Config, ConfigError
from .devices import compile_mode_for, resolve_device
from .dist import SINGLE, Dist
from .game import game_of
from .league import LeagueManager, LeagueOpponents
from .league.exploiter import MainExploiter, exploiter_sizes
from .learner import build_learner
from .logger import Dashboard, RunLogger
from .opponent_side import OpponentSide, SelfPlay
from .rng import seed_global, stream_seed
from .trainer import Trainer
from .vecenv import VecEnv, check_env_memory

OpponentsFactory = Callable[[VecEnv, torch.device], OpponentSide]  # (the run's env, its device) -> its opponent side


def policy_config(cfg: Config):
    """The architecture a run with this config builds (its game's policy family)."""
    return game_of(cfg).policy_config(cfg)


def build_policy(cfg: Config, seed: int) -> nn.Module:
    """A fresh policy of the config's game and architecture, initialised from `seed`."""
    return game_of(cfg).family.build(policy_config(cfg), seed)


def build_exploiter(cfg: Config, env: VecEnv, device: torch.device) -> MainExploiter:
    """The league's main exploiter: the learner's architecture, its own initial weights and streams."""
    seed = stream_seed(cfg.base.seed, "exploiter")
    policy = build_policy(cfg, seed).to(device)
    sampler = game_of(cfg).sampler(cfg)
    sizes = exploiter_sizes(cfg.train, cfg.league)
    learner = build_learner(policy, sampler, cfg.train, sizes, env.rows, seed, device, "exploiter")
    return MainExploiter(learner, cfg.train, seed, cfg.league.exploiter_plays_snapshot)


def build_opponents(
    cfg: Config, env: VecEnv, run_dir: Path | None, device: torch.device, dist: Dist = SINGLE
) -> OpponentSide:
    """Self-play, or the league (its state in <run_dir>/league/) with [league] enable. Under
    torchrun only rank 0's manager has a directory; the others hold its replica in memory."""
    if not cfg.league.enable:
        return SelfPlay(env.rows)
    exploiter = None
    if cfg.league.exploiter_ratio > 0:
        if dist.enabled:
            raise ConfigError(
                "[league] exploiter_ratio: the main exploiter trains in one process only; under torchrun set "
                "exploiter_ratio = 0"
            )
        exploiter = build_exploiter(cfg, env, device)
    game = game_of(cfg)
    manager = LeagueManager(
        cfg.league,
        Path(run_dir) / "league" if run_dir is not None and dist.is_main else None,
        seed=cfg.base.seed,
        runner=game.runner,
        game=game.name,
        turn_cap=cfg.env.turn_cap,
        device=device,
    )
    return LeagueOpponents(
        cfg.league,
        env.rows,
        manager,
        game.runner.training_bots(env.engine_env, dist.rank_seed(cfg.base.seed)),
        seed=dist.rank_seed(cfg.base.seed),
        device=device,
        dist=dist,
        exploiter=exploiter,
        fixed_shapes=compile_mode_for(cfg, device) is not None,
        evaluate_mixture=delivered_mixture_judge(cfg),
    )


def mixture_judge(cfg: Config):
    """The game's judge of a mixture (the league's Nash mixture, the average policy); None where
    the game has none."""
    judge = game_of(cfg).evaluate_mixture
    return judge(cfg) if judge is not None else None


def delivered_mixture_judge(cfg: Config):
    """The game's judge of the league's Nash mixture when the run delivers one (else None)."""
    return mixture_judge(cfg) if cfg.league.deliverable == "nash_mixture" else None


def check_env_fits(cfg: Config) -> None:
    """The config's env against this machine's memory, before a run creates anything."""
    game = game_of(cfg)
    check_env_memory(game.env_class, cfg.vec.num_envs * cfg.env.num_games, game.env_kwargs(cfg, cfg.base.seed))


def build_trainer(
    cfg: Config,
    run_dir: Path | None,
    logger: RunLogger | None = None,
    dashboard: Dashboard | None = None,
    dist: Dist = SINGLE,
    device: torch.device | None = None,
    opponents: OpponentsFactory | None = None,
) -> Trainer:
    """`device`: the run's, where the caller resolved it already (train.py, before it joins the
    process group); otherwise resolved here. Everything below is handed this one device.
    `opponents`: makes the run's opponent side instead of self-play / the league (an exploit
    run's frozen target: exploit/target_side.py)."""
    seed_global(cfg.base.seed)
    if cfg.base.torch_threads > 0:
        torch.set_num_threads(cfg.base.torch_threads)
    if device is None:
        device = resolve_device(cfg.base.device, dist.local_rank if dist.enabled else None)
    if device.type == "cuda":
        torch.cuda.set_device(device)  # kernels, streams and events of this run all on that GPU
    game = game_of(cfg)
    env_kwargs = game.env_kwargs(cfg, dist.rank_seed(cfg.base.seed))
    env = VecEnv(game.env_class, cfg.vec.backend, cfg.vec.num_envs, cfg.vec.num_workers, env_kwargs)
    policy = build_policy(cfg, cfg.base.seed).to(device)
    side = opponents(env, device) if opponents else build_opponents(cfg, env, run_dir, device, dist)
    evaluate = game.evaluation(cfg)
    sampler = game.sampler(cfg)
    t = cfg.train
    average = PolicyAverage(t.average_snapshots, t.average_interval, sampler, mixture_judge(cfg), t.average_start)
    return Trainer(cfg, env, policy, sampler, side, evaluate, device, logger, dashboard, dist, average)
