/* Decision-time lookahead for a learned policy (python: lookahead.LookaheadActor).
 *
 * Each legal action of a game's decider is applied to a copy of the game in which what the
 * decider cannot see is re-drawn: both decks are reshuffled and the rng reseeded from `salt`.
 * A lookahead therefore never reads the real order of a deck, so a searched move is one the
 * decider could have worked out itself. Every candidate shares the same re-draw (common random
 * numbers): candidates differ by the action, not by their luck. An opponent's response window
 * that follows is looked through as a pass (legal[0] is always PASS), as the greedy bot does. */
#include <stddef.h>
#include "tcg.h"
#include "rules_internal.h"

#define LOOK_RESPONSES 4  /* response windows looked through after a candidate */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int look_one(const Env *env, const Game *g, int i, uint64_t salt, float *obs) {
    int me = g->decider;
    Game sim = *g;
    sim.rng = mix64(salt + 0x9E3779B97F4A7C15ull);
    shuffle_deck(&sim, &sim.players[0]);
    shuffle_deck(&sim, &sim.players[1]);
    game_apply(env, &sim, i);
    for (int k = 0; k < LOOK_RESPONSES && sim.result == RESULT_NONE && sim.phase == PH_RESPONSE && sim.decider != me; k++)
        game_apply(env, &sim, 0);
    if (sim.result == RESULT_DRAW) return LOOK_DRAW;
    if (sim.result != RESULT_NONE) return sim.result == me ? LOOK_WIN : LOOK_LOSS;
    if (sim.decider != me) return LOOK_WAIT;
    write_observation(env, &sim, me, obs);
    return LOOK_DECIDE;
}

/* For each legal action i of game g: status[i] (LOOK_*) and, for LOOK_DECIDE, obs[i] = the
 * decider's observation at its next decision. Returns the number of legal actions. */
int lookahead_game(const Env *env, const Game *g, uint64_t salt, float *obs, int8_t *status) {
    for (int i = 0; i < g->n_legal; i++) status[i] = (int8_t)look_one(env, g, i, salt, obs + (size_t)i * OBS_SIZE);
    return g->n_legal;
}
