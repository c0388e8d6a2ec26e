/* Helpers shared by the engine's .c files; not part of the env API. */
#ifndef RULES_INTERNAL_H
#define RULES_INTERNAL_H
#include "tcg.h"

enum { LOC_NONE, LOC_BOARD, LOC_HAND };
#define OP_EQUIP N_OPS  /* internal op: attach a played weapon to the chosen friendly unit */

static inline const int32_t *card_row(const Env *env, int card) { return env->cards + card * CARD_FIELDS; }
static inline int has_kw(const Unit *u, int kw) { return (u->keywords >> kw) & 1; }
/* An attack is waiting on a response: its window, or a target chosen inside it. */
static inline int in_response_window(const Game *g) {
    return g->phase == PH_RESPONSE || (g->phase == PH_TARGET && g->pending.return_phase == PH_RESPONSE);
}

int rng_below(uint64_t *s, int n);
void rng_skip(uint64_t *s, int n);
void place_unit(const Env *env, Game *g, int seat, int slot, int card);
int first_free_slot(Game *g, int seat);
void draw_card(const Env *env, Game *g, int seat);
void remove_hand_card(Player *p, int idx);
void add_discard(Player *p, int card);
void shuffle_deck(Game *g, Player *p);
void deal_damage(const Env *env, Game *g, int seat, int slot, int amount, int src_seat, int src_slot);
void apply_effect(const Env *env, Game *g, int seat, const Pending *e, int tseat, int tslot);
int target_is_legal(const Env *env, Game *g, const Pending *e, int tseat, int tslot);
int any_legal_target(const Env *env, Game *g, const Pending *e);
Pending effect_of(const Env *env, int card, int seat, int source_slot);
int begin_effect(const Env *env, Game *g, Pending e, int return_phase);
void fire_trigger(const Env *env, Game *g, int seat, int slot, int card, int trigger);
int any_dead(const Game *g);
void cleanup(const Env *env, Game *g);
void resolve_combat(const Env *env, Game *g);
void start_turn(const Env *env, Game *g, int seat);
void end_turn(const Env *env, Game *g);
void build_card_obs(Env *env);
int can_attack(const Game *g, int seat, int slot);
int can_activate(const Env *env, Game *g, int seat, int slot);
#endif
