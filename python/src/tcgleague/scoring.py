"""What a result is worth: the one definition of a win rate and of its confidence interval.

"Win rate vs X" everywhere in tcgleague (evaluation, the league's baseline gate and promotion
rule, evaluate_checkpoint, the payoff matrix) is (wins + draws / 2) / games: a draw is half a
win, so a policy that only ever draws against X sits at exactly 0.5."""

from __future__ import annotations

import math
from dataclasses import dataclass

DRAW_WEIGHT = 0.5


def score(wins: float, draws: float) -> float:
    """Wins with draws counted as half a win."""
    return wins + DRAW_WEIGHT * draws


def winrate(wins: float, losses: float, draws: float, prior: float = 0.0) -> float:
    """score / games; `prior` when no game was played."""
    games = wins + losses + draws
    return score(wins, draws) / games if games > 0 else prior


def wilson_interval(wins: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a win rate from `wins` (a score: draws count half) out of `n`."""
    if n <= 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Tally:
    """Wins, losses and draws from one side's point of view."""

    wins: int = 0
    losses: int = 0
    draws: int = 0
    points: float | None = None  # the side's summed return (poker: chips); None: wins - losses

    @property
    def total_points(self) -> float:
        return float(self.wins - self.losses if self.points is None else self.points)

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def winrate(self) -> float:
        return winrate(self.wins, self.losses, self.draws)

    def wilson(self, z: float = 1.96) -> tuple[float, float]:
        return wilson_interval(score(self.wins, self.draws), self.games, z)

    def as_tuple(self) -> tuple[int, int, int]:
        return self.wins, self.losses, self.draws

    def as_row(self) -> dict:
        """The tally as a report's table row: counts, win rate and its Wilson interval."""
        low, high = self.wilson()
        return {
            "games": self.games,
            "wins": self.wins,
            "losses": self.losses,
            "draws": self.draws,
            "winrate": self.winrate,
            "wilson_low": low,
            "wilson_high": high,
        }

    def with_game(self, win: bool, loss: bool) -> Tally:
        """This tally and one more game (neither a win nor a loss is a draw)."""
        return Tally(self.wins + bool(win), self.losses + bool(loss), self.draws + (not win and not loss))
