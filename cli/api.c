/*
 * api.c - mnemo's operations as JSON in, JSON out (see api.h). Each
 * operation declares its arguments as a JSON Schema; the schema is what
 * tools/list shows and also what the arguments are checked against, so
 * the two never disagree.
 */
#include "api.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "browse.h"
#include "cli.h"

/* ----------------------------------------------------------------------
 * Argument checking against the operation's schema: types, bounds, enums,
 * required keys, and no unknown keys.
 * -------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at S (at most N bytes), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) || /* overlong, surrogate */
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))   /* overlong, > U+10FFFF */
        return 0;
    return len;
}

char *api_utf8_clean(const char *s)
{
    size_t n = strlen(s), o = 0;
    char *out = malloc(n * 3 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_seq((const unsigned char *)s + i, n - i);
        if (l) {
            memcpy(out + o, s + i, l);
            o += l;
            i += l;
        } else { /* U+FFFD for each byte that starts no valid sequence */
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    out[o] = 0;
    return out;
}

/* Formats a message; a cut in the middle of a character is repaired. */
static char *fmt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_err(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return api_utf8_clean(buf);
}

static int type_ok(const char *type, const json_t *v)
{
    if (strcmp(type, "string") == 0)
        return json_is_string(v);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(v);
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(type, "object") == 0)
        return json_is_object(v);
    if (strcmp(type, "array") == 0)
        return json_is_array(v);
    if (strcmp(type, "null") == 0)
        return json_is_null(v);
    return 0;
}

static int check_value(const char *key, const json_t *p, const json_t *v, char **err)
{
    const json_t *t = json_object_get(p, "type");
    int ok = 0;
    if (json_is_string(t)) {
        ok = type_ok(json_string_value(t), v);
    } else if (json_is_array(t)) {
        size_t i;
        const json_t *e;
        json_array_foreach(t, i, e) ok |= type_ok(json_string_value(e), v);
    } else {
        ok = 1;
    }
    if (!ok) {
        char *ts = json_dumps(t, JSON_COMPACT | JSON_ENCODE_ANY);
        *err = fmt_err("argument '%s' must be of type %s", key, ts ? ts : "?");
        free(ts);
        return MNEMO_INVALID;
    }
    if (json_is_number(v)) {
        const json_t *lo = json_object_get(p, "minimum"), *hi = json_object_get(p, "maximum");
        double x = json_number_value(v);
        if (lo && x < json_number_value(lo)) {
            *err = fmt_err("%s must be at least %.15g", key, json_number_value(lo));
            return MNEMO_INVALID;
        }
        if (hi && x > json_number_value(hi)) {
            *err = fmt_err("%s must be at most %.15g", key, json_number_value(hi));
            return MNEMO_INVALID;
        }
    }
    const json_t *en = json_object_get(p, "enum");
    if (en && json_is_string(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(en, i, e) if (json_equal((json_t *)e, (json_t *)v)) return 0;
        char *es = json_dumps(en, JSON_COMPACT);
        *err = fmt_err("argument '%s' must be one of %s", key, es ? es : "?");
        free(es);
        return MNEMO_INVALID;
    }
    const json_t *ml = json_object_get(p, "minLength");
    if (ml && json_is_string(v) && json_string_length(v) < (size_t)json_integer_value(ml)) {
        *err = fmt_err("argument '%s' must not be empty", key);
        return MNEMO_INVALID;
    }
    return 0;
}

static int check_args(const json_t *schema, const json_t *args, char **err)
{
    const json_t *props = json_object_get(schema, "properties");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)args, key, v) {
        const json_t *p = json_object_get(props, key);
        if (!p) {
            char names[512] = "";
            size_t n = 0;
            const char *k;
            const json_t *pv;
            json_object_foreach((json_t *)props, k, pv) {
                int w = snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", k);
                if (w < 0 || (size_t)w >= sizeof names - n)
                    break;
                n += (size_t)w;
            }
            *err = fmt_err("unknown argument '%s' (expected: %s)", key, names);
            return MNEMO_INVALID;
        }
        int rc = check_value(key, p, v, err);
        if (rc)
            return rc;
    }
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(schema, "required"), i, r) {
        if (!json_object_get(args, json_string_value(r))) {
            *err = fmt_err("missing argument '%s'", json_string_value(r));
            return MNEMO_INVALID;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------------
 * Helpers
 * -------------------------------------------------------------------- */

char *api_dump(const json_t *j)
{
    /* Ten significant digits: 0.85 prints as 0.85, not 0.84999999999999998. */
    return json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                             JSON_REAL_PRECISION(10));
}

static int fail(mnemo *m, int rc, char **err)
{
    const char *msg = mnemo_errmsg(m);
    *err = api_utf8_clean(msg && *msg ? msg : mnemo_strerror(rc));
    return rc;
}

static const char *str_arg(const json_t *args, const char *key)
{
    return json_string_value(json_object_get(args, key));
}

/* A library call's JSON text is the reply as it is: the same bytes the
 * CLI prints. */
static int reply_text(mnemo *m, int rc, char *text, char **out, char **err)
{
    if (rc) {
        mnemo_free(text);
        return fail(m, rc, err);
    }
    *out = strdup(text ? text : "null");
    mnemo_free(text);
    return *out ? 0 : MNEMO_NOMEM;
}

static int reply_json(json_t *j, char **out)
{
    *out = j ? api_dump(j) : NULL;
    json_decref(j);
    return *out ? 0 : MNEMO_NOMEM;
}

/* The arguments without KEY, as JSON text for a library call. */
static char *args_without(const json_t *args, const char *key)
{
    json_t *c = json_copy((json_t *)args);
    if (!c)
        return NULL;
    if (key)
        json_object_del(c, key);
    char *s = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return s;
}

/* ----------------------------------------------------------------------
 * Operations
 * -------------------------------------------------------------------- */

static int op_search(mnemo *m, json_t *args, char **out, char **err)
{
    char *o = args_without(args, "query"), *s = NULL;
    const char *q = str_arg(args, "query");
    int rc = o ? mnemo_search_all(m, q, o, &s) : MNEMO_NOMEM;
    if (rc == MNEMO_NOTFOUND) { /* first use: build the index */
        rc = mnemo_sync(m, NULL, NULL);
        if (!rc)
            rc = mnemo_search_all(m, q, o, &s);
    }
    free(o);
    return reply_text(m, rc, s, out, err);
}

/* A JSON string of S, which need not be valid UTF-8 (file text, paths). */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);
    if (!j) {
        char *c = api_utf8_clean(s);
        j = c ? json_string(c) : NULL;
        free(c);
    }
    return j;
}

