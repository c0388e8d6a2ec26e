"""Rules of Emberfront, one focused test per rule, each on a hand-built position.

Every test builds a main-phase position (chosen energy, hand and board) in a one-game TCGEnv,
steps explicit legal actions through the env, and checks the resulting state. Cards are picked
by property (keyword, op, trigger) and their numbers read from the card data, because card
stats are re-balanced independently of these tests; ids, ops and keywords are stable.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tcgleague.games.emberfront.engine import LAYOUT
from tcgleague.games.emberfront.engine.position import (
    BOARD_SLOTS,
    FRONT_SLOTS,
    LEADER_SLOT,
    PHASES,
    empty_position,
    read_position,
    unit,
    write_position,
)
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import features_np

A = LAYOUT["action_types"]
G = LAYOUT["entity_groups"]
NE, NS = LAYOUT["none_entity"], LAYOUT["none_slot"]
LEGAL, COUNT, WIDTH = LAYOUT["legal_offset"], LAYOUT["legal_count_offset"], LAYOUT["action_width"]
MAX_HAND = LAYOUT["max_hand"]
BACK = FRONT_SLOTS  # first back-row slot

PASS = (A["pass"], NE, NE, NS)
MULLIGAN = (A["mulligan"], NE, NE, NS)
SPARK = (A["spark"], NE, NE, NS)


def play(hand_index, slot=NS):
    return (A["play"], G["my_hand"] + hand_index, NE, slot)


def attack(slot, target=LEADER_SLOT):
    return (A["attack"], G["my_front"] + slot, G["opp_front"] + target, NS)


def target_mine(slot):
    return (A["target"], NE, G["my_front"] + slot, NS)


def target_opp(slot):
    return (A["target"], NE, G["opp_front"] + slot, NS)


def block(slot):
    return (A["block"], G["my_front"] + slot, NE, NS)


def activate(slot=LEADER_SLOT):
    return (A["activate"], G["my_front"] + slot, NE, NS)


# ---- card lookup by property ----------------------------------------------------------------
def kws(card):
    return set(card.get("keywords", []))


def eff(card):
    return card.get("effect") or {}


class Harness:
    """One game of a TCGEnv driven by explicit actions."""

    def __init__(self, turn_cap=LAYOUT["default_turn_cap"]):
        self.env = TCGEnv(num_games=1, turn_cap=turn_cap)
        self.env.reset(0)
        self.pool = self.env.pool

    # cards
    def find(self, pred, what, key=None):
        """The card id matching `pred` (the one maximising `key`, else the lowest id)."""
        ids = [cid for cid, c in sorted(self.pool.cards.items()) if pred(c)]
        if not ids:
            pytest.fail(f"cards.json has no {what}")
        return max(ids, key=lambda cid: key(self.pool.cards[cid])) if key else ids[0]

    def card(self, cid):
        return self.pool.cards[cid]

    def keyword_unit(self, kw):
        """A deck unit whose only keyword is `kw` and that has no effect."""
        return self.find(
            lambda c: c["type"] == "unit" and kws(c) == {kw} and not eff(c) and not c.get("token"),
            f"plain unit with only {kw}",
        )

    def vanilla(self):
        """A unit with no keyword and no effect (the sturdiest, so it survives counter-attacks)."""
        return self.find(
            lambda c: c["type"] == "unit" and not kws(c) and not eff(c) and not c.get("token"),
            "vanilla unit",
            key=lambda c: (c["health"], -c["id"]),
        )

    def effect_card(self, what, **fields):
        """A card whose effect has every given field (e.g. op="freeze", trigger="spell")."""
        return self.find(lambda c: c["type"] != "leader" and all(eff(c).get(k) == v for k, v in fields.items()), what)

    def unit(self, cid, **overrides):
        return unit(self.pool, cid, **overrides)

    # state
    def position(self, **kw):
        """An empty main-phase position; `self.hp` is the leaders' (equal) full health."""
        pos = empty_position(self.pool, **kw)
        healths = {pos["players"][s]["units"][LEADER_SLOT]["health"] for s in (0, 1)}
        assert len(healths) == 1, "tests assume both leaders start with the same health"
        self.hp = healths.pop()
        return pos

    def load(self, pos):
        write_position(self.env, 0, pos)

    def pos(self):
        return read_position(self.env, 0)

    def decider(self):
        rows = np.flatnonzero(self.env.masks[:2])
        assert len(rows) == 1, f"exactly one active row expected, masks={self.env.masks[:2]}"
        return int(rows[0])

    def legal(self):
        obs = features_np(self.env.observations[self.decider()])
        n = int(obs[COUNT])
        return [tuple(int(x) for x in obs[LEGAL + i * WIDTH : LEGAL + (i + 1) * WIDTH]) for i in range(n)]

    def step(self, action):
        legal = self.legal()
        assert action in legal, f"{action} not legal; legal: {legal}"
        actions = np.zeros((2, WIDTH), dtype=np.int32)
        actions[self.decider()] = action
        self.env.step(actions)


@pytest.fixture
def h():
    return Harness()


