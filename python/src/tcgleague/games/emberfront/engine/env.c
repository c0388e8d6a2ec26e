/* The vectorized env: c_reset / c_step over every game, writing observations, rewards,
 * terminals, truncations and masks in place. Row 2g + s is seat s of game g. */
#include <string.h>
#include "tcg.h"
#include "rules_internal.h"

static uint64_t mix_seed(uint64_t seed, uint64_t game) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + game;
    return ((uint64_t)rng_next(&s) << 32) | rng_next(&s);
}

int choose_deck(const Env *env, Game *g, int seat) {
    const float *w = env->deck_weights + seat * env->n_decks;
    float total = 0.0f;
    for (int k = 0; k < env->n_decks; k++) total += w[k];
    float x = (float)(rng_next(&g->rng) >> 8) / 16777216.0f * total;
    for (int k = 0; k < env->n_decks; k++) {
        if (x < w[k]) return k;
        x -= w[k];
    }
    return env->n_decks - 1;
}

/* Shaping potential of a seat: its leader-health edge, in [-1, 1]. */
static float potential(const Game *g, int seat) {
    return (float)(g->players[seat].units[LEADER_SLOT].health - g->players[1 - seat].units[LEADER_SLOT].health)
           / (float)LEADER_HEALTH;
}

/* Writes the decider's observation, mask and shaping reward since its previous decision. */
static void open_decision(Env *env, Game *g, int game_index) {
    int d = g->decider, row = 2 * game_index + d;
    float phi = potential(g, d);
    env->rewards[row] += env->shaping_coef * (phi - g->potential[d]);
    g->potential[d] = phi;
    env->masks[row] = 1;
    write_observation(env, g, d, env->observations + (size_t)row * OBS_BYTES);
}

/* Starts the next game of a row pair, continuing the game's own random stream. */
static void next_game(Env *env, Game *g, int game_index) {
    int deck0 = choose_deck(env, g, 0), deck1 = choose_deck(env, g, 1);
    uint64_t seed = ((uint64_t)rng_next(&g->rng) << 32) | rng_next(&g->rng);
    game_reset(env, g, seed, deck0, deck1, 0);
    open_decision(env, g, game_index);
}

static void finish_game(Env *env, Game *g, int game_index) {
    g->stat.winner = g->result;
    g->stat.turns = g->turn;
    for (int s = 0; s < 2; s++) {
        int row = 2 * game_index + s;
        float outcome = g->result == RESULT_DRAW ? 0.0f : (g->result == s ? 1.0f : -1.0f);
        env->rewards[row] += outcome - env->shaping_coef * g->potential[s];
        if (g->stat.truncated) env->truncations[row] = 1;
        else env->terminals[row] = 1;
    }
    env->finished[game_index] = g->stat;  /* logged after the (parallel) step, in game order */
    env->ended[game_index] = 1;
}

/* Appends this step's finished games to the episode log in game order, whatever the threads did. */
static void log_finished(Env *env, int lo, int hi) {
    for (int i = lo; i < hi; i++) {
        if (!env->ended[i]) continue;
        if (env->episode_log_count < EPISODE_LOG_CAP) env->episode_log[env->episode_log_count++] = env->finished[i];
        else env->episode_log_dropped++;
    }
}

/* Clears the step buffers of games [lo, hi): their rows only, so another range can be read meanwhile. */
static void clear_step_buffers(Env *env, int lo, int hi) {
    size_t first = 2 * (size_t)lo, rows = 2 * (size_t)(hi - lo);
    memset(env->rewards + first, 0, sizeof(float) * rows);
    memset(env->terminals + first, 0, rows);
    memset(env->truncations + first, 0, rows);
    memset(env->masks + first, 0, rows);
}

void c_init(Env *env) { build_card_obs(env); }

void c_reset(Env *env, uint64_t seed) {
    clear_step_buffers(env, 0, env->num_games);
    memset(env->observations, 0, (size_t)OBS_BYTES * 2 * (size_t)env->num_games);
    for (int i = 0; i < env->num_games; i++) {
        Game *g = &env->games[i];
        g->rng = mix_seed(seed, (uint64_t)i);
        next_game(env, g, i);
    }
}

