/*
 * fuzz_query.c - libFuzzer harness for the query parser: whatever the user
 * types, the MATCH expression must be accepted by FTS5 (no syntax errors)
 * against a small in-memory index.
 */
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/fts.h"
#include "text/query.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sqlite3 *db;
static fts_rank rank;
static tok *qt;

static void setup(void)
{
    if (db)
        return;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK || fts_register(db, &rank, NULL) != SQLITE_OK ||
        sqlite3_exec(db,
                     "CREATE VIRTUAL TABLE t USING fts5(text, tokenize='mnemo english');"
                     "INSERT INTO t VALUES('the gateway runs on atlas, port 8080');"
                     "INSERT INTO t VALUES('数据库迁移 東京でデプロイ max_retry_count #412');",
                     NULL, NULL, NULL) != SQLITE_OK)
        abort();
    if (tok_new("english", 1, &qt))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    buf text;
    buf_init(&text, 1 << 16);
    if (utf8_repair(&text, (const char *)data, size) || buf_putc(&text, 0)) {
        buf_cleanup(&text);
        return 0;
    }
    query q;
    if (query_parse(qt, text.data, &q) == 0) {
        if (q.match) {
            fts_rank_reset(&rank, q.nphrase);
            sqlite3_stmt *st = NULL;
            if (sqlite3_prepare_v2(db, "SELECT rowid, mnemo_mask(t) FROM t WHERE t MATCH ?1", -1,
                                   &st, NULL) != SQLITE_OK)
                abort();
            sqlite3_bind_text(st, 1, q.match, -1, SQLITE_STATIC);
            int rc;
            while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                ;
            if (rc != SQLITE_DONE)
                abort(); /* a syntax error means the builder produced bad FTS5 */
            sqlite3_finalize(st);
        }
        query_cleanup(&q);
    }
    buf_cleanup(&text);
    return 0;
}
