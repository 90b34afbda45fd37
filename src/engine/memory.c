/*
 * memory.c - what structured memories are, whatever stores them: the
 * record codec (JSON in and out), validation of every field (credentials
 * refused), the list and search options (typed: mnemo_memory_opts; their
 * JSON is decoded in memjson.c), the WHERE clause of the filter language
 * for SQLite and PostgreSQL, the reading of export lines, and the
 * writes and reads (add, update, delete, confirm, purge, get, history,
 * list), run here through a store's steps: SQLite's in memlite.c,
 * PostgreSQL's in pgmwrite.c.
 */
#include "engine/memory.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "text/secrets.h"
#include "util/hash.h"
#include "util/time.h"
#include "util/utf8.h"

const char *const mem_types[MEM_NTYPES] = {"fact", "preference", "summary", "context", "raw"};
#define types mem_types

double mem_default_importance(const char *c)
{
    static const struct {
        const char *name;
        double importance;
    } defaults[] = {{"identity", 0.95},     {"configuration", 0.95}, {"rule", 0.9},
                    {"preference", 0.85},   {"decision", 0.8},       {"technical", 0.8},
                    {"relationship", 0.75}, {"project", 0.75},       {"operational", 0.6}};
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
        if (strcmp(c, defaults[i].name) == 0)
            return defaults[i].importance;
    return 0.5;
}

static json_t *time_json(double t)
{
    if (isnan(t))
        return json_null();
    char iso[32];
    time_format_iso(t, iso);
    return json_string(iso);
}

/* "a, b" -> ["a","b"] */
json_t *mem_names(const char *s)
{
    json_t *a = json_array();
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        while (n && *s == ' ')
            s++, n--;
        while (n && s[n - 1] == ' ')
            n--;
        if (n)
            json_array_append_new(a, json_stringn(s, n));
        s = e ? e + 1 : NULL;
    }
    return a;
}

/* A JSON string of S as read back from storage: never NULL (jansson
 * refuses invalid UTF-8 and would drop the field), invalid sequences
 * replaced with U+FFFD, NULL as "". */
json_t *mem_jstr(const char *s)
{
    if (!s)
        return json_string("");
    size_t n = strlen(s);
    if (utf8_valid(s, n))
        return json_stringn(s, n);
    buf b;
    buf_init(&b, n * 3 + 16);
    utf8_repair(&b, s, n);
    json_t *j = json_stringn(b.data ? b.data : "", b.len);
    buf_cleanup(&b);
    return j ? j : json_string("");
}

/* The levels of objects and arrays in V (a scalar: 0), counted exactly up
 * to LIMIT: beyond it the count only says "deeper", without walking the
 * rest (jansson parses 2,048 levels; nothing here recurses that far). */
static int nesting(json_t *v, int limit)
{
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    if (limit < 0)
        return 1;
    int deepest = 0;
    size_t i = 0;
    const char *k;
    json_t *x;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x)
        {
            int d = nesting(x, limit - 1);
            deepest = d > deepest ? d : deepest;
            if (deepest >= limit)
                break;
        }
    } else {
        json_array_foreach(v, i, x)
        {
            int d = nesting(x, limit - 1);
            deepest = d > deepest ? d : deepest;
            if (deepest >= limit)
                break;
        }
    }
    return deepest + 1;
}

/* Stored metadata S as an object in *MD ({} for none or when it cannot be
 * returned); why it cannot be returned, in WHY, or NULL. */
static const char *metadata_read(const char *s, json_t **md, char why[200])
{
    json_error_t je;
    size_t n = s ? strlen(s) : 0;
    buf fixed; /* bytes that are not UTF-8 read as U+FFFD, as in text */
    buf_init(&fixed, 0);
    if (n && !utf8_valid(s, n)) {
        utf8_repair(&fixed, s, n);
        s = fixed.data ? fixed.data : "";
    }
    *md = s && *s ? json_loads(s, 0, &je) : json_object();
    buf_cleanup(&fixed);
    const char *bad = NULL;
    if (!*md) {
        snprintf(why, 200, "its metadata cannot be parsed: %s", je.text);
        bad = why;
    } else if (!json_is_object(*md)) {
        bad = "its metadata is not a JSON object";
    } else if (nesting(*md, MEM_MAX_DEPTH) > MEM_MAX_DEPTH) {
        snprintf(why, 200, "its metadata is nested more than %d levels deep", MEM_MAX_DEPTH);
        bad = why;
    } else if (n > MEM_MAX_METADATA) {
        snprintf(why, 200, "its metadata is larger than %d KiB (%zu bytes)",
                 MEM_MAX_METADATA >> 10, n);
        bad = why;
    }
    if (bad) {
        json_decref(*md);
        *md = json_object();
    }
    return bad;
}

json_t *mem_row_json(const mem_row *r)
{
    json_t *md;
    char why[200];
    const char *bad = metadata_read(r->metadata, &md, why);
    json_t *o = json_object();
    if (!o || !md) {
        json_decref(o);
        json_decref(md);
        return NULL;
    }
    json_object_set_new(o, "id", mem_jstr(r->id));
    json_object_set_new(o, "text", mem_jstr(r->text));
    json_object_set_new(o, "category", mem_jstr(r->category));
    json_object_set_new(o, "importance", json_real(r->importance));
    json_object_set_new(o, "type", mem_jstr(r->type));
    json_object_set_new(o, "subject", mem_jstr(r->subject));
    json_object_set_new(o, "user_id", mem_jstr(r->user));
    json_object_set_new(o, "agent_id", mem_jstr(r->agent));
    json_object_set_new(o, "run_id", mem_jstr(r->run));
    json_object_set_new(o, "metadata", md);
    json_object_set_new(o, "triggers", mem_names(r->triggers));
    json_object_set_new(o, "created_at", time_json(r->created));
    json_object_set_new(o, "updated_at", time_json(r->updated));
    json_object_set_new(o, "expires_at", time_json(r->expires));
    json_object_set_new(o, "confirmations", json_integer(r->confirmations));
    json_object_set_new(o, "last_confirmed_at", time_json(r->confirmed));
    json_object_set_new(o, "deleted_at", time_json(r->deleted));
    if (bad)
        json_object_set_new(o, "unreadable", json_string(bad));
    return o;
}

