"""The league manager: the pool's owner. It ingests candidates, plays their evaluation matches,
rates them, promotes champions, retires members and keeps the state file.

Every `checkpoint_add_interval` epochs the learner is ingested as a *candidate*: it joins the
frozen pool at once (a past self is a useful opponent whether or not it is stronger) and plays
the champion and each baseline (and, with the meta-Nash, every member); promotion.decide says
whether it becomes champion, promotion.kept_ids bounds the pool. Evaluations are planned, played
and applied in three steps (evaluation.py) so matches can play on a worker thread.

State lives in `<dir>/league_state.json`, written atomically with the previous version kept as
`.bak`; loading falls back to the `.bak` when the main file is missing or corrupt."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ..atomic import atomic_write
from ..checkpoint import CheckpointError
from ..checkpoint.league_fields import PendingEvaluation
from ..config import LeagueSection
from ..match import Runner
from ..opponent_side import Origin
from ..replay.viewer import RUN_REPLAYS
from ..scoring import Tally
from .evaluation import BASELINE, CHAMPION, POPULATION, VERIFICATION, EvaluationPlan, PlannedMatch
from .events import EVENTS_FILE, LeagueEvents
from .matchmaking import LEARNER, RESERVED_IDS
from .member_matches import Matches, MemberMatches, PlayedMatches, PlayMatch
from .members import MemberStore, in_memory
from .meta_nash import payoff_matrix, solve_symmetric
from .promotion import Decision, decide, kept_ids
from .ratings import Payoff, Ratings

STATE_FILE = "league_state.json"
STATE_VERSION = 1
MAX_DECISIONS = 50  # recent decisions kept in the state file

UNLOADABLE = (KeyError, OSError, ValueError, CheckpointError)  # a member whose weights cannot be loaded


class LeagueManager:
    """Pool, evaluation, ratings, payoff and promotion for one run.

    mgr = LeagueManager(cfg.league, run_dir / "league", seed=cfg.base.seed, device=device)
    mgr.load()                                   # reads league_state.json (or its .bak)
    mgr.ingest("e000010", state_dict, policy_config, step=..., epoch=10)
    decision = mgr.evaluate("e000010")           # plans, plays, applies (rates, decides, retains), saves
    """

    def __init__(
        self,
        cfg: LeagueSection,
        directory: str | Path | None = None,
        play: Matches | PlayMatch | None = None,
        seed: int = 0,
        log: Callable[[str], None] = print,
        *,
        runner: Runner,
        game: str,
        turn_cap: int | None = None,
        device: torch.device | None = None,
    ):
        """`runner`: the game's matches and bots (match.Runner; its baseline bot gates promotion);
        `game`: what the members play. `play`: where evaluation matches come from (`Matches`, or
        a plain PlayMatch: tests' scripted results); by default the runner's (`MemberMatches`).
        `device`: the run's, where evaluation matches play (needed unless `play` is given)."""
        self.cfg = cfg
        self.directory = Path(directory) if directory is not None else None
        self.log = log
        self.bots, self.baselines = runner.bots, (runner.baseline,)
        self.store = MemberStore(self.directory, game)
        self.events = LeagueEvents(self.directory / EVENTS_FILE if self.directory is not None else None)
        replays = self.directory.parent / RUN_REPLAYS if self.directory is not None else None
        if play is None:
            play = MemberMatches(self.store, runner, device, seed, turn_cap, replays, cfg.replay_games)
        self.matches = play if isinstance(play, Matches) else PlayedMatches(play)
        self.champion: str | None = None
        self.ratings = Ratings()
        self.payoff = Payoff(cfg.payoff_decay)
        self.promotions = 0
        self.candidates = 0
        self.decisions: list[dict] = []
        self.games_recorded = 0  # the learner's training games recorded so far (a clock for last_played)
        self.last_played: dict[str, int] = {}  # member -> games_recorded when the learner last played it
        self.playing: set[str] = set()  # who running games play (note_playing, each epoch): retirement keeps them
        self._nash: dict[tuple[str, ...], np.ndarray] = {}  # members -> their meta-Nash, until the payoff changes

    @property
    def state_path(self) -> Path | None:
        return self.directory / STATE_FILE if self.directory is not None else None

    def pool_ids(self) -> list[str]:
        """Frozen members, oldest first."""
        return self.store.ids()

    def ingest(
        self,
        member_id: str,
        state_dict: dict,
        policy_config: dict,
        sampling_params: dict | None = None,
        step: int = 0,
        epoch: int = 0,
        candidate: bool = True,
    ):
        """Adds a member to the pool (a copy of the given weights): a candidate (a snapshot of
        the learner, to be evaluated) or, with `candidate=False`, a main exploiter that beat it."""
        if member_id in self.store or member_id in (*RESERVED_IDS, *self.bots):
            raise ValueError(f"league member id {member_id!r} is already used or reserved")
        member = self.store.ingest(member_id, state_dict, policy_config, sampling_params, step, epoch)
        self.candidates += int(candidate)
        if candidate:
            self.events.write("candidate", member=member_id)
        return member

    def load_policy(self, member_id: str):
        """(frozen policy, its sampler) of a member (or a retiree: retired in the last round, or still played by a running game)."""
        return self.store.load(member_id)

    def note_playing(self, member_ids: set[str]) -> None:
        """Who the running games (every rank's) play now: retirement keeps their files."""
        self.playing = set(member_ids)

    def retain(self) -> list[str]:
        """Applies pool retention (logged); returns the removed ids (their ratings and payoff go)."""
        kept = kept_ids(self.cfg, self.pool_ids(), self.champion, self.meta_nash)
        removed = self.store.retire(kept, self.playing)
        if removed:
            keep = set(self.pool_ids()) | set(self.bots) | {LEARNER}
            self.payoff.forget(keep)
            self.ratings.forget(keep)
            self.last_played = {m: t for m, t in self.last_played.items() if m in keep}
            self.log(f"[league] retired {', '.join(removed)} (pool_size {self.cfg.pool_size})")
            self.events.write("retirement", members=removed, pool_size=self.cfg.pool_size)
        return removed

    # ---- results ---------------------------------------------------------------------------
    def record_game(self, a: str, b: str, win: bool, loss: bool) -> None:
        """One finished training game of a (the learner) vs b: a payoff update (not rated:
        the learner moves every epoch)."""
        self.payoff.update(a, b, float(win), float(loss), float(not win and not loss))
        self.games_recorded += 1
        self.last_played[b] = self.games_recorded

    def record_match(self, a: str, b: str, result: Tally) -> None:
        """An evaluation match: one payoff update and game-by-game rating updates."""
        wins, losses, draws = result.as_tuple()
        self.payoff.update(a, b, wins, losses, draws, result.total_points)
        self.ratings.record(a, b, wins, losses, draws)
        self._nash = {}

    def meta_nash(self, ids: list[str] | None = None) -> dict[str, float]:
        """The meta-Nash {member: weight} of the pool, or of its members `ids` (meta_nash.py), cached until the payoff changes."""
        ids = tuple(self.pool_ids() if ids is None else ids)
        if ids not in self._nash:  # the pool's (opponents, retention) and the deliverable's alternate
            matrix = payoff_matrix(list(ids), self.payoff.points_per_game, self.payoff.games, self.cfg.nash_min_games)
            self._nash[ids] = solve_symmetric(matrix, temperature=self.cfg.nash_temperature)
        return dict(zip(ids, self._nash[ids].tolist()))

    def learner_winrates(self, ids) -> list[float]:
        return [self.payoff.winrate(LEARNER, m) for m in ids]

    # ---- evaluation and promotion ------------------------------------------------------------
    def verification_opponents(self, candidate: str) -> list[str]:
        """The `verification_members` pool members the learner has gone longest without playing
        (in training or verification games; never played first, then the oldest among equals),
        champion and candidate aside."""
        others = [m for m in self.pool_ids() if m not in (candidate, self.champion)]
        others.sort(key=lambda m: self.last_played.get(m, 0))  # stable: pool order (oldest first) breaks ties
        return others[: self.cfg.verification_members]

    def evaluate(self, candidate: str) -> Decision | None:
        """Plans, plays and applies the candidate's evaluation at once (evaluation.py), then saves
        the state file; returns the decision.

        Verification games: the candidate - the learner as it is now - also plays the members
        the learner has played least lately. PFSP rarely draws a member the learner once beat,
        so its payoff goes stale and a forgotten counter-strategy would go unnoticed; the
        match's result becomes the learner's payoff vs that member, so PFSP sends the learner
        back to what it lost."""
        plan = self.plan_evaluation(candidate)
        decision = self.apply_evaluation(plan, plan.play())
        if self.directory is not None:
            self.save()
        return decision

    def plan_evaluation(self, candidate: str, epoch: int = 0) -> EvaluationPlan:
        """The candidate's matches - vs the champion, each baseline and the verification members
        chosen now - with every side loaded (on this thread: the member store's owner)."""
        if candidate not in self.store:
            raise KeyError(f"{candidate!r} is not a league member")
        opponents = [(CHAMPION, self.champion)] if self.champion not in (None, candidate) else []
        opponents += [(BASELINE, bot) for bot in self.baselines]
        opponents += [(VERIFICATION, m) for m in self.verification_opponents(candidate)]
        if self.cfg.uses_meta_nash:  # the meta-game's payoff: the candidate meets every member
            met = {candidate, *(who for _, who in opponents)}
            opponents += [(POPULATION, m) for m in self.pool_ids() if m not in met]
        return self.planned(candidate, self.champion, epoch, opponents)

    def replan(self, pending: PendingEvaluation) -> EvaluationPlan:
        """A checkpoint's pending evaluation with its sides loaded again (an exact resume plays
        the same seeded matches); a match whose side cannot be loaded any more is skipped (warned)."""
        return self.planned(pending.candidate, pending.champion, pending.epoch, pending.opponents, skip_unloadable=True)

    def planned(
        self, candidate: str, champion: str | None, epoch: int, opponents, skip_unloadable: bool = False
    ) -> EvaluationPlan:
        """The plan of `candidate`'s matches vs `opponents` ((role, id) pairs), every side loaded now."""
        matches = []
        for role, who in opponents:
            try:
                play = self.prepare(candidate, who, self.cfg.eval_games)
            except UNLOADABLE as e:
                if not skip_unloadable:
                    raise
                self.log(f"[league] WARNING: candidate {candidate}'s match vs {who} cannot be loaded ({e}): skipped")
                play = None
            matches.append(PlannedMatch(role, who, play))
        return EvaluationPlan(candidate, champion, epoch, tuple(matches))

    def prepare(self, a: str, b: str, games: int) -> Callable[[], Tally]:
        """A match of a vs b, its sides loaded now (`Matches.prepare`)."""
        return self.matches.prepare(a, b, games)

    def apply_evaluation(self, plan: EvaluationPlan, tallies: list[Tally | None]) -> Decision | None:
        """Records a played plan's results (a verification match's also as the learner's payoff)
        and decides and retains (`conclude`). Results vs members that left the pool since the
        plan, or whose match was skipped, are not recorded (warned); without every result the
        promotion rule needs, or without the candidate, there is no decision (None)."""
        candidate = plan.candidate
        if candidate not in self.store:
            self.log(f"[league] WARNING: candidate {candidate} left the pool before its evaluation: no decision")
            return None
        vs_champion, vs_baselines, skipped = None, {}, []
        for match, tally in zip(plan.matches, tallies):
            who = match.opponent
            if tally is None or (who not in self.bots and who not in self.store):
                skipped.append(match)
                continue
            self.record_match(candidate, who, tally)
            self.note_match(candidate, match.role, who, tally)
            if match.role == CHAMPION:
                vs_champion = tally
            elif match.role == BASELINE:
                vs_baselines[who] = tally
            elif match.role == VERIFICATION:
                self.payoff.update(LEARNER, who, *map(float, tally.as_tuple()))
                self.last_played[who] = self.games_recorded
        if skipped:
            names = ", ".join(m.opponent for m in skipped)
            self.log(
                f"[league] WARNING: candidate {candidate}: results vs {names} not recorded (retired or unloadable)"
            )
        if any(m.role != VERIFICATION for m in skipped):
            self.log(f"[league] candidate {candidate}: no decision (a match the promotion rule needs was skipped)")
            self.retain()
            return None
        return self.conclude(candidate, plan.champion, vs_champion, vs_baselines)

    def conclude(
        self, candidate: str, champion: str | None, vs_champion: Tally | None, vs_baselines: dict[str, Tally]
    ) -> Decision:
        """Applies the promotion rule (logged, kept in `decisions`) and retains the pool."""
        decision = decide(self.cfg, candidate, champion, vs_champion, vs_baselines)
        if decision.promoted:
            self.champion = candidate
            self.promotions += 1
        self.log(
            f"[league] candidate {candidate}: {'PROMOTED' if decision.promoted else 'rejected'} - {decision.reason}"
        )
        self.decisions = (self.decisions + [asdict(decision)])[-MAX_DECISIONS:]
        self.events.write("decision", **asdict(decision))
        if decision.promoted:
            self.events.write("promotion", champion=candidate, previous=champion)
        self.retain()
        return decision

    def note_match(self, candidate: str, role: str, opponent: str, tally: Tally) -> None:
        """An evaluation match's line in the event log (scoring.Tally.as_row: counts, win rate,
        95% Wilson interval), with where its recorded games are."""
        recording = self.matches.recording(candidate, opponent)
        self.events.write(
            "match", candidate=candidate, opponent=opponent, role=role, **tally.as_row(), replays=recording
        )

    def metrics(self) -> dict[str, float]:
        """league/pool_size, promotions, candidates, the champion's rating, every rated id's rating
        (league/rating_mu|sigma/<id>: the report's ratings and pool timeline), the meta-Nash's
        weights (league/nash_weight/<id>), and league/payoff_vs_*: the learner's decayed score in
        its *training* games vs a few opponents (not a duplicate match: eval/winrate_vs_* is)."""
        out = {
            "league/pool_size": float(len(self.pool_ids())),
            "league/promotions": float(self.promotions),
            "league/candidates": float(self.candidates),
        }
        out["league/champion_rating"] = float("nan")  # logged always; NaN (null) until a first champion
        if self.champion is not None:
            out["league/champion_rating"] = self.ratings.conservative(self.champion)
            out["league/champion_mu"] = self.ratings.mu(self.champion)
            out["league/champion_sigma"] = self.ratings.sigma(self.champion)
        for who, (mu, sigma) in self.ratings.state_dict().items():
            out[f"league/rating_mu/{who}"] = mu
            out[f"league/rating_sigma/{who}"] = sigma
        nash = self.meta_nash() if self.cfg.uses_meta_nash else {}
        out.update({f"league/nash_weight/{who}": weight for who, weight in nash.items()})
        few = {"champion": self.champion, **{b: b for b in self.bots}}
        if self.pool_ids():
            newest = self.pool_ids()[-1]
            few[newest] = newest
        for label, who in few.items():
            if who is not None and self.payoff.games(LEARNER, who) > 0:
                out[f"league/payoff_vs_{label}"] = self.payoff.winrate(LEARNER, who)
        return out

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """JSON-serialisable state (in-memory members' weights are not in it: use a directory
        for a run that must resume)."""
        return {
            "version": STATE_VERSION,
            **self.store.state_dict(),
            "champion": self.champion,
            "ratings": self.ratings.state_dict(),
            "payoff": self.payoff.state_dict(),
            "payoff_points": self.payoff.points_state_dict(),
            "payoff_decay": self.payoff.decay,
            "promotions": self.promotions,
            "candidates": self.candidates,
            "decisions": self.decisions,
            "games_recorded": self.games_recorded,
            "last_played": dict(self.last_played),
        }

    def load_state_dict(self, state: dict, origin: Origin | None = None) -> None:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"league state version {state.get('version')!r}, expected {STATE_VERSION}")
        self.store.load_state_dict(state, self.log, origin)
        if origin is not None and self.directory is not None:
            self.events.continue_from(origin.run_dir / self.directory.name / EVENTS_FILE, origin.global_step)
        self.champion = state["champion"] if state["champion"] in self.store else None
        self.ratings.load_state_dict(state["ratings"])
        self.payoff.load_state_dict(state["payoff"], state.get("payoff_points"))
        self._nash = {}
        self.promotions, self.candidates = int(state["promotions"]), int(state["candidates"])
        self.decisions = list(state["decisions"])
        self.games_recorded = int(state.get("games_recorded", 0))  # absent in states written before verification games
        self.last_played = {str(m): int(t) for m, t in state.get("last_played", {}).items()}

    # ---- replicas (ranks other than 0 under torchrun) ------------------------------------------
    def snapshot(self, sent: set[str]) -> dict:
        """What a replica needs to equal this manager: the state dict, and the weights of the
        members (and last-round retirees) not in `sent`, the ids it was already sent."""
        weights = {}
        for m in [*self.pool_ids(), *self.store.retired]:
            if m not in sent:
                try:
                    weights[m] = self.store.weights(m)
                except KeyError:  # a retiree held in memory only is gone here too
                    pass
        return {"state": self.state_dict(), "weights": weights}

    def replicate(self, snapshot: dict) -> None:
        """Becomes a copy of the manager that made `snapshot` (weights held in memory, no files)."""
        self.store.hold(snapshot["weights"])
        self.load_state_dict(in_memory(snapshot["state"]))

    def save(self) -> Path:
        if self.state_path is None:
            raise ValueError("this league manager has no directory to save to")
        text = json.dumps(self.state_dict(), indent=1, sort_keys=True)
        atomic_write(self.state_path, lambda f: f.write(text.encode("utf-8")), keep_backup=True)
        return self.state_path

    def load(self) -> bool:
        """Loads league_state.json, or its .bak when the main file is missing or corrupt;
        False when neither exists (a fresh league)."""
        if self.state_path is None:
            raise ValueError("this league manager has no directory to load from")
        errors = []
        for path in (self.state_path, self.state_path.with_name(STATE_FILE + ".bak")):
            if not path.exists():
                continue
            try:
                self.load_state_dict(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError, OSError) as e:
                errors.append(f"{path.name}: {e}")
                self.log(f"[league] WARNING: cannot load {path}: {e}")
                continue
            if errors:
                self.log(f"[league] WARNING: loaded the backup {path.name} ({'; '.join(errors)})")
            return True
        if errors:
            raise ValueError(f"no loadable league state in {self.directory}: {'; '.join(errors)}")
        return False