json_t *api_excerpt_json(const mnemo_excerpt *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", jstr(e->path));
    json_object_set_new(o, "from", json_integer(e->from));
    json_object_set_new(o, "to", json_integer(e->to));
    json_object_set_new(o, "totalLines", json_integer(e->total_lines));
    json_object_set_new(o, "truncated", json_boolean(e->truncated));
    if (e->truncated) {
        char hint[8192], word[4096];
        snprintf(hint, sizeof hint,
                 "lines %d-%d of %d shown; continue with: mnemo get %s --from %d", e->from,
                 e->to, e->total_lines, cli_shell_word(e->path, word, sizeof word),
                 e->next_from);
        json_object_set_new(o, "nextFrom", json_integer(e->next_from));
        json_object_set_new(o, "hint", jstr(hint));
    }
    json_object_set_new(o, "text", jstr(e->text));
    return o;
}

/* A stored fact read as memory_get reads a file: memory://ID. */
static int get_fact(mnemo *m, const char *path, char **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_memory_get(m, path + strlen("memory://"), &s);
    if (rc) {
        mnemo_free(s);
        return fail(m, rc, err);
    }
    json_t *f = json_loads(s, 0, NULL);
    mnemo_free(s);
    const char *text = json_string_value(json_object_get(f, "text"));
    json_t *o = json_object();
    json_object_set_new(o, "path", jstr(path));
    json_object_set_new(o, "from", json_integer(1));
    json_object_set_new(o, "to", json_integer(1));
    json_object_set_new(o, "totalLines", json_integer(1));
    json_object_set_new(o, "truncated", json_false());
    json_object_set_new(o, "text", jstr(text ? text : ""));
    if (f)
        json_object_set(o, "memory", f);
    json_decref(f);
    return reply_json(o, out);
}

static int op_get(mnemo *m, json_t *args, char **out, char **err)
{
    json_t *f = json_object_get(args, "from"), *l = json_object_get(args, "lines");
    const char *path = str_arg(args, "path");
    if (path && !strncmp(path, "memory://", 9))
        return get_fact(m, path, out, err);
    mnemo_excerpt e;
    int rc = mnemo_get(m, path, f ? (int)json_integer_value(f) : 0,
                       l ? (int)json_integer_value(l) : 0, &e);
    if (rc)
        return fail(m, rc, err);
    rc = reply_json(api_excerpt_json(&e), out);
    mnemo_excerpt_cleanup(&e);
    return rc;
}

static int op_recall(mnemo *m, json_t *args, char **out, char **err)
{
    char *opts = args_without(args, "triggers");
    char *recalled = NULL, *trig = NULL;
    int rc = opts ? mnemo_memory_recall(m, opts, &recalled) : MNEMO_NOMEM;
    free(opts);
    const char *msg = str_arg(args, "message");
    if ((!rc || rc == MNEMO_NOTFOUND) && msg && json_is_true(json_object_get(args, "triggers")))
        rc = mnemo_recall_triggers(m, msg, &trig);
    if (rc && rc != MNEMO_NOTFOUND) {
        mnemo_free(recalled);
        mnemo_free(trig);
        return fail(m, rc, err);
    }
    json_t *o = json_object();
    json_object_set_new(o, "recalled", jstr(recalled ? recalled : ""));
    json_object_set_new(o, "triggers", jstr(trig ? trig : ""));
    if (mnemo_warning(m)) /* memories left out because they cannot be read */
        json_object_set_new(o, "warnings", json_pack("[o]", jstr(mnemo_warning(m))));
    mnemo_free(recalled);
    mnemo_free(trig);
    return reply_json(o, out);
}

