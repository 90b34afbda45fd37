/*
 * mfilter.c - compiling the memory filter language to SQL (see mfilter.h).
 *
 * The compiler walks the parsed JSON once and appends a boolean SQL
 * expression to f->sql. User strings never enter the SQL text: every value
 * and every metadata path is a '?' parameter recorded in f->args, in order.
 *
 * Every leaf expression is two-valued (0 or 1, never NULL), so NOT is the
 * exact complement of what it negates: a memory without a metadata key
 * matches {"NOT": [{"key": ...}]}, "ne" and "nin", as a user expects.
 *
 * About 1,000 lines in one file on purpose: the checks and the SQL of
 * each operator are one recursive walk, and read best side by side.
 */
#include "text/mfilter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <utf8proc.h>

#include "mnemo.h"
#include "util/time.h"

#define MAX_DEPTH 32
/* Conditions in one filter: SQLite parses an N-way OR as an expression N
 * deep and refuses more than 1000 levels; people and agents write a few. */
#define MAX_NODES 500
#define SQL_MAX ((size_t)1 << 20)
#define DAY 86400.0
#define OPERATORS "eq, ne, gt, gte, lt, lte, in, nin, contains, icontains"
/* The alias of json_each() inside the array "contains" subquery. */
#define JE "mfilter_je"

void mfilter_init(mfilter *f)
{
    memset(f, 0, sizeof *f);
    buf_init(&f->sql, SQL_MAX);
}

void mfilter_cleanup(mfilter *f)
{
    for (size_t i = 0; i < f->nargs; i++)
        free(f->args[i].text);
    free(f->args);
    buf_cleanup(&f->sql);
    memset(f, 0, sizeof *f);
}

/* ----------------------------------------------------------------------
 * Unicode case folding (icontains and mnemo_fold)
 * -------------------------------------------------------------------- */

/* Folds S (N bytes) into a malloc'd NUL-terminated string. MNEMO_INVALID
 * for invalid UTF-8, MNEMO_NOMEM. */
static int fold(const char *s, size_t n, char **out, size_t *outlen)
{
    *out = NULL;
    if (n == 0) {
        *out = calloc(1, 1);
        *outlen = 0;
        return *out ? MNEMO_OK : MNEMO_NOMEM;
    }
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t len =
        utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                     UTF8PROC_CASEFOLD | UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (len < 0)
        return len == UTF8PROC_ERROR_NOMEM ? MNEMO_NOMEM : MNEMO_INVALID;
    *out = (char *)dst;
    *outlen = (size_t)len;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Fields
 * -------------------------------------------------------------------- */

enum { K_TEXT, K_NUM, K_TIME, K_META };

typedef struct field {
    const char *name;
    const char *column; /* NULL: a metadata key */
    int kind;
    int nullable;
} field;

static const field fields[] = {
    {"created_at", "created_at", K_TIME, 0},
    {"updated_at", "updated_at", K_TIME, 0},
    {"expires_at", "expires_at", K_TIME, 1},
    {"last_confirmed_at", "last_confirmed_at", K_TIME, 1},
    {"category", "category", K_TEXT, 0},
    {"categories", "category", K_TEXT, 0},
    {"type", "type", K_TEXT, 0},
    {"subject", "subject", K_TEXT, 0},
    {"text", "text", K_TEXT, 0},
    {"id", "id", K_TEXT, 0},
    {"user_id", "user_id", K_TEXT, 0},
    {"agent_id", "agent_id", K_TEXT, 0},
    {"run_id", "run_id", K_TEXT, 0},
    {"importance", "importance", K_NUM, 0},
    {"confirmations", "confirmations", K_NUM, 0},
};

/* What one key of a filter object compares: a column or a metadata path. */
typedef struct target {
    const field *fd;
    const char *key;   /* as written, for messages */
    char *jpath;       /* metadata: $."key", owned */
} target;

/* A validated operand. */
enum { V_NULL, V_TEXT, V_NUM };

typedef struct value {
    int type;
    const char *text; /* V_TEXT: borrowed from the JSON */
    size_t len;
    double num;       /* V_NUM; times: the start */
    int day;          /* times: a date-only value, the day [num, num + DAY) */
} value;

/* ----------------------------------------------------------------------
 * Compiler state, errors and output
 * -------------------------------------------------------------------- */

typedef struct ctx {
    mfilter *f;
    const char *alias; /* "" for none */
    int pg;            /* 1: PostgreSQL ($n placeholders, JSONB) */
    int next;          /* PostgreSQL: the number of the next placeholder */
    char *err;
    size_t errlen;
    int nomem;         /* sticky: an argument could not be stored */
    char path[512];    /* where we are, for messages: filters.AND[1].created_at */
    size_t plen;
    int nodes;         /* conditions and logical members so far (MAX_NODES) */
} ctx;

/* Writes "PATH: message" into the error buffer, never splitting a UTF-8
 * sequence when it has to truncate. Returns MNEMO_INVALID. */
static int fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ctx *c, const char *fmt, ...)
{
    if (!c->err || c->errlen == 0)
        return MNEMO_INVALID;
    int n = snprintf(c->err, c->errlen, "%s: ", c->path);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    size_t len = strlen(c->err);
    if (len == c->errlen - 1) {
        /* Possibly truncated: drop a trailing incomplete UTF-8 sequence. */
        size_t i = len;
        while (i > 0 && ((unsigned char)c->err[i - 1] & 0xc0) == 0x80)
            i--;
        if (i > 0 && (unsigned char)c->err[i - 1] >= 0xc0) {
            unsigned char lead = (unsigned char)c->err[i - 1];
            size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
            if (len - (i - 1) < need)
                c->err[i - 1] = 0;
        }
    }
    return MNEMO_INVALID;
}

