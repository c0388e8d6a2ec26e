"""The league as the trainer's opponent side (opponent_side.OpponentSide): per step it says
which rows are the learner's, acts for the others (bots, the main exploiter, or the frozen pool
in one stacked forward), and notes finished games; per epoch it hands them to the manager,
trains the exploiter (which may join the pool), ingests a candidate and refreshes the pool and
the PFSP weights.

Under torchrun every rank has its own matchmaker, bots and frozen pool for its games, but the
league has one owner: rank 0's manager (pool, payoff, ratings, promotions, candidate matches,
the state file). Once per epoch every rank's game results are gathered into its payoff, and
its state with the weights of new members is broadcast; the other ranks hold a replica
(weights in memory, no files), from which their matchmakers draw."""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..bots import GREEDY, RANDOM, GreedyBot, RandomBot
from ..checkpoint import CheckpointError, FieldError
from ..config import LeagueSection
from ..dist import SINGLE, Dist
from ..layout import ACTION_WIDTH
from ..policy.tcg_policy import unwrap
from ..policy.tcg_sampler import TCGSampler
from .exploiter import JOIN, MainExploiter
from .frozen_pool import FrozenPool
from .manager import LeagueManager
from .matchmaking import EXPLOITER, LEARNER, SELF, Matchmaker, pfsp_weights

if TYPE_CHECKING:  # the greedy bot's engine env; the league never steps an env itself
    from ..env import TCGEnv


