/* The greedy bot: a one-ply search over the legal list with a material heuristic.
 * Each candidate is applied to a copy of the game; a chosen target or an opponent's
 * response window that follows is looked through (best target / opponent passes). */
#include <float.h>
#include "tcg.h"
#include "rules_internal.h"

static float side_value(const Env *env, const Game *g, int seat) {
    const Player *p = &g->players[seat];
    const Unit *leader = &p->units[LEADER_SLOT];
    float v = 2.0f * (leader->health > 0 ? leader->health : 0);
    v += 0.5f * leader->weapon_attack * leader->weapon_durability;
    for (int s = 0; s < BOARD_SLOTS; s++) {
        const Unit *u = &p->units[s];
        if (!u->card) continue;
        int kw = __builtin_popcount(u->keywords);
        v += 1.0f + 1.5f * (u->attack + u->weapon_attack) + u->health + 0.5f * kw + (u->shield ? 1.0f : 0.0f);
        if (u->frozen) v -= 1.0f;
        if (card_row(env, u->card)[CF_TRIGGER] == TR_START_TURN) v += 1.0f;
    }
    return v + 0.8f * p->hand_count;
}

/* The material heuristic of game g from seat me's side (a won game 1e4, a lost one -1e4): what the
 * greedy bot maximises, and what the lookahead greedy judges its play-outs by (lookahead.c). */
float greedy_value(const Env *env, const Game *g, int me) {
    if (g->result == me) return 1e4f;
    if (g->result == RESULT_DRAW) return 0.0f;
    if (g->result != RESULT_NONE) return -1e4f;
    return side_value(env, g, me) - side_value(env, g, 1 - me) + 0.1f * g->players[me].energy;
}

static float lookahead(const Env *env, Game *g, int me, int depth) {
    if (g->result != RESULT_NONE || depth >= 3) return greedy_value(env, g, me);
    if (g->phase == PH_TARGET && g->decider == me) {
        float best = -FLT_MAX;
        for (int i = 0; i < g->n_legal; i++) {
            Game sim = *g;
            game_apply(env, &sim, i);
            float v = lookahead(env, &sim, me, depth + 1);
            if (v > best) best = v;
        }
        return best;
    }
    if (g->phase == PH_RESPONSE && g->decider != me) {
        Game sim = *g;
        game_apply(env, &sim, 0);  /* the opponent passes: legal[0] is always PASS */
        return lookahead(env, &sim, me, depth + 1);
    }
    return greedy_value(env, g, me);
}

static int keep_hand(const Env *env, const Player *p) {
    int cheap = 0;
    for (int h = 0; h < p->hand_count; h++) cheap += card_row(env, p->hand[h])[CF_COST] <= 3;
    return cheap >= 2;
}

/* Returns the legal index the greedy bot picks for the game's decider. */
int greedy_choice(const Env *env, const Game *g) {
    int me = g->decider;
    if (g->phase == PH_MULLIGAN) return keep_hand(env, &g->players[me]) ? 0 : 1;
    float best = -FLT_MAX;
    int best_i = 0;
    for (int i = 0; i < g->n_legal; i++) {
        float v;
        if (g->phase == PH_MAIN && g->legal[i][0] == ACT_PASS) {
            v = greedy_value(env, g, me);  /* ending the turn keeps the board as it is */
        } else {
            Game sim = *g;
            game_apply(env, &sim, i);
            v = lookahead(env, &sim, me, 0);
        }
        if (v > best + 1e-4f) { best = v; best_i = i; }
    }
    return best_i;
}
