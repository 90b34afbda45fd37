/*
 * store.c - the SQLite index (see store.h).
 *
 * Layout: meta (key/value), files (one row per file seen, indexed or
 * skipped), chunks (text and line ranges), and two external-content FTS5
 * tables: chunks_fts over chunk text and files_fts over paths. The FTS
 * tables are kept in step by single-row INSERT ... VALUES statements, not
 * by triggers or INSERT ... SELECT: those run inside a statement savepoint,
 * at which FTS5 flushes its pending terms, so they would write one tiny
 * segment per row and make bulk indexing three times slower. All SQL is
 * parameterised.
 */
#include "store/sqlite/store.h"
#include "store/sqlite/store_int.h"
#include "engine/sync.h"

#include "store/sqlite/kwpost.h"
#include "store/sqlite/lite_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnemo.h"


static const char *const sql_text[S__COUNT] = {
    [S_FILE_INSERT] = "INSERT INTO files(path, path_lc, name_lc, stem_lc, size, mtime_ns, hash, "
                      "status, reason, indexed_at, source) VALUES(?1, lower(?1), lower(?2), "
                      "lower(?3), ?4, ?5, ?6, ?7, ?8, unixepoch(), ?9)",
    [S_FILE_UPDATE] = "UPDATE files SET size = ?2, mtime_ns = ?3, hash = ?4, status = ?5, "
                      "reason = ?6, indexed_at = unixepoch() WHERE id = ?1",
    [S_FILE_RENAME] = "UPDATE files SET path = ?2, path_lc = lower(?2), name_lc = lower(?3), "
                      "stem_lc = lower(?4) WHERE id = ?1",
    [S_FILE_DELETE] = "DELETE FROM files WHERE id = ?1",
    [S_CHUNKS_DELETE] = "DELETE FROM chunks WHERE file_id = ?1 AND seq >= ?2",
    [S_CHUNK_INSERT] = "INSERT INTO chunks(file_id, seq, start_line, end_line, hash, importance, "
                       "triggers, text, id, line_map) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                       "?10)",
    [S_FILE_NCHUNKS] = "UPDATE files SET nchunks = ?2 WHERE id = ?1",
    [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [S_META_SET] = "INSERT INTO meta(key, value) VALUES(?1, ?2) "
                   "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [S_FTS_CHUNK_INSERT] = "INSERT INTO chunks_fts(rowid, text) VALUES(?1, ?2)",
    [S_FTS_CHUNK_DELETE] = "INSERT INTO chunks_fts(chunks_fts, rowid, text) "
                           "VALUES('delete', ?1, ?2)",
    [S_CHUNKS_OF_FILE] = "SELECT id, text FROM chunks WHERE file_id = ?1 AND seq >= ?2",
    [S_FTS_FILE_INSERT] = "INSERT INTO files_fts(rowid, path) VALUES(?1, ?2)",
    [S_FTS_FILE_DELETE] = "INSERT INTO files_fts(files_fts, rowid, path) VALUES('delete', ?1, ?2)",
    [S_FILE_PATH] = "SELECT path FROM files WHERE id = ?1",
    [S_FILE_TIME] = "UPDATE files SET time = ?2 WHERE id = ?1",
    [S_FILE_MIME] = "UPDATE files SET mime = ?2 WHERE id = ?1",
};

