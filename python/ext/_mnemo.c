/*
 * _mnemo.c - the CPython extension under the mnemo package: one type, Handle,
 * over a mnemo handle, and a few module functions (version, status codes,
 * configuration keys). The Python layer (mnemo/__init__.py) turns what this
 * returns (tuples, dicts, JSON text) into dataclasses and exceptions.
 *
 * Threads: a mnemo handle "may move between threads but must be used by one
 * at a time" (mnemo.h), so each Handle holds a lock taken around every call
 * into the library. The GIL is released while the library works (and while
 * waiting for the lock), so threads with their own handles run in parallel
 * and a thread that shares one waits without blocking the interpreter.
 *
 * Errors: a failing status raises the exception class the package registered
 * for its code (_set_errors), with mnemo_errmsg's text and the code.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdint.h>
#include <string.h>

#include "mnemo.h"

/* The exception class per status code, set once by the package. */
#define NCODES 64
static PyObject *error_class[NCODES];

typedef struct {
    PyObject_HEAD mnemo *m;
    PyThread_type_lock lock;
    unsigned long owner; /* thread holding LOCK (written and read with the GIL held) */
} Handle;

/* ---- errors ------------------------------------------------------------- */

/* Raises the registered class for CODE with MSG (or the code's text). */
static PyObject *raise_code(int code, const char *msg)
{
    PyObject *cls = code > 0 && code < NCODES && error_class[code] ? error_class[code]
                    : error_class[0]                               ? error_class[0]
                                                                   : PyExc_RuntimeError;
    PyObject *text = PyUnicode_DecodeUTF8(msg ? msg : mnemo_strerror(code),
                                          (Py_ssize_t)strlen(msg ? msg : mnemo_strerror(code)),
                                          "replace");
    if (!text)
        return NULL;
    PyObject *exc = PyObject_CallFunction(cls, "Oi", text, code);
    Py_DECREF(text);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* Raises for a status of H's handle, with its last message. */
static PyObject *raise_status(Handle *h, int code)
{
    if (code == MNEMO_NOMEM)
        return raise_code(code, NULL);
    return raise_code(code, h->m ? mnemo_errmsg(h->m) : NULL);
}

/* ---- arguments ---------------------------------------------------------- */

/* An O& converter: a str (encoded as UTF-8) or bytes (as is), or None when
 * the argument allows it, into a borrowed const char * (NULL for None).
 * Text that cannot be UTF-8 (lone surrogates) or holds a NUL byte is the
 * library's "invalid argument", not a Python encoding error. */
static int text_arg(PyObject *o, const char **out, int none_ok)
{
    const char *s = NULL;
    Py_ssize_t n = 0;
    if (o == Py_None && none_ok) {
        *out = NULL;
        return 1;
    }
    if (PyUnicode_Check(o)) {
        s = PyUnicode_AsUTF8AndSize(o, &n);
        if (!s) {
            PyErr_Clear();
            raise_code(MNEMO_INVALID, "text is not valid UTF-8 (it holds a lone surrogate)");
            return 0;
        }
    } else if (PyBytes_Check(o)) {
        s = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
        PyObject *check = PyUnicode_DecodeUTF8(s, n, "strict");
        if (!check) {
            PyErr_Clear();
            raise_code(MNEMO_INVALID, "text is not valid UTF-8");
            return 0;
        }
        Py_DECREF(check);
    } else {
        PyErr_Format(PyExc_TypeError, "expected str or bytes%s, got %s",
                     none_ok ? " or None" : "", Py_TYPE(o)->tp_name);
        return 0;
    }
    if (memchr(s, 0, (size_t)n)) {
        raise_code(MNEMO_INVALID, "text holds a NUL character");
        return 0;
    }
    *out = s;
    return 1;
}

static int text_conv(PyObject *o, void *out) { return text_arg(o, out, 0); }
static int opt_text_conv(PyObject *o, void *out) { return text_arg(o, out, 1); }

/* ---- values ------------------------------------------------------------- */

/* S as a str (None for NULL); bytes that are not UTF-8 kept as surrogates. */
static PyObject *text_value(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

/* Takes S (a char * the library returned): a str, S freed either way. */
static PyObject *take_text(char *s)
{
    PyObject *v = text_value(s ? s : "");
    mnemo_free(s);
    return v;
}

/* ---- the handle and its lock -------------------------------------------- */

/* Takes H's lock for the calling thread (waiting without the GIL). -1 with
 * an exception when the handle is closed, or when this thread holds it
 * already (a progress callback calling back into its own handle). */
static int handle_enter(Handle *h)
{
    unsigned long me = PyThread_get_thread_ident();
    if (!h->m) {
        raise_code(MNEMO_MISUSE, "the handle is closed");
        return -1;
    }
    if (!PyThread_acquire_lock(h->lock, NOWAIT_LOCK)) {
        if (h->owner == me) {
            raise_code(MNEMO_MISUSE, "the handle is in use by this thread (a callback cannot call "
                                     "back into the handle that called it)");
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(h->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    h->owner = me;
    if (!h->m) { /* closed while this thread waited */
        h->owner = 0;
        PyThread_release_lock(h->lock);
        raise_code(MNEMO_MISUSE, "the handle is closed");
        return -1;
    }
    return 0;
}

static void handle_leave(Handle *h)
{
    h->owner = 0;
    PyThread_release_lock(h->lock);
}

static int config_apply(mnemo_config *cfg, const char *key, const char *value)
{
    char *err = NULL;
    int rc = mnemo_config_set(cfg, key, value, "flag", &err);
    if (rc) {
        char msg[1024];
        PyOS_snprintf(msg, sizeof msg, "configuration: %s", err ? err : mnemo_strerror(rc));
        raise_code(rc, msg);
    }
    mnemo_free(err);
    return rc;
}

/* Handle(workspace, config_file, settings): settings a sequence of (key,
 * value) string pairs, applied after the standard layering as the command's
 * flags are (cli/cli.c: workspace first, which decides the mnemo.json). */
static int Handle_init(Handle *h, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"workspace", "config_file", "settings", NULL};
    const char *workspace = NULL, *config_file = NULL;
    PyObject *settings = NULL, *seq = NULL;
    mnemo_config *cfg = NULL;
    mnemo *m = NULL;
    char *err = NULL;
    int rc, ok = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&O", kwlist, opt_text_conv, &workspace,
                                     opt_text_conv, &config_file, &settings))
        return -1;
    if (h->m) {
        raise_code(MNEMO_MISUSE, "the handle is open already");
        return -1;
    }
    if (!h->lock && !(h->lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return -1;
    }
    if (!(seq = PySequence_Fast(settings, "settings must be a sequence of (key, value) pairs")))
        return -1;
    if (mnemo_config_new(&cfg)) {
        raise_code(MNEMO_NOMEM, NULL);
        goto done;
    }
    if (workspace && config_apply(cfg, "workspace", workspace))
        goto done;
    if ((rc = mnemo_config_load_standard(cfg, config_file, &err))) {
        char msg[1024];
        PyOS_snprintf(msg, sizeof msg, "configuration: %s",
                      err ? err
                      : rc == MNEMO_NOTFOUND && config_file
                          ? "the configuration file does not exist"
                          : mnemo_strerror(rc));
        raise_code(rc, msg);
        goto done;
    }
    if (workspace && config_apply(cfg, "workspace", workspace))
        goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *key, *value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "O&O&;settings: (key, value)",
                              text_conv, &key, text_conv, &value))
            goto done;
        if (config_apply(cfg, key, value))
            goto done;
    }
    Py_BEGIN_ALLOW_THREADS rc = mnemo_open(cfg, &m);
    Py_END_ALLOW_THREADS
    if (rc) {
        raise_code(rc, m ? mnemo_errmsg(m) : NULL);
        mnemo_close(m);
        goto done;
    }
    h->m = m;
    ok = 0;
done:
    mnemo_free(err);
    mnemo_config_free(cfg);
    Py_XDECREF(seq);
    return ok;
}

