/* Emberfront rules: zones, damage and keywords, effects and triggers, turn flow.
 * Legal-action generation and action application live in actions.c. */
#include <string.h>
#include "tcg.h"
#include "rules_internal.h"

/* ---- Deterministic RNG (splitmix64 -> 32 bits) -------------------------------------- */
uint32_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

int rng_below(uint64_t *s, int n) { return n <= 1 ? 0 : (int)(rng_next(s) % (uint32_t)n); }

/* The state after n draws without drawing them: each draw only adds the constant. */
void rng_skip(uint64_t *s, int n) { *s += (uint64_t)n * 0x9E3779B97F4A7C15ull; }

/* ---- Locations ------------------------------------------------------------------------ */
/* Egocentric entity -> (seat, slot). Returns LOC_BOARD, LOC_HAND (slot = hand index) or LOC_NONE. */
int ent_to_loc(int viewer, int ent, int *seat, int *slot) {
    if (ent >= ENT_MY_HAND && ent < ENT_MY_FRONT) { *seat = viewer; *slot = ent - ENT_MY_HAND; return LOC_HAND; }
    if (ent >= ENT_MY_FRONT && ent <= ENT_MY_LEADER) { *seat = viewer; *slot = ent - ENT_MY_FRONT; return LOC_BOARD; }
    if (ent >= ENT_OPP_FRONT && ent <= ENT_OPP_LEADER) { *seat = 1 - viewer; *slot = ent - ENT_OPP_FRONT; return LOC_BOARD; }
    return LOC_NONE;
}

int loc_to_ent(int viewer, int seat, int slot) {
    return (seat == viewer ? ENT_MY_FRONT : ENT_OPP_FRONT) + slot;
}

int unit_attack_value(const Unit *u) {
    int v = u->attack + u->temp_attack + u->weapon_attack;
    return v > 0 ? v : 0;
}

/* ---- Zones ------------------------------------------------------------------------------ */
/* The pile keeps its first MAX_DISCARD cards and its count stops there too, so every reachable
 * state passes the bounds check a resumed game is held to. */
void add_discard(Player *p, int card) {
    if (p->discard_count < MAX_DISCARD) p->discard[p->discard_count++] = (int16_t)card;
}

void place_unit(const Env *env, Game *g, int seat, int slot, int card) {
    const int32_t *c = card_row(env, card);
    Unit *u = unit_at(g, seat, slot);
    memset(u, 0, sizeof(*u));
    u->card = (int16_t)card;
    u->attack = (int16_t)c[CF_ATTACK];
    u->health = u->max_health = (int16_t)c[CF_HEALTH];
    u->keywords = (uint16_t)c[CF_KEYWORDS];
    u->shield = (uint8_t)has_kw(u, KW_SHIELD);
    u->sick = (uint8_t)!has_kw(u, KW_CHARGE);
}

int first_free_slot(Game *g, int seat) {
    for (int s = 0; s < BOARD_SLOTS; s++) if (!unit_at(g, seat, s)->card) return s;
    return -1;
}

void deal_damage(const Env *env, Game *g, int seat, int slot, int amount, int src_seat, int src_slot);

void draw_card(const Env *env, Game *g, int seat) {
    Player *p = &g->players[seat];
    if (p->deck_count == 0) {
        p->fatigue++;
        deal_damage(env, g, seat, LEADER_SLOT, p->fatigue, -1, -1);
        return;
    }
    int card = p->deck[--p->deck_count];
    if (p->hand_count >= MAX_HAND) add_discard(p, card);     /* burned */
    else p->hand[p->hand_count++] = (int16_t)card;
}

void remove_hand_card(Player *p, int idx) {
    for (int i = idx; i < p->hand_count - 1; i++) p->hand[i] = p->hand[i + 1];
    p->hand[--p->hand_count] = 0;
}

/* A returned token ceases to exist; a card goes back to hand (or the discard when full). */
static void return_to_hand(const Env *env, Game *g, int seat, int slot) {
    Player *p = &g->players[seat];
    Unit *u = unit_at(g, seat, slot);
    int token = card_row(env, u->card)[CF_IS_TOKEN];
    if (!token && p->hand_count < MAX_HAND) p->hand[p->hand_count++] = u->card;
    else if (!token) add_discard(p, u->card);
    if (u->weapon_card) add_discard(p, u->weapon_card);
    memset(u, 0, sizeof(*u));
}