/* Schema version 1. The tokenizer language is substituted for %s. */
static const char schema_v1[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;\n"
    "CREATE TABLE files(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  path TEXT NOT NULL UNIQUE,\n"
    "  path_lc TEXT NOT NULL, name_lc TEXT NOT NULL, stem_lc TEXT NOT NULL,\n"
    "  size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,\n"
    "  hash TEXT NOT NULL DEFAULT '',\n"
    "  status INTEGER NOT NULL DEFAULT 0,\n"
    "  reason TEXT,\n"
    "  nchunks INTEGER NOT NULL DEFAULT 0,\n"
    "  indexed_at INTEGER NOT NULL);\n"
    "CREATE INDEX files_path_lc ON files(path_lc);\n"
    "CREATE INDEX files_name_lc ON files(name_lc);\n"
    "CREATE INDEX files_stem_lc ON files(stem_lc);\n"
    "CREATE TABLE chunks(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  file_id INTEGER NOT NULL REFERENCES files(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,\n"
    "  hash TEXT NOT NULL,\n"
    "  importance INTEGER NOT NULL DEFAULT 0,\n"
    "  triggers TEXT NOT NULL DEFAULT '',\n"
    "  text TEXT NOT NULL);\n"
    "CREATE INDEX chunks_file ON chunks(file_id, seq);\n"
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id',\n"
    "  tokenize='mnemo %s');\n"
    "CREATE VIRTUAL TABLE files_fts USING fts5(path, content='files', content_rowid='id',\n"
    "  tokenize='mnemo %s');\n";

/* Forward migrations: migrations[v] upgrades schema v to v + 1. A fresh
 * index is created at version 1 and migrated in the same transaction. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    NULL,
    /* 1 -> 2: embeddings. One vector per chunk for the current embedding
     * identity (meta vec_identity), and a cache of embeddings by provider,
     * model, dimensions, input type and text hash. */
    "CREATE TABLE chunk_vectors(chunk_id INTEGER PRIMARY KEY, vec BLOB NOT NULL);\n"
    "CREATE TABLE embed_cache(key TEXT PRIMARY KEY, vec BLOB NOT NULL,\n"
    "  used_at INTEGER NOT NULL) WITHOUT ROWID;\n"
    "CREATE INDEX embed_cache_used ON embed_cache(used_at);\n",
    /* 2 -> 3: session transcripts. Files know their source (memory or
     * sessions); a transcript chunk maps each of its text lines to the
     * JSONL line it came from (u32 per line). */
    "ALTER TABLE files ADD COLUMN source TEXT NOT NULL DEFAULT 'memory';\n"
    "ALTER TABLE chunks ADD COLUMN line_map BLOB;\n",
    /* 3 -> 4: a transcript's time (its newest message, Unix seconds). */
    "ALTER TABLE files ADD COLUMN time REAL NOT NULL DEFAULT 0;\n",
    /* 4 -> 5: structured memories, their history and vectors. Unlike the
     * rest of the index these are not rebuilt from files: a fresh build
     * copies them over (store_carry_memories). %s is the language. */
    "CREATE TABLE memories(mid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,\n"
    "  text TEXT NOT NULL, hash TEXT NOT NULL, category TEXT NOT NULL,\n"
    "  importance REAL NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,\n"
    "  user_id TEXT NOT NULL, agent_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  metadata TEXT NOT NULL, triggers TEXT NOT NULL, created_at REAL NOT NULL,\n"
    "  updated_at REAL NOT NULL, expires_at REAL, confirmations INTEGER NOT NULL DEFAULT 0,\n"
    "  last_confirmed_at REAL, deleted_at REAL);\n"
    "CREATE UNIQUE INDEX memories_dup ON memories(hash, user_id, agent_id, run_id)\n"
    "  WHERE deleted_at IS NULL;\n"
    "CREATE INDEX memories_scope ON memories(user_id, created_at);\n"
    "CREATE TABLE memory_history(hid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL,\n"
    "  event TEXT NOT NULL, old_text TEXT, new_text TEXT, at REAL NOT NULL,\n"
    "  detail TEXT);\n"
    "CREATE INDEX memory_history_id ON memory_history(memory_id, hid);\n"
    "CREATE TABLE memory_vectors(mid INTEGER PRIMARY KEY, vec BLOB NOT NULL);\n"
    "CREATE VIRTUAL TABLE memories_fts USING fts5(text, content='memories',\n"
    "  content_rowid='mid', tokenize='mnemo %s');\n",
    /* 5 -> 6: memories move to their own file (store_attach_memories moves
     * them and drops these tables; older mnemos refuse version 6). */
    NULL,
    /* 6 -> 7: a chunk's vectors are those of its parts (chunk_parts), one
     * after the other in vec. */
    "ALTER TABLE chunk_vectors ADD COLUMN parts INTEGER NOT NULL DEFAULT 1;\n",
    /* 7 -> 8: the fixed texts' vectors that vector scores are measured
     * against (engine/calib.h), for one embedding setup at a time; each
     * part's cache key (vec_keys), so that a vector is kept once: the
     * index's own while its chunk lives, the cache's after; the cache as a
     * rowid table (a row of 1.5 KB and more overflowed a WITHOUT ROWID
     * page: 4.5 KB a vector). */
    "CREATE TABLE IF NOT EXISTS vec_calib(identity TEXT PRIMARY KEY, vecs BLOB NOT NULL)\n"
    "  WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS vec_keys(key TEXT PRIMARY KEY, chunk_id INTEGER NOT NULL,\n"
    "  part INTEGER NOT NULL) WITHOUT ROWID;\n"
    "CREATE INDEX IF NOT EXISTS vec_keys_chunk ON vec_keys(chunk_id);\n"
    "CREATE TABLE embed_cache_new(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,\n"
    "  vec BLOB NOT NULL, used_at INTEGER NOT NULL);\n"
    "INSERT INTO embed_cache_new(key, vec, used_at) SELECT key, vec, used_at FROM embed_cache;\n"
    "DROP TABLE embed_cache;\n"
    "ALTER TABLE embed_cache_new RENAME TO embed_cache;\n"
    "CREATE INDEX embed_cache_used ON embed_cache(used_at);\n",
    /* 8 -> 9: images and audio (multimodal): a media file's MIME type, as
     * its content sniffed; NULL for notes. Their chunks have ids from
     * STORE_MEDIA_ID_BASE up. */
    "ALTER TABLE files ADD COLUMN mime TEXT;\n",
    /* 9 -> 10: the chunks' postings in blocks with score bounds, beside
     * FTS5's (kwpost.h). Empty after the upgrade: the next sync reads the
     * chunks back into them, searches use FTS5 alone until then. */
    KWPOST_SCHEMA,
};

/* The indexes a list reads (schema 2 of the memory store): a user's
 * memories newest first, all of them or those of one category, each entry
 * carrying the columns of the scope's conditions (run, category, type,
 * agent, deleted, expiry). A list then reads about as many entries as it
 * returns, and the rows it returns; a count reads entries only. The order
 * is the list's (created_at, mid), so no sort. They replace memories_scope
 * (user_id, created_at), their prefix. */
#define MEM_LIST_INDEXES                                                                       \
    "CREATE INDEX IF NOT EXISTS mem.memories_recent ON memories(user_id, created_at, mid,\n"  \
    "  run_id, category, type, agent_id, deleted_at, expires_at);\n"                         \
    "CREATE INDEX IF NOT EXISTS mem.memories_category ON memories(user_id, category,\n"        \
    "  created_at, mid, run_id, type, agent_id, deleted_at, expires_at);\n"

/* The memory store's schema version (memory_meta "schema"; none is 1). A
 * newer store is left as it is: its indexes are a superset. */
#define MEM_SCHEMA_VERSION 3
#define MEM_SCHEMA_VERSION_TEXT "3"

/* The memory store: structured memories, their history and vectors, in a
 * file of their own that no rebuild replaces (attached as "mem"). The
 * columns are those of schema 5's tables, so rows move with SELECT *. %s
 * is the language. */
