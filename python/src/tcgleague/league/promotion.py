"""When a candidate becomes champion, and which members the pool keeps.

A candidate is *promoted* only when
    * it played >= promotion_min_games games vs the champion and the Wilson lower bound
      (z = promotion_z; scoring.winrate: draws count half) of its win rate clears
      promotion_min_winrate - a point estimate over 64 games would promote lucky noise - and
    * its win rate vs every baseline reaches baseline_min_winrate (a champion that loses to the
      greedy bot is not a champion, whatever it does vs its predecessor).
The first candidate has no champion to beat; only the baseline gate applies. Every decision
carries its reason ("wilson lower bound 0.48 < 0.55 over 64 games", "baseline gate: 0.41 vs
greedy < 0.6")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..config import LeagueSection
from ..scoring import Tally


@dataclass
class Decision:
    candidate: str
    promoted: bool
    reason: str
    champion_before: str | None
    vs_champion: tuple[int, int, int] | None  # candidate's (wins, losses, draws)
    vs_baselines: dict[str, tuple[int, int, int]]
    lower_bound: float | None = None


def decide(
    cfg: LeagueSection, candidate: str, champion: str | None, vs_champion: Tally | None, vs_baselines: dict[str, Tally]
) -> Decision:
    """The promotion rule ([league] keys in `cfg`) on given results; plays nothing."""
    reasons, lower = [], None
    if vs_champion is not None:
        n = vs_champion.games
        if n < cfg.promotion_min_games:
            reasons.append(f"only {n} games < {cfg.promotion_min_games}")
        else:
            lower = vs_champion.wilson(cfg.promotion_z)[0]
            if lower < cfg.promotion_min_winrate:
                reasons.append(f"wilson lower bound {lower:.2f} < {cfg.promotion_min_winrate:g} over {n} games")
    for bot, result in vs_baselines.items():
        rate = result.winrate
        if rate < cfg.baseline_min_winrate:
            reasons.append(f"baseline gate: {rate:.2f} vs {bot} < {cfg.baseline_min_winrate:g}")
    promoted = not reasons
    if not promoted:
        reason = "; ".join(reasons)
    elif vs_champion is None:
        reason = "promoted: first champion (passed the baseline gate)"
    else:
        reason = (
            f"promoted: wilson lower bound {lower:.2f} >= {cfg.promotion_min_winrate:g} over {vs_champion.games} games"
        )
    return Decision(
        candidate,
        promoted,
        reason,
        champion,
        vs_champion.as_tuple() if vs_champion is not None else None,
        {k: v.as_tuple() for k, v in vs_baselines.items()},
        lower,
    )


def kept_ids(
    cfg: LeagueSection, ids_oldest_first: list[str], champion: str | None, meta_nash: Callable[[], dict[str, float]]
) -> list[str]:
    """The pool's retention rule: by the meta-Nash's weights when the league uses it, else by age."""
    if cfg.uses_meta_nash:
        return retain_by_weight(ids_oldest_first, meta_nash(), champion, cfg.pool_size, cfg.keep_recent)
    return retain_ids(ids_oldest_first, champion, cfg.pool_size, cfg.keep_recent, cfg.keep_old)


def retain_by_weight(
    ids_oldest_first: list[str], weights: dict[str, float], champion: str | None, pool_size: int, keep_recent: int
) -> list[str]:
    """The ids to keep under the meta-Nash (in age order): all when they fit; else the champion,
    the keep_recent newest, and the rest of the slots to the heaviest meta-Nash weights (the
    newer first among equals): the mixture the run delivers keeps its support."""
    ids = list(ids_oldest_first)
    if len(ids) <= pool_size:
        return ids
    keep = set(ids[len(ids) - keep_recent :] if keep_recent > 0 else [])
    if champion in ids:
        keep.add(champion)
    age = {m: i for i, m in enumerate(ids)}
    rest = sorted((m for m in ids if m not in keep), key=lambda m: (-weights.get(m, 0.0), -age[m]))
    keep.update(rest[: max(0, pool_size - len(keep))])
    return [i for i in ids if i in keep]


def retain_ids(
    ids_oldest_first: list[str], champion: str | None, pool_size: int, keep_recent: int, keep_old: int
) -> list[str]:
    """The ids to keep (in age order): all when they fit; else the champion, the keep_recent
    newest, the keep_old oldest, and the remaining slots spread evenly by age over the rest
    (so the pool spans the whole history rather than only its ends)."""
    ids = list(ids_oldest_first)
    if len(ids) <= pool_size:
        return ids
    keep = set(ids[len(ids) - keep_recent :] if keep_recent > 0 else []) | set(ids[:keep_old])
    if champion in ids:
        keep.add(champion)
    slots = pool_size - len(keep)
    middle = [i for i in ids if i not in keep]
    if slots > 0 and middle:
        if slots >= len(middle):
            keep.update(middle)
        elif slots == 1:
            keep.add(middle[len(middle) // 2])
        else:
            picks = np.round(np.linspace(0, len(middle) - 1, slots)).astype(int)
            keep.update(middle[k] for k in picks)
    return [i for i in ids if i in keep]
