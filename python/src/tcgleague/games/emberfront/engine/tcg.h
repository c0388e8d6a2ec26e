/* Emberfront rules engine: types, constants and the env API.
 *
 * PufferLib-ocean style: flat structs, fixed-size arrays, no allocation in the step.
 * Card data lives in a table of int32 rows (CF_* columns) loaded from cards.json by Python;
 * adding a card never needs C. Everything the Python side needs to read observations and
 * write actions is a constant here and is exported by the binding (binding.c: layout()).
 */
#ifndef TCG_H
#define TCG_H

#include <stdint.h>

/* ---- Board geometry ---------------------------------------------------------------- */
#define MAX_HAND 8
#define FRONT_SLOTS 4
#define BACK_SLOTS 3
#define BOARD_SLOTS (FRONT_SLOTS + BACK_SLOTS)   /* slot 0..3 front, 4..6 back */
#define LEADER_SLOT BOARD_SLOTS                  /* slot 7 is the leader */
#define UNIT_SLOTS (BOARD_SLOTS + 1)
#define DECK_SIZE 30
#define MAX_DISCARD 96
#define START_HAND 4
#define LEADER_HEALTH 20
#define MAX_ENERGY 10
#define DEFAULT_TURN_CAP 30                      /* turns per player */

/* ---- Entity table (egocentric: "my" = the observing seat) --------------------------- */
#define ENT_MY_HAND 0
#define ENT_MY_FRONT (ENT_MY_HAND + MAX_HAND)    /* 8  */
#define ENT_MY_BACK (ENT_MY_FRONT + FRONT_SLOTS) /* 12 */
#define ENT_MY_LEADER (ENT_MY_BACK + BACK_SLOTS) /* 15 */
#define ENT_OPP_FRONT (ENT_MY_LEADER + 1)        /* 16 */
#define ENT_OPP_BACK (ENT_OPP_FRONT + FRONT_SLOTS) /* 20 */
#define ENT_OPP_LEADER (ENT_OPP_BACK + BACK_SLOTS) /* 23 */
#define N_ENTITIES (ENT_OPP_LEADER + 1)          /* 24 */

/* ---- Actions: (type, a = source entity, b = target entity, c = board slot) ---------- */
enum { ACT_PASS, ACT_MULLIGAN, ACT_PLAY, ACT_ATTACK, ACT_ACTIVATE, ACT_TARGET, ACT_BLOCK,
       ACT_SPARK, N_ACTION_TYPES };
#define NONE_ENTITY N_ENTITIES                   /* a/b value for "unused" */
#define N_A (N_ENTITIES + 1)
#define N_B (N_ENTITIES + 1)
#define NONE_SLOT BOARD_SLOTS                    /* c value for "unused" */
#define N_C (BOARD_SLOTS + 1)
#define MAX_LEGAL 128
#define ACTION_WIDTH 4

/* The bound of 128 legal actions, by construction (asserted at compile time):
 * main phase   PASS + SPARK + PLAY(hand x slots) + ATTACK(attackers x targets) + ACTIVATE
 * response     PASS + BLOCK(front guardians) + PLAY(hand)
 * target       one per entity                                                         */
#define MAIN_BOUND (2 + MAX_HAND * BOARD_SLOTS + (BOARD_SLOTS + 1) * (FRONT_SLOTS + 1) + (BOARD_SLOTS + 1))
#define RESPONSE_BOUND (1 + FRONT_SLOTS + MAX_HAND)
#define TARGET_BOUND N_ENTITIES
_Static_assert(MAIN_BOUND <= MAX_LEGAL, "main-phase legal bound exceeds MAX_LEGAL");
_Static_assert(RESPONSE_BOUND <= MAX_LEGAL, "response legal bound exceeds MAX_LEGAL");
_Static_assert(TARGET_BOUND <= MAX_LEGAL, "target legal bound exceeds MAX_LEGAL");

/* ---- Card data: one int32 row per card id (id 0 is "no card") ---------------------- */
enum { CT_NONE, CT_UNIT, CT_SPELL, CT_WEAPON, CT_LEADER, N_CARD_TYPES };
enum { KW_CHARGE, KW_GUARDIAN, KW_STEALTH, KW_LIFESTEAL, KW_VENOM, KW_SHIELD, KW_RANGED,
       KW_FRENZY, N_KEYWORDS };