/* Appends to the path; returns the old length for path_pop. Control bytes
 * of user keys are shown as '?'. */
static size_t path_push(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(ctx *c, const char *fmt, ...)
{
    size_t old = c->plen;
    if (old < sizeof c->path - 1) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->path + old, sizeof c->path - old, fmt, ap);
        va_end(ap);
    }
    size_t len = strlen(c->path);
    for (size_t i = old; i < len; i++)
        if ((unsigned char)c->path[i] < 0x20 || c->path[i] == 0x7f)
            c->path[i] = '?';
    c->plen = len;
    return old;
}

static void path_pop(ctx *c, size_t old)
{
    c->plen = old;
    c->path[old] = 0;
}

static void put(ctx *c, const char *s) { buf_puts(&c->f->sql, s); }

static void push_arg(ctx *c, mfilter_arg arg)
{
    mfilter *f = c->f;
    if (f->nargs == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        mfilter_arg *p = realloc(f->args, cap * sizeof *p);
        if (!p) {
            free(arg.text);
            c->nomem = 1;
            return;
        }
        f->args = p;
        f->cap = cap;
    }
    f->args[f->nargs++] = arg;
}

static void push_text(ctx *c, const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        c->nomem = 1;
        return;
    }
    memcpy(copy, s, len);
    copy[len] = 0;
    push_arg(c, (mfilter_arg){1, copy, 0});
}

static void push_num(ctx *c, double num) { push_arg(c, (mfilter_arg){0, NULL, num}); }

/* Appends the placeholder of the next argument: '?', or on PostgreSQL $n
 * with CAST (parameters travel as text). */
static void put_ph(ctx *c, const char *cast)
{
    if (c->pg)
        buf_printf(&c->f->sql, "$%d%s", c->next++, cast);
    else
        put(c, "?");
}

/* Appends '?' bound to V (never V_NULL). */
static void put_value(ctx *c, const value *v)
{
    put_ph(c, v->type == V_TEXT ? "::text" : "::float8");
    if (v->type == V_TEXT)
        push_text(c, v->text, v->len);
    else
        push_num(c, v->num);
}

static void put_time(ctx *c, double t)
{
    put_ph(c, "::float8");
    push_num(c, t);
}

static void put_alias(ctx *c)
{
    if (*c->alias)
        buf_printf(&c->f->sql, "%s.", c->alias);
}

/* PostgreSQL: binds the metadata key of T (the key itself, a parameter
 * like any value) and returns its placeholder number, for use in
 * put_jkey. */
