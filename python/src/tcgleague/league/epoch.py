"""The league's work at the end of each epoch, after the learner's update (rank 0 owns it; see
replication.py): the epoch's game results into the payoff, the main exploiter's update and its
join-or-restart verdict, and every checkpoint_add_interval epochs a candidate of the learner,
ingested and evaluated; then the league state file is saved (so its payoff is never more than an
epoch old). Candidates are ingested before activate_after_steps too, so the pool is populated
(and rated) when the league starts.

With background evaluation (devices.league_evaluation) the candidate's matches are planned at
its epoch and played on a worker thread while the learner trains the next epoch; that epoch's
run joins and applies them first, before anything else: the manager sees the same changes in the
same order as inline, one epoch later (evaluation.py). The pending evaluation is part of the
checkpoint; an exact resume plays it again and applies it at the same epoch."""

from __future__ import annotations

import itertools
import time
from collections.abc import Collection

import torch

from ..checkpoint.league_fields import pending_evaluation
from ..config import LeagueSection
from ..devices import league_evaluation
from ..dist import Dist
from ..policy.family import Sampler, unwrap
from .evaluation import EvaluationWorker, Pending
from .exploiter import JOIN, MainExploiter
from .manager import LeagueManager
from .matchmaking import LEARNER

GameResult = tuple[str, bool, bool]  # (opponent id, the learner won, the learner lost)


class LeagueEpoch:
    """`run(...)` once per epoch; `exploiter_metrics` are the exploiter's last update's figures.
    `device`: the run's (background evaluation plays on a second stream there when it is CUDA)."""

    def __init__(
        self,
        cfg: LeagueSection,
        manager: LeagueManager,
        dist: Dist,
        exploiter: MainExploiter | None,
        device: torch.device,
    ):
        self.cfg, self.manager, self.dist, self.exploiter = cfg, manager, dist, exploiter
        self.exploiter_metrics: dict[str, float] = {}
        self.perf: dict[str, float] = {}  # the last run's seconds: the exploiter's update, candidate matches
        self.background = league_evaluation(cfg, device) == "background"
        self.worker = EvaluationWorker(device)
        self.pending: Pending | None = None  # rank 0: a candidate's evaluation playing on the worker

    def run(
        self,
        epoch: int,
        global_step: int,
        policy: torch.nn.Module,
        sampler: Sampler,
        results: list[GameResult],
        active: bool,
        playing: Collection[str] = (),
    ) -> None:
        """`results`: this rank's finished games of the epoch vs non-self opponents; `active`:
        whether the league plays its opponents yet (activate_after_steps); `playing`: who this
        rank's running games play (a retired member they play keeps its file). perf: the main
        thread's seconds in the candidate work (the pending evaluation's join and apply, the
        new candidate's ingest and plan or inline matches, the state file) and the join's wait."""
        self.manager.events.at(epoch, global_step)  # the date of this epoch's league events
        self.note_playing(playing)
        start = time.perf_counter()
        waited = self.apply_pending()
        applied = time.perf_counter()
        self.record_results(results)
        exploiter = time.perf_counter()
        if self.exploiter is not None:
            self.train_exploiter(epoch, global_step, policy, active)
        matches = time.perf_counter()
        if self.dist.is_main:
            self.ingest_candidate(epoch, global_step, policy, sampler)
        end = time.perf_counter()
        self.perf = {
            "perf/league_exploiter_seconds": matches - exploiter,
            "perf/league_matches_seconds": (applied - start) + (end - matches),
            "perf/league_matches_wait_seconds": waited,
        }

    def apply_pending(self) -> float:
        """Joins the pending evaluation - an exception of its matches is raised here - and applies
        it; returns the seconds the join waited for the worker."""
        if self.pending is None:
            return 0.0
        pending, self.pending = self.pending, None
        start = time.perf_counter()
        tallies = pending.future.result()
        waited = time.perf_counter() - start
        self.manager.apply_evaluation(pending.plan, tallies)
        return waited

    def wait(self) -> None:
        """Blocks until the pending evaluation's matches are played (it is still applied by the
        next run): a clean break for a benchmark that times epochs."""
        if self.pending is not None:
            self.pending.future.result()

    def note_playing(self, playing: Collection[str]) -> None:
        """Every rank's opponents of running games -> rank 0's manager, before anything retires:
        a member retired while a game still plays it keeps its file, which a resume of that game
        must load (its checkpoint names the member)."""
        gathered = self.dist.gather(sorted(playing))
        if self.dist.is_main:
            self.manager.note_playing({m for rank in gathered for m in rank})

    def record_results(self, results: list[GameResult]) -> None:
        """Every rank's finished games into the manager's payoff (rank 0), rank by rank in the
        order they finished."""
        gathered = self.dist.gather(results)
        if self.dist.is_main:
            for who, win, loss in (game for rank in gathered for game in rank):
                self.manager.record_game(LEARNER, who, win=win, loss=loss)

    def train_exploiter(self, epoch: int, global_step: int, main: torch.nn.Module, active: bool) -> None:
        """Until the league is active the exploiter has no games and follows the learner's
        weights; one that has no snapshot of the learner yet (a fresh one, or resumed from a
        checkpoint without one) takes it now. Then, every checkpoint_add_interval epochs, it joins
        the pool (no evaluation match: its training games are the test) if it beat the learner
        (or its snapshot), and restarts from the learner when it joined or timed out; otherwise
        it trains on its epoch."""
        ex, cfg = self.exploiter, self.cfg
        if not active or ex.needs_snapshot:
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
        self.manager.events.write("exploiter_reset", reason="joined" if verdict == JOIN else "timeout")
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
        manager.events.write("exploiter_join", member=member_id, winrate=won.winrate, games=won.games, vs=opponent)
        manager.retain()

    def unique_member_id(self, member_id: str) -> str:
        """`member_id`, or with an r<k> suffix when taken (a weights-only resume restarts the epoch count)."""
        taken = set(self.manager.pool_ids()) | set(self.manager.store.retired)
        if member_id not in taken:
            return member_id
        return next(f"{member_id}r{k}" for k in itertools.count(1) if f"{member_id}r{k}" not in taken)

    def ingest_candidate(self, epoch: int, global_step: int, policy: torch.nn.Module, sampler: Sampler) -> None:
        """Every checkpoint_add_interval epochs: the learner joins the pool as a candidate and is
        evaluated (inline), or its evaluation is planned and handed to the worker (background);
        then the state file is saved."""
        if epoch > 0 and epoch % self.cfg.checkpoint_add_interval == 0:
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
            if not self.background:
                self.manager.evaluate(member_id)  # saves the state file
                return
            self.pending = self.worker.submit(self.manager.plan_evaluation(member_id, epoch))
        if self.manager.directory is not None:
            self.manager.save()

    # ---- state (rank 0's; the checkpoint's "pending_evaluation") --------------------------------
    def state_dict(self) -> dict | None:
        """The pending evaluation's plan (candidate, champion, epoch, opponents), or None."""
        return self.pending.plan.state_dict() if self.pending is not None else None

    def load_state_dict(self, state: dict | None, exact: bool, log=print) -> None:
        """An exact resume plays the checkpoint's pending evaluation again (the matches are seeded
        by their players: the same results) and the next run applies it, as the interrupted run
        would have; any other resume leaves its candidate in the pool without a decision."""
        pending = pending_evaluation(state)
        if pending is None or not self.dist.is_main:
            return
        if not exact:
            log(f"[resume] note: candidate {pending.candidate}'s pending evaluation is dropped (not an exact resume)")
            return
        self.pending = self.worker.submit(self.manager.replan(pending))