enum { TR_NONE, TR_ON_PLAY, TR_ON_ATTACK, TR_ON_DEATH, TR_START_TURN, TR_END_TURN,
       TR_ACTIVATED, TR_SPELL, TR_RESPONSE, N_TRIGGERS };
enum { OP_NONE, OP_DAMAGE, OP_HEAL, OP_DRAW, OP_BUFF, OP_BUFF_TEMP, OP_FREEZE, OP_DESTROY,
       OP_SUMMON, OP_GAIN_ENERGY, OP_DISCARD_RANDOM, OP_RETURN_TO_HAND, OP_SILENCE,
       OP_DAMAGE_ALL_ENEMY, N_OPS };
/* Target kinds. Chosen kinds make a pending target decision; automatic kinds do not. */
enum { TG_NONE, TG_ANY, TG_ANY_UNIT, TG_ENEMY_ANY, TG_ENEMY_UNIT, TG_FRIENDLY_ANY,
       TG_FRIENDLY_UNIT, TG_ATTACKER,                       /* chosen */
       TG_SELF, TG_MY_LEADER, TG_ENEMY_LEADER, TG_RANDOM_ENEMY_UNIT, TG_ALL_FRIENDLY_UNITS,
       N_TARGET_KINDS };
#define TG_FIRST_AUTOMATIC TG_SELF
enum { CF_TYPE, CF_FACTION, CF_COST, CF_ATTACK, CF_HEALTH, CF_KEYWORDS, CF_TRIGGER, CF_OP,
       CF_AMOUNT, CF_AMOUNT2, CF_TARGET, CF_ABILITY_COST, CF_TOKEN, CF_DURABILITY,
       CF_MAX_TARGET_COST, CF_IS_TOKEN, CARD_FIELDS };
#define MAX_CARDS 256
#define CARD_NAME_LEN 32            /* bytes per name in Env.card_names */

/* ---- Phases and results -------------------------------------------------------------- */
enum { PH_MULLIGAN, PH_MAIN, PH_RESPONSE, PH_TARGET, N_PHASES };
enum { RESULT_NONE = -1, RESULT_SEAT0 = 0, RESULT_SEAT1 = 1, RESULT_DRAW = 2 };

/* ---- Observation layout: the features of one row, in order ---------------------------- */
enum { G_TURN, G_MY_TURN, G_PHASE_MULLIGAN, G_PHASE_MAIN, G_PHASE_RESPONSE, G_PHASE_TARGET,
       G_MY_ENERGY, G_MY_MAX_ENERGY, G_OPP_ENERGY, G_OPP_MAX_ENERGY, G_MY_SPARK, G_OPP_SPARK,
       G_MY_HAND, G_OPP_HAND, G_MY_DECK, G_OPP_DECK, G_MY_DISCARD, G_OPP_DISCARD,
       G_MY_FATIGUE, G_OPP_FATIGUE, G_SEAT, G_I_WENT_FIRST, G_PENDING_CARD, G_PENDING_OP,
       G_PENDING_AMOUNT, G_ATTACKER_ENT, G_ATTACK_TARGET_ENT, G_MY_LEADER_ABILITY_USED,
       G_OPP_LEADER_ABILITY_USED, G_TURNS_LEFT, G_MY_DECK_ID, G_OPP_DECK_ID, GLOBAL_SIZE };
enum { EF_PRESENT, EF_CARD, EF_TYPE, EF_COST, EF_ATTACK, EF_HEALTH, EF_MAX_HEALTH,
       EF_KEYWORDS, /* N_KEYWORDS flags start here */
       EF_EXHAUSTED = EF_KEYWORDS + N_KEYWORDS, EF_FROZEN, EF_SICK, EF_SHIELD, EF_SILENCED,
       EF_WEAPON_ATTACK, EF_WEAPON_DURABILITY, EF_TEMP_ATTACK, EF_CAN_ACT, ENTITY_WIDTH };
#define OBS_GLOBAL_OFFSET 0
#define OBS_ENTITY_OFFSET (OBS_GLOBAL_OFFSET + GLOBAL_SIZE)
/* What each legal action does at once (lookahead.c: action_effects), as changes seen by the
 * decider: leader healths, each side's board attack, health and unit count, its hand, the game's end. */
