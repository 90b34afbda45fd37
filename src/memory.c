/*
 * memory.c - structured memories: adding, changing, deleting, confirming,
 * listing, history, export and import (search is in msearch.c).
 *
 * Memories live in the memory store, a database of their own attached to
 * the index connection as "mem" (store_attach_memories): a rebuild of the
 * index never replaces it. Writers take the store's lock, then an
 * immediate transaction; commits are synced (synchronous=FULL). Every
 * memoryBackupEvery writes (and daily while memories change) a JSON-lines
 * snapshot is written beside the store, memoryBackups kept.
 */
#include "backend.h"
#include "memory.h"
#include "memvec.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recover.h"
#include "secrets.h"
#include "util/hash.h"
#include "util/lock.h"
#include "util/time.h"
#include "util/utf8.h"
#include "vectors.h"

#define MAX_TEXT (16 << 10)
#define MAX_FIELD 256

static const char *const types[] = {"fact", "preference", "summary", "context", "raw"};

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

/* ----------------------------------------------------------------------
 * The record codec
 * -------------------------------------------------------------------- */

static json_t *time_json(double t)
{
    if (isnan(t))
        return json_null();
    char iso[32];
    time_format_iso(t, iso);
    return json_string(iso);
}

static double col_time(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

/* "a, b" -> ["a","b"] */
static json_t *triggers_json(const char *s)
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

json_t *mem_row_json(const mem_row *r)
{
    json_t *md = json_loads(r->metadata ? r->metadata : "{}", 0, NULL);
    if (!json_is_object(md)) {
        json_decref(md);
        md = json_object();
    }
    json_t *o = json_object();
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
    json_object_set_new(o, "triggers", triggers_json(r->triggers));
    json_object_set_new(o, "created_at", time_json(r->created));
    json_object_set_new(o, "updated_at", time_json(r->updated));
    json_object_set_new(o, "expires_at", time_json(r->expires));
    json_object_set_new(o, "confirmations", json_integer(r->confirmations));
    json_object_set_new(o, "last_confirmed_at", time_json(r->confirmed));
    json_object_set_new(o, "deleted_at", time_json(r->deleted));
    return o;
}

json_t *mem_json(sqlite3_stmt *st, int c)
{
    mem_row r = {
        (const char *)sqlite3_column_text(st, c + 1),  (const char *)sqlite3_column_text(st, c + 2),
        (const char *)sqlite3_column_text(st, c + 3),  (const char *)sqlite3_column_text(st, c + 5),
        (const char *)sqlite3_column_text(st, c + 6),  (const char *)sqlite3_column_text(st, c + 7),
        (const char *)sqlite3_column_text(st, c + 8),  (const char *)sqlite3_column_text(st, c + 9),
        (const char *)sqlite3_column_text(st, c + 10), (const char *)sqlite3_column_text(st, c + 11),
        sqlite3_column_double(st, c + 4),              col_time(st, c + 12),
        col_time(st, c + 13),                          col_time(st, c + 14),
        col_time(st, c + 16),                          col_time(st, c + 17),
        sqlite3_column_int64(st, c + 15)};
    return mem_row_json(&r);
}

json_t *mem_history_entry(const char *event, const char *old_text, const char *new_text,
                          double at, const char *detail)
{
    json_t *e = json_object();
    json_object_set_new(e, "event", mem_jstr(event));
    json_object_set_new(e, "old_text", old_text ? mem_jstr(old_text) : json_null());
    json_object_set_new(e, "new_text", new_text ? mem_jstr(new_text) : json_null());
    json_object_set_new(e, "at", time_json(at));
    json_t *d = detail ? json_loads(detail, 0, NULL) : NULL;
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

#define dump mem_dump

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

/* ----------------------------------------------------------------------
 * Validation
 * -------------------------------------------------------------------- */

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
    if (n > MAX_TEXT)
        return core_error(m, MNEMO_INVALID, "memory text is too long (%zu bytes; limit %d)", n,
                          MAX_TEXT);
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
    if (strlen(s) > MAX_FIELD || !utf8_valid(s, strlen(s)))
        return core_error(m, MNEMO_INVALID,
                          "memory field %s must be valid UTF-8 of at most %d bytes", key,
                          MAX_FIELD);
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
    if (n == 0 || n > 32)
        return core_error(m, MNEMO_INVALID, "category '%s' must be 1 to 32 characters",
                          shown(c));
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
        f->metadata = json_dumps(md, JSON_COMPACT | JSON_SORT_KEYS);
        if (!f->metadata)
            return MNEMO_NOMEM;
        if (strlen(f->metadata) > 64 * 1024)
            return core_error(m, MNEMO_INVALID, "metadata is too large (limit 64 KiB)");
        const char *kind = NULL;
        if (metadata_secret(md, 0, &kind))
            return core_error(m, MNEMO_INVALID,
                              "refusing to store metadata that looks like a credential (%s)",
                              kind);
    }
    json_t *tr = json_object_get(o, "triggers");
    if (tr && !json_is_null(tr)) {
        buf b;
        buf_init(&b, 4096);
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
        if (buf_err(&b) || (b.len && !utf8_valid(b.data, b.len))) {
            buf_cleanup(&b);
            return core_error(m, MNEMO_INVALID, "triggers are too long or not UTF-8");
        }
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

/* ----------------------------------------------------------------------
 * Opening and writing
 * -------------------------------------------------------------------- */

int mem_store(mnemo *m)
{
    int rc = core_mem(m);
    if (rc != MNEMO_NOTFOUND)
        return rc;
    /* No index yet: build it (memories are searched beside notes). */
    core_clear(m);
    mnemo_sync_stats st;
    if ((rc = m->be->sync(m, NULL, &st)))
        return rc;
    return core_mem(m);
}

typedef struct writer {
    int lock;
    int began;
} writer;

static int write_begin(mnemo *m, writer *w)
{
    w->lock = -1;
    w->began = 0;
    int rc = mem_store(m);
    if (rc)
        return rc;
    /* The memory store's own lock: a rebuild of the index (which holds the
     * index's lock for its length) does not hold up memory writes. */
    char lockpath[PATH_MAX + 8];
    snprintf(lockpath, sizeof lockpath, "%s.lock", m->mem_path);
    w->lock = lock_acquire(lockpath, (int)cfg_int(m->cfg, CFG_BUSY_TIMEOUT_MS));
    if (w->lock == -2)
        return core_error(m, MNEMO_BUSY,
                          "the memory store %s is busy (another mnemo is writing it; lock %s "
                          "held)",
                          m->mem_path, lockpath);
    if (w->lock < 0)
        return core_error(m, MNEMO_IO, "cannot lock %s: %s", lockpath, strerror(errno));
    if ((rc = core_mem(m)))
        return rc;
    if (sqlite3_exec(store_db(m->st), "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return core_error(m, MNEMO_BUSY, "cannot write the memory store %s: %s", m->mem_path,
                          sqlite3_errmsg(store_db(m->st)));
    w->began = 1;
    return MNEMO_OK;
}

static int sqlfail(mnemo *m, const char *what);

static int write_file_fn(void *ud, const char *data, size_t len)
{
    return fwrite(data, 1, len, ud) == len ? 0 : -1;
}

/* The write count a snapshot's name ends with: "...-<count>.jsonl". */
static long long backup_seq(const char *name)
{
    const char *d = strrchr(name, '-');
    return d ? strtoll(d + 1, NULL, 10) : 0;
}

/* Oldest first by write count (the clock may have been set back). */
static int by_seq(const void *a, const void *b)
{
    long long x = backup_seq(*(char *const *)a), y = backup_seq(*(char *const *)b);
    return x < y ? -1 : x > y;
}

/* Keeps the newest KEEP snapshots "<store>.backup-*.jsonl" beside the store. */
static void prune_backups(const char *mem_path, long keep)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", mem_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = 0;
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s.backup-", slash + 1);
    size_t plen = strlen(prefix), n = 0, cap = 0;
    char **names = NULL;
    DIR *d = opendir(dir[0] ? dir : "/");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, prefix, plen) != 0 || len < plen + 6 ||
            strcmp(de->d_name + len - 6, ".jsonl") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **g = realloc(names, cap * sizeof *g);
            if (!g)
                break;
            names = g;
        }
        if (!(names[n] = strdup(de->d_name)))
            break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_seq);
    for (size_t i = 0; i < n; i++) {
        if ((long)(n - i) > keep) {
            char p[PATH_MAX * 2 + 2];
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            unlink(p);
        }
        free(names[i]);
    }
    free(names);
}

