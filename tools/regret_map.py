"""Where a judged policy's exploitability sits, and what an entropy bonus costs exactly (Leduc,
Kuhn, Liar's Dice: the games OpenSpiel judges).

    python tools/regret_map.py RUN_DIR/average_policy.pt --top 10
    python tools/regret_map.py --game leduc --logit-equilibria 0.5 0.3 0.2
    python tools/regret_map.py --game leduc --logit-equilibria 0.5 0.3 0.2 --explore-share 0.1
    python tools/regret_map.py --game leduc --logit-equilibria 0.2 --explore-share 0.1 --explore-temperature 3

For a file (a checkpoint, a mixture such as average_policy.pt or league_policy.pt, a policy table):
- its exploitability, and its counterfactual regret against itself at every information state
  (what deviating there alone would gain, weighted by the opponent's and chance's reach), summed
  over states grouped by the acting player's own reach of them. Policy gradient moves a state in
  proportion to how often it is visited (own reach times the rest), so regret left at states
  the policy rarely reaches itself, or reaches only when its opponent rarely goes there, is
  regret it learns slowly;
- the temperature T (points) whose logit response to its own action values, softmax(Q / T), it is
  closest to (visit-weighted KL): what it plays like, an entropy bonus being a temperature;
- the states with the most regret, with their reaches, probabilities and action values.

With --logit-equilibria T ...: the exploitability of the game's logit (agent quantal response)
equilibrium at each temperature, found by damped logit responses over the exact tree, warmest
first, each from the last one's equilibrium. That is the fixed point policy gradient with an
entropy bonus of strength T (in the game's points per decision) settles on: the least
exploitability such a learner can reach, however long it trains. With --explore-share EPS each
seat responds to an opponent that plays a uniform legal action at that share of its decisions:
the fixed point when the answers to [train] explore_share's exploring draws are trained on; with
--explore-temperature T as well, an opponent whose exploring draws are its own policy at
temperature T ([train] explore_temperature).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyspiel

from tcgleague.checkpoint import CheckpointError
from tcgleague.errors import UserInputError
from tcgleague.exact import judged_games, played_game
from tcgleague.game import game_named
from tcgleague.openspiel_judge import JudgedGame, StatePolicy, file_policy, measure, openspiel_game, table_policy

OWN_REACH_BANDS = (0.0, 0.01, 0.05, 0.2, 0.5, 1.0)
TEMPERATURES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0)  # the grid the implied temperature is read on


@dataclass
class StateFigures:
    """One information state of the acting player, summed over the histories it holds."""

    key: str
    own_reach: float
    """the acting player's probability of its own actions to get here"""
    legal: list[int]
    """OpenSpiel's ids of the legal actions"""
    probabilities: np.ndarray
    """the policy's, over the legal actions"""
    others_reach: float
    """the opponent's and chance's probability of reaching it, summed over its histories"""
    weighted_values: np.ndarray
    """the acting player's value of each legal action, weighted by others_reach (summed)"""

    @property
    def values(self) -> np.ndarray:
        """Q: each action's value given the state is reached"""
        return self.weighted_values / max(self.others_reach, 1e-300)

    @property
    def regret(self) -> float:
        """the counterfactual regret of the policy here: what the best action alone gains"""
        return self.others_reach * float(self.values.max() - self.probabilities @ self.values)

    @property
    def visits(self) -> float:
        return self.own_reach * self.others_reach


def exploring_draw(probabilities: np.ndarray, temperature: float) -> np.ndarray:
    """An exploring decision's distribution over the legal actions: uniform (temperature 0), or
    the policy's at `temperature`, each probability to the power 1 / temperature, renormalised
    (the sampler's softmax(logits / temperature))."""
    if temperature == 0.0:
        return np.full(len(probabilities), 1.0 / len(probabilities))
    tempered = np.clip(probabilities, 1e-12, 1.0) ** (1.0 / temperature)
    return tempered / tempered.sum()