void shuffle_deck(Game *g, Player *p) {
    for (int i = p->deck_count - 1; i > 0; i--) {
        int j = rng_below(&g->rng, i + 1);
        int16_t t = p->deck[i]; p->deck[i] = p->deck[j]; p->deck[j] = t;
    }
}

/* ---- Damage and keywords ---------------------------------------------------------------- */
static void heal(Unit *u, int amount) {
    u->health = (int16_t)(u->health + amount > u->max_health ? u->max_health : u->health + amount);
}

/* Deals damage from an optional source unit (src_slot < 0: a spell or fatigue).
 * Shield absorbs it; Venom destroys a damaged unit; Lifesteal heals the source's leader;
 * Frenzy grows a damaged survivor. */
void deal_damage(const Env *env, Game *g, int seat, int slot, int amount, int src_seat, int src_slot) {
    (void)env;
    Unit *u = unit_at(g, seat, slot);
    if (!u->card || amount <= 0) return;
    if (u->shield) { u->shield = 0; return; }
    u->health = (int16_t)(u->health - amount);
    if (src_slot >= 0) {
        Unit *src = unit_at(g, src_seat, src_slot);
        if (has_kw(src, KW_VENOM) && slot != LEADER_SLOT) u->health = 0;
        if (has_kw(src, KW_LIFESTEAL)) heal(unit_at(g, src_seat, LEADER_SLOT), amount);
    }
    if (u->health > 0 && slot != LEADER_SLOT && has_kw(u, KW_FRENZY)) u->attack++;
}

/* ---- Effects ------------------------------------------------------------------------------ */
static void discard_random(Game *g, int seat, int amount) {
    Player *p = &g->players[seat];
    for (int i = 0; i < amount && p->hand_count > 0; i++) {
        int idx = rng_below(&g->rng, p->hand_count);
        int card = p->hand[idx];
        remove_hand_card(p, idx);
        add_discard(p, card);
    }
}

static void summon(const Env *env, Game *g, int seat, int token, int amount) {
    for (int i = 0; i < amount; i++) {
        int slot = first_free_slot(g, seat);
        if (slot < 0 || token <= 0) return;
        place_unit(env, g, seat, slot, token);
    }
}

/* Applies one effect to one target unit (tslot < 0 for effects with no unit target). */
void apply_effect(const Env *env, Game *g, int seat, const Pending *e, int tseat, int tslot) {
    Unit *t = tslot >= 0 ? unit_at(g, tseat, tslot) : NULL;
    if (tslot >= 0 && !t->card) return;
    switch (e->op) {
    case OP_DAMAGE: deal_damage(env, g, tseat, tslot, e->amount, seat, -1); break;
    case OP_HEAL: heal(t, e->amount); break;
    case OP_DRAW: for (int i = 0; i < e->amount; i++) draw_card(env, g, seat); break;
    case OP_BUFF:
        t->attack = (int16_t)(t->attack + e->amount);
        t->health = (int16_t)(t->health + e->amount2);
        t->max_health = (int16_t)(t->max_health + e->amount2);
        break;
    case OP_BUFF_TEMP: t->temp_attack = (int16_t)(t->temp_attack + e->amount); break;
    case OP_FREEZE: t->frozen = (uint8_t)(tseat == g->active ? 2 : 1); break;
    case OP_DESTROY: if (tslot != LEADER_SLOT) t->health = 0; break;
    case OP_SUMMON: summon(env, g, seat, card_row(env, e->card)[CF_TOKEN], e->amount); break;
    case OP_GAIN_ENERGY: {
        Player *p = &g->players[seat];
        p->energy = (int8_t)(p->energy + e->amount > MAX_ENERGY ? MAX_ENERGY : p->energy + e->amount);
        break;
    }
    case OP_DISCARD_RANDOM: discard_random(g, 1 - seat, e->amount); break;
    case OP_RETURN_TO_HAND: if (tslot != LEADER_SLOT) return_to_hand(env, g, tseat, tslot); break;
    case OP_SILENCE:
        if (tslot == LEADER_SLOT) break;
        t->keywords = 0; t->shield = 0; t->silenced = 1; t->frozen = 0; t->temp_attack = 0;
        break;
    case OP_DAMAGE_ALL_ENEMY:
        for (int s = 0; s < BOARD_SLOTS; s++) deal_damage(env, g, 1 - seat, s, e->amount, seat, -1);
        break;
    default: break;
    }
}

