/* Legal-action generation and action application for the deciding seat.
 * Actions are egocentric (type, a, b, c) tuples; see tcg.h for the bound of 128. */
#include <string.h>
#include "tcg.h"
#include "rules_internal.h"

#define SETTLE_GUARD 64  /* non-decisions moved past after one action, at most */

static void push(Game *g, int type, int a, int b, int c) {
    uint8_t *row = g->legal[g->n_legal++];
    row[0] = (uint8_t)type; row[1] = (uint8_t)a; row[2] = (uint8_t)b; row[3] = (uint8_t)c;
}

int can_attack(const Game *g, int seat, int slot) {
    const Unit *u = &g->players[seat].units[slot];
    if (!u->card || u->exhausted || u->frozen || unit_attack_value(u) <= 0) return 0;
    if (slot == LEADER_SLOT) return u->weapon_attack > 0;
    if (u->sick && !has_kw(u, KW_CHARGE)) return 0;
    return slot < FRONT_SLOTS || has_kw(u, KW_RANGED);
}

int can_activate(const Env *env, Game *g, int seat, int slot) {
    const Unit *u = unit_at(g, seat, slot);
    if (!u->card || u->silenced || u->ability_used) return 0;
    const int32_t *c = card_row(env, u->card);
    if (c[CF_TRIGGER] != TR_ACTIVATED || c[CF_ABILITY_COST] > g->players[seat].energy) return 0;
    Pending e = effect_of(env, u->card, seat, slot);
    return e.target_kind >= TG_FIRST_AUTOMATIC || e.target_kind == TG_NONE || any_legal_target(env, g, &e);
}

/* A spell is castable when its speed fits the phase and a chosen target (if any) exists. */
static int can_cast(const Env *env, Game *g, int seat, int card) {
    const int32_t *c = card_row(env, card);
    if (c[CF_TRIGGER] != TR_RESPONSE && (c[CF_TRIGGER] != TR_SPELL || g->phase != PH_MAIN)) return 0;
    Pending e = effect_of(env, card, seat, -1);
    return e.target_kind >= TG_FIRST_AUTOMATIC || e.target_kind == TG_NONE || any_legal_target(env, g, &e);
}

static void legal_plays(const Env *env, Game *g, int d) {
    Player *p = &g->players[d];
    for (int h = 0; h < p->hand_count; h++) {
        const int32_t *c = card_row(env, p->hand[h]);
        if (c[CF_COST] > p->energy) continue;
        if (c[CF_TYPE] == CT_SPELL) {
            if (can_cast(env, g, d, p->hand[h])) push(g, ACT_PLAY, ENT_MY_HAND + h, NONE_ENTITY, NONE_SLOT);
        } else if (g->phase != PH_MAIN) {
            continue;
        } else if (c[CF_TYPE] == CT_UNIT) {
            for (int s = 0; s < BOARD_SLOTS; s++)
                if (!unit_at(g, d, s)->card) push(g, ACT_PLAY, ENT_MY_HAND + h, NONE_ENTITY, s);
        } else if (c[CF_TYPE] == CT_WEAPON) {
            push(g, ACT_PLAY, ENT_MY_HAND + h, NONE_ENTITY, NONE_SLOT);
        }
    }
}

static void legal_main(const Env *env, Game *g, int d) {
    push(g, ACT_PASS, NONE_ENTITY, NONE_ENTITY, NONE_SLOT);
    if (g->players[d].spark) push(g, ACT_SPARK, NONE_ENTITY, NONE_ENTITY, NONE_SLOT);
    legal_plays(env, g, d);
    for (int s = 0; s < UNIT_SLOTS; s++) {
        if (!can_attack(g, d, s)) continue;
        for (int t = 0; t < FRONT_SLOTS; t++)
            if (unit_at(g, 1 - d, t)->card) push(g, ACT_ATTACK, ENT_MY_FRONT + s, ENT_OPP_FRONT + t, NONE_SLOT);
        push(g, ACT_ATTACK, ENT_MY_FRONT + s, ENT_OPP_LEADER, NONE_SLOT);
    }
    for (int s = 0; s < UNIT_SLOTS; s++)
        if (can_activate(env, g, d, s)) push(g, ACT_ACTIVATE, ENT_MY_FRONT + s, NONE_ENTITY, NONE_SLOT);
}