def state_figures(
    spiel: pyspiel.Game, policy: StatePolicy, explore: float = 0.0, explore_temperature: float = 0.0
) -> list[StateFigures]:
    """Every information state's figures under `policy` playing both seats (one walk of the tree).
    With `explore` > 0 each seat's values and others' reach are those against an opponent that
    draws at that share of its decisions from `exploring_draw` ([train] explore_share's exploring
    draws, which the answering seat trains on), its own play staying `policy`'s."""
    figures: dict[str, StateFigures] = {}

    def visit(state: pyspiel.State, reach: np.ndarray, trembled: np.ndarray) -> np.ndarray:
        if state.is_terminal():
            return np.asarray(state.returns())
        if state.is_chance_node():
            return sum(
                p * visit(state.child(a), reach * [1.0, 1.0, p], trembled * [1.0, 1.0, p])
                for a, p in state.chance_outcomes()
            )
        player, legal = state.current_player(), state.legal_actions()
        given = policy(state)
        probabilities = np.array([given.get(a, 0.0) for a in legal])
        behaviour = (1.0 - explore) * probabilities + explore * exploring_draw(probabilities, explore_temperature)
        values = []
        for action, p, q in zip(legal, probabilities, behaviour):
            child_reach, child_trembled = reach.copy(), trembled.copy()
            child_reach[player] *= p
            child_trembled[player] *= q
            values.append(visit(state.child(action), child_reach, child_trembled))
        values = np.stack(values)  # [actions, players]
        key = state.information_state_string()
        f = figures.get(key)
        if f is None:
            f = figures[key] = StateFigures(key, reach[player], legal, probabilities, 0.0, np.zeros(len(legal)))
        others = float(np.prod(np.delete(trembled, player)))
        f.others_reach += others
        f.weighted_values += others * values[:, player]
        out = behaviour @ values  # the other seats' values: this seat as they meet it
        out[player] = probabilities @ values[:, player]
        return out

    visit(spiel.new_initial_state(), np.ones(3), np.ones(3))
    return list(figures.values())


def logit_response(values: np.ndarray, temperature: float) -> np.ndarray:
    z = values / temperature
    z = np.exp(z - z.max())
    return z / z.sum()


def closeness(figures: list[StateFigures], temperature: float) -> float:
    """Visit-weighted KL(policy || its logit response at `temperature`)."""
    total = 0.0
    for f in figures:
        p = np.clip(f.probabilities, 1e-12, 1.0)
        q = np.clip(logit_response(f.values, temperature), 1e-12, 1.0)
        total += f.visits * float(p @ np.log(p / q))
    return total


def logit_equilibrium_exploitability(
    game: JudgedGame,
    temperature: float,
    iterations: int,
    step: float,
    table: dict[str, list[float]] | None = None,
    explore: float = 0.0,
    explore_temperature: float = 0.0,
) -> tuple[float, float]:
    """(exploitability, the last iteration's largest probability change) of damped logit
    responses: pi <- (1 - step) pi + step softmax(Q_pi / T) at every state, from `table` (uniform
    play at states it lacks; left holding the result). A change near 0 says the iteration settled
    on the equilibrium; a larger one that it circles it (small temperatures: more iterations, a
    smaller step, or a start at a warmer temperature's equilibrium). With `explore`, each seat
    responds to an opponent exploring that share of its decisions (`state_figures`): the fixed
    point of a learner whose answers train on its opponent's exploring draws, judged as it plays."""
    spiel = openspiel_game(game)
    table = {} if table is None else table

    def current(state: pyspiel.State) -> dict[int, float]:
        legal = state.legal_actions()
        row = table.get(state.information_state_string())
        return {a: (row[a] if row else 1.0 / len(legal)) for a in legal}

    change = 0.0
    for _ in range(iterations):
        figures = state_figures(spiel, current, explore, explore_temperature)
        change = 0.0
        for f in figures:
            new = (1.0 - step) * f.probabilities + step * logit_response(f.values, temperature)
            change = max(change, float(np.abs(new - f.probabilities).max()))
            row = np.zeros(spiel.num_distinct_actions())
            row[f.legal] = new
            table[f.key] = row.tolist()
    return measure(game, table_policy(table)).exploitability, change


def judged_game_of(path: Path | None, name: str | None) -> JudgedGame:
    """The game `name` names, else the one `path` plays (a policy table names none)."""
    name = name or (played_game(path) if path is not None else None)
    if name is None:
        raise UserInputError("give --game NAME: a policy table does not say which game it plays")
    judged = game_named(name).judged_game
    if judged is None:
        raise UserInputError(f"{name} has no exact judge; the judged games: {', '.join(judged_games())}")
    return judged


