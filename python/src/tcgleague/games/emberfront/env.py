"""The Emberfront environment: a native PufferLib env over the C engine, and a PettingZoo
AEC adapter for one game.

Rows (rows.py, every game's contract): `num_agents = rows_of(num_games)` (PufferLib's name for
the row count; everything else in tcgleague says `num_rows`); row `seat_row(g, s)` = 2g + s is
seat s of game g. Each step exactly one row per game is active (`masks[row] = 1`); inactive rows' actions are ignored and their
observations are not refreshed. A row's reward is what its seat earned since its previous
decision; when a game ends both rows get `terminals` (or `truncations` at the turn cap) and
their final reward, and the game restarts itself.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pufferlib
from pettingzoo import AECEnv

from ...rows import game_of, rows_of, seat_of
from .engine import LAYOUT, Engine
from .engine.cards import DEFAULT_CARDS, CardPool, deck_weights, load_card_pool
from .layout import (
    ACTION_WIDTH,
    COUNT,
    DRAW,
    HEAD_SIZES,
    LEGAL,
    MAX_LEGAL,
    OBS_BYTES,
    OBS_SIZE,
    PASS,
    features_np,
)

ACTION_TYPES = {v: k for k, v in LAYOUT["action_types"].items()}
EPISODE_FIELDS = LAYOUT["episode_fields"]


def summarize_episodes(infos: list[dict]) -> dict:
    """environment/* metrics of finished games' records (`TCGEnv.step`'s infos)."""
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


class IllegalActionError(ValueError):
    """An action is not in its game's legal list, or not an integer in its head's range: a bug
    in the caller. Nothing was stepped."""


def checked_actions(actions, active: np.ndarray) -> np.ndarray:
    """`actions` as int32 [rows, ACTION_WIDTH] for the row mask `active`, refusing anything but
    integral values in each head's range [0, size) on active rows (a bare cast would wrap int64
    and truncate 24.5 into a legal-looking action). Inactive rows are ignored (sent as zeros).
    TypeError for a wrong shape or a non-numeric dtype; IllegalActionError naming the first bad
    active row otherwise."""
    a = np.asarray(actions)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"actions must be an integer or float array, got dtype {a.dtype}")
    if a.size != len(active) * ACTION_WIDTH:
        raise TypeError(f"actions must have shape ({len(active)}, {ACTION_WIDTH}), got {a.shape}")
    a = np.where(active[:, None], a.reshape(len(active), ACTION_WIDTH), 0)
    with np.errstate(invalid="ignore"):
        ok = (a >= 0) & (a < np.asarray(HEAD_SIZES)) & (np.floor(a) == a)
    bad = np.flatnonzero(~ok.all(1))
    if len(bad):
        row = int(bad[0])
        raise IllegalActionError(
            f"row {row} (game {game_of(row)}, seat {seat_of(row)}): action {tuple(a[row].tolist())} is not a legal action: "
            f"each of (type, a, b, c) must be an integer in [0, size) with sizes {HEAD_SIZES}"
        )
    return np.ascontiguousarray(a, dtype=np.int32)


def observation_space() -> gymnasium.spaces.Box:
    """A row as the env writes it: compact bytes (layout.features reads them as features)."""
    return gymnasium.spaces.Box(low=0, high=255, shape=(OBS_BYTES,), dtype=np.uint8)


def feature_space() -> gymnasium.spaces.Box:
    """A row's features as float32 (layout.features), for code outside tcgleague (the AEC env)."""
    return gymnasium.spaces.Box(low=-(2.0**15), high=2.0**15 - 1, shape=(OBS_SIZE,), dtype=np.float32)


def action_space() -> gymnasium.spaces.MultiDiscrete:
    return gymnasium.spaces.MultiDiscrete([LAYOUT["n_action_types"], LAYOUT["n_a"], LAYOUT["n_b"], LAYOUT["n_c"]])


class TCGEnv(pufferlib.PufferEnv):
    """Many Emberfront games, stepped by one C call into PufferLib's buffers."""

    noop_action_type = PASS  # the action type that does nothing now: the rollout's noop rate counts it
    summarize_episodes = staticmethod(summarize_episodes)  # its episode records -> environment/* metrics

    @staticmethod
    def bytes_per_game(env_kwargs: dict) -> int:
        """Memory one game takes, rows and engine state: measured 33,300 bytes of process memory
        per game at 20,000 games; this bound is 1.5x that."""
        return 50_000

    def __init__(
        self,
        num_games: int = 1,
        seed: int = 0,
        deck_pool: str | Path | dict | None = None,
        reward_shaping: float = 0.0,
        turn_cap: int = LAYOUT["default_turn_cap"],
        card_file: str | Path = DEFAULT_CARDS,
        buf=None,
        log_episodes: bool = True,
        num_threads: int = 1,
    ):
        if num_games < 1:
            raise ValueError(f"num_games must be >= 1, got {num_games}")
        if turn_cap < 1:
            raise ValueError(f"turn_cap must be >= 1 (turns per player), got {turn_cap}")
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self.num_games = num_games
        self.num_agents = rows_of(num_games)
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.log_episodes = log_episodes
        self.seed, self.turn_cap = seed, turn_cap
        super().__init__(buf)
        self.pool: CardPool = load_card_pool(card_file)
        self._weights = deck_weights(self.pool, deck_pool)
        self.engine = Engine(
            num_games=num_games,
            n_cards=self.pool.n_cards,
            n_decks=len(self.pool.deck_names),
            cards=self.pool.table,
            decks=self.pool.decks,
            deck_leaders=self.pool.deck_leaders,
            deck_weights=self._weights,
            card_names=self.pool.names,
            observations=self.observations,
            rewards=self.rewards,
            terminals=self.terminals,
            truncations=self.truncations,
            masks=self.masks,
            turn_cap=turn_cap,
            shaping_coef=float(reward_shaping),
            num_threads=int(num_threads),  # step() splits the games over threads; results do not depend on it
        )

    def reset(self, seed: int | None = None):
        self.engine.reset(self.seed if seed is None else int(seed))
        self.engine.drain_episodes()
        return self.observations, []

    def step(self, actions):
        actions = checked_actions(actions, self.masks.astype(bool))
        self.raise_if_refused(self.engine.step(actions), actions)
        return self.observations, self.rewards, self.terminals, self.truncations, self.episode_infos()

    def checked_game_actions(self, actions, games: range) -> np.ndarray:
        """`checked_actions` for the rows of `games` only (the others are sent as zeros, and
        their rows are not read: another range of games may be stepping)."""
        active = np.zeros(self.num_agents, dtype=bool)
        rows = slice(rows_of(games.start), rows_of(games.stop))
        active[rows] = self.masks[rows]
        return checked_actions(actions, active)

    @staticmethod
    def raise_if_refused(refused: tuple | None, actions: np.ndarray) -> None:
        """The engine's refusal of a step (game, row, n legal), if any, as an IllegalActionError."""
        if refused is not None:
            game, row, n_legal = refused
            raise IllegalActionError(
                f"game {game} (row {row}, seat {seat_of(row)}): action {tuple(int(x) for x in actions[row])} is not "
                f"legal; the game has {n_legal} legal actions (see the legal list in its observation)"
            )

    def set_reward_shaping(self, coef: float) -> None:
        self.engine.set_shaping(float(coef))

    def set_deal(self, game: int, seed: int, deck0: int, deck1: int, swapped: bool = False) -> None:
        """Replace one game with an explicit deal (evaluation's duplicate format)."""
        self.engine.set_deal(game, seed, deck0, deck1, swapped)

    def render(self, game: int = 0) -> str:
        return self.engine.render(game)

    def close(self):
        pass

    def episode_infos(self) -> list[dict]:
        """The records of the games that ended since the last call (the engine's log, drained)."""
        raw, dropped = self.engine.drain_episodes()
        if not raw or not self.log_episodes:
            return []
        records = np.frombuffer(raw, dtype=np.int32).reshape(-1, len(EPISODE_FIELDS) + 2 * len(ACTION_TYPES))
        infos = [episode_info(r, self.pool.deck_names) for r in records]
        if dropped:
            infos[-1]["episodes_dropped"] = dropped
        return infos


_COUNT_KEYS = [f"seat{seat}_{ACTION_TYPES[t]}" for seat in (0, 1) for t in range(len(ACTION_TYPES))]


def episode_info(record: np.ndarray, deck_names: list[str]) -> dict:
    """One finished game as a flat dict (action counts are over the seat's own decisions)."""
    values = record.tolist()
    n = len(EPISODE_FIELDS)
    info = dict(zip(EPISODE_FIELDS, values[:n]))
    info.update(zip(_COUNT_KEYS, values[n:]))
    info["draw"] = int(info["winner"] == DRAW)
    info["deck0_name"] = deck_names[info["deck0"]]
    info["deck1_name"] = deck_names[info["deck1"]]
    passes = values[n + PASS] + values[n + len(ACTION_TYPES) + PASS]
    info["noop_rate"] = passes / max(1, sum(values[n:]))
    return info


class TCGAECEnv(AECEnv):
    """One Emberfront game as a PettingZoo AEC env (turn-based: `agent_selection` is the seat
    that decides now; the response window and target choices make turns alternate irregularly).

    Observation: {"observation": the float32 features of `feature_space()` (layout: LAYOUT),
    "action_mask": int8 [max_legal]}. Action: Discrete(max_legal), an INDEX into the legal
    list held in the observation (entry i is the (type, a, b, c) tuple at
    legal_offset + 4 i); the mask is 1 exactly for the first `legal count` indices of the
    selected agent, all zeros for any other agent. An index outside the mask raises
    IllegalActionError. `observe(agent)` is the observation from that agent's latest decision.

    Game end: both agents get terminations (or truncations at the turn cap), the final
    reward (+1 / -1, 0 for a draw, plus shaping if enabled) and the episode record as info
    (`episode_info` keys); the engine's automatic next game is not entered: each agent keeps
    the last observation it was given, its mask becomes all zeros, and agents leave after
    stepping None. `reset()` starts the next game (seeded from the last explicit seed).
    """

    metadata = {"render_modes": ["ansi"], "name": "emberfront_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = "ansi", seed: int = 0, **env_kwargs):
        super().__init__()
        self.render_mode = render_mode
        self.possible_agents = ["player_0", "player_1"]
        self.tcg = TCGEnv(num_games=1, seed=seed, **env_kwargs)
        mask_space = gymnasium.spaces.Box(0, 1, shape=(MAX_LEGAL,), dtype=np.int8)
        space = gymnasium.spaces.Dict({"observation": feature_space(), "action_mask": mask_space})
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gymnasium.spaces.Discrete(MAX_LEGAL) for a in self.possible_agents}
        self._seeds = np.random.default_rng(seed)
        self._obs = np.zeros((2, OBS_SIZE), dtype=np.float32)
        self._actions = np.zeros((2, ACTION_WIDTH), dtype=np.int32)
        self._over, self._final = False, ""

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        self.tcg.reset(seed if seed is not None else int(self._seeds.integers(2**62)))
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._obs[:] = features_np(self.tcg.observations)
        self._over, self._final = False, ""
        self.agent_selection = self.possible_agents[self._decider()]

    def _decider(self) -> int:
        return int(np.flatnonzero(self.tcg.masks)[0])

    def observe(self, agent):
        seat = self.possible_agents.index(agent)
        mask = np.zeros(MAX_LEGAL, dtype=np.int8)
        if not self._over and agent == self.agent_selection:
            mask[: int(self._obs[seat, COUNT])] = 1
        return {"observation": self._obs[seat].copy(), "action_mask": mask}

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        seat = self.possible_agents.index(agent)
        n_legal = int(self._obs[seat, COUNT])
        index = np.asarray(action) if action is not None else None
        if index is None or index.ndim != 0 or index.dtype.kind not in "iuf" or not 0 <= index < n_legal:
            raise IllegalActionError(
                f"{agent}: action index {action!r} is not legal; there are {n_legal} legal actions"
            )
        if index != np.floor(index):
            raise IllegalActionError(f"{agent}: action index {action!r} is not an integer (0 .. {n_legal - 1})")
        start = LEGAL.start + ACTION_WIDTH * int(index)
        self._actions[:] = 0
        self._actions[seat] = self._obs[seat, start : start + ACTION_WIDTH]
        self._cumulative_rewards[agent] = 0.0
        _, rewards, terminals, truncations, infos = self.tcg.step(self._actions)
        self.rewards = {a: float(rewards[i]) for i, a in enumerate(self.agents)}
        if terminals.any() or truncations.any():
            self._over = True
            self.terminations = {a: bool(terminals[i]) for i, a in enumerate(self.agents)}
            self.truncations = {a: bool(truncations[i]) for i, a in enumerate(self.agents)}
            self.infos = {a: dict(infos[-1]) if infos else {} for a in self.agents}
            outcome = ", ".join(f"{a} {rewards[i]:+g}" for i, a in enumerate(self.agents))
            self._final = f"game over ({'truncated at the turn cap' if truncations.any() else 'decided'}): {outcome}\n"
            self.agent_selection = self.possible_agents[1 - seat]
        else:
            decider = self._decider()
            self._obs[decider] = features_np(self.tcg.observations[decider])
            self.agent_selection = self.possible_agents[decider]
        self._accumulate_rewards()

    def render(self) -> str:
        """The engine's omniscient text view of the game; once it is over, the result only."""
        return self._final if self._over else self.tcg.render(0)

    def close(self):
        self.tcg.close()