static void legal_response(const Env *env, Game *g, int d) {
    push(g, ACT_PASS, NONE_ENTITY, NONE_ENTITY, NONE_SLOT);
    const Unit *attacker = unit_at(g, g->attack_seat, g->attack_slot);
    if (!has_kw(attacker, KW_STEALTH)) {
        for (int s = 0; s < FRONT_SLOTS; s++) {
            const Unit *u = unit_at(g, d, s);
            if (u->card && has_kw(u, KW_GUARDIAN) && !u->exhausted && !u->frozen && s != g->attack_target_slot)
                push(g, ACT_BLOCK, ENT_MY_FRONT + s, NONE_ENTITY, NONE_SLOT);
        }
    }
    legal_plays(env, g, d);
}

void game_compute_legal(const Env *env, Game *g) {
    g->n_legal = 0;
    int d = g->decider;
    switch (g->phase) {
    case PH_MULLIGAN:
        push(g, ACT_PASS, NONE_ENTITY, NONE_ENTITY, NONE_SLOT);
        push(g, ACT_MULLIGAN, NONE_ENTITY, NONE_ENTITY, NONE_SLOT);
        break;
    case PH_MAIN: legal_main(env, g, d); break;
    case PH_RESPONSE: legal_response(env, g, d); break;
    case PH_TARGET:
        for (int seat = 0; seat < 2; seat++)
            for (int s = 0; s < UNIT_SLOTS; s++)
                if (target_is_legal(env, g, &g->pending, seat, s))
                    push(g, ACT_TARGET, NONE_ENTITY, loc_to_ent(d, seat, s), NONE_SLOT);
        break;
    }
}

/* ---- Application --------------------------------------------------------------------------- */
static void finish_mulligan(const Env *env, Game *g, int d) {
    g->players[d].mulligan_done = 1;
    if (!g->players[1 - d].mulligan_done) { g->decider = (int8_t)(1 - d); return; }
    start_turn(env, g, g->first_player);
}

static void mulligan(const Env *env, Game *g, int d) {
    Player *p = &g->players[d];
    /* (a dealt game never holds more than DECK_SIZE cards; an imported position might) */
    while (p->hand_count > 0 && p->deck_count < DECK_SIZE) {
        p->deck[p->deck_count++] = p->hand[p->hand_count - 1];
        remove_hand_card(p, p->hand_count - 1);
    }
    shuffle_deck(g, p);
    for (int i = 0; i < START_HAND + (d != g->first_player); i++) draw_card(env, g, d);
}

static void equip(const Env *env, Game *g, const Pending *e, int tseat, int tslot) {
    Unit *u = unit_at(g, tseat, tslot);
    Player *p = &g->players[tseat];
    if (u->weapon_card) add_discard(p, u->weapon_card);  /* the replaced weapon */
    const int32_t *c = card_row(env, e->card);
    u->weapon_card = e->card;
    u->weapon_attack = (int16_t)c[CF_ATTACK];
    u->weapon_durability = (int16_t)c[CF_DURABILITY];
}

static void play_card(const Env *env, Game *g, int d, int hand_idx, int slot) {
    Player *p = &g->players[d];
    int card = p->hand[hand_idx];
    const int32_t *c = card_row(env, card);
    int return_phase = g->phase;
    p->energy = (int8_t)(p->energy - c[CF_COST]);
    remove_hand_card(p, hand_idx);
    if (c[CF_TYPE] == CT_UNIT) {
        place_unit(env, g, d, slot, card);
        if (c[CF_TRIGGER] == TR_ON_PLAY) begin_effect(env, g, effect_of(env, card, d, slot), return_phase);
    } else if (c[CF_TYPE] == CT_SPELL) {
        add_discard(p, card);
        begin_effect(env, g, effect_of(env, card, d, -1), return_phase);
    } else if (c[CF_TYPE] == CT_WEAPON) {
        Pending e = effect_of(env, card, d, -1);
        e.op = OP_EQUIP; e.target_kind = TG_FRIENDLY_ANY;
        begin_effect(env, g, e, return_phase);
    }
}

