/* Observation writer: one compact row per seat (int16 features, then int8: tcg.h's OBS_BYTES),
 * egocentric, hidden information hidden (the opponent's hand and both decks appear only as
 * counts). Layout constants: tcg.h. */
#include <string.h>
#include "tcg.h"
#include "rules_internal.h"

/* Static features of every card id, so an entity row starts as one memcpy. */
void build_card_obs(Env *env) {
    memset(env->card_obs, 0, sizeof(env->card_obs));
    for (int card = 1; card < env->n_cards; card++) {
        const int32_t *c = card_row(env, card);
        int16_t *e = env->card_obs[card];
        e[EF_PRESENT] = 1;
        e[EF_CARD] = (int16_t)card;
        e[EF_TYPE] = (int16_t)c[CF_TYPE];
        e[EF_COST] = (int16_t)c[CF_COST];
        e[EF_ATTACK] = (int16_t)c[CF_ATTACK];
        e[EF_HEALTH] = e[EF_MAX_HEALTH] = (int16_t)c[CF_HEALTH];
        for (int k = 0; k < N_KEYWORDS; k++) e[EF_KEYWORDS + k] = (int16_t)((c[CF_KEYWORDS] >> k) & 1);
    }
}

static void write_card_features(const Env *env, int card, int16_t *e) {
    memcpy(e, env->card_obs[card], sizeof(int16_t) * ENTITY_WIDTH);
}

static void write_unit(const Env *env, Game *g, int seat, int slot, int16_t *e) {
    const Unit *u = unit_at(g, seat, slot);
    if (!u->card) return;
    write_card_features(env, u->card, e);
    e[EF_ATTACK] = (int16_t)unit_attack_value(u);
    e[EF_HEALTH] = u->health;
    e[EF_MAX_HEALTH] = u->max_health;
    for (int k = 0; k < N_KEYWORDS; k++) e[EF_KEYWORDS + k] = (int16_t)((u->keywords >> k) & 1);
    e[EF_EXHAUSTED] = u->exhausted;
    e[EF_FROZEN] = u->frozen > 0;
    e[EF_SICK] = u->sick;
    e[EF_SHIELD] = u->shield;
    e[EF_SILENCED] = u->silenced;
    e[EF_WEAPON_ATTACK] = u->weapon_attack;
    e[EF_WEAPON_DURABILITY] = u->weapon_durability;
    e[EF_TEMP_ATTACK] = u->temp_attack;
}

void write_observation(const Env *env, const Game *cg, int viewer, uint8_t *row) {
    Game *g = (Game *)cg;  /* read-only use; the helpers take non-const pointers */
    int16_t *obs = (int16_t *)(void *)row;        /* the int16 features: global, entities, legal count */
    int8_t *legal = (int8_t *)row + 2 * OBS_WIDE_COUNT;  /* the int8 ones: legal tuples, effects */
    int8_t *effects = legal + MAX_LEGAL * ACTION_WIDTH;
    /* The legal region holds the row's previous list and zeros after it, so only that list
     * needs clearing (it is most of the row; most lists are short). */
    int previous = obs[OBS_LEGAL_COUNT_OFFSET];
    int stale = previous >= 0 && previous <= MAX_LEGAL ? previous : MAX_LEGAL;
    memset(obs, 0, sizeof(int16_t) * OBS_WIDE_COUNT);
    const Player *me = &g->players[viewer], *opp = &g->players[1 - viewer];
    int16_t *gl = obs + OBS_GLOBAL_OFFSET;
    gl[G_TURN] = g->turn;
    gl[G_MY_TURN] = g->active == viewer;
    gl[G_PHASE_MULLIGAN + g->phase] = 1;
    gl[G_MY_ENERGY] = me->energy; gl[G_MY_MAX_ENERGY] = me->max_energy;
    gl[G_OPP_ENERGY] = opp->energy; gl[G_OPP_MAX_ENERGY] = opp->max_energy;
    gl[G_MY_SPARK] = me->spark; gl[G_OPP_SPARK] = opp->spark;
    gl[G_MY_HAND] = me->hand_count; gl[G_OPP_HAND] = opp->hand_count;
    gl[G_MY_DECK] = me->deck_count; gl[G_OPP_DECK] = opp->deck_count;
    gl[G_MY_DISCARD] = me->discard_count; gl[G_OPP_DISCARD] = opp->discard_count;
    gl[G_MY_FATIGUE] = me->fatigue; gl[G_OPP_FATIGUE] = opp->fatigue;
    gl[G_SEAT] = (int16_t)viewer;
    gl[G_I_WENT_FIRST] = g->first_player == viewer;
    gl[G_PENDING_CARD] = g->phase == PH_TARGET ? g->pending.card : 0;
    gl[G_PENDING_OP] = g->phase == PH_TARGET ? g->pending.op : 0;
    gl[G_PENDING_AMOUNT] = g->phase == PH_TARGET ? g->pending.amount : 0;
    int in_attack = in_response_window(g);
    gl[G_ATTACKER_ENT] = in_attack ? loc_to_ent(viewer, g->attack_seat, g->attack_slot) : NONE_ENTITY;
    gl[G_ATTACK_TARGET_ENT] = in_attack ? loc_to_ent(viewer, 1 - g->attack_seat, g->attack_target_slot) : NONE_ENTITY;
    gl[G_MY_LEADER_ABILITY_USED] = me->units[LEADER_SLOT].ability_used;
    gl[G_OPP_LEADER_ABILITY_USED] = opp->units[LEADER_SLOT].ability_used;
    gl[G_TURNS_LEFT] = (int16_t)(2 * env->turn_cap - g->turn);
    gl[G_MY_DECK_ID] = me->deck_id; gl[G_OPP_DECK_ID] = opp->deck_id;

    int16_t *ent = obs + OBS_ENTITY_OFFSET;
    for (int h = 0; h < me->hand_count; h++) {
        int16_t *e = ent + (ENT_MY_HAND + h) * ENTITY_WIDTH;
        write_card_features(env, me->hand[h], e);
    }
    for (int s = 0; s < UNIT_SLOTS; s++) {
        write_unit(env, g, viewer, s, ent + (ENT_MY_FRONT + s) * ENTITY_WIDTH);
        write_unit(env, g, 1 - viewer, s, ent + (ENT_OPP_FRONT + s) * ENTITY_WIDTH);
    }
    int n = viewer == g->decider ? g->n_legal : 0;  /* only the decider sees a legal list */
    if (n) memcpy(legal, g->legal, sizeof(g->legal[0]) * (size_t)n);  /* every value < 128 */
    for (int i = 0; i < n; i++) {
        int source = g->legal[i][1];  /* can_act: the entity is the source of a legal action */
        if (source < N_ENTITIES) ent[source * ENTITY_WIDTH + EF_CAN_ACT] = 1;
    }
    if (stale > n) memset(legal + n * ACTION_WIDTH, 0, ACTION_WIDTH * (size_t)(stale - n));
    obs[OBS_LEGAL_COUNT_OFFSET] = (int16_t)n;
    if (n) action_effects(env, g, effects);
    if (stale > n) memset(effects + n * N_EFFECTS, 0, N_EFFECTS * (size_t)(stale - n));
}
