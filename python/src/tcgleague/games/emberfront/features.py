"""How TCGPolicy reads the engine's observation: the fixed scale of each numeric feature (raw
values are small integers), the categorical features it embeds rather than scales, and the
entity groups (zones) it pools over. Names and offsets come from the engine's exported `LAYOUT`."""

from __future__ import annotations

from .engine import LAYOUT

# Fixed feature scales by name (raw values are small integers). Unlisted numeric features get
# DEFAULT_SCALE, so a feature added to the engine is still sensibly scaled.
DEFAULT_SCALE = 0.1
ENTITY_SCALES = {
    "present": 1.0,
    "cost": 0.1,
    "attack": 0.1,
    "health": 1 / 30,
    "max_health": 1 / 30,
    "exhausted": 1.0,
    "frozen": 1.0,
    "sick": 1.0,
    "shield": 1.0,
    "silenced": 1.0,
    "weapon_attack": 0.1,
    "weapon_durability": 0.2,
    "temp_attack": 0.1,
    "can_act": 1.0,
}
GLOBAL_SCALES = {
    "turn": 1 / 60,
    "my_turn": 1.0,
    "phase_mulligan": 1.0,
    "phase_main": 1.0,
    "phase_response": 1.0,
    "phase_target": 1.0,
    "my_energy": 0.1,
    "my_max_energy": 0.1,
    "opp_energy": 0.1,
    "opp_max_energy": 0.1,
    "my_spark": 1.0,
    "opp_spark": 1.0,
    "my_hand": 1 / 8,
    "opp_hand": 1 / 8,
    "my_deck": 1 / 30,
    "opp_deck": 1 / 30,
    "my_discard": 1 / 30,
    "opp_discard": 1 / 30,
    "my_fatigue": 0.1,
    "opp_fatigue": 0.1,
    "seat": 1.0,
    "i_went_first": 1.0,
    "pending_amount": 0.1,
    "my_leader_ability_used": 1.0,
    "opp_leader_ability_used": 1.0,
    "turns_left": 1 / 60,
}
# Action effects (changes of health and attack get DEFAULT_SCALE; counts and flags these).
EFFECT_SCALES = {"my_units": 0.5, "opp_units": 0.5, "my_hand": 0.5, "win": 1.0, "loss": 1.0}
# Categorical entity / global features, embedded rather than scaled.
ENTITY_CATEGORICAL = ("card", "type")
GLOBAL_CATEGORICAL = (
    "pending_card",
    "pending_op",
    "attacker_entity",
    "attack_target_entity",
    "my_deck_id",
    "opp_deck_id",
)


def entity_groups() -> list[tuple[str, int, int]]:
    """(name, first entity, end) of each entity group (zone), in order."""
    starts = sorted(LAYOUT["entity_groups"].items(), key=lambda kv: kv[1])
    out = []
    for i, (name, s) in enumerate(starts):
        e = starts[i + 1][1] if i + 1 < len(starts) else LAYOUT["n_entities"]
        out.append((name, s, e))
    return out