def leader(pos, seat):
    return pos["players"][seat]["units"][LEADER_SLOT]


def board(pos, seat):
    return pos["players"][seat]["units"]


# ---- keywords --------------------------------------------------------------------------------
def test_charge_attacks_the_turn_it_arrives(h):
    charge = h.keyword_unit("charge")
    pos = h.position()
    pos["players"][0]["hand"] = [charge]
    h.load(pos)
    h.step(play(0, 0))
    assert board(h.pos(), 0)[0]["sick"] == 0
    assert attack(0) in h.legal()
    h.step(attack(0))
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(charge)["attack"]


def test_summoning_sickness(h):
    v = h.vanilla()
    pos = h.position()
    pos["players"][0]["hand"] = [v]
    pos["players"][0]["deck"] = [v, v]
    pos["players"][1]["deck"] = [v, v]
    h.load(pos)
    h.step(play(0, 0))
    assert board(h.pos(), 0)[0]["sick"] == 1
    assert not any(a[0] == A["attack"] for a in h.legal())
    h.step(PASS)
    h.step(PASS)  # the opponent's turn, then ours again
    assert h.decider() == 0 and board(h.pos(), 0)[0]["sick"] == 0
    assert attack(0) in h.legal()


def test_combat_is_simultaneous(h):
    v = h.vanilla()
    atk = h.card(v)["attack"]
    pos = h.position()
    board(pos, 0)[0] = h.unit(v, health=atk)
    board(pos, 1)[0] = h.unit(v, health=atk)
    h.load(pos)
    h.step(attack(0, 0))
    after = h.pos()
    assert board(after, 0)[0]["card"] == 0 and board(after, 1)[0]["card"] == 0
    assert after["players"][0]["discard_count"] == 1 and after["players"][1]["discard_count"] == 1
    assert leader(after, 1)["health"] == h.hp


def test_guardian_blocks_and_exhausts(h):
    v, guardian = h.vanilla(), h.keyword_unit("guardian")
    pos = h.position()
    board(pos, 0)[0] = h.unit(v, health=50)
    board(pos, 1)[0] = h.unit(guardian, health=50)
    h.load(pos)
    h.step(attack(0))
    assert h.decider() == 1 and h.pos()["phase"] == PHASES["response"]
    assert sorted(h.legal()) == sorted([PASS, block(0)])
    h.step(block(0))
    after = h.pos()
    assert after["phase"] == PHASES["main"] and h.decider() == 0
    assert leader(after, 1)["health"] == h.hp
    assert board(after, 1)[0]["health"] == 50 - h.card(v)["attack"]
    assert board(after, 0)[0]["health"] == 50 - h.card(guardian)["attack"]
    assert board(after, 1)[0]["exhausted"] == 1


def test_only_a_ready_front_row_guardian_can_block(h):
    v, guardian = h.vanilla(), h.keyword_unit("guardian")
    pos = h.position()
    board(pos, 0)[0] = h.unit(v)
    board(pos, 1)[0] = h.unit(guardian, exhausted=1)
    board(pos, 1)[1] = h.unit(guardian, frozen=1)
    board(pos, 1)[2] = h.unit(v)
    board(pos, 1)[BACK] = h.unit(guardian)
    h.load(pos)
    h.step(attack(0))
    # no real option: no response decision, the attack resolves at once
    assert h.decider() == 0 and h.pos()["phase"] == PHASES["main"]
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(v)["attack"]


def test_stealth_cannot_be_blocked(h):
    stealth, guardian = h.keyword_unit("stealth"), h.keyword_unit("guardian")
    pos = h.position()
    board(pos, 0)[0] = h.unit(stealth)
    board(pos, 1)[0] = h.unit(guardian)
    h.load(pos)
    h.step(attack(0))
    assert h.decider() == 0, "the defender must get no block decision against stealth"
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(stealth)["attack"]


def test_lifesteal_heals_own_leader(h):
    leech = h.keyword_unit("lifesteal")
    atk = h.card(leech)["attack"]
    pos = h.position()
    board(pos, 0)[0] = h.unit(leech)
    leader(pos, 0)["health"] = 10
    h.load(pos)
    h.step(attack(0))
    assert leader(h.pos(), 0)["health"] == 10 + atk
    assert leader(h.pos(), 1)["health"] == h.hp - atk


def test_venom_destroys_any_unit_it_damages_but_not_a_leader(h):
    venom, v = h.keyword_unit("venom"), h.vanilla()
    atk = h.card(venom)["attack"]
    pos = h.position()
    board(pos, 0)[0] = h.unit(venom, health=50)
    board(pos, 0)[1] = h.unit(venom)
    board(pos, 1)[0] = h.unit(v, health=atk + 10, max_health=atk + 10)
    h.load(pos)
    h.step(attack(0, 0))
    assert board(h.pos(), 1)[0]["card"] == 0
    h.step(attack(1))
    assert leader(h.pos(), 1)["health"] == h.hp - atk