int mem_readable(mnemo *m, json_t *rec)
{
    const char *why = json_string_value(json_object_get(rec, "unreadable"));
    if (!why)
        return MNEMO_OK;
    const char *id = json_string_value(json_object_get(rec, "id"));
    return core_error(m, MNEMO_CORRUPT,
                      "memory %s cannot be read: %s (written by an older mnemo or another "
                      "tool); mnemo memory update %s --metadata '{}' replaces it, mnemo memory "
                      "delete %s removes the memory",
                      id, why, id, id);
}

int mem_skip(mem_skips *s, json_t *rec)
{
    json_t *why = json_object_get(rec, "unreadable");
    if (!why)
        return 0;
    json_t *id = json_object_get(rec, "id");
    size_t i;
    json_t *e;
    json_array_foreach(s->left, i, e) if (json_equal(json_object_get(e, "id"), id)) return 1;
    if (!s->left)
        s->left = json_array();
    json_array_append_new(s->left, json_pack("{s:O,s:O}", "id", id, "why", why));
    return 1;
}

int mem_skips_report(mnemo *m, const mem_skips *s, json_t *j)
{
    size_t n = json_array_size(s->left);
    if (!n)
        return MNEMO_OK;
    buf *w = &m->warn;
    buf_reset(w);
    w->err = 0;
    buf_printf(w,
               "%zu stored memor%s cannot be read (written by an older mnemo or another tool) "
               "and %s left out:",
               n, n == 1 ? "y" : "ies", n == 1 ? "is" : "are");
    size_t i;
    json_t *e;
    json_array_foreach(s->left, i, e)
    {
        if (i == 3) {
            buf_printf(w, " and %zu more", n - i);
            break;
        }
        buf_printf(w, "%s %s (%s)", i ? "," : "", json_string_value(json_object_get(e, "id")),
                   json_string_value(json_object_get(e, "why")));
    }
    buf_puts(w, "; mnemo memory update ID --metadata '{}' replaces the metadata, mnemo memory "
                "delete ID removes the memory");
    if (buf_err(w))
        return MNEMO_NOMEM;
    if (j && (json_object_set(j, "unreadable", s->left) ||
              json_object_set_new(j, "warnings", json_pack("[s]", w->data))))
        return MNEMO_NOMEM;
    return MNEMO_OK;
}

void mem_skips_cleanup(mem_skips *s)
{
    json_decref(s->left);
    s->left = NULL;
}

json_t *mem_history_entry(const char *event, const char *old_text, const char *new_text,
                          double at, const char *detail)
{
    json_t *e = json_object();
    json_object_set_new(e, "event", mem_jstr(event));
    json_object_set_new(e, "old_text", old_text ? mem_jstr(old_text) : json_null());
    json_object_set_new(e, "new_text", new_text ? mem_jstr(new_text) : json_null());
    json_object_set_new(e, "at", time_json(at));
    /* The changes of an update: one that cannot be read (an older mnemo
     * stored metadata of any depth) is shown as null. */
    json_t *d = detail ? json_loads(detail, 0, NULL) : NULL;
    if (d && nesting(d, MEM_MAX_DEPTH + 1) > MEM_MAX_DEPTH + 1) {
        json_decref(d);
        d = NULL;
    }
    json_object_set_new(e, "detail", d ? d : json_null());
    return e;
}

int mem_dump(json_t *j, char **out)
{
    /* 15 significant digits: 0.85 stays 0.85 (17 would print the double's
     * 0.84999999999999998). Export keeps 17, for exact round trips. */
    *out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(j);
    return *out ? MNEMO_OK : MNEMO_NOMEM;
}

void mem_uuid(char out[37])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (errno != EINTR)
            break;
    }
    if (got < sizeof b) { /* no entropy source: time and address, still unique enough */
        uint64_t x = (uint64_t)(time_wall() * 1e9) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = got; i < sizeof b; i++, x = x * 6364136223846793005ull + 1)
            b[i] = (unsigned char)(x >> 56);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

void mem_fields_cleanup(mem_fields *f)
{
    free(f->metadata);
    free(f->triggers);
}

/* Text: valid UTF-8, not empty, not too long, no credentials. */
static int check_text(mnemo *m, const char *text)
{
    size_t n = strlen(text);
    if (!utf8_valid(text, n))
        return core_error(m, MNEMO_INVALID, "memory text is not valid UTF-8");
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i == n)
        return core_error(m, MNEMO_INVALID, "memory text is empty");
    if (n > MEM_MAX_TEXT)
        return core_error(m, MNEMO_INVALID, "memory text is too long (%zu bytes; limit %d)", n,
                          MEM_MAX_TEXT);
    const char *kind = secret_find(text, n);
    if (kind)
        return core_error(m, MNEMO_INVALID,
                          "refusing to store a memory that looks like a credential (%s); "
                          "store where the secret is kept, not the secret",
                          kind);
    return MNEMO_OK;
}

/* The duplicate key: the text with runs of white space collapsed. */
static void text_hash(const char *text, char out[HASH_HEX_LEN + 1])
{
    buf b;
    buf_init(&b, 0);
    int space = 0;
    for (const char *p = text; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            space = 1;
            continue;
        }
        if (space && b.len)
            buf_putc(&b, ' ');
        space = 0;
        buf_putc(&b, *p);
    }
    hash_hex(b.data ? b.data : "", b.len, out);
    buf_cleanup(&b);
}

static int str_field(mnemo *m, json_t *o, const char *key, const char **out, int allow_empty)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return MNEMO_OK;
    if (!json_is_string(v))
        return core_error(m, MNEMO_INVALID, "memory field %s must be a string", key);
    const char *s = json_string_value(v);
    if (!allow_empty && !*s)
        return core_error(m, MNEMO_INVALID, "memory field %s must not be empty", key);
    if (strlen(s) > MEM_MAX_FIELD || !utf8_valid(s, strlen(s)))
        return core_error(m, MNEMO_INVALID,
                          "memory field %s must be valid UTF-8 of at most %d bytes", key,
                          MEM_MAX_FIELD);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20)
            return core_error(m, MNEMO_INVALID, "memory field %s contains control characters",
                              key);
    const char *kind = secret_find(s, strlen(s));
    if (kind)
        return core_error(m, MNEMO_INVALID,
                          "refusing memory field %s: its value looks like a credential (%s)", key,
                          kind);
    *out = s;
    return MNEMO_OK;
}

