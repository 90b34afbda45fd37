/*
 * browse.c - the operations a browser of the memory needs beside search and
 * the memory operations (see browse.h): the index's files as a list, and
 * how much was written per week (notes counted here from the files, facts
 * by the store: mnemo_memory_counts).
 *
 * The files are the index's (mnemo_files): every file a search can cite,
 * under the default roots, the extra paths, the transcripts and the media,
 * with the paths results cite and /v1/get reads.
 */
#include "browse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A daily note's date from its name ("2026-11-02.md", "2026-11-02-standup.md"):
 * 1 and *T (midnight UTC) when the name starts with one. */
static int name_date(const char *name, time_t *t)
{
    int y, mo, d;
    char dash;
    if (sscanf(name, "%4d-%2d-%2d%c", &y, &mo, &d, &dash) != 4 || (dash != '.' && dash != '-') ||
        y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    *t = timegm(&tm);
    return 1;
}

static int by_key(const void *a, const void *b, void *key)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, key));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, key));
    return strcmp(x ? x : "", y ? y : "");
}

/* Sorts the objects of ARR by their string KEY. */
static int sort_by(json_t *arr, const char *key)
{
    size_t n = json_array_size(arr);
    json_t **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return MNEMO_NOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort_r(v, n, sizeof *v, by_key, (void *)key);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    free(v);
    return 0;
}

static int fail(mnemo *m, int rc, char **err)
{
    const char *msg = mnemo_errmsg(m);
    *err = api_utf8_clean(msg && *msg ? msg : mnemo_strerror(rc));
    return rc;
}

/* The index's files (mnemo_files' answer, by path) into *OUT, each memory
 * note named by a date with that day as "date" (Unix seconds). */
static int list_files(mnemo *m, json_t **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_files(m, NULL, &s);
    if (rc) {
        mnemo_free(s);
        return fail(m, rc, err);
    }
    json_t *o = json_loads(s, 0, NULL);
    mnemo_free(s);
    json_t *files = json_object_get(o, "files");
    if (!json_is_array(files)) {
        json_decref(o);
        return MNEMO_NOMEM;
    }
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        const char *p = json_string_value(json_object_get(f, "path"));
        const char *kind = json_string_value(json_object_get(f, "kind"));
        const char *name = p ? strrchr(p, '/') : NULL;
        time_t day;
        if (kind && strcmp(kind, "memory") == 0 && name_date(name ? name + 1 : p, &day))
            json_object_set_new(f, "date", json_integer((json_int_t)day));
    }
    *out = o;
    return MNEMO_OK;
}

int browse_files(mnemo *m, json_t *args, char **out, char **err)
{
    (void)args;
    json_t *o = NULL;
    int rc = list_files(m, &o, err);
    if (rc)
        return rc;
    json_object_set_new(o, "workspace", json_string(mnemo_workspace(m)));
    *out = api_dump(o);
    json_decref(o);
    return *out ? 0 : MNEMO_NOMEM;
}

/* ----------------------------------------------------------------------
 * Per week
 * -------------------------------------------------------------------- */

/* The Monday (00:00 UTC) of the week of T, as "YYYY-MM-DD". */
static void week_of(int64_t t, char out[16])
{
    time_t day = (time_t)(t - t % 86400);
    struct tm tm;
    gmtime_r(&day, &tm);
    day -= (time_t)(((tm.tm_wday + 6) % 7) * 86400);
    gmtime_r(&day, &tm);
    strftime(out, 16, "%Y-%m-%d", &tm);
}

/* WEEKS[W] ({"notes":{},"facts":{}} when new). */
static json_t *week_entry(json_t *weeks, const char *w)
{
    json_t *wk = json_object_get(weeks, w);
    if (!wk) {
        wk = json_pack("{s:{},s:{}}", "notes", "facts");
        json_object_set_new(weeks, w, wk);
    }
    return wk;
}