def test_shield_prevents_the_first_damage(h):
    shielded, v = h.keyword_unit("shield"), h.vanilla()
    pos = h.position()
    board(pos, 0)[0] = h.unit(v, health=50)
    board(pos, 0)[1] = h.unit(v, health=50)
    board(pos, 1)[0] = h.unit(shielded, health=50)
    h.load(pos)
    assert board(h.pos(), 1)[0]["shield"] == 1
    h.step(attack(0, 0))
    after = board(h.pos(), 1)[0]
    assert after["shield"] == 0 and after["health"] == 50
    h.step(attack(1, 0))
    assert board(h.pos(), 1)[0]["health"] == 50 - h.card(v)["attack"]


def test_ranged_attacks_from_the_back_row(h):
    ranged, v = h.keyword_unit("ranged"), h.vanilla()
    pos = h.position()
    board(pos, 0)[BACK] = h.unit(ranged)
    board(pos, 0)[BACK + 1] = h.unit(v)
    board(pos, 1)[0] = h.unit(v)
    board(pos, 1)[BACK] = h.unit(v)
    h.load(pos)
    attacks = {a for a in h.legal() if a[0] == A["attack"]}
    # the ranged unit may hit the enemy leader or front row, never the back row
    assert attacks == {attack(BACK), attack(BACK, 0)}
    h.step(attack(BACK))
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(ranged)["attack"]


def test_frenzy_grows_when_damaged_and_surviving(h):
    frenzy, v = h.keyword_unit("frenzy"), h.vanilla()
    pos = h.position()
    board(pos, 0)[0] = h.unit(frenzy, health=50)
    board(pos, 1)[0] = h.unit(v, health=50)
    h.load(pos)
    h.step(attack(0, 0))
    assert board(h.pos(), 0)[0]["attack"] == h.card(frenzy)["attack"] + 1


# ---- effect ops --------------------------------------------------------------------------------
def test_damage_spell_hits_a_chosen_enemy(h):
    spell = h.effect_card("damage spell at any enemy", op="damage", trigger="spell", target="enemy_any")
    v = h.vanilla()
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 0)[0] = h.unit(v)
    board(pos, 1)[0] = h.unit(v)
    h.load(pos)
    h.step(play(0))
    assert h.pos()["phase"] == PHASES["target"]
    assert sorted(h.legal()) == sorted([target_opp(0), target_opp(LEADER_SLOT)])
    h.step(target_opp(LEADER_SLOT))
    after = h.pos()
    assert leader(after, 1)["health"] == h.hp - h.card(spell)["effect"]["amount"]
    assert after["players"][0]["energy"] == 10 - h.card(spell)["cost"]
    assert after["players"][0]["discard_count"] == 1 and after["players"][0]["hand"] == []


def test_heal_on_play_targets_a_friend(h):
    medic = h.effect_card("on-play heal", op="heal", trigger="on_play", target="friendly_any")
    amount = h.card(medic)["effect"]["amount"]
    pos = h.position()
    pos["players"][0]["hand"] = [medic]
    leader(pos, 0)["health"] = 5
    h.load(pos)
    h.step(play(0, 2))
    assert sorted(h.legal()) == sorted([target_mine(2), target_mine(LEADER_SLOT)])
    h.step(target_mine(LEADER_SLOT))
    assert leader(h.pos(), 0)["health"] == 5 + amount


def test_draw_takes_the_top_cards(h):
    spell = h.effect_card("draw spell", op="draw", trigger="spell")
    v = h.vanilla()
    amount = h.card(spell)["effect"]["amount"]
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    deck = [v] * 3 + [spell] * amount  # the top of the deck is the end of the list
    pos["players"][0]["deck"] = deck
    h.load(pos)
    h.step(play(0))
    me = h.pos()["players"][0]
    assert me["hand"] == [spell] * amount and me["deck"] == [v] * 3


def test_buff_is_permanent(h):
    spell = h.effect_card("buff a friendly unit", op="buff", trigger="spell", target="friendly_unit")
    v = h.vanilla()
    e = h.card(spell)["effect"]
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 0)[1] = h.unit(v)
    board(pos, 1)[1] = h.unit(v)
    h.load(pos)
    h.step(play(0))
    assert h.legal() == [target_mine(1)]
    h.step(target_mine(1))
    u = board(h.pos(), 0)[1]
    base = h.card(v)
    assert (u["attack"], u["health"], u["max_health"]) == (
        base["attack"] + e["amount"],
        base["health"] + e.get("amount2", 0),
        base["health"] + e.get("amount2", 0),
    )
    h.step(PASS)
    assert board(h.pos(), 0)[1]["attack"] == base["attack"] + e["amount"]


def test_buff_all_friendly_units(h):
    spell = h.effect_card("buff all friendly units", op="buff", target="all_friendly_units")
    v = h.vanilla()
    e = h.card(spell)["effect"]
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 0)[0] = h.unit(v)
    board(pos, 0)[BACK] = h.unit(v)
    board(pos, 1)[0] = h.unit(v)
    h.load(pos)
    h.step(play(0))
    after = h.pos()
    for slot in (0, BACK):
        assert board(after, 0)[slot]["attack"] == h.card(v)["attack"] + e["amount"]
        assert board(after, 0)[slot]["health"] == h.card(v)["health"] + e.get("amount2", 0)
    assert board(after, 1)[0]["attack"] == h.card(v)["attack"]


