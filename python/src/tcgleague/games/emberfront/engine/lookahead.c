/* Decision-time lookahead for a learned policy (python: lookahead.LookaheadActor), and the
 * observation's effects of each legal action (action_effects, at the end).
 *
 * Each legal action of a game's decider is applied to a copy of the game in which what the
 * decider cannot see is re-drawn from `salt`: its own deck is reshuffled, the opponent's hand is
 * redealt from its hand and deck together, and the rng is reseeded. A lookahead therefore never
 * reads hidden information, so a searched move is one the decider could have worked out itself.
 * Every candidate shares the same re-draw (common random numbers): candidates differ by the
 * action, not by their luck.
 *
 * After the candidate, the greedy bot's heuristic plays both seats - the rest of the decider's
 * turn, the opponent's turn and the decider's response windows in it - until the decider's next
 * turn begins or the game ends. Every candidate is thus judged at the same horizon: comparing
 * the value of a mid-turn state (or of a response window before the opponent's attack lands)
 * with that of an ended turn would favour whichever the value head happens to overrate.
 *
 * "Cannot see" treats played and discarded cards as public, as at a table: the opponent's
 * unseen cards are its deck list less those, though the observation carries discard piles as
 * counts only. */
#include <float.h>
#include <stddef.h>
#include <string.h>
#include "tcg.h"
#include "rules_internal.h"

#define LOOK_MOVES 96  /* decisions played out by the heuristic after a candidate, at most */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Card ids in ascending order, by counting (ids are below MAX_CARDS). */
static void sort_cards(int16_t *cards, int n) {
    uint8_t count[MAX_CARDS] = {0};
    int lo = MAX_CARDS, hi = -1;
    for (int k = 0; k < n; k++) {
        count[cards[k]]++;
        if (cards[k] < lo) lo = cards[k];
        if (cards[k] > hi) hi = cards[k];
    }
    for (int c = lo, out = 0; c <= hi; c++)
        for (int m = 0; m < count[c]; m++) cards[out++] = (int16_t)c;
}

/* Cards the decider cannot tell apart by position, put in a random order that depends only on
 * which cards they are (sorted first), never on the order the game holds them in. */
static void reorder_unseen(Game *g, int16_t *cards, int n) {
    sort_cards(cards, n);
    for (int k = n - 1; k > 0; k--) {
        int j = rng_below(&g->rng, k + 1);
        int16_t t = cards[k]; cards[k] = cards[j]; cards[j] = t;
    }
}

/* What the decider `me` cannot see, dealt again: its own deck's order, and the opponent's hand
 * and deck together (it knows the opponent's deck list and what was played, not the split). */
static void redeal_hidden(Game *g, int me) {
    Player *mine = &g->players[me], *theirs = &g->players[1 - me];
    reorder_unseen(g, mine->deck, mine->deck_count);
    int16_t unseen[MAX_HAND + DECK_SIZE];
    int n = 0;
    for (int h = 0; h < theirs->hand_count; h++) unseen[n++] = theirs->hand[h];
    for (int d = 0; d < theirs->deck_count; d++) unseen[n++] = theirs->deck[d];
    reorder_unseen(g, unseen, n);
    for (int h = 0; h < theirs->hand_count; h++) theirs->hand[h] = unseen[h];
    for (int d = 0; d < theirs->deck_count; d++) theirs->deck[d] = unseen[theirs->hand_count + d];
}

/* sim has reached a decision of `me` in a turn of its own that began after g's. */
static int next_own_turn(const Game *g, const Game *sim, int me) {
    return sim->decider == me && sim->active == me && sim->turn != g->turn;
}

/* A look's rng, drawn from `salt` alone (never from the game's own stream). */
static uint64_t look_rng(uint64_t salt) { return mix64(salt + 0x9E3779B97F4A7C15ull); }

/* g as its decider could imagine it: the hidden cards and the rng drawn again from `salt`. */
static Game public_copy(const Game *g, uint64_t salt) {
    Game sim = *g;
    sim.rng = look_rng(salt);
    redeal_hidden(&sim, g->decider);
    return sim;
}

/* The greedy heuristic plays both seats of sim (g after a candidate of its decider `me`) on
 * until me's next turn begins, the game ends or LOOK_MOVES decisions were played. */
static void play_out(const Env *env, const Game *g, Game *sim, int me) {
    for (int k = 0; k < LOOK_MOVES && sim->result == RESULT_NONE && !next_own_turn(g, sim, me); k++)
        game_apply(env, sim, greedy_choice(env, sim));
}

