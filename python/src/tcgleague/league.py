"""League matchmaking: who the learner plays in each game, drawn only at episode boundaries.

Rows follow the env: row 2g + s is seat s of game g. A game is one of
    self    - learner vs the latest self: both rows are learner rows (plain self-play);
    bot     - learner vs "random" or "greedy": one learner row, one bot row;
    member  - learner vs a frozen pool member: one learner row, one frozen row.
A game's matchup and the learner's seat are redrawn only when that game's episode ends
(`on_episode_end(games)`), never mid-game: switching opponent mid-game would hand the learner
a game state (and an LSTM state) produced by someone else, and credit it with rewards it did
not earn. The learner seat is random per episode so it learns both seats against every kind.

Draw per new episode (once the league is active): latest self with probability
latest_ratio, a bot with bot_ratio (random and greedy equally likely), otherwise a frozen
member chosen by prioritised fictitious self-play (PFSP, AlphaStar) on the learner's decayed
win rate p against it. An empty pool or no bots falls back to self-play. Before
activate_after_steps every game is self-play, so learner rows = all rows.

`League` is the collect loop's single entry point: it owns the Matchmaker and the frozen
opponents and reports finished games to the league manager (payoff) - see its docstring.
"""
from __future__ import annotations

import numpy as np
import torch

from .bots import greedy_actions, random_actions
from .opponents import FrozenOpponents

SELF, RANDOM, GREEDY, LEARNER = "self", "random", "greedy", "learner"
BOT_IDS = (RANDOM, GREEDY)
RESERVED_IDS = (SELF, RANDOM, GREEDY, LEARNER)
PFSP_MODES = ("squared", "variance", "linear", "uniform")


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
        raise ValueError(f"unknown pfsp weighting {mode!r}; valid: {', '.join(PFSP_MODES)}")
    if len(w) == 0:
        return w
    total = w.sum()
    return w / total if total > 0 else np.full(len(w), 1.0 / len(w))


class Matchmaker:
    """Per-game opponent id and learner seat; redrawn only by `reset` / `on_episode_end`.

    Opponent ids are kept as int codes into an append-only registry (`id_of(code)`), so a
    member removed from the pool mid-game keeps its code until its games end."""

    def __init__(self, num_games: int, cfg, seed: int = 0, bots=BOT_IDS):
        self.cfg = cfg
        self.num_games, self.num_rows = int(num_games), 2 * int(num_games)
        self.bots = tuple(bots)
        self._ids: list[str] = [SELF, RANDOM, GREEDY]
        self._codes = {name: i for i, name in enumerate(self._ids)}
        self.game_code = np.zeros(self.num_games, dtype=np.int64)        # 0 = self
        self.learner_seat = np.zeros(self.num_games, dtype=np.int64)
        self.learner_mask = np.ones(self.num_rows, dtype=bool)
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

    def row_opponent_codes(self) -> np.ndarray:
        """Opponent code of each row's game, [num_rows] (both rows of a game share it)."""
        return np.repeat(self.game_code, 2)

    def in_use(self) -> set[str]:
        return {self._ids[c] for c in np.unique(self.game_code)}

    # ---- pool ------------------------------------------------------------------------------
    def set_pool(self, member_ids, probs) -> None:
        """Frozen members available to future draws, with their PFSP probabilities."""
        member_ids = list(member_ids)
        probs = np.asarray(probs, dtype=np.float64)
        if len(member_ids) != len(probs):
            raise ValueError(f"{len(member_ids)} members but {len(probs)} probabilities")
        bad = [m for m in member_ids if m in RESERVED_IDS]
        if bad:
            raise ValueError(f"member ids {bad} are reserved ({', '.join(RESERVED_IDS)})")
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
        u, pick_bot, pick_member, seat = (self.rng.random(n), self.rng.random(n), self.rng.random(n),
                                          self.rng.integers(0, 2, n))
        codes = np.zeros(n, dtype=np.int64)
        if self.active:
            latest, bot = self.cfg.latest_ratio, self.cfg.bot_ratio
            is_bot = (u >= latest) & (u < latest + bot) & (len(self.bots) > 0)
            is_member = (u >= latest + bot) & (len(self.pool) > 0)
            if len(self.bots):
                bot_codes = np.array([self._codes[b] for b in self.bots])
                codes[is_bot] = bot_codes[np.minimum((pick_bot * len(self.bots)).astype(np.int64),
                                                     len(self.bots) - 1)][is_bot]
            if len(self.pool):
                cdf = np.cumsum(self.pool_probs)
                k = np.minimum(np.searchsorted(cdf, pick_member * cdf[-1], side="right"), len(self.pool) - 1)
                member_codes = np.array([self._codes[m] for m in self.pool])
                codes[is_member] = member_codes[k][is_member]
        self.game_code[games] = codes
        self.learner_seat[games] = seat
        self._update_mask(games)
        return games

    def _update_mask(self, games: np.ndarray) -> None:
        selfplay = self.game_code[games] == 0
        seat = self.learner_seat[games]
        self.learner_mask[2 * games] = selfplay | (seat == 0)
        self.learner_mask[2 * games + 1] = selfplay | (seat == 1)

    # ---- reporting -------------------------------------------------------------------------
    def fractions(self) -> dict[str, float]:
        """Share of games currently vs the latest self, bots and frozen members."""
        n = max(1, self.num_games)
        selfplay = float(np.sum(self.game_code == 0)) / n
        bots = float(np.isin(self.game_code, [self._codes[b] for b in BOT_IDS]).sum()) / n
        return {"league/latest_opponent_fraction": selfplay, "league/bot_fraction": bots,
                "league/frozen_fraction": max(0.0, 1.0 - selfplay - bots)}

    def state_dict(self) -> dict:
        return {"ids": list(self._ids), "game_code": self.game_code.tolist(),
                "learner_seat": self.learner_seat.tolist(), "pool": list(self.pool),
                "pool_probs": self.pool_probs.tolist(), "rng": self.rng.bit_generator.state,
                "active": self.active}

    def load_state_dict(self, state: dict) -> None:
        if len(state["game_code"]) != self.num_games:
            raise ValueError(f"matchmaker state is for {len(state['game_code'])} games, this env has "
                             f"{self.num_games}")
        self._ids = list(state["ids"])
        self._codes = {name: i for i, name in enumerate(self._ids)}
        self.game_code = np.asarray(state["game_code"], dtype=np.int64)
        self.learner_seat = np.asarray(state["learner_seat"], dtype=np.int64)
        self.pool, self.pool_probs = list(state["pool"]), np.asarray(state["pool_probs"], dtype=np.float64)
        self.rng.bit_generator.state = state["rng"]
        self.active = bool(state["active"])
        self._update_mask(np.arange(self.num_games))