def test_buff_temp_on_attack_expires_at_end_of_turn(h):
    dancer = h.effect_card("on-attack temporary buff", op="buff_temp", trigger="on_attack", target="self")
    amount = h.card(dancer)["effect"]["amount"]
    pos = h.position()
    board(pos, 0)[0] = h.unit(dancer)
    pos["players"][1]["deck"] = [dancer]
    h.load(pos)
    h.step(attack(0))
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(dancer)["attack"] - amount
    assert board(h.pos(), 0)[0]["temp_attack"] == amount
    h.step(PASS)
    assert board(h.pos(), 0)[0]["temp_attack"] == 0


def test_freeze_skips_the_next_turn(h):
    spell = h.effect_card("freeze spell", op="freeze", trigger="spell")
    v = h.vanilla()
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    pos["players"][0]["deck"] = [v] * 3
    pos["players"][1]["deck"] = [v] * 3
    board(pos, 1)[0] = h.unit(v)
    board(pos, 1)[1] = h.unit(v)
    h.load(pos)
    h.step(play(0))
    h.step(target_opp(0))
    assert board(h.pos(), 1)[0]["frozen"] > 0
    h.step(PASS)
    # seat 1's turn: the frozen unit may not attack, its neighbour may
    attackers = {a[1] for a in h.legal() if a[0] == A["attack"]}
    assert attackers == {G["my_front"] + 1}
    h.step(PASS)
    assert board(h.pos(), 1)[0]["frozen"] == 0
    h.step(PASS)
    assert attack(0) in h.legal()


def test_destroy_respects_its_cost_condition(h):
    spell = h.effect_card("destroy spell", op="destroy")
    limit = h.card(spell)["effect"]["max_target_cost"]
    cheap = h.find(lambda c: c["type"] == "unit" and c["cost"] <= limit and not c.get("token"), "cheap unit")
    dear = h.find(lambda c: c["type"] == "unit" and c["cost"] > limit, "expensive unit")
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 1)[0] = h.unit(cheap)
    board(pos, 1)[1] = h.unit(dear)
    h.load(pos)
    h.step(play(0))
    assert h.legal() == [target_opp(0)], "the over-cost unit must not be a legal target"
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 1)[0]["card"] == 0 and board(after, 1)[1]["card"] == dear
    assert after["players"][1]["discard_count"] == 1


def test_destroy_is_not_castable_without_a_legal_target(h):
    spell = h.effect_card("destroy spell", op="destroy")
    limit = h.card(spell)["effect"]["max_target_cost"]
    dear = h.find(lambda c: c["type"] == "unit" and c["cost"] > limit, "expensive unit")
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 1)[0] = h.unit(dear)
    h.load(pos)
    assert play(0) not in h.legal()


def test_summon_on_play_fills_the_first_free_slot(h):
    warden = h.effect_card("on-play summon", op="summon", trigger="on_play")
    e = h.card(warden)["effect"]
    pos = h.position()
    pos["players"][0]["hand"] = [warden]
    h.load(pos)
    h.step(play(0, 2))
    units = board(h.pos(), 0)
    tokens = [u for u in units[:BOARD_SLOTS] if u["card"] == e["token"]]
    assert len(tokens) == e["amount"] and units[0]["card"] == e["token"]
    assert units[2]["card"] == warden
    assert all(t["sick"] == 1 and t["health"] == h.card(e["token"])["health"] for t in tokens)


def test_gain_energy(h):
    spell = h.effect_card("gain energy spell", op="gain_energy")
    c = h.card(spell)
    pos = h.position(energy=c["cost"] + 1)
    pos["players"][0]["hand"] = [spell]
    h.load(pos)
    h.step(play(0))
    assert h.pos()["players"][0]["energy"] == 1 + c["effect"]["amount"]


def test_discard_random_hits_the_opponent(h):
    thief = h.effect_card("on-play discard", op="discard_random")
    v = h.vanilla()
    amount = h.card(thief)["effect"]["amount"]
    opp_hand = [v, thief, v]
    pos = h.position()
    pos["players"][0]["hand"] = [thief]
    pos["players"][1]["hand"] = list(opp_hand)
    h.load(pos)
    h.step(play(0, 0))
    opp = h.pos()["players"][1]
    assert len(opp["hand"]) == 3 - amount and opp["discard_count"] == amount
    assert not Counter(opp["hand"]) - Counter(opp_hand)
    assert h.pos()["players"][0]["discard_count"] == 0


def test_return_to_hand_bounces_an_enemy_unit(h):
    serpent = h.effect_card("on-play bounce", op="return_to_hand", trigger="on_play")
    v = h.vanilla()
    pos = h.position()
    pos["players"][0]["hand"] = [serpent]
    board(pos, 1)[0] = h.unit(v, health=1)
    h.load(pos)
    h.step(play(0, 0))
    assert h.legal() == [target_opp(0)]
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 1)[0]["card"] == 0 and after["players"][1]["hand"] == [v]