/* Is (tseat, tslot) a legal chosen target for effect e controlled by e->seat? */
int target_is_legal(const Env *env, Game *g, const Pending *e, int tseat, int tslot) {
    Unit *t = unit_at(g, tseat, tslot);
    if (!t->card) return 0;
    int mine = tseat == e->seat, leader = tslot == LEADER_SLOT;
    int ok;
    switch (e->target_kind) {
    case TG_ANY: ok = 1; break;
    case TG_ANY_UNIT: ok = !leader; break;
    case TG_ENEMY_ANY: ok = !mine; break;
    case TG_ENEMY_UNIT: ok = !mine && !leader; break;
    case TG_FRIENDLY_ANY: ok = mine; break;
    case TG_FRIENDLY_UNIT: ok = mine && !leader; break;
    case TG_ATTACKER: ok = g->phase == PH_RESPONSE || e->return_phase == PH_RESPONSE
                           ? (tseat == g->attack_seat && tslot == g->attack_slot) : 0; break;
    default: ok = 0;
    }
    if (ok && e->op == OP_DESTROY && card_row(env, t->card)[CF_COST] > e->max_target_cost) ok = 0;
    if (ok && (e->op == OP_RETURN_TO_HAND || e->op == OP_SILENCE) && leader) ok = 0;
    return ok;
}

int any_legal_target(const Env *env, Game *g, const Pending *e) {
    for (int seat = 0; seat < 2; seat++)
        for (int slot = 0; slot < UNIT_SLOTS; slot++)
            if (target_is_legal(env, g, e, seat, slot)) return 1;
    return 0;
}

/* Builds the effect description of `card` fired by `seat` from `source_slot` (-1: none). */
Pending effect_of(const Env *env, int card, int seat, int source_slot) {
    const int32_t *c = card_row(env, card);
    Pending e;
    memset(&e, 0, sizeof(e));
    e.seat = (int8_t)seat; e.op = (int8_t)c[CF_OP]; e.target_kind = (int8_t)c[CF_TARGET];
    e.source_slot = (int8_t)source_slot; e.card = (int16_t)card;
    e.amount = (int16_t)c[CF_AMOUNT]; e.amount2 = (int16_t)c[CF_AMOUNT2];
    e.max_target_cost = (int16_t)(c[CF_MAX_TARGET_COST] ? c[CF_MAX_TARGET_COST] : 99);
    return e;
}

/* Resolves an effect whose target is automatic (or absent). */
static void resolve_automatic(const Env *env, Game *g, const Pending *e) {
    int seat = e->seat;
    switch (e->target_kind) {
    case TG_SELF: if (e->source_slot >= 0) apply_effect(env, g, seat, e, seat, e->source_slot); break;
    case TG_MY_LEADER: apply_effect(env, g, seat, e, seat, LEADER_SLOT); break;
    case TG_ENEMY_LEADER: apply_effect(env, g, seat, e, 1 - seat, LEADER_SLOT); break;
    case TG_RANDOM_ENEMY_UNIT: {
        int slots[BOARD_SLOTS], n = 0;
        for (int s = 0; s < BOARD_SLOTS; s++) if (unit_at(g, 1 - seat, s)->card) slots[n++] = s;
        if (n) apply_effect(env, g, seat, e, 1 - seat, slots[rng_below(&g->rng, n)]);
        break;
    }
    case TG_ALL_FRIENDLY_UNITS:
        for (int s = 0; s < BOARD_SLOTS; s++) if (unit_at(g, seat, s)->card) apply_effect(env, g, seat, e, seat, s);
        break;
    default: apply_effect(env, g, seat, e, seat, -1); break;
    }
}

/* Starts an effect: automatic ones resolve now; chosen ones open a pending target decision
 * (or fizzle when nothing can be targeted). Returns 1 when a decision was opened. */
