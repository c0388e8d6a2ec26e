"""The game in words, from one seat's side: its legal actions (`describe`) and the board as
that seat knows it (`board_text`). One home for both, read by the terminal (play.py) and by the
replay recorder (replay.py), so a replay shows exactly what `play` prints.

Everything here reads what the seat may know: actions are described from the deciding seat's
own observation (which never holds the opponent's hand), and the board is the engine's
rendering with the other seat's hand turned into a count (the rendering never lists a deck)."""

from __future__ import annotations

import numpy as np

from .engine import LAYOUT
from .engine.cards import CardPool
from .env import TCGEnv
from .layout import features_np

ACTION_NAMES = {code: name for name, code in LAYOUT["action_types"].items()}
GROUPS = sorted(LAYOUT["entity_groups"].items(), key=lambda kv: kv[1])  # (name, first entity), in order
ENTITY = slice(LAYOUT["entity_offset"], LAYOUT["entity_offset"] + LAYOUT["n_entities"] * LAYOUT["entity_width"])
CARD_FEATURE = LAYOUT["entity_features"]["card"]
LEGAL_LIST_LINE = "legal actions"  # the rendering's raw legal list starts so (described in words instead)


def entity_name(entity: int, obs_row: np.ndarray, cards: CardPool, mine: str = "your", hide_hand: bool = False) -> str:
    """'your hand 2: Fireball', 'enemy front 1: Cinder Imp', 'enemy leader: Pyra' (1-based;
    `mine` words the deciding seat's own side: "your" for you, "its" for the agent; with
    `hide_hand` a card still in that hand is not named)."""
    if entity >= LAYOUT["n_entities"]:
        return ""
    group, first = max((g for g in GROUPS if g[1] <= entity), key=lambda g: g[1])
    owner, place = group.split("_")
    where = f"{mine if owner == 'my' else 'enemy'} {place}"
    if place != "leader":
        where += f" {entity - first + 1}"
    if hide_hand and group == "my_hand":
        return where
    return f"{where}: {cards.name(int(entity_cards(obs_row)[entity]))}"


def entity_cards(obs: np.ndarray) -> np.ndarray:
    """The card of each entity of observation rows [..., OBS_BYTES] -> [..., n_entities] (what
    `entity_name` names: with an action's (type, a, b, c) these two cards are all `describe`
    reads)."""
    return features_np(obs)[..., ENTITY].reshape(*obs.shape[:-1], LAYOUT["n_entities"], -1)[..., CARD_FEATURE]


def describe(
    action: np.ndarray, obs_row: np.ndarray, cards: CardPool, mine: str = "your", hide_hand: bool = False
) -> str:
    """One legal (type, a, b, c) tuple in words, from the deciding seat's own observation."""
    kind, a, b, c = (int(x) for x in action)
    name = ACTION_NAMES[kind]
    source = entity_name(a, obs_row, cards, mine, hide_hand)
    target = entity_name(b, obs_row, cards, mine, hide_hand)
    if name == "play":
        front = LAYOUT["front_slots"]
        where = f" into front slot {c + 1}" if c < front else f" into back slot {c - front + 1}"
        return f"play {source}" + (where if c != LAYOUT["none_slot"] else "")
    if name == "attack":
        return f"attack with {source} -> {target}"
    if name in ("activate", "block"):
        return f"{name} with {source}"
    if name == "target":
        return f"target {target}"
    return {"pass": "pass (end turn / decline)", "mulligan": "mulligan (redraw)", "spark": "use spark"}[name]


def board_text(env: TCGEnv, hidden_seat: int | None, game: int = 0) -> str:
    """The engine's rendering of `game`, without its raw legal list, the hidden seat's hand
    shown as a count (None: both hands shown)."""
    lines, seat = [], None
    for line in env.render(game).splitlines():
        if line.startswith(LEGAL_LIST_LINE):
            continue
        if line.startswith("seat "):
            seat = int(line.split()[1].rstrip(":"))
        if line.strip().startswith("hand:") and seat == hidden_seat:
            line = f"  hand: {len(line.split('(')) - 1} cards (hidden)"
        lines.append(line)
    return "\n".join(lines)
