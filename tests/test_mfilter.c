/*
 * test_mfilter.c - the memory filter language against a real SQLite table.
 *
 * Every test builds the same ten memories in an in-memory database and
 * asserts the exact set of ids a filter selects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/lite_filter.h"
#include "test.h"
#include "util/time.h"
#include "util/utf8.h"

/* ---- the fixture ------------------------------------------------------ */

typedef struct row {
    const char *id, *category, *type, *subject, *text;
    double importance;
    int confirmations;
    const char *created, *updated, *expires, *confirmed; /* ISO 8601, NULL = NULL */
    const char *user, *agent, *run, *metadata;
} row;

static const row rows[] = {
    {"m01", "rule", "instruction", "deploy", "Always run migrations before deploy", 0.9, 3,
     "2026-03-01T00:00:00Z", "2026-03-10T09:00:00Z", NULL, "2026-03-05T10:00:00Z", "alice", "main",
     "r1", "{\"project\":\"gateway\",\"tags\":[\"ops\",\"db\"],\"prio\":3,\"urgent\":true}"},
    {"m02", "preference", "preference", "editor", "Prefers vim keybindings", 0.5, 0,
     "2026-03-31T23:59:00Z", NULL, "2026-04-30T00:00:00Z", NULL, "alice", "main", "r1",
     "{\"project\":\"web\",\"prio\":1,\"urgent\":false}"},
    {"m03", "identity", "fact", "address", "Lives at Stra\xc3\x9f" "e 5, Berlin", 0.7, 1,
     "2026-04-01T00:00:00Z", NULL, NULL, NULL, "bob", "main", "r2",
     "{\"tags\":[\"personal\"],\"city\":\"Berlin\"}"},
    {"m04", "rule", "instruction", "style", "\xc3\x9c" "BER wichtig: keine Tabs", 0.3, 0,
     "2026-02-28T23:59:59Z", NULL, "2026-03-01T00:00:00Z", NULL, "bob", "helper", "r2",
     "{\"project\":\"Gateway\",\"prio\":2.5}"},
    {"m05", "fact", "fact", "travel", "Trip to \xe6\x9d\xb1\xe4\xba\xac in May", 0.6, 2,
     "2026-03-15T12:00:00Z", NULL, NULL, "2026-03-16", "carol", "main", "r3", "{}"},
    {"m06", "decision", "decision", "database", "Chose PostgreSQL over MySQL", 0.8, 5,
     "2026-01-10T08:00:00Z", NULL, NULL, "2026-02-01", "alice", "helper", "r3",
     "{\"project\":\"gateway\",\"tags\":[\"db\",\"Postgres\"],\"prio\":\"high\"}"},
    {"m07", "preference", "fact", "food", "likes \xc3\xbc" "ber-spicy ramen", 0.2, 0,
     "2026-03-31T00:00:00Z", NULL, "2026-03-31T12:00:00Z", NULL, "carol", "main", "r1",
     "{\"urgent\":true,\"tags\":[]}"},
    {"m08", "fact", "fact", "security", "x' OR 1=1 --", 0.4, 1, "2026-03-20T00:00:00Z", NULL, NULL,
     NULL, "dave", "main", "r4", "{\"project\":null,\"note\":\"x' OR 1=1 --\"}"},
    {"m09", "rule", "fact", "misc", "strasse cleaning on Mondays", 0.1, 0, "2026-03-02T00:00:00Z",
     NULL, NULL, NULL, "dave", "helper", "r4", "{\"a') OR 1=1 --\":\"weird\",\"prio\":0}"},
    {"m10", "identity", "fact", "name", "Name is \xe6\x9d\xb1\xe4\xba\xac\xe5\xa4\xaa\xe9\x83\x8e",
     1.0, 7, "2026-05-01T00:00:00Z", NULL, NULL, NULL, "erin", "main", "r5",
     "{\"project\":\"gateway-v2\",\"tags\":\"db\"}"},
};

#define ALL "m01,m02,m03,m04,m05,m06,m07,m08,m09,m10"

static void bind_time(sqlite3_stmt *st, int idx, const char *iso)
{
    double t;
    if (!iso) {
        ASSERT_EQ(sqlite3_bind_null(st, idx), SQLITE_OK);
        return;
    }
    ASSERT_OK(time_parse_iso(iso, &t));
    ASSERT_EQ(sqlite3_bind_double(st, idx, t), SQLITE_OK);
}

