"""Matchmaking: who the learner plays in each game, drawn only at episode boundaries.

Rows follow the env: row `seat_row(g, s)` is seat s of game g (rows.py). A game is one of
    self    - learner vs the latest self: both rows are learner rows (plain self-play);
    bot     - learner vs "random" or "greedy": one learner row, one bot row;
    member  - learner vs a frozen pool member: one learner row, one frozen row;
    exploiter - learner vs the live main exploiter (league/exploiter.py): one row each. The
                learner plays its row without training on it (AlphaStar's main agents meet
                exploiters only as frozen pool members), unless learner_trains_vs_exploiter.
                With exploiter_opponent = snapshot the exploiter's frozen snapshot of the
                learner plays that seat instead: both rows are the opponent side's.
A game's matchup and the learner's seat are redrawn only when that game's episode ends
(`on_episode_end(games)`), never mid-game: switching opponent mid-game would hand the learner
a game state (and an LSTM state) produced by someone else, and credit it with rewards it did
not earn. The learner seat is random per episode so it learns both seats against every kind.

Draw per new episode (once the league is active): latest self with probability
latest_ratio, a bot with bot_ratio (random and greedy equally likely), the main exploiter with
exploiter_ratio (when the league has one), otherwise a frozen member chosen by prioritised fictitious self-play (PFSP) on the learner's decayed
win rate p against it. An empty pool or no bots falls back to self-play. Before
activate_after_steps every game is self-play, so learner rows = all rows.
"""

from __future__ import annotations

import numpy as np

from ..config import PFSP_WEIGHTINGS, LeagueSection
from ..rows import rows_of, seat_row

SELF, LEARNER = "self", "learner"  # the latest self as an opponent; the learner in the payoff
EXPLOITER = "exploiter"  # the live main exploiter as an opponent
RESERVED_IDS = (SELF, LEARNER, EXPLOITER)  # never a member id (nor is a bot's name)


def pfsp_weights(winrates, mode: str) -> np.ndarray:
    """Normalised PFSP sampling probabilities from the learner's win rates p vs each member.

    squared (1-p)^2 focuses hard on members the learner loses to; variance p(1-p) on evenly
    matched ones; linear 1-p in between; uniform ignores p. When every weight is 0 (e.g. the
    learner beats everyone under `squared`) the draw falls back to uniform."""
    p = np.clip(np.asarray(winrates, dtype=np.float64), 0.0, 1.0)
    if mode == "squared":
        w = (1.0 - p) ** 2
    elif mode == "variance":
        w = p * (1.0 - p)
    elif mode == "linear":
        w = 1.0 - p
    elif mode == "uniform":
        w = np.ones_like(p)
    else:
        raise ValueError(f"unknown pfsp weighting {mode!r}; valid: {', '.join(PFSP_WEIGHTINGS)}")
    if len(w) == 0:
        return w
    total = w.sum()
    return w / total if total > 0 else np.full(len(w), 1.0 / len(w))


