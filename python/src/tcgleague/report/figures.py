"""The report's figures, one function each: `RunData` in, a matplotlib Figure out (or None when
the run has no data for it). Drawn with the object API on the Agg canvas: no pyplot, no global
figure state, no display needed. Every figure is FIGURE_SIZE at DPI, so every PNG is 960 x 540."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..league.matchmaking import LEARNER
from ..scoring import score, wilson_interval
from .data import RunData

FIGURE_SIZE = (9.6, 5.4)  # inches
DPI = 100
PIXELS = (int(FIGURE_SIZE[0] * DPI), int(FIGURE_SIZE[1] * DPI))


def new_figure(rows: int = 1, cols: int = 1) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=FIGURE_SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def steps_axis(ax: Axes, title: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("global step")
    ax.grid(alpha=0.3)


def lines(ax: Axes, run: RunData, keys: list[str], title: str) -> bool:
    """Each metric of `keys` the run has, over steps; False when it has none of them."""
    drawn = False
    for key in keys:
        steps, values = run.series(key)
        if steps:
            ax.plot(steps, values, label=key.split("/", 1)[1])
            drawn = True
    steps_axis(ax, title)
    if drawn:
        ax.legend(fontsize=8)
    return drawn


# ---- training ------------------------------------------------------------------------------------
def throughput(run: RunData) -> Figure | None:
    fig, ax = new_figure()
    if not lines(ax[0, 0], run, ["perf/sps"], "learner decisions per second"):
        return None
    return fig


def losses(run: RunData) -> Figure | None:
    fig, ax = new_figure(2, 2)
    panels = [
        (["losses/policy_loss"], "policy loss"),
        (["losses/value_loss"], "value loss"),
        (["losses/entropy"], "entropy (update)"),
        (["losses/approx_kl", "losses/clipfrac"], "approx KL, clip fraction"),
    ]
    drawn = [lines(a, run, keys, title) for a, (keys, title) in zip(ax.flat, panels)]
    return fig if any(drawn) else None


def exploration(run: RunData) -> Figure | None:
    fig, ax = new_figure(1, 2)
    rollout = lines(
        ax[0, 0], run, ["sampler/rollout_entropy", "sampler/rollout_noop_rate"], "rollout entropy, pass rate"
    )
    anneals = ["sampler/subaction_temperature", "sampler/smoothing_eps", "anneal/ent_coef"]
    annealed = lines(ax[0, 1], run, anneals, "sampler anneals")
    return fig if rollout or annealed else None


def evaluation(run: RunData) -> Figure | None:
    """eval/winrate_vs_<bot> over steps with the 95% Wilson band of its eval/games_vs_<bot>."""
    fig, ax = new_figure()
    drawn = False
    for key in run.keys("eval/winrate_vs_"):
        who = key.removeprefix("eval/winrate_vs_")
        rows = [m for m in run.metrics if m.get(key) is not None and m.get(f"eval/games_vs_{who}")]
        if not rows:
            continue
        steps = [m["global_step"] for m in rows]
        rates = np.array([m[key] for m in rows])
        bands = np.array([wilson_interval(m[key] * m[f"eval/games_vs_{who}"], m[f"eval/games_vs_{who}"]) for m in rows])
        ax[0, 0].plot(steps, rates, marker="o", label=f"vs {who}")
        ax[0, 0].fill_between(steps, bands[:, 0], bands[:, 1], alpha=0.2)
        drawn = True
    if not drawn:
        return None
    steps_axis(ax[0, 0], "win rate vs the bots (duplicate matches, 95% Wilson band)")
    ax[0, 0].set_ylim(0, 1)
    ax[0, 0].axhline(0.5, color="grey", lw=0.8, ls="--")
    ax[0, 0].legend(fontsize=8)
    return fig


def exploitability(run: RunData) -> Figure | None:
    """Each best response's win rate vs its target over its training steps, with the 95% Wilson
    band (tcgleague.exploit reports in the run directory): lower is less exploitable."""
    if not run.exploits:
        return None
    fig, ax = new_figure()
    for name, curve in run.exploits.items():
        steps = [p["step"] for p in curve]
        ax[0, 0].plot(steps, [p["winrate"] for p in curve], marker="o", label=name)
        ax[0, 0].fill_between(steps, [p["wilson_low"] for p in curve], [p["wilson_high"] for p in curve], alpha=0.2)
    steps_axis(ax[0, 0], "best response's win rate vs the target (95% Wilson band; lower = less exploitable)")
    ax[0, 0].set_xlabel("best response's training steps")
    ax[0, 0].set_ylim(0, 1)
    ax[0, 0].axhline(0.5, color="grey", lw=0.8, ls="--")
    ax[0, 0].legend(fontsize=8)
    return fig


def exact_exploitability(run: RunData) -> Figure | None:
    """eval/exploitability over steps: a judged game's exact figure (OpenSpiel's, per game; 0 = a
    Nash equilibrium), and its deliverables' (the Nash mixture, the average policy)."""
    fig, ax = new_figure()
    # the learner, the league's Nash mixture, the run's average policy
    judged = ["eval/exploitability", "eval/mixture_exploitability", "eval/average_exploitability"]
    if not lines(ax[0, 0], run, judged, "exact exploitability (chips per game; 0 = Nash)"):
        return None
    ax[0, 0].set_ylim(bottom=0)
    return fig