static void Handle_dealloc(Handle *h)
{
    /* Nothing else refers to H now, so no thread is inside a call on it. */
    if (h->m) {
        mnemo *m = h->m;
        h->m = NULL;
        Py_BEGIN_ALLOW_THREADS mnemo_close(m);
        Py_END_ALLOW_THREADS
    }
    if (h->lock)
        PyThread_free_lock(h->lock);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *Handle_close(Handle *h, PyObject *unused)
{
    (void)unused;
    if (!h->m)
        Py_RETURN_NONE;
    if (handle_enter(h))
        return NULL;
    mnemo *m = h->m;
    h->m = NULL;
    Py_BEGIN_ALLOW_THREADS mnemo_close(m);
    Py_END_ALLOW_THREADS
    handle_leave(h);
    Py_RETURN_NONE;
}

static PyObject *Handle_closed(Handle *h, void *unused)
{
    (void)unused;
    return PyBool_FromLong(h->m == NULL);
}

/* ---- indexing ----------------------------------------------------------- */

typedef struct {
    PyObject *callback; /* borrowed */
    PyObject *error_type, *error_value, *error_tb; /* the callback's first exception */
} progress_ctx;

/* Called by the sync without the GIL (on the calling thread, as the library
 * does today, or any other): takes it, calls the Python callable with
 * (phase, done, total, bytes), gives it back. The first exception the
 * callable raises is kept for after the sync (which cannot be stopped). */
static void on_progress(void *ud, const mnemo_progress *p)
{
    progress_ctx *c = ud;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (!c->error_type) {
        PyObject *r = PyObject_CallFunction(c->callback, "snnK", p->phase ? p->phase : "",
                                            (Py_ssize_t)p->done, (Py_ssize_t)p->total,
                                            (unsigned long long)p->bytes);
        if (r)
            Py_DECREF(r);
        else
            PyErr_Fetch(&c->error_type, &c->error_value, &c->error_tb);
    }
    PyGILState_Release(gil);
}

static int put_size(PyObject *d, const char *key, size_t v)
{
    PyObject *o = PyLong_FromSize_t(v);
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static int put_obj(PyObject *d, const char *key, PyObject *o)
{
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *stats_dict(const mnemo_sync_stats *s)
{
    PyObject *d = PyDict_New();
    if (!d || put_size(d, "files_seen", s->files_seen) ||
        put_size(d, "files_added", s->files_added) ||
        put_size(d, "files_changed", s->files_changed) ||
        put_size(d, "files_touched", s->files_touched) ||
        put_size(d, "files_unchanged", s->files_unchanged) ||
        put_size(d, "files_removed", s->files_removed) ||
        put_size(d, "files_renamed", s->files_renamed) ||
        put_size(d, "files_skipped", s->files_skipped) ||
        put_size(d, "chunks_added", s->chunks_added) ||
        put_size(d, "chunks_removed", s->chunks_removed) ||
        put_obj(d, "bytes_read", PyLong_FromUnsignedLongLong(s->bytes_read)) ||
        put_obj(d, "seconds", PyFloat_FromDouble(s->seconds)) ||
        put_obj(d, "rebuilt", PyBool_FromLong(s->rebuilt)) ||
        put_obj(d, "rebuild_reason", text_value(s->rebuild_reason)) ||
        put_size(d, "chunks_embedded", s->chunks_embedded) ||
        put_size(d, "embed_cache_hits", s->embed_cache_hits) ||
        put_size(d, "vectors_total", s->vectors_total) ||
        put_obj(d, "embed_warning", text_value(s->embed_warning))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* sync(force, progress) -> dict of mnemo_sync_stats */
static PyObject *Handle_sync(Handle *h, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"force", "progress", NULL};
    int force = 0, rc;
    PyObject *progress = Py_None, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO", kwlist, &force, &progress))
        return NULL;
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return NULL;
    }
    if (handle_enter(h))
        return NULL;
    progress_ctx c = {progress, NULL, NULL, NULL};
    mnemo_sync_opts o = {force, progress != Py_None ? on_progress : NULL, &c};
    mnemo_sync_stats st;
    memset(&st, 0, sizeof st);
    Py_BEGIN_ALLOW_THREADS rc = mnemo_sync(h->m, &o, &st);
    Py_END_ALLOW_THREADS
    if (rc) { /* the sync's own error wins over the callback's */
        raise_status(h, rc);
        Py_XDECREF(c.error_type);
        Py_XDECREF(c.error_value);
        Py_XDECREF(c.error_tb);
    } else if (c.error_type) {
        PyErr_Restore(c.error_type, c.error_value, c.error_tb);
    } else {
        out = stats_dict(&st);
    }
    handle_leave(h);
    return out;
}

/* ---- search ------------------------------------------------------------- */

static PyObject *note_tuple(const mnemo_result *r)
{
    return Py_BuildValue("(sNiidNNNddiddiiNNN)", "note", text_value(r->path), r->start_line,
                         r->end_line, r->score, text_value(r->snippet), text_value(r->source),
                         text_value(r->citation), r->text_score, r->vector_score, r->tier,
                         r->recency, r->importance, r->rank_before, r->rank_after,
                         text_value(r->date), text_value(r->kind), text_value(r->mime));
}

static PyObject *fact_tuple(const mnemo_memory *f, double score)
{
    PyObject *triggers = PyTuple_New((Py_ssize_t)f->ntriggers);
    for (size_t i = 0; triggers && i < f->ntriggers; i++) {
        PyObject *t = text_value(f->triggers[i]);
        if (!t) {
            Py_CLEAR(triggers);
            break;
        }
        PyTuple_SET_ITEM(triggers, (Py_ssize_t)i, t);
    }
    if (!triggers)
        return NULL;
    return Py_BuildValue("(sNNNdNNNNNNNLLLLLLdd)", "fact", text_value(f->id), text_value(f->text),
                         text_value(f->category), f->importance, text_value(f->type),
                         text_value(f->subject), text_value(f->user_id),
                         text_value(f->agent_id), text_value(f->run_id),
                         text_value(f->metadata), triggers, (long long)f->created_at,
                         (long long)f->updated_at, (long long)f->expires_at,
                         (long long)f->last_confirmed_at, (long long)f->deleted_at,
                         f->confirmations, score, f->relevance);
}

/* The hits as (hits, mode, warning, provider, fallback_from, fallback_reason). */
static PyObject *hits_value(const mnemo_hits *hits)
{
    size_t n = mnemo_hits_count(hits);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        const mnemo_result *r = mnemo_hits_note(hits, i);
        const mnemo_memory *f = mnemo_hits_fact(hits, i);
        PyObject *t = r ? note_tuple(r) : f ? fact_tuple(f, mnemo_hits_score(hits, i)) : NULL;
        if (!t) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "a hit is neither a note nor a fact");
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    if (!list)
        return NULL;
    const mnemo_results *notes = mnemo_hits_notes(hits);
    const char *reason = NULL;
    const char *from = notes ? mnemo_results_fallback(notes, &reason) : NULL;
    return Py_BuildValue("(NNNNNN)", list, text_value(mnemo_hits_mode(hits)),
                         text_value(mnemo_hits_warning(hits)),
                         text_value(notes ? mnemo_results_provider(notes) : NULL),
                         text_value(from), text_value(from ? reason : NULL));
}

/* search(query, kinds, max_results, min_score, strict, explain, corpus,
 *        user_id, agent_id, run_id, scope, categories, type, subject, filters,
 *        as_json) -> hits_value tuple, or the JSON text with as_json */
static PyObject *Handle_search(Handle *h, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"query",    "kinds",   "max_results", "min_score", "strict",
                             "explain",  "corpus",  "user_id",     "agent_id",  "run_id",
                             "scope",    "categories", "type",     "subject",   "filters",
                             "as_json",  NULL};
    const char *query = NULL;
    mnemo_search_all_opts ao;
    mnemo_search_all_opts_init(&ao);
    PyObject *categories = Py_None, *cats = NULL, *out = NULL;
    const char **names = NULL;
    int as_json = 0, rc;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "O&|iidiiO&O&O&O&O&OO&O&O&p", kwlist, text_conv, &query, &ao.kinds,
            &ao.notes.max_results, &ao.notes.min_score, &ao.notes.strict, &ao.notes.explain,
            opt_text_conv, &ao.notes.corpus, opt_text_conv, &ao.facts.user_id, opt_text_conv,
            &ao.facts.agent_id, opt_text_conv, &ao.facts.run_id, opt_text_conv, &ao.facts.scope,
            &categories, opt_text_conv, &ao.facts.type, opt_text_conv, &ao.facts.subject,
            opt_text_conv, &ao.facts.filters, &as_json))
        return NULL;
    if (categories != Py_None) {
        if (!(cats = PySequence_Fast(categories, "categories must be a sequence of str")))
            return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(cats);
        if (!(names = PyMem_Calloc((size_t)n + 1, sizeof *names))) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            if (!text_conv(PySequence_Fast_GET_ITEM(cats, i), &names[i]))
                goto done;
        ao.facts.categories = names;
        ao.facts.ncategories = (size_t)n;
    }
    if (handle_enter(h))
        goto done;
    mnemo_hits *hits = NULL;
    char *json = NULL;
    Py_BEGIN_ALLOW_THREADS rc = mnemo_search_all_typed(h->m, query, &ao, &hits);
    if (!rc && as_json && !(json = mnemo_hits_json(hits)))
        rc = MNEMO_NOMEM;
    Py_END_ALLOW_THREADS
    if (rc)
        raise_status(h, rc);
    else
        out = as_json ? take_text(json) : hits_value(hits);
    mnemo_hits_free(hits);
    handle_leave(h);
