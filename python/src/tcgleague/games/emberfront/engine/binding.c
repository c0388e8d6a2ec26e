/* CPython binding: exports the layout and an Engine object that steps every game in one call,
 * writing into buffers owned by Python (PufferLib's observation/reward/... arrays). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include "tcg.h"

PyObject *py_layout(PyObject *self, PyObject *args);            /* layout.c */
PyObject *py_lookahead_status(PyObject *self, PyObject *args);  /* layout.c */

/* ---- Engine object ---------------------------------------------------------------------------- */
enum { B_CARDS, B_DECKS, B_LEADERS, B_WEIGHTS, B_NAMES, B_OBS, B_REW, B_TERM, B_TRUNC, B_MASK, N_BUFS };

typedef struct {
    PyObject_HEAD
    Env env;
    Py_buffer bufs[N_BUFS];
    int held;
} EngineObject;

static const char *BUF_NAMES[N_BUFS] = {"cards", "decks", "deck_leaders", "deck_weights", "card_names",
                                        "observations", "rewards", "terminals", "truncations", "masks"};

/* Takes a C-contiguous buffer and checks its byte size; the error names the argument. */
static int take_buffer(EngineObject *self, int which, PyObject *obj, Py_ssize_t nbytes, int writable) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &self->bufs[which], flags) < 0) {
        PyErr_Format(PyExc_ValueError, "%s must be a %sC-contiguous buffer", BUF_NAMES[which], writable ? "writable " : "");
        return -1;
    }
    self->held |= 1 << which;
    if (self->bufs[which].len != nbytes) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes, expected %zd", BUF_NAMES[which], self->bufs[which].len, nbytes);
        return -1;
    }
    return 0;
}

static void engine_dealloc(EngineObject *self) {
    for (int i = 0; i < N_BUFS; i++) if (self->held & (1 << i)) PyBuffer_Release(&self->bufs[i]);
    free(self->env.games);
    free(self->env.chosen);
    free(self->env.finished);
    free(self->env.ended);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int engine_init(EngineObject *self, PyObject *args, PyObject *kwds) {
    static char *kw[] = {"num_games", "n_cards", "n_decks", "cards", "decks", "deck_leaders", "deck_weights",
                         "card_names", "observations", "rewards", "terminals", "truncations", "masks",
                         "turn_cap", "shaping_coef", "num_threads", NULL};
    int num_games, n_cards, n_decks, turn_cap, num_threads = 1;
    float shaping;
    PyObject *o[N_BUFS];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiiOOOOOOOOOOif|i", kw, &num_games, &n_cards, &n_decks,
            &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &turn_cap, &shaping, &num_threads))
        return -1;
    if (self->env.games) { PyErr_SetString(PyExc_RuntimeError, "Engine is already initialised"); return -1; }
    if (num_threads < 1) {
        PyErr_Format(PyExc_ValueError, "num_threads must be >= 1 (got %d)", num_threads);
        return -1;
    }
    if (num_games < 1 || n_cards < 1 || n_cards > MAX_CARDS || n_decks < 1 || turn_cap < 1) {
        PyErr_Format(PyExc_ValueError, "need num_games >= 1 (got %d), 1 <= n_cards <= %d (got %d), n_decks >= 1 (got %d), turn_cap >= 1 (got %d)",
                     num_games, MAX_CARDS, n_cards, n_decks, turn_cap);
        return -1;
    }
    Py_ssize_t rows = 2 * (Py_ssize_t)num_games;
    Py_ssize_t sizes[N_BUFS] = {4 * MAX_CARDS * CARD_FIELDS, 4 * (Py_ssize_t)n_decks * DECK_SIZE, 4 * n_decks,
                                4 * 2 * n_decks, MAX_CARDS * CARD_NAME_LEN, rows * OBS_BYTES, 4 * rows, rows, rows, rows};
    for (int i = 0; i < N_BUFS; i++)
        if (take_buffer(self, i, o[i], sizes[i], i >= B_OBS) < 0) return -1;
    Env *e = &self->env;
    e->games = calloc((size_t)num_games, sizeof(Game));
    e->chosen = calloc((size_t)num_games, sizeof(int16_t));
    e->finished = calloc((size_t)num_games, sizeof(EpisodeStat));
    e->ended = calloc((size_t)num_games, 1);
    if (!e->games || !e->chosen || !e->finished || !e->ended) { PyErr_NoMemory(); return -1; }
    e->num_threads = num_threads;
    e->num_games = num_games;
    e->n_cards = n_cards;
    e->n_decks = n_decks;
    e->cards = self->bufs[B_CARDS].buf;
    e->decks = self->bufs[B_DECKS].buf;
    e->deck_leaders = self->bufs[B_LEADERS].buf;
    e->deck_weights = self->bufs[B_WEIGHTS].buf;
    e->card_names = self->bufs[B_NAMES].buf;
    e->observations = self->bufs[B_OBS].buf;
    e->rewards = self->bufs[B_REW].buf;
    e->terminals = self->bufs[B_TERM].buf;
    e->truncations = self->bufs[B_TRUNC].buf;
    e->masks = self->bufs[B_MASK].buf;
    e->turn_cap = turn_cap;
    e->shaping_coef = shaping;
    c_init(e);
    return 0;
}

