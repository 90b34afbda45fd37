/*
 * fuzz_filter.c - libFuzzer harness for the filter language: whatever JSON
 * comes in, mfilter_compile either refuses it with a message or produces
 * SQL that SQLite prepares and runs against the memories table with its
 * arguments bound (a prepare or bind failure is a bug). The PostgreSQL form
 * must compile exactly when the SQLite form does.
 */
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/lite_filter.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sqlite3 *db;

static void setup(void)
{
    if (db)
        return;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK || lite_filter_register(db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "CREATE TABLE memories(mid INTEGER PRIMARY KEY, id TEXT, text TEXT, hash "
                     "TEXT, category TEXT, importance REAL, type TEXT, subject TEXT, user_id "
                     "TEXT, agent_id TEXT, run_id TEXT, metadata TEXT, triggers TEXT, "
                     "created_at REAL, updated_at REAL, expires_at REAL, confirmations INTEGER, "
                     "last_confirmed_at REAL, deleted_at REAL);"
                     "INSERT INTO memories VALUES(1, 'a', 'User likes tea', 'h', 'preference', "
                     "0.8, 'fact', 'user', 'alice', '', '', '{\"k\":[1,\"x\"]}', '[]', 1e9, 1e9, "
                     "NULL, 0, NULL, NULL);",
                     NULL, NULL, NULL) != SQLITE_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    char *json = malloc(size + 1);
    if (!json)
        return 0;
    memcpy(json, data, size);
    json[size] = 0;
    char err[512];
    mfilter f, g;
    mfilter_init(&f);
    mfilter_init(&g);
    int rc = mfilter_compile(json, "m", &f, err, sizeof err);
    int rg = mfilter_compile_pg(json, "m", 1, &g, err, sizeof err);
    if ((rc == 0) != (rg == 0) && rc != 1 && rg != 1) /* 1: out of memory */
        abort();
    if (rc == 0) {
        buf sql;
        buf_init(&sql, 1 << 24);
        buf_printf(&sql, "SELECT count(*) FROM memories m WHERE %s", f.sql.data ? f.sql.data : "1");
        sqlite3_stmt *st = NULL;
        if (buf_err(&sql) == 0) {
            int p = sqlite3_prepare_v2(db, sql.data, -1, &st, NULL);
            if (p != SQLITE_OK && !strstr(sqlite3_errmsg(db), "too large") &&
                !strstr(sqlite3_errmsg(db), "too many"))
                abort(); /* the compiler wrote SQL that does not parse */
            if (st) {
                if (lite_filter_bind(&f, st, 1) != 0)
                    abort();
                while (sqlite3_step(st) == SQLITE_ROW)
                    ;
            }
            sqlite3_finalize(st);
        }
        buf_cleanup(&sql);
    }
    mfilter_cleanup(&f);
    mfilter_cleanup(&g);
    free(json);
    return 0;
}