/* Writes a JSON-lines snapshot of the memory store (the export format,
 * which memory import reads back) when memoryBackupEvery writes have been
 * made since the last one, or a day has passed and memories changed. Runs
 * under the store's lock, after the commit; a failure is a warning, the
 * write itself stands. */
static void maybe_backup(mnemo *m)
{
    long keep = cfg_int(m->cfg, CFG_MEMORY_BACKUPS), every = cfg_int(m->cfg, CFG_MEMORY_BACKUP_EVERY);
    if (keep <= 0)
        return;
    char *v = NULL;
    long writes = 0, done = 0;
    double at = 0, now = time_wall();
    if (store_mem_meta_get(m->st, "writes", &v) == MNEMO_OK && v)
        writes = strtol(v, NULL, 10);
    free(v);
    if (store_mem_meta_get(m->st, "backup_writes", &v) == MNEMO_OK && v)
        done = strtol(v, NULL, 10);
    free(v);
    if (store_mem_meta_get(m->st, "backup_at", &v) == MNEMO_OK && v)
        at = strtod(v, NULL);
    free(v);
    /* Each snapshot writes the whole store: between two of them at least
     * half its size in writes, so that bulk adds stay linear (two rows
     * written out per write, at most). */
    sqlite3_stmt *q = NULL;
    long size = 0;
    if (sqlite3_prepare_v2(store_db(m->st), "SELECT coalesce(max(mid), 0) FROM memories", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        size = (long)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    if (every < size / 2)
        every = size / 2;
    if (writes - done < every && !(writes > done && now - at >= 86400))
        return;
    char stamp[32], path[PATH_MAX + 64], tmp[PATH_MAX + 80];
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(path, sizeof path, "%s.backup-%s-%012ld.jsonl", m->mem_path, stamp, writes);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *f = fopen(tmp, "wx");
    int rc = f ? MNEMO_OK : MNEMO_IO;
    if (f) {
        fchmod(fileno(f), 0600);
        rc = lite_memory_export(m, write_file_fn, f, NULL);
        if (fflush(f) != 0 || fsync(fileno(f)) != 0)
            rc = rc ? rc : MNEMO_IO;
        if (fclose(f) != 0)
            rc = rc ? rc : MNEMO_IO;
    }
    if (!rc && rename(tmp, path) != 0)
        rc = MNEMO_IO;
    if (rc) {
        unlink(tmp);
        buf_reset(&m->warn);
        m->warn.err = 0;
        buf_printf(&m->warn, "the memory backup %s could not be written (%s)", path,
                   strerror(errno));
        core_clear(m);
        return;
    }
    char num[32];
    snprintf(num, sizeof num, "%ld", writes);
    store_mem_meta_set(m->st, "backup_writes", num);
    snprintf(num, sizeof num, "%.0f", now);
    store_mem_meta_set(m->st, "backup_at", num);
    prune_backups(m->mem_path, keep);
}

static int write_end(mnemo *m, writer *w, int rc)
{
    if (w->began) {
        sqlite3 *db = store_db(m->st);
        /* Counted in the write's own transaction, for the backups. */
        if (rc == MNEMO_OK &&
            sqlite3_exec(db,
                         "INSERT INTO mem.memory_meta(key, value) VALUES('writes', '1') ON "
                         "CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                         NULL, NULL, NULL) != SQLITE_OK)
            rc = sqlfail(m, "counting the write");
        if (rc == MNEMO_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            rc = core_error(m, MNEMO_DB, "cannot commit to %s: %s", m->mem_path,
                            sqlite3_errmsg(db));
        if (rc)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        else
            maybe_backup(m);
    }
    if (w->lock >= 0)
        lock_release(w->lock);
    return rc;
}

static int sqlfail(mnemo *m, const char *what)
{
    return core_error(m, MNEMO_DB, "%s: %s", what, sqlite3_errmsg(store_db(m->st)));
}

static sqlite3_stmt *prep(mnemo *m, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(m->st), sql, -1, &st, NULL) != SQLITE_OK) {
        sqlfail(m, "prepare");
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Runs SQL with ?1 bound to MID and ?2 (if it has one) to T. */
static int run_mid(mnemo *m, const char *sql, int64_t mid, double t, const char *what)
{
    sqlite3_stmt *st = prep(m, sql);
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_int64(st, 1, mid);
    if (sqlite3_bind_parameter_count(st) > 1)
        sqlite3_bind_double(st, 2, t);
    int rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, what);
    sqlite3_finalize(st);
    return rc;
}

static void bind_time(sqlite3_stmt *st, int i, double t)
{
    if (isnan(t))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, t);
}

static int history(mnemo *m, const char *id, const char *event, const char *old_text,
                   const char *new_text, double at, const char *detail)
{
    sqlite3_stmt *st = prep(m, "INSERT INTO memory_history(memory_id, event, old_text, new_text, "
                               "at, detail) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, event, -1, SQLITE_STATIC);
    if (old_text)
        sqlite3_bind_text(st, 3, old_text, -1, SQLITE_STATIC);
    if (new_text)
        sqlite3_bind_text(st, 4, new_text, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, at);
    if (detail)
        sqlite3_bind_text(st, 6, detail, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "recording history");
    sqlite3_finalize(st);
    return rc;
}

/* The FTS row of memory MID: delete the old text (if any), add the new. */
static int fts_update(mnemo *m, int64_t mid, const char *old_text, const char *new_text)
{
    sqlite3_stmt *st;
    if (old_text) {
        if (!(st = prep(m, "INSERT INTO memories_fts(memories_fts, rowid, text) "
                           "VALUES('delete', ?1, ?2)")))
            return MNEMO_DB;
        sqlite3_bind_int64(st, 1, mid);
        sqlite3_bind_text(st, 2, old_text, -1, SQLITE_STATIC);
        int ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!ok)
            return sqlfail(m, "updating the memory index");
    }
    if (new_text) {
        if (!(st = prep(m, "INSERT INTO memories_fts(rowid, text) VALUES(?1, ?2)")))
            return MNEMO_DB;
        sqlite3_bind_int64(st, 1, mid);
        sqlite3_bind_text(st, 2, new_text, -1, SQLITE_STATIC);
        int ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!ok)
            return sqlfail(m, "updating the memory index");
    }
    return MNEMO_OK;
}

/* Loads the memory ID (any state) as JSON into *out, and its rowid. */
static int load(mnemo *m, const char *id, json_t **out, int64_t *mid)
{
    *out = NULL;
    sqlite3_stmt *st = prep(m, "SELECT " MEM_COLS " FROM memories m WHERE m.id = ?1");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = mem_json(st, 0);
        if (mid)
            *mid = sqlite3_column_int64(st, 0);
        rc = *out ? MNEMO_OK : MNEMO_NOMEM;
    } else if (rc == SQLITE_DONE) {
        rc = core_error(m, MNEMO_NOTFOUND, "no memory with id %s", id);
    } else {
        rc = sqlfail(m, "reading a memory");
    }
    sqlite3_finalize(st);
    return rc;
}

/* The live memory with this text in this scope, if any. */
static int find_duplicate(mnemo *m, const char *hash, const char *user, const char *agent,
                          const char *run, char id[64])
{
    id[0] = 0;
    sqlite3_stmt *st = prep(m, "SELECT id FROM memories WHERE hash = ?1 AND user_id = ?2 AND "
                               "agent_id = ?3 AND run_id = ?4 AND deleted_at IS NULL");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, agent, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, run, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(id, 64, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
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

/* Inserts a validated record; *mid gets its rowid. */
static int insert(mnemo *m, const mem_fields *f, const char *id, double now, int64_t *mid)
{
    mem_row r;
    mem_fields_row(m, f, id, now, &r);
    sqlite3_stmt *st = prep(m, "INSERT INTO memories(id, text, hash, category, importance, type, "
                               "subject, user_id, agent_id, run_id, metadata, triggers, "
                               "created_at, updated_at, expires_at, confirmations, "
                               "last_confirmed_at, deleted_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, "
                               "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r.text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, f->hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r.category, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, r.importance);
    sqlite3_bind_text(st, 6, r.type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, r.subject, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, r.user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, r.agent, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 10, r.run, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, r.metadata, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, r.triggers, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 13, r.created);
    sqlite3_bind_double(st, 14, r.updated);
    bind_time(st, 15, r.expires);
    sqlite3_bind_int64(st, 16, r.confirmations);
    bind_time(st, 17, r.confirmed);
    bind_time(st, 18, r.deleted);
    int rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "storing a memory");
    sqlite3_finalize(st);
    if (rc)
        return rc;
    *mid = sqlite3_last_insert_rowid(store_db(m->st));
    /* Deleted memories stay out of the keyword index. */
    return isnan(f->deleted) ? fts_update(m, *mid, NULL, f->text) : MNEMO_OK;
}

/* Under the write lock (W, to end with write_end): the live memory ID,
 * as JSON in *old and its rowid in *mid. */
static int begin_live(mnemo *m, const char *id, writer *w, json_t **old, int64_t *mid)
{
    int rc = write_begin(m, w);
    if (!rc)
        rc = load(m, id, old, mid);
    if (!rc && !json_is_null(json_object_get(*old, "deleted_at")))
        rc = core_error(m, MNEMO_NOTFOUND, "memory %s is deleted", id);
    return rc;
}

double mem_now(void) { return floor(core_now()); }

int mem_add_parse(mnemo *m, const char *record, json_t **o, mem_fields *f)
{
    *o = NULL;
    memset(f, 0, sizeof *f);
    json_error_t je;
    json_t *j = json_loads(record ? record : "", 0, &je);
    if (!j)
        return core_error(m, MNEMO_INVALID, "memory: invalid JSON: %s", je.text);
    int rc = mem_fields_parse(m, j, 0, f);
    if (!rc && !f->text)
        rc = core_error(m, MNEMO_INVALID, "a memory needs text");
    if (rc) {
        mem_fields_cleanup(f);
        json_decref(j);
        return rc;
    }
    *o = j;
    return MNEMO_OK;
}

int lite_memory_add(mnemo *m, const char *record, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *o;
    mem_fields f;
    int rc = mem_add_parse(m, record, &o, &f);
    if (rc)
        return rc;
    writer w;
    int64_t mid = 0;
    char id[64] = "";
    int dup = 0;
    rc = write_begin(m, &w);
    if (!rc)
        rc = find_duplicate(m, f.hash, f.user ? f.user : cfg_str(m->cfg, CFG_USER_ID),
                            f.agent ? f.agent : cfg_str(m->cfg, CFG_AGENT_ID),
                            f.run ? f.run : "", id);
    double now = mem_now();
    if (!rc && id[0]) {
        dup = 1;
    } else if (!rc) {
        mem_uuid(id);
        if (!(rc = insert(m, &f, id, now, &mid)))
            rc = history(m, id, "ADD", NULL, f.text, now, NULL);
    }
    rc = write_end(m, &w, rc);
    if (!rc && !dup)
        mem_embed(m, mid, f.text);
    json_t *j = NULL;
    if (!rc && !(rc = load(m, id, &j, NULL))) {
        if (dup)
            json_object_set_new(j, "duplicate", json_true());
        rc = dump(j, out);
    }
    mem_fields_cleanup(&f);
    json_decref(o);
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

int lite_memory_update(mnemo *m, const char *id, const char *changes, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *o;
    mem_fields f;
    int rc = mem_update_parse(m, id, changes, &o, &f);
    if (rc)
        return rc;
    writer w = {-1, 0};
    json_t *old = NULL;
    int64_t mid = 0;
    rc = begin_live(m, id, &w, &old, &mid);
    const char *old_text = old ? json_string_value(json_object_get(old, "text")) : NULL;
    if (!rc && f.text && strcmp(f.text, old_text) != 0) {
        /* The new text may duplicate another memory of the scope. */
        char other[64];
        const char *user = f.user ? f.user : json_string_value(json_object_get(old, "user_id"));
        const char *agent = f.agent ? f.agent
                                    : json_string_value(json_object_get(old, "agent_id"));
        const char *run = f.run ? f.run : json_string_value(json_object_get(old, "run_id"));
        if (!(rc = find_duplicate(m, f.hash, user, agent, run, other)) && other[0] &&
            strcmp(other, id) != 0)
            rc = core_error(m, MNEMO_INVALID, "memory %s already says that", other);
    }
    double now = mem_now();
    if (!rc) {
        /* Category changes bring their default importance unless one is given. */
        double imp = f.importance >= 0 ? f.importance
                     : f.category      ? mem_default_importance(f.category)
                                       : -1;
        sqlite3_stmt *st = prep(
            m, "UPDATE memories SET text = coalesce(?2, text), hash = coalesce(?3, hash), "
               "category = coalesce(?4, category), importance = coalesce(?5, importance), "
               "type = coalesce(?6, type), subject = coalesce(?7, subject), "
               "user_id = coalesce(?8, user_id), agent_id = coalesce(?9, agent_id), "
               "run_id = coalesce(?10, run_id), metadata = coalesce(?11, metadata), "
               "triggers = coalesce(?12, triggers), "
               "expires_at = CASE WHEN ?13 THEN ?14 ELSE expires_at END, updated_at = ?15 "
               "WHERE mid = ?1");
        if (!st) {
            rc = MNEMO_DB;
        } else {
            sqlite3_bind_int64(st, 1, mid);
            if (f.text) {
                sqlite3_bind_text(st, 2, f.text, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 3, f.hash, -1, SQLITE_STATIC);
            }
            if (f.category)
                sqlite3_bind_text(st, 4, f.category, -1, SQLITE_STATIC);
            if (imp >= 0)
                sqlite3_bind_double(st, 5, imp);
            const char *sv[] = {f.type, f.subject, f.user, f.agent, f.run, f.metadata,
                                f.triggers};
            for (int i = 0; i < 7; i++)
                if (sv[i])
                    sqlite3_bind_text(st, 6 + i, sv[i], -1, SQLITE_STATIC);
            int set_exp = json_object_get(o, "expires_at") != NULL;
            sqlite3_bind_int(st, 13, set_exp);
            if (set_exp)
                bind_time(st, 14, f.expires);
            sqlite3_bind_double(st, 15, now);
            rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "updating a memory");
            sqlite3_finalize(st);
        }
    }
    if (!rc && f.text && strcmp(f.text, old_text) != 0)
        rc = fts_update(m, mid, old_text, f.text);
    if (!rc) {
        char *detail = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        rc = history(m, id, "UPDATE", old_text, f.text ? f.text : old_text, now, detail);
        free(detail);
    }
    if (!rc && f.text && strcmp(f.text, old_text) != 0) /* its vector is of the old text */
        rc = run_mid(m, "DELETE FROM memory_vectors WHERE mid = ?1", mid, 0, "updating a memory");
    rc = write_end(m, &w, rc);
    if (!rc && f.text && strcmp(f.text, old_text) != 0)
        mem_embed(m, mid, f.text);
    json_decref(old);
    json_t *j = NULL;
    if (!rc && !(rc = load(m, id, &j, NULL)))
        rc = dump(j, out);
    mem_fields_cleanup(&f);
    json_decref(o);
    return rc;
}

int lite_memory_delete(mnemo *m, const char *id)
{
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "delete: no memory id");
    writer w = {-1, 0};
    json_t *old = NULL;
    int64_t mid = 0;
    int rc = begin_live(m, id, &w, &old, &mid);
    double now = mem_now();
    const char *text = old ? json_string_value(json_object_get(old, "text")) : NULL;
    if (!rc)
        rc = run_mid(m, "UPDATE memories SET deleted_at = ?2 WHERE mid = ?1", mid, now,
                     "deleting a memory");
    if (!rc)
        rc = fts_update(m, mid, text, NULL);
    if (!rc)
        rc = history(m, id, "DELETE", text, NULL, now, NULL);
    rc = write_end(m, &w, rc);
    json_decref(old);
    return rc;
}

int lite_memory_purge(mnemo *m, const char *id, size_t *purged)
{
    core_clear(m);
    if (purged)
        *purged = 0;
    writer w = {-1, 0};
    int rc = write_begin(m, &w);
    sqlite3 *db = m->st ? store_db(m->st) : NULL;
    if (!rc) {
        sqlite3_stmt *st = prep(m, "SELECT count(*) FROM memories WHERE deleted_at IS NOT NULL "
                                   "AND (?1 IS NULL OR id = ?1)");
        if (!st) {
            rc = MNEMO_DB;
        } else {
            if (id)
                sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW && purged)
                *purged = (size_t)sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    if (!rc && id && purged && *purged == 0)
        rc = core_error(m, MNEMO_NOTFOUND, "no deleted memory with id %s (delete it first)", id);
    static const char *const sql[] = {
        "DELETE FROM memory_history WHERE memory_id IN (SELECT id FROM memories WHERE "
        "deleted_at IS NOT NULL AND (?1 IS NULL OR id = ?1))",
        "DELETE FROM memory_vectors WHERE mid IN (SELECT mid FROM memories WHERE "
        "deleted_at IS NOT NULL AND (?1 IS NULL OR id = ?1))",
        "DELETE FROM memories WHERE deleted_at IS NOT NULL AND (?1 IS NULL OR id = ?1)"};
    for (size_t i = 0; !rc && i < sizeof sql / sizeof *sql; i++) {
        sqlite3_stmt *st = prep(m, sql[i]);
        if (!st) {
            rc = MNEMO_DB;
            break;
        }
        if (id)
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sqlfail(m, "purging memories");
        sqlite3_finalize(st);
    }
    (void)db;
    return write_end(m, &w, rc);
}

int lite_memory_get(mnemo *m, const char *id, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "get: no memory id");
    int rc = mem_store(m);
    json_t *j = NULL;
    if (!rc && !(rc = load(m, id, &j, NULL)))
        rc = dump(j, out);
    return rc;
}

int lite_memory_confirm(mnemo *m, const char *id, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "confirm: no memory id");
    writer w = {-1, 0};
    json_t *old = NULL;
    int64_t mid = 0;
    int rc = begin_live(m, id, &w, &old, &mid);
    double now = mem_now();
    if (!rc)
        rc = run_mid(m, "UPDATE memories SET confirmations = confirmations + 1, "
                        "last_confirmed_at = ?2 WHERE mid = ?1",
                     mid, now, "confirming a memory");
    if (!rc)
        rc = history(m, id, "CONFIRM", NULL, NULL, now, NULL);
    rc = write_end(m, &w, rc);
    json_decref(old);
    json_t *j = NULL;
    if (!rc && !(rc = load(m, id, &j, NULL)))
        rc = dump(j, out);
    return rc;
}

static json_t *history_json(mnemo *m, const char *id, int *rc)
{
    *rc = MNEMO_OK;
    sqlite3_stmt *st = prep(m, "SELECT event, old_text, new_text, at, detail FROM memory_history "
                               "WHERE memory_id = ?1 ORDER BY hid");
    if (!st) {
        *rc = MNEMO_DB;
        return NULL;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    json_t *a = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(a, mem_history_entry((const char *)sqlite3_column_text(st, 0),
                                                   (const char *)sqlite3_column_text(st, 1),
                                                   (const char *)sqlite3_column_text(st, 2),
                                                   sqlite3_column_double(st, 3),
                                                   (const char *)sqlite3_column_text(st, 4)));
    sqlite3_finalize(st);
    return a;
}

int lite_memory_history(mnemo *m, const char *id, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "history: no memory id");
    int rc = mem_store(m);
    json_t *j = NULL;
    if (!rc && !(rc = load(m, id, &j, NULL))) {
        json_decref(j);
        json_t *h = history_json(m, id, &rc);
        if (!rc)
            rc = dump(h, out);
        else
            json_decref(h);
    }
    return rc;
}

/* ----------------------------------------------------------------------
 * Options, scopes, listing
 * -------------------------------------------------------------------- */

static const char *opt_str(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (!v && b)
        v = json_object_get(o, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int mem_opts_parse(mnemo *m, const char *options, int search, mem_opts *o)
{
    memset(o, 0, sizeof *o);
    mfilter_init(&o->filter);
    o->min_score = -1;
    o->count = 1;
    json_error_t je;
    o->root = options && *options ? json_loads(options, 0, &je) : json_object();
    if (!o->root)
        return core_error(m, MNEMO_INVALID, "options: invalid JSON: %s", je.text);
    if (!json_is_object(o->root))
        return core_error(m, MNEMO_INVALID, "options must be a JSON object");
    json_t *r = o->root;
    o->user = opt_str(r, "user_id", "user");
    if (!o->user)
        o->user = cfg_str(m->cfg, CFG_USER_ID);
    o->agent = opt_str(r, "agent_id", "agent");
    o->run = opt_str(r, "run_id", "run");
    if (o->run && !*o->run)
        o->run = NULL;
    const char *scope = opt_str(r, "scope", NULL);
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
    o->type = opt_str(r, "type", NULL);
    if (!o->type && search)
        o->type = "fact";
    if (o->type && strcmp(o->type, "all") == 0)
        o->type = NULL;
    if (o->type && check_type(m, o->type))
        return MNEMO_INVALID;
    o->subject = opt_str(r, "subject", NULL);
    json_t *cats = json_object_get(r, "categories");
    if (cats && json_is_string(cats)) {
        json_t *a = triggers_json(json_string_value(cats)); /* "a,b" */
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
        o->categories = json_array_size(cats) ? cats : NULL;
    }
    json_t *lim = json_object_get(r, "limit");
    o->limit = search ? 10 : 100;
    if (lim && !json_is_null(lim)) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 1)
            return core_error(m, MNEMO_INVALID, "limit must be a positive whole number");
        o->limit = (int)(json_integer_value(lim) > 100000 ? 100000 : json_integer_value(lim));
    }
    if (search && o->limit > 50)
        o->limit = 50;
    json_t *off = json_object_get(r, "offset");
    if (off && !json_is_null(off)) {
        if (!json_is_integer(off) || json_integer_value(off) < 0)
            return core_error(m, MNEMO_INVALID, "offset must be a whole number");
        o->offset = (int)(json_integer_value(off) > INT_MAX ? INT_MAX : json_integer_value(off));
    }
    o->deleted = json_is_true(json_object_get(r, "deleted"));
    o->count = !json_is_false(json_object_get(r, "count"));
    json_t *ms = json_object_get(r, "min_score");
    if (ms && !json_is_null(ms)) {
        if (!json_is_number(ms) || json_number_value(ms) < 0 || json_number_value(ms) > 1)
            return core_error(m, MNEMO_INVALID, "min_score must be a number from 0 to 1");
        o->min_score = json_number_value(ms);
    }
    json_t *fl = json_object_get(r, "filters");
    char *ftext = NULL;
    if (json_is_string(fl))
        ftext = strdup(json_string_value(fl));
    else if (fl && !json_is_null(fl))
        ftext = json_dumps(fl, JSON_COMPACT);
    char err[512] = "";
    int rc = mfilter_compile(ftext, "m", &o->filter, err, sizeof err);
    o->filters = ftext; /* for mem_where_pg */
    if (rc == MNEMO_NOMEM)
        return core_error(m, rc, "out of memory");
    if (rc)
        return core_error(m, rc, "%s", err);
    return MNEMO_OK;
}

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

/* mem_where for SQLite (NEXT 0) or PostgreSQL (NEXT: the first $n). */
static int where_build(const mem_opts *o, double now, int next, buf *w, mfilter *a)
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
    return where_build(o, now, 0, w, a);
}

