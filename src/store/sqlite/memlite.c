/*
 * memlite.c - structured memories in the SQLite memory store: the storage
 * steps of adding, changing, deleting, confirming, purging and reading one
 * memory, which the engine runs (mem_store: what a memory is, its options
 * and the operations' order and checks are in memory.c, search in
 * msearch.c); listing, export and import, backups and recovery.
 *
 * Memories live in the memory store, a database of their own attached to
 * the index connection as "mem" (store_attach_memories): a rebuild of the
 * index never replaces it. Writers take the store's lock, then an
 * immediate transaction; commits are synced (synchronous=FULL). Every
 * memoryBackupEvery writes (and daily while memories change) a JSON-lines
 * snapshot is written beside the store, memoryBackups kept.
 */
#include "engine/backend.h"
#include "engine/sync.h"
#include "store/sqlite/lite.h"
#include "store/sqlite/lite_filter.h"
#include "store/sqlite/memlite.h"
#include "engine/memory.h"
#include "store/sqlite/memvec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/sqlite/fts.h"
#include "store/sqlite/kwpost.h"
#include "store/sqlite/recover.h"
#include "util/lock.h"
#include "util/map.h"
#include "util/time.h"


/* ----------------------------------------------------------------------
 * The record codec
 * -------------------------------------------------------------------- */

static double col_time(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
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

#define dump mem_dump

/* ----------------------------------------------------------------------
 * Opening and writing
 * -------------------------------------------------------------------- */

int memlite_open(mnemo *m)
{
    int rc = lite_mem(m);
    if (rc != MNEMO_NOTFOUND)
        return rc;
    /* No index yet: build it (memories are searched beside notes). */
    core_clear(m);
    mnemo_sync_stats st;
    if ((rc = sync_run(m, m->be->sync, NULL, &st)))
        return rc;
    return lite_mem(m);
}

typedef struct writer {
    int lock;
    int began;
} writer;

static int write_begin(mnemo *m, writer *w)
{
    w->lock = -1;
    w->began = 0;
    int rc = memlite_open(m);
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
    if ((rc = lite_mem(m)))
        return rc;
    /* The memory store alone: never the index's lock, which a sync or a
     * rebuild holds for long (and any process may hold). */
    if ((rc = store_begin_mem(LITE(m)->st)))
        return core_error(m, rc, "cannot write the memory store %s: %s", m->mem_path,
                          sqlite3_errmsg(store_db(LITE(m)->st)));
    w->began = 1;
    return MNEMO_OK;
}

static int sqlfail(mnemo *m, const char *what);
static int post_flush(mnemo *m, int all);

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

/* The folder of the store (DIR) and the names in it of its snapshots,
 * "<store>.backup-*" ending in SUFFIX, in *NAMES (N of them; each and the
 * array freed by the caller). MNEMO_NOMEM, MNEMO_IO. */
static int backup_files(const char *mem_path, const char *suffix, char dir[PATH_MAX],
                        char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    snprintf(dir, PATH_MAX, "%s", mem_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return MNEMO_IO;
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s.backup-", slash + 1);
    if (slash == dir)
        slash[1] = 0; /* the root */
    else
        *slash = 0;
    size_t plen = strlen(prefix), slen = strlen(suffix), cap = 0;
    DIR *d = opendir(dir);
    if (!d)
        return MNEMO_IO;
    int rc = MNEMO_OK;
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, prefix, plen) != 0 || len < plen + slen ||
            strcmp(de->d_name + len - slen, suffix) != 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **g = realloc(*names, cap * sizeof *g);
            if (!g) {
                rc = MNEMO_NOMEM;
                break;
            }
            *names = g;
        }
        if (!((*names)[*n] = strdup(de->d_name)))
            rc = MNEMO_NOMEM;
        else
            (*n)++;
    }
    closedir(d);
    return rc;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Keeps the newest KEEP snapshots "<store>.backup-*.jsonl" beside the store. */