done:
    PyMem_Free(names);
    Py_XDECREF(cats);
    return out;
}

/* ---- reading files ------------------------------------------------------ */

static PyObject *Handle_get(Handle *h, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "from_line", "lines", NULL};
    const char *path = NULL;
    int from = 0, lines = 0, rc;
    PyObject *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|ii", kwlist, text_conv, &path, &from, &lines))
        return NULL;
    if (handle_enter(h))
        return NULL;
    mnemo_excerpt e;
    memset(&e, 0, sizeof e);
    Py_BEGIN_ALLOW_THREADS rc = mnemo_get(h->m, path, from, lines, &e);
    Py_END_ALLOW_THREADS
    if (rc)
        raise_status(h, rc);
    else
        out = Py_BuildValue("{s:N,s:N,s:i,s:i,s:i,s:N,s:i}", "path", text_value(e.path), "text",
                            text_value(e.text), "from_line", e.from, "to_line", e.to,
                            "total_lines", e.total_lines, "truncated",
                            PyBool_FromLong(e.truncated), "next_from", e.next_from);
    mnemo_excerpt_cleanup(&e);
    handle_leave(h);
    return out;
}

/* ---- calls that answer JSON text ---------------------------------------- */

/* The library calls of the form f(m, a, b, &out) answering JSON text,
 * one switch so that each shares the lock, GIL and error handling. */
