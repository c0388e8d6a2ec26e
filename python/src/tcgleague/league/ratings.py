"""Who beats whom: the decayed payoff matrix and the OpenSkill ratings.

The payoff holds decayed (wins, draws, games) per ordered pair, decayed once per update (a game
from training, a whole evaluation match), so old results fade as the learner moves; the
learner-vs-member entries drive PFSP. Ratings are OpenSkill Plackett-Luce per id (members and
bots), updated game by game from evaluation matches and reported as mu, sigma and the
conservative mu - 3 sigma."""

from __future__ import annotations

from openskill.models import PlackettLuce

from ..scoring import score


class Payoff:
    """Decayed results per ordered pair (a, b): [wins of a, draws, games]. Each `update` first
    multiplies the pair's counts by `decay`, then adds the new results; win rate counts a draw
    as half a win, and is `prior` (0.5) for a pair that never met."""

    def __init__(self, decay: float):
        self.decay = float(decay)
        self.table: dict[tuple[str, str], list[float]] = {}
        self.points: dict[tuple[str, str], float] = {}  # decayed summed return of a vs b (poker: chips)

    def update(self, a: str, b: str, wins: float, losses: float, draws: float, points: float | None = None) -> None:
        """Results of a vs b; `points` a's summed return (zero-sum: b's is minus it), by default
        wins - losses (a game worth +-1, as Emberfront's are)."""
        points = wins - losses if points is None else points
        for x, y, w, p in ((a, b, wins, points), (b, a, losses, -points)):
            e = self.table.get((x, y), [0.0, 0.0, 0.0])
            self.table[(x, y)] = [
                e[0] * self.decay + w,
                e[1] * self.decay + draws,
                e[2] * self.decay + wins + losses + draws,
            ]
            self.points[(x, y)] = self.points.get((x, y), 0.0) * self.decay + p

    def winrate(self, a: str, b: str, prior: float = 0.5) -> float:
        """scoring.winrate of a vs b from the decayed counts; `prior` for a pair that never met."""
        w, d, n = self.table.get((a, b), (0.0, 0.0, 0.0))
        return score(w, d) / n if n > 0 else prior

    def games(self, a: str, b: str) -> float:
        return self.table.get((a, b), (0.0, 0.0, 0.0))[2]

    def points_per_game(self, a: str, b: str) -> float:
        """a's decayed mean return against b (poker: chips per game; Emberfront: 2 x win rate - 1)."""
        n = self.games(a, b)
        if n <= 0:
            return 0.0
        w, d, _ = self.table[(a, b)]
        return self.points.get((a, b), 2 * w + d - n) / n  # pairs saved before points: wins - losses

    def forget(self, keep) -> None:
        """Drops pairs involving an id not in `keep` (bounded state as members retire)."""
        keep = set(keep)
        self.table = {k: v for k, v in self.table.items() if k[0] in keep and k[1] in keep}
        self.points = {k: v for k, v in self.points.items() if k in self.table}

    def state_dict(self) -> list:
        return [[a, b, *v] for (a, b), v in sorted(self.table.items())]

    def points_state_dict(self) -> list:
        return [[a, b, p] for (a, b), p in sorted(self.points.items())]

    def load_state_dict(self, rows: list, points: list | None = None) -> None:
        self.table = {(a, b): [float(w), float(d), float(n)] for a, b, w, d, n in rows}
        self.points = {(a, b): float(p) for a, b, p in points or []}


def interleave(wins: int, losses: int, draws: int) -> list[int]:
    """Outcomes (1 win, -1 loss, 0 draw) spread evenly through the sequence: sequential
    rating updates depend on order, and 'all wins, then all losses' would end biased."""
    items = []
    for outcome, k in ((1, wins), (-1, losses), (0, draws)):
        items += [((i + 0.5) / k, outcome) for i in range(int(k))]
    return [o for _, o in sorted(items, key=lambda t: t[0])]


class Ratings:
    """OpenSkill Plackett-Luce ratings per id; a new id starts at the model's default."""

    def __init__(self):
        self.model = PlackettLuce()
        self.ratings: dict = {}

    def get(self, name: str):
        if name not in self.ratings:
            self.ratings[name] = self.model.rating(name=name)
        return self.ratings[name]

    def record(self, a: str, b: str, wins: int, losses: int, draws: int) -> None:
        for outcome in interleave(wins, losses, draws):
            ranks = [1, 2] if outcome > 0 else [2, 1] if outcome < 0 else [1, 1]
            [[ra], [rb]] = self.model.rate([[self.get(a)], [self.get(b)]], ranks=ranks)
            self.ratings[a], self.ratings[b] = ra, rb

    def mu(self, name: str) -> float:
        return float(self.get(name).mu)

    def sigma(self, name: str) -> float:
        return float(self.get(name).sigma)

    def conservative(self, name: str) -> float:
        """mu - 3 sigma: a rating the player is very probably above."""
        return self.mu(name) - 3.0 * self.sigma(name)

    def forget(self, keep) -> None:
        keep = set(keep)
        self.ratings = {k: v for k, v in self.ratings.items() if k in keep}

    def state_dict(self) -> dict:
        return {k: [float(r.mu), float(r.sigma)] for k, r in sorted(self.ratings.items())}

    def load_state_dict(self, state: dict) -> None:
        self.ratings = {
            k: self.model.rating(mu=float(mu), sigma=float(sigma), name=k) for k, (mu, sigma) in state.items()
        }


# ---------------------------------------------------------------------------------------------