/* WEEKS["YYYY-MM-DD"][KIND][CAT] += 1. */
static void count(json_t *weeks, int64_t t, const char *kind, const char *cat)
{
    char w[16];
    if (t <= 0)
        return;
    week_of(t, w);
    json_t *k = json_object_get(week_entry(weeks, w), kind);
    json_t *c = json_object_get(k, cat);
    json_object_set_new(k, cat, json_integer(c ? json_integer_value(c) + 1 : 1));
}

/* Notes (the memory files and those under extra paths, not transcripts
 * or media) by their date (a daily note's name, else the file's mtime);
 * their "category": daily, root or other. */
static int count_notes(mnemo *m, json_t *weeks, char **err)
{
    json_t *o = NULL;
    int rc = list_files(m, &o, err);
    if (rc)
        return rc;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(o, "files"), i, f) {
        json_t *d = json_object_get(f, "date");
        const char *p = json_string_value(json_object_get(f, "path"));
        const char *kind = json_string_value(json_object_get(f, "kind"));
        if (!p || !kind || (strcmp(kind, "memory") != 0 && strcmp(kind, "extra") != 0))
            continue;
        const char *cat = d ? "daily" : strchr(p, '/') ? "other" : "root";
        count(weeks, d ? json_integer_value(d) : json_integer_value(json_object_get(f, "mtime")),
              "notes", cat);
    }
    json_decref(o);
    return MNEMO_OK;
}

/* Facts by their creation, counted by the store (mnemo_memory_counts):
 * the user's and agent's of ARGS, every scope. */
static int count_facts(mnemo *m, json_t *args, json_t *weeks, long long *n)
{
    json_t *opts = json_pack("{s:s}", "scope", "all");
    static const char *const keys[] = {"user_id", "agent_id"};
    for (size_t i = 0; opts && i < 2; i++) {
        json_t *v = json_object_get(args, keys[i]);
        if (json_is_string(v))
            json_object_set(opts, keys[i], v);
    }
    char *o = opts ? json_dumps(opts, JSON_COMPACT) : NULL, *out = NULL;
    json_decref(opts);
    if (!o)
        return MNEMO_NOMEM;
    int rc = mnemo_memory_counts(m, o, &out);
    free(o);
    if (rc) {
        mnemo_free(out);
        return rc;
    }
    json_t *c = json_loads(out, 0, NULL);
    mnemo_free(out);
    if (!c)
        return MNEMO_NOMEM;
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(c, "buckets"), i, b) {
        char w[16];
        snprintf(w, sizeof w, "%.10s", json_string_value(json_object_get(b, "start")));
        json_t *facts = json_object_get(week_entry(weeks, w), "facts");
        const char *cat;
        json_t *k;
        json_object_foreach(json_object_get(b, "byCategory"), cat, k)
            json_object_set(facts, *cat ? cat : "none", k);
    }
    *n = json_integer_value(json_object_get(c, "total"));
    json_decref(c);
    return MNEMO_OK;
}

int browse_timeline(mnemo *m, json_t *args, char **out, char **err)
{
    json_t *weeks = json_object();
    long long nfacts = 0;
    if (!weeks)
        return MNEMO_NOMEM;
    int rc = count_notes(m, weeks, err);
    if (!rc && (rc = count_facts(m, args, weeks, &nfacts)))
        fail(m, rc, err);
    if (rc) {
        json_decref(weeks);
        return rc;
    }
    /* oldest first; an object's keys are the weeks, sorted as text */
    json_t *list = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(weeks, key, v) {
        json_t *e = json_pack("{s:s,s:O,s:O}", "week", key, "notes", json_object_get(v, "notes"),
                              "facts", json_object_get(v, "facts"));
        json_array_append_new(list, e);
    }
    json_decref(weeks);
    if (!list || sort_by(list, "week")) {
        json_decref(list);
        return MNEMO_NOMEM;
    }
    json_t *o = json_pack("{s:I,s:o}", "facts", (json_int_t)nfacts, "weeks", list);
    *out = o ? api_dump(o) : NULL;
    json_decref(o);
    return *out ? 0 : MNEMO_NOMEM;
}