static int key_param(ctx *c, const target *t)
{
    int n = c->next++;
    push_text(c, t->key, strlen(t->key));
    return n;
}

/* PostgreSQL: "<alias>.COLUMN -> $N::text", the JSONB value of the key. */
static void put_jkey(ctx *c, const char *column, int n, const char *op)
{
    put_alias(c);
    buf_printf(&c->f->sql, "%s %s $%d::text", column, op, n);
}

/* PostgreSQL: the key's value as SQLite's json_extract gives it to a
 * comparison with a value of type VIEW: a string as text, a number or
 * boolean as a number (true 1, false 0), anything else NULL. Casts only
 * values of the right JSON type, so nothing can raise. */
static void put_jview(ctx *c, const target *t, int view)
{
    int k = key_param(c, t);
    if (view == V_TEXT) {
        put(c, "(CASE WHEN jsonb_typeof(");
        put_jkey(c, "metadata", k, "->");
        put(c, ") = 'string' THEN ");
        put_jkey(c, "metadata", k, "->>");
        put(c, " END)");
        return;
    }
    put(c, "(CASE jsonb_typeof(");
    put_jkey(c, "metadata", k, "->");
    put(c, ") WHEN 'number' THEN (");
    put_jkey(c, "metadata", k, "->>");
    put(c, ")::float8 WHEN 'boolean' THEN CASE WHEN ");
    put_jkey(c, "metadata", k, "->");
    put(c, " = 'true'::jsonb THEN 1.0 ELSE 0.0 END END)");
}

/* PostgreSQL: "coalesce(jsonb_typeof(<key>), 'null')": JSON null and a
 * missing key alike, as json_extract() IS NULL. */
static void put_jtype(ctx *c, const target *t)
{
    put(c, "coalesce(jsonb_typeof(");
    put_jkey(c, "metadata", key_param(c, t), "->");
    put(c, "), 'null')");
}

/* "true"/"false" on PostgreSQL, "1"/"0" on SQLite. */
static void put_bool(ctx *c, int v) { put(c, c->pg ? (v ? "true" : "false") : (v ? "1" : "0")); }

/* Appends the compared expression: a column or json_extract of the key
 * (on PostgreSQL the key's value seen as VIEW, V_TEXT or V_NUM). */
static void put_xv(ctx *c, const target *t, int view)
{
    buf *b = &c->f->sql;
    if (c->pg && !t->fd) {
        put_jview(c, t, view);
        return;
    }
    if (t->fd) {
        if (*c->alias)
            buf_printf(b, "%s.", c->alias);
        put(c, t->fd->column);
        return;
    }
    put(c, "json_extract(");
    if (*c->alias)
        buf_printf(b, "%s.", c->alias);
    put(c, "metadata, ?)");
    push_text(c, t->jpath, strlen(t->jpath));
}

static void put_x(ctx *c, const target *t) { put_xv(c, t, V_NUM); }

/* Appends "<alias>.metadata, ?" for json_type and json_each. */
static void put_meta_args(ctx *c, const target *t)
{
    if (*c->alias)
        buf_printf(&c->f->sql, "%s.", c->alias);
    put(c, "metadata, ?");
    push_text(c, t->jpath, strlen(t->jpath));
}

static int kind_of(const target *t) { return t->fd ? t->fd->kind : K_META; }
static int nullable(const target *t) { return t->fd ? t->fd->nullable : 1; }

/* ----------------------------------------------------------------------
 * Operands
 * -------------------------------------------------------------------- */

/* S (N bytes) in double quotes, cut after 48 bytes on a UTF-8 boundary. */
static const char *quote(const char *s, size_t n, char *out, size_t outlen)
{
    size_t cut = n;
    if (cut > 48) {
        cut = 48;
        while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
            cut--;
    }
    snprintf(out, outlen, "\"%.*s\"%s", (int)cut, s, cut < n ? "..." : "");
    return out;
}

/* A short description of a JSON value for messages. */
static const char *describe(const json_t *v, char *out, size_t outlen)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return quote(json_string_value(v), json_string_length(v), out, outlen);
    case JSON_INTEGER:
        snprintf(out, outlen, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return out;
    case JSON_REAL:
        snprintf(out, outlen, "%g", json_real_value(v));
        return out;
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
        return "null";
    case JSON_ARRAY:
        return "an array";
    default:
        return "an object";
    }
}

