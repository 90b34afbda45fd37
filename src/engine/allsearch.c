/*
 * allsearch.c - one search over all of an agent's memory: the notes
 * (the index's chunks) and the stored facts, ranked on one scale
 * (mnemo_search_all in mnemo.h; docs/search.md "Notes and facts
 * together").
 *
 * Each kind is searched with its own leg and thresholds. A note keeps its
 * score (relevance with its recency and importance factors); a fact's is
 * its relevance (the same keyword and vector fusion as notes) times its
 * importance factor, importanceMax^((importance - 0.5) / 0.5), at most 1.
 * The hits are ordered by score; then a fact moves above a hit whose score
 * is within SUPERSEDE_BAND of its own and which is older (a fact's
 * updated_at; a note's date, or its file's modification time), so that a
 * fact which replaces what an older note or fact says ranks above it.
 * No rule moves a note; the list is in score order, so notes the diversity
 * pass chose come out by score (measured slightly better than its order,
 * docs/search.md).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/backend.h"
#include "engine/config.h"
#include "engine/core.h"
#include "engine/memory.h"
#include "engine/results.h"
#include "util/buf.h"
#include "util/time.h"

#define SUPERSEDE_BAND 0.1

typedef struct hit {
    double score, when;
    size_t note; /* the note's index in the notes' results, or */
    json_t *fact;
} hit;

static const char *const fact_keys[][2] = {
    {"user_id", "user_id"},   {"userId", "user_id"},     {"agent_id", "agent_id"},
    {"agentId", "agent_id"},  {"run_id", "run_id"},      {"runId", "run_id"},
    {"scope", "scope"},       {"categories", "categories"}, {"type", "type"},
    {"subject", "subject"},   {"filters", "filters"},
};

static const char *const note_keys[] = {"maxResults", "limit", "minScore", "min_score",
                                        "corpus",     "strict", "explain", "kinds"};

/* KINDS as a string ("note", "fact", "notes", "facts", "all", or a comma
 * list) or an array of them, into *NOTES and *FACTS. */
static int parse_kinds(mnemo *m, json_t *k, int *notes, int *facts)
{
    *notes = *facts = 0;
    size_t n = json_is_array(k) ? json_array_size(k) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(k) ? json_array_get(k, i) : k;
        const char *s = json_string_value(e);
        if (!s)
            return core_error(m, MNEMO_INVALID, "kinds must be \"note\", \"fact\" or both");
        while (*s) {
            size_t l = strcspn(s, ",");
            if ((l == 4 && !strncmp(s, "note", 4)) || (l == 5 && !strncmp(s, "notes", 5)))
                *notes = 1;
            else if ((l == 4 && !strncmp(s, "fact", 4)) || (l == 5 && !strncmp(s, "facts", 5)))
                *facts = 1;
            else if (l == 3 && !strncmp(s, "all", 3))
                *notes = *facts = 1;
            else
                return core_error(m, MNEMO_INVALID,
                                  "kinds: '%.*s' is not note, fact or all", (int)l, s);
            s += l + (s[l] == ',');
        }
    }
    if (!*notes && !*facts)
        return core_error(m, MNEMO_INVALID, "kinds must name note, fact or both");
    return MNEMO_OK;
}

/* When the note R was last true: its date's end, else its file's
 * modification time. */
static double note_time(mnemo *m, const mnemo_result *r)
{
    double t = 0;
    char iso[32];
    if (r->date && strlen(r->date) == 10) {
        snprintf(iso, sizeof iso, "%sT23:59:59Z", r->date);
        if (time_parse_iso(iso, &t) == 0)
            return t;
    }
    buf p;
    buf_init(&p, 8192);
    if (r->path[0] == '/')
        buf_puts(&p, r->path);
    else
        buf_printf(&p, "%s/%s", m->workspace, r->path);
    struct stat sb;
    if (p.data && stat(p.data, &sb) == 0)
        t = (double)sb.st_mtim.tv_sec;
    buf_cleanup(&p);
    return t;
}