/* Replaces game i with an explicit deal (used by evaluation's duplicate format and tests). */
void c_set_deal(Env *env, int i, uint64_t seed, int deck0, int deck1, int swapped) {
    Game *g = &env->games[i];
    memset(env->observations + (size_t)2 * i * OBS_BYTES, 0, 2 * (size_t)OBS_BYTES);
    env->masks[2 * i] = env->masks[2 * i + 1] = 0;
    env->rewards[2 * i] = env->rewards[2 * i + 1] = 0.0f;
    game_reset(env, g, seed, deck0, deck1, swapped);
    open_decision(env, g, i);
}

int find_legal(const Game *g, const int32_t *action) {
    for (int i = 0; i < g->n_legal; i++) {
        const uint8_t *l = g->legal[i];
        if (l[0] == action[0] && l[1] == action[1] && l[2] == action[2] && l[3] == action[3]) return i;
    }
    return -1;
}

/* The start of game i's observation rows, asked for ahead of its step: a row is written whole
 * (its int16 part cleared first), and a cold row stalls the writer on every cache line. */
static void prefetch_rows(const Env *env, int i) {
    const uint8_t *rows = env->observations + (size_t)2 * i * OBS_BYTES;
    for (int seat = 0; seat < 2; seat++)
        for (size_t at = 0; at < 2 * OBS_WIDE_COUNT + 256; at += 64)
            __builtin_prefetch(rows + seat * OBS_BYTES + at, 1, 3);
}

/* Steps games [lo, hi) once each with the active row's action; nothing outside the range is read
 * or written but the episode log (so one range can step while another's rows are read: the
 * trainer's overlapped halves). All actions are validated before any game moves, so a refused
 * step changes nothing. The games are split over num_threads threads: each game touches only its
 * own state, random stream and rows, and finished games are logged afterwards in game order, so
 * the result is identical for any thread count. */
int c_step_games(Env *env, const int32_t *actions, int lo, int hi) {
    for (int i = lo; i < hi; i++) {
        Game *g = &env->games[i];
        int row = 2 * i + g->decider;
        env->chosen[i] = (int16_t)find_legal(g, actions + (size_t)row * ACTION_WIDTH);
        if (env->chosen[i] < 0) {
            env->error_game = i;
            env->error_index = row;
            return -1;
        }
    }
    clear_step_buffers(env, lo, hi);
    memset(env->ended + lo, 0, (size_t)(hi - lo));
#pragma omp parallel for schedule(static) num_threads(env->num_threads) if (env->num_threads > 1)
    for (int i = lo; i < hi; i++) {
        if (i + 1 < hi) prefetch_rows(env, i + 1);
        Game *g = &env->games[i];
        int d = g->decider;
        const int32_t *act = actions + (size_t)(2 * i + d) * ACTION_WIDTH;
        g->stat.decisions++;
        g->stat.action_counts[d][act[0]]++;
        game_apply(env, g, env->chosen[i]);
        if (g->result != RESULT_NONE) {
            finish_game(env, g, i);
            next_game(env, g, i);
        } else {
            open_decision(env, g, i);
        }
    }
    log_finished(env, lo, hi);
    return 0;
}

int c_step(Env *env, const int32_t *actions) { return c_step_games(env, actions, 0, env->num_games); }

/* Re-derives the legal list and observation of game i after its state was edited. */
void c_reopen_decision(Env *env, int i) {
    Game *g = &env->games[i];
    memset(env->observations + (size_t)2 * i * OBS_BYTES, 0, 2 * (size_t)OBS_BYTES);
    env->masks[2 * i] = env->masks[2 * i + 1] = 0;
    game_compute_legal(env, g);
    g->potential[g->decider] = 0.0f;
    open_decision(env, g, i);
    env->rewards[2 * i + g->decider] = 0.0f;
}