static int look_one(const Env *env, const Game *g, int i, uint64_t salt, uint8_t *obs) {
    int me = g->decider;
    Game sim = public_copy(g, salt);
    game_apply(env, &sim, i);
    play_out(env, g, &sim, me);
    if (sim.result == RESULT_DRAW) return LOOK_DRAW;
    if (sim.result != RESULT_NONE) return sim.result == me ? LOOK_WIN : LOOK_LOSS;
    if (!next_own_turn(g, &sim, me)) return LOOK_WAIT;
    write_observation(env, &sim, me, obs);
    return LOOK_DECIDE;
}

/* For each legal action i of game g: status[i] (LOOK_*) and, for LOOK_DECIDE, obs[i] = the
 * decider's observation at the start of its next turn. Returns the number of legal actions. */
int lookahead_game(const Env *env, const Game *g, uint64_t salt, uint8_t *obs, int8_t *status) {
    for (int i = 0; i < g->n_legal; i++) status[i] = (int8_t)look_one(env, g, i, salt, obs + (size_t)i * OBS_BYTES);
    return g->n_legal;
}

/* The lookahead greedy bot (bots.LOOKAHEAD_GREEDY, held out of training for evaluation panels):
 * the greedy bot searching a turn ahead. Each legal action is played on as a policy's lookahead
 * plays it (the same public copy, the same horizon: the decider's next turn), and the position
 * it leads to is judged by the greedy bot's own heuristic, greedy_value. A mulligan or a lone
 * legal action is the greedy bot's choice. The re-deal's salt comes from the turn and the seat,
 * so the bot has no stream of its own and never reads what its decider cannot see. */
int lookahead_greedy_choice(const Env *env, const Game *g) {
    if (g->phase == PH_MULLIGAN || g->n_legal <= 1) return greedy_choice(env, g);
    int me = g->decider, best_i = 0;
    uint64_t salt = mix64(0x600DA4EADull + 2u * (uint64_t)g->turn + (uint64_t)me);
    float best = -FLT_MAX;
    for (int i = 0; i < g->n_legal; i++) {
        Game sim = public_copy(g, salt);
        game_apply(env, &sim, i);
        play_out(env, g, &sim, me);
        float v = greedy_value(env, &sim, me);
        if (v > best + 1e-4f) { best = v; best_i = i; }
    }
    return best_i;
}

/* Board attack, board health and unit count of a seat (the leader apart). */
static void board_totals(const Game *g, int seat, int *attack, int *health, int *units) {
    int a = 0, h = 0, n = 0;  /* summed branch-free (an empty slot counts 0), exact as ints */
    for (int s = 0; s < BOARD_SLOTS; s++) {
        const Unit *u = &g->players[seat].units[s];
        int on = u->card != 0;
        a += on * unit_attack_value(u);
        h += on * u->health;
        n += on;
    }
    *attack = a; *health = h; *units = n;
}

static void describe(const Game *g, int me, int *f) {
    const Player *mine = &g->players[me], *theirs = &g->players[1 - me];
    f[FX_MY_LEADER_HEALTH] = mine->units[LEADER_SLOT].health;
    f[FX_OPP_LEADER_HEALTH] = theirs->units[LEADER_SLOT].health;
    board_totals(g, me, &f[FX_MY_BOARD_ATTACK], &f[FX_MY_BOARD_HEALTH], &f[FX_MY_UNITS]);
    board_totals(g, 1 - me, &f[FX_OPP_BOARD_ATTACK], &f[FX_OPP_BOARD_HEALTH], &f[FX_OPP_UNITS]);
    f[FX_MY_HAND] = mine->hand_count;
    f[FX_WIN] = g->result == me;
    f[FX_LOSS] = g->result == 1 - me;
}

/* `base` into `sim`, but for what a look never reads: the legal list (the action comes from the
 * real game's list), the episode record and the discard piles' cards (the rules only ever append
 * to those). Copied in pieces: GCC inlines one fixed-size memcpy of the whole as `rep movsq`, about
 * twice as slow here, and a look copies for almost every legal action. */
