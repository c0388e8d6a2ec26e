"""Our PPO trainer for a turn-based two-seat game.

Each epoch collects exactly `batch_size` learner decisions (self-play: both seats are the
learner; league: one seat per game may be a frozen member or a bot), packs them per row (rollout.py), runs the clipped-PPO update (ppo.py),
applies the global-step anneals, evaluates against the bots now and then, logs, and writes
checkpoints. Only a row's own decisions are trained; LSTM state lives per row and is zeroed
by row index when its game ends.
"""
from __future__ import annotations

import math
import random
import time
from pathlib import Path

import numpy as np
import torch

from .anneal import anneal_values, anneals_from_config
from .engine import LAYOUT
from .evaluate import evaluate_vs_bot
from .league import League
from .league_manager import LeagueManager
from .policy.tcg_policy import PolicyConfig, TCGPolicy
from .policy.tcg_sampler import TCGSampler
from .ppo import COUNT, LEGAL, PPOUpdater, UpdateSettings
from .recurrent import zero_rows
from .rollout import RolloutBuffer
from .vecenv import VecEnv


PASS = LAYOUT["action_types"]["pass"]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def lr_lambda(schedule: str, total_epochs: int):
    if schedule == "constant":
        return lambda epoch: 1.0
    if schedule == "cosine":
        return lambda epoch: 0.5 * (1.0 + math.cos(math.pi * min(epoch, total_epochs) / total_epochs))
    return lambda epoch: max(0.0, 1.0 - epoch / total_epochs)


def summarize_episodes(infos: list[dict]) -> dict:
    if not infos:
        return {}
    winners = np.array([e["winner"] for e in infos])
    first = np.array([e["first_player"] for e in infos])
    decided = winners != 2
    return {
        "environment/episodes": float(len(infos)),
        "environment/episode_decisions": float(np.mean([e["decisions"] for e in infos])),
        "environment/episode_turns": float(np.mean([e["turns"] for e in infos])),
        "environment/noop_rate": float(np.mean([e["noop_rate"] for e in infos])),
        "environment/truncation_rate": float(np.mean([e["truncated"] for e in infos])),
        "environment/first_player_winrate": float(np.mean(winners[decided] == first[decided])) if decided.any() else 0.5,
    }