static void put_str(buf *b, const char *key, const char *s)
{
    buf_printf(b, ",\"%s\":", key);
    buf_json_str(b, s ? s : "", s ? strlen(s) : 0);
}

static void fact_json(buf *b, const json_t *f, double score)
{
    const char *id = json_string_value(json_object_get(f, "id"));
    const char *run = json_string_value(json_object_get(f, "run_id"));
    char cit[128];
    snprintf(cit, sizeof cit, "memory://%s", id ? id : "");
    buf_puts(b, "{\"kind\":\"fact\"");
    put_str(b, "id", id);
    put_str(b, "path", cit);
    buf_printf(b, ",\"startLine\":1,\"endLine\":1,\"score\":%.4f", score);
    put_str(b, "snippet", json_string_value(json_object_get(f, "text")));
    put_str(b, "source", "memory");
    put_str(b, "citation", cit);
    put_str(b, "category", json_string_value(json_object_get(f, "category")));
    buf_printf(b, ",\"importance\":%.4g",
               json_number_value(json_object_get(f, "importance")));
    put_str(b, "type", json_string_value(json_object_get(f, "type")));
    put_str(b, "subject", json_string_value(json_object_get(f, "subject")));
    put_str(b, "scope", run && *run ? "session" : "long-term");
    put_str(b, "user_id", json_string_value(json_object_get(f, "user_id")));
    if (json_string_length(json_object_get(f, "agent_id")))
        put_str(b, "agent_id", json_string_value(json_object_get(f, "agent_id")));
    if (run && *run)
        put_str(b, "run_id", run);
    put_str(b, "created_at", json_string_value(json_object_get(f, "created_at")));
    put_str(b, "updated_at", json_string_value(json_object_get(f, "updated_at")));
    buf_printf(b, ",\"relevance\":%.4f}", json_number_value(json_object_get(f, "relevance")));
}

