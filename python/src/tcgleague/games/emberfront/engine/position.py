"""Hand-built game positions: a readable dict view of the engine's flat int32 position vector.

Rules tests need a chosen state (energy, hand, board, statuses) rather than a random deal.
The engine exposes one game as a flat vector (`Engine.export_position` / `import_position`);
this module turns it into nested dicts and back. Offsets are never hard-coded: the vector is
read by the field-name lists in `LAYOUT["position"]` (game fields, pending fields, then per
seat: player fields, hand[max_hand], deck[deck_size], units[8] x unit fields), so a field
added in position.c shows up here by name. After an import the engine re-derives the legal
list and the decider's observation, so the position can be stepped at once.

Shape of a position dict::

    {<game field>: int, ..., "pending": {<pending field>: int},
     "players": [{<player field>: int, "hand": [card ids], "deck": [card ids, top last],
                  "units": [{<unit field>: int} x 8]}  x 2]}

Units are slots 0-3 front, 4-6 back, 7 the leader; an empty slot is all zeros. `hand` and
`deck` hold only the cards present: on write, `hand_count` / `deck_count` follow their lengths.
"""

from __future__ import annotations

from . import LAYOUT

_POS = LAYOUT["position"]
GAME_FIELDS: list[str] = _POS["game"]
PENDING_FIELDS: list[str] = _POS["pending"]
PLAYER_FIELDS: list[str] = _POS["player"]
UNIT_FIELDS: list[str] = _POS["unit"]
MAX_HAND: int = LAYOUT["max_hand"]
DECK_SIZE: int = LAYOUT["deck_size"]
FRONT_SLOTS: int = LAYOUT["front_slots"]
BOARD_SLOTS: int = FRONT_SLOTS + LAYOUT["back_slots"]
LEADER_SLOT: int = BOARD_SLOTS
UNIT_SLOTS: int = BOARD_SLOTS + 1
PHASES: dict[str, int] = LAYOUT["phases"]


def decode(values: list[int]) -> dict:
    """The flat vector as a nested dict (see the module docstring)."""
    if len(values) != _POS["size"]:
        raise ValueError(f"position has {len(values)} values, expected {_POS['size']}")
    it = iter(int(v) for v in values)
    take = lambda names: {name: next(it) for name in names}  # noqa: E731
    pos = take(GAME_FIELDS)
    pos["pending"] = take(PENDING_FIELDS)
    pos["players"] = []
    for _ in range(2):
        player = take(PLAYER_FIELDS)
        hand = [next(it) for _ in range(MAX_HAND)]
        deck = [next(it) for _ in range(DECK_SIZE)]
        player["hand"] = hand[: player["hand_count"]]
        player["deck"] = deck[: player["deck_count"]]
        player["units"] = [take(UNIT_FIELDS) for _ in range(UNIT_SLOTS)]
        pos["players"].append(player)
    return pos


def encode(pos: dict) -> list[int]:
    """A nested dict back to the flat vector; missing fields are 0."""
    out = [int(pos.get(f, 0)) for f in GAME_FIELDS]
    out += [int(pos.get("pending", {}).get(f, 0)) for f in PENDING_FIELDS]
    for player in pos["players"]:
        hand, deck = list(player.get("hand", [])), list(player.get("deck", []))
        if len(hand) > MAX_HAND or len(deck) > DECK_SIZE:
            raise ValueError(f"hand holds at most {MAX_HAND} and deck {DECK_SIZE} cards")
        fields = {**player, "hand_count": len(hand), "deck_count": len(deck)}
        out += [int(fields.get(f, 0)) for f in PLAYER_FIELDS]
        out += hand + [0] * (MAX_HAND - len(hand)) + deck + [0] * (DECK_SIZE - len(deck))
        units = list(player.get("units", []))
        units += [{}] * (UNIT_SLOTS - len(units))
        for u in units:
            out += [int(u.get(f, 0)) for f in UNIT_FIELDS]
    return out


def read_position(env, game: int = 0) -> dict:
    """Game `game` of a TCGEnv as a nested dict (omniscient: both hands and decks)."""
    return decode(env.engine.export_position(game))


def write_position(env, game: int, pos: dict) -> None:
    """Replaces game `game` of a TCGEnv with `pos`; the decider's legal list and observation
    are recomputed, so the next `env.step` acts on it. Rules consistency is the caller's: e.g.
    a hand-built response window needs its attacker exhausted, as attacking leaves it (the
    engine tells the attacker from a newcomer in its slot that way)."""
    env.engine.import_position(game, encode(pos))


def unit(pool, card_id: int, **overrides) -> dict:
    """A unit record for `card_id` as it stands on the board: stats and keywords from the card
    table (so re-balanced numbers flow in), shield up if it has Shield, ready to act (not sick,
    not exhausted). `overrides` sets any unit field, e.g. `health=1, sick=1`."""
    row = pool.table[card_id]
    idx = LAYOUT["card_field_index"]
    rec = {f: 0 for f in UNIT_FIELDS}
    rec.update(
        card=card_id,
        attack=int(row[idx["attack"]]),
        health=int(row[idx["health"]]),
        max_health=int(row[idx["health"]]),
        keywords=int(row[idx["keywords"]]),
    )
    rec["shield"] = (rec["keywords"] >> LAYOUT["keywords"]["shield"]) & 1
    unknown = set(overrides) - set(UNIT_FIELDS)
    if unknown:
        raise KeyError(f"unknown unit fields {sorted(unknown)}; valid: {UNIT_FIELDS}")
    rec.update(overrides)
    return rec


def empty_position(
    pool, leaders: tuple[int, int] | None = None, active: int = 0, energy: int = 10, turn: int = 5
) -> dict:
    """A main-phase position with `active` to act: both leaders at full health, both
    mulligans done, `energy` (also max energy) for both seats, empty hands, decks and boards.
    Tests then fill in what the rule under test needs. `leaders` defaults to deck 0's leader."""
    if leaders is None:
        leaders = (int(pool.deck_leaders[0]),) * 2
    pos = {f: 0 for f in GAME_FIELDS}
    pos.update(
        turn=turn,
        first_player=0,
        active=active,
        decider=active,
        phase=PHASES["main"],
        result=-1,
        pending={f: 0 for f in PENDING_FIELDS},
        players=[],
    )
    for seat in range(2):
        player = {f: 0 for f in PLAYER_FIELDS}
        player.update(energy=energy, max_energy=energy, mulligan_done=1, hand=[], deck=[])
        player["units"] = [{f: 0 for f in UNIT_FIELDS} for _ in range(BOARD_SLOTS)]
        player["units"].append(unit(pool, leaders[seat]))
        pos["players"].append(player)
    return pos