enum json_call {
    J_STATUS, J_MEM_ADD, J_MEM_UPDATE, J_MEM_RESTORE, J_MEM_GET, J_MEM_CONFIRM, J_MEM_HISTORY,
    J_MEM_LIST, J_MEM_SEARCH, J_MEM_RECALL, J_RECALL_TRIGGERS, J_MEM_DELETE, J_MEM_RECOVER,
    J_FILES, J_MEM_COUNTS
};

static int json_run(mnemo *m, enum json_call call, const char *a, const char *b, int n,
                    char **out)
{
    switch (call) {
    case J_STATUS: return mnemo_status_json(m, n, out);
    case J_MEM_ADD: return mnemo_memory_add(m, a, out);
    case J_MEM_UPDATE: return mnemo_memory_update(m, a, b, out);
    case J_MEM_RESTORE: return mnemo_memory_restore(m, a, out);
    case J_MEM_GET: return mnemo_memory_get(m, a, out);
    case J_MEM_CONFIRM: return mnemo_memory_confirm(m, a, out);
    case J_MEM_HISTORY: return mnemo_memory_history(m, a, out);
    case J_MEM_LIST: return mnemo_memory_list(m, a, out);
    case J_MEM_SEARCH: return mnemo_memory_search(m, a, b, out);
    case J_MEM_RECALL: return mnemo_memory_recall(m, a, out);
    case J_RECALL_TRIGGERS: return mnemo_recall_triggers(m, a, out);
    case J_MEM_DELETE: return mnemo_memory_delete(m, a);
    case J_MEM_RECOVER: return mnemo_memory_recover(m, a, out);
    case J_FILES: return mnemo_files(m, a, out);
    case J_MEM_COUNTS: return mnemo_memory_counts(m, a, out);
    }
    return MNEMO_MISUSE;
}