static sqlite3 *open_db(void)
{
    sqlite3 *db = NULL;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    ASSERT_EQ(lite_filter_register(db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE memories(mid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
                           " text TEXT NOT NULL, hash TEXT NOT NULL, category TEXT NOT NULL,"
                           " importance REAL NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,"
                           " user_id TEXT NOT NULL, agent_id TEXT NOT NULL, run_id TEXT NOT NULL,"
                           " metadata TEXT NOT NULL, triggers TEXT NOT NULL,"
                           " created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL,"
                           " confirmations INTEGER NOT NULL DEFAULT 0, last_confirmed_at REAL,"
                           " deleted_at REAL)",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO memories(id, text, hash, category, importance, type,"
                                 " subject, user_id, agent_id, run_id, metadata, triggers,"
                                 " created_at, updated_at, expires_at, confirmations,"
                                 " last_confirmed_at) VALUES (?,?,'h',?,?,?,?,?,?,?,?,'[]',?,?,?,?,?)",
                                 -1, &st, NULL),
              SQLITE_OK);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const row *r = &rows[i];
        sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->text, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->category, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, r->importance);
        sqlite3_bind_text(st, 5, r->type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, r->subject, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, r->user, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, r->agent, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, r->run, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 10, r->metadata, -1, SQLITE_STATIC);
        bind_time(st, 11, r->created);
        bind_time(st, 12, r->updated ? r->updated : r->created);
        bind_time(st, 13, r->expires);
        sqlite3_bind_int(st, 14, r->confirmations);
        bind_time(st, 15, r->confirmed);
        ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return db;
}

/* Compiles JSON for alias "m", runs it and returns the matching ids joined
 * with commas (a static buffer, one of several rotating). Fails the test if
 * the filter does not compile or the query does not run. */
static const char *ids(sqlite3 *db, const char *json)
{
    static char out[8][512];
    static int next;
    char *s = out[next++ % 8];
    char err[256];
    mfilter f;
    mfilter_init(&f);
    int rc = mfilter_compile(json, "m", &f, err, sizeof err);
    if (rc != MNEMO_OK)
        test_fail(__FILE__, __LINE__, "%s: compile returned %d: %s", json, rc, err);
    buf q;
    buf_init(&q, 0);
    buf_printf(&q, "SELECT id FROM memories m WHERE (%s) ORDER BY id", f.sql.data);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q.data, -1, &st, NULL) != SQLITE_OK)
        test_fail(__FILE__, __LINE__, "%s: %s\n%s", json, sqlite3_errmsg(db), q.data);
    ASSERT_EQ(lite_filter_bind(&f, st, 1), SQLITE_OK);
    ASSERT_EQ(sqlite3_bind_parameter_count(st), (int)f.nargs);
    s[0] = 0;
    size_t len = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        len += (size_t)snprintf(s + len, 512 - len, "%s%s", len ? "," : "", id);
    }
    if (rc != SQLITE_DONE)
        test_fail(__FILE__, __LINE__, "%s: %s\n%s", json, sqlite3_errmsg(db), q.data);
    sqlite3_finalize(st);
    buf_cleanup(&q);
    mfilter_cleanup(&f);
    return s;
}

/* Compiles JSON expecting failure; returns the code, the message in ERR. */
static int compile_err(const char *json, char *err, size_t errlen)
{
    mfilter f;
    mfilter_init(&f);
    int rc = mfilter_compile(json, "m", &f, err, errlen);
    /* a failed compile leaves nothing behind */
    if (rc != MNEMO_OK) {
        ASSERT_EQ(f.nargs, 0);
        ASSERT_EQ(f.sql.len, 0);
    }
    mfilter_cleanup(&f);
    return rc;
}

#define ASSERT_INVALID(json, msg)                                                              \
    do {                                                                                       \
        char e_[512];                                                                          \
        ASSERT_EQ(compile_err(json, e_, sizeof e_), MNEMO_INVALID);                            \
        ASSERT_CONTAINS(e_, msg);                                                              \
    } while (0)

/* ---- no filter -------------------------------------------------------- */

TEST(mfilter_empty_is_no_filter)
{
    sqlite3 *db = open_db();
    const char *empty[] = {NULL, "", "{}", "  \n"};
    for (size_t i = 0; i < 4; i++) {
        mfilter f;
        char err[64];
        mfilter_init(&f);
        ASSERT_OK(mfilter_compile(empty[i], "m", &f, err, sizeof err));
        ASSERT_STR_EQ(f.sql.data, "1");
        ASSERT_EQ(f.nargs, 0);
        mfilter_cleanup(&f);
    }
    ASSERT_STR_EQ(ids(db, "{}"), ALL);
    ASSERT_STR_EQ(ids(db, "{\"AND\":[{}]}"), ALL);
    sqlite3_close(db);
}

/* ---- text columns ----------------------------------------------------- */

TEST(mfilter_text_eq_ne)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"category\":\"rule\"}"), "m01,m04,m09");
    ASSERT_STR_EQ(ids(db, "{\"category\":{\"eq\":\"rule\"}}"), "m01,m04,m09");
    ASSERT_STR_EQ(ids(db, "{\"category\":\"Rule\"}"), ""); /* case-sensitive */
    ASSERT_STR_EQ(ids(db, "{\"category\":{\"ne\":\"rule\"}}"), "m02,m03,m05,m06,m07,m08,m10");
    ASSERT_STR_EQ(ids(db, "{\"type\":\"fact\"}"), "m03,m05,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"subject\":\"food\"}"), "m07");
    ASSERT_STR_EQ(ids(db, "{\"id\":\"m05\"}"), "m05");
    ASSERT_STR_EQ(ids(db, "{\"text\":\"Prefers vim keybindings\"}"), "m02");
    ASSERT_STR_EQ(ids(db, "{\"user_id\":\"alice\"}"), "m01,m02,m06");
    ASSERT_STR_EQ(ids(db, "{\"agent_id\":\"helper\"}"), "m04,m06,m09");
    ASSERT_STR_EQ(ids(db, "{\"run_id\":{\"ne\":\"r1\"}}"), "m03,m04,m05,m06,m08,m09,m10");
    /* null on a NOT NULL column */
    ASSERT_STR_EQ(ids(db, "{\"subject\":null}"), "");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"ne\":null}}"), ALL);
    sqlite3_close(db);
}