def test_return_to_hand_removes_a_token_from_the_game(h):
    serpent = h.effect_card("on-play bounce", op="return_to_hand", trigger="on_play")
    token = h.find(lambda c: c["type"] == "unit" and c.get("token"), "token unit")
    pos = h.position()
    pos["players"][0]["hand"] = [serpent]
    board(pos, 1)[0] = h.unit(token)
    h.load(pos)
    h.step(play(0, 0))
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 1)[0]["card"] == 0
    assert after["players"][1]["hand"] == [] and after["players"][1]["discard_count"] == 0


def test_silence_removes_keywords_and_shield(h):
    spell = h.effect_card("silence spell", op="silence")
    knight = h.find(lambda c: c["type"] == "unit" and {"guardian", "shield"} <= kws(c), "guardian with shield")
    v = h.vanilla()
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 0)[0] = h.unit(v)
    board(pos, 1)[0] = h.unit(knight)
    h.load(pos)
    h.step(play(0))
    h.step(target_opp(0))
    u = board(h.pos(), 1)[0]
    assert (u["keywords"], u["shield"], u["silenced"]) == (0, 0, 1)
    h.step(attack(0))
    assert h.decider() == 0, "a silenced guardian may not block"
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(v)["attack"]


def test_damage_all_enemy_units(h):
    spell = h.effect_card("damage all enemies", op="damage_all_enemy")
    amount = h.card(spell)["effect"]["amount"]
    v, shielded = h.vanilla(), h.keyword_unit("shield")
    pos = h.position()
    pos["players"][0]["hand"] = [spell]
    board(pos, 0)[0] = h.unit(v, health=amount + 5)
    board(pos, 1)[0] = h.unit(v, health=amount + 5)
    board(pos, 1)[BACK] = h.unit(v, health=amount)
    board(pos, 1)[1] = h.unit(shielded, health=amount + 5)
    h.load(pos)
    h.step(play(0))
    after = h.pos()
    assert board(after, 1)[0]["health"] == 5
    assert board(after, 1)[BACK]["card"] == 0
    assert board(after, 1)[1]["health"] == amount + 5 and board(after, 1)[1]["shield"] == 0
    assert board(after, 0)[0]["health"] == amount + 5
    assert leader(after, 1)["health"] == h.hp and leader(after, 0)["health"] == h.hp


# ---- triggers --------------------------------------------------------------------------------
def test_on_death_summons_unless_silenced(h):
    beast = h.effect_card("on-death summon", op="summon", trigger="on_death")
    e = h.card(beast)["effect"]
    spell = h.effect_card("damage spell at any enemy", op="damage", trigger="spell", target="enemy_any")
    hush = h.effect_card("silence spell", op="silence")
    dmg = h.card(spell)["effect"]["amount"]
    pos = h.position()
    pos["players"][0]["hand"] = [spell, hush, spell]
    board(pos, 1)[0] = h.unit(beast, health=dmg)
    board(pos, 1)[1] = h.unit(beast, health=dmg)
    h.load(pos)
    h.step(play(0))
    h.step(target_opp(0))
    units = board(h.pos(), 1)
    assert sum(u["card"] == e["token"] for u in units) == e["amount"]
    assert units[0]["card"] == e["token"], "the token takes the first free slot"
    h.step(play(0))  # silence the second one, then kill it
    h.step(target_opp(1))
    h.step(play(0))
    h.step(target_opp(1))
    units = board(h.pos(), 1)
    assert units[1]["card"] != beast and sum(u["card"] == e["token"] for u in units) == e["amount"]


def test_start_of_turn_trigger_fires_for_its_owner_only(h):
    mother = h.effect_card("start-of-turn summon", op="summon", trigger="start_of_turn")
    e = h.card(mother)["effect"]
    v = h.vanilla()
    pos = h.position(active=1)
    board(pos, 0)[0] = h.unit(mother)
    pos["players"][0]["deck"] = [v] * 3
    pos["players"][1]["deck"] = [v] * 3
    h.load(pos)
    h.step(PASS)  # seat 0's turn starts: its trigger fires
    tokens = lambda: sum(u["card"] == e["token"] for u in board(h.pos(), 0))  # noqa: E731
    assert tokens() == e["amount"]
    h.step(PASS)  # seat 1's turn starts: nothing for seat 0
    assert tokens() == e["amount"]


def test_end_of_turn_trigger_heals_self(h):
    treant = h.effect_card("end-of-turn self heal", op="heal", trigger="end_of_turn", target="self")
    c = h.card(treant)
    amount = c["effect"]["amount"]
    pos = h.position()
    board(pos, 0)[0] = h.unit(treant, health=c["health"] - amount - 1)
    board(pos, 0)[1] = h.unit(treant, health=c["health"] - 1)
    h.load(pos)
    h.step(PASS)
    assert board(h.pos(), 0)[0]["health"] == c["health"] - 1
    assert board(h.pos(), 0)[1]["health"] == c["health"], "healing is capped at max health"