int mem_where_pg(const mem_opts *o, double now, int first, buf *w, mfilter *a)
{
    return where_build(o, now, first, w, a);
}

int lite_memory_list(mnemo *m, const char *options, char **out)
{
    *out = NULL;
    core_clear(m);
    mem_opts o;
    int rc = mem_opts_parse(m, options, 0, &o);
    buf w, sql;
    buf_init(&w, 1 << 20);
    buf_init(&sql, 1 << 20);
    mfilter args;
    mfilter_init(&args);
    sqlite3_stmt *st = NULL;
    json_t *list = json_array();
    long long total = 0;
    if (!rc)
        rc = mem_store(m);
    if (!rc)
        rc = mem_where(&o, mem_now(), &w, &args);
    if (!rc) {
        buf_printf(&sql,
                   "SELECT " MEM_COLS " FROM memories m WHERE %s "
                   "ORDER BY m.created_at DESC, m.mid DESC LIMIT %d OFFSET %d",
                   w.data, o.limit, o.offset);
        if (buf_err(&sql))
            rc = MNEMO_NOMEM;
        else if (!(st = prep(m, sql.data)))
            rc = MNEMO_DB;
    }
    if (!rc && (mfilter_bind(&args, st, 1) != SQLITE_OK ||
                mfilter_bind(&o.filter, st, 1 + (int)args.nargs) != SQLITE_OK))
        rc = sqlfail(m, "binding");
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(list, mem_json(st, 0));
    if (!rc && s != SQLITE_DONE)
        rc = sqlfail(m, "listing memories");
    sqlite3_finalize(st);
    st = NULL;
    total = (long long)json_array_size(list) + o.offset;
    if (!rc && o.count && (json_array_size(list) == (size_t)o.limit || o.offset > 0)) {
        /* More than one page, maybe: count them. */
        buf_reset(&sql);
        buf_printf(&sql, "SELECT count(*) FROM memories m WHERE %s", w.data);
        if (buf_err(&sql))
            rc = MNEMO_NOMEM;
        else if (!(st = prep(m, sql.data)))
            rc = MNEMO_DB;
        if (!rc && (mfilter_bind(&args, st, 1) != SQLITE_OK ||
                    mfilter_bind(&o.filter, st, 1 + (int)args.nargs) != SQLITE_OK))
            rc = sqlfail(m, "binding");
        if (!rc && sqlite3_step(st) == SQLITE_ROW)
            total = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (!rc) {
        json_t *j = json_object();
        json_object_set_new(j, "memories", list);
        json_object_set_new(j, "total", json_integer(total));
        list = NULL;
        rc = dump(j, out);
    }
    json_decref(list);
    mfilter_cleanup(&args);
    buf_cleanup(&w);
    buf_cleanup(&sql);
    mem_opts_cleanup(&o);
    return rc;
}

/* ----------------------------------------------------------------------
 * Export and import
 * -------------------------------------------------------------------- */

int lite_memory_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count)
{
    core_clear(m);
    if (count)
        *count = 0;
    int rc = mem_store(m);
    if (rc)
        return rc;
    sqlite3 *db = store_db(m->st);
    /* One snapshot for the whole export. */
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *st = prep(m, "SELECT " MEM_COLS " FROM memories m ORDER BY m.mid");
    if (!st)
        rc = MNEMO_DB;
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *j = mem_json(st, 0);
        json_t *h = history_json(m, json_string_value(json_object_get(j, "id")), &rc);
        json_object_set_new(j, "history", h ? h : json_array());
        char *line = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(j);
        if (!line) {
            rc = MNEMO_NOMEM;
            break;
        }
        size_t n = strlen(line);
        line[n] = '\n';
        if (write(ud, line, n + 1))
            rc = core_error(m, MNEMO_IO, "export: writing failed");
        free(line);
        if (count)
            (*count)++;
    }
    if (!rc && s != SQLITE_DONE)
        rc = sqlfail(m, "exporting memories");
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
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
        const char *kind = ot ? secret_find(ot, strlen(ot)) : NULL;
        if (!kind && nt)
            kind = secret_find(nt, strlen(nt));
        if (kind)
            return core_error(m, MNEMO_INVALID,
                              "import: line %zu: history entry %zu holds text that looks like a "
                              "credential (%s)",
                              line, i, kind);
        json_t *d = json_object_get(e, "detail");
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