static PyObject *json_call(Handle *h, enum json_call call, const char *a, const char *b, int n)
{
    char *text = NULL;
    int rc;
    if (handle_enter(h))
        return NULL;
    Py_BEGIN_ALLOW_THREADS rc = json_run(h->m, call, a, b, n, &text);
    Py_END_ALLOW_THREADS
    PyObject *out = rc ? raise_status(h, rc) : take_text(text);
    if (rc)
        mnemo_free(text);
    handle_leave(h);
    return out;
}

static PyObject *Handle_status(Handle *h, PyObject *args)
{
    int deep = 0;
    if (!PyArg_ParseTuple(args, "|i", &deep))
        return NULL;
    return json_call(h, J_STATUS, NULL, NULL, deep);
}

/* One text argument (an id, a JSON record or options, a message). */
#define ONE_ARG_CALL(name, call, none_ok)                                                  \
    static PyObject *name(Handle *h, PyObject *arg)                                        \
    {                                                                                      \
        const char *a = NULL;                                                              \
        if (!text_arg(arg, &a, none_ok))                                                   \
            return NULL;                                                                   \
        return json_call(h, call, a, NULL, 0);                                             \
    }
ONE_ARG_CALL(Handle_memory_add, J_MEM_ADD, 0)
ONE_ARG_CALL(Handle_memory_restore, J_MEM_RESTORE, 0)
ONE_ARG_CALL(Handle_memory_get, J_MEM_GET, 0)
ONE_ARG_CALL(Handle_memory_confirm, J_MEM_CONFIRM, 0)
ONE_ARG_CALL(Handle_memory_history, J_MEM_HISTORY, 0)
ONE_ARG_CALL(Handle_memory_list, J_MEM_LIST, 1)
ONE_ARG_CALL(Handle_memory_recall, J_MEM_RECALL, 1)
ONE_ARG_CALL(Handle_files, J_FILES, 1)
ONE_ARG_CALL(Handle_memory_counts, J_MEM_COUNTS, 1)
ONE_ARG_CALL(Handle_recall_triggers, J_RECALL_TRIGGERS, 0)
ONE_ARG_CALL(Handle_memory_delete, J_MEM_DELETE, 0)
ONE_ARG_CALL(Handle_memory_recover, J_MEM_RECOVER, 0)