int begin_effect(const Env *env, Game *g, Pending e, int return_phase) {
    if (e.op == OP_NONE) return 0;
    if (e.target_kind >= TG_FIRST_AUTOMATIC || e.target_kind == TG_NONE) {
        resolve_automatic(env, g, &e);
        return 0;
    }
    e.return_phase = (int8_t)return_phase;
    if (!any_legal_target(env, g, &e)) return 0;
    g->pending = e;
    g->phase = PH_TARGET;
    g->decider = e.seat;
    return 1;
}

/* Fires a unit's automatic trigger (on attack / death / start / end of turn). */
void fire_trigger(const Env *env, Game *g, int seat, int slot, int card, int trigger) {
    const int32_t *c = card_row(env, card);
    if (c[CF_TRIGGER] != trigger) return;
    Pending e = effect_of(env, card, seat, slot);
    if (e.target_kind >= TG_FIRST_AUTOMATIC || e.target_kind == TG_NONE) begin_effect(env, g, e, g->phase);
}

/* ---- Deaths and game end ---------------------------------------------------------------- */
static void check_game_over(Game *g) {
    int dead0 = g->players[0].units[LEADER_SLOT].health <= 0;
    int dead1 = g->players[1].units[LEADER_SLOT].health <= 0;
    if (dead0 && dead1) g->result = RESULT_DRAW;
    else if (dead0) g->result = RESULT_SEAT1;
    else if (dead1) g->result = RESULT_SEAT0;
}

/* Bit s: the unit in board slot s of `seat` is dead. Branch-free: most cleanups find no death,
 * and a scan that branched on each slot's occupancy would mispredict. */
static unsigned dead_slots(const Game *g, int seat) {
    unsigned dead = 0;
    for (int slot = 0; slot < BOARD_SLOTS; slot++) {
        const Unit *u = &g->players[seat].units[slot];
        dead |= (unsigned)((u->card != 0) & (u->health <= 0)) << slot;
    }
    return dead;
}

int any_dead(const Game *g) { return (dead_slots(g, 0) | dead_slots(g, 1)) != 0; }

/* Removes dead units (active seat first, by slot), fires their death triggers, repeats until
 * stable. A trigger can kill or fill a later slot, so the dead are looked up again after each. */
void cleanup(const Env *env, Game *g) {
    for (int round = 0; round < 2 * UNIT_SLOTS && any_dead(g); round++) {
        int any = 0;
        for (int k = 0; k < 2; k++) {
            int seat = k == 0 ? g->active : 1 - g->active;
            unsigned later;
            for (int slot = -1; (later = dead_slots(g, seat) >> (slot + 1)) != 0;) {
                slot += 1 + __builtin_ctz(later);
                Unit *u = unit_at(g, seat, slot);
                int card = u->card, silenced = u->silenced;
                add_discard(&g->players[seat], card);
                if (u->weapon_card) add_discard(&g->players[seat], u->weapon_card);
                memset(u, 0, sizeof(*u));
                if (!silenced) fire_trigger(env, g, seat, -1, card, TR_ON_DEATH);
                any = 1;
            }
        }
        if (!any) break;
    }
    check_game_over(g);
}

/* ---- Combat ------------------------------------------------------------------------------- */
static void spend_weapon(Player *p, Unit *u) {
    if (!u->weapon_card) return;
    if (--u->weapon_durability > 0) return;
    add_discard(p, u->weapon_card);
    u->weapon_card = u->weapon_attack = u->weapon_durability = 0;
}

/* Simultaneous strike between the pending attacker and its (possibly blocked) target. */
void resolve_combat(const Env *env, Game *g) {
    int as = g->attack_seat, aslot = g->attack_slot, ds = 1 - as, dslot = g->attack_target_slot;
    Unit *a = unit_at(g, as, aslot), *d = unit_at(g, ds, dslot);
    g->phase = PH_MAIN;
    g->decider = g->active;
    /* Removed or frozen in response: fizzles. Attacking exhausted the attacker, so a unit that
     * is not exhausted in its slot is a newcomer (e.g. a token its death summoned). */
    if (!a->card || !a->exhausted || !d->card || a->frozen) return;
    int dmg_a = unit_attack_value(a), dmg_d = dslot == LEADER_SLOT ? 0 : unit_attack_value(d);
    spend_weapon(&g->players[as], a);
    deal_damage(env, g, ds, dslot, dmg_a, as, aslot);
    deal_damage(env, g, as, aslot, dmg_d, ds, dslot);
    cleanup(env, g);
}

