/*
 * lite_filter.c - the filter language on SQLite: binding a compiled
 * filter's arguments, and mnemo_fold(text), the Unicode case folding
 * icontains compiles to.
 */
#include "store/sqlite/lite_filter.h"

#include <stdlib.h>

/* ASCII text folds to its lower case: NFC and case folding change nothing
 * else in it. Returns 0 when S[0..N) is not all ASCII; else sets the
 * result (the argument itself when it is TEXT without a capital). A scan with
 * icontains folds every row's text, and most text is ASCII: this is about
 * ten times faster than utf8proc's decomposition and composition. */
static int fold_ascii(sqlite3_context *ctx, sqlite3_value *arg, int text, const char *s,
                      size_t n)
{
    size_t upper = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80)
            return 0;
        upper += c >= 'A' && c <= 'Z';
    }
    if (!upper && text) {
        sqlite3_result_value(ctx, arg);
        return 1;
    }
    char *out = sqlite3_malloc64(n);
    if (!out) {
        sqlite3_result_error_nomem(ctx);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + ('a' - 'A')) : s[i];
    sqlite3_result_text64(ctx, out, n, sqlite3_free, SQLITE_UTF8);
    return 1;
}

/* mnemo_fold(text): NULL in, NULL out; invalid UTF-8 comes back unchanged. */
static void fold_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    int type = sqlite3_value_type(argv[0]);
    if (type == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    size_t n = (size_t)sqlite3_value_bytes(argv[0]);
    if (!s || n == 0) {
        if (s)
            sqlite3_result_value(ctx, argv[0]);
        else
            sqlite3_result_error_nomem(ctx);
        return;
    }
    if (fold_ascii(ctx, argv[0], type == SQLITE_TEXT, s, n))
        return;
    char *out;
    size_t len;
    int rc = mfilter_fold(s, n, &out, &len);
    if (rc == MNEMO_NOMEM)
        sqlite3_result_error_nomem(ctx);
    else if (rc != MNEMO_OK)
        sqlite3_result_value(ctx, argv[0]);
    else
        sqlite3_result_text64(ctx, out, len, free, SQLITE_UTF8);
}

int lite_filter_register(sqlite3 *db)
{
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
#ifdef SQLITE_INNOCUOUS
    flags |= SQLITE_INNOCUOUS;
#endif
    return sqlite3_create_function_v2(db, "mnemo_fold", 1, flags, NULL, fold_fn, NULL, NULL,
                                      NULL);
}

int lite_filter_bind(const mfilter *f, sqlite3_stmt *st, int first)
{
    if (first < 1 || f->nargs > (size_t)(0x7fffffff - first))
        return SQLITE_RANGE;
    for (size_t i = 0; i < f->nargs; i++) {
        const mfilter_arg *a = &f->args[i];
        int idx = first + (int)i;
        int rc = a->is_text ? sqlite3_bind_text(st, idx, a->text, -1, SQLITE_TRANSIENT)
                            : sqlite3_bind_double(st, idx, a->num);
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}
