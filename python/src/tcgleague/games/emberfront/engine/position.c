/* A flat int32 view of one game (both seats, omniscient) for hand-built test positions and
 * state inspection. Field lists are X-macros so export, import and the exported names
 * (binding.c) can never disagree. */
#include <stddef.h>

#include "tcg.h"
#include "rules_internal.h"

#define GAME_FIELDS(X) X(turn) X(first_player) X(active) X(decider) X(phase) X(result) \
    X(attack_seat) X(attack_slot) X(attack_target_slot)
#define PENDING_FIELDS(X) X(seat) X(op) X(target_kind) X(source_slot) X(return_phase) X(card) \
    X(amount) X(amount2) X(max_target_cost)
#define PLAYER_FIELDS(X) X(hand_count) X(deck_count) X(energy) X(max_energy) X(spark) X(fatigue) \
    X(mulligan_done) X(discard_count) X(deck_id)
#define UNIT_FIELDS(X) X(card) X(attack) X(health) X(max_health) X(temp_attack) X(weapon_card) \
    X(weapon_attack) X(weapon_durability) X(keywords) X(exhausted) X(frozen) X(sick) X(shield) \
    X(silenced) X(ability_used)
#define COUNT(f) + 1
#define NAME(f) #f,
enum { N_GAME_F = 0 GAME_FIELDS(COUNT), N_PENDING_F = 0 PENDING_FIELDS(COUNT),
       N_PLAYER_F = 0 PLAYER_FIELDS(COUNT), N_UNIT_F = 0 UNIT_FIELDS(COUNT) };
#define SEAT_SIZE (N_PLAYER_F + MAX_HAND + DECK_SIZE + UNIT_SLOTS * N_UNIT_F)

const char *POSITION_GAME_NAMES[] = {GAME_FIELDS(NAME) 0};
const char *POSITION_PENDING_NAMES[] = {PENDING_FIELDS(NAME) 0};
const char *POSITION_PLAYER_NAMES[] = {PLAYER_FIELDS(NAME) 0};
const char *POSITION_UNIT_NAMES[] = {UNIT_FIELDS(NAME) 0};

int position_size(void) { return N_GAME_F + N_PENDING_F + 2 * SEAT_SIZE; }

void position_export(const Game *g, int32_t *out) {
#define OUT_G(f) *out++ = g->f;
#define OUT_PE(f) *out++ = g->pending.f;
#define OUT_P(f) *out++ = p->f;
#define OUT_U(f) *out++ = u->f;
    GAME_FIELDS(OUT_G)
    PENDING_FIELDS(OUT_PE)
    for (int seat = 0; seat < 2; seat++) {
        const Player *p = &g->players[seat];
        PLAYER_FIELDS(OUT_P)
        for (int h = 0; h < MAX_HAND; h++) *out++ = p->hand[h];
        for (int k = 0; k < DECK_SIZE; k++) *out++ = p->deck[k];
        for (int s = 0; s < UNIT_SLOTS; s++) { const Unit *u = &p->units[s]; UNIT_FIELDS(OUT_U) }
    }
}

static int bad_card(const Env *env, int card) { return card < 0 || card >= env->n_cards; }
static int bad_seat(int seat) { return (seat & ~1) != 0; }
static int bad_slot(int slot) { return slot < 0 || slot >= UNIT_SLOTS; }
static int bad_phase(int phase) { return phase < 0 || phase >= N_PHASES; }

/* NULL when every field of `g` that indexes an array or a card/deck table is in range, so no
 * step, observation or render reads outside memory; else the name of the first bad field.
 * Rules consistency is not checked (hand-built test positions need not be reachable). */
const char *game_bounds_error(const Env *env, const Game *g) {
#define REQUIRE(ok, name) do { if (!(ok)) return name; } while (0)
    REQUIRE(!bad_phase(g->phase), "phase");
    REQUIRE(!bad_seat(g->decider) && !bad_seat(g->active) && !bad_seat(g->first_player), "decider/active/first_player");
    REQUIRE(g->result >= RESULT_NONE && g->result <= RESULT_DRAW, "result");
    REQUIRE(!bad_seat(g->attack_seat) && !bad_slot(g->attack_slot) && !bad_slot(g->attack_target_slot), "attack");
    const Pending *e = &g->pending;
    REQUIRE(!bad_card(env, e->card) && !bad_seat(e->seat) && !bad_phase(e->return_phase), "pending");
    REQUIRE(e->source_slot >= -1 && e->source_slot < UNIT_SLOTS, "pending.source_slot");
    REQUIRE(g->n_legal >= 0 && g->n_legal <= MAX_LEGAL, "n_legal");
    const EpisodeStat *st = &g->stat;  /* read back by name when the game ends */
    REQUIRE(st->deck[0] >= 0 && st->deck[0] < env->n_decks && st->deck[1] >= 0 && st->deck[1] < env->n_decks,
            "stat.deck");
    REQUIRE(!bad_seat(st->first_player) && st->winner >= RESULT_NONE && st->winner <= RESULT_DRAW, "stat");
    for (int seat = 0; seat < 2; seat++) {
        const Player *p = &g->players[seat];
        REQUIRE(p->hand_count >= 0 && p->hand_count <= MAX_HAND, "hand_count");
        REQUIRE(p->deck_count >= 0 && p->deck_count <= DECK_SIZE, "deck_count");
        REQUIRE(p->discard_count >= 0 && p->discard_count <= MAX_DISCARD, "discard_count");
        REQUIRE(p->deck_id >= 0 && p->deck_id < env->n_decks, "deck_id");
        for (int h = 0; h < MAX_HAND; h++) REQUIRE(!bad_card(env, p->hand[h]), "hand");
        for (int k = 0; k < DECK_SIZE; k++) REQUIRE(!bad_card(env, p->deck[k]), "deck");
        for (int k = 0; k < MAX_DISCARD; k++) REQUIRE(!bad_card(env, p->discard[k]), "discard");
        for (int s = 0; s < UNIT_SLOTS; s++)
            REQUIRE(!bad_card(env, p->units[s].card) && !bad_card(env, p->units[s].weapon_card), "units");
    }
    return NULL;
#undef REQUIRE
}

/* Imports a position; returns NULL or the name of the first out-of-range field (the game is
 * then unusable: import into a copy). */
const char *position_import(const Env *env, Game *g, const int32_t *in) {
#define IN_G(f) g->f = *in++;
#define IN_PE(f) g->pending.f = *in++;
#define IN_P(f) p->f = *in++;
#define IN_U(f) u->f = *in++;
    GAME_FIELDS(IN_G)
    PENDING_FIELDS(IN_PE)
    for (int seat = 0; seat < 2; seat++) {
        Player *p = &g->players[seat];
        PLAYER_FIELDS(IN_P)
        for (int h = 0; h < MAX_HAND; h++) p->hand[h] = (int16_t)*in++;
        for (int k = 0; k < DECK_SIZE; k++) p->deck[k] = (int16_t)*in++;
        for (int s = 0; s < UNIT_SLOTS; s++) {
            Unit *u = &p->units[s];
            UNIT_FIELDS(IN_U)
        }
    }
    g->result = RESULT_NONE;
    return game_bounds_error(env, g);
}