def test_activated_ability_once_per_turn(h):
    pyra = h.find(lambda c: c["type"] == "leader" and eff(c).get("op") == "damage", "leader with a damage ability")
    e = h.card(pyra)["effect"]
    v = h.vanilla()
    pos = h.position(leaders=(pyra, pyra))
    pos["players"][0]["deck"] = [v] * 3
    pos["players"][1]["deck"] = [v] * 3
    h.load(pos)
    h.step(activate())
    assert h.pos()["phase"] == PHASES["target"]
    h.step(target_opp(LEADER_SLOT))
    after = h.pos()
    assert leader(after, 1)["health"] == h.hp - e["amount"]
    assert after["players"][0]["energy"] == 10 - e["cost"] and leader(after, 0)["ability_used"] == 1
    assert activate() not in h.legal()
    h.step(PASS)
    h.step(PASS)
    assert activate() in h.legal()
    pos = h.pos()
    pos["players"][0]["energy"] = e["cost"] - 1
    h.load(pos)
    assert activate() not in h.legal(), "an ability needs its energy cost"


def test_activated_ability_with_automatic_target(h):
    ysra = h.find(lambda c: c["type"] == "leader" and eff(c).get("op") == "summon", "leader with a summon ability")
    e = h.card(ysra)["effect"]
    h.load(h.position(leaders=(ysra, ysra)))
    h.step(activate())
    after = h.pos()
    assert after["phase"] == PHASES["main"] and board(after, 0)[0]["card"] == e["token"]


# ---- response window -------------------------------------------------------------------------
def response_position(h, spell, attacker_health, defender_energy):
    v = h.vanilla()
    pos = h.position()
    board(pos, 0)[0] = h.unit(v, health=attacker_health)
    pos["players"][1]["hand"] = [spell]
    pos["players"][1]["energy"] = defender_energy
    return pos, v


def test_response_spell_kills_the_attacker_and_the_attack_fizzles(h):
    spell = h.effect_card("response damage to the attacker", op="damage", trigger="response", target="attacker")
    amount, cost = h.card(spell)["effect"]["amount"], h.card(spell)["cost"]
    pos, v = response_position(h, spell, attacker_health=amount, defender_energy=cost)
    h.load(pos)
    assert play(0) not in h.legal()
    h.step(attack(0))
    assert h.decider() == 1 and sorted(h.legal()) == sorted([PASS, play(0)])
    h.step(play(0))
    assert h.decider() == 1 and h.legal() == [target_opp(0)], "a response spell may target only the attacker"
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 0)[0]["card"] == 0 and leader(after, 1)["health"] == h.hp
    assert h.decider() == 0 and after["phase"] == PHASES["main"]
    assert after["players"][1]["energy"] == 0


def test_response_spell_on_a_surviving_attacker_then_combat(h):
    spell = h.effect_card("response damage to the attacker", op="damage", trigger="response", target="attacker")
    amount, cost = h.card(spell)["effect"]["amount"], h.card(spell)["cost"]
    pos, v = response_position(h, spell, attacker_health=amount + 3, defender_energy=cost)
    h.load(pos)
    h.step(attack(0))
    h.step(play(0))
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 0)[0]["health"] == 3
    assert leader(after, 1)["health"] == h.hp - h.card(v)["attack"]


def test_response_needs_energy_to_open_a_window(h):
    spell = h.effect_card("response damage to the attacker", op="damage", trigger="response", target="attacker")
    pos, v = response_position(h, spell, attacker_health=50, defender_energy=h.card(spell)["cost"] - 1)
    h.load(pos)
    h.step(attack(0))
    assert h.decider() == 0, "no decision without a real option"
    assert leader(h.pos(), 1)["health"] == h.hp - h.card(v)["attack"]


def test_response_return_to_hand_on_the_attacker(h):
    spell = h.effect_card("response bounce", op="return_to_hand", trigger="response", target="attacker")
    pos, v = response_position(h, spell, attacker_health=50, defender_energy=10)
    h.load(pos)
    h.step(attack(0))
    h.step(play(0))
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 0)[0]["card"] == 0 and after["players"][0]["hand"] == [v]
    assert leader(after, 1)["health"] == h.hp


def test_token_summoned_by_a_dying_attacker_does_not_attack(h):
    spell = h.effect_card("response damage to the attacker", op="damage", trigger="response", target="attacker")
    beast = h.effect_card("on-death summon", op="summon", trigger="on_death")
    pos, _ = response_position(h, spell, attacker_health=1, defender_energy=10)
    board(pos, 0)[0] = h.unit(beast, health=h.card(spell)["effect"]["amount"])
    h.load(pos)
    h.step(attack(0))
    h.step(play(0))
    h.step(target_opp(0))
    after = h.pos()
    assert board(after, 0)[0]["card"] == h.card(beast)["effect"]["token"]
    assert leader(after, 1)["health"] == h.hp, "the dead attacker's token must not strike in its place"
    assert h.decider() == 0 and after["phase"] == PHASES["main"]