def greedy_engine_env(env):
    """The in-process TCGEnv behind `env` (a TCGEnv or the native VecEnv), or None: the greedy
    bot runs inside the C engine, so it exists only where the engine is in this process."""
    if hasattr(env, "engine"):
        return env
    inner = getattr(env, "_env", None)
    return inner if inner is not None and hasattr(inner, "engine") else None


class League:
    """Everything the trainer's collect loop needs, per env step:

        rows = np.flatnonzero(env.masks)
        mine, theirs = league.split(rows)             # learner rows / opponent rows
        ... learner forward + buffer.add on `mine` only ...
        league.act_opponents(obs, theirs, actions)    # fills actions[theirs]
        obs, rewards, terminals, truncations, infos = env.step(actions)
        mask = league.after_step(rewards, terminals, truncations, global_step)
        events = events[mask[events]]                  # credit learner rows only (mask in force
        buffer.credit(events, ...)                     #  during this step, before the redraw)
        zero_rows(learner_states, done_rows)

    and once per epoch `league.end_epoch(epoch, global_step, policy, policy_config, params)`
    (ingest/evaluate a candidate every checkpoint_add_interval epochs, refresh the pool and
    the PFSP weights), `league.metrics()` for league/*. Call `league.reset(global_step)` right
    after env.reset (it draws every game).
    """

    def __init__(self, cfg, num_games: int, manager=None, env=None, seed: int = 0, device="cpu"):
        self.cfg, self.manager = cfg, manager
        self.greedy_env = greedy_engine_env(env) if env is not None else None
        bots = BOT_IDS if self.greedy_env is not None else (RANDOM,)
        self.matchmaker = Matchmaker(num_games, cfg, seed=seed, bots=bots)
        self.opponents = FrozenOpponents(2 * num_games, cfg.opponent_batch, device, seed=seed + 1)
        self.rng = np.random.default_rng(seed + 2)
        self.global_step = 0
        self.sync_pool()

    # ---- per step --------------------------------------------------------------------------
    @property
    def learner_mask(self) -> np.ndarray:
        return self.matchmaker.learner_mask

    def reset(self, global_step: int) -> None:
        self.global_step = global_step
        self.opponents.reset_all()
        self.matchmaker.reset(global_step)

    def split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(learner rows, opponent rows) among active `rows`."""
        mine = self.matchmaker.learner_mask[rows]
        return rows[mine], rows[~mine]

    def act_opponents(self, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray) -> None:
        """Writes the opponents' actions for active opponent `rows` into `actions` (one batched
        call per bot, one stacked forward for all the frozen members)."""
        if len(rows) == 0:
            return
        codes = self.matchmaker.row_opponent_codes()[rows]
        frozen = {}
        for code in np.unique(codes):
            sel = rows[codes == code]
            who = self.matchmaker.id_of(code)
            if who == RANDOM:
                actions[sel] = random_actions(obs[sel], self.rng)
            elif who == GREEDY:
                actions[sel] = greedy_actions(self.greedy_env, sel)
            else:
                frozen[who] = sel
        if frozen:
            for who, acts in self.opponents.act(obs, frozen).items():
                actions[frozen[who]] = acts

    def after_step(self, rewards: np.ndarray, terminals: np.ndarray, truncations: np.ndarray,
                   global_step: int) -> np.ndarray:
        """Handles finished games: records learner results vs non-self opponents in the payoff,
        resets opponent states by row index, redraws those games. Returns (a copy of) the learner
        mask that was in force for the step just taken."""
        self.global_step = global_step
        mask = self.matchmaker.learner_mask.copy()
        done_games = np.flatnonzero(terminals[0::2] | truncations[0::2])
        if len(done_games) == 0:
            return mask
        mm = self.matchmaker
        for g in done_games:
            who = mm.id_of(mm.game_code[g])
            if who == SELF:
                continue
            r = float(rewards[2 * g + mm.learner_seat[g]])
            if self.manager is not None:
                self.manager.record_game(LEARNER, who, win=r > 0.5, loss=r < -0.5)
        self.opponents.reset_rows(np.concatenate([2 * done_games, 2 * done_games + 1]))
        mm.on_episode_end(done_games, global_step)
        return mask

    # ---- per epoch -------------------------------------------------------------------------
    def sync_pool(self) -> None:
        """Loads new pool members, unloads retired ones no game still uses, refreshes PFSP."""
        if self.manager is None:
            return
        ids = self.manager.pool_ids()
        for m in ids:
            if m not in self.opponents:
                policy, params = self.manager.load_policy(m)
                self.opponents.add(m, policy, params)
        in_use = self.matchmaker.in_use()
        for m in self.opponents.ids():
            if m not in ids and m not in in_use:
                self.opponents.remove(m)
        probs = pfsp_weights(self.manager.learner_winrates(ids), self.cfg.pfsp_weighting)
        self.matchmaker.set_pool(ids, probs)

    def end_epoch(self, epoch: int, global_step: int, policy: torch.nn.Module | None = None,
                  policy_config: dict | None = None, sampling_params: dict | None = None):
        """Every checkpoint_add_interval epochs ingests the learner as a candidate and evaluates
        it (returns the manager's Decision; None on other epochs); always refreshes the pool and
        the PFSP weights. Candidates are ingested before activate_after_steps too, so the pool
        is populated (and rated) when the league starts."""
        decision = None
        if (self.manager is not None and policy is not None and epoch > 0
                and epoch % self.cfg.checkpoint_add_interval == 0):
            member_id = f"e{epoch:06d}"
            self.manager.ingest(member_id, state_dict=policy.state_dict(), policy_config=policy_config,
                                sampling_params=sampling_params, step=global_step, epoch=epoch)
            decision = self.manager.evaluate(member_id)
        self.sync_pool()
        return decision

    def metrics(self) -> dict[str, float]:
        """league/*: active (global_step past activate_after_steps), current opponent shares,
        and the manager's pool, rating, promotion and win-rate figures."""
        out = {"league/active": float(self.matchmaker.is_active(self.global_step))}
        out.update(self.matchmaker.fractions())
        if self.manager is not None:
            out.update(self.manager.metrics())
        return out

    def state_dict(self) -> dict:
        """For the trainer's checkpoint (torch.save: holds tensors): per-game matchups and
        learner seats, RNG states, and the frozen members' per-row LSTM state, so a resume
        that restores the env's games mid-episode continues them exactly."""
        return {"matchmaker": self.matchmaker.state_dict(), "rng": self.rng.bit_generator.state,
                "global_step": self.global_step,
                "opponents_generator": self.opponents.generator.get_state().tolist(),
                "opponent_state": None if self.opponents.h is None else
                {"h": self.opponents.h.detach().cpu().clone(), "c": self.opponents.c.detach().cpu().clone()}}

    def load_state_dict(self, state: dict) -> None:
        """Restores `state_dict()`; load the manager's state first. A running game whose frozen
        member cannot be loaded any more continues as self-play (with a warning)."""
        mm = self.matchmaker
        mm.load_state_dict(state["matchmaker"])
        self.rng.bit_generator.state = state["rng"]
        self.global_step = int(state["global_step"])
        self.opponents.generator.set_state(torch.tensor(state["opponents_generator"], dtype=torch.uint8))
        for m in sorted(mm.in_use() - {SELF, RANDOM, GREEDY}):
            if m in self.opponents:
                continue
            try:
                if self.manager is None:
                    raise KeyError("no league manager")
                policy, params = self.manager.load_policy(m)
                self.opponents.add(m, policy, params)
            except (KeyError, OSError) as e:
                games = np.flatnonzero(mm.game_code == mm.code_of(m))
                print(f"[league] WARNING: member {m} cannot be loaded ({e}); its {len(games)} running "
                      f"games continue as self-play")
                mm.game_code[games] = 0
                mm._update_mask(games)
        saved = state.get("opponent_state")
        if saved is not None and self.opponents.h is not None:
            self.opponents.h.copy_(saved["h"])
            self.opponents.c.copy_(saved["c"])
