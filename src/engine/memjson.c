/*
 * memjson.c - the memory API's JSON edge. The JSON functions of mnemo.h
 * for memories (add, get, list, search) and mnemo_search_all decode their
 * text once into the typed options and records, run the same operations
 * as the typed functions and encode the answer; nothing inside the library
 * passes JSON text to another part of it. The counts per week
 * (mnemo_memory_counts) are here too: the store hands its counts back
 * typed (mem_store.count_spans), and this file orders them and writes the
 * JSON.
 */
#include "engine/memjson.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/allsearch.h"
#include "engine/backend.h"
#include "engine/config.h"
#include "util/time.h"

/* ----------------------------------------------------------------------
 * Memory options
 * -------------------------------------------------------------------- */

/* JSON options decoded: T points into ROOT, CATS and FILTERS. */
typedef struct jopts {
    mnemo_memory_opts t;
    json_t *root;
    const char **cats;
    char *filters;
} jopts;

static void jopts_cleanup(jopts *j)
{
    json_decref(j->root);
    free(j->cats);
    free(j->filters);
    memset(j, 0, sizeof *j);
}

static const char *opt_str(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (!v && b)
        v = json_object_get(o, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The keys of the object R into J->t (the values of the wrong kind are
 * refused with the messages mem_opts_from gives for wrong values). */
static int jopts_from(mnemo *m, json_t *r, jopts *j)
{
    mnemo_memory_opts *t = &j->t;
    t->user_id = opt_str(r, "user_id", "user");
    t->agent_id = opt_str(r, "agent_id", "agent");
    t->run_id = opt_str(r, "run_id", "run");
    t->scope = opt_str(r, "scope", NULL);
    t->type = opt_str(r, "type", NULL);
    t->subject = opt_str(r, "subject", NULL);
    json_t *cats = json_object_get(r, "categories");
    if (cats && json_is_string(cats)) {
        json_t *a = mem_names(json_string_value(cats)); /* "a,b" */
        json_object_set_new(r, "categories", a);
        cats = a;
    }
    if (cats && !json_is_null(cats)) {
        size_t i;
        json_t *v;
        if (!json_is_array(cats))
            return core_error(m, MNEMO_INVALID, "categories must be an array of names");
        json_array_foreach(cats, i, v) if (!json_is_string(v)) return core_error(
            m, MNEMO_INVALID, "categories must be an array of names");
        size_t n = json_array_size(cats);
        if (n && !(j->cats = calloc(n, sizeof *j->cats)))
            return MNEMO_NOMEM;
        json_array_foreach(cats, i, v) j->cats[i] = json_string_value(v);
        t->categories = j->cats;
        t->ncategories = n;
    }
    json_t *lim = json_object_get(r, "limit");
    if (lim && !json_is_null(lim)) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 1)
            return core_error(m, MNEMO_INVALID, "limit must be a positive whole number");
        t->limit = (int)(json_integer_value(lim) > 100000 ? 100000 : json_integer_value(lim));
    }
    json_t *off = json_object_get(r, "offset");
    if (off && !json_is_null(off)) {
        if (!json_is_integer(off) || json_integer_value(off) < 0)
            return core_error(m, MNEMO_INVALID, "offset must be a whole number");
        t->offset = (int)(json_integer_value(off) > INT_MAX ? INT_MAX : json_integer_value(off));
    }
    t->deleted = json_is_true(json_object_get(r, "deleted"));
    t->no_count = json_is_false(json_object_get(r, "count"));
    json_t *ms = json_object_get(r, "min_score");
    if (ms && !json_is_null(ms)) {
        if (!json_is_number(ms))
            return core_error(m, MNEMO_INVALID, "min_score must be a number from 0 to 1");
        /* Negative is "the configuration's" when typed: refused here, as NAN. */
        t->min_score = json_number_value(ms) < 0 ? NAN : json_number_value(ms);
    }
    json_t *fl = json_object_get(r, "filters");
    if (json_is_string(fl))
        j->filters = strdup(json_string_value(fl));
    else if (fl && !json_is_null(fl))
        j->filters = json_dumps(fl, JSON_COMPACT);
    t->filters = j->filters;
    return MNEMO_OK;
}

static int jopts_decode(mnemo *m, const char *options, jopts *j)
{
    memset(j, 0, sizeof *j);
    mem_opts_defaults(&j->t);
    json_error_t je;
    j->root = options && *options ? json_loads(options, 0, &je) : json_object();
    if (!j->root)
        return core_error(m, MNEMO_INVALID, "options: invalid JSON: %s", je.text);
    if (!json_is_object(j->root))
        return core_error(m, MNEMO_INVALID, "options must be a JSON object");
    return jopts_from(m, j->root, j);
}