/* Whether a metadata key names a secret ("password", "db_token", "apiKey"). */
static int secret_key(const char *k)
{
    static const char *const names[] = {"password", "passwd", "secret", "token", "api_key",
                                        "apikey", "credential", "private_key", "privatekey"};
    char low[128];
    size_t n = 0;
    for (; k[n] && n + 1 < sizeof low; n++)
        low[n] = (char)(k[n] >= 'A' && k[n] <= 'Z' ? k[n] + 32 : k[n]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strstr(low, names[i]))
            return 1;
    return 0;
}

/* A credential anywhere in metadata: a value that looks like one, or a
 * non-empty value under a key that names one. *WHAT says which. */
static int metadata_secret(json_t *v, int under_secret_key, const char **what)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if ((*what = secret_find(s, strlen(s))))
            return 1;
        if (under_secret_key && strlen(s) >= 4) {
            *what = "a value under a key that names a secret";
            return 1;
        }
        return 0;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if ((*what = secret_find(k, strlen(k))))
                return 1;
            if (metadata_secret(x, secret_key(k), what))
                return 1;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) if (metadata_secret(x, under_secret_key, what)) return 1;
    }
    return 0;
}

/* A value for an error message: itself, or a note when it looks secret. */
static const char *shown(const char *v)
{
    return secret_find(v, strlen(v)) ? "(a value that looks like a credential, not shown)" : v;
}

/* A time: ISO 8601, a date, a number of Unix seconds, or null (NAN). */
static int time_field(mnemo *m, json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return MNEMO_OK;
    if (json_is_null(v)) {
        *out = NAN;
        return MNEMO_OK;
    }
    if (json_is_number(v)) {
        *out = floor(json_number_value(v));
        return MNEMO_OK;
    }
    double t;
    const char *s = json_string_value(v);
    if (s && s[0] == '+') {
        /* Relative: +30d, +12h, +90m, +2w from now. */
        char *end;
        double x = strtod(s + 1, &end);
        double unit = *end == 'd' ? 86400 : *end == 'h' ? 3600 : *end == 'm' ? 60
                      : *end == 'w' ? 7 * 86400 : 0;
        if (x > 0 && unit > 0 && end[1] == 0 && x * unit < 1e11) {
            *out = floor(core_now() + x * unit);
            return MNEMO_OK;
        }
    }
    if (!s || time_parse_iso(s, &t) != 0)
        return core_error(m, MNEMO_INVALID,
                          "memory field %s must be an ISO 8601 time, YYYY-MM-DD or +N[dhmw]",
                          key);
    *out = floor(t);
    return MNEMO_OK;
}

static int check_category(mnemo *m, const char *c)
{
    size_t n = strlen(c);
    if (n == 0 || n > MEM_MAX_CATEGORY)
        return core_error(m, MNEMO_INVALID, "category '%s' must be 1 to %d characters",
                          shown(c), MEM_MAX_CATEGORY);
    for (const char *p = c; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return core_error(m, MNEMO_INVALID, "category '%s' may use only a-z, 0-9, '_' and '-'",
                              shown(c));
    return MNEMO_OK;
}

static int check_type(mnemo *m, const char *t)
{
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strcmp(t, types[i]) == 0)
            return MNEMO_OK;
    return core_error(m, MNEMO_INVALID,
                      "type '%s' is not one of fact, preference, summary, context, raw",
                      shown(t));
}

