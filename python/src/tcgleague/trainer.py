"""Our PPO trainer for a turn-based two-seat game, in two verbs: `collect` and `update`.

Each epoch collects exactly `batch_size` learner decisions (self-play: both seats are the
learner; league: one seat per game may be a frozen member or a bot - the opponent side decides),
packs them per row (rollout.py), runs the clipped-PPO update (ppo.py), applies the global-step
anneals, evaluates against the bots now and then (match.py), logs, and hands checkpoints to the
caller. Only a row's own decisions are trained; the learner's LSTM state lives per row (in its
PolicyActor, on the policy's device) and restarts from zeros at the first decision of a game.

The trainer is handed its collaborators (env, policy, sampler, opponent side, logger,
dashboard); `build.build_trainer(cfg, run_dir)` is the one place that makes them from a config.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

from .actors import PolicyActor
from .anneal import anneal_values, anneals_from_config
from .bots import BOTS
from .config import Config
from .devices import compile_mode_for, loss_compile_mode
from .dist import SINGLE, Dist, merge_rank_metrics, weights_digest
from .errors import NonFiniteError
from .layout import ACTION_WIDTH, DRAW, OBS_SIZE, PASS
from .logger import Dashboard, RunLogger
from .match import bot_side, play_match, policy_side
from .opponent_side import OpponentSide
from .policy.tcg_policy import TCGPolicy, unwrap
from .policy.tcg_sampler import TCGSampler
from .ppo import PPOUpdater, UpdateSettings
from .rollout import RolloutBuffer
from .run_state import job_state, load_job_state
from .transfer import StepTransfer
from .vecenv import VecEnv

EVAL_SEED_OFFSET = 1000  # periodic evaluation deals: seed + 1000 + epoch, away from the env's seeds


def lr_lambda(schedule: str, total_epochs: int) -> Callable[[int], float]:
    """LR multiplier per epoch: linear decay to 0, cosine to 0, or constant."""
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
    decided = winners != DRAW
    return {
        "environment/episodes": float(len(infos)),
        "environment/episode_decisions": float(np.mean([e["decisions"] for e in infos])),
        "environment/episode_turns": float(np.mean([e["turns"] for e in infos])),
        "environment/noop_rate": float(np.mean([e["noop_rate"] for e in infos])),
        "environment/truncation_rate": float(np.mean([e["truncated"] for e in infos])),
        "environment/first_player_winrate": float(np.mean(winners[decided] == first[decided]))
        if decided.any()
        else 0.5,
    }


class Trainer:
    """Trains `policy` on `env` against `opponents`; every epoch is `collect()` then `update()`."""

    def __init__(
        self,
        cfg: Config,
        env: VecEnv,
        policy: TCGPolicy,
        sampler: TCGSampler,
        opponents: OpponentSide,
        logger: RunLogger | None = None,
        dashboard: Dashboard | None = None,
        dist: Dist = SINGLE,
    ):
        self.cfg, self.env, self.policy, self.sampler, self.opponents = cfg, env, policy, sampler, opponents
        self.logger, self.dashboard, self.dist = logger, dashboard, dist
        self.seed = dist.rank_seed(cfg.base.seed)  # this rank's env shard and sampling streams
        t = cfg.train
        self.device = next(policy.parameters()).device
        self.total_epochs = math.ceil(t.total_timesteps / t.batch_size)
        if self.total_epochs * t.batch_size != t.total_timesteps and dist.is_main:
            print(
                f"[train] total_timesteps {t.total_timesteps} rounded up to {self.total_epochs * t.batch_size} "
                f"({self.total_epochs} epochs of batch_size {t.batch_size})"
            )
        self.total_steps = self.total_epochs * t.batch_size
        self.optimizer = torch.optim.Adam(
            policy.parameters(), lr=t.learning_rate, eps=t.adam_eps, fused=self.device.type == "cuda"
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda(t.lr_schedule, self.total_epochs))
        self.anneals = anneals_from_config(cfg)
        self.anneal_offset = 0  # anneal step offset of a weights-only resume
        self.ent_coef = t.ent_coef_initial  # apply_anneals() sets it every epoch
        hidden = policy.hidden_size
        self.buffer = RolloutBuffer(t.batch_size, t.bptt_horizon, OBS_SIZE, hidden, env.num_agents, self.device)
        compile_mode = compile_mode_for(cfg, self.device)
        settings = UpdateSettings(
            t.minibatch_size // t.bptt_horizon,
            t.update_epochs,
            t.max_grad_norm,
            t.norm_adv,
            loss_compile_mode(compile_mode, self.device, dist.enabled),
            t.precision,
        )
        self.updater = PPOUpdater(
            policy, sampler, self.optimizer, settings, t.bptt_horizon, OBS_SIZE, hidden, self.device, dist
        )
        # rollout sampling and minibatch order, on the policy's device
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.learner = PolicyActor(
            policy, sampler, env.num_agents, self.generator, name="learner", compile_mode=compile_mode
        )
        self.transfer = StepTransfer(env.num_games, self.device)
        self.episode_start = np.ones(env.num_agents, dtype=bool)
        self.actions = np.zeros((env.num_agents, ACTION_WIDTH), dtype=np.int32)
        self.global_step = 0
        self.epoch = 0
        self.obs: np.ndarray | None = None  # None until the first rollout resets the env
        self.last_metrics: dict = {}
        self.resumed_from: str | None = None  # checkpoint path once resumed
        self.epoch_hooks: list[Callable[[dict], dict]] = []  # extra metrics per epoch (resume's health probe)

    def apply_anneals(self) -> dict:
        values = anneal_values(self.anneals, self.global_step, self.total_steps, self.anneal_offset)
        self.sampler.set_sampling_params(
            subaction_temperature=values["sampler/subaction_temperature"], smoothing_eps=values["sampler/smoothing_eps"]
        )
        self.ent_coef = values["anneal/ent_coef"]
        return values

    # ---- verb 1: collect -----------------------------------------------------------------------
    @torch.no_grad()
    def collect(self, params: torch.Tensor) -> dict:
        """Steps the env until the buffer holds exactly batch_size learner decisions. Opponent
        rows are acted for but never stored (nor are learner rows the opponent side does not let
        it train on); on the last step, learner decisions that no longer fit are dropped (their
        later rewards too) rather than stored partially.

        The learner decides for the deciding row of every game each step (a fixed shape, so a
        compiled step replays one graph); the rows it does not play are simply not stored. Per
        step one copy goes up and one comes back (transfer.py); statistics stay on the device
        until the epoch ends."""
        if self.obs is None:
            self.obs = self.env.reset(self.seed)
            self.opponents.start(self.global_step)
        buffer = self.buffer
        buffer.start_epoch()
        infos, decisions = [], 0
        entropy_sum = torch.zeros((), device=self.device)
        noops = torch.zeros((), dtype=torch.long, device=self.device)
        while not buffer.full:
            rows = np.flatnonzero(self.env.masks)
            if len(rows) != self.env.num_games:
                raise RuntimeError(f"{len(rows)} deciding rows for {self.env.num_games} games: expected one per game")
            mine, theirs = self.opponents.split(rows)
            mine_slots = buffer.reserve_fitting(mine, self.episode_start[mine])
            at = np.searchsorted(rows, mine)  # mine's positions among the deciding rows
            slots = np.full(len(rows), buffer.capacity)
            slots[at] = mine_slots
            obs, rows_dev, slots_dev, starts = self.transfer.upload(self.obs, rows, slots, self.episode_start[rows])
            d = self.learner.decide(obs, rows_dev, params, episode_start=starts)
            buffer.store(slots_dev, obs, d.actions, d.logprob, d.value, d.state_h, d.state_c)
            buffer.drop_unstored(mine, mine_slots, d.value, at)
            stored = slots_dev < buffer.capacity
            entropy_sum += torch.where(stored, d.entropy, 0.0).sum()
            noops += ((d.actions[:, 0] == PASS) & stored).sum()
            decisions += int((mine_slots < buffer.capacity).sum())
            self.actions[rows] = self.transfer.download(d.actions)
            self.actions[theirs] = self.opponents.act(self.obs, theirs)
            self.episode_start[rows] = False
            self.obs, rewards, terminals, truncations, step_infos = self.env.step(self.actions)
            done = terminals | truncations
            events = np.flatnonzero((rewards != 0) | done)
            learner = self.opponents.after_step(
                rewards, terminals, truncations, step_infos, self.global_step + decisions
            )
            events = events[learner[events]]  # credit learner rows only, as they were during this step
            buffer.credit(events, rewards[events], terminals[events], truncations[events])
            self.episode_start[done] = True  # the learner's state for these rows restarts at their next decision
            infos.extend(step_infos)
        self.bootstrap_pending()
        self.global_step += decisions
        stats = summarize_episodes(infos)
        stats["sampler/rollout_entropy"] = float(entropy_sum) / max(1, decisions)
        stats["sampler/rollout_noop_rate"] = float(noops) / max(1, decisions)  # learner decisions that PASS
        return stats

    def bootstrap_pending(self) -> None:
        """The pending steps of the learner rows deciding now (mid-game) get the value of the
        observation they decide on, from their current state and the weights that collected the
        epoch: the next epoch's first decision of those rows starts from exactly there. (The
        opponent side does the same for rows that learn there: the league's exploiter.)"""
        rows = np.flatnonzero(self.env.masks)
        mine, theirs = self.opponents.split(rows)
        mine = mine[~self.episode_start[mine]]
        if len(mine):
            obs = torch.from_numpy(self.obs[mine]).to(self.device)
            self.buffer.bootstrap(mine, self.learner.values(obs, torch.from_numpy(mine).to(self.device)))
        self.opponents.finish_collect(self.obs, theirs)

    # ---- verb 2: update ------------------------------------------------------------------------
    def update(self, params: torch.Tensor) -> dict:
        """GAE over the collected epoch, then the clipped-PPO minibatch updates and one LR step."""
        t = self.cfg.train
        batch = self.buffer.pack(t.gamma, t.gae_lambda)
        metrics = self.updater.update(batch, params, self.loss_coefs(), self.generator)
        self.scheduler.step()
        if metrics["losses/update_rolled_back"]:
            self.nonfinite_update(int(metrics["losses/first_nonfinite_step"]))
        return metrics

    def nonfinite_update(self, step: int) -> None:
        """The update was rolled back (a non-finite loss, gradient or weight): stop, or with
        [train] nan_policy = skip_batch drop this epoch's batch and go on."""
        where = (
            f"epoch {self.epoch + 1} (global_step {self.global_step}), minibatch step {step} of the update: "
            "non-finite loss, gradient or weights"
        )
        if self.cfg.train.nan_policy == "stop":
            raise NonFiniteError(
                f"{where}. The update was rolled back and nothing of this epoch is saved: the newest checkpoint "
                "is the last good one. Lower [train] learning_rate or max_grad_norm, or set [train] nan_policy = "
                "skip_batch to drop such batches"
            )
        if self.dist.is_main:  # every rank dropped it
            print(
                f"[train] WARNING: {where}; this epoch's batch was dropped ([train] nan_policy = skip_batch)",
                file=sys.stderr,
            )

    def loss_coefs(self) -> torch.Tensor:
        """(clip, vf_coef, vf_clip, ent_coef) as the tensor the loss takes (annealing never recompiles)."""
        t = self.cfg.train
        return torch.tensor([t.clip_coef, t.vf_coef, t.vf_clip_coef, self.ent_coef], device=self.device)

    def train_epoch(self) -> dict:
        """Anneals, collect, update, the opponent side's epoch end; returns the epoch's metrics."""
        start = time.perf_counter()
        metrics = dict(self.apply_anneals())
        params = self.sampler.params_tensor(self.device)  # the sampling parameters this epoch's rollout uses
        metrics.update(self.collect(params))
        rollout_s = time.perf_counter() - start
        update_start = time.perf_counter()
        metrics.update(self.update(params))
        update_s = time.perf_counter() - update_start
        self.epoch += 1
        opponents_start = time.perf_counter()
        self.opponents.end_epoch(self.epoch, self.global_step, self.policy, self.sampler)
        opponents_s = time.perf_counter() - opponents_start  # league: candidate matches, pool refresh
        metrics.update(self.opponents.metrics())
        for hook in list(self.epoch_hooks):
            metrics.update(hook(metrics))
        elapsed = time.perf_counter() - start
        metrics.update(
            {
                "train/epoch": float(self.epoch),
                "train/learning_rate": self.optimizer.param_groups[0]["lr"],
                "perf/sps": self.cfg.train.batch_size / elapsed,
                "perf/epoch_seconds": elapsed,
                "perf/rollout_seconds": rollout_s,
                "perf/update_seconds": update_s,
                "perf/opponents_seconds": opponents_s,
            }
        )
        self.last_metrics = metrics
        return metrics

    def evaluate(self) -> dict:
        """eval/winrate_vs_<bot>: a duplicate match (match.play_match) vs each bot."""
        cfg, out = self.cfg, {}
        seed = cfg.base.seed + EVAL_SEED_OFFSET + self.epoch
        for bot in BOTS:
            report = play_match(
                policy_side(self.policy, self.sampler, seed),
                bot_side(bot, seed + 1),
                cfg.train.eval_games,
                seed,
                turn_cap=cfg.env.turn_cap,
            )
            out[f"eval/winrate_vs_{bot}"] = report.winrate
            out[f"eval/games_vs_{bot}"] = float(report.games)
        return out

    # ---- the loop --------------------------------------------------------------------------------
    def train(
        self,
        checkpoint_fn: Callable[[Trainer], object] | None = None,
        max_seconds: float | None = None,
        epoch_end_fn: Callable[[Trainer, bool], object] | None = None,
    ) -> dict:
        """Trains to total_epochs (or, with `max_seconds`, stops after the epoch that crosses that
        wall time). Checkpoints every checkpoint_interval and always at the end; calls
        `epoch_end_fn(trainer, last)` after each epoch's checkpoint (the run's report)."""
        t = self.cfg.train
        wall_start = time.perf_counter()
        saved_epoch = None
        while self.epoch < self.total_epochs:
            metrics = self.train_epoch()
            out_of_time = max_seconds is not None and time.perf_counter() - wall_start >= max_seconds
            metrics, out_of_time = self.reduce_across_ranks(metrics, out_of_time)
            last = self.epoch == self.total_epochs or out_of_time
            if t.eval_interval and (self.epoch % t.eval_interval == 0 or last) and self.dist.is_main:
                metrics.update(self.evaluate())
            metrics["perf/wall_minutes"] = (time.perf_counter() - wall_start) / 60.0
            self.last_metrics = metrics
            if self.logger:
                self.logger.log(metrics, self.global_step)
            if self.dashboard:
                self.dashboard.update(metrics, self.global_step)
            if checkpoint_fn and (last or self.checkpoint_due()):
                checkpoint_fn(self)
                saved_epoch = self.epoch
            if epoch_end_fn:
                epoch_end_fn(self, last)
            if out_of_time:
                break
        if checkpoint_fn and saved_epoch != self.epoch:  # e.g. resumed at the end: still a final checkpoint
            checkpoint_fn(self)
        return self.last_metrics

    def reduce_across_ranks(self, metrics: dict, out_of_time: bool) -> tuple[dict, bool]:
        """The epoch's metrics exchange: every rank's metrics merged (dist.py), whether any rank
        ran out of time, and a check that the replicas' weights are still identical (a
        divergence is a bug: the job stops rather than train on). A single process keeps its
        own metrics as they are."""
        digest = weights_digest(unwrap(self.policy).state_dict()) if self.dist.enabled else None
        gathered = self.dist.all_gather((metrics, digest, out_of_time))
        merged = merge_rank_metrics([m for m, _, _ in gathered], self.cfg.train.batch_size)
        if self.dist.enabled:  # a torchrun job, of one rank too
            merged["dist/world_size"] = float(self.dist.world_size)
            merged["dist/rank0_sps"] = gathered[0][0]["perf/sps"]
            digests = [d for _, d, _ in gathered]
            if len(set(digests)) != 1:
                raise RuntimeError(
                    f"the policy replicas diverged at epoch {self.epoch}: weight digests by rank "
                    f"{[d[:12] for d in digests]}"
                )
            merged["dist/replicas_in_sync"] = 1.0
        return merged, any(o for _, _, o in gathered)

    def checkpoint_due(self) -> bool:
        """After this epoch, by [train] checkpoint_interval (+ _unit epochs or steps)."""
        t = self.cfg.train
        if t.checkpoint_interval_unit == "steps":
            return (
                self.global_step // t.checkpoint_interval != (self.global_step - t.batch_size) // t.checkpoint_interval
            )
        return self.epoch % t.checkpoint_interval == 0

    # ---- run state (run_state.py) ----------------------------------------------------------------
    def state_dict(self) -> dict | None:
        """Everything a checkpoint holds about this run; under torchrun every rank calls it at
        once and rank 0 gets the whole job's state, the others None (run_state.job_state)."""
        return job_state(self)

    def load_state_dict(self, state: dict, log=print) -> bool:
        """Restores `state_dict()`; returns whether the continuation is exact (run_state.load_job_state)."""
        return load_job_state(self, state, log)