int mem_opts_parse(mnemo *m, const char *options, int search, mem_opts *o)
{
    jopts j;
    int rc = jopts_decode(m, options, &j);
    if (!rc) {
        rc = mem_opts_from(m, &j.t, search, o);
        /* O borrows the strings of the options: they live as long as O. */
        if (o->root && json_object_set(o->root, "options", j.root) && !rc)
            rc = MNEMO_NOMEM;
    } else {
        memset(o, 0, sizeof *o);
        mfilter_init(&o->filter);
    }
    jopts_cleanup(&j);
    return rc;
}

/* ----------------------------------------------------------------------
 * Memories
 * -------------------------------------------------------------------- */

int mem_add(mnemo *m, const char *record, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    json_error_t je;
    json_t *o = json_loads(record ? record : "", 0, &je), *rec = NULL;
    if (!o)
        return core_error(m, MNEMO_INVALID, "memory: invalid JSON: %s", je.text);
    int rc = mem_add_obj(m, o, st, &rec);
    json_decref(o);
    return rc ? rc : mem_dump(rec, out);
}

int mem_get(mnemo *m, const char *id, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *rec = NULL;
    int rc = mem_get_rec(m, id, st, &rec);
    return rc ? rc : mem_dump(rec, out);
}

int mem_list(mnemo *m, const char *options, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    mem_opts o;
    mem_skips sk = {0};
    json_t *list = NULL;
    long long total = 0;
    int capped = 0;
    int rc = mem_opts_parse(m, options, 0, &o);
    if (!rc)
        rc = mem_list_run(m, &o, st, &list, &total, &capped, &sk);
    if (!rc) {
        json_t *j = json_object();
        json_object_set_new(j, "memories", list);
        json_object_set_new(j, "total", json_integer(total));
        if (capped) /* only then: replies are otherwise as before */
            json_object_set_new(j, "totalCapped", json_true());
        list = NULL;
        if ((rc = mem_skips_report(m, &sk, j)))
            json_decref(j);
        else
            rc = mem_dump(j, out);
    }
    json_decref(list);
    mem_skips_cleanup(&sk);
    mem_opts_cleanup(&o);
    return rc;
}

/* ----------------------------------------------------------------------
 * Memories per week (mnemo_memory_counts)
 * -------------------------------------------------------------------- */

#define DAY 86400LL
#define WEEK (7 * DAY)
#define MONDAY (4 * DAY) /* 1970-01-05, the first Monday of Unix time */

/* What the store counted: a span's memories of one category. */
typedef struct span {
    long long start, n;
    char *category;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
} spans;

static int span_add(mnemo *m, void *ud, long long start, const char *category, long long n)
{
    spans *s = ud;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        span *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return core_error(m, MNEMO_NOMEM, "out of memory");
        s->v = v;
        s->cap = cap;
    }
    char *c = strdup(category ? category : "");
    if (!c)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    s->v[s->n++] = (span){start, n, c};
    return MNEMO_OK;
}

static void spans_cleanup(spans *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].category);
    free(s->v);
}

/* Oldest first, then by category as bytes: the same order on every store,
 * whatever its collation. */
static int by_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return strcmp(x->category, y->category);
}