static void prune_backups(const char *mem_path, long keep)
{
    char dir[PATH_MAX];
    char **names;
    size_t n;
    backup_files(mem_path, ".jsonl", dir, &names, &n);
    if (n > 1)
        qsort(names, n, sizeof *names, by_seq);
    for (size_t i = 0; i + (size_t)keep < n; i++) {
        char p[PATH_MAX * 2 + 2];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    free_names(names, n);
}

/* Removes the snapshots half written ("<store>.backup-*.jsonl.part") by a
 * writer that was killed: they may hold memories purged since, and nothing
 * else ever removed them. Only a writer holding the store's lock writes
 * one, and the caller holds it, so every one there is stale. */
static void remove_partial_backups(const char *mem_path)
{
    char dir[PATH_MAX];
    char **names;
    size_t n;
    backup_files(mem_path, ".jsonl.part", dir, &names, &n);
    for (size_t i = 0; i < n; i++) {
        char p[PATH_MAX * 2 + 2];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    free_names(names, n);
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
    if (store_mem_meta_get(LITE(m)->st, "writes", &v) == MNEMO_OK && v)
        writes = strtol(v, NULL, 10);
    free(v);
    if (store_mem_meta_get(LITE(m)->st, "backup_writes", &v) == MNEMO_OK && v)
        done = strtol(v, NULL, 10);
    free(v);
    if (store_mem_meta_get(LITE(m)->st, "backup_at", &v) == MNEMO_OK && v)
        at = strtod(v, NULL);
    free(v);
    /* Each snapshot writes the whole store: between two of them at least
     * half its size in writes, so that bulk adds stay linear (two rows
     * written out per write, at most). */
    sqlite3_stmt *q = NULL;
    long size = 0;
    if (sqlite3_prepare_v2(store_db(LITE(m)->st), "SELECT coalesce(max(mid), 0) FROM memories", -1, &q,
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
    remove_partial_backups(m->mem_path);
    /* The export's warning (memories that cannot be read are not in the
     * snapshot) is said as the backup's; a warning from before stays. */
    buf said;
    buf_init(&said, 0);
    buf_puts(&said, m->warn.data ? m->warn.data : "");
    buf_reset(&m->warn);
    FILE *f = fopen(tmp, "wx");
    int rc = f ? MNEMO_OK : MNEMO_IO;
    if (f) {
        fchmod(fileno(f), 0600);
        rc = mem_export(m, &mem_lite_store, write_file_fn, f, NULL);
        if (fflush(f) != 0 || fsync(fileno(f)) != 0)
            rc = rc ? rc : MNEMO_IO;
        if (fclose(f) != 0)
            rc = rc ? rc : MNEMO_IO;
    }
    if (m->warn.len) {
        buf_reset(&said);
        buf_printf(&said, "the memory backup %s leaves out what cannot be read: %s", path,
                   m->warn.data);
    }
    buf_reset(&m->warn);
    m->warn.err = 0;
    buf_puts(&m->warn, said.data ? said.data : "");
    buf_cleanup(&said);
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
    store_mem_meta_set(LITE(m)->st, "backup_writes", num);
    snprintf(num, sizeof num, "%.0f", now);
    store_mem_meta_set(LITE(m)->st, "backup_at", num);
    prune_backups(m->mem_path, keep);
}

static int write_end(mnemo *m, writer *w, int rc)
{
    if (w->began) {
        sqlite3 *db = store_db(LITE(m)->st);
        if (rc == MNEMO_OK)
            rc = post_flush(m, 0);
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

/* A failed statement of the memory store: a damaged file says so, with
 * the way out (lite_mem_fail). */
static int sqlfail(mnemo *m, const char *what)
{
    int e = sqlite3_errcode(store_db(LITE(m)->st));
    if (store_code(e) == MNEMO_CORRUPT)
        return lite_mem_fail(m, e, what);
    return core_error(m, MNEMO_DB, "%s: %s", what, sqlite3_errmsg(store_db(LITE(m)->st)));
}

static sqlite3_stmt *prepare(mnemo *m, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(LITE(m)->st), sql, -1, &st, NULL) != SQLITE_OK) {
        sqlfail(m, "prepare");
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Runs SQL with ?1 bound to MID and ?2 (if it has one) to T. */
static int run_mid(mnemo *m, const char *sql, int64_t mid, double t, const char *what)
{
    sqlite3_stmt *st = prepare(m, sql);
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
    sqlite3_stmt *st = prepare(m, "INSERT INTO memory_history(memory_id, event, old_text, new_text, "
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

/* ----------------------------------------------------------------------
 * The memories' postings (kwpost.h), beside their FTS5 index, for top-k
 * keyword search (lite_mpost.c): a word's postings per user, agent, type
 * and session (KWPOST_MEMORY_KEY), and per user the largest factor inputs
 * of its memories in them (kw_user) and its agents (kw_agents).
 *
 * Memories at or below the mark (kw_mark, range 0) are in the postings as
 * they were when a write moved the mark; those above it are searched
 * through FTS5. A memory at or below it that then changes what its
 * postings hold (its text, user, agent, type or session; a delete, a restore)
 * is recorded under each word of its postings (kw_dead) and in kw_moved:
 * searches read it from its row from then on; past MEM_POST_MOVED of
 * them a write writes the postings again. A confirmation or a new
 * importance raises its user's bound. A new memory gets an id above the
 * mark. A write that finds MEM_POST_TAIL memories above the mark writes
 * their postings and moves it, in the write's transaction, MEM_POST_STEP
 * ids at a time (the first write after an upgrade writes them all: 7 s
 * for a million memories).
 * -------------------------------------------------------------------- */

#define MEM_POST_TAIL 2048
#define MEM_POST_MOVED 4096
#define MEM_POST_STEP 200000

/* What a write asks of the postings, prepared once per handle: the
 * largest id, the mark (-1: nothing written yet), the moved memories and
 * whether one is unrecorded. MNEMO_NOTFOUND when the store has no
 * postings (an older store read as it is). */
static int post_state(mnemo *m, int64_t *top, int64_t *mark, int64_t *moved, int *unrecorded)
{
    sqlite3_stmt *st = fts_stmt(store_mrank(LITE(m)->st),
                                "SELECT (SELECT max(mid) FROM mem.memories), (SELECT mark FROM "
                                "mem.kw_mark WHERE range = 0), (SELECT count(*) FROM "
                                "mem.kw_moved), EXISTS (SELECT 1 FROM mem.kw_moved WHERE NOT "
                                "recorded)");
    if (!st)
        return MNEMO_NOTFOUND;
    int rc = MNEMO_DB;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *top = sqlite3_column_int64(st, 0);
        *mark = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
        *moved = sqlite3_column_int64(st, 2);
        *unrecorded = sqlite3_column_int(st, 3);
        rc = MNEMO_OK;
    }
    sqlite3_reset(st);
    return rc;
}

/* The mark of the memories' postings into *MARK (see post_state). */
static int post_mark(mnemo *m, int64_t *mark)
{
    int64_t top, moved;
    int unrecorded;
    return post_state(m, &top, mark, &moved, &unrecorded);
}

static int post_open(mnemo *m, kwpost **k)
{
    int rc = kwpost_open(store_db(LITE(m)->st), "mem", KWPOST_MEMORIES,
                         cfg_str(m->cfg, CFG_LANGUAGE), k);
    return rc == MNEMO_NOMEM ? core_error(m, rc, "out of memory")
           : rc              ? sqlfail(m, "the memories' postings")
                             : MNEMO_OK;
}

/* Memory MID is about to change (its text, user or type; a delete; a
 * restore): its postings, if it has any, are no longer its own. Called
 * before the change, while its row is as its postings have it. */
static int post_change(mnemo *m, int64_t mid)
{
    int64_t mark;
    if (post_mark(m, &mark) != MNEMO_OK || mid > mark)
        return MNEMO_OK;
    sqlite3_stmt *st = prepare(m, "INSERT OR IGNORE INTO mem.kw_moved(id, recorded) VALUES(?1, 1)");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_int64(st, 1, mid);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    int moved_now = ok && sqlite3_changes(store_db(LITE(m)->st)) > 0;
    sqlite3_finalize(st);
    if (!ok)
        return sqlfail(m, "the memories' postings");
    if (!moved_now)
        return MNEMO_OK; /* moved before: its words are recorded already */
    /* Its words, keyed as the postings have them (KWPOST_MEMORIES): a
     * deleted memory, or one whose user is too long, has none. */
    if (!(st = prepare(m, "SELECT text, " KWPOST_MEMORY_KEY " FROM mem.memories WHERE mid = ?1 "
                          "AND deleted_at IS NULL AND " KWPOST_MEMORY_KEYED)))
        return MNEMO_DB;
    sqlite3_bind_int64(st, 1, mid);
    int rc = MNEMO_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        kwpost *k = NULL;
        const char *text = (const char *)sqlite3_column_text(st, 0);
        if (!(rc = post_open(m, &k)) &&
            (rc = kwpost_remove(k, mid, text ? text : "", (size_t)sqlite3_column_bytes(st, 0),
                                (const char *)sqlite3_column_text(st, 1))))
            rc = rc == MNEMO_NOMEM ? core_error(m, rc, "out of memory")
                                   : sqlfail(m, "the memories' postings");
        kwpost_free(k);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Raises the largest factor inputs of the users of the memories with ids
 * in (LO, HI] (kw_user) to theirs. A memory's reference time is its last
 * confirmation or creation; one without (0) counts as recent: it ranks so. */
static int post_user_max(mnemo *m, int64_t lo, int64_t hi)
{
    sqlite3_stmt *st = prepare(
        m, "INSERT INTO mem.kw_user(user_id, importance, confirmations, ref, about) "
           "SELECT user_id, max(importance), max(confirmations), max(CASE WHEN max(created_at, "
           "coalesce(last_confirmed_at, 0)) <= 0 THEN 9e18 ELSE max(created_at, "
           "coalesce(last_confirmed_at, 0)) END), max(subject = 'user') FROM mem.memories "
           "WHERE mid > ?1 AND mid <= ?2 AND deleted_at IS NULL GROUP BY user_id "
           "ON CONFLICT(user_id) DO UPDATE SET importance = max(importance, excluded.importance), "
           "confirmations = max(confirmations, excluded.confirmations), ref = max(ref, "
           "excluded.ref), about = max(about, excluded.about)");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    int rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "the memories' postings");
    sqlite3_finalize(st);
    /* Their users' agents; and those too long to key, read from their rows. */
    static const char *const more[] = {
        "INSERT OR IGNORE INTO mem.kw_agents(user_id, agent_id) SELECT DISTINCT user_id, "
        "agent_id FROM mem.memories WHERE mid > ?1 AND mid <= ?2 AND deleted_at IS NULL",
        "INSERT OR IGNORE INTO mem.kw_moved(id, recorded) SELECT mid, 1 FROM mem.memories "
        "WHERE mid > ?1 AND mid <= ?2 AND deleted_at IS NULL AND NOT (" KWPOST_MEMORY_KEYED ")"};
    for (int i = 0; i < 2 && !rc; i++) {
        if (!(st = prepare(m, more[i])))
            return MNEMO_DB;
        sqlite3_bind_int64(st, 1, lo);
        sqlite3_bind_int64(st, 2, hi);
        rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "the memories' postings");
        sqlite3_finalize(st);
    }
    return rc;
}

/* Memory MID's factor inputs changed (importance, a confirmation): the
 * bound of its user follows, when its postings hold it. */
static int post_factors(mnemo *m, int64_t mid)
{
    int64_t mark;
    if (post_mark(m, &mark) != MNEMO_OK || mid > mark)
        return MNEMO_OK;
    return post_user_max(m, mid - 1, mid);
}

/* The id a new memory gets: above every memory and the mark. */
static int post_next_mid(mnemo *m, int64_t *mid)
{
    int64_t top, mark, moved;
    int unrecorded, rc = post_state(m, &top, &mark, &moved, &unrecorded);
    if (rc == MNEMO_NOTFOUND) {
        *mid = 0; /* no postings: SQLite's choice */
        return MNEMO_OK;
    }
    if (rc)
        return sqlfail(m, "storing a memory");
    *mid = (top > mark ? top : mark) + 1;
    if (*mid < 1)
        *mid = 1;
    return MNEMO_OK;
}

/* Writes the postings of the memories above the mark once there are
 * MEM_POST_TAIL of them (or ALL), in the caller's transaction. */
static int post_flush(mnemo *m, int all)
{
    int64_t mark, top = 0, moved = 0;
    int unrecorded = 0;
    if (post_state(m, &top, &mark, &moved, &unrecorded) != MNEMO_OK)
        return MNEMO_OK;
    /* MNEMO_MEM_POST_TAIL: a smaller count, for tests of small stores. */
    const char *e = getenv("MNEMO_MEM_POST_TAIL");
    int64_t tail = e && atoll(e) > 0 ? atoll(e) : MEM_POST_TAIL;
    /* Memories moved since their postings were written are read from
     * their rows by every search: past MEM_POST_MOVED (or the tail's
     * count, in tests) the postings are written again from the rows. */
    /* Changed by a writer that does not keep them: written again too. */
    if (moved > (e ? tail : MEM_POST_MOVED) || unrecorded) {
        if (sqlite3_exec(store_db(LITE(m)->st),
                         "DELETE FROM mem.kw_seg; DELETE FROM mem.kw_dead; "
                         "DELETE FROM mem.kw_mark; DELETE FROM mem.kw_moved; "
                         "DELETE FROM mem.kw_user; DELETE FROM mem.kw_agents",
                         NULL, NULL, NULL) != SQLITE_OK)
            return sqlfail(m, "writing the memories' postings");
        mark = -1;
        all = 1;
    }
    if (top - mark < (all ? 1 : tail))
        return MNEMO_OK;
    int rc = MNEMO_OK;
    while (!rc && mark < top) {
        kwpost *k = NULL;
        int64_t below = mark > INT64_MAX - MEM_POST_STEP ? INT64_MAX : mark + MEM_POST_STEP + 1;
        if (!(rc = post_open(m, &k))) {
            int w = kwpost_read_back(k, below);
            if (!w)
                w = kwpost_flush(k);
            if (w)
                rc = w == MNEMO_NOMEM ? core_error(m, w, "out of memory")
                                      : sqlfail(m, "writing the memories' postings");
        }
        kwpost_free(k);
        int64_t was = mark;
        if (!rc && post_mark(m, &mark) != MNEMO_OK)
            rc = sqlfail(m, "writing the memories' postings");
        if (!rc && mark > was)
            rc = post_user_max(m, was, mark);
        if (!rc && mark <= was)
            mark = below - 1 < top ? below - 1 : top; /* no memory in the step */
        if (!rc && mark <= was)
            break;
    }
    return rc;
}

/* The FTS row of memory MID: delete the old text (if any), add the new. */
static int fts_update(mnemo *m, int64_t mid, const char *old_text, const char *new_text)
{
    sqlite3_stmt *st;
    if (old_text) {
        if (!(st = prepare(m, "INSERT INTO memories_fts(memories_fts, rowid, text) "
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
        if (!(st = prepare(m, "INSERT INTO memories_fts(rowid, text) VALUES(?1, ?2)")))
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

/* Loads the memory ID (any state) as JSON into *out, and its rowid
 * (mem_store.load: LOCK asks nothing more, a write holds the whole store). */
static int load(mnemo *m, const char *id, int lock, json_t **out, int64_t *mid)
{
    (void)lock;
    *out = NULL;
    sqlite3_stmt *st = prepare(m, "SELECT " MEM_COLS " FROM memories m WHERE m.id = ?1");
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
    sqlite3_stmt *st = prepare(m, "SELECT id FROM memories WHERE hash = ?1 AND user_id = ?2 AND "
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

/* Inserts a validated record; *mid gets its rowid. */
static int insert(mnemo *m, const mem_fields *f, const char *id, double now, int64_t *mid)
{
    mem_row r;
    mem_fields_row(m, f, id, now, &r);
    int64_t next = 0;
    int rc = post_next_mid(m, &next);
    if (rc)
        return rc;
    sqlite3_stmt *st = prepare(m, "INSERT INTO memories(id, text, hash, category, importance, type, "
                               "subject, user_id, agent_id, run_id, metadata, triggers, "
                               "created_at, updated_at, expires_at, confirmations, "
                               "last_confirmed_at, deleted_at, mid) VALUES(?1, ?2, ?3, ?4, ?5, "
                               "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)");
    if (!st)
        return MNEMO_DB;
    if (next > 0)
        sqlite3_bind_int64(st, 19, next);
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
    rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "storing a memory");
    sqlite3_finalize(st);
    if (rc)
        return rc;
    *mid = sqlite3_last_insert_rowid(store_db(LITE(m)->st));
    /* Deleted memories stay out of the keyword index. */
    return isnan(f->deleted) ? fts_update(m, *mid, NULL, f->text) : MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * The steps of the writes and reads the engine runs (mem_store, memory.h)
 * -------------------------------------------------------------------- */

/* mem_store.write: the store's lock and an immediate transaction around
 * FN; every write is one (an insert is several statements here). */
static int in_write(mnemo *m, int one_insert, mem_write_fn fn, void *ud)
{
    (void)one_insert;
    writer w;
    int rc = write_begin(m, &w);
    if (!rc)
        rc = fn(m, ud);
    return write_end(m, &w, rc);
}

/* mem_store.insert: the duplicate looked for under the write's lock, then
 * the row, its keyword index and history. */
static int add_row(mnemo *m, const mem_fields *f, double now, char id[64], int64_t *mid,
                   int *dup, json_t **rec)
{
    *rec = NULL;
    mem_row r;
    mem_fields_row(m, f, id, now, &r);
    char other[64];
    int rc = find_duplicate(m, f->hash, r.user, r.agent, r.run, other);
    if (!rc && other[0]) {
        *dup = 1;
        snprintf(id, 64, "%s", other);
        return MNEMO_OK;
    }
    if (!rc)
        rc = insert(m, f, id, now, mid);
    if (!rc)
        rc = history(m, id, "ADD", NULL, f->text, now, NULL);
    return rc;
}

static int update_row(mnemo *m, const char *id, int64_t mid, const mem_fields *f,
                      double importance, int set_expires, const char *old_text, double now)
{
    (void)id;
    int prc = f->text || f->user || f->agent || f->type || f->run ? post_change(m, mid) : MNEMO_OK;
    if (prc)
        return prc;
    sqlite3_stmt *st = prepare(
        m, "UPDATE memories SET text = coalesce(?2, text), hash = coalesce(?3, hash), "
           "category = coalesce(?4, category), importance = coalesce(?5, importance), "
           "type = coalesce(?6, type), subject = coalesce(?7, subject), "
           "user_id = coalesce(?8, user_id), agent_id = coalesce(?9, agent_id), "
           "run_id = coalesce(?10, run_id), metadata = coalesce(?11, metadata), "
           "triggers = coalesce(?12, triggers), "
           "expires_at = CASE WHEN ?13 THEN ?14 ELSE expires_at END, updated_at = ?15 "
           "WHERE mid = ?1");
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_int64(st, 1, mid);
    if (f->text) {
        sqlite3_bind_text(st, 2, f->text, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, f->hash, -1, SQLITE_STATIC);
    }
    if (f->category)
        sqlite3_bind_text(st, 4, f->category, -1, SQLITE_STATIC);
    if (importance >= 0)
        sqlite3_bind_double(st, 5, importance);
    const char *sv[] = {f->type, f->subject, f->user, f->agent, f->run, f->metadata,
                        f->triggers};
    for (int i = 0; i < 7; i++)
        if (sv[i])
            sqlite3_bind_text(st, 6 + i, sv[i], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 13, set_expires);
    if (set_expires)
        bind_time(st, 14, f->expires);
    sqlite3_bind_double(st, 15, now);
    int rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : sqlfail(m, "updating a memory");
    sqlite3_finalize(st);
    if (!rc && importance >= 0)
        rc = post_factors(m, mid);
    if (!rc && old_text)
        rc = fts_update(m, mid, old_text, f->text);
    return rc;
}

static int mark_deleted(mnemo *m, const char *id, int64_t mid, const char *text, double now)
{
    (void)id;
    int rc = post_change(m, mid);
    if (!rc)
        rc = run_mid(m, "UPDATE memories SET deleted_at = ?2 WHERE mid = ?1", mid, now,
                     "deleting a memory");
    return rc ? rc : fts_update(m, mid, text, NULL);
}

static int mark_restored(mnemo *m, const char *id, int64_t mid, const char *text, double now)
{
    (void)id;
    (void)now;
    int rc = post_change(m, mid);
    if (!rc)
        rc = run_mid(m, "UPDATE memories SET deleted_at = NULL WHERE mid = ?1", mid, 0,
                     "restoring a memory");
    return rc ? rc : fts_update(m, mid, NULL, text);
}

static int mark_confirmed(mnemo *m, const char *id, int64_t mid, double now)
{
    (void)id;
    int rc = run_mid(m, "UPDATE memories SET confirmations = confirmations + 1, "
                        "last_confirmed_at = ?2 WHERE mid = ?1",
                     mid, now, "confirming a memory");
    return rc ? rc : post_factors(m, mid);
}

static int drop_vector(mnemo *m, const char *id, int64_t mid)
{
    (void)id;
    return run_mid(m, "DELETE FROM memory_vectors WHERE mid = ?1", mid, 0, "updating a memory");
}

static void embed(mnemo *m, const char *id, int64_t mid, const char *text)
{
    (void)id;
    mem_embed(m, mid, text);
}

/* Whether the snapshot line L, "id" first as export writes it, is of a
 * memory in KEYS (the lines' starts, '{"id":"<id>",'). */
static int line_purged(const map *keys, const char *l)
{
    static const char head[] = "{\"id\":\"";
    if (strncmp(l, head, sizeof head - 1) != 0)
        return 0;
    const char *p = l + sizeof head - 1;
    while (*p && *p != '"')
        p += p[0] == '\\' && p[1] ? 2 : 1;
    char key[2048]; /* an id of 256 bytes, escaped */
    size_t n = (size_t)(p - l) + 2;
    if (*p != '"' || p[1] != ',' || n >= sizeof key)
        return 0;
    memcpy(key, l, n);
    key[n] = 0;
    size_t v;
    return map_get(keys, key, &v);
}

/* Rewrites snapshot DIR/NAME without the lines KEYS names, in its format,
 * through "NAME.part": synced, then renamed over it. Untouched when it
 * holds none of them. */
static int rewrite_backup(mnemo *m, const char *dir, const char *name, const map *keys)
{
    char path[PATH_MAX * 2 + 2], tmp[PATH_MAX * 2 + 8];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *in = fopen(path, "r"), *out = NULL;
    char *line = NULL;
    size_t cap = 0, held = 0;
    int rc = MNEMO_OK;
    if (!in) {
        rc = errno == ENOENT ? MNEMO_OK : MNEMO_IO; /* gone: nothing to forget */
        goto done;
    }
    while (getline(&line, &cap, in) > 0)
        held += (size_t)line_purged(keys, line);
    if (ferror(in)) {
        rc = MNEMO_IO;
        goto done;
    }
    if (!held)
        goto done;
    rewind(in);
    unlink(tmp); /* a purge killed half way left it */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || !(out = fdopen(fd, "w"))) {
        if (fd >= 0)
            close(fd);
        rc = MNEMO_IO;
        goto done;
    }
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0)
        if (!line_purged(keys, line) && fwrite(line, 1, (size_t)len, out) != (size_t)len)
            break;
    if (ferror(in) || ferror(out) || fflush(out) != 0 || fsync(fileno(out)) != 0)
        rc = MNEMO_IO;
    if (fclose(out) != 0)
        rc = MNEMO_IO;
    out = NULL;
    if (!rc && rename(tmp, path) != 0)
        rc = MNEMO_IO;
    if (rc)
        unlink(tmp);
done:
    if (rc)
        core_error(m, rc,
                   "purge: the memory backup %s could not be rewritten without the purged "
                   "memories (%s); nothing was purged",
                   path, strerror(errno));
    if (in)
        fclose(in);
    free(line);
    return rc;
}

/* Takes the memories IDS (N) out of every rolling snapshot too: "forget
 * this" means everywhere. Runs before the purge commits, under the store's
 * lock: killed half way, the purge is not done and is run again. */
static int purge_backups(mnemo *m, char **ids, size_t n)
{
    map keys;
    map_init(&keys);
    char **starts = calloc(n ? n : 1, sizeof *starts), dir[PATH_MAX], **names = NULL;
    size_t nn = 0;
    int rc = starts ? MNEMO_OK : MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        /* The id as export writes it (repaired, escaped). */
        json_t *j = mem_jstr(ids[i]);
        char *e = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        json_decref(j);
        buf k;
        buf_init(&k, 0);
        buf_printf(&k, "{\"id\":%s,", e ? e : "");
        free(e);
        if (!e || buf_err(&k)) {
            buf_cleanup(&k);
            rc = MNEMO_NOMEM;
            break;
        }
        starts[i] = buf_detach(&k);
        rc = map_put(&keys, starts[i], i);
    }
    if (!rc && n && backup_files(m->mem_path, ".jsonl", dir, &names, &nn) == MNEMO_NOMEM)
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < nn; i++)
        rc = rewrite_backup(m, dir, names[i], &keys);
    if (!rc && nn) { /* the renames, durable */
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
    }
    if (rc == MNEMO_NOMEM)
        core_error(m, rc, "out of memory");
    free_names(names, nn);
    for (size_t i = 0; starts && i < n; i++)
        free(starts[i]);
    free(starts);
    map_cleanup(&keys);
    return rc;
}

/* The deleted memories a purge removes: all of them, or ID. */
#define PURGE_COND "deleted_at IS NOT NULL AND (?1 IS NULL OR id = ?1)"

static int count_deleted(mnemo *m, const char *id, size_t *n)
{
    *n = 0;
    sqlite3_stmt *st = prepare(m, "SELECT count(*) FROM memories WHERE " PURGE_COND);
    if (!st)
        return MNEMO_DB;
    if (id)
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_ROW ? MNEMO_OK : sqlfail(m, "purging memories");
    if (!rc)
        *n = (size_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

/* mem_store.purge: the rows, then the backups (purge_backups), before the
 * write commits. */
static int purge(mnemo *m, const char *id)
{
    char **ids = NULL;
    size_t nids = 0, cap = 0;
    int rc = MNEMO_OK;
    sqlite3_stmt *st = prepare(m, "SELECT id FROM memories WHERE " PURGE_COND);
    if (!st)
        return MNEMO_DB;
    if (id)
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        if (nids == cap) {
            cap = cap ? 2 * cap : 16;
            char **g = realloc(ids, cap * sizeof *g);
            if (!g) {
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
                break;
            }
            ids = g;
        }
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (!(ids[nids] = strdup(t ? t : "")))
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
        else
            nids++;
    }
    sqlite3_finalize(st);
    static const char *const sql[] = {
        "DELETE FROM memory_history WHERE memory_id IN (SELECT id FROM memories WHERE "
        PURGE_COND ")",
        "DELETE FROM memory_vectors WHERE mid IN (SELECT mid FROM memories WHERE " PURGE_COND
        ")",
        "DELETE FROM memories WHERE " PURGE_COND};
    for (size_t i = 0; !rc && i < sizeof sql / sizeof *sql; i++) {
        if (!(st = prepare(m, sql[i]))) {
            rc = MNEMO_DB;
            break;
        }
        if (id)
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sqlfail(m, "purging memories");
        sqlite3_finalize(st);
    }
    if (!rc)
        rc = purge_backups(m, ids, nids);
    for (size_t i = 0; i < nids; i++)
        free(ids[i]);
    free(ids);
    return rc;
}

static json_t *history_json(mnemo *m, const char *id, int *rc)
{
    *rc = MNEMO_OK;
    sqlite3_stmt *st = prepare(m, "SELECT event, old_text, new_text, at, detail FROM memory_history "
                               "WHERE memory_id = ?1 ORDER BY hid");
    if (!st) {
        *rc = MNEMO_DB;
        return NULL;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    json_t *a = json_array();
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(a, mem_history_entry((const char *)sqlite3_column_text(st, 0),
                                                   (const char *)sqlite3_column_text(st, 1),
                                                   (const char *)sqlite3_column_text(st, 2),
                                                   sqlite3_column_double(st, 3),
                                                   (const char *)sqlite3_column_text(st, 4)));
    if (s != SQLITE_DONE) {
        *rc = sqlfail(m, "reading a memory's history");
        json_decref(a);
        a = NULL;
    }
    sqlite3_finalize(st);
    return a;
}

static int read_history(mnemo *m, const char *id, json_t **out)
{
    json_t *j = NULL;
    int rc = load(m, id, 0, &j, NULL);
    json_decref(j);
    if (!rc)
        *out = history_json(m, id, &rc);
    return rc;
}

/* ----------------------------------------------------------------------
 * Listing
 * -------------------------------------------------------------------- */

/* A text filter's keyword index drives a list when it matches at most this
 * many memories: their rows are read and sorted. More, and the list reads
 * the user's memories newest first (the page fills soon), as without. */
#define FTS_DRIVE_MAX 20000

/* Appends to MATCH the words of the substring NEEDLE (contains or
 * icontains) that every memory containing it has in the keyword index:
 * the words with ASCII white space on both sides inside the needle, of
 * ASCII letters only, that the tokenizer T indexes as they are (not
 * changed by stemming). Such a word is a whole word of the text as well
 * (between the same spaces), made of letters that fold to it (ASCII, or
 * a ligature, the Kelvin sign...), which the tokenizer normalises to the
 * same letters and keeps whole, or indexes whole when it is CamelCase.
 * The needle's first and last pieces may be parts of longer words, and
 * other words may be changed by stemming, accents or identifiers: left
 * out, since a prefilter must keep every memory that matches. */
static int fts_needle_words(tok *t, const char *needle, buf *match)
{
    char *f = NULL;
    size_t n = 0;
    int rc = mfilter_fold(needle, strlen(needle), &f, &n);
    if (rc)
        return rc == MNEMO_NOMEM ? rc : MNEMO_OK;
    for (size_t i = 0; i < n;) {
        if (!strchr(" \t\n\r\f\v", f[i]) || !f[i]) {
            i++;
            continue;
        }
        size_t s = ++i;
        while (i < n && f[i] >= 'a' && f[i] <= 'z')
            i++;
        if (i == s || i >= n || !f[i] || !strchr(" \t\n\r\f\v", f[i]) ||
            i - s > TOK_MAX_BYTES)
            continue; /* not a whole word of letters: I is at what ends it */
        char w[TOK_MAX_BYTES + 1];
        int len = tok_word(t, f + s, i - s, w);
        if ((size_t)len == i - s && memcmp(w, f + s, i - s) == 0)
            buf_printf(match, "%s\"%.*s\"", match->len ? " AND " : "", len, w);
    }
    free(f);
    return buf_err(match) ? MNEMO_NOMEM : MNEMO_OK;
}

/* The needles of the contains and icontains tests on text in filter J
 * that every match passes (the filter's own keys, and its ANDs, not under
 * OR or NOT), into MATCH. */
static int fts_filter_words(tok *t, const json_t *j, int depth, buf *match)
{
    const char *key;
    json_t *v;
    int rc = MNEMO_OK;
    if (!json_is_object(j) || depth > 32)
        return rc;
    json_object_foreach((json_t *)j, key, v)
    {
        if (!strcmp(key, "text") && json_is_object(v)) {
            const char *ops[] = {"contains", "icontains"};
            for (size_t i = 0; !rc && i < 2; i++)
                if (json_is_string(json_object_get(v, ops[i])))
                    rc = fts_needle_words(t, json_string_value(json_object_get(v, ops[i])),
                                          match);
        } else if (!strcmp(key, "AND") && json_is_array(v)) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e) if (!rc) rc = fts_filter_words(t, e, depth + 1, match);
        }
        if (rc)
            break;
    }
    return rc;
}

/* The keyword query of the words O's filter requires, into MATCH (empty:
 * none, or they match more than FTS_DRIVE_MAX memories). The index holds
 * every memory not deleted (as search relies on), deleted ones not
 * always: a list of those reads them all. */
static int fts_prefilter(mnemo *m, const mem_opts *o, buf *match)
{
    if (o->deleted || !o->filters || !strstr(o->filters, "contains"))
        return MNEMO_OK;
    tok *t = NULL;
    int rc = lite_qtok(m, &t);
    json_t *j = rc ? NULL : json_loads(o->filters, 0, NULL);
    if (j)
        rc = fts_filter_words(t, j, 0, match);
    json_decref(j);
    if (rc || !match->len)
        return rc;
    char sql[96];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1 "
             "LIMIT %d)",
             FTS_DRIVE_MAX + 1);
    sqlite3_stmt *st = prepare(m, sql);
    if (!st)
        return MNEMO_DB;
    sqlite3_bind_text(st, 1, match->data, -1, SQLITE_STATIC);
    long long n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    if (n < 0)
        return sqlfail(m, "reading the memories' keyword index");
    if (n > FTS_DRIVE_MAX)
        match->len = 0;
    return MNEMO_OK;
}

/* Prepares "HEAD FROM memories m WHERE <what O selects at NOW> TAIL" into
 * *ST, its arguments bound. The indexes memories_recent and
 * memories_category (store.c) hold the scope's columns, so SQLite reads a
 * user's memories newest first from them, checks the scope on the entries
 * and reads only the rows that pass. A contains or icontains filter whose
 * words the keyword index can answer (fts_prefilter) reads those words'
 * memories instead: the filter still decides on each. */
static int select_where(mnemo *m, const mem_opts *o, double now, const char *head,
                        const char *tail, sqlite3_stmt **st)
{
    *st = NULL;
    buf w, sql, match;
    buf_init(&w, 1 << 20);
    buf_init(&sql, 1 << 20);
    buf_init(&match, 1 << 16);
    mfilter args;
    mfilter_init(&args);
    int rc = mem_where(o, now, &w, &args), first = 1;
    if (!rc)
        rc = fts_prefilter(m, o, &match);
    if (!rc && match.len) {
        /* CROSS JOIN: the keyword index drives, once. */
        buf_printf(&sql,
                   "%s FROM memories_fts CROSS JOIN memories m ON m.mid = memories_fts.rowid "
                   "WHERE memories_fts MATCH ? AND %s%s",
                   head, w.data, tail);
        first = 2;
    } else if (!rc) {
        buf_printf(&sql, "%s FROM memories m WHERE %s%s", head, w.data, tail);
    }
    if (!rc) {
        if (buf_err(&sql))
            rc = MNEMO_NOMEM;
        else if (!(*st = prepare(m, sql.data)))
            rc = MNEMO_DB;
    }
    if (!rc && ((first == 2 && sqlite3_bind_text(*st, 1, match.data, -1, SQLITE_TRANSIENT) !=
                                   SQLITE_OK) ||
                lite_filter_bind(&args, *st, first) != SQLITE_OK ||
                lite_filter_bind(&o->filter, *st, first + (int)args.nargs) != SQLITE_OK))
        rc = sqlfail(m, "binding");
    mfilter_cleanup(&args);
    buf_cleanup(&w);
    buf_cleanup(&sql);
    buf_cleanup(&match);
    return rc;
}

static int list(mnemo *m, const mem_opts *o, double now, json_t *out)
{
    char tail[96];
    snprintf(tail, sizeof tail, " ORDER BY m.created_at DESC, m.mid DESC LIMIT %d OFFSET %d",
             o->limit, o->offset);
    sqlite3_stmt *st;
    int rc = select_where(m, o, now, "SELECT " MEM_COLS, tail, &st), s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *r = mem_json(st, 0);
        if (!r)
            rc = MNEMO_NOMEM;
        else
            json_array_append_new(out, r);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sqlfail(m, "listing memories");
    sqlite3_finalize(st);
    return rc;
}

/* A count that cannot be read leaves *N as it is: the rows listed. */
static int count(mnemo *m, const mem_opts *o, double now, long long max, long long *n)
{
    char tail[64] = "";
    if (max > 0)
        snprintf(tail, sizeof tail, " LIMIT %lld)", max);
    sqlite3_stmt *st;
    int rc = select_where(m, o, now, max > 0 ? "SELECT count(*) FROM (SELECT 1" : "SELECT count(*)",
                          tail, &st);
    if (!rc) {
        /* A damaged index says so: never a short total. */
        if (sqlite3_step(st) == SQLITE_ROW)
            *n = sqlite3_column_int64(st, 0);
        else
            rc = sqlfail(m, "counting memories");
    }
    sqlite3_finalize(st);
    return rc;
}

/* Spans from the covering indexes memories_recent and memories_category
 * (user, category and created_at are in both): one GROUP BY over the
 * entries. The span's number is the floor of (created_at - ORIGIN) / WIDTH
 * (CAST truncates, and a negative quotient's is one less), so a time
 * before ORIGIN falls in the span before it as on PostgreSQL. */
static int count_spans(mnemo *m, const mem_opts *o, double now, double from, long long width,
                       long long origin, mem_span_fn fn, void *ud)
{
    char head[320], tail[96] = ") GROUP BY k, c";
    snprintf(head, sizeof head,
             "SELECT k * %lld + %lld, c, count(*) FROM (SELECT "
             "CAST((m.created_at - %lld) / %lld.0 AS INTEGER) - "
             "((m.created_at - %lld) / %lld.0 < CAST((m.created_at - %lld) / %lld.0 AS INTEGER)) "
             "AS k, m.category AS c",
             width, origin, origin, width, origin, width, origin, width);
    if (!isnan(from))
        snprintf(tail, sizeof tail, " AND m.created_at >= %.17g) GROUP BY k, c", from);
    sqlite3_stmt *st;
    int rc = select_where(m, o, now, head, tail, &st), s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(m, ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
                sqlite3_column_int64(st, 2));
    if (!rc && s != SQLITE_DONE)
        rc = sqlfail(m, "counting memories");
    sqlite3_finalize(st);
    return rc;
}

static int export_rows(mnemo *m, mem_export_fn fn, void *ud);
static int import(mnemo *m, const char *jsonl, size_t len, size_t *nin, size_t *nskip);
static void imported(mnemo *m);

const mem_store mem_lite_store = {
    .open = memlite_open,
    .write = in_write,
    .load = load,
    .find_duplicate = find_duplicate,
    .insert = add_row,
    .history = history,
    .update_row = update_row,
    .mark_deleted = mark_deleted,
    .mark_restored = mark_restored,
    .mark_confirmed = mark_confirmed,
    .drop_vector = drop_vector,
    .embed = embed,
    .catch_up = NULL, /* the writes keep FTS5 */
    .count_deleted = count_deleted,
    .purge = purge,
    .read_history = read_history,
    .list = list,
    .count = count,
    .count_spans = count_spans,
    .export_rows = export_rows,
    .import = import,
    .imported = imported,
};

/* ----------------------------------------------------------------------
 * Export and import
 * -------------------------------------------------------------------- */

/* Every memory with its history, in one snapshot (mem_store.export_rows). */
static int export_rows(mnemo *m, mem_export_fn fn, void *ud)
{
    sqlite3 *db = store_db(LITE(m)->st);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *st = prepare(m, "SELECT " MEM_COLS " FROM memories m ORDER BY m.mid");
    int rc = st ? fn(m, ud, NULL, NULL) : MNEMO_DB, s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *j = mem_json(st, 0);
        if (!j) {
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
            break;
        }
        json_t *h = history_json(m, json_string_value(json_object_get(j, "id")), &rc);
        if (rc) {
            json_decref(j);
            break;
        }
        rc = fn(m, ud, j, h);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sqlfail(m, "exporting memories");
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
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
    if (load(m, f->id, 0, &j, NULL) == MNEMO_OK) {
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

/* The lines one by one, in one write (mem_store.import). */
static int import(mnemo *m, const char *jsonl, size_t len, size_t *nin, size_t *nskip)
{
    lite_import li = {0, 0};
    writer w = {-1, 0};
    int rc = write_begin(m, &w);
    if (!rc)
        rc = mem_import_each(m, jsonl, len, lite_import_line, &li);
    rc = write_end(m, &w, rc);
    *nin = li.nin;
    *nskip = li.nskip;
    return rc;
}

static void imported(mnemo *m) { mem_embed_pending(m); }

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
        int s = salvage_memories(real, store_db(LITE(m)->st), &r, &err);
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