class Matchmaker:
    """Per-game opponent id and learner seat; redrawn only by `reset` / `on_episode_end`.

    Opponent ids are kept as int codes into an append-only registry (`id_of(code)`), so a
    member removed from the pool mid-game keeps its code until its games end."""

    def __init__(
        self, num_games: int, cfg: LeagueSection, bots: tuple[str, ...], seed: int = 0, exploiter: bool = False
    ):
        """`bots`: the names of the game's bots training meets (bot_ratio's games, drawn evenly)."""
        self.cfg = cfg
        self.exploiter_ratio = cfg.exploiter_ratio if exploiter else 0.0
        self.num_games, self.num_rows = int(num_games), rows_of(int(num_games))
        self.bots = tuple(bots)
        self._ids: list[str] = [SELF, *self.bots]
        self._codes = {name: i for i, name in enumerate(self._ids)}
        self.game_code = np.zeros(self.num_games, dtype=np.int64)  # 0 = self
        self.learner_seat = np.zeros(self.num_games, dtype=np.int64)
        self.learner_mask = np.ones(self.num_rows, dtype=bool)  # rows the learner plays and trains on
        self.opponent_mask = np.zeros(self.num_rows, dtype=bool)  # rows the opponent side plays
        self.pool: list[str] = []
        self.pool_probs = np.zeros(0)
        self.rng = np.random.default_rng(seed)
        self.active = False

    # ---- ids -------------------------------------------------------------------------------
    def code_of(self, member_id: str) -> int:
        if member_id not in self._codes:
            self._codes[member_id] = len(self._ids)
            self._ids.append(member_id)
        return self._codes[member_id]

    def id_of(self, code: int) -> str:
        return self._ids[int(code)]

    def opponent_ids(self) -> list[str]:
        """Opponent id per game ("self", "random", "greedy" or a member id)."""
        return [self._ids[c] for c in self.game_code]

    def opponent_of_games(self, games: np.ndarray) -> np.ndarray:
        """Opponent id per game of `games` (object array of str)."""
        return np.array(self._ids, dtype=object)[self.game_code[games]]

    def row_opponent_codes(self) -> np.ndarray:
        """Opponent code of each row's game, [num_rows] (both rows of a game share it)."""
        return np.repeat(self.game_code, 2)

    def exploiter_rows(self) -> np.ndarray:
        """Env rows the main exploiter plays now (the other seat of its games), ascending."""
        if not self.exploiter_ratio:
            return np.zeros(0, dtype=np.int64)
        games = np.flatnonzero(self.game_code == self.code_of(EXPLOITER))
        return seat_row(games, 1 - self.learner_seat[games])

    def snapshot_rows(self) -> np.ndarray:
        """Env rows the exploiter's snapshot plays now (the learner's seat of its games; none
        unless exploiter_opponent = snapshot), ascending."""
        if not (self.exploiter_ratio and self.cfg.exploiter_plays_snapshot):
            return np.zeros(0, dtype=np.int64)
        games = np.flatnonzero(self.game_code == self.code_of(EXPLOITER))
        return seat_row(games, self.learner_seat[games])

    def in_use(self) -> set[str]:
        return {self._ids[c] for c in np.unique(self.game_code)}

    # ---- pool ------------------------------------------------------------------------------
    def set_pool(self, member_ids, probs) -> None:
        """Frozen members available to future draws, with their PFSP probabilities."""
        member_ids = list(member_ids)
        probs = np.asarray(probs, dtype=np.float64)
        if len(member_ids) != len(probs):
            raise ValueError(f"{len(member_ids)} members but {len(probs)} probabilities")
        reserved = (*RESERVED_IDS, *self.bots)
        bad = [m for m in member_ids if m in reserved]
        if bad:
            raise ValueError(f"member ids {bad} are reserved ({', '.join(reserved)})")
        for m in member_ids:
            self.code_of(m)
        self.pool = member_ids
        self.pool_probs = probs / probs.sum() if len(probs) and probs.sum() > 0 else probs

    def is_active(self, global_step: int) -> bool:
        return bool(self.cfg.enable) and global_step >= self.cfg.activate_after_steps

    # ---- drawing ---------------------------------------------------------------------------
    def reset(self, global_step: int) -> None:
        """Draws every game (all episodes start now, e.g. after env.reset)."""
        self.on_episode_end(np.arange(self.num_games), global_step)

    def on_episode_end(self, games, global_step: int) -> np.ndarray:
        """Redraws opponent and learner seat for exactly `games` (int game ids whose episode
        just ended; out-of-range ids and duplicates are ignored). Returns the ids drawn."""
        games = np.asarray(games)
        if games.dtype == bool:
            raise TypeError("on_episode_end takes game indices, not a boolean mask (use np.flatnonzero)")
        games = np.unique(games.astype(np.int64).reshape(-1))
        games = games[(games >= 0) & (games < self.num_games)]
        self.active = self.is_active(global_step)
        n = len(games)
        # Fixed number of draws per game whatever the branch, so the stream stays aligned.
        u, pick_bot, pick_member, seat = (
            self.rng.random(n),
            self.rng.random(n),
            self.rng.random(n),
            self.rng.integers(0, 2, n),
        )
        codes = np.zeros(n, dtype=np.int64)
        if self.active:
            latest, bot, exploiter = self.cfg.latest_ratio, self.cfg.bot_ratio, self.exploiter_ratio
            is_bot = (u >= latest) & (u < latest + bot) & (len(self.bots) > 0)
            is_exploiter = (u >= latest + bot) & (u < latest + bot + exploiter)
            is_member = (u >= latest + bot + exploiter) & (len(self.pool) > 0)
            if is_exploiter.any():
                codes[is_exploiter] = self.code_of(EXPLOITER)
            if len(self.bots):
                bot_codes = np.array([self._codes[b] for b in self.bots])
                codes[is_bot] = bot_codes[np.minimum((pick_bot * len(self.bots)).astype(np.int64), len(self.bots) - 1)][
                    is_bot
                ]
            if len(self.pool):
                cdf = np.cumsum(self.pool_probs)
                k = np.minimum(np.searchsorted(cdf, pick_member * cdf[-1], side="right"), len(self.pool) - 1)
                member_codes = np.array([self._codes[m] for m in self.pool])
                codes[is_member] = member_codes[k][is_member]
        self.game_code[games] = codes
        self.learner_seat[games] = seat
        self._update_mask(games)
        return games

    def drop_member(self, member_id: str) -> np.ndarray:
        """Games currently against `member_id` continue as self-play (its weights are gone);
        returns those games."""
        games = np.flatnonzero(self.game_code == self.code_of(member_id))
        self.game_code[games] = 0
        self._update_mask(games)
        return games

    def _update_mask(self, games: np.ndarray) -> None:
        """Row masks of `games`: the opponent side plays the seat that is not the learner's (none
        in self-play; both in the exploiter's games vs its snapshot); the learner trains on
        every other row, except its seat of a game against the live exploiter unless
        learner_trains_vs_exploiter (a row in neither mask is played by the learner and not
        stored)."""
        selfplay = self.game_code[games] == 0
        seat = self.learner_seat[games]
        trains = np.ones(len(games), dtype=bool)
        vs_exploiter = np.zeros(len(games), dtype=bool)
        if self.exploiter_ratio:
            vs_exploiter = self.game_code[games] == self.code_of(EXPLOITER)
            if not self.cfg.learner_trains_vs_exploiter:
                trains = ~vs_exploiter
        vs_snapshot = vs_exploiter & self.cfg.exploiter_plays_snapshot  # these games leave the learner out
        for s in (0, 1):
            theirs = (~selfplay & (seat != s)) | vs_snapshot
            self.opponent_mask[seat_row(games, s)] = theirs
            self.learner_mask[seat_row(games, s)] = ~theirs & trains

    # ---- reporting -------------------------------------------------------------------------
    def fractions(self) -> dict[str, float]:
        """Share of games currently vs the latest self, bots, the exploiter and frozen members."""
        n = max(1, self.num_games)
        selfplay = float(np.sum(self.game_code == 0)) / n
        bots = float(np.isin(self.game_code, [self._codes[b] for b in self.bots]).sum()) / n
        out = {"league/latest_opponent_fraction": selfplay, "league/bot_fraction": bots}
        exploiter = 0.0
        if self.exploiter_ratio > 0:
            exploiter = float(np.sum(self.game_code == self.code_of(EXPLOITER))) / n
            out["league/exploiter_fraction"] = exploiter
        out["league/frozen_fraction"] = max(0.0, 1.0 - selfplay - bots - exploiter)
        return out

    def state_dict(self) -> dict:
        return {
            "ids": list(self._ids),
            "game_code": self.game_code.tolist(),
            "learner_seat": self.learner_seat.tolist(),
            "pool": list(self.pool),
            "pool_probs": self.pool_probs.tolist(),
            "rng": self.rng.bit_generator.state,
            "active": self.active,
        }

    def load_state_dict(self, state: dict) -> None:
        if len(state["game_code"]) != self.num_games:
            raise ValueError(f"matchmaker state is for {len(state['game_code'])} games, this env has {self.num_games}")
        self._ids = list(state["ids"])
        self._codes = {name: i for i, name in enumerate(self._ids)}
        self.game_code = np.asarray(state["game_code"], dtype=np.int64)
        self.learner_seat = np.asarray(state["learner_seat"], dtype=np.int64)
        self.pool, self.pool_probs = list(state["pool"]), np.asarray(state["pool_probs"], dtype=np.float64)
        self.rng.bit_generator.state = state["rng"]
        self.active = bool(state["active"])
        self._update_mask(np.arange(self.num_games))