static int is_scalar(const json_t *v) { return !json_is_array(v) && !json_is_object(v); }

/* Checks J against the target's kind and converts it. NULL_OK: null is an
 * operand (eq, ne, in, nin). */
static int get_value(ctx *c, const target *t, const json_t *j, int null_ok, value *v)
{
    char tmp[80];
    memset(v, 0, sizeof *v);
    if (json_is_null(j)) {
        if (!null_ok)
            return fail(c, "cannot compare with null (use eq or ne null)");
        v->type = V_NULL;
        return MNEMO_OK;
    }
    int kind = kind_of(t);
    if (kind == K_TEXT || (kind == K_META && json_is_string(j))) {
        if (!json_is_string(j))
            return fail(c, "expected a string, got %s", describe(j, tmp, sizeof tmp));
        v->type = V_TEXT;
        v->text = json_string_value(j);
        v->len = json_string_length(j);
        return MNEMO_OK;
    }
    if (kind == K_TIME) {
        v->type = V_NUM;
        if (json_is_number(j)) {
            v->num = json_number_value(j);
            return MNEMO_OK;
        }
        if (!json_is_string(j))
            return fail(c, "expected a date (YYYY-MM-DD), an ISO 8601 time or Unix seconds, "
                           "got %s",
                        describe(j, tmp, sizeof tmp));
        const char *s = json_string_value(j);
        if (strlen(s) != json_string_length(j) || time_parse_iso(s, &v->num) != 0)
            return fail(c, "%s is not a date (YYYY-MM-DD or ISO 8601)",
                        describe(j, tmp, sizeof tmp));
        /* No time of day: the whole day (UTC, or in the zone given). */
        v->day = s[10] != 'T' && s[10] != 't' && s[10] != ' ';
        return MNEMO_OK;
    }
    /* K_NUM, or metadata that is not a string */
    v->type = V_NUM;
    if (json_is_number(j))
        v->num = json_number_value(j);
    else if (json_is_boolean(j))
        v->num = json_is_true(j) ? 1 : 0;
    else
        return fail(c, "expected a number, got %s", describe(j, tmp, sizeof tmp));
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Leaves
 * -------------------------------------------------------------------- */

/* eq, two-valued. */
static void put_eq(ctx *c, const target *t, const value *v)
{
    put(c, "(");
    if (c->pg && !t->fd && v->type == V_NULL) {
        put_jtype(c, t);
        put(c, " = 'null')");
        return;
    }
    if (c->pg && v->type != V_NULL && !v->day) {
        put_xv(c, t, v->type);
        put(c, nullable(t) ? " IS NOT DISTINCT FROM " : " = ");
        put_value(c, v);
        put(c, ")");
        return;
    }
    put_x(c, t);
    if (v->type == V_NULL) {
        put(c, " IS NULL)");
    } else if (v->day) {
        /* X IS NOT NULL turns "NULL AND ..." into 0 */
        if (nullable(t)) {
            put(c, " IS NOT NULL AND ");
            put_x(c, t);
        }
        put(c, " >= ");
        put_time(c, v->num);
        put(c, " AND ");
        put_x(c, t);
        put(c, " < ");
        put_time(c, v->num + DAY);
        put(c, ")");
    } else {
        put(c, nullable(t) ? " IS " : " = ");
        put_value(c, v);
        put(c, ")");
    }
}

static void put_ne(ctx *c, const target *t, const value *v)
{
    if (c->pg && v->type == V_NULL && !t->fd) {
        put(c, "(");
        put_jtype(c, t);
        put(c, " <> 'null')");
    } else if (c->pg && v->type != V_NULL && !v->day) {
        put(c, "(");
        put_xv(c, t, v->type);
        put(c, nullable(t) ? " IS DISTINCT FROM " : " <> ");
        put_value(c, v);
        put(c, ")");
    } else if (v->type == V_NULL) {
        put(c, "(");
        put_x(c, t);
        put(c, " IS NOT NULL)");
    } else if (v->day) {
        put(c, "NOT ");
        put_eq(c, t, v);
    } else {
        put(c, "(");
        put_x(c, t);
        put(c, nullable(t) ? " IS NOT " : " <> ");
        put_value(c, v);
        put(c, ")");
    }
}

/* gt gte lt lte. OP is the SQL operator. */
static void put_order(ctx *c, const target *t, const char *op, const value *v)
{
    value w = *v;
    if (v->day) {
        /* date-only: gt D = from the next day on, lte D = before the next day */
        w.day = 0;
        if (!strcmp(op, ">")) {
            op = ">=";
            w.num += DAY;
        } else if (!strcmp(op, "<=")) {
            op = "<";
            w.num += DAY;
        }
    }
    /* Text compares byte by byte, as SQLite's BINARY collation does. */
    const char *collate = c->pg && w.type == V_TEXT ? " COLLATE \"C\"" : "";
    if (!t->fd && c->pg) {
        /* The view is NULL for a value of another type: never matches. */
        put(c, "coalesce(");
        put_xv(c, t, w.type);
        buf_printf(&c->f->sql, "%s %s ", collate, op);
        put_value(c, &w);
        put(c, ", false)");
        return;
    }
    if (!t->fd) {
        /* Metadata compares only with values of the operand's type: a number
         * never matches {"gt": "m"}, nor a string {"gt": 2}. */
        put(c, "coalesce(json_type(");
        put_meta_args(c, t);
        put(c, w.type == V_TEXT ? ") = 'text'" : ") IN ('integer', 'real', 'true', 'false')");
        put(c, " AND ");
        put_x(c, t);
        buf_printf(&c->f->sql, " %s ", op);
        put_value(c, &w);
        put(c, ", 0)");
        return;
    }
    put(c, "(");
    if (t->fd->nullable) {
        put_x(c, t);
        put(c, " IS NOT NULL AND ");
    }
    put_x(c, t);
    buf_printf(&c->f->sql, "%s %s ", collate, op);
    put_value(c, &w);
    put(c, ")");
}

/* PostgreSQL contains / icontains of V (folded already for icontains).
 * Folded copies are stored next to the text and the metadata (text_fold,
 * metadata_fold: every string value folded, mfilter_fold_json), so the
 * comparison is the same as SQLite's mnemo_fold(); other columns, short
 * identifiers, fold with lower(). strpos and @> take the value literally:
 * no wildcard can sneak in. */
static void put_contains_pg(ctx *c, const target *t, const value *v, int fold_case)
{
    if (t->fd) {
        put(c, "(strpos(");
        if (fold_case && !strcmp(t->fd->column, "text")) {
            put_alias(c);
            put(c, "text_fold");
        } else {
            put(c, fold_case ? "lower(" : "");
            put_x(c, t);
            put(c, fold_case ? ")" : "");
        }
        put(c, ", ");
        put_value(c, v);
        put(c, ") > 0)");
        return;
    }
    const char *col = fold_case ? "metadata_fold" : "metadata";
    int k = key_param(c, t);
    put(c, "(CASE jsonb_typeof(");
    put_jkey(c, col, k, "->");
    put(c, ") WHEN 'string' THEN strpos(");
    put_jkey(c, col, k, "->>");
    put(c, ", ");
    put_value(c, v);
    put(c, ") > 0 WHEN 'array' THEN ");
    put_jkey(c, col, k, "->");
    put(c, " @> jsonb_build_array(");
    put_value(c, v);
    put(c, ") ELSE false END)");
}

/* contains / icontains: a substring of a string; for a metadata array, an
 * element equal to the string. FOLD: Unicode case-insensitive. */
static int put_contains(ctx *c, const target *t, const json_t *j, int fold_case)
{
    char tmp[80];
    if (kind_of(t) != K_TEXT && kind_of(t) != K_META)
        return fail(c, "applies to text fields and metadata keys, not to %s", t->key);
    if (!json_is_string(j))
        return fail(c, "expected a string, got %s", describe(j, tmp, sizeof tmp));
    value v = {V_TEXT, json_string_value(j), json_string_length(j), 0, 0};
    char *folded = NULL;
    if (fold_case) {
        int rc = fold(v.text, v.len, &folded, &v.len);
        if (rc == MNEMO_NOMEM) {
            c->nomem = 1;
            return MNEMO_NOMEM;
        }
        if (rc != MNEMO_OK) /* jansson only yields valid UTF-8 */
            return fail(c, "invalid UTF-8");
        v.text = folded;
    }
    const char *fold_open = fold_case ? "mnemo_fold(" : "";
    const char *fold_close = fold_case ? ")" : "";
    if (c->pg) {
        put_contains_pg(c, t, &v, fold_case);
        free(folded);
        return MNEMO_OK;
    }
    if (t->fd) {
        buf_printf(&c->f->sql, "(instr(%s", fold_open);
        put_x(c, t);
        buf_printf(&c->f->sql, "%s, ", fold_close);
        put_value(c, &v);
        put(c, ") > 0)");
    } else {
        put(c, "(CASE json_type(");
        put_meta_args(c, t);
        buf_printf(&c->f->sql, ") WHEN 'text' THEN instr(%s", fold_open);
        put_x(c, t);
        buf_printf(&c->f->sql, "%s, ", fold_close);
        put_value(c, &v);
        put(c, ") > 0 WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(");
        put_meta_args(c, t);
        buf_printf(&c->f->sql, ") AS " JE " WHERE " JE ".type = 'text' AND %s" JE ".value%s = ",
                   fold_open, fold_close);
        put_value(c, &v);
        put(c, ") ELSE 0 END)");
    }
    free(folded);
    return MNEMO_OK;
}

/* in / nin: ARR is an array of operands, each compared like eq. */
static int put_in(ctx *c, const target *t, const json_t *arr, int negate)
{
    char tmp[80];
    if (!json_is_array(arr))
        return fail(c, "expected an array of values, got %s", describe(arr, tmp, sizeof tmp));
    size_t n = json_array_size(arr);
    if (n == 0) {
        put_bool(c, negate);
        return MNEMO_OK;
    }
    put(c, negate ? "NOT (" : "(");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i);
        size_t old = path_push(c, "[%zu]", i);
        value v;
        int rc = is_scalar(e) ? get_value(c, t, e, 1, &v)
                              : fail(c, "expected a string, number, true, false or null, got %s",
                                     describe(e, tmp, sizeof tmp));
        if (rc)
            return rc;
        path_pop(c, old);
        if (i)
            put(c, " OR ");
        put_eq(c, t, &v);
    }
    put(c, ")");
    return MNEMO_OK;
}