class Trainer:
    def __init__(self, cfg, run_dir: Path, logger=None, dashboard=None):
        self.cfg, self.run_dir, self.logger, self.dashboard = cfg, Path(run_dir), logger, dashboard
        t = cfg.train
        seed_everything(cfg.base.seed)
        if cfg.base.torch_threads > 0:
            torch.set_num_threads(cfg.base.torch_threads)
        self.device = torch.device(cfg.base.device)
        env_kwargs = dict(num_games=cfg.env.num_games, seed=cfg.base.seed, turn_cap=cfg.env.turn_cap,
                          reward_shaping=cfg.env.reward_shaping, deck_pool=cfg.env.deck_pool or None)
        self.env = VecEnv(cfg.vec.backend, cfg.vec.num_envs, cfg.vec.num_workers, env_kwargs)
        self.total_epochs = math.ceil(t.total_timesteps / t.batch_size)
        if self.total_epochs * t.batch_size != t.total_timesteps:
            print(f"[train] total_timesteps {t.total_timesteps} rounded up to {self.total_epochs * t.batch_size} "
                  f"({self.total_epochs} epochs of batch_size {t.batch_size})")
        self.total_steps = self.total_epochs * t.batch_size
        p = cfg.policy
        self.policy_config = PolicyConfig(n_cards=self.env.card_pool.n_cards, card_embed_dim=p.card_embed_dim,
                                          entity_dim=p.entity_dim, hidden_size=p.hidden_size)
        self.policy = TCGPolicy(self.policy_config).to(self.device)
        self.sampler = TCGSampler()
        self.sampler.set_sampling_params(primary_temperature=p.primary_temperature)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=t.learning_rate, eps=t.adam_eps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda(t.lr_schedule, self.total_epochs))
        self.anneals = anneals_from_config(cfg)
        self.anneal_offset = 0
        self.ent_coef = t.ent_coef_initial  # apply_anneals() sets it every epoch
        hidden = p.hidden_size
        self.buffer = RolloutBuffer(t.batch_size, t.bptt_horizon, LAYOUT["obs_size"], hidden, self.env.num_agents)
        settings = UpdateSettings(t.minibatch_size // t.bptt_horizon, t.update_epochs, t.max_grad_norm, t.norm_adv,
                                  t.compile, t.compile_mode)
        self.updater = PPOUpdater(self.policy, self.sampler, self.optimizer, settings, t.bptt_horizon,
                                  LAYOUT["obs_size"], hidden, self.device)
        self.generator = torch.Generator().manual_seed(cfg.base.seed)
        self.state_h = torch.zeros(self.env.num_agents, hidden)
        self.state_c = torch.zeros(self.env.num_agents, hidden)
        self.episode_start = np.ones(self.env.num_agents, dtype=bool)
        self.actions = np.zeros((self.env.num_agents, 4), dtype=np.int32)
        self.global_step = 0
        self.epoch = 0
        self.obs = None
        self.last_metrics: dict = {}
        self.league = self._make_league(env_kwargs) if cfg.league.enable else None
        self.resumed_from = None   # checkpoint path once resumed (resume.apply_resume)
        self.resume_probe = None   # stored health values: the next rollout runs the health probe

    def _make_league(self, env_kwargs: dict) -> League:
        """The opponent pool and its manager; its state lives in <run_dir>/league/."""
        manager = LeagueManager(self.cfg.league, self.run_dir / "league", seed=self.cfg.base.seed,
                                env_kwargs={k: env_kwargs[k] for k in ("turn_cap", "deck_pool", "reward_shaping")})
        return League(self.cfg.league, self.env.num_games, manager=manager, env=self.env,
                      seed=self.cfg.base.seed, device=self.device)

    # ---- anneals --------------------------------------------------------------------------
    def apply_anneals(self) -> dict:
        values = anneal_values(self.anneals, self.global_step, self.total_steps, self.anneal_offset)
        self.sampler.set_sampling_params(subaction_temperature=values["sampler/subaction_temperature"],
                                         smoothing_eps=values["sampler/smoothing_eps"])
        self.ent_coef = values["anneal/ent_coef"]
        return values

    # ---- rollout ---------------------------------------------------------------------------
    def _learner_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(learner rows, opponent rows) among the deciding rows; self-play: all are learner's."""
        if self.league is None:
            return rows, rows[:0]
        return self.league.split(rows)

    @torch.no_grad()
    def collect(self) -> dict:
        """Steps the env until the buffer holds exactly batch_size learner decisions. Opponent
        rows (league) are acted for but never stored; on the last step, learner decisions that
        no longer fit are dropped (their later rewards too) rather than stored partially."""
        if self.obs is None:
            self.obs = self.env.reset(self.cfg.base.seed)
            if self.league is not None:
                self.league.reset(self.global_step)
        self.buffer.start_epoch()
        params = self.sampler.params_tensor()
        infos, entropy_sum, noops, decisions = [], torch.zeros(()), torch.zeros(()), 0
        while not self.buffer.full:
            rows, opponent_rows = self._learner_rows(np.flatnonzero(self.env.masks))
            idx = torch.from_numpy(rows)
            obs = torch.from_numpy(self.obs[rows])
            start = self.episode_start[rows]
            keep = torch.from_numpy(~start).float()[:, None]
            h, c = self.state_h[idx] * keep, self.state_c[idx] * keep
            x, ent = self.policy.encode(obs)
            out, (h2, c2) = self.policy.step(x, (h, c))
            legal = obs[:, LEGAL].reshape(len(rows), -1, 4).long()
            actions, logprob, entropy = self.sampler.sample(self.policy, out, ent, legal, obs[:, COUNT].long(),
                                                            params=params, generator=self.generator)
            value = self.policy.value(out)
            k = min(len(rows), self.buffer.capacity - self.buffer.size)
            self.buffer.add(rows[:k], obs[:k], actions[:k], logprob[:k], value[:k], h[:k], c[:k], start[:k])
            self.buffer.forget(rows[k:])
            self.state_h[idx], self.state_c[idx] = h2, c2
            self.episode_start[rows] = False
            entropy_sum += entropy[:k].sum()
            decisions += k
            noops += (actions[:k, 0] == PASS).sum()
            self.actions[rows] = actions.numpy()
            if self.league is not None:
                self.league.act_opponents(self.obs, opponent_rows, self.actions)
            self.obs, rewards, terminals, truncations, step_infos = self.env.step(self.actions)
            done = terminals | truncations
            events = np.flatnonzero((rewards != 0) | done)
            if self.league is not None:  # credit learner rows only, as they were during this step
                learner = self.league.after_step(rewards, terminals, truncations, self.global_step + decisions)
                events = events[learner[events]]
            self.buffer.credit(events, rewards[events], terminals[events], truncations[events])
            done_rows = np.flatnonzero(done)
            zero_rows((self.state_h, self.state_c), done_rows)
            self.episode_start[done_rows] = True
            infos.extend(step_infos)
        self.global_step += decisions
        stats = summarize_episodes(infos)
        stats["sampler/rollout_entropy"] = float(entropy_sum) / max(1, decisions)
        stats["sampler/rollout_noop_rate"] = float(noops) / max(1, decisions)  # learner decisions that PASS
        return stats

    # ---- one epoch ---------------------------------------------------------------------------
    def train_epoch(self) -> dict:
        t = self.cfg.train
        start = time.perf_counter()
        metrics = dict(self.apply_anneals())
        params = self.sampler.params_tensor()
        metrics.update(self.collect())
        if self.resume_probe is not None:  # the first rollout after a resume: health probe
            from .resume import probe_metrics
            metrics.update(probe_metrics(self.resume_probe, metrics))
            self.resume_probe = None
        rollout_s = time.perf_counter() - start
        batch = self.buffer.pack(t.gamma, t.gae_lambda)
        coefs = torch.tensor([t.clip_coef, t.vf_coef, t.vf_clip_coef, self.ent_coef])
        update_start = time.perf_counter()
        metrics.update(self.updater.update(batch, params, coefs, self.generator))
        self.scheduler.step()
        self.epoch += 1
        if self.league is not None:
            self.league.end_epoch(self.epoch, self.global_step, self.policy, self.policy_config.to_dict(),
                                  self.sampler.get_sampling_params())
            metrics.update(self.league.metrics())
        elapsed = time.perf_counter() - start
        metrics.update({
            "train/epoch": float(self.epoch), "train/learning_rate": self.optimizer.param_groups[0]["lr"],
            "perf/sps": t.batch_size / elapsed, "perf/epoch_seconds": elapsed, "perf/rollout_seconds": rollout_s,
            "perf/update_seconds": time.perf_counter() - update_start,
        })
        self.last_metrics = metrics
        return metrics

    def evaluate(self) -> dict:
        cfg = self.cfg
        out = {}
        for bot in ("random", "greedy"):
            result = evaluate_vs_bot(self.policy, self.sampler, bot, cfg.train.eval_games,
                                     cfg.base.seed + 1000 + self.epoch, cfg.policy.hidden_size)
            out[f"eval/winrate_vs_{bot}"] = result.winrate
            out[f"eval/games_vs_{bot}"] = float(result.games)
        return out

    # ---- the loop ------------------------------------------------------------------------------
    def train(self, checkpoint_fn=None, max_seconds: float | None = None) -> dict:
        """Trains to total_epochs (or, with `max_seconds`, stops after the epoch that crosses that
        wall time). Checkpoints every checkpoint_interval and always at the end."""
        t = self.cfg.train
        wall_start = time.perf_counter()
        saved_epoch = None
        while self.epoch < self.total_epochs:
            metrics = self.train_epoch()
            out_of_time = max_seconds is not None and time.perf_counter() - wall_start >= max_seconds
            last = self.epoch == self.total_epochs or out_of_time
            if t.eval_interval and (self.epoch % t.eval_interval == 0 or last):
                metrics.update(self.evaluate())
            metrics["perf/wall_minutes"] = (time.perf_counter() - wall_start) / 60.0
            self.last_metrics = metrics
            if self.logger:
                self.logger.log(metrics, self.global_step)
            if self.dashboard:
                self.dashboard.update(metrics, self.global_step)
            if checkpoint_fn and (last or self._checkpoint_due()):
                checkpoint_fn(self)
                saved_epoch = self.epoch
            if out_of_time:
                break
        if checkpoint_fn and saved_epoch != self.epoch:  # e.g. resumed at the end: still a final checkpoint
            checkpoint_fn(self)
        return self.last_metrics

    def _checkpoint_due(self) -> bool:
        t = self.cfg.train
        if t.checkpoint_interval_unit == "steps":
            return self.global_step // t.checkpoint_interval != (self.global_step - t.batch_size) // t.checkpoint_interval
        return self.epoch % t.checkpoint_interval == 0