static PyObject *Handle_memory_update(Handle *h, PyObject *args)
{
    const char *id, *changes;
    if (!PyArg_ParseTuple(args, "O&O&", text_conv, &id, text_conv, &changes))
        return NULL;
    return json_call(h, J_MEM_UPDATE, id, changes, 0);
}

static PyObject *Handle_memory_search(Handle *h, PyObject *args)
{
    const char *query, *options = NULL;
    if (!PyArg_ParseTuple(args, "O&|O&", text_conv, &query, opt_text_conv, &options))
        return NULL;
    return json_call(h, J_MEM_SEARCH, query, options, 0);
}

static PyObject *Handle_memory_purge(Handle *h, PyObject *arg)
{
    const char *id = NULL;
    size_t purged = 0;
    int rc;
    if (!text_arg(arg, &id, 1) || handle_enter(h))
        return NULL;
    Py_BEGIN_ALLOW_THREADS rc = mnemo_memory_purge(h->m, id, &purged);
    Py_END_ALLOW_THREADS
    PyObject *out = rc ? raise_status(h, rc) : PyLong_FromSize_t(purged);
    handle_leave(h);
    return out;
}

/* ---- about the handle --------------------------------------------------- */

/* info() -> (workspace, db_path, search_mode, warning of the last call) */
static PyObject *Handle_info(Handle *h, PyObject *unused)
{
    (void)unused;
    if (handle_enter(h))
        return NULL;
    const char *mode;
    Py_BEGIN_ALLOW_THREADS mode = mnemo_search_mode(h->m);
    Py_END_ALLOW_THREADS
    PyObject *out = Py_BuildValue("(NNNN)", text_value(mnemo_workspace(h->m)),
                                  text_value(mnemo_db_path(h->m)), text_value(mode),
                                  text_value(mnemo_warning(h->m)));
    handle_leave(h);
    return out;
}