/* One operator of a field: {"gte": ...}. */
static int put_op(ctx *c, const target *t, const char *op, const json_t *j)
{
    static const struct {
        const char *name, *sql;
    } order[] = {{"gt", ">"}, {"gte", ">="}, {"lt", "<"}, {"lte", "<="}};
    char tmp[80];
    value v;
    int rc;
    if (!strcmp(op, "in") || !strcmp(op, "nin"))
        return put_in(c, t, j, op[0] == 'n');
    if (!strcmp(op, "contains") || !strcmp(op, "icontains"))
        return put_contains(c, t, j, op[0] == 'i');
    int eq = !strcmp(op, "eq"), ne = !strcmp(op, "ne");
    const char *sqlop = NULL;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (!strcmp(op, order[i].name))
            sqlop = order[i].sql;
    if (!is_scalar(j))
        return fail(c, "expected a string, number, true, false or null, got %s",
                    describe(j, tmp, sizeof tmp));
    if ((rc = get_value(c, t, j, eq || ne, &v)))
        return rc;
    if (eq)
        put_eq(c, t, &v);
    else if (ne)
        put_ne(c, t, &v);
    else
        put_order(c, t, sqlop, &v);
    return MNEMO_OK;
}

static int known_op(const char *op)
{
    static const char *const ops[] = {"eq", "ne", "gt",  "gte",      "lt",
                                      "lte", "in", "nin", "contains", "icontains"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

/* A field key with its value: a scalar (eq), an array (in) or operators. */
static int put_field(ctx *c, const target *t, const json_t *val)
{
    if (json_is_array(val))
        return put_in(c, t, val, 0);
    if (!json_is_object(val)) {
        value v;
        int rc = get_value(c, t, val, 1, &v);
        if (rc)
            return rc;
        put_eq(c, t, &v);
        return MNEMO_OK;
    }
    size_t n = json_object_size(val);
    if (n == 0)
        return fail(c, "expected a value, an array or an object of operators (" OPERATORS ")");
    const char *op;
    json_t *j;
    json_object_foreach((json_t *)val, op, j) {
        if (!known_op(op)) {
            char tmp[80];
            return fail(c, "unknown operator %s (expected " OPERATORS ")",
                        quote(op, strlen(op), tmp, sizeof tmp));
        }
    }
    int first = 1;
    if (n > 1)
        put(c, "(");
    json_object_foreach((json_t *)val, op, j) {
        if (!first)
            put(c, " AND ");
        first = 0;
        size_t old = path_push(c, ".%s", op);
        int rc = put_op(c, t, op, j);
        if (rc)
            return rc;
        path_pop(c, old);
    }
    if (n > 1)
        put(c, ")");
    return MNEMO_OK;
}

/* A metadata key becomes the JSON path $."key", always a bound parameter. */
static int meta_path(ctx *c, const char *key, char **out)
{
    *out = NULL;
    if (!*key)
        return fail(c, "empty metadata key");
    for (const char *p = key; *p; p++)
        if (*p == '"' || (unsigned char)*p < 0x20 || *p == 0x7f)
            return fail(c, "a metadata key may not contain '\"' or control characters");
    /* Inside the quoted label SQLite reads a backslash as an escape. */
    size_t n = strlen(key), nb = 0;
    for (const char *p = key; *p; p++)
        nb += *p == '\\';
    char *path = malloc(n + nb + 5);
    if (!path) {
        c->nomem = 1;
        return MNEMO_NOMEM;
    }
    size_t k = 0;
    memcpy(path, "$.\"", 3);
    k = 3;
    for (const char *p = key; *p; p++) {
        if (*p == '\\')
            path[k++] = '\\';
        path[k++] = *p;
    }
    memcpy(path + k, "\"", 2);
    *out = path;
    return MNEMO_OK;
}

static int put_object(ctx *c, const json_t *obj, int depth);

/* AND / OR / NOT with their array of filter objects. */
static int put_logical(ctx *c, const char *op, const json_t *arr, int depth)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail(c, json_is_array(arr) ? "expected a non-empty array of filter objects"
                                          : "expected an array of filter objects");
    const char *join = !strcmp(op, "OR") ? " OR " : " AND ";
    put(c, !strcmp(op, "NOT") ? "NOT (" : "(");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        size_t old = path_push(c, "[%zu]", i);
        const json_t *e = json_array_get(arr, i);
        if (!json_is_object(e)) {
            char tmp[80];
            return fail(c, "expected a filter object, got %s", describe(e, tmp, sizeof tmp));
        }
        if (++c->nodes > MAX_NODES)
            return fail(c, "too many conditions (at most %d in one filter)", MAX_NODES);
        if (i)
            put(c, join);
        int rc = put_object(c, e, depth + 1);
        if (rc)
            return rc;
        path_pop(c, old);
    }
    put(c, ")");
    return MNEMO_OK;
}

