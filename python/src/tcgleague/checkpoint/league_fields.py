"""Reading the league's part of a checkpoint (`LeagueOpponents.state_dict()`): its running
matchups parsed here, and every malformed part - found here or while the league applies it -
reported as a FieldError naming it (`league.<part>`), like the other fields' validators."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import UserInputError
from .field_types import FieldError


@contextmanager
def league_field(name: str) -> Iterator[None]:
    """A malformed part of the league's state is a FieldError naming it."""
    try:
        yield
    except UserInputError:
        raise  # it names the problem and what to do already
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


# what a candidate's match decides; "population": a pool member it plays to fill the meta-game's payoff
EVALUATION_ROLES = ("champion", "baseline", "verification", "population")


@dataclass(frozen=True)
class PendingEvaluation:
    """A candidate's evaluation planned at `epoch` whose matches were still playing (background
    evaluation) when the checkpoint was written: the candidate, the champion then, and its
    opponents as (role, id) in play order. An exact resume plays them again."""

    candidate: str
    champion: str | None
    epoch: int
    opponents: tuple[tuple[str, str], ...]


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a member id (a non-empty string), got {value!r}")
    return value


def pending_evaluation(state: dict | None) -> PendingEvaluation | None:
    """The pending evaluation of a league state (its "pending_evaluation" part; None: none)."""
    if state is None:
        return None
    with league_field("pending_evaluation"):
        opponents = tuple((role, _text(who, "an opponent")) for role, who in state["opponents"])
        for role, _ in opponents:
            if role not in EVALUATION_ROLES:
                raise ValueError(f"unknown match role {role!r} (valid: {', '.join(EVALUATION_ROLES)})")
        champion = state["champion"]
        epoch = state["epoch"]
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
        return PendingEvaluation(
            candidate=_text(state["candidate"], "candidate"),
            champion=None if champion is None else _text(champion, "champion"),
            epoch=epoch,
            opponents=opponents,
        )