def report(path: Path, game: JudgedGame, top: int) -> None:
    policy = file_policy(path, game)
    print(f"{path}: exploitability {measure(game, policy).exploitability:.4f} ({game.name}, points per game)")
    figures = state_figures(openspiel_game(game), policy)
    regret = np.array([f.regret for f in figures])
    own = np.array([f.own_reach for f in figures])
    visits = np.array([f.visits for f in figures])
    print(f"counterfactual regret against itself, summed over {len(figures)} information states: {regret.sum():.4f}")
    print("  own reach      states   regret   visits per game")
    for low, high in zip(OWN_REACH_BANDS, OWN_REACH_BANDS[1:]):
        band = (own >= low) & ((own < high) if high < 1.0 else (own <= high))
        print(
            f"  [{low:.2f}, {high:.2f}{']' if high == 1.0 else ')'}  {band.sum():7d}  {regret[band].sum():7.4f}  {visits[band].sum():8.4f}"
        )
    fits = {t: closeness(figures, t) for t in TEMPERATURES}
    best = min(fits, key=fits.get)
    print(
        f"closest logit response softmax(Q / T): T = {best} (visit-weighted KL {fits[best]:.4f}; grid {TEMPERATURES})"
    )
    print(f"the {top} states with the most regret:")
    for i in np.argsort(-regret)[:top]:
        f = figures[i]
        print(
            f"  {f.key!r}: regret {f.regret:.4f}, own reach {f.own_reach:.3f}, others' reach {f.others_reach:.4f}, "
            f"probabilities {np.round(f.probabilities, 3).tolist()}, values {np.round(f.values, 2).tolist()}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("policy", nargs="?", type=Path, help="a checkpoint, mixture or policy table file")
    p.add_argument("--game", help="the game (default: the file's)")
    p.add_argument("--top", type=int, default=10, help="states with the most regret to list")
    p.add_argument("--logit-equilibria", type=float, nargs="+", metavar="T", default=[], help="temperatures (points)")
    p.add_argument(
        "--explore-share", type=float, default=0.0, help="the logit equilibria against an opponent exploring this share"
    )
    p.add_argument(
        "--explore-temperature", type=float, default=0.0, help="its exploring draws at this temperature (0: uniform)"
    )
    p.add_argument("--iterations", type=int, default=1500, help="damped logit responses per temperature")
    p.add_argument("--step", type=float, default=0.05, help="the damping: the share of the response taken")
    args = p.parse_args(argv)
    try:
        if args.policy is None and not args.logit_equilibria:
            raise UserInputError("give a policy file, --logit-equilibria T ..., or both")
        if any(t <= 0 for t in args.logit_equilibria):
            raise UserInputError(f"--logit-equilibria: temperatures must be > 0, got {args.logit_equilibria}")
        if not 0.0 <= args.explore_share < 1.0:
            raise UserInputError(f"--explore-share must be in [0, 1), got {args.explore_share}")
        if not (args.explore_temperature == 0.0 or args.explore_temperature >= 1.0):
            raise UserInputError(f"--explore-temperature must be 0 (uniform) or >= 1, got {args.explore_temperature}")
        game = judged_game_of(args.policy, args.game)
        if args.policy is not None:
            report(args.policy, game, args.top)
        # continuation: each temperature starts from the warmer one's equilibrium, which it is near;
        # from uniform play the damped responses circle the cool ones instead of settling
        solution: dict[str, list[float]] = {}
        for t in sorted(args.logit_equilibria, reverse=True):
            exploitability, change = logit_equilibrium_exploitability(
                game, t, args.iterations, args.step, solution, args.explore_share, args.explore_temperature
            )
            drawn = f" at temperature {args.explore_temperature:g}" if args.explore_temperature else ""
            against = f", against {args.explore_share:g} exploring{drawn}" if args.explore_share else ""
            print(
                f"logit equilibrium at T = {t}{against}: exploitability {exploitability:.4f} (last change {change:.1e})"
            )
    except (UserInputError, CheckpointError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