enum { FX_MY_LEADER_HEALTH, FX_OPP_LEADER_HEALTH, FX_MY_BOARD_ATTACK, FX_MY_BOARD_HEALTH, FX_MY_UNITS,
       FX_OPP_BOARD_ATTACK, FX_OPP_BOARD_HEALTH, FX_OPP_UNITS, FX_MY_HAND, FX_WIN, FX_LOSS, N_EFFECTS };
#define OBS_LEGAL_COUNT_OFFSET (OBS_ENTITY_OFFSET + N_ENTITIES * ENTITY_WIDTH)  /* how many legal tuples */
#define OBS_LEGAL_OFFSET (OBS_LEGAL_COUNT_OFFSET + 1)                         /* the tuples */
#define OBS_EFFECTS_OFFSET (OBS_LEGAL_OFFSET + MAX_LEGAL * ACTION_WIDTH)
#define OBS_SIZE (OBS_EFFECTS_OFFSET + MAX_LEGAL * N_EFFECTS)
/* Every feature is a small integer, stored in the narrowest type that holds it exactly: the
 * features up to the legal count (healths, card ids, counts; the count reaches MAX_LEGAL) as
 * int16, then the legal tuples and the effects as int8 (an effect saturates at +-127; the
 * effects of 100k random positions lie in [-19, 9]). One row is OBS_BYTES bytes, even, so the int16
 * part of every row stays aligned; the features are that row read as int16 then int8, in order. */
#define OBS_WIDE_COUNT OBS_LEGAL_OFFSET               /* int16 features, from the row's start */
#define OBS_NARROW_COUNT (OBS_SIZE - OBS_WIDE_COUNT)  /* int8 features, after them */
#define OBS_BYTES (2 * OBS_WIDE_COUNT + OBS_NARROW_COUNT)
_Static_assert(N_ACTION_TYPES <= 127 && N_A <= 127 && N_B <= 127 && N_C <= 127, "legal tuples are int8");
_Static_assert(OBS_BYTES % 2 == 0, "an observation row keeps its int16 part aligned");

/* ---- Game state ------------------------------------------------------------------------ */
typedef struct {
    int16_t card;               /* 0 = empty */
    int16_t attack, health, max_health;
    int16_t temp_attack;        /* expires at end of turn */
    int16_t weapon_card, weapon_attack, weapon_durability;
    uint16_t keywords;          /* KW_* bits */
    uint8_t exhausted, frozen, sick, shield, silenced, ability_used;
} Unit;

typedef struct {
    Unit units[UNIT_SLOTS];     /* 0..3 front, 4..6 back, 7 leader */
    int16_t hand[MAX_HAND];
    int16_t deck[DECK_SIZE];    /* top of deck is deck[deck_count - 1] */
    int16_t discard[MAX_DISCARD];
    int8_t hand_count, deck_count, energy, max_energy, spark, fatigue, mulligan_done;
    int16_t discard_count;
    int16_t deck_id;
} Player;

typedef struct {
    int8_t seat, op, target_kind, source_slot, return_phase;
    int8_t reserved;            /* explicit padding: a Pending passed by value copies members, not padding,
                                   so an implicit pad byte would leak stack garbage into get_state() */
    int16_t card, amount, amount2, max_target_cost;
} Pending;

typedef struct {
    int32_t winner, first_player, decisions, turns, truncated, deck[2];
    int32_t action_counts[2][N_ACTION_TYPES];  /* per seat, active decisions only */
} EpisodeStat;

typedef struct {
    Player players[2];
    uint64_t rng;
    int16_t turn;               /* player-turns begun so far, both seats together */
    int8_t first_player, active, decider, phase, result;
    int8_t attack_seat, attack_slot, attack_target_slot;   /* pending attack (PH_RESPONSE) */
    Pending pending;            /* pending target choice (PH_TARGET) */
    uint8_t legal[MAX_LEGAL][ACTION_WIDTH];  /* egocentric to the decider */
    int16_t n_legal;
    float potential[2];         /* shaping potential at each seat's last decision */
    EpisodeStat stat;
} Game;

