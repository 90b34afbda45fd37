/*
 * lite_recall.c - trigger recall on SQLite: the entry files' chunks that
 * have triggers, read from the index for recall_block (recall.c).
 */
#include "engine/backend.h"
#include "store/sqlite/lite.h"
#include "engine/recall.h"

/* The entry files' chunks with triggers, in id order, from the index. */
static int lite_next(void *ud, recall_entry *e)
{
    sqlite3_stmt *st = ud;
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE)
        return 0;
    if (s != SQLITE_ROW)
        return -MNEMO_DB;
    e->id = sqlite3_column_int64(st, 0);
    e->text = (const char *)sqlite3_column_text(st, 1);
    e->triggers = (const char *)sqlite3_column_text(st, 2);
    e->line = sqlite3_column_int(st, 3);
    e->importance = sqlite3_column_int(st, 4);
    e->path = (const char *)sqlite3_column_text(st, 5);
    return 1;
}

int lite_recall_triggers(mnemo *m, const char *message, char **out)
{
    *out = NULL;
    core_clear(m);
    tok *t;
    int rc = lite_qtok(m, &t);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(LITE(m)->st),
                           "SELECT c.id, c.text, c.triggers, c.start_line, c.importance, f.path "
                           "FROM files f JOIN chunks c ON c.file_id = f.id "
                           "WHERE f.path IN ('MEMORY.md', 'USER.md', 'memory.md', 'user.md') "
                           "AND f.status = 0 AND c.triggers != '' ORDER BY c.id",
                           -1, &st, NULL) != SQLITE_OK)
        return core_error(m, MNEMO_DB, "recall: %s", sqlite3_errmsg(store_db(LITE(m)->st)));
    rc = recall_block(m, t, message, lite_next, st, out);
    if (rc == MNEMO_DB)
        core_error(m, MNEMO_DB, "recall: %s", sqlite3_errmsg(store_db(LITE(m)->st)));
    sqlite3_finalize(st);
    return rc;
}