TEST(mfilter_categories_means_category)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"categories\":\"rule\"}"), "m01,m04,m09");
    ASSERT_STR_EQ(ids(db, "{\"categories\":[\"rule\",\"identity\"]}"), "m01,m03,m04,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"categories\":{\"in\":[\"rule\",\"identity\"]}}"),
                  "m01,m03,m04,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"categories\":{\"nin\":[\"rule\",\"identity\"]}}"),
                  "m02,m05,m06,m07,m08");
    ASSERT_STR_EQ(ids(db, "{\"category\":\"rule\",\"categories\":{\"ne\":\"rule\"}}"), "");
    sqlite3_close(db);
}

TEST(mfilter_text_in_nin)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"subject\":[\"food\",\"name\",\"nope\"]}"), "m07,m10");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"in\":[\"food\",\"name\"]}}"), "m07,m10");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"nin\":[\"food\",\"name\"]}}"),
                  "m01,m02,m03,m04,m05,m06,m08,m09");
    ASSERT_STR_EQ(ids(db, "{\"category\":{\"in\":[\"rule\",null]}}"), "m01,m04,m09");
    ASSERT_STR_EQ(ids(db, "{\"category\":{\"in\":[]}}"), "");
    ASSERT_STR_EQ(ids(db, "{\"category\":[]}"), "");
    ASSERT_STR_EQ(ids(db, "{\"category\":{\"nin\":[]}}"), ALL);
    sqlite3_close(db);
}

TEST(mfilter_text_order)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"gte\":\"s\"}}"), "m04,m05,m08");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"lt\":\"e\"}}"), "m01,m03,m06");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"lte\":\"deploy\"}}"), "m01,m03,m06");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"gt\":\"style\",\"lte\":\"travel\"}}"), "m05");
    ASSERT_STR_EQ(ids(db, "{\"id\":{\"gte\":\"m03\",\"lt\":\"m05\"}}"), "m03,m04");
    sqlite3_close(db);
}

TEST(mfilter_text_contains)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"contains\":\"ramen\"}}"), "m07");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"contains\":\"Stra\\u00dfe\"}}"), "m03");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"contains\":\"always\"}}"), ""); /* case-sensitive */
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"contains\":\"\xe6\x9d\xb1\xe4\xba\xac\"}}"), "m05,m10");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"contains\":\"a\"}}"), "m03,m05,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"contains\":\"%\"}}"), ""); /* no LIKE wildcards */
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"contains\":\"_\"}}"), "");
    sqlite3_close(db);
}

/* ---- icontains and mnemo_fold ------------------------------------------ */

static const char *sql_text(sqlite3 *db, const char *sql, char *out, size_t outlen)
{
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    const char *s = (const char *)sqlite3_column_text(st, 0);
    snprintf(out, outlen, "%s", s ? s : "(null)");
    sqlite3_finalize(st);
    return out;
}

TEST(mfilter_fold_function)
{
    sqlite3 *db = open_db();
    char out[64];
    /* utf8proc case folding: full folding, so ß becomes ss */
    ASSERT_STR_EQ(sql_text(db, "SELECT mnemo_fold('Stra\xc3\x9f" "e')", out, sizeof out),
                  "strasse");
    ASSERT_STR_EQ(sql_text(db, "SELECT mnemo_fold('\xc3\x9c" "BER')", out, sizeof out),
                  "\xc3\xbc" "ber");
    /* decomposed U + combining diaeresis composes to the same ü */
    ASSERT_STR_EQ(sql_text(db, "SELECT mnemo_fold('U\xcc\x88" "BER')", out, sizeof out),
                  "\xc3\xbc" "ber");
    ASSERT_STR_EQ(sql_text(db, "SELECT mnemo_fold('\xe6\x9d\xb1\xe4\xba\xac')", out, sizeof out),
                  "\xe6\x9d\xb1\xe4\xba\xac");
    ASSERT_STR_EQ(sql_text(db, "SELECT mnemo_fold('')", out, sizeof out), "");
    ASSERT_STR_EQ(sql_text(db, "SELECT quote(mnemo_fold(NULL))", out, sizeof out), "NULL");
    /* invalid UTF-8 comes back unchanged */
    ASSERT_STR_EQ(sql_text(db, "SELECT hex(mnemo_fold(CAST(x'41ff42' AS TEXT)))", out, sizeof out),
                  "41FF42");
    sqlite3_close(db);
}

/* ASCII text takes a shortcut in mnemo_fold: the same bytes and type as
 * utf8proc's folding, for every ASCII character (NUL too) in random text,
 * and for numbers folded as text. */