int mem_fields_parse(mnemo *m, json_t *o, int importing, mem_fields *f)
{
    int rc;
    memset(f, 0, sizeof *f);
    f->importance = -1;
    f->created = f->updated = f->expires = f->confirmed = f->deleted = NAN;
    f->confirmations = -1;
    if (!json_is_object(o))
        return core_error(m, MNEMO_INVALID, "a memory must be a JSON object");
    static const char *const known[] = {
        "id",         "text",       "category",   "importance",    "type",
        "subject",    "user_id",    "agent_id",   "run_id",        "metadata",
        "triggers",   "created_at", "updated_at", "expires_at",    "confirmations",
        "last_confirmed_at", "deleted_at", "history", "duplicate", "score", "user", "agent",
        "run"};
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(k, known[i]) != 0)
            i++;
        if (i == sizeof known / sizeof *known)
            return core_error(m, MNEMO_INVALID, "unknown memory field '%s'", k);
    }
    json_t *text = json_object_get(o, "text");
    if (text) {
        if (!json_is_string(text))
            return core_error(m, MNEMO_INVALID, "memory field text must be a string");
        f->text = json_string_value(text);
        if ((rc = check_text(m, f->text)))
            return rc;
        text_hash(f->text, f->hash);
    }
    if ((rc = str_field(m, o, "category", &f->category, 0)))
        return rc;
    if (f->category && strlen(f->category) < sizeof f->catbuf) {
        size_t i = 0;
        for (; f->category[i]; i++) {
            char ch = f->category[i];
            f->catbuf[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch == ' ' ? '_' : ch;
        }
        f->catbuf[i] = 0;
        f->category = f->catbuf;
    }
    if ((f->category && (rc = check_category(m, f->category))) ||
        (rc = str_field(m, o, "type", &f->type, 0)) ||
        (f->type && (rc = check_type(m, f->type))) ||
        (rc = str_field(m, o, "subject", &f->subject, 0)) ||
        (rc = str_field(m, o, "user_id", &f->user, 1)) ||
        (rc = str_field(m, o, "agent_id", &f->agent, 1)) ||
        (rc = str_field(m, o, "run_id", &f->run, 1)) ||
        (rc = time_field(m, o, "expires_at", &f->expires)))
        return rc;
    /* A past expiry would store a memory nothing ever shows (an import keeps
     * its own: a backup holds memories that have expired since). */
    if (!importing && !isnan(f->expires) && f->expires <= core_now())
        return core_error(m, MNEMO_INVALID, "memory field expires_at is in the past: the memory "
                                            "would be hidden at once (give a later time, or "
                                            "delete the memory)");
    /* The short names (user, agent, run) are accepted too. */
    if ((!f->user && (rc = str_field(m, o, "user", &f->user, 1))) ||
        (!f->agent && (rc = str_field(m, o, "agent", &f->agent, 1))) ||
        (!f->run && (rc = str_field(m, o, "run", &f->run, 1))))
        return rc;
    json_t *imp = json_object_get(o, "importance");
    if (imp && !json_is_null(imp)) {
        double x = json_number_value(imp);
        if (!json_is_number(imp) || !(x >= 0 && x <= 1))
            return core_error(m, MNEMO_INVALID, "importance must be a number from 0 to 1");
        f->importance = x;
    }
    json_t *md = json_object_get(o, "metadata");
    if (md && !json_is_null(md)) {
        if (!json_is_object(md))
            return core_error(m, MNEMO_INVALID, "metadata must be a JSON object");
        /* Deeper metadata was stored once and then hid every memory from
         * readers that parse the reply whole. */
        if (nesting(md, MEM_MAX_DEPTH) > MEM_MAX_DEPTH)
            return core_error(m, MNEMO_INVALID,
                              "metadata is nested too deeply (limit %d levels of objects and "
                              "arrays)",
                              MEM_MAX_DEPTH);
        f->metadata = json_dumps(md, JSON_COMPACT | JSON_SORT_KEYS);
        if (!f->metadata)
            return MNEMO_NOMEM;
        size_t mlen = strlen(f->metadata);
        if (mlen > MEM_MAX_METADATA)
            return core_error(m, MNEMO_INVALID,
                              "metadata is too large (%zu bytes as JSON; limit %d KiB)", mlen,
                              MEM_MAX_METADATA >> 10);
        const char *kind = NULL;
        if (metadata_secret(md, 0, &kind))
            return core_error(m, MNEMO_INVALID,
                              "refusing to store metadata that looks like a credential (%s)",
                              kind);
    }
    json_t *tr = json_object_get(o, "triggers");
    if (tr && !json_is_null(tr)) {
        buf b;
        buf_init(&b, MEM_MAX_TRIGGERS);
        if (json_is_string(tr)) {
            buf_puts(&b, json_string_value(tr));
        } else if (json_is_array(tr)) {
            size_t i;
            json_t *x;
            json_array_foreach(tr, i, x)
            {
                if (!json_is_string(x) || strchr(json_string_value(x), ',')) {
                    buf_cleanup(&b);
                    return core_error(m, MNEMO_INVALID,
                                      "triggers must be strings without commas");
                }
                buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(x));
            }
        } else {
            buf_cleanup(&b);
            return core_error(m, MNEMO_INVALID, "triggers must be an array of strings");
        }
        int berr = buf_err(&b), bad_utf8 = !berr && b.len && !utf8_valid(b.data, b.len);
        if (berr || bad_utf8)
            buf_cleanup(&b);
        if (berr == MNEMO_NOMEM)
            return MNEMO_NOMEM;
        if (berr)
            return core_error(m, MNEMO_INVALID, "triggers are too long (limit %d KiB, joined)",
                              MEM_MAX_TRIGGERS >> 10);
        if (bad_utf8)
            return core_error(m, MNEMO_INVALID, "triggers are not valid UTF-8");
        const char *kind = b.len ? secret_find(b.data, b.len) : NULL;
        if (kind) {
            buf_cleanup(&b);
            return core_error(m, MNEMO_INVALID,
                              "refusing triggers that look like a credential (%s)", kind);
        }
        f->triggers = b.data ? buf_detach(&b) : strdup("");
        if (!f->triggers)
            return MNEMO_NOMEM;
    }
    if (!importing) {
        static const char *const fixed[] = {"id", "created_at", "updated_at", "confirmations",
                                            "last_confirmed_at", "deleted_at", "history"};
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
            if (json_object_get(o, fixed[i]))
                return core_error(m, MNEMO_INVALID,
                                  "memory field %s is set by mnemo, not by the caller",
                                  fixed[i]);
        return MNEMO_OK;
    }
    if ((rc = str_field(m, o, "id", &f->id, 0)) ||
        (rc = time_field(m, o, "created_at", &f->created)) ||
        (rc = time_field(m, o, "updated_at", &f->updated)) ||
        (rc = time_field(m, o, "last_confirmed_at", &f->confirmed)) ||
        (rc = time_field(m, o, "deleted_at", &f->deleted)))
        return rc;
    json_t *cf = json_object_get(o, "confirmations");
    if (cf && !json_is_null(cf)) {
        if (!json_is_integer(cf) || json_integer_value(cf) < 0)
            return core_error(m, MNEMO_INVALID, "confirmations must be a count");
        f->confirmations = json_integer_value(cf);
    }
    if (!f->id || !f->text || isnan(f->created))
        return core_error(m, MNEMO_INVALID, "an imported memory needs id, text and created_at");
    return MNEMO_OK;
}

void mem_fields_row(mnemo *m, const mem_fields *f, const char *id, double now, mem_row *r)
{
    r->id = id;
    r->text = f->text;
    r->category = f->category ? f->category : "other";
    r->importance = f->importance >= 0 ? f->importance : mem_default_importance(r->category);
    r->type = f->type ? f->type : "fact";
    r->subject = f->subject ? f->subject : "user";
    r->user = f->user ? f->user : cfg_str(m->cfg, CFG_USER_ID);
    r->agent = f->agent ? f->agent : cfg_str(m->cfg, CFG_AGENT_ID);
    r->run = f->run ? f->run : "";
    r->metadata = f->metadata ? f->metadata : "{}";
    r->triggers = f->triggers ? f->triggers : "";
    r->created = isnan(f->created) ? now : f->created;
    r->updated = isnan(f->updated) ? r->created : f->updated;
    r->expires = f->expires;
    r->confirmations = f->confirmations > 0 ? f->confirmations : 0;
    r->confirmed = f->confirmed;
    r->deleted = f->deleted;
}

double mem_now(void) { return floor(core_now()); }

/* The record O of an add: fields with a text, into F (mem_fields_cleanup
 * on success; on failure nothing is left). */
static int add_check(mnemo *m, json_t *o, mem_fields *f)
{
    int rc = mem_fields_parse(m, o, 0, f);
    if (!rc && !f->text)
        rc = core_error(m, MNEMO_INVALID, "a memory needs text");
    if (rc)
        mem_fields_cleanup(f);
    return rc;
}