/* ---- Env: many games stepped by one call ----------------------------------------------- */
#define EPISODE_LOG_CAP 8192

typedef struct {
    int num_games;
    Game *games;
    int16_t *chosen;            /* [num_games] legal index of each game's action (c_step scratch) */
    const int32_t *cards;       /* [MAX_CARDS][CARD_FIELDS] */
    int n_cards;
    const int32_t *decks;       /* [n_decks][DECK_SIZE] card ids */
    const int32_t *deck_leaders;/* [n_decks] leader card id */
    int n_decks;
    const float *deck_weights;  /* [2][n_decks]: per-seat deck draw weights */
    const char *card_names;     /* [MAX_CARDS][CARD_NAME_LEN], for the renderer */
    int turn_cap;
    float shaping_coef;
    int16_t card_obs[MAX_CARDS][ENTITY_WIDTH]; /* static entity features per card id (c_init) */
    uint8_t *observations;      /* [2 * num_games][OBS_BYTES] */
    float *rewards;
    uint8_t *terminals, *truncations, *masks;
    EpisodeStat episode_log[EPISODE_LOG_CAP];
    int episode_log_count, episode_log_dropped;
    int num_threads;            /* c_step splits the games over this many OpenMP threads */
    EpisodeStat *finished;      /* [num_games] c_step scratch: the stat of a game that just ended */
    uint8_t *ended;             /* [num_games] c_step scratch: 1 where a game ended this step */
    int error_game, error_index; /* set when a step is refused */
} Env;

/* rules.c */
uint32_t rng_next(uint64_t *s);
void game_reset(const Env *env, Game *g, uint64_t seed, int deck0, int deck1, int swapped);
void game_apply(const Env *env, Game *g, int legal_index);
void game_apply_look(const Env *env, Game *g, const uint8_t *act, int viewer);
void game_compute_legal(const Env *env, Game *g);
static inline Unit *unit_at(Game *g, int seat, int slot) { return &g->players[seat].units[slot]; }
int ent_to_loc(int viewer, int ent, int *seat, int *slot);
int loc_to_ent(int viewer, int seat, int slot);
int unit_attack_value(const Unit *u);
/* observe.c */
void write_observation(const Env *env, const Game *g, int viewer, uint8_t *obs);
/* greedy.c */
int greedy_choice(const Env *env, const Game *g);
float greedy_value(const Env *env, const Game *g, int me);
/* lookahead.c: what each legal action of g's decider leads to (status, and its next observation);
 * LOOK_WAIT: the decider's next turn not reached within the moves played out */
enum { LOOK_DECIDE, LOOK_WIN, LOOK_LOSS, LOOK_DRAW, LOOK_WAIT, N_LOOK };
int lookahead_game(const Env *env, const Game *g, uint64_t salt, uint8_t *obs, int8_t *status);
/* lookahead.c: the legal index the lookahead greedy bot picks (greedy_value a turn ahead) */
int lookahead_greedy_choice(const Env *env, const Game *g);
/* lookahead.c: the N_EFFECTS changes each legal action of g's decider makes at once, [n_legal][N_EFFECTS] */
void action_effects(const Env *env, const Game *g, int8_t *effects);
/* position.c: a flat int32 view of one game, for hand-built test positions */
int position_size(void);
void position_export(const Game *g, int32_t *out);
const char *position_import(const Env *env, Game *g, const int32_t *in);  /* NULL ok, else the bad field */
const char *game_bounds_error(const Env *env, const Game *g);            /* NULL when memory-safe */
/* render.c */
int render_game(const Env *env, const Game *g, char *out, int cap);
/* env.c */
void c_init(Env *env);  /* derives per-card tables once the card table is set */
void c_reset(Env *env, uint64_t seed);
int c_step(Env *env, const int32_t *actions);  /* 0 ok, -1 illegal action (error_*) */
int c_step_games(Env *env, const int32_t *actions, int lo, int hi);  /* games [lo, hi) only */
int find_legal(const Game *g, const int32_t *action);
void c_set_deal(Env *env, int i, uint64_t seed, int deck0, int deck1, int swapped);
void c_reopen_decision(Env *env, int i);
int choose_deck(const Env *env, Game *g, int seat);

#endif