static int by_score(const void *a, const void *b)
{
    const hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->fact != NULL) - (y->fact != NULL); /* a note first on a tie */
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
    json_t *fo = json_object();
    json_object_foreach(o, key, v)
    {
        int known = 0;
        for (size_t i = 0; i < sizeof fact_keys / sizeof *fact_keys; i++)
            if (!strcmp(key, fact_keys[i][0])) {
                json_object_set(fo, fact_keys[i][1], v);
                known = 1;
            }
        for (size_t i = 0; i < sizeof note_keys / sizeof *note_keys; i++)
            known |= !strcmp(key, note_keys[i]);
        if (!known) {
            json_decref(o);
            json_decref(fo);
            return core_error(m, MNEMO_INVALID, "search: unknown option '%s'", key);
        }
    }
    int notes = 1, facts = 1, rc = MNEMO_OK;
    json_t *k = json_object_get(o, "kinds");
    if (k && (rc = parse_kinds(m, k, &notes, &facts))) {
        json_decref(o);
        json_decref(fo);
        return rc;
    }
    json_t *lim = json_object_get(o, "limit");
    if (!lim)
        lim = json_object_get(o, "maxResults");
    json_t *ms = json_object_get(o, "minScore");
    if (!ms)
        ms = json_object_get(o, "min_score");
    mnemo_search_opts so = {0, -1, -1, 0, NULL}; /* the configuration's */
    if (json_is_integer(lim))
        so.max_results = (int)json_integer_value(lim);
    if (so.max_results <= 0)
        so.max_results = (int)cfg_num(m->cfg, CFG_MAX_RESULTS);
    if (json_is_number(ms))
        so.min_score = json_number_value(ms);
    if (json_is_boolean(json_object_get(o, "strict")))
        so.strict = json_is_true(json_object_get(o, "strict"));
    so.explain = json_is_true(json_object_get(o, "explain"));
    so.corpus = json_string_value(json_object_get(o, "corpus"));
    mnemo_results *res = NULL;
    json_t *fr = NULL;
    char warning[600] = "";
    if (notes)
        BACKEND_CALL(m, BACKEND_READ, rc, m->be->search(m, text, &so, &res));
    if (!rc && facts) {
        json_object_set_new(fo, "limit", json_integer(so.max_results));
        if (json_is_number(ms))
            json_object_set(fo, "min_score", ms);
        char *fopts = json_dumps(fo, JSON_COMPACT), *ftext = NULL;
        rc = MNEMO_NOMEM;
        if (fopts)
            BACKEND_CALL(m, BACKEND_READ, rc, mem_search(m, text, fopts, m->be->msearch, &ftext));
        free(fopts);
        if (!rc && !(fr = json_loads(ftext ? ftext : "", 0, NULL)))
            rc = core_error(m, MNEMO_CORRUPT, "memory search: unreadable answer");
        free(ftext);
        /* Facts left out because they cannot be read are said (mnemo_warning too). */
        const char *fw = json_string_value(json_array_get(json_object_get(fr, "warnings"), 0));
        if (!rc && fw)
            snprintf(warning, sizeof warning, "%s", fw);
        if (rc && notes && rc != MNEMO_INVALID && rc != MNEMO_NOMEM) {
            /* The notes still answer: the facts' failure is said, not fatal. */
            snprintf(warning, sizeof warning, "stored facts were not searched: %s",
                     *core_errmsg(m) ? core_errmsg(m) : "the memory store failed");
            core_clear(m);
            rc = MNEMO_OK;
        }
    }
    json_decref(fo);
    if (rc) {
        results_free(res);
        json_decref(fr);
        json_decref(o);
        return rc;
    }
    /* One list on one scale. */
    json_t *fv = json_object_get(fr, "results");
    size_t nn = res ? res->n : 0, nf = json_array_size(fv), n = 0;
    hit *h = calloc(nn + nf + 1, sizeof *h);
    if (!h) {
        results_free(res);
        json_decref(fr);
        json_decref(o);
        return MNEMO_NOMEM;
    }
    for (size_t i = 0; i < nn; i++) {
        h[n].note = i;
        h[n].score = res->v[i].score;
        h[n++].when = note_time(m, &res->v[i]);
    }
    double imax = cfg_num(m->cfg, CFG_IMPORTANCE_MAX);
    for (size_t i = 0; i < nf; i++) {
        json_t *f = json_array_get(fv, i);
        double rel = json_number_value(json_object_get(f, "relevance"));
        double imp = json_number_value(json_object_get(f, "importance"));
        double s = rel * pow(imax > 0 ? imax : 1, (imp - 0.5) / 0.5);
        if (s > 1)
            s = 1;
        if (json_is_number(ms) && s < json_number_value(ms))
            continue;
        h[n].fact = f;
        h[n].score = s;
        time_parse_iso(json_string_value(json_object_get(f, "updated_at")), &h[n].when);
        n++;
    }
    qsort(h, n, sizeof *h, by_score);
    /* A fact newer than the hit before it, of about one score, goes first
     * (no note is moved by this). */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && h[j].fact && h[j - 1].score - h[j].score <= SUPERSEDE_BAND &&
                           h[j].when > h[j - 1].when;
             j--) {
            hit t = h[j - 1];
            h[j - 1] = h[j];
            h[j] = t;
        }
    if (n > (size_t)so.max_results)
        n = (size_t)so.max_results;
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"results\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        if (!h[i].fact)
            results_write_item(&b, res, h[i].note, 1);
        else
            fact_json(&b, h[i].fact, h[i].score);
    }
    buf_puts(&b, "]");
    if (res) {
        results_write_tail(&b, res);
    } else {
        const char *mode = json_string_value(json_object_get(fr, "mode"));
        put_str(&b, "mode", mode ? mode : "keyword");
    }
    buf_printf(&b, ",\"kinds\":[%s%s%s]", notes ? "\"note\"" : "", notes && facts ? "," : "",
               facts ? "\"fact\"" : "");
    if (*warning)
        put_str(&b, "warning", warning);
    buf_putc(&b, '}');
    free(h);
    results_free(res);
    json_decref(fr);
    json_decref(o);
    if (buf_err(&b)) {
        buf_cleanup(&b);
        return MNEMO_NOMEM;
    }
    *out = buf_detach(&b);
    return MNEMO_OK;
}