static int op_memory_add(mnemo *m, json_t *args, char **out, char **err)
{
    char *rec = args_without(args, NULL), *s = NULL;
    int rc = rec ? mnemo_memory_add(m, rec, &s) : MNEMO_NOMEM;
    free(rec);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_update(mnemo *m, json_t *args, char **out, char **err)
{
    char *ch = args_without(args, "id"), *s = NULL;
    int rc = ch ? mnemo_memory_update(m, str_arg(args, "id"), ch, &s) : MNEMO_NOMEM;
    free(ch);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_delete(mnemo *m, json_t *args, char **out, char **err)
{
    const char *id = str_arg(args, "id");
    int rc = mnemo_memory_delete(m, id);
    if (rc)
        return fail(m, rc, err);
    return reply_json(json_pack("{s:o}", "deleted", jstr(id)), out);
}

static int op_memory_get(mnemo *m, json_t *args, char **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_memory_get(m, str_arg(args, "id"), &s);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_search(mnemo *m, json_t *args, char **out, char **err)
{
    char *o = args_without(args, "query"), *s = NULL;
    int rc = o ? mnemo_memory_search(m, str_arg(args, "query"), o, &s) : MNEMO_NOMEM;
    free(o);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_list(mnemo *m, json_t *args, char **out, char **err)
{
    char *o = args_without(args, NULL), *s = NULL;
    int rc = o ? mnemo_memory_list(m, o, &s) : MNEMO_NOMEM;
    free(o);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_counts(mnemo *m, json_t *args, char **out, char **err)
{
    char *o = args_without(args, NULL), *s = NULL;
    int rc = o ? mnemo_memory_counts(m, o, &s) : MNEMO_NOMEM;
    free(o);
    return reply_text(m, rc, s, out, err);
}

static int op_status(mnemo *m, json_t *args, char **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_status_json(m, json_is_true(json_object_get(args, "deep")), &s);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_history(mnemo *m, json_t *args, char **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_memory_history(m, str_arg(args, "id"), &s);
    if (rc) {
        mnemo_free(s);
        return fail(m, rc, err);
    }
    json_t *h = json_loads(s, 0, NULL);
    mnemo_free(s);
    return reply_json(json_pack("{s:o,s:o}", "id", jstr(str_arg(args, "id")), "history",
                                h ? h : json_array()),
                      out);
}

static int op_memory_restore(mnemo *m, json_t *args, char **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_memory_restore(m, str_arg(args, "id"), &s);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_confirm(mnemo *m, json_t *args, char **out, char **err)
{
    char *s = NULL;
    int rc = mnemo_memory_confirm(m, str_arg(args, "id"), &s);
    return reply_text(m, rc, s, out, err);
}

static int op_memory_purge(mnemo *m, json_t *args, char **out, char **err)
{
    size_t n = 0;
    int rc = mnemo_memory_purge(m, str_arg(args, "id"), &n);
    if (rc)
        return fail(m, rc, err);
    return reply_json(json_pack("{s:I}", "purged", (json_int_t)n), out);
}

static int collect(void *ud, const char *data, size_t len)
{
    json_t *arr = ud, *j = json_loadb(data, len, JSON_DISABLE_EOF_CHECK, NULL);
    return j ? json_array_append_new(arr, j) : -1;
}

static int op_memory_export(mnemo *m, json_t *args, char **out, char **err)
{
    (void)args;
    json_t *arr = json_array();
    size_t n = 0;
    int rc = arr ? mnemo_memory_export(m, collect, arr, &n) : MNEMO_NOMEM;
    if (rc) {
        json_decref(arr);
        return fail(m, rc, err);
    }
    json_t *o = json_pack("{s:I,s:o}", "count", (json_int_t)n, "memories", arr);
    if (o && mnemo_warning(m)) /* memories left out because they cannot be read */
        json_object_set_new(o, "warnings", json_pack("[o]", jstr(mnemo_warning(m))));
    return reply_json(o, out);
}

static int op_memory_import(mnemo *m, json_t *args, char **out, char **err)
{
    json_t *mem = json_object_get(args, "memories"), *e;
    const char *jsonl = str_arg(args, "jsonl");
    if (!mem == !jsonl) {
        *err = strdup("give either memories (an array of exported records) or jsonl (their "
                      "lines)");
        return MNEMO_INVALID;
    }
    char *text = NULL;
    size_t len = 0, i;
    if (mem) {
        FILE *f = open_memstream(&text, &len);
        json_array_foreach(mem, i, e)
        {
            char *line = json_dumps(e, JSON_COMPACT);
            if (f && line)
                fprintf(f, "%s\n", line);
            free(line);
        }
        if (!f || fclose(f) != 0) {
            free(text);
            return MNEMO_NOMEM;
        }
    }
    size_t imported = 0, skipped = 0;
    int rc = mnemo_memory_import(m, text ? text : jsonl, text ? len : strlen(jsonl), &imported,
                                 &skipped);
    free(text);
    if (rc)
        return fail(m, rc, err);
    return reply_json(json_pack("{s:I,s:I}", "imported", (json_int_t)imported, "skipped",
                                (json_int_t)skipped),
                      out);
}

/* ----------------------------------------------------------------------
 * The table
 * -------------------------------------------------------------------- */

#define STR(d) "{\"type\":\"string\",\"description\":\"" d "\"}"
#define BOOL(d) "{\"type\":\"boolean\",\"description\":\"" d "\"}"
#define SCOPE_PROPS                                                                           \
    "\"user_id\":" STR("whose memories (default: the configured userId)") ","                 \
    "\"userId\":" STR("the same as user_id") ","                                               \
    "\"agent_id\":" STR("only memories of this agent") ","                                     \
    "\"agentId\":" STR("the same as agent_id") ","                                             \
    "\"run_id\":" STR("a run (session) id: memories of that session") ","                      \
    "\"runId\":" STR("the same as run_id") ","
#define FILTER_PROPS                                                                          \
    SCOPE_PROPS                                                                               \
    "\"scope\":{\"type\":\"string\",\"enum\":[\"all\",\"session\",\"long-term\"],"            \
    "\"description\":\"session: memories of a run; long-term: those of none; all (default)\"}," \
    "\"categories\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"                     \
    "\"description\":\"only memories of these categories (preference, decision, ...)\"},"       \
    "\"type\":{\"type\":\"string\",\"enum\":[\"fact\",\"preference\",\"summary\","            \
    "\"context\",\"raw\",\"all\"],\"description\":\"only memories of this type\"},"            \
    "\"subject\":" STR("only memories about this subject: user or a name") ","                 \
    "\"filters\":{\"type\":[\"object\",\"string\"],\"description\":"                          \
    "\"a filter over memory fields as JSON (or JSON text), e.g. "                            \
    "{\\\"importance\\\":{\\\"gte\\\":0.7}} or {\\\"AND\\\":[{\\\"category\\\":\\\"decision\\\"},"   \
    "{\\\"created_at\\\":{\\\"gte\\\":\\\"2026-01-01\\\"}}]} (docs/memories.md)\"}"
#define LIST_PROPS                                                                            \
    FILTER_PROPS ","                                                                          \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000,"                        \
    "\"description\":\"at most this many memories\"},"                                         \
    "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2147483647,"                   \
    "\"description\":\"skip this many (paging)\"},"                                            \
    "\"deleted\":" BOOL("list the deleted memories only (memory_restore brings one back)")
#define RECORD_PROPS                                                                          \
    SCOPE_PROPS                                                                               \
    "\"category\":" STR("identity, configuration, rule, preference, decision, technical, "    \
                        "relationship, project, operational or another name") ","              \
    "\"importance\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"description\":"         \
    "\"how much it matters, 0..1 (default: the category's, identity 0.95 ... operational 0.6, "  \
    "other 0.5); ranks and recalls important memories first\"}," \
    "\"type\":{\"type\":\"string\",\"enum\":[\"fact\",\"preference\",\"summary\","            \
    "\"context\",\"raw\"],\"description\":\"what kind of memory (default fact)\"},"            \
    "\"subject\":" STR("who it is about: user (default) or a name") ","                        \
    "\"metadata\":{\"type\":\"object\",\"description\":\"any JSON object kept with it\"},"     \
    "\"triggers\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"                       \
    "\"description\":\"phrases that recall this memory when a message contains them\"},"       \
    "\"expires_at\":{\"type\":[\"string\",\"null\"],"                                          \
    "\"description\":\"when it stops being true: ISO 8601 time or YYYY-MM-DD\"}"
#define ID_PROP "\"id\":{\"type\":\"string\",\"minLength\":1,\"description\":\"the memory's id\"}"
#define OBJ(props, req) "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req "],\"additionalProperties\":false}"
#define OUT(props) "{\"type\":\"object\",\"properties\":{" props "}}"
#define MEMORY_OUT                                                                            \
    OUT("\"id\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"},"                         \
        "\"category\":{\"type\":\"string\"},\"importance\":{\"type\":\"number\"},"             \
        "\"created_at\":{\"type\":\"string\"},\"updated_at\":{\"type\":\"string\"}")

static const api_op ops[] = {
    {"search", op_search,
     OBJ("\"query\":{\"type\":\"string\",\"minLength\":1,\"description\":\"3-6 signal words "
         "from the request (names, topics, identifiers, dates), not the whole message\"},"
         "\"kinds\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":\"string\"},"
         "\"description\":\"what to search: note (the Markdown notes), fact (stored "
         "memories), media (images and audio, when multimodal is on), or all (default)\"},"
         "\"maxResults\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,"
         "\"description\":\"at most this many results (default 6)\"},"
         "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,"
         "\"description\":\"the same as maxResults\"},"
         "\"minScore\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,"
         "\"description\":\"drop results scoring below this, 0..1 (default: the configured "
         "minScore)\"},"
         "\"min_score\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,"
         "\"description\":\"the same as minScore\"},"
         "\"corpus\":{\"type\":\"string\",\"enum\":[\"memory\",\"sessions\",\"all\"],"
         "\"description\":\"which notes: memory files (default), session transcripts, or "
         "both\"},"
         "\"strict\":" BOOL("return nothing rather than weak matches") ","
         "\"explain\":" BOOL("add each note's scores and ranking factors") ","
         FILTER_PROPS,
         "\"query\""),
     OUT("\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
         "\"kind\":{\"type\":\"string\",\"enum\":[\"note\",\"fact\"]},"
         "\"path\":{\"type\":\"string\"},\"startLine\":{\"type\":\"integer\"},"
         "\"endLine\":{\"type\":\"integer\"},\"score\":{\"type\":\"number\"},"
         "\"snippet\":{\"type\":\"string\"},\"citation\":{\"type\":\"string\"},"
         "\"id\":{\"type\":\"string\"},\"category\":{\"type\":\"string\"},"
         "\"importance\":{\"type\":\"number\"},\"updated_at\":{\"type\":\"string\"}},"
         "\"required\":[\"kind\",\"path\",\"score\",\"snippet\",\"citation\"]}},"
         "\"mode\":{\"type\":\"string\",\"enum\":[\"keyword\",\"hybrid\",\"vector\"]}"),
     "Search the agent's long-term memory: the Markdown notes (MEMORY.md, USER.md, "
     "memory/*.md, transcripts) and the stored facts together, ranked on one scale (a newer "
     "fact above an older note of about the same relevance). Call it before answering "
     "anything about past work, people, preferences, decisions or dates, with 3-6 signal "
     "words rather than the raw message; cite results by their citation (path#Lstart-Lend or "
     "memory://id) and read more with memory_get.",
     0, "POST /v1/search", 200},

    {"get", op_get,
     OBJ("\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"a result's "
         "citation (path#Lstart-Lend, path#Lline, path:from:count) or path: a memory file "
         "relative to the workspace, or memory://id for a stored fact\"},"
         "\"from\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1073741824,"
         "\"description\":\"first line to read (default: the citation's, else 1)\"},"
         "\"lines\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576,"
         "\"description\":\"how many lines (default: the citation's, else 120)\"}",
         "\"path\""),
     OUT("\"path\":{\"type\":\"string\"},\"from\":{\"type\":\"integer\"},"
         "\"to\":{\"type\":\"integer\"},\"totalLines\":{\"type\":\"integer\"},"
         "\"truncated\":{\"type\":\"boolean\"},\"text\":{\"type\":\"string\"}"),
     "Read lines of a memory file, or a stored fact (memory://id), after memory_search, to see "
     "more than the snippet.",
     0, "POST /v1/get", 200},

    {"recall", op_recall,
     OBJ(SCOPE_PROPS "\"message\":" STR("the inbound message to recall memories for") ","
         "\"strategy\":{\"type\":\"string\",\"enum\":[\"smart\",\"always\",\"manual\"],"
         "\"description\":\"smart (default): only when the message needs memory; always; "
         "manual: no memories (the agent searches itself; triggers still run when asked)\"},"
         "\"triggers\":" BOOL("also the curated entries whose trigger phrases occur in the "
                              "message"),
         ""),
     OUT("\"recalled\":{\"type\":\"string\"},\"triggers\":{\"type\":\"string\"}"),
     "The <recalled-memories> block to put before a prompt, within its token budget.", 0, "POST /v1/recall", 200},

    {"memory_add", op_memory_add,
     OBJ("\"text\":{\"type\":\"string\",\"minLength\":1,\"description\":\"the memory as one "
         "self-contained statement, e.g. 'User prefers tea over coffee'\"}," RECORD_PROPS,
         "\"text\""),
     MEMORY_OUT,
     "Store a memory (a fact, preference, decision...) when the user states something worth "
     "keeping. Duplicates are not stored twice; a newer statement on the same subject is "
     "found above older ones.",
     1, "POST /v1/memories", 201},

    {"memory_update", op_memory_update,
     OBJ(ID_PROP ",\"text\":{\"type\":\"string\",\"minLength\":1,\"description\":\"the new "
         "text\"}," RECORD_PROPS,
         "\"id\""),
     MEMORY_OUT, "Change fields of a stored memory; the change is kept in its history.", 1, "PATCH /v1/memories/{id}", 200},

    {"memory_delete", op_memory_delete, OBJ(ID_PROP, "\"id\""), OUT("\"deleted\":{\"type\":\"string\"}"),
     "Delete a stored memory (memory_restore brings it back until it is purged).", 1,
     "DELETE /v1/memories/{id}", 200},

    {"memory_restore", op_memory_restore, OBJ(ID_PROP, "\"id\""), MEMORY_OUT,
     "Bring back a deleted memory (until it is purged): searched and listed again.", 1,
     "POST /v1/memories/{id}/restore", 200},

    {"memory_get", op_memory_get, OBJ(ID_PROP, "\"id\""), MEMORY_OUT,
     "One stored memory by id.", 0, "GET /v1/memories/{id}", 200},

    {"memory_search", op_memory_search,
     OBJ("\"query\":{\"type\":\"string\",\"minLength\":1,\"description\":\"3-6 signal "
         "words\"}," LIST_PROPS ","
         "\"min_score\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,"
         "\"description\":\"drop memories scoring below this\"}",
         "\"query\""),
     OUT("\"results\":{\"type\":\"array\"},\"total\":{\"type\":\"integer\"},"
         "\"mode\":{\"type\":\"string\"}"),
     "Search the stored memories only (facts with category and importance).", 0, "POST /v1/memories/search", 200},

    {"memory_list", op_memory_list, OBJ(LIST_PROPS, ""),
     OUT("\"memories\":{\"type\":\"array\"},\"total\":{\"type\":\"integer\"},"
         "\"totalCapped\":{\"type\":\"boolean\"}"),
     "List stored memories, newest first, with filters.", 0, "POST /v1/memories/list", 200},

    {"memory_counts", op_memory_counts,
     OBJ(FILTER_PROPS ","
         "\"deleted\":" BOOL("count the deleted memories only") ","
         "\"bucket\":{\"type\":\"string\",\"enum\":[\"week\",\"day\"],"
         "\"description\":\"week (default: from Monday 00:00 UTC) or day\"},"
         "\"weeks\":{\"type\":\"integer\",\"minimum\":1,"
         "\"description\":\"only the memories of the last N weeks, this one included\"}",
         ""),
     OUT("\"buckets\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
         "\"start\":{\"type\":\"string\"},\"total\":{\"type\":\"integer\"},"
         "\"byCategory\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
         "\"integer\"}}}}},\"total\":{\"type\":\"integer\"}"),
     "How many memories were stored per week (or day), by category, oldest first: counted "
     "by the store, with the filters of memory_list.",
     0, "POST /v1/memories/counts", 200},

    {"status", op_status, OBJ("\"deep\":" BOOL("also probe the embedding provider"), ""),
     OUT("\"indexed\":{\"type\":\"boolean\"}"),
     "The index: files, chunks, last sync, embedding provider, stored memories.", 0, "GET /v1/status", 200},
    {"memory_history", op_memory_history, OBJ(ID_PROP, "\"id\""),
     OUT("\"id\":{\"type\":\"string\"},\"history\":{\"type\":\"array\",\"items\":{"
         "\"type\":\"object\",\"properties\":{\"event\":{\"type\":\"string\"},"
         "\"old_text\":{\"type\":[\"string\",\"null\"]},\"new_text\":{\"type\":[\"string\","
         "\"null\"]},\"at\":{\"type\":\"string\"}}}}"),
     "The history of a stored memory: added, updated, confirmed, deleted, restored, oldest "
     "first.",
     0,
     "GET /v1/memories/{id}/history", 200},
    {"memory_confirm", op_memory_confirm, OBJ(ID_PROP, "\"id\""), MEMORY_OUT,
     "The user confirmed a memory: it is counted, and fades more slowly.", 1,
     "POST /v1/memories/{id}/confirm", 200},
    {"memory_purge", op_memory_purge,
     OBJ("\"id\":{\"type\":\"string\",\"minLength\":1,\"description\":\"one deleted "
         "memory; without it, every deleted memory\"}",
         ""),
     OUT("\"purged\":{\"type\":\"integer\"}"),
     "Remove deleted memories for good, with their history.", 1, "POST /v1/memories/purge",
     200},
    {"memory_export", op_memory_export, OBJ("", ""),
     OUT("\"count\":{\"type\":\"integer\"},\"memories\":{\"type\":\"array\",\"items\":{"
         "\"type\":\"object\"}}"),
     "Every stored memory (deleted ones too) with its history, as records memory_import "
     "takes.",
     0, "GET /v1/memories/export", 200},
    {"memory_import", op_memory_import,
     OBJ("\"memories\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},"
         "\"description\":\"records as memory_export gives them\"},"
         "\"jsonl\":{\"type\":\"string\",\"description\":\"or the same as JSON lines "
         "(mnemo memory export)\"}",
         ""),
     OUT("\"imported\":{\"type\":\"integer\"},\"skipped\":{\"type\":\"integer\"}"),
     "Import exported memories, all or nothing; those already stored are skipped.", 1,
     "POST /v1/memories/import", 200},
    {"files", browse_files, OBJ("", ""),
     OUT("\"workspace\":{\"type\":\"string\"},\"indexed\":{\"type\":\"boolean\"},"
         "\"count\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"},"
         "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
         "\"path\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},"
         "\"size\":{\"type\":\"integer\"},\"mtime\":{\"type\":\"integer\"},"
         "\"chunks\":{\"type\":\"integer\"},\"date\":{\"type\":\"integer\"}}}}"),
     "The files the index holds, sorted by path (the paths results cite): kind memory "
     "(MEMORY.md, USER.md, memory/), extra (extraPaths), session or media; size, modification "
     "time, chunks and, for a daily note, the date of its name (Unix seconds).",
     0, "GET /v1/files", 200},
    {"timeline", browse_timeline,
     OBJ("\"user_id\":" STR("whose facts (default: the configured userId)") ","
         "\"agent_id\":" STR("only facts of this agent"),
         ""),
     OUT("\"facts\":{\"type\":\"integer\"},\"weeks\":{\"type\":\"array\",\"items\":{"
         "\"type\":\"object\",\"properties\":{\"week\":{\"type\":\"string\"},"
         "\"notes\":{\"type\":\"object\"},\"facts\":{\"type\":\"object\"}}}}"),
     "Notes and facts per week (weeks start on Monday, UTC), oldest first: notes by their "
     "folder (daily, root, other) dated by a daily note's name or the file's modification "
     "time; stored facts (not deleted) by category, dated by their creation.",
     0, "POST /v1/timeline", 200},
    {NULL, NULL, NULL, NULL, NULL, 0, NULL, 0},
};

static json_t *schemas[sizeof ops / sizeof *ops];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static void load_schemas(void)
{
    for (size_t i = 0; ops[i].name; i++)
        schemas[i] = json_loads(ops[i].schema, 0, NULL);
}

const api_op *api_ops(void) { return ops; }

const api_op *api_find(const char *name)
{
    for (size_t i = 0; name && ops[i].name; i++)
        if (strcmp(ops[i].name, name) == 0)
            return &ops[i];
    return NULL;
}

int api_run(mnemo *m, const api_op *op, json_t *args, char **out, char **err)
{
    *out = NULL;
    *err = NULL;
    pthread_once(&schemas_once, load_schemas);
    json_t *schema = schemas[op - ops];
    if (!schema) {
        *err = strdup("internal error: bad schema");
        return MNEMO_MISUSE;
    }
    json_t *none = NULL;
    if (!args)
        args = none = json_object();
    if (!json_is_object(args)) {
        *err = strdup("arguments must be a JSON object");
        return MNEMO_INVALID;
    }
    int rc = check_args(schema, args, err);
    if (!rc)
        rc = op->fn(m, args, out, err);
    json_decref(none);
    if (rc && !*err)
        *err = strdup(mnemo_strerror(rc));
    return rc;
}

/* The stable name of each code, from the one list in mnemo.h. */
#define CODE_NAME(name, value, text, api) [MNEMO_##name] = api,
static const char *const code_names[API_NCODES] = {MNEMO_STATUS_MAP(CODE_NAME)};
#undef CODE_NAME

const char *api_code_name(int rc)
{
    if (rc < 0 || rc >= API_NCODES)
        return "error";
    return code_names[rc];
}

/* The HTTP status of each code; a code appended to the list without one
 * here fails the build. */
static const short http_statuses[] = {
    [MNEMO_OK] = 200,
    [MNEMO_NOMEM] = 500,
    [MNEMO_IO] = 500,
    [MNEMO_DB] = 500,
    [MNEMO_HTTP] = 502,
    [MNEMO_TIMEOUT] = 504,
    [MNEMO_NOTFOUND] = 404,
    [MNEMO_INVALID] = 400,
    [MNEMO_UNAVAILABLE] = 503,
    [MNEMO_MISUSE] = 500,
    [MNEMO_CORRUPT] = 500,
    [MNEMO_BUSY] = 503,
    [MNEMO_DENIED] = 403,
};
_Static_assert(sizeof http_statuses / sizeof *http_statuses == API_NCODES,
               "an HTTP status for every MNEMO_* code");

int api_http_status(int rc)
{
    if (rc < 0 || rc >= API_NCODES)
        return 500;
    return http_statuses[rc];
}

json_t *api_error_json(int rc, const char *message)
{
    char *clean = api_utf8_clean(message ? message : mnemo_strerror(rc));
    json_t *j = json_pack("{s:{s:s,s:s}}", "error", "code", api_code_name(rc), "message",
                          clean ? clean : mnemo_strerror(rc));
    free(clean);
    return j;
}

/* ----------------------------------------------------------------------
 * HTTP routes and their description
 * -------------------------------------------------------------------- */

/* Whether PATH matches the route pattern PAT ("/v1/memories/{id}/history"),
 * the {id} segment into ID. */
static int path_match(const char *pat, const char *path, char *id, size_t n)
{
    const char *brace = strstr(pat, "{id}");
    if (!brace)
        return strcmp(pat, path) == 0;
    size_t pre = (size_t)(brace - pat);
    const char *post = brace + 4;
    if (strncmp(pat, path, pre) != 0)
        return 0;
    const char *seg = path + pre, *end = strchr(seg, '/');
    size_t sl = end ? (size_t)(end - seg) : strlen(seg);
    if (sl == 0 || sl >= n || strcmp(end ? end : "", post) != 0)
        return 0;
    /* A fixed path of another route is not an id ("/v1/memories/search"). */
    for (size_t i = 0; ops[i].name; i++) {
        const char *sp = strchr(ops[i].http, ' ') + 1;
        if (!strstr(sp, "{id}") && strcmp(sp, path) == 0)
            return 0;
    }
    memcpy(id, seg, sl);
    id[sl] = 0;
    return 1;
}

const api_op *api_route(const char *method, const char *path, char *id, size_t n,
                        int *path_known, char *allow, size_t an)
{
    *path_known = 0;
    id[0] = 0;
    if (an)
        allow[0] = 0;
    for (size_t i = 0; ops[i].name; i++) {
        const char *sp = strchr(ops[i].http, ' ');
        size_t ml = (size_t)(sp - ops[i].http);
        char tmp[128] = "";
        if (!path_match(sp + 1, path, tmp, sizeof tmp < n ? sizeof tmp : n))
            continue;
        *path_known = 1;
        if (strlen(method) == ml && !strncmp(method, ops[i].http, ml)) {
            snprintf(id, n, "%s", tmp);
            return &ops[i];
        }
        size_t al = strlen(allow);
        if (an > al + ml + 3)
            snprintf(allow + al, an - al, "%s%.*s", al ? ", " : "", (int)ml, ops[i].http);
    }
    return NULL;
}

json_t *api_openapi(void)
{
    pthread_once(&schemas_once, load_schemas);
    json_t *paths = json_object();
    json_t *err = json_loads(
        "{\"description\":\"an error\",\"content\":{\"application/json\":{\"schema\":{"
        "\"type\":\"object\",\"properties\":{\"error\":{\"type\":\"object\",\"properties\":{"
        "\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}},"
        "\"required\":[\"code\",\"message\"]}}}}}}",
        0, NULL);
    for (size_t i = 0; ops[i].name; i++) {
        const char *sp = strchr(ops[i].http, ' ');
        char method[16];
        snprintf(method, sizeof method, "%.*s", (int)(sp - ops[i].http), ops[i].http);
        for (char *c = method; *c; c++)
            *c = (char)(*c - 'A' + 'a');
        json_t *item = json_object_get(paths, sp + 1);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, sp + 1, item);
        }
        char status[8];
        snprintf(status, sizeof status, "%u", ops[i].status);
        json_t *out = ops[i].output ? json_loads(ops[i].output, 0, NULL) : json_object();
        json_t *op = json_pack("{s:s,s:s,s:{s:{s:s,s:{s:{s:o}}},s:O}}", "operationId",
                               ops[i].name, "summary", ops[i].title, "responses", status,
                               "description", "success", "content", "application/json",
                               "schema", out, "default", err);
        json_t *args = json_deep_copy(schemas[i]);
        if (strstr(sp + 1, "{id}")) {
            json_object_set_new(op, "parameters",
                                json_pack("[{s:s,s:s,s:b,s:{s:s},s:s}]", "name", "id", "in",
                                          "path", "required", 1, "schema", "type", "string",
                                          "description", "the memory's id"));
            json_object_del(json_object_get(args, "properties"), "id");
            json_t *req = json_object_get(args, "required");
            for (size_t k = json_array_size(req); k-- > 0;)
                if (!strcmp(json_string_value(json_array_get(req, k)), "id"))
                    json_array_remove(req, k);
        }
        if (!strcmp(method, "post") || !strcmp(method, "patch"))
            json_object_set_new(op, "requestBody",
                                json_pack("{s:b,s:{s:{s:o}}}", "required",
                                          json_array_size(json_object_get(args, "required")) > 0,
                                          "content", "application/json", "schema", args));
        else
            json_decref(args);
        json_object_set_new(item, method, op);
    }
    json_decref(err);
    json_object_set_new(
        paths, "/health",
        json_pack("{s:{s:s,s:s,s:{s:{s:s}}}}", "get", "operationId", "health", "summary",
                  "Whether the daemon answers, its version and workspace", "responses", "200",
                  "description", "alive"));
    json_object_set_new(
        paths, "/v1/events",
        json_pack("{s:{s:s,s:s,s:{s:{s:s,s:{s:{s:{s:s}}}}}}}", "get", "operationId", "events",
                  "summary",
                  "Server-sent events (text/event-stream): \"sync\" when the watcher has "
                  "re-indexed changed files ({\"ok\",\"added\",\"changed\",\"removed\"} or "
                  "{\"ok\":false,\"error\"}), \"memory\" after a stored memory changed "
                  "through the daemon ({\"op\",\"id\"}); a comment line every 15 s keeps the "
                  "stream alive",
                  "responses", "200", "description", "an endless event stream", "content",
                  "text/event-stream", "schema", "type", "string"));
    json_object_set_new(
        paths, "/mcp",
        json_pack("{s:{s:s,s:s,s:{s:{s:s}}}}", "post", "operationId", "mcp", "summary",
                  "MCP over Streamable HTTP (JSON-RPC requests, JSON answers): the tools "
                  "memory_search, memory_get, memory_add, memory_update, memory_delete, "
                  "memory_list, memory_recall, memory_status",
                  "responses", "200", "description", "a JSON-RPC response"));
    return json_pack("{s:s,s:{s:s,s:s,s:s},s:[{s:s}],s:{s:{s:{s:s,s:s}}},s:[{s:[]}],s:o}",
                     "openapi", "3.1.0", "info", "title", "mnemo", "version", mnemo_version(),
                     "description",
                     "mnemo's memory search daemon (mnemo serve). A token, when one is set, "
                     "goes in Authorization: Bearer.",
                     "servers", "url", "/", "components", "securitySchemes", "bearer", "type",
                     "http", "scheme", "bearer", "security", "bearer", "paths", paths);
}
