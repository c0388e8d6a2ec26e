"""The population's meta-Nash: the mixture over members that no member beats (PSRO's meta-solver).

The league's last learner is one iterate of a game that cycles; fictitious play and PSRO converge
in their *mixture*. The meta-game is the symmetric zero-sum game whose pure strategies are the
members and whose payoff is a member's mean return against another (ratings.Payoff's
`points_per_game`: chips per game in poker - a win rate would favour a policy that wins many
small pots and loses big ones -, 2 x win rate - 1 in Emberfront), from the league's decayed payoff. Its Nash equilibrium is found
by predictive regret matching+ in self-play with linearly weighted averaging (Farina, Kroer and
Sandholm 2021: regret matching+ whose next strategy also counts the last round's regrets; its
average converges to an equilibrium of a zero-sum matrix game, in practice far faster than plain
regret matching: 1e-4 on rock-paper-scissors with a dominated fourth strategy in 5,000 rounds).

Uncertainty: an entry measured on fewer than `min_games` games is left out, i.e. taken as even (0),
so a pair that barely met cannot carry the mixture; what remains is the noise of a mean over at
least `min_games` duplicate games (Emberfront, 256 games: +-0.06 at one standard error; Leduc
+-0.15 chips). Against that noise, `temperature` (`[league] nash_temperature`, in the payoff's
points) solves for the meta-game's logit equilibrium instead, the mixture x = softmax(A x / T):
members whose payoffs differ by less than T share the weight rather than the noise's winner
taking it, and members that lose by several T weigh nothing."""

from __future__ import annotations

import numpy as np

ITERATIONS = 5_000  # rounds: < 1e-3 meta-game exploitability on the tests' matrices


def solve_symmetric(payoff: np.ndarray, iterations: int = ITERATIONS, temperature: float = 0.0) -> np.ndarray:
    """The meta-Nash mixture of a symmetric zero-sum game: `payoff[i, j]` what strategy i gains
    against j (antisymmetrised here, so payoff[j, i] = -payoff[i, j] whatever was measured); with
    `temperature` > 0 its logit equilibrium at that temperature (`logit_equilibrium`)."""
    a = np.asarray(payoff, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"a meta-game's payoff is a square matrix, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("a meta-game's payoff has non-finite entries")
    n = len(a)
    if n == 0:
        return np.zeros(0)
    a = 0.5 * (a - a.T)
    if temperature > 0:
        return logit_equilibrium(a, temperature, iterations)
    regrets, last = np.zeros(n), np.zeros(n)
    average = np.zeros(n)
    for t in range(1, iterations + 1):
        positive = np.maximum(regrets + last, 0.0)  # predictive: the last round's regrets again
        total = positive.sum()
        strategy = positive / total if total > 0 else np.full(n, 1.0 / n)
        values = a @ strategy  # each pure strategy against the current mixture
        last = values - strategy @ values
        regrets = np.maximum(regrets + last, 0.0)  # RM+: regrets floored at 0
        average += t * strategy
    return average / average.sum()


def logit_equilibrium(a: np.ndarray, temperature: float, iterations: int) -> np.ndarray:
    """x = softmax(a x / temperature) of an antisymmetric `a`, by magnetic mirror descent toward
    uniform (Sokota et al. 2023: x <- (x exp(eta a x))^(1 / (1 + eta T)), normalised), which
    converges linearly to the regularized game's equilibrium for eta <= T / |a|^2."""
    n, scale = len(a), float(np.abs(a).max())
    eta = min(1.0, temperature / max(scale * scale, 1e-12))
    log_x = np.full(n, -np.log(n))
    for _ in range(iterations):
        log_x = (log_x + eta * (a @ np.exp(log_x))) / (1.0 + eta * temperature)
        log_x -= np.logaddexp.reduce(log_x)
    return np.exp(log_x)


def exploitability(payoff: np.ndarray, mixture: np.ndarray) -> float:
    """How much the best pure strategy gains against `mixture` (0 at the meta-Nash)."""
    a = np.asarray(payoff, dtype=np.float64)
    a = 0.5 * (a - a.T)
    return float(np.max(a @ mixture))


def payoff_matrix(ids: list[str], value, games, min_games: float) -> np.ndarray:
    """The meta-game's payoff among `ids`: `value(a, b)` (a's mean return against b) where a and b
    met on at least `min_games` games (`games(a, b)`), else 0 (left out)."""
    n = len(ids)
    matrix = np.zeros((n, n))
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if i != j and games(a, b) >= min_games:
                matrix[i, j] = value(a, b)
    return matrix
