"""Our PPO trainer for a turn-based two-seat game, in two verbs: `collect` and `update`.

Each epoch collects exactly `batch_size` learner decisions (self-play: both seats are the
learner; league: one seat per game may be a frozen member or a bot - the opponent side decides),
packs them per row (rollout.py), runs the clipped-PPO update (ppo.py), applies the global-step
anneals, evaluates against the bots now and then (match.py), logs, and hands checkpoints to the
caller. Only a row's own decisions are trained; the learner's LSTM state lives per row (in its
PolicyActor, on the policy's device) and restarts from zeros at the first decision of a game.

The trainer is handed its collaborators (env, policy, sampler, opponent side, device, logger,
dashboard; `build.build_trainer(cfg, run_dir)` makes them from a config) and owns the run's
state: only its own methods (`restart_at`, `load_state_dict`, ...) write its fields.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch

from .anneal import anneal_values, anneals_from_config
from .average import PolicyAverage
from .checkpoint.files import checkpoint_due
from .config import Config
from .counterfactual import OwnReach
from .devices import compile_mode_for, env_parts, loss_compile_mode
from .dist import SINGLE, Dist, reduce_epoch, weights_digest
from .exploration import Exploration
from .learner import LearnerSizes, build_learner
from .logger import Dashboard, RunLogger
from .magnet import build_magnet
from .opponent_side import OpponentSide, Origin
from .policy.family import Policy, Sampler, strip_compile_prefix, unwrap
from .ppo import lr_lambda, rolled_back_update
from .rng import global_state, set_global_state, stream_seed
from .run_state import job_state, rank_part, restore_games, restore_sampling_stream
from .transfer import StepTransfer, rollout_perf
from .vecenv import GameParts, VecEnv


class Trainer:
    """Trains `policy` on `env` against `opponents`; every epoch is `collect()` then `update()`.
    `evaluate(policy, sampler, seed)`: the game's evaluation; `average`: the run's average policy."""

    def __init__(
        self,
        cfg: Config,
        env: VecEnv,
        policy: Policy,
        sampler: Sampler,
        opponents: OpponentSide,
        evaluate: Callable[[Policy, Sampler, int], dict],
        device: torch.device,
        logger: RunLogger | None = None,
        dashboard: Dashboard | None = None,
        dist: Dist = SINGLE,
        average: PolicyAverage | None = None,
    ):
        self.cfg, self.env, self.policy, self.sampler, self.opponents = cfg, env, policy, sampler, opponents
        self.evaluate_policy, self.average = evaluate, average or PolicyAverage(0, 1)
        self.device, self.logger, self.dashboard, self.dist = device, logger, dashboard, dist
        self.seed = dist.rank_seed(cfg.base.seed)  # this rank's env shard and sampling streams
        t = cfg.train
        self.total_epochs = math.ceil(t.total_timesteps / t.batch_size)
        if self.total_epochs * t.batch_size != t.total_timesteps and dist.is_main:
            rounded = f"{self.total_epochs * t.batch_size} ({self.total_epochs} epochs of batch_size {t.batch_size})"
            print(f"[train] total_timesteps {t.total_timesteps} rounded up to {rounded}")
        self.total_steps = self.total_epochs * t.batch_size
        compile_mode = compile_mode_for(cfg, device)
        loss_mode = loss_compile_mode(compile_mode, device, dist.enabled)
        sizes = LearnerSizes(t.batch_size, t.minibatch_size, t.learning_rate, compile_mode, loss_mode)
        magnet = build_magnet(t, policy)  # off (plain PPO) unless [train] magnet_coef
        self.learner = build_learner(policy, sampler, t, sizes, env.rows, self.seed, device, "learner", dist, magnet)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.learner.optimizer,
            lr_lambda(t.lr_schedule, self.total_epochs, math.ceil(t.magnet_interval / t.batch_size)),
        )
        self.exploration = Exploration(t.explore_share, self.seed, t.explore_temperature)
        self.own_reach = OwnReach(env.num_rows, device, enabled=t.own_reach_cap > 0)  # counterfactual weights
        self.anneals = anneals_from_config(cfg)
        self.anneal_offset = 0  # anneal step offset of a weights-only resume
        self.annealed = anneal_values(self.anneals, 0, self.total_steps)  # apply_anneals() sets it every epoch
        self.parts = GameParts(env, env_parts(cfg, device))  # 2 with [env] overlap: they take turns
        self.transfers = [StepTransfer(len(games), env.rows, device) for games in self.parts.games]  # one per part
        self.episode_start = np.ones(env.num_rows, dtype=bool)
        self.actions = np.zeros((env.num_rows, env.rows.action_width), dtype=np.int32)
        self.global_step = 0
        self.epoch = 0
        self.obs: np.ndarray | None = None  # None until the first rollout resets the env
        self.last_metrics: dict = {}
        self.resumed_from: str | None = None  # checkpoint path once resumed
        self.epoch_hooks: list[Callable[[dict], dict]] = []  # extra metrics per epoch (resume's health probe)

    # ---- the run's counters: written here and by load_state_dict only ---------------------------
    def restart_at(self, global_step: int, epoch: int, anneal_offset: int, origin: Origin | None = None) -> None:
        """Continues the run's count from a checkpoint: exactly (its step and epoch) or weights
        only (0, 0, and the anneals offset to where the checkpoint's were)."""
        self.global_step, self.epoch, self.anneal_offset = int(global_step), int(epoch), int(anneal_offset)
        if origin is not None:
            self.resumed_from = str(origin.checkpoint)

    def add_epoch_hook(self, hook: Callable[[dict], dict]) -> None:
        """`hook(metrics) -> extra metrics`, called after every epoch (resume's health probe)."""
        self.epoch_hooks.append(hook)

    def apply_anneals(self) -> dict:
        values = anneal_values(self.anneals, self.global_step, self.total_steps, self.anneal_offset)
        self.sampler.set_sampling_params(
            subaction_temperature=values["sampler/subaction_temperature"], smoothing_eps=values["sampler/smoothing_eps"]
        )
        for group, rate in zip(self.learner.optimizer.param_groups, self.scheduler.get_last_lr()):
            group["lr"] = rate * values["anneal/lr_scale"]  # the schedule's rate, times the annealed factor
        self.annealed = values
        return values

    # ---- verb 1: collect -----------------------------------------------------------------------
    @torch.no_grad()
    def collect(self, params: torch.Tensor) -> dict:
        """Steps the env until the buffer holds exactly batch_size learner decisions. Opponent rows
        are acted for but never stored (nor are learner rows the opponent side does not let it train
        on); on the last step, learner decisions that no longer fit are dropped (their later rewards
        too). A share of the learner's decisions explore (exploration.py: out of the loss).

        The learner decides for the deciding row of every game each step (a fixed shape, so a
        compiled step replays one graph); the rows it does not play are simply not stored. Per
        step one copy goes up and one comes back (transfer.py); statistics stay on the device
        until the epoch ends. With `[env] overlap` the games are two parts that take turns
        (vecenv.GameParts): the engine steps one part on its thread while the learner decides
        for the other, each part its own transfer and fixed shape."""
        if self.obs is None:
            self.obs = self.env.reset(self.seed)
            self.opponents.start(self.global_step)
        buffer, actor, parts = self.learner.buffer, self.learner.actor, self.parts
        buffer.start_epoch()
        self.exploration.start_epoch(self.epoch)
        infos, decisions, steps, env_s, opponents_s = [], 0, 0, 0.0, 0.0
        entropy_sum = torch.zeros((), device=self.device)
        noops = torch.zeros((), dtype=torch.long, device=self.device)
        part = 0
        while not buffer.full:
            rows = parts.deciding_rows(part)
            if len(rows) != len(parts.games[part]):
                raise RuntimeError(
                    f"{len(rows)} deciding rows for {len(parts.games[part])} games: expected one per game"
                )
            mine, theirs = self.opponents.split(rows)
            theirs, companion = self.opponents.plan(rows, theirs)  # the frozen pool decides in the learner's step
            mine_slots = buffer.reserve_fitting(mine, self.episode_start[mine])
            at = np.searchsorted(rows, mine)  # mine's positions among the deciding rows
            slots = np.full(len(rows), buffer.capacity)
            slots[at] = mine_slots
            transfer = self.transfers[part]
            explore = self.exploration.draw(len(rows), at)
            obs, rows_dev, slots_dev, starts, off = transfer.upload(
                self.obs, rows, slots, self.episode_start[rows], explore
            )
            d = actor.decide(
                obs, rows_dev, self.exploration.row_params(params, off), episode_start=starts, companion=companion
            )
            reach = self.own_reach.advance(rows_dev, starts, d.logprob)
            buffer.store(slots_dev, obs, d.actions, d.logprob, d.value, d.state_h, d.state_c, reach)
            buffer.drop_unstored(mine, mine_slots, d.value, at)
            buffer.explored(rows[explore], slots[explore])
            stored = (slots_dev < buffer.capacity) & ~off
            entropy_sum += torch.where(stored, d.entropy, 0.0).sum()
            noops += ((d.actions[:, 0] == self.env.noop_action_type) & stored).sum()
            decisions += int((mine_slots < buffer.capacity).sum())
            self.actions[rows] = transfer.download(d.played)
            acting = time.perf_counter()
            self.actions[theirs] = self.opponents.act(self.obs, theirs)
            stepping = time.perf_counter()
            self.episode_start[rows] = False
            infos += self.settle(parts.step(part, self.actions), decisions)  # overlap: the other part's step
            env_s += time.perf_counter() - stepping
            opponents_s += stepping - acting
            steps, part = steps + 1, (part + 1) % parts.count
        infos += self.settle(parts.finish(), decisions)
        self.bootstrap_pending()
        self.global_step += decisions
        stats = self.env.summarize_episodes(infos)
        policy_decisions = max(1, decisions - buffer.explored_steps)  # the policy's own, not the exploring ones
        stats["sampler/rollout_entropy"] = float(entropy_sum) / policy_decisions
        stats["sampler/rollout_noop_rate"] = float(noops) / policy_decisions  # learner decisions that do nothing now
        return stats | rollout_perf(self.transfers, steps / parts.count, env_s, opponents_s)

    def settle(self, stepped: tuple | None, decisions: int) -> list[dict]:
        """An env step's results (GameParts.step or finish; None: nothing had finished): the opponent
        side's bookkeeping, the learner's rewards credited to its stored steps, its rows' episode
        starts flagged. Returns the records of the games that ended."""
        if stepped is None:
            return []
        self.obs, rewards, terminals, truncations, step_infos = stepped
        done = terminals | truncations
        events = np.flatnonzero((rewards != 0) | done)
        learner = self.opponents.after_step(rewards, terminals, truncations, step_infos, self.global_step + decisions)
        events = events[learner[events]]  # credit learner rows only, as they were during this step
        self.learner.buffer.credit(events, rewards[events], terminals[events], truncations[events])
        self.episode_start[done] = True  # the learner's state for these rows restarts at their next decision
        return step_infos

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
            values = self.learner.actor.values(obs, torch.from_numpy(mine).to(self.device))
            self.learner.buffer.bootstrap(mine, values)
        self.opponents.finish_collect(self.obs, theirs)

    # ---- verb 2: update ------------------------------------------------------------------------
    def update(self, params: torch.Tensor) -> dict:
        """GAE over the collected epoch, then the clipped-PPO minibatch updates and one LR step."""
        t = self.cfg.train
        batch = self.learner.buffer.pack(t.gamma, t.gae_lambda, own_reach_cap=t.own_reach_cap)
        metrics = self.learner.updater.update(batch, params, self.loss_coefs(), self.learner.generator)
        self.scheduler.step()
        self.learner.magnet.advance(self.policy, self.global_step)
        self.average.advance(self.policy, self.global_step)
        if metrics["losses/update_rolled_back"]:
            where = f"epoch {self.epoch + 1} (global_step {self.global_step}), minibatch step"
            rolled_back_update(
                self.cfg.train.nan_policy, f"{where} {int(metrics['losses/first_nonfinite_step'])}", self.dist.is_main
            )
        return metrics

    def loss_coefs(self) -> torch.Tensor:
        """ppo.COEF_NAMES as the tensor the loss takes (annealing never recompiles)."""
        t, now = self.cfg.train, self.annealed
        coefs = [t.clip_coef, t.vf_coef, t.vf_clip_coef, now["anneal/ent_coef"], now["anneal/magnet_coef"]]
        return torch.tensor(coefs, device=self.device)

    def train_epoch(self) -> dict:
        """Anneals, collect, update, the opponent side's epoch end; returns the epoch's metrics."""
        start = time.perf_counter()
        metrics = dict(self.apply_anneals())
        metrics["train/learning_rate"] = self.learner.optimizer.param_groups[0]["lr"]  # this epoch's update's
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
        for hook in self.epoch_hooks:
            metrics.update(hook(metrics))
        elapsed = time.perf_counter() - start
        metrics.update({"train/epoch": float(self.epoch), "perf/sps": self.cfg.train.batch_size / elapsed})
        metrics.update({"perf/epoch_seconds": elapsed, "perf/rollout_seconds": rollout_s})
        metrics.update({"perf/update_seconds": update_s, "perf/opponents_seconds": opponents_s})
        self.last_metrics = metrics
        return metrics

    def evaluate(self) -> dict:
        """The game's eval/* figures (Emberfront: vs the bots; poker: exact), its deliverable's and average's."""
        seed = stream_seed(self.cfg.base.seed, "evaluation") + self.epoch
        figures = self.evaluate_policy(self.policy, self.sampler, seed) | self.opponents.evaluate_deliverable()
        return figures | self.average.evaluate(unwrap(self.policy).config.to_dict())

    # ---- the loop --------------------------------------------------------------------------------
    def train(
        self,
        checkpoint_fn: Callable[[Trainer], object] | None = None,
        max_seconds: float | None = None,
        epoch_end_fn: Callable[[Trainer, bool], object] | None = None,
        stop_requested: Callable[[], bool] = bool,
    ) -> dict:
        """Trains to total_epochs, or stops after the epoch that crosses `max_seconds` or in which
        `stop_requested()` turned true on any rank (a preemption: that epoch is not evaluated).
        Checkpoints every checkpoint_interval and at the end; then calls `epoch_end_fn(trainer, last)`."""
        t = self.cfg.train
        wall_start = time.perf_counter()
        saved_epoch = None
        while self.epoch < self.total_epochs:
            metrics = self.train_epoch()
            out_of_time = max_seconds is not None and time.perf_counter() - wall_start >= max_seconds
            digest = weights_digest(unwrap(self.policy).state_dict()) if self.dist.enabled else None
            stops = (out_of_time, stop_requested())
            metrics, (out_of_time, stop) = reduce_epoch(self.dist, metrics, digest, stops, t.batch_size, self.epoch)
            last = self.epoch == self.total_epochs or out_of_time or stop
            if t.eval_interval and (self.epoch % t.eval_interval == 0 or last) and not stop and self.dist.is_main:
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
            if out_of_time or stop:
                break
        if checkpoint_fn and saved_epoch != self.epoch:  # e.g. resumed at the end: still a final checkpoint
            checkpoint_fn(self)
        return self.last_metrics

    def checkpoint_due(self) -> bool:
        return checkpoint_due(self.cfg.train, self.global_step, self.epoch)

    # ---- run state (its format and checks: run_state.py) ----------------------------------------
    def state_dict(self) -> dict | None:
        """Everything a checkpoint holds of this run; under torchrun every rank calls it, rank 0 gets the job's."""
        module = unwrap(self.policy)
        gathered = self.dist.gather((self.rank_state(), weights_digest(module.state_dict())))
        return None if gathered is None else job_state(gathered, self.shared_state())

    def rank_state(self) -> dict:
        """What this rank alone holds: its games, LSTM state, sampling stream, opponent side's running state."""
        actor = self.learner.actor
        return {
            "run_state": {
                "num_agents": int(self.env.num_rows),
                "env": self.env.state_dict() if self.obs is not None else None,  # None: before the first rollout
                "state_h": actor.state.h.detach().cpu().clone(),
                "state_c": actor.state.c.detach().cpu().clone(),
                "episode_start": torch.from_numpy(self.episode_start.copy()),
                "own_log_reach": self.own_reach.state_dict(),
                "actions": torch.from_numpy(self.actions.copy()),
            },
            "generator": self.learner.generator.get_state(),
            "generator_device": self.device.type,
            "league": self.opponents.state_dict(),
        }

    def shared_state(self) -> dict:
        """What every rank shares: weights, optimizer, schedule, counters, anneals, magnet, average, RNG, metrics."""
        module = unwrap(self.policy)
        return {
            "policy": strip_compile_prefix(module.state_dict()),
            "policy_config": module.config.to_dict(),
            "optimizer": self.learner.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "global_step": int(self.global_step),
            "epoch": int(self.epoch),
            "anneal_offset": int(self.anneal_offset),
            "anneal": anneal_values(self.anneals, self.global_step, self.total_steps, self.anneal_offset),
            "sampling_params": self.sampler.get_sampling_params(),
            "magnet": self.learner.magnet.checkpoint(),
            "average": self.average.checkpoint(),
            "rng": global_state(),
            "metrics": self.last_metrics,
            "config": self.cfg.to_dict(),
            "resumed_from": self.resumed_from,
        }

    def load_state_dict(self, state: dict, log=print, origin: Origin | None = None, strict: bool = False) -> bool:
        """Restores `state_dict()` in full: weights, optimizer, LR scheduler, counters, RNG streams,
        and - when they fit this env and world size - the running games with their LSTM state (`strict`:
        a rejected engine state is refused, not fresh deals; `origin`: its checkpoint). True: exact."""
        unwrap(self.policy).load_state_dict(state["policy"], strict=True)
        self.learner.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.restart_at(state["global_step"], state["epoch"], state.get("anneal_offset") or 0, origin)
        self.learner.magnet.restore(state.get("magnet"), self.policy, self.global_step, log)
        self.average.restore(state.get("average"), self.global_step, log)
        if "rng" in state:
            set_global_state(state["rng"])
        mine = rank_part(state, self.dist, log)
        if mine is None:  # another world size: fresh games and streams from this rank's seed
            self.opponents.load_state_dict(state.get("league"), False, log, origin)
            return False
        exact = mine.get("run_state") is not None and self.load_games(mine["run_state"], log, strict)
        if mine.get("generator") is not None:
            saved_device = mine.get("generator_device", "cpu")
            restore_sampling_stream(self.learner.generator, mine["generator"], saved_device, self.seed, log)
        self.opponents.load_state_dict(mine.get("league"), exact, log, origin)
        return exact

    def load_weights(self, state: dict, anneal_offset: int, log=print, origin: Origin | None = None) -> None:
        """A weights-only resume: weights and league pool; step and epoch 0, anneals offset; fresh games."""
        unwrap(self.policy).load_state_dict(state["policy"], strict=True)
        self.restart_at(0, 0, anneal_offset, origin)
        self.learner.magnet.reset(self.policy)
        self.average.reset()
        self.opponents.load_state_dict(state.get("league"), False, log, origin)

    def load_games(self, run: dict, log, required: bool = False) -> bool:
        """Engine, env buffers, LSTM state and episode flags; False (warned) if they do not fit."""
        self.obs = restore_games(self.env, run, self.seed, log, required)
        if self.obs is None:
            return False
        self.learner.actor.state.load_state_dict({"h": run["state_h"], "c": run["state_c"]})
        self.episode_start[:] = run["episode_start"].numpy()
        self.own_reach.load_state_dict(run.get("own_log_reach"))
        self.actions[:] = run["actions"].numpy()
        return True
