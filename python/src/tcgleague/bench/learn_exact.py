"""`bench learn`'s judge for a game whose exploitability is exact (Leduc, Kuhn, Liar's Dice):
each final checkpoint's exploitability by its game's judge (`Game.judge`: OpenSpiel's, in the
game's points per game, lower is better), its curve (the trainer's `eval/exploitability` every --eval-every
steps), and with --league the two deliverables head to head through the game's own runner (duplicate
deals, points per game). There is no best response to train and no held-out bot panel to play:
OpenSpiel's best response is the exact one."""

from __future__ import annotations

from pathlib import Path

from ..average import AVERAGE_FILE
from ..checkpoint import load_checkpoint
from ..checkpoint.files import read_state
from ..config import Config
from ..fingerprint import checkpoint_game
from ..game import game_named, game_of
from ..league.mixture import MIXTURE_FILE, deployed_side
from ..rng import stream_seed

# a delivered mixture file -> (the trainer's metric that judged it along the way, its name in the table)
DELIVERED_CURVES = {MIXTURE_FILE: "eval/mixture_exploitability", AVERAGE_FILE: "eval/average_exploitability"}
DELIVERED_NAMES = {MIXTURE_FILE: "Nash mixture", AVERAGE_FILE: "average policy"}
TARGET = 0.1  # the league's final exploitability we ask for (Leduc's chips per game): a tenth of a chip from Nash


def judged_exactly(cfg: Config) -> bool:
    return game_of(cfg).judge is not None


def curve_of(metrics: list[dict], key: str) -> list[dict]:
    return [{"step": m["global_step"], "exploitability": m[key]} for m in metrics if key in m]


def final_figures(checkpoint: Path, metrics: list[dict], mixture: Path | None = None) -> dict:
    """What the run delivers judged exactly: its final learner's exploitability, NashConv and
    curve (eval/exploitability) or, with `mixture` (the league's league_policy.pt or the
    average policy's average_policy.pt), the mixture's (its DELIVERED_CURVES metric), the
    learner's then kept as `learner_*`."""
    game = game_named(checkpoint_game(read_state(checkpoint)))
    judged = game.judge(checkpoint)
    learner = {"exploitability": judged.exploitability, "nash_conv": judged.nash_conv, "points_unit": game.points_unit}
    learner["curve"] = curve_of(metrics, "eval/exploitability")
    if mixture is None:
        return learner
    delivered = game.judge(mixture)
    return {
        "exploitability": delivered.exploitability,
        "nash_conv": delivered.nash_conv,
        "curve": curve_of(metrics, DELIVERED_CURVES[mixture.name]),
        "deliverable": str(mixture),
        "points_unit": game.points_unit,
        **{f"learner_{k}": v for k, v in learner.items() if k != "points_unit"},
    }


def rows_of(f: dict, name: str) -> list[tuple[str, str, str]]:
    def curve(points: list[dict]) -> str:
        return " ".join(f"{p['step'] / 1e6:.2f}M:{p['exploitability']:.3f}" for p in points) or "(no curve points)"

    mixture = "learner_exploitability" in f  # final_figures keeps the learner's apart when a mixture is delivered
    what = DELIVERED_NAMES[Path(f["deliverable"]).name] if mixture else "final learner"
    rows = [
        (f"{name}: steps / minutes / SPS", f"{f['steps']:,} / {f['minutes']:.1f} / {f['sps']:,.0f}", ""),
        (
            f"{name}: exact exploitability, {what} ({f['points_unit']} per game)",
            f"{f['exploitability']:.4f}",
            "lower is better",
        ),
        (f"{name}: curve", curve(f["curve"]), ""),
    ]
    if mixture:
        rows.append((f"{name}: its last learner alone", f"{f['learner_exploitability']:.4f}", "lower is better"))
        rows.append((f"{name}: the learner's curve", curve(f["learner_curve"]), ""))
    return rows


def head_to_head(cfg: Config, league: str, selfplay: str, episodes: int, seed: int) -> dict:
    """The league's deliverable vs self-play's, duplicate deals: a checkpoint at its saved
    sampler, a Nash mixture (league_policy.pt) drawing one member per game."""
    sides = []
    for path, side_seed in ((league, seed), (selfplay, stream_seed(seed, "second_side"))):
        loaded = load_checkpoint(path, log=lambda _: None, mixture_ok=True)
        sides.append(deployed_side(loaded, side_seed, name=path, log=lambda _: None))
    report = game_of(cfg).runner.play(*sides, episodes, seed)
    low, high = report.tally.wilson()
    return {
        "winrate_league_vs_selfplay": report.winrate,
        "wilson_low_league_vs_selfplay": low,
        "wilson_high_league_vs_selfplay": high,
        "games_league_vs_selfplay": report.games,
        "chips_per_game_league_vs_selfplay": report.reward_per_game,
    }


def league_rows(league: dict, selfplay: dict, r: dict) -> list[tuple[str, str, str]]:
    unit = league["points_unit"]
    head = (
        f"{r['winrate_league_vs_selfplay']:.3f} [{r['wilson_low_league_vs_selfplay']:.3f}, "
        f"{r['wilson_high_league_vs_selfplay']:.3f}], {r['chips_per_game_league_vs_selfplay']:+.3f} {unit} per game"
    )
    verdict = league["exploitability"] < selfplay["exploitability"] and league["exploitability"] < TARGET
    return [
        *rows_of(league, "league"),
        *rows_of(selfplay, "self-play"),
        (f"league vs self-play ({r['games_league_vs_selfplay']} duplicate games)", head, "> 0.5"),
        (
            "league below self-play and below the target",
            "yes" if verdict else "no",
            f"< self-play and < {TARGET}",
        ),
    ]