# ---- turn flow ---------------------------------------------------------------------------------
def test_fatigue_grows_on_an_empty_deck(h):
    h.load(h.position())
    expected = {0: [0, 0, 1, 1, 3, 3, 6], 1: [0, 1, 1, 3, 3, 6, 6]}  # damage taken: 1, then 2, then 3
    for step in range(7):
        pos = h.pos()
        assert [h.hp - leader(pos, s)["health"] for s in (0, 1)] == [expected[0][step], expected[1][step]]
        if step < 6:
            h.step(PASS)
    assert h.pos()["players"][1]["fatigue"] == 3


def test_hand_limit_burns_the_drawn_card(h):
    v = h.vanilla()
    spell = h.effect_card("draw spell", op="draw", trigger="spell")
    pos = h.position(active=1)
    pos["players"][0]["hand"] = [v] * MAX_HAND
    pos["players"][0]["deck"] = [spell]
    h.load(pos)
    h.step(PASS)
    me = h.pos()["players"][0]
    assert me["hand"] == [v] * MAX_HAND and me["deck"] == [] and me["discard_count"] == 1
    assert me["fatigue"] == 0


def test_turn_cap_is_a_truncated_draw():
    h = Harness(turn_cap=2)
    v = h.vanilla()
    pos = h.position(turn=3)
    for s in (0, 1):
        pos["players"][s]["deck"] = [v] * 3
    leader(pos, 1)["health"] = 5  # a lead for seat 0 must not turn into a win
    h.load(pos)
    h.step(PASS)  # turn 4: seat 1's last turn
    assert not h.env.truncations.any() and h.pos()["turn"] == 4
    h.step(PASS)
    assert h.env.truncations[:2].tolist() == [True, True]
    assert h.env.terminals[:2].tolist() == [False, False]
    assert h.env.rewards[:2].tolist() == [0.0, 0.0]
    assert h.pos()["phase"] == PHASES["mulligan"], "the game restarts itself"


@pytest.mark.parametrize("winner", [0, 1])
def test_win_rewards_and_terminals(h, winner):
    v = h.vanilla()
    pos = h.position(active=winner)
    board(pos, winner)[0] = h.unit(v)
    leader(pos, 1 - winner)["health"] = h.card(v)["attack"]
    h.load(pos)
    h.step(attack(0))
    rewards = [1.0, -1.0] if winner == 0 else [-1.0, 1.0]
    assert h.env.rewards[:2].tolist() == rewards
    assert h.env.terminals[:2].tolist() == [True, True]
    assert h.env.truncations[:2].tolist() == [False, False]


def test_fatigue_death_at_turn_start_ends_the_game(h):
    pos = h.position(active=0)
    leader(pos, 1)["health"] = 1
    h.load(pos)
    h.step(PASS)  # seat 1 draws from an empty deck and dies
    assert h.env.rewards[:2].tolist() == [1.0, -1.0]
    assert h.env.terminals[:2].tolist() == [True, True]


def test_mulligan_keep_and_redraw():
    redrawn_differs = False
    for seed in range(6):
        h = Harness()
        h.env.reset(seed)
        pos = h.pos()
        first = pos["first_player"]
        second = 1 - first
        assert pos["phase"] == PHASES["mulligan"] and h.decider() == first
        assert sorted(h.legal()) == sorted([PASS, MULLIGAN])
        assert len(pos["players"][first]["hand"]) == 4 and pos["players"][first]["spark"] == 0
        assert len(pos["players"][second]["hand"]) == 5 and pos["players"][second]["spark"] == 1
        kept = pos["players"][first]["hand"]
        cards_before = Counter(pos["players"][second]["hand"] + pos["players"][second]["deck"])
        h.step(PASS)  # the first player keeps
        assert h.pos()["players"][first]["hand"] == kept and h.decider() == second
        h.step(MULLIGAN)  # the second player redraws the whole hand
        after = h.pos()
        p2 = after["players"][second]
        assert len(p2["hand"]) == 5 and len(p2["deck"]) == LAYOUT["deck_size"] - 5
        assert Counter(p2["hand"] + p2["deck"]) == cards_before
        redrawn_differs |= sorted(p2["hand"]) != sorted(pos["players"][second]["hand"])
        assert after["phase"] == PHASES["main"] and h.decider() == first
        assert after["players"][first]["hand"][:4] == kept and len(after["players"][first]["hand"]) == 5
    assert redrawn_differs, "a mulligan never changed the hand"


def test_a_mulligan_never_overfills_the_deck(h):
    """An imported position may hold more cards than a deck has room for (a full hand and a
    full deck): the redraw keeps the deck within its array and loses no card."""
    pos = h.position()
    card = h.vanilla()
    me = pos["players"][0]
    me.update(hand=[card] * MAX_HAND, deck=[card] * LAYOUT["deck_size"], mulligan_done=0)
    pos.update(phase=PHASES["mulligan"], turn=0)
    h.load(pos)
    h.step(MULLIGAN)
    after = h.pos()["players"][0]
    assert after["deck_count"] <= LAYOUT["deck_size"]
    assert len(after["hand"]) + after["deck_count"] + after["discard_count"] == MAX_HAND + LAYOUT["deck_size"]