TEST(mfilter_fold_ascii_same_as_utf8proc)
{
    sqlite3 *db = open_db();
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT mnemo_fold(?1), typeof(mnemo_fold(?1))", -1, &st,
                                 NULL),
              SQLITE_OK);
    unsigned seed = 7;
    char in[96];
    for (int k = 0; k < 3000; k++) {
        size_t n = k < 128 ? 3 : 1 + (size_t)(rand_r(&seed) % 90);
        for (size_t i = 0; i < n; i++)
            in[i] = (char)(k < 128 && i == 1 ? k : rand_r(&seed) % 128);
        char *want = NULL;
        size_t wlen = 0;
        ASSERT_OK(mfilter_fold(in, n, &want, &wlen));
        sqlite3_bind_text(st, 1, in, (int)n, SQLITE_STATIC);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        ASSERT_EQ((size_t)sqlite3_column_bytes(st, 0), wlen);
        ASSERT(memcmp(sqlite3_column_text(st, 0), want, wlen) == 0);
        ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 1), "text");
        sqlite3_reset(st);
        free(want);
    }
    sqlite3_finalize(st);
    char out[64];
    ASSERT_STR_EQ(sql_text(db, "SELECT typeof(mnemo_fold(12)) || mnemo_fold(12)", out,
                           sizeof out),
                  "text12");
    sqlite3_close(db);
}

TEST(mfilter_icontains_unicode)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"STRASSE\"}}"), "m03,m09");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"stra\\u00dfe\"}}"), "m03,m09");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"\\u00fcber\"}}"), "m04,m07");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"\\u00dcBER\"}}"), "m04,m07");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"u\\u0308ber\"}}"), "m04,m07");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"ALWAYS\"}}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"postgresql\"}}"), "m06");
    ASSERT_STR_EQ(ids(db, "{\"subject\":{\"icontains\":\"FOOD\"}}"), "m07");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"\\u6771\\u4eac\"}}"), "m05,m10");
    /* "uber" without the umlaut is a different word */
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"uber\"}}"), "");
    sqlite3_close(db);
}

/* ---- numbers ---------------------------------------------------------- */

TEST(mfilter_number_ops)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"importance\":0.5}"), "m02");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"eq\":1}}"), "m10");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"ne\":0.5}}"), "m01,m03,m04,m05,m06,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"gt\":0.7}}"), "m01,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"gte\":0.7}}"), "m01,m03,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"lt\":0.3}}"), "m07,m09");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"lte\":0.3}}"), "m04,m07,m09");
    ASSERT_STR_EQ(ids(db, "{\"importance\":{\"gt\":0.2,\"lt\":0.6}}"), "m02,m04,m08");
    ASSERT_STR_EQ(ids(db, "{\"confirmations\":3}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"confirmations\":[0,5]}"), "m02,m04,m06,m07,m09");
    ASSERT_STR_EQ(ids(db, "{\"confirmations\":{\"in\":[0,5]}}"), "m02,m04,m06,m07,m09");
    ASSERT_STR_EQ(ids(db, "{\"confirmations\":{\"nin\":[0,1]}}"), "m01,m05,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"confirmations\":{\"gte\":5}}"), "m06,m10");
    sqlite3_close(db);
}

/* ---- times ------------------------------------------------------------ */

TEST(mfilter_time_date_is_a_whole_day)
{
    sqlite3 *db = open_db();
    /* all of March, including 03-31 23:59 but not 04-01 00:00 nor 02-28 23:59:59 */
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"gte\":\"2026-03-01\",\"lte\":\"2026-03-31\"}}"),
                  "m01,m02,m05,m07,m08,m09");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-31\"}"), "m02,m07");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"eq\":\"2026-03-31\"}}"), "m02,m07");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"ne\":\"2026-03-31\"}}"),
                  "m01,m03,m04,m05,m06,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"gt\":\"2026-03-31\"}}"), "m03,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"lte\":\"2026-03-31\"}}"),
                  "m01,m02,m04,m05,m06,m07,m08,m09");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"lt\":\"2026-03-01\"}}"), "m04,m06");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"gte\":\"2026-04-01\"}}"), "m03,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-01\"}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-02-28\"}"), "m04");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"in\":[\"2026-03-01\",\"2026-03-31\"]}}"),
                  "m01,m02,m07");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":[\"2026-01-10\",\"2026-05-01\"]}"), "m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"nin\":[\"2026-03-01\",\"2026-03-31\"]}}"),
                  "m03,m04,m05,m06,m08,m09,m10");
    /* a date with a zone is that day in that zone: 03-31 from 22:00 UTC on */
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-04-01+02:00\"}"), "m02,m03");
    /* updated_at is a time field too */
    ASSERT_STR_EQ(ids(db, "{\"updated_at\":\"2026-03-10\"}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-10\"}"), "");
    sqlite3_close(db);
}

TEST(mfilter_time_iso_and_numbers)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"gte\":\"2026-03-31T23:59:00Z\"}}"), "m02,m03,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"gt\":\"2026-03-31T23:59:00Z\"}}"), "m03,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"lte\":\"2026-03-01T00:00:00Z\"}}"), "m01,m04,m06");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"lt\":\"2026-03-01T00:00:00Z\"}}"), "m04,m06");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-15T12:00:00Z\"}"), "m05");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-15T12:00:01Z\"}"), "");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"ne\":\"2026-03-15T12:00:00Z\"}}"),
                  "m01,m02,m03,m04,m06,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-15T14:00:00+02:00\"}"), "m05");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":\"2026-03-15T12:00\"}"), "m05"); /* no zone = UTC */
    /* Unix seconds: 1772323200 = 2026-03-01T00:00:00Z, 1773576000 = 03-15T12:00Z */
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"lt\":1772323200}}"), "m04,m06");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":1773576000}"), "m05");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":{\"gte\":1772323200,\"lt\":\"2026-03-02\"}}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"created_at\":[1773576000, \"2026-05-01\"]}"), "m05,m10");
    sqlite3_close(db);
}

