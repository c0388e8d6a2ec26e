"""`PokerPufferEnv`: Leduc or Kuhn poker (env.py) behind the PufferLib face every game of
the trainer has (the game is a plug-in), Emberfront's `TCGEnv` being the other.

The contract, as `TCGEnv` keeps it: `num_agents` rows, two per game (rows.py); PufferLib's shared
buffers (`observations` uint8 rows, `rewards`, `terminals`, `truncations`, `masks`: the acting
row of each game); `step(actions)` takes one action per row ([rows, 1]: an index into fold /
call / raise, read on the acting rows only) and returns the finished games' records as infos
(`game`, `winner`: the winning seat or -1 for a split pot, `returns`); `engine.get_state()` /
`set_state(bytes)` for an exact resume; `noop_action_type` and `summarize_episodes` for the
rollout's metrics."""

from __future__ import annotations

import io
import json

import gymnasium
import numpy as np
import pufferlib

from ...rows import rows_of
from .env import IllegalActionError, PokerEnv
from .rules import ACTION_WIDTH, NUM_ACTIONS, rules_named

NO_NOOP = -1  # poker has no action that does nothing: the rollout's noop rate counts none


def checked_actions(actions, acting: np.ndarray) -> np.ndarray:
    """`actions` as int64 [rows] for the acting-row mask `acting`: one integral action per row,
    shaped [rows, ACTION_WIDTH] or [rows] (anything else - another width, a flat array of another
    length, a non-numeric dtype - is a TypeError naming the shape wanted), a NaN or a fraction on
    an acting row an IllegalActionError naming the row (a bare cast would make 1.5 a call); the
    legal mask is checked by PokerEnv.step. Nothing is stepped before both pass."""
    a = np.asarray(actions)
    rows = len(acting)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"actions must be an integer or float array, got dtype {a.dtype}")
    if a.shape not in ((rows, ACTION_WIDTH), (rows,)):
        raise TypeError(f"actions must have shape ({rows}, {ACTION_WIDTH}) (one action per row), got {a.shape}")
    a = np.where(acting, a.reshape(rows), 0)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(np.floor(a) == a))
    if len(bad):
        raise IllegalActionError(
            f"row {int(bad[0])}: action {float(a[bad[0]])!r} is not an integer index (0 .. {NUM_ACTIONS - 1})"
        )
    return a.astype(np.int64)


def summarize_poker_episodes(infos: list[dict]) -> dict:
    """environment/* metrics of finished poker games' records."""
    if not infos:
        return {}
    winners = np.array([e["winner"] for e in infos])
    returns = np.array([e["returns"] for e in infos], dtype=np.float64)
    return {
        "environment/episodes": float(len(infos)),
        "environment/episode_decisions": float(np.mean([e["decisions"] for e in infos])),
        "environment/pot_won": float(np.abs(returns[:, 0]).mean()),
        "environment/split_rate": float(np.mean(winners == -1)),
        "environment/first_player_winrate": float(np.mean(winners[winners >= 0] == 0)) if (winners >= 0).any() else 0.5,
    }


class PokerState:
    """The poker env's state as bytes (`get_state` / `set_state`), what a checkpoint stores of an
    engine: the arrays in an npz, the deal stream's state as JSON (no pickle)."""

    def __init__(self, env: PokerEnv, decisions: np.ndarray):
        self.env, self.decisions = env, decisions

    def get_state(self) -> bytes:
        state = self.env.state_dict()
        arrays = {
            "cards": state["cards"],
            "decisions": self.decisions,
            **{f"b_{k}": v for k, v in state["betting"].items()},
        }
        out = io.BytesIO()
        np.savez(out, rng=np.frombuffer(json.dumps(state["rng"]).encode(), np.uint8), **arrays)
        return out.getvalue()

    def set_state(self, blob: bytes) -> None:
        try:
            with np.load(io.BytesIO(blob), allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
            betting = {k[2:]: data[k] for k in data if k.startswith("b_")}
            state = {
                "game": self.env.rules.name,
                "obs": self.env.obs,
                "cards": data["cards"],
                "betting": betting,
                "rng": json.loads(data["rng"].tobytes()),
            }
            self.env.load_state_dict(state)
            self.decisions[:] = data["decisions"]
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ValueError(f"{self.env.rules.name} engine state refused: {err}") from None


class PokerPufferEnv(pufferlib.PufferEnv):
    """Many games of one poker game, stepped in numpy into PufferLib's buffers."""

    noop_action_type = NO_NOOP
    summarize_episodes = staticmethod(summarize_poker_episodes)

    @staticmethod
    def bytes_per_game(env_kwargs: dict) -> int:
        """Memory one game takes, rows and game state: measured 252 bytes (Kuhn) and 542 (Leduc)
        of process memory per game at 200,000 games; this bound is 1.5x that."""
        return 24 * rules_named(env_kwargs.get("game", "leduc")).obs_width

    def __init__(self, game: str = "leduc", num_games: int = 1, seed: int = 0, buf=None):
        self.rules = rules_named(game)
        self.num_games, self.seed = num_games, seed
        self.num_agents = rows_of(num_games)
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (self.rules.obs_width,), np.uint8)
        self.single_action_space = gymnasium.spaces.MultiDiscrete([NUM_ACTIONS] * ACTION_WIDTH)
        super().__init__(buf)
        self.poker = PokerEnv(self.rules, num_games, seed, obs=self.observations.view(np.int8))
        self.decisions = np.zeros(num_games, dtype=np.int16)  # decisions so far in each game
        self.engine = PokerState(self.poker, self.decisions)

    def reset(self, seed: int | None = None):
        self.poker.reset(self.seed if seed is None else int(seed))
        self.decisions[:] = 0
        self._write_masks()
        return self.observations, []

    def step(self, actions):
        actions = checked_actions(actions, self.masks)
        _, rewards, terminals, truncations, episodes = self.poker.step(actions)
        self.rewards[:], self.terminals[:], self.truncations[:] = rewards, terminals, truncations
        self.decisions += 1
        infos = [
            {"game": int(g), "winner": int(w), "returns": r.tolist(), "decisions": int(self.decisions[g])}
            for g, w, r in zip(episodes.games, episodes.winners, episodes.returns)
        ]
        self.decisions[episodes.games] = 0
        self._write_masks()
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def set_deal(self, games: np.ndarray, cards: np.ndarray) -> None:
        """Restarts `games` with the given cards (PokerEnv.set_deal): a match's duplicate deals."""
        self.poker.set_deal(games, cards)
        self.decisions[games] = 0
        self._write_masks()

    def _write_masks(self) -> None:
        self.masks[:] = False
        self.masks[self.poker.acting_rows()] = True

    def close(self):
        pass