/* {"buckets":[{"start","total","byCategory"}],"total"} from S, sorted. */
static json_t *spans_json(const spans *s)
{
    json_t *list = json_array(), *o = json_object(), *b = NULL, *cats = NULL;
    long long total = 0, btotal = 0;
    int ok = list && o;
    for (size_t i = 0; ok && i < s->n; i++) {
        const span *p = &s->v[i];
        if (!b || p->start != s->v[i - 1].start) {
            if (b)
                ok = !json_object_set_new(b, "total", json_integer(btotal));
            char iso[32];
            time_format_iso((double)p->start, iso);
            b = json_object();
            cats = json_object();
            btotal = 0;
            ok = ok && b && cats && !json_object_set_new(b, "start", json_string(iso)) &&
                 !json_object_set_new(b, "total", json_integer(0)) &&
                 !json_object_set_new(b, "byCategory", cats) && !json_array_append_new(list, b);
        }
        /* A category stored both as NULL and as "" (another tool): one key. */
        json_t *had = ok ? json_object_get(cats, p->category) : NULL;
        long long n = p->n + (had ? (long long)json_integer_value(had) : 0);
        ok = ok && !json_object_set_new(cats, p->category, json_integer(n));
        btotal += p->n;
        total += p->n;
    }
    if (ok && b)
        ok = !json_object_set_new(b, "total", json_integer(btotal));
    ok = ok && !json_object_set_new(o, "buckets", list);
    list = NULL;
    ok = ok && !json_object_set_new(o, "total", json_integer(total));
    json_decref(list);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The span options of OPTIONS (an object, mem_opts_parse checked): the
 * span's WIDTH and ORIGIN, and *FROM the start of the "weeks" asked for
 * before NOW (NAN: all of them). */
static int span_opts(mnemo *m, const char *options, double now, long long *width,
                     long long *origin, double *from)
{
    *width = WEEK;
    *origin = MONDAY;
    *from = NAN;
    json_t *r = options && *options ? json_loads(options, 0, NULL) : NULL;
    json_t *bucket = json_object_get(r, "bucket"), *weeks = json_object_get(r, "weeks");
    int rc = MNEMO_OK;
    const char *b = json_string_value(bucket);
    if (bucket && !json_is_null(bucket) && (!b || (strcmp(b, "week") && strcmp(b, "day"))))
        rc = core_error(m, MNEMO_INVALID, "bucket must be \"week\" or \"day\"");
    else if (b && strcmp(b, "day") == 0)
        *width = DAY, *origin = 0;
    if (!rc && weeks && !json_is_null(weeks)) {
        if (!json_is_integer(weeks) || json_integer_value(weeks) < 1)
            rc = core_error(m, MNEMO_INVALID, "weeks must be a positive whole number");
        else /* this week's Monday, then N - 1 weeks before it */
            *from = MONDAY + floor((now - MONDAY) / WEEK) * WEEK -
                    (double)(json_integer_value(weeks) - 1) * WEEK;
    }
    json_decref(r);
    return rc;
}

int mem_counts(mnemo *m, const char *options, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    mem_opts o;
    spans s = {0};
    long long width, origin;
    double now = mem_now(), from;
    int rc = mem_opts_parse(m, options, 0, &o);
    if (!rc)
        rc = span_opts(m, options, now, &width, &origin, &from);
    if (!rc && st->open)
        rc = st->open(m);
    if (!rc)
        rc = st->count_spans(m, &o, now, from, width, origin, span_add, &s);
    if (!rc) {
        if (s.n) /* qsort takes no NULL array, even empty */
            qsort(s.v, s.n, sizeof *s.v, by_span);
        json_t *j = spans_json(&s);
        rc = j ? mem_dump(j, out) : core_error(m, MNEMO_NOMEM, "out of memory");
    }
    spans_cleanup(&s);
    mem_opts_cleanup(&o);
    return rc;
}

int mem_search(mnemo *m, const char *text, const char *options, const mem_searcher *be,
               char **out)
{
    *out = NULL;
    core_clear(m);
    if (!text)
        return core_error(m, MNEMO_INVALID, "empty query");
    mem_opts o;
    mem_skips sk = {0};
    json_t *res = NULL;
    const char *mode = "keyword";
    int rc = mem_opts_parse(m, options, 1, &o);
    if (!rc)
        rc = mem_search_run(m, text, &o, be, &res, &mode, &sk);
    if (!rc) {
        json_t *j = json_object();
        json_object_set_new(j, "total", json_integer((json_int_t)json_array_size(res)));
        json_object_set_new(j, "results", res);
        json_object_set_new(j, "mode", json_string(mode));
        res = NULL;
        if (mem_skips_report(m, &sk, j) == MNEMO_OK)
            *out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
        json_decref(j);
        if (!*out)
            rc = MNEMO_NOMEM;
    }
    json_decref(res);
    mem_skips_cleanup(&sk);
    mem_opts_cleanup(&o);
    return rc;
}

/* ----------------------------------------------------------------------
 * Notes and facts together (mnemo_search_all)
 * -------------------------------------------------------------------- */

static const char *const fact_keys[][2] = {
    {"user_id", "user_id"},   {"userId", "user_id"},     {"agent_id", "agent_id"},
    {"agentId", "agent_id"},  {"run_id", "run_id"},      {"runId", "run_id"},
    {"scope", "scope"},       {"categories", "categories"}, {"type", "type"},
    {"subject", "subject"},   {"filters", "filters"},
};

static const char *const note_keys[] = {"maxResults", "limit", "minScore", "min_score",
                                        "corpus",     "strict", "explain", "kinds"};

/* S, a comma list of "note", "fact", "notes", "facts" or "all", added to
 * *KIND (MNEMO_KIND_*). */
static int kinds_text(mnemo *m, const char *s, int *kind)
{
    while (*s) {
        size_t l = strcspn(s, ",");
        if ((l == 4 && !strncmp(s, "note", 4)) || (l == 5 && !strncmp(s, "notes", 5)))
            *kind |= MNEMO_KIND_NOTE;
        else if ((l == 4 && !strncmp(s, "fact", 4)) || (l == 5 && !strncmp(s, "facts", 5)))
            *kind |= MNEMO_KIND_FACT;
        else if (l == 5 && !strncmp(s, "media", 5))
            *kind |= MNEMO_KIND_MEDIA;
        else if (l == 3 && !strncmp(s, "all", 3))
            *kind |= MNEMO_KIND_NOTE | MNEMO_KIND_FACT | MNEMO_KIND_MEDIA;
        else
            return core_error(m, MNEMO_INVALID, "kinds: '%.*s' is not note, fact, media or all",
                              (int)l, s);
        s += l + (s[l] == ',');
    }
    return MNEMO_OK;
}

/* KINDS as a string or an array of them, into *KIND. */
static int parse_kinds(mnemo *m, json_t *k, int *kind)
{
    *kind = 0;
    size_t n = json_is_array(k) ? json_array_size(k) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(k) ? json_array_get(k, i) : k;
        const char *s = json_string_value(e);
        if (!s)
            return core_error(m, MNEMO_INVALID, "kinds must be \"note\", \"fact\", \"media\" or all");
        int rc = kinds_text(m, s, kind);
        if (rc)
            return rc;
    }
    if (!*kind)
        return core_error(m, MNEMO_INVALID, "kinds must name note, fact, media or all");
    return MNEMO_OK;
}