static void attack(const Env *env, Game *g, int d, int slot, int target_slot) {
    Unit *u = unit_at(g, d, slot);
    u->exhausted = 1;
    g->attack_seat = (int8_t)d; g->attack_slot = (int8_t)slot; g->attack_target_slot = (int8_t)target_slot;
    if (!u->silenced) fire_trigger(env, g, d, slot, u->card, TR_ON_ATTACK);
    cleanup(env, g);
    g->phase = PH_RESPONSE;
    g->decider = (int8_t)(1 - d);
}

static void choose_target(const Env *env, Game *g, int tseat, int tslot) {
    Pending e = g->pending;
    g->phase = e.return_phase;
    g->decider = e.return_phase == PH_RESPONSE ? (int8_t)(1 - g->attack_seat) : g->active;
    if (e.op == OP_EQUIP) equip(env, g, &e, tseat, tslot);
    else apply_effect(env, g, e.seat, &e, tseat, tslot);
    memset(&g->pending, 0, sizeof(g->pending));
    cleanup(env, g);
}

/* A response window (its legal list computed) is a real choice: its attacker still stands and
 * the decider has an option besides PASS. */
static int window_stands(Game *g) {
    const Unit *a = unit_at(g, g->attack_seat, g->attack_slot);
    return a->card && a->exhausted && !a->frozen && g->n_legal > 1;
}

/* Moves past decisions that are not real choices: a response window whose only option is
 * PASS resolves the combat; a response window whose attacker is gone (removed, frozen, or
 * replaced in its slot by a unit that is not exhausted, see resolve_combat) closes. */
static void settle(const Env *env, Game *g) {
    for (int guard = 0; guard < SETTLE_GUARD && g->result == RESULT_NONE; guard++) {
        game_compute_legal(env, g);
        if (g->phase != PH_RESPONSE || window_stands(g)) return;
        resolve_combat(env, g);
    }
}

static void apply_action(const Env *env, Game *g, const uint8_t *act) {
    int d = g->decider, type = act[0], seat, slot, tseat, tslot;
    ent_to_loc(d, act[1], &seat, &slot);
    ent_to_loc(d, act[2], &tseat, &tslot);
    switch (type) {
    case ACT_PASS:
        if (g->phase == PH_MULLIGAN) finish_mulligan(env, g, d);
        else if (g->phase == PH_RESPONSE) resolve_combat(env, g);
        else end_turn(env, g);
        break;
    case ACT_MULLIGAN: mulligan(env, g, d); finish_mulligan(env, g, d); break;
    case ACT_SPARK: g->players[d].spark = 0; g->players[d].energy++; break;
    case ACT_PLAY: play_card(env, g, d, slot, act[3]); cleanup(env, g); break;
    case ACT_ATTACK: attack(env, g, d, slot, tslot); break;
    case ACT_ACTIVATE: {
        Unit *u = unit_at(g, d, slot);
        u->ability_used = 1;
        g->players[d].energy = (int8_t)(g->players[d].energy - card_row(env, u->card)[CF_ABILITY_COST]);
        begin_effect(env, g, effect_of(env, u->card, d, slot), g->phase);
        cleanup(env, g);
        break;
    }
    case ACT_TARGET: choose_target(env, g, tseat, tslot); break;
    case ACT_BLOCK:
        unit_at(g, d, slot)->exhausted = 1;
        g->attack_target_slot = (int8_t)slot;
        resolve_combat(env, g);
        break;
    }
}

void game_apply(const Env *env, Game *g, int legal_index) {
    apply_action(env, g, g->legal[legal_index]);
    settle(env, g);
}

/* game_apply for a look at what action `act` (a tuple of g's legal list) does, for the
 * observation's effects: the action, then every response window it opens passed by the
 * opponent, without the legal list game_apply computes after each step (only a window `viewer`
 * itself would decide needs one). The state is game_apply's followed by those passes, but for
 * its legal list, which is neither read nor kept up to date. */
void game_apply_look(const Env *env, Game *g, const uint8_t *act, int viewer) {
    apply_action(env, g, act);
    for (int guard = 0; guard < SETTLE_GUARD && g->result == RESULT_NONE && g->phase == PH_RESPONSE; guard++) {
        if (g->decider == viewer) {
            game_compute_legal(env, g);
            if (window_stands(g)) return;
        }
        resolve_combat(env, g);
    }
}