/* A filter object: its keys ANDed; "1" when empty. */
static int put_object(ctx *c, const json_t *obj, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(c, "filters nested too deeply (more than %d levels)", MAX_DEPTH);
    size_t n = json_object_size(obj);
    if (n == 0) {
        put_bool(c, 1);
        return MNEMO_OK;
    }
    if (n > 1)
        put(c, "(");
    int first = 1;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        if (++c->nodes > MAX_NODES)
            return fail(c, "too many conditions (at most %d in one filter)", MAX_NODES);
        if (!first)
            put(c, " AND ");
        first = 0;
        size_t old = path_push(c, ".%s", key);
        int rc;
        if (!strcmp(key, "AND") || !strcmp(key, "OR") || !strcmp(key, "NOT")) {
            rc = put_logical(c, key, val, depth);
        } else {
            target t = {NULL, key, NULL};
            for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
                if (!strcmp(key, fields[i].name))
                    t.fd = &fields[i];
            rc = t.fd ? MNEMO_OK : meta_path(c, key, &t.jpath);
            if (rc == MNEMO_OK)
                rc = put_field(c, &t, val);
            free(t.jpath);
        }
        if (rc)
            return rc;
        path_pop(c, old);
    }
    if (n > 1)
        put(c, ")");
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Entry points
 * -------------------------------------------------------------------- */