def test_spark_gives_one_energy_once(h):
    pos = h.position(energy=3)
    pos["players"][0]["spark"] = 1
    h.load(pos)
    h.step(SPARK)
    after = h.pos()["players"][0]
    assert after["energy"] == 4 and after["spark"] == 0
    assert SPARK not in h.legal()


def test_weapon_equips_the_leader_until_durability_runs_out(h):
    weapon = h.find(lambda c: c["type"] == "weapon", "weapon", key=lambda c: (-c["durability"], -c["id"]))
    w = h.card(weapon)
    v = h.vanilla()
    pos = h.position()
    pos["players"][0]["hand"] = [weapon]
    pos["players"][0]["deck"] = [v] * 10
    pos["players"][1]["deck"] = [v] * 10
    board(pos, 0)[1] = h.unit(v)
    h.load(pos)
    h.step(play(0))
    assert sorted(h.legal()) == sorted([target_mine(1), target_mine(LEADER_SLOT)])
    h.step(target_mine(LEADER_SLOT))
    lead = leader(h.pos(), 0)
    assert (lead["weapon_card"], lead["weapon_attack"], lead["weapon_durability"]) == (
        weapon,
        w["attack"],
        w["durability"],
    )
    for k in range(w["durability"]):
        h.step(attack(LEADER_SLOT))
        assert leader(h.pos(), 1)["health"] == h.hp - w["attack"] * (k + 1)
        assert leader(h.pos(), 0)["weapon_durability"] == w["durability"] - k - 1
        h.step(PASS)
        h.step(PASS)
    lead = leader(h.pos(), 0)
    assert (lead["weapon_card"], lead["weapon_attack"]) == (0, 0)
    assert attack(LEADER_SLOT) not in h.legal()
    assert h.pos()["players"][0]["discard_count"] == 1


def test_a_new_weapon_replaces_the_old_one(h):
    old, new = sorted(cid for cid, c in h.pool.cards.items() if c["type"] == "weapon")[:2]
    pos = h.position()
    pos["players"][0]["hand"] = [new]
    leader(pos, 0).update(weapon_card=old, weapon_attack=h.card(old)["attack"], weapon_durability=1)
    h.load(pos)
    h.step(play(0))
    h.step(target_mine(LEADER_SLOT))
    lead = leader(h.pos(), 0)
    assert (lead["weapon_card"], lead["weapon_attack"]) == (new, h.card(new)["attack"])
    assert h.pos()["players"][0]["discard_count"] == 1


def test_import_rejects_values_that_would_break_the_engine(h):
    for phase in (-1, len(PHASES)):  # return_phase becomes the phase after a target choice
        pos = h.position()
        pos["pending"]["return_phase"] = phase
        with pytest.raises(ValueError):
            h.load(pos)
    pos = h.position()
    pos["players"][1]["hand"] = [LAYOUT["max_cards"]]
    with pytest.raises(ValueError):
        h.load(pos)


# ---- the 128 bound -------------------------------------------------------------------------------
def test_big_main_phase_legal_list_is_exact_and_bounded(h):
    pyra = h.find(lambda c: c["type"] == "leader" and eff(c).get("op") == "damage", "leader with a damage ability")
    cheap = h.find(
        lambda c: c["type"] == "unit" and not c.get("token") and not eff(c), "cheap unit", key=lambda c: -c["cost"]
    )
    weapon = h.find(lambda c: c["type"] == "weapon", "weapon")
    v = h.vanilla()
    pos = h.position(leaders=(pyra, pyra))
    pos["players"][0]["spark"] = 1
    pos["players"][0]["hand"] = [cheap] * MAX_HAND
    for s in range(FRONT_SLOTS):
        board(pos, 0)[s] = h.unit(v)
        board(pos, 1)[s] = h.unit(v)
    leader(pos, 0).update(weapon_card=weapon, weapon_attack=h.card(weapon)["attack"], weapon_durability=1)
    h.load(pos)
    legal = h.legal()
    free_slots = BOARD_SLOTS - FRONT_SLOTS
    attackers = FRONT_SLOTS + 1
    expected = 2 + MAX_HAND * free_slots + attackers * (FRONT_SLOTS + 1) + 1
    assert len(legal) == expected == len(set(legal))
    assert len(legal) <= LAYOUT["max_legal"]


def test_random_play_never_exceeds_the_legal_bound():
    env = TCGEnv(num_games=16, seed=3)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    from tcgleague.games.emberfront.bots import random_actions

    seen_max = 0
    for _ in range(400):
        active = np.flatnonzero(env.masks)
        counts = features_np(env.observations[active])[:, COUNT]
        assert (counts >= 1).all() and (counts <= LAYOUT["max_legal"]).all()
        seen_max = max(seen_max, int(counts.max()))
        env.step(random_actions(env.observations, rng))
    assert seen_max > 10
