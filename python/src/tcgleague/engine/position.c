/* A flat int32 view of one game (both seats, omniscient) for hand-built test positions and
 * state inspection. Field lists are X-macros so export, import and the exported names
 * (binding.c) can never disagree. */
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

/* Imports a position; returns 0, or 1 + the index of the first out-of-range field. Only
 * bounds that protect memory and table lookups are checked; rules consistency is the
 * caller's business (hand-built test positions). */
int position_import(const Env *env, Game *g, const int32_t *in) {
    const int32_t *start = in;
#define IN_G(f) g->f = *in++;
#define IN_PE(f) g->pending.f = *in++;
#define IN_P(f) p->f = *in++;
#define IN_U(f) u->f = *in++;
#define CHECK(cond) do { if (!(cond)) return (int)(in - start); } while (0)
    GAME_FIELDS(IN_G)
    CHECK(g->phase >= 0 && g->phase < N_PHASES && (g->decider & ~1) == 0 && (g->active & ~1) == 0);
    CHECK(g->attack_slot >= 0 && g->attack_slot < UNIT_SLOTS && g->attack_target_slot >= 0 && g->attack_target_slot < UNIT_SLOTS && (g->attack_seat & ~1) == 0);
    PENDING_FIELDS(IN_PE)
    /* return_phase becomes the phase once the target is chosen */
    CHECK(!bad_card(env, g->pending.card) && (g->pending.seat & ~1) == 0 && g->pending.return_phase >= 0 &&
          g->pending.return_phase < N_PHASES);
    for (int seat = 0; seat < 2; seat++) {
        Player *p = &g->players[seat];
        PLAYER_FIELDS(IN_P)
        CHECK(p->hand_count >= 0 && p->hand_count <= MAX_HAND && p->deck_count >= 0 && p->deck_count <= DECK_SIZE);
        CHECK(p->discard_count >= 0 && p->deck_id >= 0 && p->deck_id < env->n_decks);
        for (int h = 0; h < MAX_HAND; h++) { p->hand[h] = (int16_t)*in++; CHECK(!bad_card(env, p->hand[h])); }
        for (int k = 0; k < DECK_SIZE; k++) { p->deck[k] = (int16_t)*in++; CHECK(!bad_card(env, p->deck[k])); }
        for (int s = 0; s < UNIT_SLOTS; s++) {
            Unit *u = &p->units[s];
            UNIT_FIELDS(IN_U)
            CHECK(!bad_card(env, u->card) && !bad_card(env, u->weapon_card));
        }
    }
    g->result = RESULT_NONE;
    return 0;
}