static int valid_alias(const char *alias)
{
    if (!strcmp(alias, JE))
        return 0;
    for (const char *p = alias; *p; p++) {
        int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        if (!alpha && !(p > alias && *p >= '0' && *p <= '9'))
            return 0;
    }
    return 1;
}

static int compile(const char *json, const char *alias, int pg_first, mfilter *f, char *err,
                   size_t errlen)
{
    ctx c = {f, alias ? alias : "", pg_first > 0, pg_first, err, errlen, 0, "filters", 7, 0};
    size_t sql0 = f->sql.len, args0 = f->nargs;
    json_t *root = NULL;
    int rc = buf_err(&f->sql);
    if (err && errlen)
        err[0] = 0;
    if (rc)
        return rc;
    if (!valid_alias(c.alias)) {
        rc = fail(&c, "invalid table alias");
        goto done;
    }
    const char *p = json ? json : "";
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!*p) {
        rc = buf_puts(&f->sql, c.pg ? "true" : "1");
        goto done;
    }
    json_error_t jerr;
    root = json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        rc = json_error_code(&jerr) == json_error_out_of_memory
                 ? MNEMO_NOMEM
                 : fail(&c, "invalid JSON at line %d column %d: %s", jerr.line, jerr.column,
                        jerr.text);
        goto done;
    }
    if (!json_is_object(root)) {
        char tmp[80];
        rc = fail(&c, "expected a JSON object, got %s", describe(root, tmp, sizeof tmp));
        goto done;
    }
    rc = put_object(&c, root, 1);
    if (rc == MNEMO_OK && !c.nomem && buf_err(&f->sql) == MNEMO_INVALID) {
        path_pop(&c, 7);
        rc = fail(&c, "the filter is too large");
    } else if (rc == MNEMO_OK && (c.nomem || buf_err(&f->sql))) {
        rc = MNEMO_NOMEM;
    }