static void copy_for_look(Game *sim, const Game *base) {
    for (int s = 0; s < 2; s++) {
        Player *to = &sim->players[s];
        const Player *from = &base->players[s];
        memcpy(to->units, from->units, sizeof(from->units));
        memcpy(to->hand, from->hand, offsetof(Player, discard) - offsetof(Player, hand));
        memcpy(&to->hand_count, &from->hand_count, sizeof(Player) - offsetof(Player, hand_count));
    }
    memcpy(&sim->rng, &base->rng, offsetof(Game, legal) - offsetof(Game, rng));
    memcpy(&sim->n_legal, &base->n_legal, offsetof(Game, stat) - offsetof(Game, n_legal));
}

/* public_copy for the effects' look, with only the redeal it can read. A look plays no choice of
 * the opponent's, so the opponent's hidden cards are only moved, never read; the decider's own
 * deck is read only through cards it draws and then sees in a response window of its own (its
 * legal list), which only a look from a response window (or a target choice in one) reaches. A redeal
 * nothing reads is skipped and the rng stepped past its draws (reorder_unseen draws n - 1 times
 * for n cards), so every look ends as it would after the full redeal. Returns the game the looks
 * copy from (g itself where nothing is redealt, else `base`) and sets *rng to their rng. */
static const Game *effects_origin(Game *base, const Game *g, uint64_t salt, uint64_t *rng) {
    const Player *mine = &g->players[g->decider], *theirs = &g->players[1 - g->decider];
    const Game *origin = g;
    *rng = look_rng(salt);
    if (in_response_window(g)) {
        copy_for_look(base, g);
        base->rng = *rng;
        reorder_unseen(base, base->players[g->decider].deck, mine->deck_count);
        *rng = base->rng;
        origin = base;
    } else if (mine->deck_count > 1) {
        rng_skip(rng, mine->deck_count - 1);
    }
    int n_theirs = theirs->hand_count + theirs->deck_count;
    if (n_theirs > 1) rng_skip(rng, n_theirs - 1);
    return origin;
}

/* Does legal action i end as action i - 1 did, for describe? Both put the same hand card on the
 * board, in different free slots: the totals do not depend on the slot when the unit enters
 * alive, nothing is dead already (so no death trigger runs in slot order), and its on-play
 * effect, if any, waits for a chosen target (the look stops there) rather than resolving. */
static int same_play_as_previous(const Env *env, const Game *g, int i) {
    const uint8_t *act = g->legal[i], *prev = g->legal[i - 1];
    if (act[0] != ACT_PLAY || prev[0] != ACT_PLAY || act[1] != prev[1] || act[3] == NONE_SLOT) return 0;
    const int32_t *c = card_row(env, g->players[g->decider].hand[act[1] - ENT_MY_HAND]);
    int waits = c[CF_TRIGGER] != TR_ON_PLAY || c[CF_OP] == OP_NONE
                || (c[CF_TARGET] != TG_NONE && c[CF_TARGET] < TG_FIRST_AUTOMATIC);
    return c[CF_TYPE] == CT_UNIT && c[CF_HEALTH] > 0 && waits && !any_dead(g);
}

/* An effect as stored (int8): saturated at +-127 (tcg.h). */
static int8_t saturate_int8(int x) { return (int8_t)(x > 127 ? 127 : x < -127 ? -127 : x); }

/* The effects feature of the legal list: each action is applied to a public copy of the game
 * and an opponent's response window it opens is passed (legal[0] is always PASS there), so an
 * attack is seen landing; the rest of the turn is not played. The copy's hidden cards and rng
 * are drawn from the turn and seat alone, never from the game's own rng, so the observation
 * stays a function of what the decider sees: the consequences of its own move. */
void action_effects(const Env *env, const Game *g, int8_t *effects) {
    int me = g->decider, before[N_EFFECTS], after[N_EFFECTS];
    describe(g, me, before);
    Game base, sim;
    uint64_t rng;
    const Game *origin = effects_origin(&base, g, mix64(0xEFFEC75ull + 2u * (uint64_t)g->turn + (uint64_t)me), &rng);
    for (int i = 0; i < g->n_legal; i++) {
        int8_t *f = effects + (size_t)i * N_EFFECTS;
        if (i > 0 && same_play_as_previous(env, g, i)) {  /* it ends as action i - 1 did */
            memcpy(f, f - N_EFFECTS, N_EFFECTS);
            continue;
        }
        copy_for_look(&sim, origin);
        sim.rng = rng;
        game_apply_look(env, &sim, g->legal[i], me);
        describe(&sim, me, after);
        for (int k = 0; k < N_EFFECTS; k++) f[k] = saturate_int8(after[k] - before[k]);
    }
}