static int check_game(EngineObject *self, int i) {
    if (!self->env.games) { PyErr_SetString(PyExc_RuntimeError, "Engine is not initialised"); return -1; }
    if (i < 0 || i >= self->env.num_games) {
        PyErr_Format(PyExc_IndexError, "game %d out of range [0, %d)", i, self->env.num_games);
        return -1;
    }
    return 0;
}

static PyObject *engine_reset(EngineObject *self, PyObject *args) {
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "K", &seed) || check_game(self, 0) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    c_reset(&self->env, seed);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* step(actions[, lo, hi]) -> None, or (game, row, n_legal) when an active row's action is not legal
 * (nothing moved in that case; the Python side raises with the details). */
static PyObject *engine_step(EngineObject *self, PyObject *args) {
    PyObject *arg;
    int lo = 0, hi = self->env.num_games;
    if (!PyArg_ParseTuple(args, "O|ii", &arg, &lo, &hi) || check_game(self, 0) < 0) return NULL;
    if (lo < 0 || hi > self->env.num_games || lo >= hi)
        return PyErr_Format(PyExc_ValueError, "games [%d, %d) is not a range within [0, %d)", lo, hi, self->env.num_games);
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    Py_ssize_t need = 4 * 2 * (Py_ssize_t)self->env.num_games * ACTION_WIDTH;
    if (b.len != need) {
        PyBuffer_Release(&b);
        return PyErr_Format(PyExc_ValueError, "actions has %zd bytes, expected %zd (int32 [%d, %d])", b.len, need,
                            2 * self->env.num_games, ACTION_WIDTH);
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = c_step_games(&self->env, b.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (rc == 0) Py_RETURN_NONE;
    Env *e = &self->env;
    return Py_BuildValue("(iii)", e->error_game, e->error_index, e->games[e->error_game].n_legal);
}

/* greedy(out[, rows[, ahead]]): writes the greedy bot's action into the active rows of int32
 * [rows, 4]; with `rows` (int64 env row ids) only those games are searched (a league plays greedy
 * in a few); with `ahead` the lookahead greedy bot's (lookahead.c) instead. */
static void greedy_game(Env *env, int i, int32_t *out, int ahead) {
    const Game *g = &env->games[i];
    const uint8_t *l = g->legal[ahead ? lookahead_greedy_choice(env, g) : greedy_choice(env, g)];
    int32_t *row = out + (size_t)(2 * i + g->decider) * ACTION_WIDTH;
    for (int k = 0; k < ACTION_WIDTH; k++) row[k] = l[k];
}

static PyObject *engine_greedy(EngineObject *self, PyObject *args) {
    PyObject *out_obj, *rows_obj = Py_None;
    int ahead = 0;
    if (!PyArg_ParseTuple(args, "O|Op", &out_obj, &rows_obj, &ahead) || check_game(self, 0) < 0) return NULL;
    Py_buffer b, r = {0};
    if (PyObject_GetBuffer(out_obj, &b, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    if (b.len != 4 * 2 * (Py_ssize_t)self->env.num_games * ACTION_WIDTH) {
        PyBuffer_Release(&b);
        return PyErr_Format(PyExc_ValueError, "greedy output must be int32 [%d, %d]", 2 * self->env.num_games, ACTION_WIDTH);
    }
    if (rows_obj != Py_None && PyObject_GetBuffer(rows_obj, &r, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    if (rows_obj != Py_None && (r.itemsize != 8 || r.format == NULL || (r.format[0] != 'l' && r.format[0] != 'q'))) {
        PyBuffer_Release(&b);
        PyBuffer_Release(&r);
        return PyErr_Format(PyExc_ValueError, "greedy rows must be an int64 array of env row ids");
    }
    int32_t *out = b.buf;
    Env *env = &self->env;
    int bad = -1;
    const int64_t *rows = rows_obj == Py_None ? NULL : r.buf;
    Py_ssize_t n = rows == NULL ? env->num_games : r.len / 8;
    for (Py_ssize_t k = 0; rows != NULL && k < n && bad < 0; k++)
        if (rows[k] < 0 || rows[k] >= 2 * (int64_t)env->num_games) bad = (int)k;
    if (bad < 0) {
        /* each game's search reads only its game and writes only its decider's row: split over
         * the engine's threads like c_step, the same actions for any thread count */
        Py_BEGIN_ALLOW_THREADS
#pragma omp parallel for schedule(dynamic, 16) num_threads(env->num_threads) if (env->num_threads > 1)
        for (Py_ssize_t k = 0; k < n; k++) {
            int i = rows == NULL ? (int)k : (int)(rows[k] / 2);
            if (rows == NULL || env->games[i].decider == rows[k] % 2) greedy_game(env, i, out, ahead);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&b);
    if (rows_obj != Py_None) PyBuffer_Release(&r);
    if (bad >= 0) return PyErr_Format(PyExc_IndexError, "greedy rows[%d] is out of range [0, %d)", bad, 2 * env->num_games);
    Py_RETURN_NONE;
}

/* lookahead(game, salt, obs uint8 [MAX_LEGAL, OBS_BYTES], status int8 [MAX_LEGAL]) -> n_legal:
 * for each legal action of the game's decider, where it leads (lookahead.c). */
static PyObject *engine_lookahead(EngineObject *self, PyObject *args) {
    int i;
    unsigned long long salt;
    PyObject *obs_obj, *status_obj;
    if (!PyArg_ParseTuple(args, "iKOO", &i, &salt, &obs_obj, &status_obj) || check_game(self, i) < 0) return NULL;
    Py_buffer o, s;
    if (PyObject_GetBuffer(obs_obj, &o, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    if (PyObject_GetBuffer(status_obj, &s, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&o);
        return NULL;
    }
    Game *g = &self->env.games[i];
    if (g->result != RESULT_NONE) {
        PyBuffer_Release(&o);
        PyBuffer_Release(&s);
        return PyErr_Format(PyExc_ValueError, "game %d is over: nothing to look ahead from", i);
    }
    int n = -1;
    if (o.len == (Py_ssize_t)MAX_LEGAL * OBS_BYTES && s.len == MAX_LEGAL) {
        memset(o.buf, 0, (size_t)g->n_legal * OBS_BYTES);
        Py_BEGIN_ALLOW_THREADS
        n = lookahead_game(&self->env, g, salt, o.buf, s.buf);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&o);
    PyBuffer_Release(&s);
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "lookahead buffers must be uint8 [%d, %d] and int8 [%d]", MAX_LEGAL,
                            OBS_BYTES, MAX_LEGAL);
    return PyLong_FromLong(n);
}

static PyObject *engine_set_deal(EngineObject *self, PyObject *args) {
    int i, d0, d1, swapped;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "iKiip", &i, &seed, &d0, &d1, &swapped) || check_game(self, i) < 0) return NULL;
    if (d0 < 0 || d0 >= self->env.n_decks || d1 < 0 || d1 >= self->env.n_decks)
        return PyErr_Format(PyExc_ValueError, "deck ids (%d, %d) out of range [0, %d)", d0, d1, self->env.n_decks);
    c_set_deal(&self->env, i, seed, d0, d1, swapped);
    Py_RETURN_NONE;
}

static PyObject *engine_render(EngineObject *self, PyObject *args) {
    int i;
    if (!PyArg_ParseTuple(args, "i", &i) || check_game(self, i) < 0) return NULL;
    char buf[8192];
    int n = render_game(&self->env, &self->env.games[i], buf, sizeof(buf));
    return PyUnicode_FromStringAndSize(buf, n < (int)sizeof(buf) ? n : (int)sizeof(buf) - 1);
}

/* drain_episodes() -> bytes of the completed EpisodeStat records (int32 each), and the number
 * dropped because the log was full. */
static PyObject *engine_drain_episodes(EngineObject *self, PyObject *args) {
    (void)args;
    if (check_game(self, 0) < 0) return NULL;
    Env *e = &self->env;
    PyObject *out = Py_BuildValue("(y#i)", (const char *)e->episode_log,
                                  (Py_ssize_t)(e->episode_log_count * sizeof(EpisodeStat)), e->episode_log_dropped);
    e->episode_log_count = 0;
    e->episode_log_dropped = 0;
    return out;
}

static PyObject *engine_export_position(EngineObject *self, PyObject *args) {
    int i;
    if (!PyArg_ParseTuple(args, "i", &i) || check_game(self, i) < 0) return NULL;
    int n = position_size();
    int32_t buf[1024];
    position_export(&self->env.games[i], buf);
    PyObject *l = PyList_New(n);
    for (int k = 0; l && k < n; k++) PyList_SET_ITEM(l, k, PyLong_FromLong(buf[k]));
    return l;
}

static PyObject *engine_import_position(EngineObject *self, PyObject *args) {
    int i;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "iO", &i, &seq) || check_game(self, i) < 0) return NULL;
    int n = position_size();
    PyObject *fast = PySequence_Fast(seq, "position must be a sequence of ints");
    if (!fast) return NULL;
    Py_ssize_t got = PySequence_Fast_GET_SIZE(fast);  /* of `fast`: `seq` may be neither list nor tuple */
    if (got != n) {
        Py_DECREF(fast);
        return PyErr_Format(PyExc_ValueError, "position has %zd values, expected %d", got, n);
    }
    int32_t buf[1024];
    for (int k = 0; k < n; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, k));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(fast); return NULL; }
        buf[k] = (int32_t)v;
    }
    Py_DECREF(fast);
    Game copy = self->env.games[i];
    const char *bad = position_import(&self->env, &copy, buf);
    if (bad) return PyErr_Format(PyExc_ValueError, "position field %s is out of range", bad);
    self->env.games[i] = copy;
    c_reopen_decision(&self->env, i);
    Py_RETURN_NONE;
}

static PyObject *engine_set_shaping(EngineObject *self, PyObject *args) {
    float coef;
    if (!PyArg_ParseTuple(args, "f", &coef)) return NULL;
    self->env.shaping_coef = coef;
    Py_RETURN_NONE;
}

/* ---- get_state() / set_state(bytes): the whole games array, for exact resume ---------------
 * Layout: a 24-byte header {magic "EMBSTATE", version, num_games, sizeof(Game), reserved} then
 * num_games Game structs as they are in memory. The rest of the Env (card tables, shaping,
 * turn cap) comes from the configuration; the Python side restores the step buffers. */
#define STATE_MAGIC "EMBSTATE"
#define STATE_VERSION 1u
typedef struct { char magic[8]; uint32_t version, num_games, game_size, reserved; } StateHeader;

static PyObject *engine_get_state(EngineObject *self, PyObject *args) {
    (void)args;
    if (check_game(self, 0) < 0) return NULL;
    size_t body = (size_t)self->env.num_games * sizeof(Game);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(StateHeader) + body));
    if (!out) return NULL;
    char *p = PyBytes_AS_STRING(out);
    StateHeader h;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, STATE_MAGIC, 8);
    h.version = STATE_VERSION;
    h.num_games = (uint32_t)self->env.num_games;
    h.game_size = (uint32_t)sizeof(Game);
    memcpy(p, &h, sizeof(h));
    memcpy(p + sizeof(h), self->env.games, body);
    return out;
}

