"""The league as the trainer's opponent side (opponent_side.OpponentSide): per step it routes
rows - which are the learner's, and who acts for the others (bots, the main exploiter, or the
frozen pool in one stacked forward) - and notes finished games; per epoch it hands them to the
league's epoch work (epoch.py), lets rank 0's manager reach the other ranks (replication.py) and
refreshes the pool and the PFSP weights. Its checkpoint part is parsed by
checkpoint/league_fields.py.

Under torchrun every rank has its own matchmaker, bots and frozen pool for its games; the pool
itself has one owner, rank 0's manager."""

from __future__ import annotations

import time

import numpy as np
import torch

from ..actors import Actor
from ..checkpoint import CheckpointError
from ..checkpoint.league_fields import league_field, running_league
from ..config import LeagueSection
from ..dist import Dist
from ..opponent_side import Origin
from ..policy.family import Sampler
from ..rng import stream_seed
from ..rows import RowFormat, finished_games, game_of, rows_of
from .epoch import GameResult, LeagueEpoch
from .exploiter import MainExploiter
from .frozen_pool import SPARE_SLOTS, FrozenPool
from .manager import LeagueManager
from .matchmaking import EXPLOITER, SELF, Matchmaker, pfsp_weights
from .mixture import MixtureEvaluate, mixture_weights
from .replication import PoolReplication