TEST(mfilter_time_nullable_columns)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":null}"), "m01,m03,m05,m06,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":{\"eq\":null}}"), "m01,m03,m05,m06,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":{\"ne\":null}}"), "m02,m04,m07");
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":{\"lt\":\"2026-04-01\"}}"), "m04,m07");
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":\"2026-03-31\"}"), "m07");
    /* ne matches memories that never expire */
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":{\"ne\":\"2026-03-31\"}}"),
                  "m01,m02,m03,m04,m05,m06,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":{\"nin\":[\"2026-03-01T00:00:00Z\"]}}"),
                  "m01,m02,m03,m05,m06,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"expires_at\":{\"in\":[null,\"2026-04-30\"]}}"),
                  "m01,m02,m03,m05,m06,m08,m09,m10");
    /* NOT is the exact complement, NULLs included */
    ASSERT_STR_EQ(ids(db, "{\"NOT\":[{\"expires_at\":{\"gt\":\"2026-03-01\"}}]}"),
                  "m01,m03,m04,m05,m06,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"last_confirmed_at\":{\"gte\":\"2026-03-01\"}}"), "m01,m05");
    ASSERT_STR_EQ(ids(db, "{\"last_confirmed_at\":{\"lte\":\"2026-03-05\"}}"), "m01,m06");
    sqlite3_close(db);
}

/* ---- metadata --------------------------------------------------------- */

TEST(mfilter_meta_strings)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"project\":\"gateway\"}"), "m01,m06");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"eq\":\"gateway\"}}"), "m01,m06");
    /* ne and nin include memories without the key */
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"ne\":\"gateway\"}}"),
                  "m02,m03,m04,m05,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"project\":[\"web\",\"Gateway\"]}"), "m02,m04");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"in\":[\"web\",\"Gateway\"]}}"), "m02,m04");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"nin\":[\"gateway\",\"web\"]}}"),
                  "m03,m04,m05,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"contains\":\"gate\"}}"), "m01,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"icontains\":\"GATE\"}}"), "m01,m04,m06,m10");
    /* order compares strings with strings only */
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"gte\":\"h\"}}"), "m02");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"lt\":\"h\"}}"), "m01,m04,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"gt\":\"gateway\",\"lte\":\"gateway-v2\"}}"), "m10");
    ASSERT_STR_EQ(ids(db, "{\"city\":\"Berlin\"}"), "m03");
    /* eq null: the key is missing or JSON null */
    ASSERT_STR_EQ(ids(db, "{\"project\":null}"), "m03,m05,m07,m08,m09");
    ASSERT_STR_EQ(ids(db, "{\"project\":{\"ne\":null}}"), "m01,m02,m04,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"nosuchkey\":{\"ne\":\"x\"}}"), ALL);
    ASSERT_STR_EQ(ids(db, "{\"nosuchkey\":\"x\"}"), "");
    /* a key with a dot is one key, not a nested path */
    ASSERT_STR_EQ(ids(db, "{\"project.name\":{\"ne\":null}}"), "");
    sqlite3_close(db);
}

TEST(mfilter_meta_numbers_and_bools)
{
    sqlite3 *db = open_db();
    /* prio: m01 3, m02 1, m04 2.5, m06 "high", m09 0 */
    ASSERT_STR_EQ(ids(db, "{\"prio\":3}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"prio\":3.0}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"prio\":\"3\"}"), ""); /* a string is not the number */
    ASSERT_STR_EQ(ids(db, "{\"prio\":\"high\"}"), "m06");
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"ne\":3}}"), "m02,m03,m04,m05,m06,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"gt\":1}}"), "m01,m04"); /* not "high" */
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"gte\":0,\"lt\":3}}"), "m02,m04,m09");
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"lte\":1}}"), "m02,m09");
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"gt\":\"a\"}}"), "m06"); /* strings only */
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"in\":[0,\"high\"]}}"), "m06,m09");
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"nin\":[0,\"high\"]}}"), "m01,m02,m03,m04,m05,m07,m08,m10");
    /* urgent: m01 true, m02 false, m07 true */
    ASSERT_STR_EQ(ids(db, "{\"urgent\":true}"), "m01,m07");
    ASSERT_STR_EQ(ids(db, "{\"urgent\":false}"), "m02");
    ASSERT_STR_EQ(ids(db, "{\"urgent\":{\"eq\":true}}"), "m01,m07");
    ASSERT_STR_EQ(ids(db, "{\"urgent\":{\"ne\":true}}"), "m02,m03,m04,m05,m06,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"urgent\":[true,false]}"), "m01,m02,m07");
    /* booleans bind as 1/0, as json_extract returns them: true equals 1 */
    ASSERT_STR_EQ(ids(db, "{\"prio\":true}"), "m02");
    sqlite3_close(db);
}