@contextmanager
def league_field(name: str):
    """Reading a checkpoint's league state: a malformed part is a FieldError naming it."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as err:
        raise FieldError(f"league.{name}", f"{type(err).__name__}: {err}") from None


class LeagueOpponents:
    """Matchmaker + bots + frozen pool + manager, behind the OpponentSide interface.

    `engine_env` is the in-process TCGEnv (VecEnv.engine_env) the greedy bot searches in; without
    one (pufferlib.vector backends) the bots are random only. `exploiter`: the main exploiter
    ([league] exploiter_ratio > 0; one process only)."""

    def __init__(
        self,
        cfg: LeagueSection,
        num_games: int,
        manager: LeagueManager,
        engine_env: TCGEnv | None = None,
        seed: int = 0,
        device: torch.device | str = "cpu",
        dist: Dist = SINGLE,
        exploiter: MainExploiter | None = None,
    ):
        if exploiter is not None and dist.enabled:
            raise ValueError("the main exploiter runs in one process only (no torchrun)")
        self.cfg, self.manager, self.dist, self.exploiter = cfg, manager, dist, exploiter
        self.exploiter_metrics: dict[str, float] = {}  # its last update's figures
        self.results: list[tuple[str, bool, bool]] = []  # (opponent, win, loss) of this epoch's games
        self.sent: set[str] = set()  # rank 0: members whose weights the replicas already hold
        self.bots = {RANDOM: RandomBot(seed + 2)}
        if engine_env is not None:
            self.bots[GREEDY] = GreedyBot(engine_env)
        self.actors = dict(self.bots)  # who acts for which opponent id, besides the frozen pool
        if exploiter is not None:
            self.actors[EXPLOITER] = exploiter
        self.matchmaker = Matchmaker(num_games, cfg, seed=seed, bots=tuple(self.bots), exploiter=exploiter is not None)
        self.pool = FrozenPool(
            2 * num_games, cfg.opponent_batch, device, seed=seed + 1, member_of=self.opponent_of_rows
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

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """One batched call per bot, for the exploiter and for its snapshot, one stacked forward
        for all the frozen members."""
        out = np.zeros((len(rows), ACTION_WIDTH), dtype=np.int32)
        if len(rows) == 0:
            return out
        who = self.opponent_of_rows(rows)
        frozen = np.ones(len(rows), dtype=bool)
        snapshot = np.isin(rows, self.matchmaker.snapshot_rows())
        if snapshot.any():  # the exploiter's snapshot of the learner, in the exploiter's games
            out[snapshot] = self.exploiter.act_as_snapshot(obs, rows[snapshot])
            frozen &= ~snapshot
            who = np.where(snapshot, None, who)
        for name, actor in self.actors.items():
            sel = who == name
            frozen &= ~sel
            if sel.any():
                out[sel] = actor.act(obs, rows[sel])
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
        done = np.flatnonzero(terminals[0::2] | truncations[0::2])
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
        self.pool.reset_rows(np.concatenate([2 * done, 2 * done + 1]))
        mm.on_episode_end(done, global_step)
        return mask

    def opponent_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Who plays env rows `rows` this episode: the matchmaker's draw for their games."""
        return self.matchmaker.opponent_of_games(np.asarray(rows) // 2)

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
        probs = pfsp_weights(self.manager.learner_winrates(ids), self.cfg.pfsp_weighting)
        self.matchmaker.set_pool(ids, probs)

    def end_epoch(self, epoch: int, global_step: int, policy: torch.nn.Module, sampler: TCGSampler) -> None:
        """Records every rank's games of the epoch in the payoff, in rank order; every
        checkpoint_add_interval epochs ingests the learner as a candidate and evaluates it
        (which saves the league state file); other epochs save it here, so the file's payoff
        is never more than an epoch old. Always refreshes the pool and the PFSP weights.
        Candidates are ingested before activate_after_steps too, so the pool is populated (and
        rated) when the league starts. Rank 0 does all of it; the other ranks then receive the
        result (share_pool)."""
        self.record_results()
        if self.exploiter is not None:
            self.train_exploiter(epoch, global_step, policy)
        if self.dist.is_main:
            self.ingest_candidate(epoch, global_step, policy, sampler)
        self.share_pool()
        self.sync_pool()

    def record_results(self) -> None:
        """Every rank's finished games since the last call into the manager's payoff (rank 0),
        rank by rank in the order they finished."""
        results = self.dist.gather(self.results)
        self.results = []
        if self.dist.is_main:
            for who, win, loss in (game for rank in results for game in rank):
                self.manager.record_game(LEARNER, who, win=win, loss=loss)

    def train_exploiter(self, epoch: int, global_step: int, main: torch.nn.Module) -> None:
        """Until the league is active the exploiter has no games and follows the learner's
        weights; one that has no snapshot of the learner yet (a fresh one, or resumed from a
        checkpoint without one) takes it now. Then, every checkpoint_add_interval epochs, it joins
        the pool (no evaluation match: its training games are the test) if it beat the learner
        (or its snapshot), and restarts from the learner when it joined or timed out; otherwise
        it trains on its epoch."""
        ex, cfg = self.exploiter, self.cfg
        if not self.matchmaker.is_active(global_step) or ex.needs_snapshot:
            ex.restart_from(main)
            self.exploiter_metrics = ex.discard()
            return
        verdict = ex.verdict(
            epoch,
            cfg.checkpoint_add_interval,
            cfg.promotion_min_games,
            cfg.exploiter_join_winrate,
            cfg.exploiter_reset_epochs,
        )
        if verdict == JOIN:
            self.join_pool(epoch, global_step)
        if verdict is None:
            self.exploiter_metrics = ex.update()
            if self.exploiter_metrics.get("exploiter/update_rolled_back"):
                self.manager.log(
                    "[league] WARNING: the exploiter's update was rolled back (non-finite loss, gradient "
                    "or weights); it keeps its weights"
                )
            return
        ex.restart_from(main)
        ex.resets += 1
        self.exploiter_metrics = ex.discard()

    def join_pool(self, epoch: int, global_step: int) -> None:
        """The exploiter as it won becomes member x<epoch>; the learner's payoff vs it starts from
        the window's games (mirrored; against a snapshot, the learner as it was), so PFSP draws it
        at once."""
        ex, manager = self.exploiter, self.manager
        member_id = self.unique_member_id(f"x{epoch:06d}")
        manager.ingest(
            member_id,
            ex.policy.state_dict(),
            ex.policy.config.to_dict(),
            ex.sampler.get_sampling_params(),
            step=global_step,
            epoch=epoch,
            candidate=False,
        )
        won = ex.last_window
        manager.payoff.update(LEARNER, member_id, float(won.losses), float(won.wins), float(won.draws))
        ex.joined += 1
        opponent = "its snapshot of the learner" if ex.snapshot is not None else "the learner"
        manager.log(
            f"[league] exploiter {member_id} joins the pool: it won {won.winrate:.3f} of {won.games} games vs {opponent}"
        )
        manager.retain()

    def unique_member_id(self, member_id: str) -> str:
        """`member_id`, or with an r<k> suffix when taken (a weights-only resume restarts the epoch count)."""
        taken = set(self.manager.pool_ids()) | set(self.manager.store.retired)
        if member_id not in taken:
            return member_id
        return next(f"{member_id}r{k}" for k in itertools.count(1) if f"{member_id}r{k}" not in taken)

    def ingest_candidate(self, epoch: int, global_step: int, policy: torch.nn.Module, sampler: TCGSampler) -> None:
        candidate = epoch > 0 and epoch % self.cfg.checkpoint_add_interval == 0
        if not candidate and self.manager.directory is not None:
            self.manager.save()
        if candidate:
            member_id = self.unique_member_id(f"e{epoch:06d}")
            module = unwrap(policy)
            self.manager.ingest(
                member_id,
                module.state_dict(),
                module.config.to_dict(),
                sampler.get_sampling_params(),
                step=global_step,
                epoch=epoch,
            )
            self.manager.evaluate(member_id)

    def share_pool(self) -> None:
        """Rank 0's manager -> every other rank's replica: its state and the weights of members
        the replicas do not hold yet (a no-op in a single process)."""
        if not self.dist.enabled:
            return
        snapshot = self.dist.broadcast(self.manager.snapshot(self.sent) if self.dist.is_main else None)
        if self.dist.is_main:
            self.sent = set(self.manager.pool_ids()) | set(self.manager.store.retired)
        else:
            self.manager.replicate(snapshot)

    def metrics(self) -> dict[str, float]:
        """league/*: active (global_step past activate_after_steps), current opponent shares,
        and the manager's pool, rating, promotion and payoff figures."""
        out = {"league/active": float(self.matchmaker.is_active(self.global_step))}
        out.update(self.matchmaker.fractions())
        out.update(self.manager.metrics())
        if self.exploiter is not None:
            out.update(self.exploiter_metrics)
            out.update(self.exploiter.metrics())
        return out

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The manager's state (pool, ratings, payoff: also its league_state.json) and the
        running matchups, bot and pool RNG streams and the frozen rows' LSTM state, so a resume
        that restores the env's games mid-episode continues them exactly."""
        pool = self.pool.state_dict()
        running = {
            "matchmaker": self.matchmaker.state_dict(),
            "rng": self.bots[RANDOM].state_dict()["rng"],
            "global_step": self.global_step,
            "opponents_generator": pool["generator"],
            "opponent_state": pool["rows"],
        }
        if not self.dist.is_main:  # a replica: rank 0's checkpoint part holds the manager
            return {"league": running}
        state = {"manager": self.manager.state_dict(), "league": running, "state_file": str(self.manager.state_path)}
        if self.exploiter is not None:
            state["exploiter"] = self.exploiter.state_dict()
        return state

    def load_manager(self, state: dict) -> None:
        """Rank 0: the checkpoint's pool, ratings and payoff (the file's league state follows)."""
        with league_field("manager"):
            self.manager.load_state_dict(state["manager"])
        if self.manager.directory is not None:
            self.manager.save()

    def load_state_dict(self, state: dict | None, exact: bool, log=print) -> None:
        """Pool, ratings and payoff always; the running matchups only when `exact`. A running
        game whose frozen member cannot be loaded any more continues as self-play (warned)."""
        if state is None:
            log("[resume] note: the checkpoint has no league state: the league starts empty")
            return
        self.dist.from_main(lambda: self.load_manager(state), refusals=(FieldError,))
        self.sent = set()  # a resumed job's replicas hold no weights yet
        self.share_pool()
        self.sync_pool()
        self.load_exploiter(state.get("exploiter"), exact, log)
        if not exact:
            return
        with league_field("league"):
            running, mm = state["league"], self.matchmaker
            mm.load_state_dict(running["matchmaker"])
            self.bots[RANDOM].load_state_dict({"rng": running["rng"]})
            self.global_step = int(running["global_step"])
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
            self.pool.load_state_dict({"generator": running["opponents_generator"], "rows": running["opponent_state"]})

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
