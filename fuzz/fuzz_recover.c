/*
 * fuzz_recover.c - libFuzzer harness for salvaging memories from a damaged
 * file: any bytes, read as a SQLite file by SQLite and then page by page by
 * mnemo's own reader, must never crash, hang or write anything but
 * well-formed memories (valid UTF-8 text, a non-empty id) into the store.
 */
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/sqlite/fts.h"
#include "store/sqlite/recover.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static sqlite3 *dst;

static void setup(void)
{
    if (dst)
        return;
    snprintf(path, sizeof path, "/tmp/mnemo-fuzz-recover-%ld", (long)getpid());
    if (sqlite3_open(":memory:", &dst) != SQLITE_OK || fts_register(dst, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(dst,
                     "ATTACH ':memory:' AS mem;"
                     "CREATE TABLE mem.memories(mid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
                     " text TEXT NOT NULL, hash TEXT NOT NULL, category TEXT NOT NULL,"
                     " importance REAL NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,"
                     " user_id TEXT NOT NULL, agent_id TEXT NOT NULL, run_id TEXT NOT NULL,"
                     " metadata TEXT NOT NULL, triggers TEXT NOT NULL, created_at REAL NOT NULL,"
                     " updated_at REAL NOT NULL, expires_at REAL, confirmations INTEGER NOT NULL"
                     " DEFAULT 0, last_confirmed_at REAL, deleted_at REAL);"
                     "CREATE TABLE mem.memory_history(hid INTEGER PRIMARY KEY, memory_id TEXT"
                     " NOT NULL, event TEXT NOT NULL, old_text TEXT, new_text TEXT, at REAL NOT"
                     " NULL, detail TEXT);"
                     "CREATE VIRTUAL TABLE mem.memories_fts USING fts5(text, content='memories',"
                     " content_rowid='mid', tokenize='mnemo english');",
                     NULL, NULL, NULL) != SQLITE_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    sqlite3_exec(dst, "BEGIN; DELETE FROM mem.memories; DELETE FROM mem.memory_history;", NULL,
                 NULL, NULL);
    salvage_report r;
    buf err;
    buf_init(&err, 4096);
    salvage_memories(path, dst, &r, &err);
    buf_cleanup(&err);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(dst, "SELECT id, text FROM mem.memories", -1, &q, NULL) != SQLITE_OK)
        abort();
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(q, 0);
        const char *t = (const char *)sqlite3_column_text(q, 1);
        if (!id || !*id || !t || !utf8_valid(t, strlen(t)) || !utf8_valid(id, strlen(id)))
            abort();
    }
    sqlite3_finalize(q);
    sqlite3_exec(dst, "ROLLBACK", NULL, NULL, NULL);
    unlink(path);
    return 0;
}