/* ---- Turn flow ------------------------------------------------------------------------------ */
void start_turn(const Env *env, Game *g, int seat) {
    g->turn++;
    if (g->turn > 2 * env->turn_cap) { g->result = RESULT_DRAW; g->stat.truncated = 1; return; }
    g->active = g->decider = (int8_t)seat;
    g->phase = PH_MAIN;
    Player *p = &g->players[seat];
    if (p->max_energy < MAX_ENERGY) p->max_energy++;
    p->energy = p->max_energy;
    for (int s = 0; s < UNIT_SLOTS; s++) {
        Unit *u = &p->units[s];
        u->exhausted = 0; u->sick = 0; u->ability_used = 0;
    }
    for (int s = 0; s < BOARD_SLOTS; s++) {
        Unit *u = &p->units[s];
        if (u->card && !u->silenced) fire_trigger(env, g, seat, s, u->card, TR_START_TURN);
    }
    draw_card(env, g, seat);
    cleanup(env, g);
}

void end_turn(const Env *env, Game *g) {
    int seat = g->active;
    Player *p = &g->players[seat];
    for (int s = 0; s < BOARD_SLOTS; s++) {
        Unit *u = &p->units[s];
        if (u->card && !u->silenced) fire_trigger(env, g, seat, s, u->card, TR_END_TURN);
    }
    cleanup(env, g);
    if (g->result != RESULT_NONE) return;
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < UNIT_SLOTS; s++) g->players[k].units[s].temp_attack = 0;
    for (int s = 0; s < UNIT_SLOTS; s++) if (p->units[s].frozen) p->units[s].frozen--;
    start_turn(env, g, 1 - seat);
}

/* ---- Reset ------------------------------------------------------------------------------------ */
static void setup_player(const Env *env, Game *g, int seat, int deck_id, uint64_t shuffle_seed) {
    Player *p = &g->players[seat];
    memset(p, 0, sizeof(*p));
    p->deck_id = (int16_t)deck_id;
    for (int i = 0; i < DECK_SIZE; i++) p->deck[i] = (int16_t)env->decks[deck_id * DECK_SIZE + i];
    p->deck_count = DECK_SIZE;
    uint64_t saved = g->rng;
    g->rng = shuffle_seed;
    shuffle_deck(g, p);
    g->rng = saved;
    int leader = env->deck_leaders[deck_id];
    Unit *l = &p->units[LEADER_SLOT];
    l->card = (int16_t)leader;
    l->health = l->max_health = (int16_t)card_row(env, leader)[CF_HEALTH];
    for (int i = 0; i < START_HAND; i++) draw_card(env, g, seat);
}

/* A deal is (seed, deck per seat). `swapped` replays the same deal with the seats exchanged:
 * each side keeps its shuffle stream and the first player flips, so duplicate evaluation can
 * give both players the same cards from either seat. */
void game_reset(const Env *env, Game *g, uint64_t seed, int deck0, int deck1, int swapped) {
    memset(g, 0, sizeof(*g));
    uint64_t deal = seed;
    uint64_t side_seed[2] = {((uint64_t)rng_next(&deal) << 32) | rng_next(&deal),
                             ((uint64_t)rng_next(&deal) << 32) | rng_next(&deal)};
    g->rng = ((uint64_t)rng_next(&deal) << 32) | rng_next(&deal);
    g->result = RESULT_NONE;
    g->first_player = (int8_t)(rng_below(&deal, 2) ^ (swapped & 1));
    setup_player(env, g, 0, deck0, side_seed[swapped & 1]);
    setup_player(env, g, 1, deck1, side_seed[1 - (swapped & 1)]);
    Player *second = &g->players[1 - g->first_player];
    second->spark = 1;
    draw_card(env, g, 1 - g->first_player);  /* the second player's extra card */
    g->phase = PH_MULLIGAN;
    g->active = g->decider = g->first_player;
    g->stat.first_player = g->first_player;
    g->stat.deck[0] = deck0; g->stat.deck[1] = deck1;
    g->stat.winner = RESULT_NONE;
    game_compute_legal(env, g);
}
