/*
 * mrec.c - structured memories as the public API's types: a record of the
 * engine (mem_row_json's JSON object) as a mnemo_memory and a typed
 * record as the fields of an add; the sets of list and search
 * (mnemo_memories) and their accessors.
 */
#include "engine/mrec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/time.h"
#include "util/utf8.h"

static void rec_init(mnemo_memory *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->importance = -1;
    rec->score = rec->relevance = -1;
}

void mnemo_memory_init(mnemo_memory *rec) { rec_init(rec); }

static const char *dup_str(json_t *rec, const char *key, int *err)
{
    const char *s = json_string_value(json_object_get(rec, key));
    char *d = strdup(s ? s : "");
    if (!d)
        *err = 1;
    return d;
}

static int64_t time_of(json_t *rec, const char *key)
{
    double t;
    const char *s = json_string_value(json_object_get(rec, key));
    return s && time_parse_iso(s, &t) == 0 ? (int64_t)t : 0;
}

static double num_or(json_t *rec, const char *key, double none)
{
    json_t *v = json_object_get(rec, key);
    return json_is_number(v) ? json_number_value(v) : none;
}

int mrec_from_json(json_t *rec, mnemo_memory *out)
{
    int err = 0;
    rec_init(out);
    out->id = dup_str(rec, "id", &err);
    out->text = dup_str(rec, "text", &err);
    out->category = dup_str(rec, "category", &err);
    out->type = dup_str(rec, "type", &err);
    out->subject = dup_str(rec, "subject", &err);
    out->user_id = dup_str(rec, "user_id", &err);
    out->agent_id = dup_str(rec, "agent_id", &err);
    out->run_id = dup_str(rec, "run_id", &err);
    /* As the JSON functions print it: the same text inside their output. */
    json_t *md = json_object_get(rec, "metadata");
    out->metadata = md ? json_dumps(md, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                            JSON_REAL_PRECISION(15))
                       : strdup("{}");
    if (!out->metadata)
        err = 1;
    json_t *tr = json_object_get(rec, "triggers");
    size_t n = json_array_size(tr);
    if (n) {
        const char **t = calloc(n, sizeof *t);
        if (t) {
            out->triggers = t;
            for (size_t i = 0; i < n; i++) {
                const char *s = json_string_value(json_array_get(tr, i));
                if (!(t[out->ntriggers++] = strdup(s ? s : "")))
                    err = 1;
            }
        } else {
            err = 1;
        }
    }
    out->importance = num_or(rec, "importance", 0);
    out->created_at = time_of(rec, "created_at");
    out->updated_at = time_of(rec, "updated_at");
    out->expires_at = time_of(rec, "expires_at");
    out->last_confirmed_at = time_of(rec, "last_confirmed_at");
    out->deleted_at = time_of(rec, "deleted_at");
    out->confirmations = (long long)json_integer_value(json_object_get(rec, "confirmations"));
    out->score = num_or(rec, "score", -1);
    out->relevance = num_or(rec, "relevance", -1);
    out->duplicate = json_is_true(json_object_get(rec, "duplicate"));
    if (err) {
        mrec_cleanup(out);
        return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

void mrec_cleanup(mnemo_memory *r)
{
    if (!r)
        return;
    free((void *)r->id);
    free((void *)r->text);
    free((void *)r->category);
    free((void *)r->type);
    free((void *)r->subject);
    free((void *)r->user_id);
    free((void *)r->agent_id);
    free((void *)r->run_id);
    free((void *)r->metadata);
    for (size_t i = 0; i < r->ntriggers; i++)
        free((void *)r->triggers[i]);
    free((void *)r->triggers);
    memset(r, 0, sizeof *r);
}

void mnemo_memory_free(mnemo_memory *rec)
{
    mrec_cleanup(rec);
    free(rec);
}

/* Sets KEY of O to the string S (NULL: left unset). */
static int put_str(mnemo *m, json_t *o, const char *key, const char *s)
{
    if (!s)
        return MNEMO_OK;
    if (!utf8_valid(s, strlen(s)))
        return strcmp(key, "text") == 0
                   ? core_error(m, MNEMO_INVALID, "memory text is not valid UTF-8")
                   : core_error(m, MNEMO_INVALID, "memory field %s is not valid UTF-8", key);
    return json_object_set_new(o, key, json_string(s)) ? MNEMO_NOMEM : MNEMO_OK;
}

int mrec_to_json(mnemo *m, const mnemo_memory *r, json_t **out)
{
    *out = NULL;
    if (!r)
        return core_error(m, MNEMO_INVALID, "add: no memory given");
    if (!r->text)
        return core_error(m, MNEMO_INVALID, "a memory needs text");
    json_t *o = json_object();
    if (!o)
        return MNEMO_NOMEM;
    int rc;
    if ((rc = put_str(m, o, "text", r->text)) || (rc = put_str(m, o, "category", r->category)) ||
        (rc = put_str(m, o, "type", r->type)) || (rc = put_str(m, o, "subject", r->subject)) ||
        (rc = put_str(m, o, "user_id", r->user_id)) ||
        (rc = put_str(m, o, "agent_id", r->agent_id)) ||
        (rc = put_str(m, o, "run_id", r->run_id)))
        goto done;
    if (!(r->importance < 0)) { /* NAN is no number either */
        if (!(r->importance <= 1)) {
            rc = core_error(m, MNEMO_INVALID, "importance must be a number from 0 to 1");
            goto done;
        }
        if (json_object_set_new(o, "importance", json_real(r->importance))) {
            rc = MNEMO_NOMEM;
            goto done;
        }
    }
    if (r->metadata) {
        json_error_t je;
        json_t *md = json_loads(r->metadata, 0, &je);
        if (!md) {
            rc = core_error(m, MNEMO_INVALID, "metadata: invalid JSON: %s", je.text);
            goto done;
        }
        json_object_set_new(o, "metadata", md); /* mem_fields_parse checks it */
    }
    if (r->ntriggers) {
        json_t *t = json_array();
        json_object_set_new(o, "triggers", t);
        for (size_t i = 0; i < r->ntriggers; i++) {
            const char *s = r->triggers ? r->triggers[i] : NULL;
            if (!s || !utf8_valid(s, strlen(s))) {
                rc = core_error(m, MNEMO_INVALID, "triggers must be strings in UTF-8");
                goto done;
            }
            json_array_append_new(t, json_string(s));
        }
        if (json_array_size(t) != r->ntriggers) {
            rc = MNEMO_NOMEM;
            goto done;
        }
    }
    if (r->expires_at && json_object_set_new(o, "expires_at", json_integer(r->expires_at))) {
        rc = MNEMO_NOMEM;
        goto done;
    }
done:
    if (rc)
        json_decref(o);
    else
        *out = o;
    return rc;
}

int mrec_set(mnemo *m, json_t *list, long long total, const char *mode, const mem_skips *sk,
             mnemo_memories **out)
{
    *out = NULL;
    mnemo_memories *s = calloc(1, sizeof *s);
    size_t n = json_array_size(list), nleft = json_array_size(sk->left);
    if (!s)
        return MNEMO_NOMEM;
    s->total = total;
    s->mode = mode;
    int rc = MNEMO_OK;
    if ((n && !(s->v = calloc(n, sizeof *s->v))) ||
        (nleft && (!(s->left = calloc(nleft, sizeof *s->left)) ||
                   !(s->why = calloc(nleft, sizeof *s->why)))))
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        if (!(rc = mrec_from_json(json_array_get(list, i), &s->v[i])))
            s->n++;
    for (size_t i = 0; !rc && i < nleft; i++) {
        json_t *e = json_array_get(sk->left, i);
        const char *id = json_string_value(json_object_get(e, "id"));
        const char *why = json_string_value(json_object_get(e, "why"));
        s->left[i] = strdup(id ? id : "");
        s->why[i] = strdup(why ? why : "");
        s->nleft++;
        if (!s->left[i] || !s->why[i])
            rc = MNEMO_NOMEM;
    }
    /* The warning on M too, as the JSON functions give it. */
    if (!rc && nleft)
        rc = mem_skips_report(m, sk, NULL);
    if (!rc && nleft && !(s->warning = strdup(m->warn.data)))
        rc = MNEMO_NOMEM;
    if (rc) {
        mrec_set_free(s);
        return rc;
    }
    *out = s;
    return MNEMO_OK;
}

size_t mnemo_memories_count(const mnemo_memories *s) { return s ? s->n : 0; }

const mnemo_memory *mnemo_memories_get(const mnemo_memories *s, size_t i)
{
    return s && i < s->n ? &s->v[i] : NULL;
}

long long mnemo_memories_total(const mnemo_memories *s) { return s ? s->total : 0; }

int mnemo_memories_total_capped(const mnemo_memories *s) { return s ? s->capped : 0; }

const char *mnemo_memories_mode(const mnemo_memories *s) { return s ? s->mode : NULL; }

const char *mnemo_memories_unreadable(const mnemo_memories *s, size_t i, const char **why)
{
    if (!s || i >= s->nleft)
        return NULL;
    if (why)
        *why = s->why[i];
    return s->left[i];
}

const char *mnemo_memories_warning(const mnemo_memories *s) { return s ? s->warning : NULL; }

void mnemo_memories_free(mnemo_memories *s) { mrec_set_free(s); }

void mrec_set_free(mnemo_memories *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        mrec_cleanup(&s->v[i]);
    for (size_t i = 0; i < s->nleft; i++) {
        free(s->left[i]);
        free(s->why[i]);
    }
    free(s->v);
    free(s->left);
    free(s->why);
    free(s->warning);
    free(s);
}

/* *OUT = a new record of REC (released). */
static int one(json_t *rec, mnemo_memory **out)
{
    mnemo_memory *r = malloc(sizeof *r);
    int rc = r ? mrec_from_json(rec, r) : MNEMO_NOMEM;
    json_decref(rec);
    if (rc) {
        free(r);
        return rc;
    }
    *out = r;
    return MNEMO_OK;
}

int mem_add_typed(mnemo *m, const mnemo_memory *rec, const mem_store *st, mnemo_memory **out)
{
    *out = NULL;
    core_clear(m);
    json_t *o, *j = NULL;
    int rc = mrec_to_json(m, rec, &o);
    if (!rc)
        rc = mem_add_obj(m, o, st, &j);
    json_decref(o);
    return rc ? rc : one(j, out);
}

int mem_get_typed(mnemo *m, const char *id, const mem_store *st, mnemo_memory **out)
{
    *out = NULL;
    core_clear(m);
    json_t *j;
    int rc = mem_get_rec(m, id, st, &j);
    return rc ? rc : one(j, out);
}

int mem_list_typed(mnemo *m, const mnemo_memory_opts *opts, const mem_store *st,
                   mnemo_memories **out)
{
    *out = NULL;
    core_clear(m);
    mem_opts o;
    mem_skips sk = {0};
    json_t *list = NULL;
    long long total = 0;
    int capped = 0;
    int rc = mem_opts_from(m, opts, 0, &o);
    if (!rc)
        rc = mem_list_run(m, &o, st, &list, &total, &capped, &sk);
    if (!rc)
        rc = mrec_set(m, list, total, NULL, &sk, out);
    if (!rc)
        (*out)->capped = capped;
    json_decref(list);
    mem_skips_cleanup(&sk);
    mem_opts_cleanup(&o);
    return rc;
}

int mem_search_typed(mnemo *m, const char *text, const mnemo_memory_opts *opts,
                     const mem_searcher *be, mnemo_memories **out)
{
    *out = NULL;
    core_clear(m);
    if (!text)
        return core_error(m, MNEMO_INVALID, "empty query");
    mem_opts o;
    mem_skips sk = {0};
    json_t *res = NULL;
    const char *mode = "keyword";
    int rc = mem_opts_from(m, opts, 1, &o);
    if (!rc)
        rc = mem_search_run(m, text, &o, be, &res, &mode, &sk);
    if (!rc)
        rc = mrec_set(m, res, (long long)json_array_size(res), mode, &sk, out);
    json_decref(res);
    mem_skips_cleanup(&sk);
    mem_opts_cleanup(&o);
    return rc;
}