static const char mem_schema[] =
    "CREATE TABLE IF NOT EXISTS mem.memory_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)\n"
    "  WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS mem.memories(mid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,\n"
    "  text TEXT NOT NULL, hash TEXT NOT NULL, category TEXT NOT NULL,\n"
    "  importance REAL NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,\n"
    "  user_id TEXT NOT NULL, agent_id TEXT NOT NULL, run_id TEXT NOT NULL,\n"
    "  metadata TEXT NOT NULL, triggers TEXT NOT NULL, created_at REAL NOT NULL,\n"
    "  updated_at REAL NOT NULL, expires_at REAL, confirmations INTEGER NOT NULL DEFAULT 0,\n"
    "  last_confirmed_at REAL, deleted_at REAL);\n"
    "CREATE UNIQUE INDEX IF NOT EXISTS mem.memories_dup ON memories(hash, user_id, agent_id,\n"
    "  run_id) WHERE deleted_at IS NULL;\n"
    MEM_LIST_INDEXES
    "CREATE TABLE IF NOT EXISTS mem.memory_history(hid INTEGER PRIMARY KEY,\n"
    "  memory_id TEXT NOT NULL, event TEXT NOT NULL, old_text TEXT, new_text TEXT,\n"
    "  at REAL NOT NULL, detail TEXT);\n"
    "CREATE INDEX IF NOT EXISTS mem.memory_history_id ON memory_history(memory_id, hid);\n"
    "CREATE TABLE IF NOT EXISTS mem.memory_vectors(mid INTEGER PRIMARY KEY, vec BLOB NOT NULL);\n"
    "CREATE VIRTUAL TABLE IF NOT EXISTS mem.memories_fts USING fts5(text, content='memories',\n"
    "  content_rowid='mid', tokenize='mnemo %s');\n"
    /* Schema 3: the memories' postings (kwpost.h), and the memories whose
     * text changed since their postings were written (memlite.c). */
    "CREATE TABLE IF NOT EXISTS mem.kw_seg(term TEXT NOT NULL, last INTEGER NOT NULL,\n"
    "  n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(term, last)) WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS mem.kw_dead(term TEXT NOT NULL, id INTEGER NOT NULL,\n"
    "  PRIMARY KEY(term, id)) WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS mem.kw_mark(range INTEGER PRIMARY KEY, mark INTEGER NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS mem.kw_moved(id INTEGER PRIMARY KEY,\n"
    "  recorded INTEGER NOT NULL DEFAULT 0);\n"
    /* A writer that does not keep the postings (an older mnemo) still
     * records what it changes below the mark, unrecorded under its words:
     * the postings are then not used until a write writes them again. */
    "CREATE TRIGGER IF NOT EXISTS mem.kw_moved_update AFTER UPDATE OF text, user_id, agent_id,\n"
    "  type, run_id, deleted_at ON memories\n"
    "  WHEN old.mid <= (SELECT mark FROM kw_mark WHERE range = 0) AND (old.text IS NOT new.text\n"
    "  OR old.user_id IS NOT new.user_id OR old.agent_id IS NOT new.agent_id OR old.type IS NOT\n"
    "  new.type OR old.run_id IS NOT new.run_id OR old.deleted_at IS NOT new.deleted_at)\n"
    "  BEGIN INSERT OR IGNORE INTO kw_moved(id) VALUES(old.mid); END;\n"
    "CREATE TRIGGER IF NOT EXISTS mem.kw_moved_insert AFTER INSERT ON memories\n"
    "  WHEN new.mid <= (SELECT mark FROM kw_mark WHERE range = 0)\n"
    "  BEGIN INSERT OR IGNORE INTO kw_moved(id, recorded) VALUES(new.mid, 1); END;\n"
    "CREATE TRIGGER IF NOT EXISTS mem.kw_moved_delete AFTER DELETE ON memories\n"
    "  WHEN old.mid <= (SELECT mark FROM kw_mark WHERE range = 0) AND old.deleted_at IS NULL\n"
    "  BEGIN INSERT OR IGNORE INTO kw_moved(id) VALUES(old.mid); END;\n"
    /* per user, its agents in the postings */
    "CREATE TABLE IF NOT EXISTS mem.kw_agents(user_id TEXT NOT NULL, agent_id TEXT NOT NULL,\n"
    "  PRIMARY KEY(user_id, agent_id)) WITHOUT ROWID;\n"
    /* per user, the largest factor inputs of the memories in the postings */
    "CREATE TABLE IF NOT EXISTS mem.kw_user(user_id TEXT PRIMARY KEY, importance REAL NOT NULL,\n"
    "  confirmations REAL NOT NULL, ref REAL NOT NULL, about INTEGER NOT NULL) WITHOUT ROWID;\n"
    /* whether a user's memories have expired: their postings still count */
    "CREATE INDEX IF NOT EXISTS mem.memories_expiry ON memories(user_id, expires_at)\n"
    "  WHERE expires_at IS NOT NULL AND deleted_at IS NULL;\n";

/* The memories' postings forgotten, with their text index rebuilt: the
 * next write makes them again. */
#define MEM_POSTINGS_DROP                                                                      \
    "DELETE FROM mem.kw_seg; DELETE FROM mem.kw_dead; DELETE FROM mem.kw_mark;"                \
    "DELETE FROM mem.kw_moved; DELETE FROM mem.kw_user; DELETE FROM mem.kw_agents;"

/* After a 'rebuild' of the memories' text index, which reads every row:
 * deleted memories are left out of it, as their deletion did (a restore
 * adds them back; in twice, their words would count twice). */
#define MEM_FTS_UNDELETED                                                                      \
    "INSERT INTO mem.memories_fts(memories_fts, rowid, text) SELECT 'delete', mid, text "      \
    "FROM mem.memories WHERE deleted_at IS NOT NULL;"

/* The memory tables of schema 5, in the index itself. */
static const char drop_main_memories[] =
    "DROP TABLE IF EXISTS main.memories_fts; DROP TABLE IF EXISTS main.memory_vectors;"
    "DROP TABLE IF EXISTS main.memory_history; DROP TABLE IF EXISTS main.memories;";


int store_code(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return MNEMO_OK;
    case SQLITE_NOMEM:
        return MNEMO_NOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return MNEMO_BUSY;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return MNEMO_CORRUPT;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return MNEMO_IO;
    default:
        return MNEMO_DB;
    }
}

sqlite3 *store_db(store *s) { return s->db; }
const char *store_path(const store *s) { return s->path; }

char *store_col_dup(sqlite3_stmt *st, int c)
{
    const char *v = (const char *)sqlite3_column_text(st, c);
    return strdup(v ? v : "");
}
fts_rank *store_rank(store *s) { return &s->rank; }

fts_rank *store_mrank(store *s) { return &s->mrank; }
const char *store_errmsg(store *s) { return s && s->db ? sqlite3_errmsg(s->db) : "no database"; }