TEST(mfilter_meta_arrays_contains)
{
    sqlite3 *db = open_db();
    /* tags: m01 ["ops","db"], m03 ["personal"], m06 ["db","Postgres"], m07 [], m10 "db" */
    ASSERT_STR_EQ(ids(db, "{\"tags\":{\"contains\":\"db\"}}"), "m01,m06,m10");
    /* an array holds whole elements; a string holds substrings */
    ASSERT_STR_EQ(ids(db, "{\"tags\":{\"contains\":\"d\"}}"), "m10");
    ASSERT_STR_EQ(ids(db, "{\"tags\":{\"contains\":\"postgres\"}}"), "");
    ASSERT_STR_EQ(ids(db, "{\"tags\":{\"icontains\":\"POSTGRES\"}}"), "m06");
    ASSERT_STR_EQ(ids(db, "{\"tags\":{\"icontains\":\"DB\"}}"), "m01,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"NOT\":[{\"tags\":{\"contains\":\"db\"}}]}"),
                  "m02,m03,m04,m05,m07,m08,m09");
    ASSERT_STR_EQ(ids(db, "{\"tags\":{\"contains\":\"ops\",\"icontains\":\"DB\"}}"), "m01");
    ASSERT_STR_EQ(ids(db, "{\"note\":{\"contains\":\"OR 1=1\"}}"), "m08");
    /* numbers are not strings */
    ASSERT_STR_EQ(ids(db, "{\"prio\":{\"contains\":\"3\"}}"), "");
    sqlite3_close(db);
}

/* ---- logic ------------------------------------------------------------ */

TEST(mfilter_logical)
{
    sqlite3 *db = open_db();
    ASSERT_STR_EQ(ids(db, "{\"AND\":[{\"category\":\"rule\"},{\"importance\":{\"gt\":0.5}}]}"),
                  "m01");
    ASSERT_STR_EQ(ids(db, "{\"category\":\"rule\",\"type\":\"instruction\"}"), "m01,m04");
    ASSERT_STR_EQ(ids(db, "{\"OR\":[{\"type\":\"decision\"},{\"importance\":{\"gte\":0.9}}]}"),
                  "m01,m06,m10");
    ASSERT_STR_EQ(ids(db, "{\"NOT\":[{\"category\":\"rule\"}]}"), "m02,m03,m05,m06,m07,m08,m10");
    /* NOT [a, b] = NOT (a AND b) */
    ASSERT_STR_EQ(ids(db, "{\"NOT\":[{\"category\":\"rule\"},{\"type\":\"instruction\"}]}"),
                  "m02,m03,m05,m06,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"OR\":[{\"AND\":[{\"category\":\"preference\"},"
                          "{\"NOT\":[{\"subject\":\"food\"}]}]},{\"id\":\"m10\"}]}"),
                  "m02,m10");
    ASSERT_STR_EQ(ids(db, "{\"user_id\":\"alice\",\"OR\":[{\"category\":\"rule\"},"
                          "{\"category\":\"decision\"}]}"),
                  "m01,m06");
    ASSERT_STR_EQ(ids(db, "{\"NOT\":[{\"NOT\":[{\"project\":\"gateway\"}]}]}"), "m01,m06");
    /* NOT of a metadata comparison keeps memories without the key */
    ASSERT_STR_EQ(ids(db, "{\"NOT\":[{\"prio\":{\"gte\":1}}]}"), "m03,m05,m06,m07,m08,m09,m10");
    ASSERT_STR_EQ(ids(db, "{\"OR\":[{\"category\":\"nope\"}]}"), "");
    sqlite3_close(db);
}

/* {"AND":[{"AND":[... {"id":"m01"} ...]}]} with N ANDs: N + 1 levels. */
static char *nested(int n)
{
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < n; i++)
        buf_puts(&b, "{\"AND\":[");
    buf_puts(&b, "{\"id\":\"m01\"}");
    for (int i = 0; i < n; i++)
        buf_puts(&b, "]}");
    return buf_detach(&b);
}

TEST(mfilter_nesting_limit)
{
    sqlite3 *db = open_db();
    char *ok = nested(31), *deep = nested(32);
    ASSERT_STR_EQ(ids(db, ok), "m01");
    char err[512];
    ASSERT_EQ(compile_err(deep, err, sizeof err), MNEMO_INVALID);
    ASSERT_CONTAINS(err, "filters.AND[0].AND[0]");
    ASSERT_CONTAINS(err, "nested too deeply");
    free(ok);
    free(deep);
    sqlite3_close(db);
}

/* ---- safety ------------------------------------------------------------ */