typedef struct lite_import {
    size_t nin, nskip;
} lite_import;

static int lite_history_fn(mnemo *m, void *ud, const char *event, const char *old_text,
                           const char *new_text, double at, const char *detail)
{
    const char *id = ud;
    return history(m, id, event, old_text, new_text, at, detail);
}

static int lite_import_line(mnemo *m, void *ud, json_t *o, mem_fields *f, size_t line)
{
    lite_import *li = ud;
    int rc = MNEMO_OK;
    char exist[64] = "";
    json_t *j = NULL;
    if (load(m, f->id, &j, NULL) == MNEMO_OK) {
        json_decref(j);
        snprintf(exist, sizeof exist, "%s", f->id);
    }
    core_clear(m);
    if (!exist[0] && isnan(f->deleted))
        rc = find_duplicate(m, f->hash, f->user ? f->user : cfg_str(m->cfg, CFG_USER_ID),
                            f->agent ? f->agent : cfg_str(m->cfg, CFG_AGENT_ID),
                            f->run ? f->run : "", exist);
    if (!rc && exist[0]) {
        li->nskip++;
    } else if (!rc) {
        int64_t mid;
        if (!(rc = insert(m, f, f->id, mem_now(), &mid)))
            rc = mem_import_history(m, json_object_get(o, "history"), line, lite_history_fn,
                                    (void *)f->id);
        li->nin++;
    }
    return rc;
}

