"""Card data: loads cards.json, validates it, and packs it into the engine's int32 tables.

Adding a card is a JSON edit; every name (type, keyword, trigger, op, target) is checked
against the enums the C engine exports, so a typo fails here with the card named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ....errors import UserInputError
from . import LAYOUT

DEFAULT_CARDS = Path(__file__).with_name("cards.json")
CHOSEN_TARGET_TRIGGERS = {"on_play", "activated", "spell", "response"}


class CardDataError(UserInputError, ValueError):
    """cards.json (or a deck pool) is malformed; the message names the card and the fix."""

    label = "card data error"


@dataclass(frozen=True)
class CardPool:
    cards: dict[int, dict]  # id -> the JSON record
    table: np.ndarray  # int32 [max_cards, card_fields]
    names: np.ndarray  # uint8 [max_cards * card_name_len], NUL-padded
    n_cards: int  # largest id + 1 (embedding size)
    deck_names: list[str]
    decks: np.ndarray  # int32 [n_decks, deck_size]
    deck_leaders: np.ndarray  # int32 [n_decks]
    path: Path

    def name(self, card_id: int) -> str:
        return self.cards[card_id]["name"] if card_id in self.cards else "-"


def _pick(card: dict, field: str, options: dict, what: str) -> int:
    value = card.get(field, "none") if isinstance(card, dict) else card
    if value not in options:
        raise CardDataError(
            f"card {card.get('id')} ({card.get('name')}): unknown {what} {value!r}; valid: {sorted(options)}"
        )
    return options[value]


def _effect_row(card: dict, row: np.ndarray, fields: dict) -> None:
    effect = card.get("effect")
    if not effect:
        return
    label = f"card {card['id']} ({card['name']})"
    trigger = _pick({**effect, "id": card["id"], "name": card["name"]}, "trigger", LAYOUT["triggers"], "trigger")
    op = _pick({**effect, "id": card["id"], "name": card["name"]}, "op", LAYOUT["ops"], "op")
    target = _pick({**effect, "id": card["id"], "name": card["name"]}, "target", LAYOUT["target_kinds"], "target")
    chosen = 0 < target < LAYOUT["first_automatic_target"]
    if chosen and effect["trigger"] not in CHOSEN_TARGET_TRIGGERS:
        raise CardDataError(
            f"{label}: a chosen target ({effect['target']}) needs a trigger in {sorted(CHOSEN_TARGET_TRIGGERS)}"
        )
    if effect.get("target") == "attacker" and effect["trigger"] != "response":
        raise CardDataError(f"{label}: target 'attacker' is only valid for response spells")
    if effect["op"] == "summon" and not effect.get("token"):
        raise CardDataError(f"{label}: a summon effect needs 'token' (a unit card id)")
    row[fields["trigger"]] = trigger
    row[fields["op"]] = op
    row[fields["target"]] = target
    row[fields["amount"]] = int(effect.get("amount", 0))
    row[fields["amount2"]] = int(effect.get("amount2", 0))
    row[fields["ability_cost"]] = int(effect.get("cost", 0))
    row[fields["token"]] = int(effect.get("token", 0))
    row[fields["max_target_cost"]] = int(effect.get("max_target_cost", 0))


def _card_row(card: dict, factions: list[str]) -> np.ndarray:
    fields = LAYOUT["card_field_index"]
    row = np.zeros(LAYOUT["card_fields"], dtype=np.int32)
    row[fields["type"]] = _pick(card, "type", LAYOUT["card_types"], "card type")
    if card.get("faction") not in factions:
        raise CardDataError(
            f"card {card['id']} ({card['name']}): unknown faction {card.get('faction')!r}; valid: {factions}"
        )
    row[fields["faction"]] = factions.index(card["faction"])
    row[fields["cost"]] = int(card.get("cost", 0))
    row[fields["attack"]] = int(card.get("attack", 0))
    row[fields["health"]] = int(card.get("health", 0))
    row[fields["durability"]] = int(card.get("durability", 0))
    row[fields["is_token"]] = int(bool(card.get("token", False)))
    mask = 0
    for kw in card.get("keywords", []):
        if kw not in LAYOUT["keywords"]:
            raise CardDataError(
                f"card {card['id']} ({card['name']}): unknown keyword {kw!r}; valid: {sorted(LAYOUT['keywords'])}"
            )
        mask |= 1 << LAYOUT["keywords"][kw]
    row[fields["keywords"]] = mask
    _effect_row(card, row, fields)
    return row


def _deck_arrays(data: dict, cards: dict[int, dict]) -> tuple[list[str], np.ndarray, np.ndarray]:
    names, decks, leaders = [], [], []
    for name, deck in data.get("decks", {}).items():
        ids = deck.get("cards", [])
        if len(ids) != LAYOUT["deck_size"]:
            raise CardDataError(f"deck {name!r} has {len(ids)} cards; it needs exactly {LAYOUT['deck_size']}")
        for cid in ids:
            card = cards.get(cid)
            if card is None or card["type"] == "leader" or card.get("token"):
                raise CardDataError(f"deck {name!r}: card id {cid} is not a playable deck card")
        leader = cards.get(deck.get("leader"))
        if leader is None or leader["type"] != "leader":
            raise CardDataError(f"deck {name!r}: leader {deck.get('leader')!r} is not a leader card id")
        names.append(name)
        decks.append(ids)
        leaders.append(deck["leader"])
    if not names:
        raise CardDataError("the card file defines no decks")
    return names, np.asarray(decks, dtype=np.int32), np.asarray(leaders, dtype=np.int32)


def load_card_pool(path: str | Path = DEFAULT_CARDS) -> CardPool:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CardDataError(f"cannot read card file {path}: {err}") from err
    max_cards, name_len = LAYOUT["max_cards"], LAYOUT["card_name_len"]
    factions = list(data.get("factions", []))
    table = np.zeros((max_cards, LAYOUT["card_fields"]), dtype=np.int32)
    names = np.zeros((max_cards, name_len), dtype=np.uint8)
    cards: dict[int, dict] = {}
    for card in data.get("cards", []):
        cid = card.get("id")
        if not isinstance(cid, int) or not 0 < cid < max_cards or cid in cards:
            raise CardDataError(f"card {card.get('name')!r}: id {cid!r} must be a unique integer in [1, {max_cards})")
        cards[cid] = card
        table[cid] = _card_row(card, factions)
        encoded = card["name"].encode()[: name_len - 1]
        names[cid, : len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
    for cid, card in cards.items():
        token = (card.get("effect") or {}).get("token")
        if token and (token not in cards or cards[token]["type"] != "unit"):
            raise CardDataError(f"card {cid} ({card['name']}): token {token} is not a unit card id")
    deck_names, decks, leaders = _deck_arrays(data, cards)
    return CardPool(cards, table, names.reshape(-1), max(cards) + 1, deck_names, decks, leaders, path)


MAX_DECK_WEIGHT = 1e9  # relative weights; far below float32's range


def deck_weights(pool: CardPool, deck_pool: str | Path | dict | None) -> np.ndarray:
    """Per-seat deck draw weights, float32 [2, n_decks].

    `deck_pool` is None (each seat draws a starter deck uniformly per game), a dict
    {"seat0": {...}, "seat1": {...}} whose values are a deck-name list or {name: weight}
    (weights in [0, MAX_DECK_WEIGHT] with a positive sum), or a path to a JSON file holding that dict.
    """
    weights = np.ones((2, len(pool.deck_names)), dtype=np.float32)
    if deck_pool is None:
        return weights
    where = "deck pool"
    if not isinstance(deck_pool, dict):
        where = f"deck pool file {deck_pool}"
        try:
            deck_pool = json.loads(Path(deck_pool).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CardDataError(f"cannot read {where}: {err}") from None
    example = f'(e.g. {{"seat0": {{"{pool.deck_names[0]}": 2, "{pool.deck_names[-1]}": 1}}, "seat1": ["{pool.deck_names[0]}"]}})'
    if not isinstance(deck_pool, dict):
        raise CardDataError(f"{where}: expected a JSON object with keys seat0 and/or seat1 {example}")
    unknown = sorted(set(deck_pool) - {"seat0", "seat1"})
    if unknown:
        raise CardDataError(f"{where}: unknown key(s) {unknown}; valid keys: seat0, seat1 {example}")
    for seat in (0, 1):
        spec = deck_pool.get(f"seat{seat}")
        if spec is None:
            continue
        if isinstance(spec, list) and all(isinstance(name, str) for name in spec):
            spec = {name: 1.0 for name in spec}
        if not isinstance(spec, dict):
            raise CardDataError(f"{where}: seat{seat} must be a list of deck names or {{name: weight}} {example}")
        weights[seat] = 0.0
        for name, w in spec.items():
            if name not in pool.deck_names:
                raise CardDataError(f"{where}: seat{seat}: unknown deck {name!r}; valid: {pool.deck_names}")
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= MAX_DECK_WEIGHT:
                raise CardDataError(
                    f"{where}: seat{seat}: deck {name!r} has weight {w!r}; weights are numbers in [0, {MAX_DECK_WEIGHT:g}]"
                )
            weights[seat, pool.deck_names.index(name)] = float(w)
        if weights[seat].sum() <= 0:
            raise CardDataError(f"{where}: seat{seat}: the weights must have a positive sum (got {spec})")
    return weights