static PyObject *engine_set_state(EngineObject *self, PyObject *arg) {
    if (check_game(self, 0) < 0) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    size_t body = (size_t)self->env.num_games * sizeof(Game);
    StateHeader h;
    const char *err = NULL;
    if ((size_t)b.len < sizeof(h)) err = "too short for the header";
    else {
        memcpy(&h, b.buf, sizeof(h));
        if (memcmp(h.magic, STATE_MAGIC, 8) != 0) err = "bad magic (not an engine state)";
        else if (h.version != STATE_VERSION) err = "unsupported state version";
        else if (h.game_size != (uint32_t)sizeof(Game)) err = "Game struct size differs (engine changed)";
        else if (h.num_games != (uint32_t)self->env.num_games) err = "num_games differs";
        else if ((size_t)b.len != sizeof(h) + body) err = "wrong length";
    }
    if (err) {
        PyErr_Format(PyExc_ValueError, "engine state rejected: %s (got %zd bytes; this engine has %d games of "
                     "%zu bytes, expecting %zu bytes, version %u)", err, b.len, self->env.num_games,
                     sizeof(Game), sizeof(h) + body, STATE_VERSION);
        PyBuffer_Release(&b);
        return NULL;
    }
    /* Checked into a scratch copy first: the bytes come from a file, and a game whose counts or
     * card ids are out of range, or whose legal list is not the one its position gives, would
     * make the engine read or write outside its arrays. */
    const Game *stored = (const Game *)((const char *)b.buf + sizeof(h));
    Game check, saved;
    for (int i = 0; i < self->env.num_games; i++) {
        memcpy(&saved, &stored[i], sizeof(Game));
        check = saved;
        const char *bad = game_bounds_error(&self->env, &check);
        if (bad) {
            PyBuffer_Release(&b);
            return PyErr_Format(PyExc_ValueError, "engine state rejected: game %d: field %s is out of range", i, bad);
        }
        if (check.result == RESULT_NONE) {
            game_compute_legal(&self->env, &check);
            if (check.n_legal != saved.n_legal ||
                memcmp(check.legal, saved.legal, sizeof(check.legal[0]) * (size_t)check.n_legal) != 0) {
                PyBuffer_Release(&b);
                return PyErr_Format(PyExc_ValueError,
                                    "engine state rejected: game %d: its legal list is not the one its position gives", i);
            }
        }
    }
    memcpy(self->env.games, stored, body);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyMethodDef engine_methods[] = {
    {"reset", (PyCFunction)engine_reset, METH_VARARGS, "reset(seed): start a fresh game in every slot"},
    {"step", (PyCFunction)engine_step, METH_VARARGS,
     "step(actions int32[rows,4][, lo, hi]) -> None or (game, row, n_legal): games [lo, hi) (all by default)"},
    {"greedy", (PyCFunction)engine_greedy, METH_VARARGS, "greedy(out int32[rows,4][, rows int64[, ahead]]): greedy (or lookahead greedy) bot actions for active rows"},
    {"lookahead", (PyCFunction)engine_lookahead, METH_VARARGS,
     "lookahead(game, salt, obs u8[MAX_LEGAL, OBS_BYTES], status i8[MAX_LEGAL]) -> n_legal"},
    {"set_deal", (PyCFunction)engine_set_deal, METH_VARARGS, "set_deal(game, seed, deck0, deck1, swapped)"},
    {"render", (PyCFunction)engine_render, METH_VARARGS, "render(game) -> str"},
    {"drain_episodes", (PyCFunction)engine_drain_episodes, METH_NOARGS, "-> (bytes, dropped)"},
    {"export_position", (PyCFunction)engine_export_position, METH_VARARGS, "export_position(game) -> list[int]"},
    {"import_position", (PyCFunction)engine_import_position, METH_VARARGS, "import_position(game, list[int])"},
    {"set_shaping", (PyCFunction)engine_set_shaping, METH_VARARGS, "set_shaping(coef)"},
    {"get_state", (PyCFunction)engine_get_state, METH_NOARGS, "get_state() -> bytes: every game's full state"},
    {"set_state", (PyCFunction)engine_set_state, METH_O, "set_state(bytes): restore get_state()'s games (length and header checked)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tcgleague.games.emberfront.engine._tcg.Engine",
    .tp_basicsize = sizeof(EngineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)engine_init,
    .tp_dealloc = (destructor)engine_dealloc,
    .tp_methods = engine_methods,
    .tp_doc = "Many Emberfront games stepped together into caller-owned buffers.",
};

static PyMethodDef module_methods[] = {
    {"layout", py_layout, METH_NOARGS, "Every observation offset, size, head width and enum of the engine."},
    {"lookahead_status", py_lookahead_status, METH_NOARGS, "The codes of Engine.lookahead's statuses, by name."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_tcg", "Emberfront C engine", -1, module_methods};

PyMODINIT_FUNC PyInit__tcg(void) {
    if (PyType_Ready(&EngineType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0) { Py_DECREF(&EngineType); Py_DECREF(m); return NULL; }
    return m;
}