int lite_memory_import(mnemo *m, const char *jsonl, size_t len, size_t *imported,
                        size_t *skipped)
{
    core_clear(m);
    lite_import li = {0, 0};
    writer w = {-1, 0};
    int rc = write_begin(m, &w);
    if (!rc)
        rc = mem_import_each(m, jsonl, len, lite_import_line, &li);
    rc = write_end(m, &w, rc);
    size_t nin = li.nin, nskip = li.nskip;
    if (!rc && nin)
        mem_embed_pending(m); /* best effort; the next sync does the rest */
    if (imported)
        *imported = rc ? 0 : nin;
    if (skipped)
        *skipped = rc ? 0 : nskip;
    return rc;
}

/* ----------------------------------------------------------------------
 * Recovery
 * -------------------------------------------------------------------- */

int lite_memory_recover(mnemo *m, const char *path, char **out)
{
    core_clear(m);
    *out = NULL;
    char real[PATH_MAX];
    if (!realpath(path, real))
        return core_error(m, MNEMO_NOTFOUND, "memory recover: %s: %s", path, strerror(errno));
    if (strcmp(real, m->mem_path) == 0)
        return core_error(m, MNEMO_INVALID,
                          "memory recover: %s is the memory store itself; move it away first "
                          "(mnemo then starts a new store) and recover from the moved file",
                          path);
    writer w = {-1, 0};
    int rc = write_begin(m, &w);
    salvage_report r;
    memset(&r, 0, sizeof r);
    if (!rc) {
        buf err;
        buf_init(&err, 4096);
        int s = salvage_memories(real, store_db(m->st), &r, &err);
        if (s == SQLITE_NOTFOUND)
            rc = core_error(m, MNEMO_NOTFOUND, "memory recover: %s", err.data ? err.data : "");
        else if (s != SQLITE_OK)
            rc = core_error(m, store_code(s), "memory recover: %s", err.data ? err.data : "");
        buf_cleanup(&err);
    }
    rc = write_end(m, &w, rc);
    if (rc)
        return rc;
    if (r.recovered)
        mem_embed_pending(m); /* best effort; the next sync does the rest */
    json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "file", real, "recovered",
                          (json_int_t)r.recovered, "present", (json_int_t)r.present, "repaired",
                          (json_int_t)r.repaired, "damagedPlaces",
                          (json_int_t)r.unreadable_reads, "history", (json_int_t)r.history,
                          "historyIncomplete", (json_int_t)r.history_lost);
    if (!j || mem_dump(j, out))
        return core_error(m, MNEMO_NOMEM, "out of memory");
    return MNEMO_OK;
}