/* Replaces the message in ERR (may be NULL). */
static void fmt(buf *err, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void fmt(buf *err, const char *f, ...)
{
    if (!err)
        return;
    buf_reset(err);
    err->err = 0;
    va_list ap;
    va_start(ap, f);
    buf_vprintf(err, f, ap);
    va_end(ap);
}

sqlite3_stmt *store_stmt(store *s, int id)
{
    if (!s->st[id] && sqlite3_prepare_v3(s->db, sql_text[id], -1, SQLITE_PREPARE_PERSISTENT,
                                         &s->st[id], NULL) != SQLITE_OK)
        return NULL;
    sqlite3_reset(s->st[id]);
    sqlite3_clear_bindings(s->st[id]);
    return s->st[id];
}

/* Steps a bound statement to completion. */
int store_run(store *s, sqlite3_stmt *st)
{
    if (!st)
        return store_code(sqlite3_errcode(s->db));
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? MNEMO_OK : store_code(rc);
}

int store_exec(store *s, const char *sql)
{
    return store_code(sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

int store_index_files_state(store *s)
{
    return store_exec(s, "CREATE INDEX IF NOT EXISTS files_state ON files(id, status, source, "
                         "nchunks)");
}

/* Runs migration V (which may name the language with %s). */
static int run_migration(store *s, int v, const char *language)
{
    if (!migrations[v])
        return MNEMO_OK;
    char *sql = sqlite3_mprintf(migrations[v], language ? language : "english");
    if (!sql)
        return MNEMO_NOMEM;
    int rc = store_exec(s, sql);
    sqlite3_free(sql);
    return rc;
}

static store *store_alloc(const char *path)
{
    store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->path = strdup(path);
    if (!s->path) {
        free(s);
        return NULL;
    }
    return s;
}

void store_close(store *s)
{
    if (!s)
        return;
    for (int i = 0; i < S__COUNT; i++)
        sqlite3_finalize(s->st[i]);
    kwpost_free(s->kw);
    fts_rank_cleanup(&s->rank);
    fts_rank_cleanup(&s->mrank);
    if (s->db)
        sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

/* SQLite counts every allocation under a global mutex for statistics mnemo
 * never reads (sqlite3_memory_used and the heap limits): off, when SQLite is
 * not yet initialised in this process (a host that already uses it keeps
 * its settings; the call then fails and changes nothing). */
static void sqlite_once(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* Opens the SQLite connection and registers the FTS5 glue. */
static int connect(store *s, int flags, int busy_ms)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_once);
    int rc = sqlite3_open_v2(s->path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, busy_ms);
    s->mrank.docsize_table = "memories_fts_docsize";
    if ((rc = fts_register(s->db, &s->rank, &s->feed)) != SQLITE_OK ||
        (rc = fts_register_collect(s->db, "mnemo_collect_mem", &s->mrank)) != SQLITE_OK)
        return rc;
    return lite_filter_register(s->db);
}

/* Whether PATH holds anything. Never opens the file: closing any descriptor
 * of a database file drops every POSIX lock this process holds on it, which
 * would let another process checkpoint and reset the WAL under this
 * process's other connections (a daemon has one per worker). */
static int file_kind(const char *path, buf *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return MNEMO_NOTFOUND;
        fmt(err, "cannot open index %s: %s", path, strerror(errno));
        return MNEMO_IO;
    }
    if (st.st_size == 0)
        return MNEMO_NOTFOUND;
    return MNEMO_OK;
}

static int not_a_database(const char *path, buf *err)
{
    fmt(err,
        "%s is not a SQLite database, so not a mnemo index; move it away or choose "
        "another index path with --db",
        path);
    return MNEMO_CORRUPT;
}

static int foreign(const char *path, const char *why, buf *err)
{
    fmt(err,
        "%s is a SQLite database but not a mnemo index (%s); mnemo never writes, moves or "
        "replaces it: move it away or choose another index path with --db",
        path, why);
    return MNEMO_CORRUPT;
}

static int pragma_int(sqlite3 *db, const char *sql, int *out)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        *out = sqlite3_column_int(q, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc;
}

/* The first column of SQL's first row as text (*out: sqlite3_free). */
static int pragma_text(sqlite3 *db, const char *sql, char **out)
{
    *out = NULL;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(q, 0);
        *out = sqlite3_mprintf("%s", v ? v : "");
        rc = *out ? SQLITE_OK : SQLITE_NOMEM;
    }
    sqlite3_finalize(q);
    return rc;
}

/* Whether the main database has every table an index has (an index written
 * before application ids were set carries none). -1 when unreadable. */
static int index_tables(sqlite3 *db)
{
    int n = 0;
    if (pragma_int(db,
                   "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name IN "
                   "('meta', 'files', 'chunks', 'chunks_fts', 'files_fts')",
                   &n) != SQLITE_OK)
        return -1;
    return n == 5;
}

static int set_app_id(store *s, const char *schema, int id)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA %s.application_id = %d", schema, id);
    return store_exec(s, sql);
}

static int migrate(store *s, int from, buf *err)
{
    char *lang = NULL;
    if (store_begin(s))
        goto fail;
    store_meta_get(s, "language", &lang);
    for (int v = from; v < STORE_SCHEMA_VERSION; v++) {
        if (run_migration(s, v, lang)) {
            free(lang);
            goto fail;
        }
    }
    free(lang);
    char num[16];
    snprintf(num, sizeof num, "%d", STORE_SCHEMA_VERSION);
    if (store_meta_set(s, "schema_version", num) || store_commit(s))
        goto fail;
    return MNEMO_OK;
fail:
    fmt(err, "cannot upgrade index %s: %s", s->path, sqlite3_errmsg(s->db));
    store_rollback(s);
    return MNEMO_DB;
}

/* Opens PATH and says what it is (STORE_KIND_*). The store is returned
 * only for STORE_KIND_OURS. */
/* The application id in the header of DB's main file, read through the
 * connection's own file handle: it is there when the schema SQL needs
 * first is not. 1 when the header is a SQLite header, else 0. */
static int header_app_id(sqlite3 *db, int *app)
{
    sqlite3_file *f = NULL;
    unsigned char h[100];
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
        !f->pMethods || f->pMethods->xRead(f, h, sizeof h, 0) != SQLITE_OK ||
        memcmp(h, "SQLite format 3", 16) != 0)
        return 0;
    *app = (int)((unsigned)h[68] << 24 | (unsigned)h[69] << 16 | (unsigned)h[70] << 8 | h[71]);
    return 1;
}