int mem_update_parse(mnemo *m, const char *id, const char *changes, json_t **o, mem_fields *f)
{
    *o = NULL;
    memset(f, 0, sizeof *f);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "update: no memory id");
    json_error_t je;
    json_t *j = json_loads(changes ? changes : "", 0, &je);
    if (!j)
        return core_error(m, MNEMO_INVALID, "update: invalid JSON: %s", je.text);
    int rc = mem_fields_parse(m, j, 0, f);
    if (!rc && json_object_size(j) == 0)
        rc = core_error(m, MNEMO_INVALID, "update: nothing to change");
    if (rc) {
        mem_fields_cleanup(f);
        json_decref(j);
        return rc;
    }
    *o = j;
    return MNEMO_OK;
}

int mem_opts_from(mnemo *m, const mnemo_memory_opts *t, int search, mem_opts *o)
{
    memset(o, 0, sizeof *o);
    mfilter_init(&o->filter);
    o->min_score = -1;
    o->count = 1;
    mnemo_memory_opts defaults;
    if (!t) {
        mem_opts_defaults(&defaults);
        t = &defaults;
    }
    /* Holds the categories; the strings are the caller's. */
    if (!(o->root = json_object()))
        return MNEMO_NOMEM;
    o->user = t->user_id ? t->user_id : cfg_str(m->cfg, CFG_USER_ID);
    o->agent = t->agent_id;
    o->run = t->run_id && *t->run_id ? t->run_id : NULL;
    const char *scope = t->scope;
    if (!scope)
        o->scope = o->run ? MEM_ALL : MEM_LONG_TERM;
    else if (strcmp(scope, "all") == 0)
        o->scope = MEM_ALL;
    else if (strcmp(scope, "session") == 0)
        o->scope = MEM_SESSION;
    else if (strcmp(scope, "long-term") == 0 || strcmp(scope, "long_term") == 0)
        o->scope = MEM_LONG_TERM;
    else
        return core_error(m, MNEMO_INVALID, "scope '%s' is not all, session or long-term",
                          scope);
    if (o->scope == MEM_SESSION && !o->run)
        return core_error(m, MNEMO_INVALID, "scope session needs a run id (the session)");
    o->type = t->type;
    if (!o->type && search)
        o->type = "fact";
    if (o->type && strcmp(o->type, "all") == 0)
        o->type = NULL;
    if (o->type && check_type(m, o->type))
        return MNEMO_INVALID;
    o->subject = t->subject;
    if (t->ncategories) {
        json_t *cats = json_array();
        if (!cats || json_object_set_new(o->root, "categories", cats))
            return MNEMO_NOMEM;
        for (size_t i = 0; i < t->ncategories; i++) {
            if (!t->categories || !t->categories[i])
                return core_error(m, MNEMO_INVALID, "categories must be an array of names");
            json_t *c = json_string(t->categories[i]);
            if (!c)
                return core_error(m, MNEMO_INVALID, "categories must be valid UTF-8");
            if (json_array_append_new(cats, c))
                return MNEMO_NOMEM;
        }
        o->categories = cats;
    }
    o->limit = t->limit > 0 ? (t->limit > 100000 ? 100000 : t->limit) : search ? 10 : 100;
    if (search && o->limit > 50)
        o->limit = 50;
    if (t->offset < 0)
        return core_error(m, MNEMO_INVALID, "offset must be a whole number");
    o->offset = t->offset;
    o->deleted = t->deleted != 0;
    o->count = !t->no_count;
    if (!(t->min_score < 0)) { /* NAN too */
        if (!(t->min_score <= 1))
            return core_error(m, MNEMO_INVALID, "min_score must be a number from 0 to 1");
        o->min_score = t->min_score;
    }
    char *ftext = NULL;
    if (t->filters && !(ftext = strdup(t->filters)))
        return MNEMO_NOMEM;
    char err[512] = "";
    int rc = mfilter_compile(ftext, "m", &o->filter, err, sizeof err);
    o->filters = ftext; /* for mem_where_pg */
    if (rc == MNEMO_NOMEM)
        return core_error(m, rc, "out of memory");
    if (rc)
        return core_error(m, rc, "%s", err);
    return MNEMO_OK;
}

void mem_opts_defaults(mnemo_memory_opts *t)
{
    memset(t, 0, sizeof *t);
    t->min_score = -1;
}

void mnemo_memory_opts_init(mnemo_memory_opts *opts) { mem_opts_defaults(opts); }

void mem_opts_cleanup(mem_opts *o)
{
    mfilter_cleanup(&o->filter);
    free(o->filters);
    json_decref(o->root);
    memset(o, 0, sizeof *o);
}

/* Appends a parameter to A: text T (owned, may be NULL) or number X. */
static int arg_add(mfilter *a, char *t, double x)
{
    if (a->nargs == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        mfilter_arg *v = realloc(a->args, cap * sizeof *v);
        if (!v) {
            free(t);
            return MNEMO_NOMEM;
        }
        a->args = v;
        a->cap = cap;
    }
    mfilter_arg *g = &a->args[a->nargs++];
    g->is_text = t != NULL;
    g->text = t;
    g->num = x;
    return MNEMO_OK;
}

static int arg_text(mfilter *a, const char *s)
{
    char *t = strdup(s);
    return t ? arg_add(a, t, 0) : MNEMO_NOMEM;
}

static int arg_num(mfilter *a, double x) { return arg_add(a, NULL, x); }

/* The placeholder of the next argument: '?', or $N (N counting from
 * *NEXT, which is 0 for SQLite) with CAST. */
static const char *ph(int *next, const char *cast, char tmp[32])
{
    if (!*next)
        return "?";
    snprintf(tmp, 32, "$%d%s", (*next)++, cast);
    return tmp;
}

/* mem_where for SQLite (NEXT 0) or PostgreSQL (NEXT: the first $n); with
 * SCOPE only the conditions on user, agent, run and type. */