static PyMethodDef Handle_methods[] = {
    {"close", (PyCFunction)Handle_close, METH_NOARGS, "Closes the handle (idempotent)."},
    {"sync", (PyCFunction)(void (*)(void))Handle_sync, METH_VARARGS | METH_KEYWORDS,
     "sync(force=False, progress=None) -> dict: mnemo_sync."},
    {"search", (PyCFunction)(void (*)(void))Handle_search, METH_VARARGS | METH_KEYWORDS,
     "search(query, ...) -> (hits, mode, warning, provider, fallback, reason): "
     "mnemo_search_all_typed."},
    {"get", (PyCFunction)(void (*)(void))Handle_get, METH_VARARGS | METH_KEYWORDS,
     "get(path, from_line=0, lines=0) -> dict: mnemo_get."},
    {"status", (PyCFunction)Handle_status, METH_VARARGS, "status(deep=0) -> JSON text."},
    {"files", (PyCFunction)Handle_files, METH_O, "files(options or None) -> JSON text."},
    {"memory_counts", (PyCFunction)Handle_memory_counts, METH_O,
     "memory_counts(options or None) -> JSON text."},
    {"memory_add", (PyCFunction)Handle_memory_add, METH_O, "mnemo_memory_add"},
    {"memory_update", (PyCFunction)Handle_memory_update, METH_VARARGS, "mnemo_memory_update"},
    {"memory_delete", (PyCFunction)Handle_memory_delete, METH_O, "mnemo_memory_delete"},
    {"memory_restore", (PyCFunction)Handle_memory_restore, METH_O, "mnemo_memory_restore"},
    {"memory_purge", (PyCFunction)Handle_memory_purge, METH_O, "mnemo_memory_purge"},
    {"memory_get", (PyCFunction)Handle_memory_get, METH_O, "mnemo_memory_get"},
    {"memory_confirm", (PyCFunction)Handle_memory_confirm, METH_O, "mnemo_memory_confirm"},
    {"memory_history", (PyCFunction)Handle_memory_history, METH_O, "mnemo_memory_history"},
    {"memory_list", (PyCFunction)Handle_memory_list, METH_O, "mnemo_memory_list"},
    {"memory_search", (PyCFunction)Handle_memory_search, METH_VARARGS, "mnemo_memory_search"},
    {"memory_recall", (PyCFunction)Handle_memory_recall, METH_O, "mnemo_memory_recall"},
    {"memory_recover", (PyCFunction)Handle_memory_recover, METH_O, "mnemo_memory_recover"},
    {"recall_triggers", (PyCFunction)Handle_recall_triggers, METH_O, "mnemo_recall_triggers"},
    {"info", (PyCFunction)Handle_info, METH_NOARGS,
     "info() -> (workspace, db_path, search_mode, warning)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Handle_getset[] = {
    {"closed", (getter)Handle_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mnemo._mnemo.Handle",
    .tp_basicsize = sizeof(Handle),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A libmnemo handle (internal: use mnemo.open).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Handle_init,
    .tp_dealloc = (destructor)Handle_dealloc,
    .tp_methods = Handle_methods,
    .tp_getset = Handle_getset,
};

/* ---- module functions --------------------------------------------------- */

static PyObject *mod_version(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyUnicode_FromString(mnemo_version());
}

/* status_codes() -> [(name, value, text, api), ...] from MNEMO_STATUS_MAP */
static PyObject *mod_status_codes(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyObject *list = PyList_New(0), *t;
#define STATUS_ITEM(name, value, text, api)                                                  \
    t = Py_BuildValue("(siss)", #name, value, text, api);                                    \
    if (!t || PyList_Append(list, t)) {                                                      \
        Py_XDECREF(t);                                                                       \
        Py_DECREF(list);                                                                     \
        return NULL;                                                                         \
    }                                                                                        \
    Py_DECREF(t);
    if (!list)
        return NULL;
    MNEMO_STATUS_MAP(STATUS_ITEM)
#undef STATUS_ITEM
    return list;
}

/* config_keys() -> [(key, env, help), ...] */
static PyObject *mod_config_keys(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyObject *list = PyList_New(0);
    const char *key, *env, *help;
    for (size_t i = 0; list && (key = mnemo_config_key(i, &env, &help)); i++) {
        PyObject *t = Py_BuildValue("(sss)", key, env ? env : "", help ? help : "");
        if (!t || PyList_Append(list, t))
            Py_CLEAR(list);
        Py_XDECREF(t);
    }
    return list;
}

/* _set_errors(classes): classes[code] is the exception for that code,
 * classes[0] the base for codes it does not name. */
static PyObject *mod_set_errors(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "expected a sequence of exception classes");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n && i < NCODES; i++) {
        PyObject *c = PySequence_Fast_GET_ITEM(seq, i);
        if (c == Py_None)
            continue;
        Py_INCREF(c);
        Py_XSETREF(error_class[i], c);
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyObject *mod_strerror(PyObject *self, PyObject *arg)
{
    (void)self;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(mnemo_strerror((int)code));
}

static PyMethodDef mod_methods[] = {
    {"version", mod_version, METH_NOARGS, "The library's version (MNEMO_VERSION)."},
    {"status_codes", mod_status_codes, METH_NOARGS,
     "[(name, value, text, api), ...]: the MNEMO_* status codes."},
    {"config_keys", mod_config_keys, METH_NOARGS, "[(key, env, help), ...]: the settings."},
    {"strerror", mod_strerror, METH_O, "mnemo_strerror(code)."},
    {"_set_errors", mod_set_errors, METH_O, "Registers the exception class of each code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mnemo._mnemo", "libmnemo, the C library under the mnemo package.",
    -1, mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__mnemo(void);
PyMODINIT_FUNC PyInit__mnemo(void)
{
    if (PyType_Ready(&HandleType) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    Py_INCREF(&HandleType);
    if (PyModule_AddObject(mod, "Handle", (PyObject *)&HandleType) < 0) {
        Py_DECREF(&HandleType);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