/* Is DB's main database in a rollback-journal mode (asked of SQLite: this
 * process never opens a database file itself, see file_kind)? */
static int in_rollback_mode(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    int yes = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA main.journal_mode", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(q, 0);
        yes = mode && strcmp(mode, "delete") == 0;
    }
    sqlite3_finalize(q);
    return yes;
}

static int open_once(const char *path, int busy_ms, int deep, store **out, int *kind,
                     buf *err)
{
    *out = NULL;
    *kind = STORE_KIND_UNKNOWN;
    int rc = file_kind(path, err);
    if (rc) {
        if (rc == MNEMO_NOTFOUND)
            *kind = STORE_KIND_ABSENT;
        return rc;
    }
    store *s = store_alloc(path);
    if (!s)
        return MNEMO_NOMEM;
    char *ver = NULL;
    int app = 0;
    int src = connect(s, SQLITE_OPEN_READWRITE, busy_ms);
    if (src == SQLITE_READONLY || src == SQLITE_CANTOPEN || src == SQLITE_PERM) {
        sqlite3_close_v2(s->db);
        s->db = NULL;
        src = connect(s, SQLITE_OPEN_READONLY, busy_ms);
    }
    if (src == SQLITE_OK)
        src = pragma_int(s->db, "PRAGMA main.application_id", &app);
    if ((src & 0xff) == SQLITE_NOTADB) {
        *kind = STORE_KIND_FOREIGN;
        rc = not_a_database(path, err);
        goto fail;
    }
    if ((src & 0xff) == SQLITE_CORRUPT && header_app_id(s->db, &app) && app == STORE_APP_ID) {
        /* Its schema is unreadable, but its header says it is ours. */
        *kind = STORE_KIND_DAMAGED;
        fmt(err, "index %s is damaged (%s); rebuild it with: mnemo index --force", path,
            sqlite3_errmsg(s->db));
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    if ((src & 0xff) == SQLITE_CORRUPT) {
        *kind = STORE_KIND_FOREIGN; /* not even its header: nothing proves it ours */
        fmt(err,
            "%s is damaged beyond telling whether it is a mnemo index; mnemo leaves it alone: "
            "move it away (mnemo memory recover FILE salvages memories from it)",
            path);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    if (src != SQLITE_OK) {
        fmt(err, "cannot open index %s: %s", path,
            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
        rc = store_code(src);
        goto fail;
    }
    if (app != 0 && app != STORE_APP_ID) {
        *kind = STORE_KIND_FOREIGN;
        char why[64];
        snprintf(why, sizeof why, "%s 0x%08x",
                 app == STORE_MEM_APP_ID ? "it is a mnemo memory store, application id"
                                         : "application id",
                 (unsigned)app);
        rc = foreign(path, why, err);
        goto fail;
    }
    int tables = index_tables(s->db);
    if (app == 0 && tables == 0) {
        int any = 0;
        pragma_int(s->db, "SELECT count(*) FROM main.sqlite_schema", &any);
        if (any == 0) {
            *kind = STORE_KIND_ABSENT;
            rc = MNEMO_NOTFOUND;
            goto fail;
        }
        *kind = STORE_KIND_FOREIGN;
        rc = foreign(path, "it lacks an index's tables", err);
        goto fail;
    }
    /* Ours by its id, or by its tables when it has no id. */
    int ours = app == STORE_APP_ID || tables == 1;
    rc = store_meta_get(s, "schema_version", &ver);
    if (rc) {
        int code = sqlite3_errcode(s->db);
        const char *msg = sqlite3_errmsg(s->db);
        if ((code & 0xff) == SQLITE_BUSY) {
            fmt(err, "index %s is locked by another process: %s", path, msg);
            rc = MNEMO_BUSY;
            goto fail;
        }
        if (!ours) {
            *kind = STORE_KIND_FOREIGN;
            fmt(err,
                "%s is damaged beyond telling whether it is a mnemo index (%s); mnemo leaves "
                "it alone: move it away (mnemo memory recover FILE salvages memories from it)",
                path, msg);
            rc = MNEMO_CORRUPT;
            goto fail;
        }
        *kind = STORE_KIND_DAMAGED;
        fmt(err,
            "index %s is damaged (%s); rebuild it with: mnemo index --force", path, msg);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    int version = ver ? (int)strtol(ver, NULL, 10) : 0;
    free(ver);
    ver = NULL;
    if (version <= 0 && app != STORE_APP_ID) {
        *kind = STORE_KIND_FOREIGN;
        rc = foreign(path, "it has no mnemo schema version", err);
        goto fail;
    }
    if (version <= 0) {
        *kind = STORE_KIND_DAMAGED;
        fmt(err, "index %s has no schema version; rebuild it with: mnemo index --force",
            path);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    if (version > STORE_SCHEMA_VERSION) {
        *kind = STORE_KIND_NEWER;
        fmt(err,
            "index %s was written by a newer mnemo (schema %d, this build knows %d); upgrade "
            "mnemo or rebuild with: mnemo index --force",
            path, version, STORE_SCHEMA_VERSION);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    if (deep) {
        sqlite3_stmt *q = NULL;
        const char *res = NULL;
        int ok = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &q, NULL) == SQLITE_OK &&
                 sqlite3_step(q) == SQLITE_ROW &&
                 (res = (const char *)sqlite3_column_text(q, 0)) && strcmp(res, "ok") == 0;
        if (!ok) {
            *kind = STORE_KIND_DAMAGED;
            fmt(err, "index %s is damaged (%s)", path,
                res ? res : sqlite3_errmsg(s->db));
            sqlite3_finalize(q);
            rc = MNEMO_CORRUPT;
            goto fail;
        }
        sqlite3_finalize(q);
    }
    *kind = STORE_KIND_OURS;
    /* No mmap_size: memory-mapped reads measured slower here and inflate
     * RSS (fault-around maps neighbouring pages of a scattered table). */
    /* A page cache that holds a workspace's hot pages (it grows only as
     * pages are read; 64 MiB at most): warm searches then read no pages
     * from the OS. */
    store_exec(s, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536");
    if (version < STORE_SCHEMA_VERSION && (rc = migrate(s, version, err)))
        goto fail;
    /* Written before ids were set: mark it, so that it is provably ours. */
    if (app == 0 && !sqlite3_db_readonly(s->db, "main"))
        set_app_id(s, "main", STORE_APP_ID);
    /* A rebuild that died between leaving WAL mode and its rename
     * (sync.c, rename_alone) left the file in rollback mode: back to WAL,
     * where readers never wait for the writer. */
    if (!sqlite3_db_readonly(s->db, "main") && in_rollback_mode(s->db))
        store_exec(s, "PRAGMA journal_mode=WAL");
    *out = s;
    return MNEMO_OK;
fail:
    free(ver);
    store_close(s);
    return rc;
}

/* Opens PATH, again when the file at PATH was replaced while it was being
 * opened: a rebuild renames the new index over the old one when nobody has
 * it open (sync.c, rename_alone), and a connection that got the old file
 * just before must not go on with it. */
static int open_checked(const char *path, int busy_ms, int deep, store **out, int *kind,
                        buf *err)
{
    for (int tries = 0;; tries++) {
        struct stat a, b;
        int had = stat(path, &a) == 0;
        int rc = open_once(path, busy_ms, deep, out, kind, err);
        if (rc || !had || tries == 3 || stat(path, &b) != 0 ||
            (a.st_dev == b.st_dev && a.st_ino == b.st_ino))
            return rc;
        store_close(*out);
        *out = NULL;
    }
}

int store_open(const char *path, int busy_ms, store **out, buf *err)
{
    int kind;
    return open_checked(path, busy_ms, 0, out, &kind, err);
}

int store_identify(const char *path, int busy_ms, int deep, buf *err)
{
    store *s = NULL;
    int kind;
    open_checked(path, busy_ms, deep, &s, &kind, err);
    store_close(s);
    return kind;
}

int store_create(const char *path, const store_settings *set, store **out, buf *err)
{
    *out = NULL;
    store *s = store_alloc(path);
    if (!s)
        return MNEMO_NOMEM;
    s->fresh = 1;
    unlink(path);
    char *schema = NULL;
    int rc = connect(s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 5000);
    if (rc != SQLITE_OK) {
        fmt(err, "cannot create index %s: %s", path,
            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        rc = store_code(rc);
        goto fail;
    }
    /* The application id first: it marks the file as a temporary index of
     * ours, which the stale-temp cleanup checks before removing one. */
    if ((rc = set_app_id(s, "main", STORE_APP_ID)))
        goto sqlfail;
    store_exec(s, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
            "PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY");
    schema = sqlite3_mprintf(schema_v1, set->language, set->language);
    if (!schema) {
        rc = MNEMO_NOMEM;
        goto fail;
    }
    char num[32];
    if ((rc = store_exec(s, "BEGIN")) || (rc = store_exec(s, schema)))
        goto sqlfail;
    for (int v = 1; v < STORE_SCHEMA_VERSION; v++)
        if ((rc = run_migration(s, v, set->language)))
            goto sqlfail;
    if ((rc = store_exec(s, drop_main_memories)) || (rc = store_index_files_state(s)))
        goto sqlfail;
    snprintf(num, sizeof num, "%d", STORE_SCHEMA_VERSION);
    if ((rc = store_meta_set(s, "schema_version", num)) ||
        (rc = store_meta_set(s, "mnemo_version", MNEMO_VERSION)) ||
        (rc = store_meta_set(s, "language", set->language)) ||
        (rc = store_meta_set(s, "index_rules", PREP_INDEX_RULES)))
        goto sqlfail;
    snprintf(num, sizeof num, "%d", set->chunk_tokens);
    if ((rc = store_meta_set(s, "chunk_tokens", num)))
        goto sqlfail;
    snprintf(num, sizeof num, "%d", set->chunk_overlap);
    if ((rc = store_meta_set(s, "chunk_overlap", num)) ||
        (rc = store_meta_set(s, "workspace", set->workspace ? set->workspace : "")) ||
        (rc = store_exec(s, "COMMIT")))
        goto sqlfail;
    /* Bulk load: flush FTS5's pending terms every 32 MiB, not every 1 MiB,
     * so that fewer, larger segments are written and merged. */
    store_exec(s, "INSERT INTO chunks_fts(chunks_fts, rank) VALUES('hashsize', 33554432)");
    sqlite3_free(schema);
    *out = s;
    return MNEMO_OK;
sqlfail:
    fmt(err, "cannot create index %s: %s", path, sqlite3_errmsg(s->db));
fail:
    sqlite3_free(schema);
    store_close(s);
    unlink(path);
    return rc ? rc : MNEMO_DB;
}

/* ----------------------------------------------------------------------
 * The memory store
 * -------------------------------------------------------------------- */

static int mem_meta(store *s, const char *key, char **val)
{
    *val = NULL;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT value FROM mem.memory_meta WHERE key = ?1", -1,
                                &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            const char *v = (const char *)sqlite3_column_text(q, 0);
            rc = (*val = strdup(v ? v : "")) ? SQLITE_DONE : SQLITE_NOMEM;
        }
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? MNEMO_OK : store_code(rc);
}

int store_mem_meta_get(store *s, const char *key, char **val) { return mem_meta(s, key, val); }

int store_mem_meta_set(store *s, const char *key, const char *val)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "INSERT INTO mem.memory_meta(key, value) VALUES(?1, ?2) "
                                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                                -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, val, -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? MNEMO_OK : store_code(rc);
}

/* Creates the memory tables in a new store, brings an older one to
 * MEM_SCHEMA_VERSION, or rebuilds the text index of one written with
 * another language. */
static int mem_prepare(store *s, const char *language, buf *err)
{
    char *lang = NULL, *version = NULL;
    int same = mem_meta(s, "language", &lang) == MNEMO_OK && lang && strcmp(lang, language) == 0;
    int current = mem_meta(s, "schema", &version) == MNEMO_OK && version &&
                  strtol(version, NULL, 10) >= MEM_SCHEMA_VERSION;
    free(lang);
    free(version);
    lang = NULL;
    if (same && current)
        return MNEMO_OK; /* the common case: nothing to write */
    char *schema = sqlite3_mprintf(mem_schema, language);
    if (!schema)
        return MNEMO_NOMEM;
    /* Deferred: the first statement writes the memory store, whose lock
     * alone it takes (see begin_on). The list's indexes of schema 2 are
     * built then (a few seconds for a million memories, once). */
    int rc = store_exec(s, "BEGIN");
    if (!rc)
        rc = store_exec(s, schema);
    if (!rc && !current)
        rc = store_exec(s, "DROP INDEX IF EXISTS mem.memories_scope");
    if (!rc && !current)
        rc = store_mem_meta_set(s, "schema", MEM_SCHEMA_VERSION_TEXT);
    if (!rc)
        rc = mem_meta(s, "language", &lang);
    if (!rc && lang && strcmp(lang, language) != 0) {
        /* The text index is derived from the rows: rebuilt in the new
         * language, nothing else changes. */
        char *fts = sqlite3_mprintf(
            "DROP TABLE mem.memories_fts; CREATE VIRTUAL TABLE mem.memories_fts USING "
            "fts5(text, content='memories', content_rowid='mid', tokenize='mnemo %s');"
            "INSERT INTO mem.memories_fts(memories_fts) VALUES('rebuild');" MEM_FTS_UNDELETED
                MEM_POSTINGS_DROP,
            language);
        rc = fts ? store_exec(s, fts) : MNEMO_NOMEM;
        sqlite3_free(fts);
    }
    if (!rc && (!lang || strcmp(lang, language) != 0))
        rc = store_mem_meta_set(s, "language", language);
    if (!rc)
        rc = store_exec(s, "COMMIT");
    if (rc) {
        fmt(err, "cannot prepare the memory store: %s", sqlite3_errmsg(s->db));
        store_rollback(s);
    }
    free(lang);
    sqlite3_free(schema);
    return rc;
}

/* Moves the memories of a schema-5 index (in its main file) to the memory
 * store: copied and committed there first, checked, then dropped from the
 * index. Copies skip rows already there, so a move that died half way is
 * finished by the next open. */
static int mem_move_legacy(store *s, buf *err)
{
    int has = 0;
    if (pragma_int(s->db, "SELECT count(*) FROM main.sqlite_schema WHERE name = 'memories'",
                   &has) != SQLITE_OK || !has)
        return MNEMO_OK;
    if (sqlite3_db_readonly(s->db, "main") || sqlite3_db_readonly(s->db, "mem"))
        return MNEMO_OK; /* read in place (names resolve to main first) */
    static const char copy[] =
        "BEGIN IMMEDIATE;"
        "INSERT OR IGNORE INTO mem.memories SELECT * FROM main.memories;"
        "INSERT OR IGNORE INTO mem.memory_history SELECT * FROM main.memory_history;"
        "INSERT OR IGNORE INTO mem.memory_vectors SELECT * FROM main.memory_vectors;"
        "INSERT OR IGNORE INTO mem.memory_meta SELECT 'vec_identity', value FROM main.meta "
        "  WHERE key = 'vec_identity' AND EXISTS (SELECT 1 FROM main.memory_vectors);"
        "INSERT INTO mem.memories_fts(memories_fts) VALUES('rebuild');" MEM_FTS_UNDELETED
            MEM_POSTINGS_DROP "COMMIT";
    int missing = -1, rc = store_exec(s, copy);
    if (rc) {
        fmt(err, "cannot move the memories of %s to their own store: %s", s->path,
            sqlite3_errmsg(s->db));
        store_rollback(s);
        return rc;
    }
    if (pragma_int(s->db,
                   "SELECT (SELECT count(*) FROM main.memories o WHERE NOT EXISTS (SELECT 1 "
                   "FROM mem.memories n WHERE n.id = o.id)) + (SELECT count(*) FROM "
                   "main.memory_history o WHERE NOT EXISTS (SELECT 1 FROM mem.memory_history "
                   "n WHERE n.hid = o.hid))",
                   &missing) != SQLITE_OK ||
        missing != 0) {
        fmt(err,
            "moving the memories of %s to their own store left %d behind; the index keeps "
            "them",
            s->path, missing);
        return MNEMO_DB;
    }
    rc = store_exec(s, "BEGIN IMMEDIATE");
    if (!rc)
        rc = store_exec(s, drop_main_memories);
    if (!rc)
        rc = store_exec(s, "COMMIT");
    if (rc)
        store_rollback(s); /* copied; the next open drops them */
    return MNEMO_OK;
}

int store_legacy_memories(store *s)
{
    int has = 1;
    pragma_int(s->db, "SELECT count(*) FROM main.sqlite_schema WHERE name = 'memories'", &has);
    return has != 0;
}

int store_attach_memories(store *s, const char *mem_path, const char *language, buf *err)
{
    int app = 0, tables = 0;
    struct stat sb;
    int existed = stat(mem_path, &sb) == 0 && sb.st_size > 0;
    if (!existed && errno == ENOENT && !sqlite3_db_readonly(s->db, "main")) {
        /* ATTACH opens with the index's flags, which do not create files. */
        sqlite3 *c = NULL;
        sqlite3_open_v2(mem_path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        sqlite3_close_v2(c);
    }
    /* A fresh index is written in exclusive locking mode, which a database
     * attached later inherits; the memory store is shared with every other
     * process and must be attached as they open it. */
    if (s->fresh)
        store_exec(s, "PRAGMA locking_mode = NORMAL");
    sqlite3_stmt *a = NULL;
    int rc = sqlite3_prepare_v2(s->db, "ATTACH ?1 AS mem", -1, &a, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(a, 1, mem_path, -1, SQLITE_STATIC);
        rc = sqlite3_step(a) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
    }
    sqlite3_finalize(a);
    if (s->fresh)
        store_exec(s, "PRAGMA main.locking_mode = EXCLUSIVE");
    if (rc == SQLITE_OK)
        rc = pragma_int(s->db, "PRAGMA mem.application_id", &app);
    else if ((rc & 0xff) != SQLITE_NOTADB && (rc & 0xff) != SQLITE_CORRUPT) {
        fmt(err, "cannot open the memory store %s: %s", mem_path, sqlite3_errmsg(s->db));
        return store_code(rc);
    }
    if (rc == SQLITE_OK)
        rc = pragma_int(s->db, "SELECT count(*) FROM mem.sqlite_schema", &tables);
    if (rc != SQLITE_OK || (app != STORE_MEM_APP_ID && (existed || tables))) {
        if (rc != SQLITE_OK)
            fmt(err,
                "the memory store %s cannot be read (%s); it is left as it is: move it away "
                "(a new store is then created) and salvage it with mnemo memory recover "
                "MOVED-FILE, or import a snapshot (%s.backup-*.jsonl)",
                mem_path, sqlite3_errmsg(s->db), mem_path);
        else
            fmt(err,
                "%s is not a mnemo memory store (application id 0x%08x); mnemo never writes "
                "it: move it away or set memoryDb",
                mem_path, (unsigned)app);
        sqlite3_exec(s->db, "DETACH mem", NULL, NULL, NULL);
        return MNEMO_CORRUPT;
    }
    /* A small store is checked whole as it is opened (about 1.5 ms a MB):
     * a damaged index of it reads as fewer rows, which no read can tell. */
    if (existed && sb.st_size <= STORE_MEM_CHECK_BYTES) {
        char *bad = NULL;
        if (pragma_text(s->db, "PRAGMA mem.integrity_check(1)", &bad) != SQLITE_OK ||
            !bad || strcmp(bad, "ok") != 0) {
            fmt(err,
                "the memory store %s is damaged (%s); it is left as it is: move it away (a "
                "new store is then created) and salvage it with mnemo memory recover "
                "MOVED-FILE, or import a snapshot (%s.backup-*.jsonl)",
                mem_path, bad ? bad : sqlite3_errmsg(s->db), mem_path);
            sqlite3_free(bad);
            sqlite3_exec(s->db, "DETACH mem", NULL, NULL, NULL);
            return MNEMO_CORRUPT;
        }
        sqlite3_free(bad);
    }
    /* The index's page cache size, which a PRAGMA without a schema gave
     * main only. */
    store_exec(s, s->fresh ? "PRAGMA mem.cache_size = -16384" : "PRAGMA mem.cache_size = -65536");
    if (!sqlite3_db_readonly(s->db, "mem")) {
        if (app != STORE_MEM_APP_ID)
            set_app_id(s, "mem", STORE_MEM_APP_ID);
        /* Memories are primary data: WAL, and every commit synced. */
        store_exec(s, "PRAGMA mem.journal_mode = WAL; PRAGMA mem.synchronous = FULL");
        if ((rc = mem_prepare(s, language, err)) ||
            (rc = mem_move_legacy(s, err))) {
            sqlite3_exec(s->db, "DETACH mem", NULL, NULL, NULL);
            return rc;
        }
    } else if (!tables) {
        sqlite3_exec(s->db, "DETACH mem", NULL, NULL, NULL);
        fmt(err, "the memory store %s is empty and read-only", mem_path);
        return MNEMO_IO;
    }
    return MNEMO_OK;
}

int store_finish(store *s)
{
    /* Merge FTS segments when there are many. A bulk load flushes every 32
     * MiB of pending terms, so 100k notes make about 5 segments: searching
     * them measured within 5% of one merged segment, and merging costs 12%
     * of the build; automerge keeps the count bounded afterwards. */
    int rc = MNEMO_OK, segments = 2;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT count(DISTINCT segid) FROM chunks_fts_idx", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        segments = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (segments > 8)
        rc = store_exec(s, "INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')");
    if (!rc)
        rc = store_exec(s, "DELETE FROM chunks_fts_config WHERE k = 'hashsize'");
    if (!rc)
        rc = store_exec(s, "PRAGMA locking_mode=NORMAL; PRAGMA journal_mode=WAL");
    if (rc)
        return rc;
    for (int i = 0; i < S__COUNT; i++) {
        sqlite3_finalize(s->st[i]);
        s->st[i] = NULL;
    }
    fts_rank_cleanup(&s->rank);
    fts_rank_cleanup(&s->mrank);
    if (sqlite3_close(s->db) != SQLITE_OK)
        return MNEMO_DB;
    s->db = NULL;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return MNEMO_IO;
    rc = fsync(fd) ? MNEMO_IO : MNEMO_OK;
    close(fd);
    return rc;
}

/* A write transaction on one database of the connection. BEGIN IMMEDIATE
 * takes the write lock of every database attached: a sync would hold the
 * memory store's for its whole length, and a memory write would wait for
 * the index's (a rebuild, or any process in a transaction on it). A
 * deferred BEGIN and a write of TABLE that changes nothing take SCHEMA's
 * lock alone, with the busy timeout, as IMMEDIATE would; checked, and
 * IMMEDIATE is the fallback. */
static int begin_on(store *s, const char *schema, const char *table)
{
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE %s.%s SET value = value WHERE 0", schema, table);
    int rc = store_exec(s, "BEGIN");
    if (!rc && (rc = store_exec(s, sql)) == MNEMO_OK &&
        sqlite3_txn_state(s->db, schema) == SQLITE_TXN_WRITE)
        return MNEMO_OK;
    store_rollback(s);
    return rc ? rc : store_exec(s, "BEGIN IMMEDIATE");
}

int store_begin(store *s) { return begin_on(s, "main", "meta"); }
int store_begin_mem(store *s) { return begin_on(s, "mem", "memory_meta"); }
int store_commit(store *s) { return store_exec(s, "COMMIT"); }
void store_rollback(store *s)
{
    kwpost_free(s->kw); /* what waited is rolled back with its chunks */
    s->kw = NULL;
    if (s->db && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_meta_get(store *s, const char *key, char **val)
{
    *val = NULL;
    sqlite3_stmt *st = store_stmt(s, S_META_GET);
    if (!st)
        return store_code(sqlite3_errcode(s->db));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        *val = strdup(v ? v : "");
        rc = *val ? SQLITE_DONE : SQLITE_NOMEM;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? MNEMO_OK : store_code(rc);
}

int store_meta_set(store *s, const char *key, const char *val)
{
    sqlite3_stmt *st = store_stmt(s, S_META_SET);
    if (st) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, val, -1, SQLITE_STATIC);
    }
    return store_run(s, st);
}