static int where_build(const mem_opts *o, double now, int next, buf *w, mfilter *a, int scope)
{
    int rc = MNEMO_OK, pg = next > 0;
    char t[32];
    if (strcmp(o->user, "*") != 0) {
        buf_printf(w, "m.user_id = %s", ph(&next, "::text", t));
        rc |= arg_text(a, o->user);
    } else {
        buf_puts(w, pg ? "true" : "1");
    }
    if (o->agent && strcmp(o->agent, "*") != 0) {
        /* An agent sees its own memories and the user's shared ones. */
        buf_printf(w, " AND m.agent_id IN (%s, '')", ph(&next, "::text", t));
        rc |= arg_text(a, o->agent);
    }
    if (o->scope == MEM_LONG_TERM) {
        buf_puts(w, " AND m.run_id = ''");
    } else if (o->scope == MEM_SESSION) {
        buf_printf(w, " AND m.run_id = %s", ph(&next, "::text", t));
        rc |= arg_text(a, o->run);
    } else if (o->run) {
        buf_printf(w, " AND m.run_id IN ('', %s)", ph(&next, "::text", t));
        rc |= arg_text(a, o->run);
    }
    if (o->type) {
        buf_printf(w, " AND m.type = %s", ph(&next, "::text", t));
        rc |= arg_text(a, o->type);
    }
    if (scope)
        return rc ? MNEMO_NOMEM : buf_err(w) ? MNEMO_NOMEM : MNEMO_OK;
    if (o->subject) {
        buf_printf(w, " AND m.subject = %s", ph(&next, "::text", t));
        rc |= arg_text(a, o->subject);
    }
    if (o->categories) {
        buf_puts(w, " AND m.category IN (");
        size_t i;
        json_t *v;
        json_array_foreach(o->categories, i, v)
        {
            buf_printf(w, "%s%s", i ? ", " : "", ph(&next, "::text", t));
            rc |= arg_text(a, json_string_value(v));
        }
        buf_putc(w, ')');
    }
    if (!o->deleted) {
        buf_printf(w, " AND m.deleted_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > %s)",
                   ph(&next, "::float8", t));
        rc |= arg_num(a, now);
    } else {
        buf_puts(w, " AND m.deleted_at IS NOT NULL"); /* the deleted ones, to restore or purge */
    }
    if (rc)
        return MNEMO_NOMEM;
    if (!pg) {
        buf_printf(w, " AND (%s)", o->filter.sql.data ? o->filter.sql.data : "1");
        return buf_err(w) ? MNEMO_NOMEM : MNEMO_OK;
    }
    /* The filter again, in PostgreSQL's dialect, numbered after the scope's
     * arguments (it compiled for SQLite already: it is valid). */
    mfilter f;
    mfilter_init(&f);
    char err[512];
    rc = mfilter_compile_pg(o->filters, "m", next, &f, err, sizeof err);
    if (!rc) {
        buf_printf(w, " AND (%s)", f.sql.data);
        for (size_t i = 0; i < f.nargs && !rc; i++) {
            rc = arg_add(a, f.args[i].text, f.args[i].num);
            f.args[i].text = NULL; /* moved */
        }
    }
    mfilter_cleanup(&f);
    return rc ? rc : buf_err(w) ? MNEMO_NOMEM : MNEMO_OK;
}

int mem_where(const mem_opts *o, double now, buf *w, mfilter *a)
{
    return where_build(o, now, 0, w, a, 0);
}

int mem_where_pg(const mem_opts *o, double now, int first, buf *w, mfilter *a)
{
    return where_build(o, now, first, w, a, 0);
}

int mem_where_scope_pg(const mem_opts *o, int first, buf *w, int *only)
{
    mfilter a;
    mfilter_init(&a);
    int rc = where_build(o, 0, first, w, &a, 1);
    mfilter_cleanup(&a);
    *only = !o->subject && !o->categories && !o->deleted &&
            (!o->filters || !strcmp(o->filters, "{}"));
    return rc;
}

int mem_import_history(mnemo *m, json_t *h, size_t line, mem_history_fn fn, void *ud)
{
    if (!h || json_is_null(h))
        return MNEMO_OK;
    if (!json_is_array(h))
        return core_error(m, MNEMO_INVALID, "import: line %zu: history must be an array", line);
    size_t i;
    json_t *e;
    json_array_foreach(h, i, e)
    {
        const char *ev = json_string_value(json_object_get(e, "event"));
        json_t *at = json_object_get(e, "at");
        double t;
        if (!ev || !json_is_string(at) || time_parse_iso(json_string_value(at), &t) != 0)
            return core_error(m, MNEMO_INVALID,
                              "import: line %zu: history entry %zu needs event and at", line, i);
        const char *ot = json_string_value(json_object_get(e, "old_text"));
        const char *nt = json_string_value(json_object_get(e, "new_text"));
        json_t *d = json_object_get(e, "detail");
        if ((ot && strlen(ot) > MEM_MAX_TEXT) || (nt && strlen(nt) > MEM_MAX_TEXT))
            return core_error(m, MNEMO_INVALID,
                              "import: line %zu: history entry %zu: a text is too long (limit "
                              "%d bytes)",
                              line, i, MEM_MAX_TEXT);
        /* An update's changes: metadata one level down. */
        if (d && nesting(d, MEM_MAX_DEPTH + 1) > MEM_MAX_DEPTH + 1)
            return core_error(m, MNEMO_INVALID,
                              "import: line %zu: history entry %zu: detail is nested too deeply "
                              "(limit %d levels)",
                              line, i, MEM_MAX_DEPTH + 1);
        const char *kind = ot ? secret_find(ot, strlen(ot)) : NULL;
        if (!kind && nt)
            kind = secret_find(nt, strlen(nt));
        if (kind)
            return core_error(m, MNEMO_INVALID,
                              "import: line %zu: history entry %zu holds text that looks like a "
                              "credential (%s)",
                              line, i, kind);
        char *detail = d && !json_is_null(d) ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS)
                                             : NULL;
        int rc = fn(m, ud, ev, json_string_value(json_object_get(e, "old_text")),
                    json_string_value(json_object_get(e, "new_text")), t, detail);
        free(detail);
        if (rc)
            return rc;
    }
    return MNEMO_OK;
}