int mnemo_search_kinds(mnemo *m, const char *text, int *kinds)
{
    *kinds = 0;
    core_clear(m);
    int rc = kinds_text(m, text ? text : "", kinds);
    if (!rc && !*kinds)
        rc = core_error(m, MNEMO_INVALID, "kinds must name note, fact, media or all");
    return rc;
}

/* The facts' options of mnemo_search_all: its keys for facts under
 * memory search's names, decoded when the facts are searched. */
typedef struct jfacts {
    json_t *fo;    /* {"user_id":...,"min_score":...} */
    jopts j;
} jfacts;

static int facts_opts(mnemo *m, void *ud, mnemo_memory_opts *fo)
{
    jfacts *f = ud;
    mem_opts_defaults(&f->j.t);
    int rc = jopts_from(m, f->fo, &f->j);
    *fo = f->j.t;
    return rc;
}

int mnemo_search_all(mnemo *m, const char *text, const char *options, char **out)
{
    *out = NULL;
    core_clear(m);
    buf_reset(&m->warn); /* mnemo_warning: this call's */
    m->warn.err = 0;
    json_error_t je;
    json_t *o = options && *options ? json_loads(options, 0, &je) : json_object();
    if (!json_is_object(o)) {
        json_decref(o);
        return core_error(m, MNEMO_INVALID, "search options: not a JSON object");
    }
    /* Every key known, camelCase or snake_case. */
    const char *key;
    json_t *v;
    jfacts jf;
    memset(&jf, 0, sizeof jf);
    int rc = (jf.fo = json_object()) ? MNEMO_OK : MNEMO_NOMEM;
    json_object_foreach(o, key, v)
    {
        int known = 0;
        for (size_t i = 0; i < sizeof fact_keys / sizeof *fact_keys; i++)
            if (!strcmp(key, fact_keys[i][0])) {
                json_object_set(jf.fo, fact_keys[i][1], v);
                known = 1;
            }
        for (size_t i = 0; i < sizeof note_keys / sizeof *note_keys; i++)
            known |= !strcmp(key, note_keys[i]);
        if (!rc && !known)
            rc = core_error(m, MNEMO_INVALID, "search: unknown option '%s'", key);
    }
    mnemo_search_all_opts ao;
    allsearch_opts_defaults(&ao);
    json_t *k = json_object_get(o, "kinds");
    if (!rc && k)
        rc = parse_kinds(m, k, &ao.kinds);
    json_t *lim = json_object_get(o, "limit");
    if (!lim)
        lim = json_object_get(o, "maxResults");
    json_t *ms = json_object_get(o, "minScore");
    if (!ms)
        ms = json_object_get(o, "min_score");
    if (json_is_integer(lim))
        ao.notes.max_results = (int)json_integer_value(lim);
    if (json_is_number(ms)) {
        ao.notes.min_score = json_number_value(ms);
        json_object_set(jf.fo, "min_score", ms);
    }
    if (json_is_boolean(json_object_get(o, "strict")))
        ao.notes.strict = json_is_true(json_object_get(o, "strict"));
    ao.notes.explain = json_is_true(json_object_get(o, "explain"));
    ao.notes.corpus = json_string_value(json_object_get(o, "corpus"));
    mnemo_hits *h = NULL;
    if (!rc)
        rc = allsearch_run(m, text, &ao, facts_opts, &jf, &h);
    buf b;
    buf_init(&b, 0);
    if (!rc) {
        allsearch_json(&b, h);
        rc = buf_err(&b) ? MNEMO_NOMEM : MNEMO_OK;
    }
    if (!rc)
        *out = buf_detach(&b);
    buf_cleanup(&b);
    allsearch_free(h);
    jopts_cleanup(&jf.j);
    json_decref(jf.fo);
    json_decref(o);
    return rc;
}