# ---- league ---------------------------------------------------------------------------------------
def payoff_ids(league: dict, bots: tuple[str, ...]) -> list[str]:
    """Heatmap order: the learner, the bots, then members oldest first (who the payoff knows)."""
    known = {row[0] for row in league["payoff"]} | {row[1] for row in league["payoff"]}
    members = [m["id"] for m in sorted(league.get("members", []), key=lambda m: m["order"])]
    ordered = [LEARNER, *bots, *members]
    return [i for i in ordered if i in known] + sorted(known - set(ordered))


def payoff(run: RunData) -> Figure | None:
    """Decayed win rate of each row vs each column (draws half), annotated; blank where they never met."""
    if not run.league or not run.league.get("payoff"):
        return None
    ids = payoff_ids(run.league, run.bots)
    index = {who: i for i, who in enumerate(ids)}
    rates = np.full((len(ids), len(ids)), np.nan)
    for a, b, wins, draws, games in run.league["payoff"]:  # ratings.Payoff rows: a's decayed results vs b
        if games > 0:
            rates[index[a], index[b]] = score(wins, draws) / games
    fig, ax = new_figure()
    heatmap(ax[0, 0], rates, ids, ids, "decayed payoff: row's win rate vs column")
    return fig


def heatmap(ax: Axes, values: np.ndarray, rows: list[str], cols: list[str], title: str) -> None:
    image = ax.imshow(values, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_title(title, fontsize=10)
    if len(rows) * len(cols) <= 400:
        for (i, j), v in np.ndenumerate(values):
            if not np.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.figure.colorbar(image, ax=ax, fraction=0.04)


def promotion_steps(run: RunData) -> list[float]:
    """The global steps at which league/promotions went up."""
    out, before = [], 0.0
    for step, count in zip(*run.series("league/promotions")):
        if count > before:
            out.append(step)
        before = count
    return out


def ratings(run: RunData) -> Figure | None:
    """Each rated id's OpenSkill mu over steps with its mu +- 3 sigma band; promotions marked."""
    keys = run.keys("league/rating_mu/")
    if not keys:
        return None
    fig, ax = new_figure()
    ids = [k.removeprefix("league/rating_mu/") for k in keys]
    members = [who for who in ids if who not in run.bots]
    shades = colormaps["viridis"](np.linspace(0.0, 0.9, max(1, len(members))))  # oldest dark, newest light
    for who in ids:
        steps, mu, sigma = run.series(f"league/rating_mu/{who}", f"league/rating_sigma/{who}")
        mu, sigma = np.array(mu), np.array(sigma)
        bot = who in run.bots
        color = "black" if bot else shades[members.index(who)]
        ax[0, 0].plot(steps, mu, label=who, color=color, ls="--" if bot else "-")
        ax[0, 0].fill_between(steps, mu - 3 * sigma, mu + 3 * sigma, alpha=0.06, color=color)
    for k, step in enumerate(promotion_steps(run)):
        ax[0, 0].axvline(step, color="black", lw=0.8, ls=":", label="promotion" if k == 0 else None)
    steps_axis(ax[0, 0], "ratings: OpenSkill mu, band mu +- 3 sigma")
    ax[0, 0].legend(fontsize=7, ncol=2)
    return fig


def nash_weights(run: RunData) -> Figure | None:
    """The pool's meta-Nash mixture over steps (league/nash_weight/<member>): who the league's
    opponents are drawn from (opponent_sampling = nash) and what league_policy.pt plays."""
    keys = run.keys("league/nash_weight/")
    if not keys:
        return None
    fig, ax = new_figure()
    shades = colormaps["viridis"](np.linspace(0.0, 0.9, len(keys)))  # oldest dark, newest light
    for key, color in zip(keys, shades):
        steps, weights = run.series(key)
        ax[0, 0].plot(steps, weights, label=key.removeprefix("league/nash_weight/"), color=color)
    steps_axis(ax[0, 0], "meta-Nash weight of each member")
    ax[0, 0].set_ylim(0, 1)
    ax[0, 0].legend(fontsize=7, ncol=2)
    return fig


def pool_timeline(run: RunData) -> Figure | None:
    """When each member was in the pool: the epochs its rating was reported."""
    members = [k.removeprefix("league/rating_mu/") for k in run.keys("league/rating_mu/")]
    members = [m for m in members if m not in run.bots]
    if not members:
        return None
    fig, ax = new_figure()
    all_steps = [m["global_step"] for m in run.metrics]
    width = (all_steps[-1] - all_steps[0]) / max(1, len(all_steps) - 1) if len(all_steps) > 1 else 1.0
    for row, who in enumerate(members):
        steps, _ = run.series(f"league/rating_mu/{who}")
        ax[0, 0].broken_barh([(s - width, width) for s in steps], (row - 0.4, 0.8))
    ax[0, 0].set_yticks(range(len(members)), members, fontsize=8)
    steps_axis(ax[0, 0], "pool membership")
    return fig


# ---- evaluations ------------------------------------------------------------------------------------
def evaluation_tables(report: dict) -> Figure:
    """An evaluate_checkpoint report: the learner's deck x the opponent's deck, and seats / turn order."""
    pairs = report.get("per_deck_pair") or {}
    decks = sorted(set(pairs) | {o for row in pairs.values() for o in row})
    fig, ax = new_figure(1, 2)
    if decks:
        values = np.array([[pairs.get(d, {}).get(o, {}).get("winrate", np.nan) for o in decks] for d in decks])
        heatmap(ax[0, 0], values, decks, decks, "learner's deck (row) vs opponent's deck")
    else:
        ax[0, 0].set_title("no deck pairs in this report (evaluated before they were recorded)", fontsize=9)
    sides = {**report.get("per_seat", {}), **report.get("per_turn_order", {})}
    if sides:
        names = list(sides)
        heatmap(ax[0, 1], np.array([[sides[n]["winrate"]] for n in names]), names, ["win rate"], "seat, turn order")
    else:
        ax[0, 1].set_title("no seat or turn-order results in this report", fontsize=9)
    checkpoint = Path(str(report.get("checkpoint", "?"))).name
    fig.suptitle(f"{checkpoint} vs {Path(str(report['opponent'])).name}: win rate {report['winrate']:.3f}", fontsize=9)
    return fig


@dataclass(frozen=True)
class FigureSpec:
    name: str  # the PNG's file stem
    title: str
    draw: Callable[[RunData], Figure | None]


TRAINING = (
    FigureSpec("throughput", "Throughput", throughput),
    FigureSpec("losses", "PPO losses", losses),
    FigureSpec("exploration", "Entropy, pass rate and sampler anneals", exploration),
    FigureSpec("evaluation", "Win rate vs the bots", evaluation),
    FigureSpec("exploitability", "Exploitability: win rate of best responses", exploitability),
    FigureSpec("exact_exploitability", "Exact exploitability (OpenSpiel)", exact_exploitability),
)
LEAGUE = (
    FigureSpec("payoff", "Payoff (who beats whom)", payoff),
    FigureSpec("ratings", "Ratings over time", ratings),
    FigureSpec("pool", "Pool membership", pool_timeline),
    FigureSpec("nash", "The league's Nash mixture", nash_weights),
)