int mem_import_each(mnemo *m, const char *jsonl, size_t len, mem_import_fn fn, void *ud)
{
    int rc = MNEMO_OK;
    size_t line = 0;
    for (size_t pos = 0; !rc && pos < len;) {
        const char *nl = memchr(jsonl + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - jsonl) : len;
        line++;
        size_t s = pos, e = end;
        pos = end + 1;
        while (s < e && (jsonl[s] == ' ' || jsonl[s] == '\t' || jsonl[s] == '\r'))
            s++;
        if (s == e)
            continue;
        json_error_t je;
        json_t *o = json_loadb(jsonl + s, e - s, 0, &je);
        if (!o) {
            rc = core_error(m, MNEMO_INVALID, "import: line %zu: invalid JSON: %s", line,
                            je.text);
            break;
        }
        mem_fields f;
        rc = mem_fields_parse(m, o, 1, &f);
        if (rc) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", core_errmsg(m));
            rc = core_error(m, rc, "import: line %zu: %s", line, msg);
        }
        if (!rc)
            rc = fn(m, ud, o, &f, line);
        mem_fields_cleanup(&f);
        json_decref(o);
    }
    return rc;
}

/* ----------------------------------------------------------------------
 * Writes and reads every store runs the same way, through its steps
 * (mem_store)
 * -------------------------------------------------------------------- */

/* In a write: the live memory ID, locked, as JSON in *OLD and its row in
 * *MID. */
static int load_live(mnemo *m, const mem_store *st, const char *id, json_t **old, int64_t *mid)
{
    int rc = st->load(m, id, 1, old, mid);
    if (!rc && !json_is_null(json_object_get(*old, "deleted_at")))
        rc = core_error(m, MNEMO_NOTFOUND, "memory %s is deleted", id);
    return rc;
}

/* Memory ID as it is now, as the reply of a write. */
static int reply(mnemo *m, const mem_store *st, const char *id, char **out)
{
    json_t *j = NULL;
    int rc = st->load(m, id, 0, &j, NULL);
    return rc ? rc : mem_dump(j, out);
}

typedef struct add_job {
    const mem_store *st;
    const mem_fields *f;
    char id[64];
    int64_t mid;
    int dup;
    json_t *rec; /* the memory, when the store read it back */
} add_job;

static int add_steps(mnemo *m, void *ud)
{
    add_job *a = ud;
    json_decref(a->rec); /* a write tried again starts over */
    a->rec = NULL;
    a->dup = 0;
    return a->st->insert(m, a->f, mem_now(), a->id, &a->mid, &a->dup, &a->rec);
}

int mem_add_obj(mnemo *m, json_t *o, const mem_store *st, json_t **rec)
{
    *rec = NULL;
    mem_fields f;
    int rc = add_check(m, o, &f);
    if (rc)
        return rc;
    add_job a = {st, &f, "", 0, 0, NULL};
    json_t *j = NULL;
    mem_uuid(a.id);
    rc = st->write(m, 1, add_steps, &a);
    if (rc)
        goto done;
    /* Embedded once committed: a provider may be slow, and the write's
     * locks are not held meanwhile. */
    if (!a.dup) {
        st->embed(m, a.id, a.mid, f.text);
        if (st->catch_up)
            st->catch_up(m, a.mid);
    }
    j = a.rec;
    a.rec = NULL;
    if (!j && (rc = st->load(m, a.id, 0, &j, NULL)))
        goto done;
    if (a.dup)
        json_object_set_new(j, "duplicate", json_true());
    *rec = j;
done:
    json_decref(a.rec);
    mem_fields_cleanup(&f);
    return rc;
}

typedef struct update_job {
    const mem_store *st;
    const char *id;
    json_t *o; /* the changes */
    const mem_fields *f;
    int64_t mid;
    int text_changed;
} update_job;

static int update_steps(mnemo *m, void *ud)
{
    update_job *u = ud;
    const mem_store *st = u->st;
    const mem_fields *f = u->f;
    json_t *old = NULL;
    int rc = load_live(m, st, u->id, &old, &u->mid);
    /* A memory that cannot be read is repaired by new metadata, or not changed. */
    if (!rc && !f->metadata)
        rc = mem_readable(m, old);
    const char *old_text = old ? json_string_value(json_object_get(old, "text")) : NULL;
    u->text_changed = !rc && f->text && strcmp(f->text, old_text) != 0;
    if (u->text_changed) {
        /* The new text may duplicate another memory of the scope. */
        char other[64];
        const char *user = f->user ? f->user : json_string_value(json_object_get(old, "user_id"));
        const char *agent =
            f->agent ? f->agent : json_string_value(json_object_get(old, "agent_id"));
        const char *run = f->run ? f->run : json_string_value(json_object_get(old, "run_id"));
        if (!(rc = st->find_duplicate(m, f->hash, user, agent, run, other)) && other[0] &&
            strcmp(other, u->id) != 0)
            rc = core_error(m, MNEMO_INVALID, "memory %s already says that", other);
    }
    double now = mem_now();
    if (!rc) {
        /* Category changes bring their default importance unless one is given. */
        double imp = f->importance >= 0 ? f->importance
                     : f->category       ? mem_default_importance(f->category)
                                         : -1;
        rc = st->update_row(m, u->id, u->mid, f, imp, json_object_get(u->o, "expires_at") != NULL,
                            u->text_changed ? old_text : NULL, now);
    }
    if (!rc) {
        char *detail = json_dumps(u->o, JSON_COMPACT | JSON_SORT_KEYS);
        rc = detail ? st->history(m, u->id, "UPDATE", old_text, f->text ? f->text : old_text,
                                  now, detail)
                    : MNEMO_NOMEM;
        free(detail);
    }
    if (!rc && u->text_changed) /* its vector is of the old text */
        rc = st->drop_vector(m, u->id, u->mid);
    json_decref(old);
    return rc;
}

int mem_update(mnemo *m, const char *id, const char *changes, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *o;
    mem_fields f;
    int rc = mem_update_parse(m, id, changes, &o, &f);
    if (rc)
        return rc;
    update_job u = {st, id, o, &f, 0, 0};
    rc = st->write(m, 0, update_steps, &u);
    if (!rc && u.text_changed)
        st->embed(m, id, u.mid, f.text);
    if (!rc)
        rc = reply(m, st, id, out);
    mem_fields_cleanup(&f);
    json_decref(o);
    return rc;
}

/* A write of one memory, or of the deleted ones (purge). */
typedef struct one_job {
    const mem_store *st;
    const char *id;
    size_t n; /* purge: how many */
} one_job;

