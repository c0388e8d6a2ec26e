/* Text renderer: an omniscient view of one game, for debugging and the play CLI. */
#include <stdio.h>
#include "tcg.h"
#include "rules_internal.h"

static const char *PHASES[N_PHASES] = {"MULLIGAN", "MAIN", "RESPONSE", "TARGET"};
static const char *KW_TAGS[N_KEYWORDS] = {"Ch", "Gu", "St", "Ls", "Ve", "Sh", "Ra", "Fr"};
static const char *ACTIONS[N_ACTION_TYPES] = {"PASS", "MULLIGAN", "PLAY", "ATTACK", "ACTIVATE",
                                              "TARGET", "BLOCK", "SPARK"};

#define APPEND(...) do { if (n < cap) n += snprintf(out + n, (size_t)(cap - n), __VA_ARGS__); } while (0)

static const char *name_of(const Env *env, int card) {
    return env->card_names ? env->card_names + (size_t)card * CARD_NAME_LEN : "?";
}

static int render_unit(const Env *env, const Unit *u, char *out, int n, int cap) {
    if (!u->card) { APPEND(" [ -- ]"); return n; }
    APPEND(" [%s %d/%d", name_of(env, u->card), unit_attack_value(u), u->health);
    for (int k = 0; k < N_KEYWORDS; k++) if ((u->keywords >> k) & 1) APPEND(" %s", KW_TAGS[k]);
    if (u->weapon_card) APPEND(" +w%d/%d", u->weapon_attack, u->weapon_durability);
    if (u->exhausted) APPEND(" ex");
    if (u->frozen) APPEND(" frz");
    if (u->sick) APPEND(" sick");
    APPEND("]");
    return n;
}

int render_game(const Env *env, const Game *g, char *out, int cap) {
    int n = 0;
    APPEND("turn %d  phase %s  active seat %d  deciding seat %d\n", g->turn, PHASES[(int)g->phase], g->active, g->decider);
    for (int seat = 0; seat < 2; seat++) {
        const Player *p = &g->players[seat];
        const Unit *l = &p->units[LEADER_SLOT];
        APPEND("seat %d: %s %d/%d", seat, name_of(env, l->card), l->health, l->max_health);
        if (l->weapon_card) APPEND(" wielding %s %d/%d", name_of(env, l->weapon_card), l->weapon_attack, l->weapon_durability);
        APPEND("  energy %d/%d spark %d  deck %d  discard %d  fatigue %d\n", p->energy, p->max_energy, p->spark,
               p->deck_count, p->discard_count, p->fatigue);
        APPEND("  front:");
        for (int s = 0; s < FRONT_SLOTS; s++) n = render_unit(env, &p->units[s], out, n, cap);
        APPEND("\n  back: ");
        for (int s = FRONT_SLOTS; s < BOARD_SLOTS; s++) n = render_unit(env, &p->units[s], out, n, cap);
        APPEND("\n  hand:");
        for (int h = 0; h < p->hand_count; h++)
            APPEND(" %s(%d)", name_of(env, p->hand[h]), card_row(env, p->hand[h])[CF_COST]);
        APPEND("\n");
    }
    APPEND("legal actions for seat %d (%d):", g->decider, g->n_legal);
    for (int i = 0; i < g->n_legal; i++)
        APPEND(" %s(%d,%d,%d)", ACTIONS[g->legal[i][0]], g->legal[i][1], g->legal[i][2], g->legal[i][3]);
    APPEND("\n");
    return n;
}