done:
    if (rc != MNEMO_OK) {
        /* Leave F as it was. */
        for (size_t i = args0; i < f->nargs; i++)
            free(f->args[i].text);
        f->nargs = args0;
        f->sql.err = 0;
        f->sql.len = sql0;
        if (f->sql.data)
            f->sql.data[sql0] = 0;
        if (rc == MNEMO_NOMEM && err && errlen)
            snprintf(err, errlen, "filters: out of memory");
    }
    json_decref(root);
    return rc;
}

int mfilter_compile(const char *json, const char *alias, mfilter *f, char *err, size_t errlen)
{
    return compile(json, alias, 0, f, err, errlen);
}

int mfilter_compile_pg(const char *json, const char *alias, int first, mfilter *f, char *err,
                       size_t errlen)
{
    if (first < 1)
        return MNEMO_MISUSE;
    return compile(json, alias, first, f, err, errlen);
}

const char *mfilter_arg_text(const mfilter_arg *a, char tmp[32])
{
    if (a->is_text)
        return a->text;
    snprintf(tmp, 32, "%.17g", a->num);
    return tmp;
}

int mfilter_fold(const char *s, size_t n, char **out, size_t *outlen)
{
    return fold(s, n, out, outlen);
}

json_t *mfilter_fold_json(const json_t *j)
{
    if (json_is_string(j)) {
        char *f;
        size_t n;
        if (fold(json_string_value(j), json_string_length(j), &f, &n))
            return json_copy((json_t *)j);
        json_t *r = json_stringn(f, n);
        free(f);
        return r;
    }
    if (json_is_array(j)) {
        json_t *a = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) json_array_append_new(a, mfilter_fold_json(v));
        return a;
    }
    if (json_is_object(j)) {
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) json_object_set_new(o, k, mfilter_fold_json(v));
        return o;
    }
    return json_copy((json_t *)j);
}