static int delete_steps(mnemo *m, void *ud)
{
    one_job *d = ud;
    json_t *old = NULL;
    int64_t mid = 0;
    int rc = load_live(m, d->st, d->id, &old, &mid);
    double now = mem_now();
    const char *text = old ? json_string_value(json_object_get(old, "text")) : NULL;
    if (!rc)
        rc = d->st->mark_deleted(m, d->id, mid, text, now);
    if (!rc)
        rc = d->st->history(m, d->id, "DELETE", text, NULL, now, NULL);
    json_decref(old);
    return rc;
}

int mem_delete(mnemo *m, const char *id, const mem_store *st)
{
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "delete: no memory id");
    one_job d = {st, id, 0};
    return st->write(m, 0, delete_steps, &d);
}

static int restore_steps(mnemo *m, void *ud)
{
    one_job *r = ud;
    json_t *old = NULL;
    int64_t mid = 0;
    int rc = r->st->load(m, r->id, 1, &old, &mid);
    if (!rc && json_is_null(json_object_get(old, "deleted_at")))
        rc = core_error(m, MNEMO_INVALID, "memory %s is not deleted", r->id);
    const char *text = old ? json_string_value(json_object_get(old, "text")) : NULL;
    if (!rc) {
        /* Its text may have been stored again meanwhile, in its scope. */
        char hash[HASH_HEX_LEN + 1], other[64];
        text_hash(text ? text : "", hash);
        if (!(rc = r->st->find_duplicate(m, hash,
                                         json_string_value(json_object_get(old, "user_id")),
                                         json_string_value(json_object_get(old, "agent_id")),
                                         json_string_value(json_object_get(old, "run_id")),
                                         other)) &&
            other[0])
            rc = core_error(m, MNEMO_INVALID,
                            "memory %s says what memory %s, which is not deleted, says: delete "
                            "or change that one first",
                            r->id, other);
    }
    double now = mem_now();
    if (!rc)
        rc = r->st->mark_restored(m, r->id, mid, text, now);
    if (!rc)
        rc = r->st->history(m, r->id, "RESTORE", NULL, text, now, NULL);
    json_decref(old);
    return rc;
}

int mem_restore(mnemo *m, const char *id, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "restore: no memory id");
    one_job r = {st, id, 0};
    int rc = st->write(m, 0, restore_steps, &r);
    if (rc)
        return rc;
    return reply(m, st, id, out); /* its vector stayed while it was deleted */
}

static int confirm_steps(mnemo *m, void *ud)
{
    one_job *c = ud;
    json_t *old = NULL;
    int64_t mid = 0;
    int rc = load_live(m, c->st, c->id, &old, &mid);
    if (!rc)
        rc = mem_readable(m, old); /* its record could not be returned */
    json_decref(old);
    double now = mem_now();
    if (!rc)
        rc = c->st->mark_confirmed(m, c->id, mid, now);
    if (!rc)
        rc = c->st->history(m, c->id, "CONFIRM", NULL, NULL, now, NULL);
    return rc;
}

int mem_confirm(mnemo *m, const char *id, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "confirm: no memory id");
    one_job c = {st, id, 0};
    int rc = st->write(m, 0, confirm_steps, &c);
    return rc ? rc : reply(m, st, id, out);
}

static int purge_steps(mnemo *m, void *ud)
{
    one_job *p = ud;
    p->n = 0;
    int rc = p->st->count_deleted(m, p->id, &p->n);
    if (!rc && p->id && p->n == 0)
        rc = core_error(m, MNEMO_NOTFOUND, "no deleted memory with id %s (delete it first)",
                        p->id);
    return rc ? rc : p->st->purge(m, p->id);
}

int mem_purge(mnemo *m, const char *id, const mem_store *st, size_t *purged)
{
    core_clear(m);
    if (purged)
        *purged = 0;
    one_job p = {st, id, 0};
    int rc = st->write(m, 0, purge_steps, &p);
    if (!rc && purged)
        *purged = p.n;
    return rc;
}

int mem_get_rec(mnemo *m, const char *id, const mem_store *st, json_t **rec)
{
    *rec = NULL;
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "get: no memory id");
    json_t *j = NULL;
    int rc = st->open ? st->open(m) : MNEMO_OK;
    if (!rc)
        rc = st->load(m, id, 0, &j, NULL);
    if (!rc)
        rc = mem_readable(m, j);
    if (rc) {
        json_decref(j);
        return rc;
    }
    *rec = j;
    return MNEMO_OK;
}

int mem_history(mnemo *m, const char *id, const mem_store *st, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "history: no memory id");
    json_t *h = NULL;
    int rc = st->open ? st->open(m) : MNEMO_OK;
    if (!rc)
        rc = st->read_history(m, id, &h);
    if (rc) {
        json_decref(h);
        return rc;
    }
    return mem_dump(h, out);
}

int mem_list_run(mnemo *m, const mem_opts *o, const mem_store *st, json_t **list,
                 long long *total, int *capped, mem_skips *sk)
{
    *list = NULL;
    *total = 0;
    if (capped)
        *capped = 0;
    json_t *rows = json_array(), *l = json_array();
    int rc = rows && l ? MNEMO_OK : MNEMO_NOMEM;
    if (!rc && st->open)
        rc = st->open(m);
    double now = mem_now();
    if (!rc)
        rc = st->list(m, o, now, rows);
    /* The rows read: those returned and those left out as unreadable. */
    size_t read = rc ? 0 : json_array_size(rows);
    for (size_t i = 0; i < read; i++) {
        json_t *r = json_array_get(rows, i);
        if (!mem_skip(sk, r)) /* else left out, and said by the caller */
            json_array_append(l, r);
    }
    long long n = (long long)read + o->offset, past = cfg_int(m->cfg, CFG_MEMORY_COUNT_LIMIT);
    /* More than one page, maybe. A count reads every memory it counts (the
     * entries of an index at best: 0.2 s for a million), so it stops one
     * past memoryCountLimit beyond the page: a list reads about what it
     * returns, and says when more match. */
    long long max = past ? (long long)o->offset + o->limit + past : 0;
    if (!rc && o->count && (read == (size_t)o->limit || o->offset > 0)) {
        rc = st->count(m, o, now, max ? max + 1 : 0, &n);
        if (!rc && max && n > max) {
            n = max;
            if (capped)
                *capped = 1;
        }
    }
    json_decref(rows);
    if (rc) {
        json_decref(l);
        return rc;
    }
    *list = l;
    *total = n;
    return MNEMO_OK;
}