TEST(mfilter_injection)
{
    sqlite3 *db = open_db();
    /* the value is compared, never executed: it matches only itself */
    ASSERT_STR_EQ(ids(db, "{\"text\":\"x' OR 1=1 --\"}"), "m08");
    ASSERT_STR_EQ(ids(db, "{\"category\":\"x' OR 1=1 --\"}"), "");
    ASSERT_STR_EQ(ids(db, "{\"category\":\"rule') OR 1=1 --\"}"), "");
    ASSERT_STR_EQ(ids(db, "{\"id\":{\"in\":[\"'); DROP TABLE memories; --\"]}}"), "");
    ASSERT_STR_EQ(ids(db, "{\"text\":{\"icontains\":\"' OR 1=1 --\"}}"), "m08");
    /* a metadata key is a bound JSON path too */
    ASSERT_STR_EQ(ids(db, "{\"a') OR 1=1 --\":\"weird\"}"), "m09");
    ASSERT_STR_EQ(ids(db, "{\"a') OR 1=1 --\":\"other\"}"), "");
    ASSERT_STR_EQ(ids(db, "{\"x'||1=1||'\":{\"gt\":0}}"), "");
    ASSERT_STR_EQ(ids(db, "{\"id\":\"m01\"}"), "m01"); /* the table is still there */
    ASSERT_INVALID("{\"a\\\" OR 1=1 --\":\"x\"}", "may not contain");
    ASSERT_INVALID("{\"a\\nb\":\"x\"}", "filters.a?b: a metadata key may not contain");
    ASSERT_INVALID("{\"\":\"x\"}", "empty metadata key");

    /* nothing the user wrote reaches the SQL text */
    mfilter f;
    char err[128];
    mfilter_init(&f);
    ASSERT_OK(mfilter_compile("{\"a') OR 1=1 --\":{\"contains\":\"x' OR 1=1 --\"},"
                              "\"category\":[\"gateway\",\"y\"]}",
                              "m", &f, err, sizeof err));
    ASSERT_NOT_CONTAINS(f.sql.data, "1=1");
    ASSERT_NOT_CONTAINS(f.sql.data, "gateway");
    ASSERT_NOT_CONTAINS(f.sql.data, "a')");
    size_t marks = 0;
    for (const char *p = f.sql.data; *p; p++)
        marks += *p == '?';
    ASSERT_EQ(marks, f.nargs);
    mfilter_cleanup(&f);

    /* the alias must be a plain identifier */
    mfilter_init(&f);
    ASSERT_EQ(mfilter_compile("{\"category\":\"rule\"}", "m; DROP TABLE memories", &f, err,
                              sizeof err),
              MNEMO_INVALID);
    ASSERT_CONTAINS(err, "alias");
    ASSERT_EQ(f.sql.len, 0);
    mfilter_cleanup(&f);
    sqlite3_close(db);
}

/* ---- errors ------------------------------------------------------------ */

TEST(mfilter_errors_name_the_bad_part)
{
    ASSERT_INVALID("{\"category\":", "filters: invalid JSON at line 1 column");
    ASSERT_INVALID("{\"category\":\"a\",\"category\":\"b\"}", "filters: invalid JSON");
    ASSERT_INVALID("[1,2]", "filters: expected a JSON object, got an array");
    ASSERT_INVALID("\"rule\"", "filters: expected a JSON object");
    ASSERT_INVALID("{\"created_at\":{\"gtx\":\"2026-03-01\"}}",
                   "filters.created_at: unknown operator \"gtx\" (expected eq, ne, gt, gte, lt, "
                   "lte, in, nin, contains, icontains)");
    ASSERT_INVALID("{\"AND\":[{\"category\":\"rule\"},{\"created_at\":{\"gte\":\"2026-13-01\"}}]}",
                   "filters.AND[1].created_at.gte: \"2026-13-01\" is not a date (YYYY-MM-DD or "
                   "ISO 8601)");
    ASSERT_INVALID("{\"created_at\":\"yesterday\"}", "filters.created_at: \"yesterday\" is not a");
    ASSERT_INVALID("{\"created_at\":\"2026-03-01 junk\"}", "is not a date");
    ASSERT_INVALID("{\"created_at\":{\"in\":[\"2026-03-01\",\"03/02/2026\"]}}",
                   "filters.created_at.in[1]: \"03/02/2026\" is not a date");
    ASSERT_INVALID("{\"expires_at\":true}", "filters.expires_at: expected a date");
    ASSERT_INVALID("{\"OR\":{\"category\":\"rule\"}}",
                   "filters.OR: expected an array of filter objects");
    ASSERT_INVALID("{\"AND\":\"x\"}", "filters.AND: expected an array of filter objects");
    ASSERT_INVALID("{\"OR\":[]}", "filters.OR: expected a non-empty array of filter objects");
    ASSERT_INVALID("{\"NOT\":[\"rule\"]}", "filters.NOT[0]: expected a filter object");
    ASSERT_INVALID("{\"category\":{\"in\":\"rule\"}}",
                   "filters.category.in: expected an array of values");
    ASSERT_INVALID("{\"category\":{\"nin\":{}}}", "filters.category.nin: expected an array");
    ASSERT_INVALID("{\"category\":{\"in\":[\"a\",[\"b\"]]}}",
                   "filters.category.in[1]: expected a string, number, true, false or null");
    ASSERT_INVALID("{\"text\":{\"contains\":3}}", "filters.text.contains: expected a string, got 3");
    ASSERT_INVALID("{\"project\":{\"icontains\":null}}", "filters.project.icontains: expected a");
    ASSERT_INVALID("{\"importance\":{\"contains\":\"x\"}}",
                   "filters.importance.contains: applies to text fields");
    ASSERT_INVALID("{\"created_at\":{\"icontains\":\"2026\"}}", "applies to text fields");
    ASSERT_INVALID("{\"importance\":\"high\"}", "filters.importance: expected a number, got \"high\"");
    ASSERT_INVALID("{\"category\":3}", "filters.category: expected a string, got 3");
    ASSERT_INVALID("{\"importance\":{\"gt\":null}}", "filters.importance.gt: cannot compare with null");
    ASSERT_INVALID("{\"category\":{}}", "filters.category: expected a value");
    ASSERT_INVALID("{\"project\":{\"eq\":[\"a\"]}}",
                   "filters.project.eq: expected a string, number, true, false or null, got an "
                   "array");
    ASSERT_INVALID("{\"OR\":[{\"NOT\":[{\"prio\":{\"lt\":{}}}]}]}", "filters.OR[0].NOT[0].prio.lt:");
}

