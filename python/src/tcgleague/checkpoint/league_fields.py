"""Reading the league's part of a checkpoint (`LeagueOpponents.state_dict()`): its running
matchups parsed here, and every malformed part - found here or while the league applies it -
reported as a FieldError naming it (`league.<part>`), like the other fields' validators."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .field_types import FieldError


@contextmanager
def league_field(name: str) -> Iterator[None]:
    """A malformed part of the league's state is a FieldError naming it."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as err:
        raise FieldError(f"league.{name}", f"{type(err).__name__}: {err}") from None


@dataclass(frozen=True)
class RunningLeague:
    """The league's running games: the matchups, the random bot's stream, the step the league
    last saw, and the frozen pool's sampling stream with its rows' LSTM state."""

    matchmaker: dict
    bot_rng: dict
    global_step: int
    pool: dict


def running_league(state: dict) -> RunningLeague:
    """The running part of a league state (under its "league" key)."""
    with league_field("league"):
        running = state["league"]
        return RunningLeague(
            matchmaker=running["matchmaker"],
            bot_rng={"rng": running["rng"]},
            global_step=int(running["global_step"]),
            pool={"generator": running["opponents_generator"], "rows": running["opponent_state"]},
        )