class ActClock:
    """Host seconds per kind of opponent over an epoch's env steps (each act returns host
    actions, so the clock covers its device work), and the steps it counted. The frozen pool
    has no clock of its own: it decides in the learner's step (`plan`)."""

    KINDS = ("bots", "exploiter")

    def __init__(self):
        self.seconds, self.steps = dict.fromkeys(self.KINDS, 0.0), 0

    def tick(self, kind: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[kind] += now - since
        return now


class LeagueOpponents:
    """Matchmaker + bots + frozen pool (per step), the epoch's work and the pool's replication
    (per epoch), behind the OpponentSide interface.

    `bots`: the game's bots training meets, by name (match.Runner.training_bots; Emberfront's
    greedy searches in the in-process engine, which the league never steps itself); every game's
    set has one bot with a random stream ("random"), which the checkpoint keeps.
    `device`: the run's (the frozen pool's forwards). `exploiter`: the main exploiter
    ([league] exploiter_ratio > 0; one process only). `fixed_shapes`: the learner's step is
    compiled, so the pool's grids keep their shapes (frozen_pool.py)."""

    def __init__(
        self,
        cfg: LeagueSection,
        rows: RowFormat,
        manager: LeagueManager,
        bots: dict[str, Actor],
        seed: int,
        device: torch.device,
        dist: Dist,
        exploiter: MainExploiter | None = None,
        fixed_shapes: bool = False,
        evaluate_mixture: MixtureEvaluate | None = None,
    ):
        if exploiter is not None and dist.enabled:
            raise ValueError("the main exploiter runs in one process only (no torchrun)")
        self.cfg, self.manager, self.dist, self.exploiter = cfg, manager, dist, exploiter
        self.evaluate_mixture = evaluate_mixture
        self.epoch_work = LeagueEpoch(cfg, manager, dist, exploiter, device)
        self.replication = PoolReplication(manager, dist)
        self.results: list[GameResult] = []  # this epoch's finished games vs non-self opponents
        self.clock, self.epoch_perf = ActClock(), {}  # this epoch's act times; the last epoch's perf/*
        self.bots = dict(bots)
        streams = [bot for bot in self.bots.values() if hasattr(bot, "state_dict")]
        if len(streams) != 1:
            raise ValueError(f"the league's bots {sorted(self.bots)} must include exactly one with a random stream")
        self.bot_stream = streams[0]  # the bots' one random stream (every game's `random`): the checkpoint keeps it
        self.actors = dict(self.bots)  # who acts for which opponent id, besides the frozen pool
        if exploiter is not None:
            self.actors[EXPLOITER] = exploiter
        self.matchmaker = Matchmaker(
            game_of(rows.num_rows), cfg, tuple(self.bots), seed=seed, exploiter=exploiter is not None
        )
        pool_seed = stream_seed(seed, "frozen_pool")
        self.pool = FrozenPool(
            rows,
            cfg.opponent_batch,
            device,
            pool_seed,
            self.opponent_of_rows,
            capacity=cfg.pool_size + SPARE_SLOTS,
            fixed_shapes=fixed_shapes,
        )
        self.global_step = 0
        self.sync_pool()

    # ---- per step --------------------------------------------------------------------------
    def start(self, global_step: int) -> None:
        self.global_step = global_step
        self.pool.reset_all()
        self.matchmaker.reset(global_step)

    def split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mm = self.matchmaker
        return rows[mm.learner_mask[rows]], rows[mm.opponent_mask[rows]]

    def plan(self, rows: np.ndarray, theirs: np.ndarray) -> tuple[np.ndarray, FrozenPool | None]:
        """The frozen members decide in the learner's device step (the pool as its companion, on
        the same upload, merged into the same download): returns the rows left for `act` (bots,
        the exploiter and its snapshot) and the pool when it has rows among `theirs`."""
        frozen = theirs[self.frozen_mask(theirs, self.opponent_of_rows(theirs))]
        if len(frozen) == 0:
            return theirs, None
        self.pool.plan(rows, frozen)
        return np.setdiff1d(theirs, frozen, assume_unique=True), self.pool

    def frozen_mask(self, rows: np.ndarray, who: np.ndarray) -> np.ndarray:
        """Which of opponent `rows` (whose opponents are `who`) a frozen member plays: not a bot,
        the exploiter or its snapshot."""
        frozen = ~np.isin(rows, self.matchmaker.snapshot_rows())
        for name in self.actors:
            frozen &= who != name
        return frozen

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """One batched call per bot, for the exploiter and for its snapshot, one stacked call for
        the frozen members (the trainer has them decide in its own step instead: `plan`)."""
        out = np.zeros((len(rows), self.pool.action_width), dtype=np.int32)
        self.clock.steps += 1
        if len(rows) == 0:
            return out
        since = time.perf_counter()
        who = self.opponent_of_rows(rows)
        frozen = self.frozen_mask(rows, who)
        snapshot = np.isin(rows, self.matchmaker.snapshot_rows())
        if snapshot.any():  # the exploiter's snapshot of the learner, in the exploiter's games
            out[snapshot] = self.exploiter.act_as_snapshot(obs, rows[snapshot])
            since = self.clock.tick("exploiter", since)
            who = np.where(snapshot, None, who)
        for name, actor in self.actors.items():
            sel = who == name
            if sel.any():
                out[sel] = actor.act(obs, rows[sel])
                since = self.clock.tick("exploiter" if name == EXPLOITER else "bots", since)
        if frozen.any():
            out[frozen] = self.pool.act(obs, rows[frozen])
        return out

    def after_step(
        self, rewards: np.ndarray, terminals: np.ndarray, truncations: np.ndarray, infos: list[dict], global_step: int
    ) -> np.ndarray:
        """Credits the exploiter's rewards, notes the learner's finished games vs non-self
        opponents (the payoff takes them at the epoch's end; the exploiter its own), resets
        those rows' opponent state, redraws those games. Returns (a copy of) the learner mask
        that was in force for the step just taken.

        A result is read from the game's record (`infos`, one per finished game in game
        order): who won, not the sign of a reward that shaping also moves."""
        self.global_step = global_step
        mm = self.matchmaker
        mask = mm.learner_mask.copy()
        if self.exploiter is not None:
            self.exploiter.after_step(mm.exploiter_rows(), rewards, terminals, truncations, mm.snapshot_rows())
        done = finished_games(terminals, truncations)
        if len(done) == 0:
            return mask
        if len(infos) != len(done):
            raise RuntimeError(f"league lost episode records ({len(infos)} for {len(done)} finished games)")
        for g, who, info in zip(done, mm.opponent_of_games(done), infos):
            if who == SELF:
                continue
            winner, seat = info["winner"], mm.learner_seat[g]
            if who == EXPLOITER:  # the exploiter's window, not the learner's payoff
                self.exploiter.record(win=winner == 1 - seat, loss=winner == seat)
                continue
            self.results.append((str(who), winner == seat, winner == 1 - seat))
        self.pool.reset_rows(rows_of(done))
        mm.on_episode_end(done, global_step)
        return mask

    def opponent_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Who plays env rows `rows` this episode: the matchmaker's draw for their games."""
        return self.matchmaker.opponent_of_games(game_of(rows))

    # ---- per epoch -------------------------------------------------------------------------
    def finish_collect(self, obs: np.ndarray, rows: np.ndarray) -> None:
        """The epoch's collection ends with `rows` deciding on `obs`: the exploiter's pending steps."""
        if self.exploiter is not None:
            self.exploiter.finish_collect(obs, np.intersect1d(rows, self.matchmaker.exploiter_rows()))

    def sync_pool(self) -> None:
        """Loads new pool members, unloads retired ones no game still uses, refreshes PFSP."""
        ids = self.manager.pool_ids()
        for m in ids:
            if m not in self.pool:
                self.pool.add(m, *self.manager.load_policy(m))
        in_use = self.matchmaker.in_use()
        for m in self.pool.ids():
            if m not in ids and m not in in_use:
                self.pool.remove(m)
        if self.cfg.opponent_sampling == "nash":
            nash = self.manager.meta_nash()
            probs = [nash[m] for m in ids]
        else:
            probs = pfsp_weights(self.manager.learner_winrates(ids), self.cfg.pfsp_weighting)
        self.matchmaker.set_pool(ids, probs)

    def take_results(self) -> list[GameResult]:
        """This epoch's finished games vs non-self opponents (and a fresh list for the next)."""
        results, self.results = self.results, []
        return results

    def end_epoch(self, epoch: int, global_step: int, policy: torch.nn.Module, sampler: Sampler) -> None:
        """The epoch's league work (rank 0's; epoch.py) on this epoch's results, then every
        rank receives its outcome (replication.py) and refreshes its pool and PFSP weights."""
        active = self.matchmaker.is_active(global_step)
        playing = self.matchmaker.in_use()
        self.epoch_work.run(epoch, global_step, policy, sampler, self.take_results(), active, playing)
        self.replication.share()
        self.sync_pool()
        self.epoch_perf = self.take_perf()

    def take_perf(self) -> dict[str, float]:
        """perf/* of the epoch: seconds per kind of opponent in the rollout, the epoch's league
        work (epoch.py), and the frozen pool's and exploiter's host/device bytes per env step."""
        steps = max(1, self.clock.steps)
        traffic = [self.pool.traffic.take()] + ([self.exploiter.traffic.take()] if self.exploiter else [])
        out = {f"perf/opponents_{kind}_seconds": s for kind, s in self.clock.seconds.items()}
        out["perf/opponents_bytes_up_per_step"] = sum(t[0] for t in traffic) / steps
        out["perf/opponents_bytes_down_per_step"] = sum(t[1] for t in traffic) / steps
        self.clock = ActClock()
        return out | self.epoch_work.perf

    def metrics(self) -> dict[str, float]:
        """league/*: active (global_step past activate_after_steps), current opponent shares,
        and the manager's pool, rating, promotion and payoff figures."""
        out = {"league/active": float(self.matchmaker.is_active(self.global_step))}
        out.update(self.matchmaker.fractions())
        out.update(self.manager.metrics())
        out.update(self.epoch_perf)
        if self.exploiter is not None:
            out.update(self.epoch_work.exploiter_metrics)
            out.update(self.exploiter.metrics())
        return out

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The manager's state (pool, ratings, payoff: also its league_state.json) and the
        running matchups, bot and pool RNG streams and the frozen rows' LSTM state, so a resume
        that restores the env's games mid-episode continues them exactly; rank 0's also the
        candidate evaluation still playing (background evaluation; epoch.py)."""
        pool = self.pool.state_dict()
        running = {
            "matchmaker": self.matchmaker.state_dict(),
            "rng": self.bot_stream.state_dict()["rng"],
            "global_step": self.global_step,
            "opponents_generator": pool["generator"],
            "opponent_state": pool["rows"],
        }
        if not self.dist.is_main:  # a replica: rank 0's checkpoint part holds the manager
            return {"league": running}
        state = {"manager": self.manager.state_dict(), "league": running}
        state["pending_evaluation"] = self.epoch_work.state_dict()
        if self.exploiter is not None:
            state["exploiter"] = self.exploiter.state_dict()
        return state

    def evaluate_deliverable(self) -> dict[str, float]:
        """The meta-Nash mixture's figures by the game's judge (`evaluate_mixture`: given with
        [league] deliverable = nash_mixture on a game that has one), {} otherwise or while the
        pool is empty; on rank 0, whose manager the others replicate."""
        if self.evaluate_mixture is None:
            return {}
        ids, weights = mixture_weights(self.manager)
        if not ids:
            return {}
        return self.evaluate_mixture([self.manager.load_policy(m) for m in ids], weights)

    def checkpointed(self) -> None:
        """Member files the checkpoint just written (this state) no longer names go now: the
        newest checkpoint's members always load, whenever the run is killed."""
        self.manager.store.prune()

    def load_state_dict(self, state: dict | None, exact: bool, log=print, origin: Origin | None = None) -> None:
        """Pool, ratings and payoff always (member files adopted from `origin`'s run directory);
        the running matchups and a pending evaluation only when `exact`. A running game whose
        frozen member cannot be loaded any more continues as self-play (warned)."""
        if state is None:
            log("[resume] note: the checkpoint has no league state: the league starts empty")
            return
        self.replication.restore(state, origin)
        self.sync_pool()
        self.load_exploiter(state.get("exploiter"), exact, log)
        self.epoch_work.load_state_dict(state.get("pending_evaluation"), exact, log)
        if not exact:
            return
        running, mm = running_league(state), self.matchmaker
        with league_field("league"):
            mm.load_state_dict(running.matchmaker)
            self.bot_stream.load_state_dict(running.bot_rng)
            self.global_step = running.global_step
        if self.exploiter is None and EXPLOITER in mm.in_use():
            games = mm.drop_member(EXPLOITER)
            log(
                f"[league] WARNING: {len(games)} running games vs the main exploiter continue as self-play "
                "([league] exploiter_ratio is 0 now)"
            )
        for m in sorted(mm.in_use() - {SELF, EXPLOITER, *self.bots}):
            if m in self.pool:
                continue
            try:
                self.pool.add(m, *self.manager.load_policy(m))
            except (KeyError, OSError, ValueError, CheckpointError) as e:
                games = mm.drop_member(m)
                log(
                    f"[league] WARNING: member {m} cannot be loaded ({e}); its {len(games)} running games "
                    f"continue as self-play"
                )
        with league_field("league"):
            self.pool.load_state_dict(running.pool)

    def load_exploiter(self, state: dict | None, exact: bool, log=print) -> None:
        """The exploiter's weights, optimizer and counters (and its running games when `exact`);
        a checkpoint without one (or a league without one) starts or keeps nothing, with a note."""
        if self.exploiter is None:
            if state is not None:
                log(
                    "[resume] note: the checkpoint has a main exploiter but [league] exploiter_ratio is 0: it is dropped"
                )
            return
        if state is None:
            log("[resume] note: the checkpoint has no main exploiter: it starts fresh")
            return
        with league_field("exploiter"):
            self.exploiter.load_state_dict(state, exact)
        if self.exploiter.needs_snapshot:
            log(
                "[resume] note: the checkpoint's main exploiter played the live learner: at the end of the next "
                "epoch it restarts from the learner and takes its snapshot"
            )
