"""Emberfront as the single-agent gymnasium env a peer trainer expects (`bench peer`): the
agent plays one seat of one game, a bot (greedy by default) plays the other inside `step`.

Actions are indices into the observation's legal list (`Discrete(MAX_LEGAL)`), with
`action_masks()` marking the valid ones (sb3-contrib's MaskablePPO reads it). An index past
the legal count is refused, as the engine refuses an illegal tuple. The agent's seat
alternates between games, so it learns both; the reward is the agent's row's, summed over the
bot's moves in between (+1 / -1 at the end of a game; no shaping)."""

from __future__ import annotations

import gymnasium
import numpy as np

from ....rng import stream_seed
from ..bots import GREEDY, make_bot
from ..env import TCGEnv, feature_space
from ..layout import ACTION_WIDTH, DEFAULT_TURN_CAP, MAX_LEGAL, features_np, legal_actions
from .shared import legal_masks


class VersusBot(gymnasium.Env):
    metadata = {"render_modes": []}

    def __init__(self, seed: int = 0, bot: str = GREEDY, turn_cap: int = DEFAULT_TURN_CAP):
        super().__init__()
        self.env = TCGEnv(num_games=1, seed=seed, turn_cap=turn_cap)
        self.bot = make_bot(bot, self.env, stream_seed(seed, "second_side"))
        self.observation_space = feature_space()  # the peers' MLPs read float features
        self.action_space = gymnasium.spaces.Discrete(MAX_LEGAL)
        self.seed_value, self.games = seed, 0
        self.seat = 0
        self.obs = np.zeros_like(self.env.observations)
        self.actions = np.zeros((2, ACTION_WIDTH), dtype=np.int32)

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.seed_value, self.games = seed, 0
        # each (env seed, game) pair its own deal: envs seeded seed, seed+1, ... never share games
        deal = int(np.random.SeedSequence([self.seed_value, self.games]).generate_state(1)[0])
        self.obs, _ = self.env.reset(deal)
        self.seat = self.games % 2
        self.games += 1
        reward, done = self._bot_moves()
        if done:  # the bot cannot end a game before the agent's first move; a guard, not a path
            raise RuntimeError("the game ended before the agent's first decision")
        return features_np(self.obs[self.seat]), {}

    def action_masks(self) -> np.ndarray:
        return legal_masks(legal_actions(self.obs[self.seat][None])[1])[0]

    def step(self, index: int):
        legal, count = legal_actions(self.obs[self.seat][None])
        if not 0 <= int(index) < int(count[0]):
            raise ValueError(f"action index {index} is not legal: {int(count[0])} legal actions")
        reward, done = self._play(self.seat, legal[0, int(index)])
        if not done:
            more, done = self._bot_moves()
            reward += more
        return features_np(self.obs[self.seat]), reward, done, False, {}

    def _deciding_row(self) -> int:
        return int(np.flatnonzero(self.env.masks)[0])

    def _play(self, row: int, action: np.ndarray) -> tuple[float, bool]:
        """One env step with `action` for `row`: the agent's reward, and whether the game ended."""
        self.actions[:] = 0
        self.actions[row] = action
        obs, rewards, terminals, truncations, _ = self.env.step(self.actions)
        done = bool(terminals[self.seat] or truncations[self.seat])
        if not done:
            self.obs = obs
        return float(rewards[self.seat]), done

    def _bot_moves(self) -> tuple[float, bool]:
        """The bot plays until the agent decides or the game ends."""
        reward = 0.0
        while (row := self._deciding_row()) != self.seat:
            gained, done = self._play(row, self.bot.act(self.obs, np.array([row]))[0])
            reward += gained
            if done:
                return reward, True
        return reward, False
