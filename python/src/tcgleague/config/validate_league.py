"""[league] validators (opponent shares, the exploiter, the pool), kept apart from validate.py
so neither module grows past a screenful of sections; `validate.VALIDATORS` runs them in order."""

from __future__ import annotations

from collections.abc import Callable

from .sections import (
    DELIVERABLES,
    EVALUATION_MODES,
    EXPLOITER_OPPONENTS,
    OPPONENT_SAMPLINGS,
    PFSP_WEIGHTINGS,
    RATINGS,
    Config,
)

Check = Callable[[bool, str, str, str], None]  # check(ok, section, key, msg): record an error unless ok


def validate_league_mix(cfg: Config, check: Check) -> None:
    """[league] opponent shares and the exploiter (checked even when the league is disabled, so a
    bad value never waits for --league to surface)."""
    lg = cfg.league
    check(
        lg.activate_after_steps >= 0,
        "league",
        "activate_after_steps",
        "must be >= 0 (0 = league from the start; e.g. 5_000_000)",
    )
    ratios = ("latest_ratio", "bot_ratio", "exploiter_ratio")
    for key in ratios:
        check(0 <= getattr(lg, key) <= 1, "league", key, "must be in [0, 1] (e.g. 0.1)")
    if all(0 <= getattr(lg, key) <= 1 for key in ratios):
        _check_league_shares(cfg, check)
    check(
        lg.exploiter_opponent in EXPLOITER_OPPONENTS,
        "league",
        "exploiter_opponent",
        f"must be one of {', '.join(EXPLOITER_OPPONENTS)} (e.g. snapshot)",
    )
    check(
        not (lg.learner_trains_vs_exploiter and lg.exploiter_plays_snapshot),
        "league",
        "learner_trains_vs_exploiter",
        "must be false while exploiter_opponent = snapshot: the learner plays none of the exploiter's games",
    )
    check(0 <= lg.exploiter_join_winrate <= 1, "league", "exploiter_join_winrate", "must be in [0, 1] (e.g. 0.7)")
    check(lg.exploiter_reset_epochs >= 1, "league", "exploiter_reset_epochs", "must be >= 1 (e.g. 300)")


def _check_league_shares(cfg: Config, check: Check) -> None:
    """The shares leave a (possibly empty) frozen-pool share, and the exploiter never plays more
    decisions than the learner it is meant to exploit."""
    lg = cfg.league
    last = "exploiter_ratio" if lg.exploiter_ratio > 0 else "bot_ratio"  # the share to shrink
    room = max(0.0, round(1 - lg.latest_ratio - lg.bot_ratio - lg.exploiter_ratio + getattr(lg, last), 6))
    check(
        lg.latest_ratio + lg.bot_ratio + lg.exploiter_ratio <= 1 + 1e-9,
        "league",
        last,
        f"latest_ratio + bot_ratio + exploiter_ratio must be <= 1 (the rest is the frozen-pool share; "
        f"e.g. {last} = {room})",
    )
    most = (1 + lg.latest_ratio) / 2  # beyond it the exploiter plays more decisions than the learner
    check(
        lg.learner_trains_vs_exploiter or lg.exploiter_ratio <= most + 1e-9,
        "league",
        "exploiter_ratio",
        f"must be <= (1 + latest_ratio) / 2 = {most:g} while learner_trains_vs_exploiter is false: "
        f"the learner trains on none of the exploiter's games, so past that the exploiter plays more "
        f"decisions than the learner (at 1, the learner none) (e.g. exploiter_ratio = 0.1)",
    )


def validate_league_pool(cfg: Config, check: Check) -> None:
    """[league] pool, evaluation, promotion and rating: a pool that holds the members it must
    keep, and win rates / decays in range."""
    lg = cfg.league
    check(
        0 <= lg.verification_members <= lg.pool_size,
        "league",
        "verification_members",
        f"must be in [0, pool_size = {lg.pool_size}] (e.g. 2)",
    )
    check(lg.replay_games >= 0, "league", "replay_games", "must be >= 0 (0 = record no games; e.g. 2)")
    check(
        lg.pfsp_weighting in PFSP_WEIGHTINGS, "league", "pfsp_weighting", f"must be one of {', '.join(PFSP_WEIGHTINGS)}"
    )
    check(
        lg.opponent_sampling in OPPONENT_SAMPLINGS,
        "league",
        "opponent_sampling",
        f"must be one of {', '.join(OPPONENT_SAMPLINGS)}",
    )
    check(lg.deliverable in DELIVERABLES, "league", "deliverable", f"must be one of {', '.join(DELIVERABLES)}")
    check(lg.nash_min_games >= 1, "league", "nash_min_games", "must be >= 1 games (e.g. 64)")
    check(lg.nash_temperature >= 0, "league", "nash_temperature", "must be >= 0 points (0 = the exact meta-Nash)")
    check(lg.deliverable_start >= 0, "league", "deliverable_start", "must be >= 0 learner steps (e.g. 4000000)")
    check(lg.checkpoint_add_interval >= 1, "league", "checkpoint_add_interval", "must be >= 1 (e.g. 10)")
    check(lg.pool_size >= 1, "league", "pool_size", "must be >= 1 (e.g. 8)")
    for key in ("keep_recent", "keep_old"):
        check(getattr(lg, key) >= 0, "league", key, "must be >= 0 (e.g. 2)")
    if lg.pool_size >= 1 and lg.keep_recent >= 0 and lg.keep_old >= 0:
        check(
            1 + lg.keep_recent + lg.keep_old <= lg.pool_size,
            "league",
            "pool_size",
            f"must hold the champion plus keep_recent ({lg.keep_recent}) and keep_old "
            f"({lg.keep_old}) members (e.g. pool_size = {1 + lg.keep_recent + lg.keep_old})",
        )
    check(lg.eval_games >= 1, "league", "eval_games", "must be >= 1 (e.g. 64)")
    check(lg.promotion_min_games >= 1, "league", "promotion_min_games", "must be >= 1 (e.g. 64)")
    for key in ("promotion_min_winrate", "baseline_min_winrate"):
        check(0 <= getattr(lg, key) <= 1, "league", key, "must be in [0, 1] (e.g. 0.55)")
    check(lg.promotion_z > 0, "league", "promotion_z", "must be > 0 (e.g. 1.96)")
    check(0 < lg.payoff_decay <= 1, "league", "payoff_decay", "must be in (0, 1] (1 = no decay; e.g. 0.99)")
    check(lg.rating in RATINGS, "league", "rating", f"must be one of {', '.join(RATINGS)}")
    check(lg.opponent_batch >= 1, "league", "opponent_batch", "must be >= 1 (e.g. 256)")
    check(
        lg.evaluation in EVALUATION_MODES,
        "league",
        "evaluation",
        f"must be one of {', '.join(EVALUATION_MODES)} (auto = background on cuda, inline on the cpu)",
    )