TEST(mfilter_error_buffer_is_truncated_safely)
{
    char small[12];
    memset(small, 'x', sizeof small);
    ASSERT_EQ(compile_err("{\"created_at\":\"nope\"}", small, sizeof small), MNEMO_INVALID);
    ASSERT_EQ(strlen(small), sizeof small - 1);
    ASSERT_STR_EQ(small, "filters.cre");
    /* cut inside a multibyte character: the partial character is dropped */
    char err[40];
    const char *json = "{\"\xe6\x9d\xb1\xe4\xba\xac\xe6\x9d\xb1\xe4\xba\xac\xe6\x9d\xb1\xe4\xba\xac"
                       "\xe6\x9d\xb1\xe4\xba\xac\xe6\x9d\xb1\xe4\xba\xac\xe6\x9d\xb1\xe4\xba\xac"
                       "\xe6\x9d\xb1\xe4\xba\xac\":{\"zz\":1}}";
    for (size_t n = 9; n < sizeof err; n++) {
        ASSERT_EQ(compile_err(json, err, n), MNEMO_INVALID);
        ASSERT(strlen(err) < n);
        ASSERT(utf8_valid(err, strlen(err)));
    }
    ASSERT_EQ(compile_err(json, NULL, 0), MNEMO_INVALID);
}

/* ---- binding, aliases, appending --------------------------------------- */

TEST(mfilter_bind_after_other_parameters)
{
    sqlite3 *db = open_db();
    mfilter f;
    char err[128];
    mfilter_init(&f);
    /* the compile appends to what the caller already wrote */
    buf_puts(&f.sql, "x.user_id = ? AND (");
    ASSERT_OK(mfilter_compile("{\"category\":\"rule\",\"project\":{\"ne\":\"web\"}}", "x", &f, err,
                              sizeof err));
    buf_puts(&f.sql, ")");
    ASSERT_EQ(strncmp(f.sql.data, "x.user_id = ? AND (", 19), 0);
    buf q;
    buf_init(&q, 0);
    buf_printf(&q, "SELECT group_concat(id) FROM memories x WHERE %s", f.sql.data);
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_prepare_v2(db, q.data, -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_bind_text(st, 1, "bob", -1, SQLITE_STATIC), SQLITE_OK);
    ASSERT_EQ(lite_filter_bind(&f, st, 2), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 0), "m04");
    sqlite3_finalize(st);
    /* binding past the statement's parameters is reported */
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT ?", -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(lite_filter_bind(&f, st, 1), SQLITE_RANGE);
    sqlite3_finalize(st);
    buf_cleanup(&q);
    mfilter_cleanup(&f);

    /* no alias: bare column names */
    mfilter_init(&f);
    ASSERT_OK(mfilter_compile("{\"tags\":{\"contains\":\"db\"},\"importance\":{\"lt\":0.85}}",
                              NULL, &f, err, sizeof err));
    ASSERT_NOT_CONTAINS(f.sql.data, "m.");
    buf_init(&q, 0);
    buf_printf(&q, "SELECT group_concat(id) FROM memories WHERE %s", f.sql.data);
    ASSERT_EQ(sqlite3_prepare_v2(db, q.data, -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(lite_filter_bind(&f, st, 1), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 0), "m06");
    sqlite3_finalize(st);
    buf_cleanup(&q);
    mfilter_cleanup(&f);
    mfilter_cleanup(&f); /* cleanup twice is harmless */
    sqlite3_close(db);
}

TEST(mfilter_too_large_is_invalid)
{
    mfilter f;
    char err[128];
    mfilter_init(&f);
    f.sql.max = 64; /* the cap mfilter_init set, made small */
    ASSERT_EQ(mfilter_compile("{\"category\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "m", &f, err,
                              sizeof err),
              MNEMO_INVALID);
    ASSERT_STR_EQ(err, "filters: the filter is too large");
    ASSERT_EQ(f.nargs, 0);
    ASSERT_EQ(f.sql.len, 0);
    /* the buffer is usable again for a filter that fits */
    ASSERT_OK(mfilter_compile("{\"category\":\"a\"}", "m", &f, err, sizeof err));
    ASSERT_STR_EQ(f.sql.data, "(m.category = ?)");
    ASSERT_EQ(f.nargs, 1);
    ASSERT_STR_EQ(f.args[0].text, "a");
    mfilter_cleanup(&f);
}
