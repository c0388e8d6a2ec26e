/* layout(): every observation offset, size, head width and enum of the engine, as a dict for
 * Python (tcgleague.games.emberfront.engine.LAYOUT), so no offset is ever written twice. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "tcg.h"

extern const char *POSITION_GAME_NAMES[], *POSITION_PENDING_NAMES[], *POSITION_PLAYER_NAMES[],
    *POSITION_UNIT_NAMES[];

static int put_int(PyObject *d, const char *k, long v) {
    PyObject *o = PyLong_FromLong(v);
    int rc = o ? PyDict_SetItemString(d, k, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *names_dict(const char *const *names, int n) {
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < n; i++) if (put_int(d, names[i], i) < 0) { Py_DECREF(d); return NULL; }
    return d;
}

static PyObject *names_list(const char *const *names) {
    PyObject *l = PyList_New(0);
    for (int i = 0; l && names[i]; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s || PyList_Append(l, s) < 0) { Py_XDECREF(s); Py_DECREF(l); return NULL; }
        Py_DECREF(s);
    }
    return l;
}

static int put_obj(PyObject *d, const char *k, PyObject *o) {
    int rc = o ? PyDict_SetItemString(d, k, o) : -1;
    Py_XDECREF(o);
    return rc;
}

PyObject *py_layout(PyObject *self, PyObject *args) {
    (void)self; (void)args;
    static const char *GLOBAL[] = {"turn", "my_turn", "phase_mulligan", "phase_main", "phase_response",
        "phase_target", "my_energy", "my_max_energy", "opp_energy", "opp_max_energy", "my_spark", "opp_spark",
        "my_hand", "opp_hand", "my_deck", "opp_deck", "my_discard", "opp_discard", "my_fatigue", "opp_fatigue",
        "seat", "i_went_first", "pending_card", "pending_op", "pending_amount", "attacker_entity",
        "attack_target_entity", "my_leader_ability_used", "opp_leader_ability_used", "turns_left",
        "my_deck_id", "opp_deck_id"};
    static const char *ENTITY[] = {"present", "card", "type", "cost", "attack", "health", "max_health",
        "kw_charge", "kw_guardian", "kw_stealth", "kw_lifesteal", "kw_venom", "kw_shield", "kw_ranged",
        "kw_frenzy", "exhausted", "frozen", "sick", "shield", "silenced", "weapon_attack",
        "weapon_durability", "temp_attack", "can_act"};
    static const char *EFFECTS[] = {"my_leader_health", "opp_leader_health", "my_board_attack", "my_board_health",
        "my_units", "opp_board_attack", "opp_board_health", "opp_units", "my_hand", "win", "loss"};
    static const char *ACTIONS[] = {"pass", "mulligan", "play", "attack", "activate", "target", "block", "spark"};
    static const char *KEYWORDS[] = {"charge", "guardian", "stealth", "lifesteal", "venom", "shield", "ranged", "frenzy"};
    static const char *TRIGGERS[] = {"none", "on_play", "on_attack", "on_death", "start_of_turn", "end_of_turn",
        "activated", "spell", "response"};
    static const char *OPS[] = {"none", "damage", "heal", "draw", "buff", "buff_temp", "freeze", "destroy", "summon",
        "gain_energy", "discard_random", "return_to_hand", "silence", "damage_all_enemy"};
    static const char *TARGETS[] = {"none", "any", "any_unit", "enemy_any", "enemy_unit", "friendly_any",
        "friendly_unit", "attacker", "self", "my_leader", "enemy_leader", "random_enemy_unit", "all_friendly_units"};
    static const char *CARD_TYPES[] = {"none", "unit", "spell", "weapon", "leader"};
    static const char *CARD_FIELD_NAMES[] = {"type", "faction", "cost", "attack", "health", "keywords", "trigger",
        "op", "amount", "amount2", "target", "ability_cost", "token", "durability", "max_target_cost", "is_token"};
    static const char *ENTITY_GROUPS[] = {"my_hand", "my_front", "my_back", "my_leader", "opp_front", "opp_back", "opp_leader"};
    static const char *PHASES[] = {"mulligan", "main", "response", "target"};
    static const char *EPISODE[] = {"winner", "first_player", "decisions", "turns", "truncated", "deck0", "deck1",
        NULL};  /* NULL-terminated: names_list() walks to the terminator */
    _Static_assert(sizeof(GLOBAL) / sizeof(*GLOBAL) == GLOBAL_SIZE, "global names");
    _Static_assert(sizeof(ENTITY) / sizeof(*ENTITY) == ENTITY_WIDTH, "entity names");
    _Static_assert(sizeof(EFFECTS) / sizeof(*EFFECTS) == N_EFFECTS, "effect names");
    _Static_assert(sizeof(ACTIONS) / sizeof(*ACTIONS) == N_ACTION_TYPES, "action names");
    _Static_assert(sizeof(KEYWORDS) / sizeof(*KEYWORDS) == N_KEYWORDS, "keyword names");
    _Static_assert(sizeof(TRIGGERS) / sizeof(*TRIGGERS) == N_TRIGGERS, "trigger names");
    _Static_assert(sizeof(OPS) / sizeof(*OPS) == N_OPS, "op names");
    _Static_assert(sizeof(TARGETS) / sizeof(*TARGETS) == N_TARGET_KINDS, "target names");
    _Static_assert(sizeof(CARD_FIELD_NAMES) / sizeof(*CARD_FIELD_NAMES) == CARD_FIELDS, "card field names");
    _Static_assert(sizeof(EPISODE) / sizeof(*EPISODE) - 1 + 2 * N_ACTION_TYPES == sizeof(EpisodeStat) / 4, "episode fields");
    static const int GROUP_START[] = {ENT_MY_HAND, ENT_MY_FRONT, ENT_MY_BACK, ENT_MY_LEADER, ENT_OPP_FRONT,
        ENT_OPP_BACK, ENT_OPP_LEADER};

    PyObject *d = PyDict_New();
    if (!d) return NULL;
    PyObject *groups = PyDict_New();
    for (int i = 0; groups && i < 7; i++) put_int(groups, ENTITY_GROUPS[i], GROUP_START[i]);
    PyObject *pos = PyDict_New();
    if (pos) {
        put_obj(pos, "game", names_list(POSITION_GAME_NAMES));
        put_obj(pos, "pending", names_list(POSITION_PENDING_NAMES));
        put_obj(pos, "player", names_list(POSITION_PLAYER_NAMES));
        put_obj(pos, "unit", names_list(POSITION_UNIT_NAMES));
        put_int(pos, "size", position_size());
    }
    int rc = 0;
    rc |= put_int(d, "obs_size", OBS_SIZE);
    rc |= put_int(d, "obs_bytes", OBS_BYTES);
    rc |= put_int(d, "obs_wide_count", OBS_WIDE_COUNT);
    rc |= put_int(d, "global_offset", OBS_GLOBAL_OFFSET);
    rc |= put_int(d, "global_size", GLOBAL_SIZE);
    rc |= put_int(d, "entity_offset", OBS_ENTITY_OFFSET);
    rc |= put_int(d, "n_entities", N_ENTITIES);
    rc |= put_int(d, "entity_width", ENTITY_WIDTH);
    rc |= put_int(d, "legal_offset", OBS_LEGAL_OFFSET);
    rc |= put_int(d, "max_legal", MAX_LEGAL);
    rc |= put_int(d, "action_width", ACTION_WIDTH);
    rc |= put_int(d, "legal_count_offset", OBS_LEGAL_COUNT_OFFSET);
    rc |= put_int(d, "effects_offset", OBS_EFFECTS_OFFSET);
    rc |= put_obj(d, "effect_features", names_dict(EFFECTS, N_EFFECTS));
    rc |= put_int(d, "n_action_types", N_ACTION_TYPES);
    rc |= put_int(d, "n_a", N_A);
    rc |= put_int(d, "n_b", N_B);
    rc |= put_int(d, "n_c", N_C);
    rc |= put_int(d, "none_entity", NONE_ENTITY);
    rc |= put_int(d, "none_slot", NONE_SLOT);
    rc |= put_int(d, "max_cards", MAX_CARDS);
    rc |= put_int(d, "card_fields", CARD_FIELDS);
    rc |= put_int(d, "card_name_len", CARD_NAME_LEN);
    rc |= put_int(d, "deck_size", DECK_SIZE);
    rc |= put_int(d, "max_hand", MAX_HAND);
    rc |= put_int(d, "front_slots", FRONT_SLOTS);
    rc |= put_int(d, "back_slots", BACK_SLOTS);
    rc |= put_int(d, "leader_health", LEADER_HEALTH);
    rc |= put_int(d, "default_turn_cap", DEFAULT_TURN_CAP);
    rc |= put_int(d, "episode_log_cap", EPISODE_LOG_CAP);
    rc |= put_obj(d, "global_features", names_dict(GLOBAL, GLOBAL_SIZE));
    rc |= put_obj(d, "entity_features", names_dict(ENTITY, ENTITY_WIDTH));
    rc |= put_obj(d, "entity_groups", groups);
    rc |= put_obj(d, "action_types", names_dict(ACTIONS, N_ACTION_TYPES));
    rc |= put_obj(d, "keywords", names_dict(KEYWORDS, N_KEYWORDS));
    rc |= put_obj(d, "triggers", names_dict(TRIGGERS, N_TRIGGERS));
    rc |= put_obj(d, "ops", names_dict(OPS, N_OPS));
    rc |= put_obj(d, "target_kinds", names_dict(TARGETS, N_TARGET_KINDS));
    rc |= put_int(d, "first_automatic_target", TG_FIRST_AUTOMATIC);
    rc |= put_obj(d, "card_types", names_dict(CARD_TYPES, N_CARD_TYPES));
    rc |= put_obj(d, "card_field_index", names_dict(CARD_FIELD_NAMES, CARD_FIELDS));
    rc |= put_obj(d, "phases", names_dict(PHASES, N_PHASES));
    rc |= put_obj(d, "episode_fields", names_list(EPISODE));
    rc |= put_obj(d, "position", pos);
    if (rc) { Py_DECREF(d); return NULL; }
    return d;
}

/* lookahead_status(): the codes of lookahead_game()'s statuses. Not in layout(): the layout's
 * hash fingerprints checkpoints, and these codes are no part of what a policy sees. */
PyObject *py_lookahead_status(PyObject *self, PyObject *args) {
    static const char *LOOK[] = {"decide", "win", "loss", "draw", "wait"};
    _Static_assert(sizeof(LOOK) / sizeof(*LOOK) == N_LOOK, "lookahead status names");
    return names_dict(LOOK, N_LOOK);
}
