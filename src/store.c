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
#include "store.h"

#include "mfilter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnemo.h"

enum {
    S_FILE_INSERT,
    S_FILE_UPDATE,
    S_FILE_RENAME,
    S_FILE_DELETE,
    S_CHUNKS_DELETE,
    S_CHUNK_INSERT,
    S_FILE_NCHUNKS,
    S_META_GET,
    S_META_SET,
    S_FTS_CHUNK_INSERT,
    S_FTS_CHUNK_DELETE,
    S_CHUNKS_OF_FILE,
    S_FTS_FILE_INSERT,
    S_FTS_FILE_DELETE,
    S_FILE_PATH,
    S_FILE_TIME,
    S__COUNT
};

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
};

struct store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *st[S__COUNT];
    fts_rank rank;
    fts_rank mrank; /* for memories_fts */
    fts_feed feed;
    int fresh;
    int64_t next_id[2]; /* next chunk id for memory / sessions, 0 until read */
};

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
fts_rank *store_rank(store *s) { return &s->rank; }

fts_rank *store_mrank(store *s) { return &s->mrank; }
const char *store_errmsg(store *s) { return s && s->db ? sqlite3_errmsg(s->db) : "no database"; }

static void fmt(char *err, size_t errlen, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *err, size_t errlen, const char *f, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(err, errlen, f, ap);
    va_end(ap);
}

static sqlite3_stmt *stmt(store *s, int id)
{
    if (!s->st[id] && sqlite3_prepare_v3(s->db, sql_text[id], -1, SQLITE_PREPARE_PERSISTENT,
                                         &s->st[id], NULL) != SQLITE_OK)
        return NULL;
    sqlite3_reset(s->st[id]);
    sqlite3_clear_bindings(s->st[id]);
    return s->st[id];
}

/* Steps a bound statement to completion. */
static int run(store *s, sqlite3_stmt *st)
{
    if (!st)
        return store_code(sqlite3_errcode(s->db));
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? MNEMO_OK : store_code(rc);
}

static int exec(store *s, const char *sql)
{
    return store_code(sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

/* Runs migration V (which may name the language with %s). */
static int run_migration(store *s, int v, const char *language)
{
    if (!migrations[v])
        return MNEMO_OK;
    char *sql = sqlite3_mprintf(migrations[v], language ? language : "english");
    if (!sql)
        return MNEMO_NOMEM;
    int rc = exec(s, sql);
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
    fts_rank_cleanup(&s->rank);
    fts_rank_cleanup(&s->mrank);
    if (s->db)
        sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

/* Opens the SQLite connection and registers the FTS5 glue. */
static int connect(store *s, int flags, int busy_ms)
{
    int rc = sqlite3_open_v2(s->path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, busy_ms);
    s->mrank.docsize_table = "memories_fts_docsize";
    if ((rc = fts_register(s->db, &s->rank, &s->feed)) != SQLITE_OK ||
        (rc = fts_register_collect(s->db, "mnemo_collect_mem", &s->mrank)) != SQLITE_OK)
        return rc;
    return mfilter_register(s->db);
}

/* Whether PATH holds anything. Never opens the file: closing any descriptor
 * of a database file drops every POSIX lock this process holds on it, which
 * would let another process checkpoint and reset the WAL under this
 * process's other connections (a daemon has one per worker). */
static int file_kind(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return MNEMO_NOTFOUND;
        fmt(err, errlen, "cannot open index %s: %s", path, strerror(errno));
        return MNEMO_IO;
    }
    if (st.st_size == 0)
        return MNEMO_NOTFOUND;
    return MNEMO_OK;
}

static int not_a_database(const char *path, char *err, size_t errlen)
{
    fmt(err, errlen,
        "%s is not a SQLite database, so not a mnemo index; move it away or choose "
        "another index path with --db",
        path);
    return MNEMO_CORRUPT;
}

static int migrate(store *s, int from, char *err, size_t errlen)
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
    fmt(err, errlen, "cannot upgrade index %s: %s", s->path, sqlite3_errmsg(s->db));
    store_rollback(s);
    return MNEMO_DB;
}

int store_open(const char *path, int busy_ms, store **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = file_kind(path, err, errlen);
    if (rc)
        return rc;
    store *s = store_alloc(path);
    if (!s)
        return MNEMO_NOMEM;
    char *ver = NULL;
    int src = connect(s, SQLITE_OPEN_READWRITE, busy_ms);
    if (src == SQLITE_READONLY || src == SQLITE_CANTOPEN || src == SQLITE_PERM) {
        sqlite3_close_v2(s->db);
        s->db = NULL;
        src = connect(s, SQLITE_OPEN_READONLY, busy_ms);
    }
    if ((src & 0xff) == SQLITE_NOTADB) {
        rc = not_a_database(path, err, errlen);
        goto fail;
    }
    if (src != SQLITE_OK) {
        fmt(err, errlen, "cannot open index %s: %s", path,
            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
        rc = store_code(src);
        goto fail;
    }
    rc = store_meta_get(s, "schema_version", &ver);
    if (rc) {
        int code = sqlite3_errcode(s->db);
        const char *msg = sqlite3_errmsg(s->db);
        if ((code & 0xff) == SQLITE_NOTADB) {
            rc = not_a_database(path, err, errlen);
            goto fail;
        }
        if ((code & 0xff) == SQLITE_BUSY) {
            fmt(err, errlen, "index %s is locked by another process: %s", path, msg);
            rc = MNEMO_BUSY;
            goto fail;
        }
        if ((code & 0xff) == SQLITE_ERROR && strstr(msg, "no such table")) {
            sqlite3_stmt *q = NULL;
            int tables = 0;
            if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_schema", -1, &q, NULL) ==
                    SQLITE_OK &&
                sqlite3_step(q) == SQLITE_ROW)
                tables = sqlite3_column_int(q, 0);
            sqlite3_finalize(q);
            if (tables == 0) {
                rc = MNEMO_NOTFOUND;
                goto fail;
            }
            fmt(err, errlen,
                "%s is a SQLite database but not a mnemo index; move it away or choose "
                "another index path with --db",
                path);
            rc = MNEMO_CORRUPT;
            goto fail;
        }
        fmt(err, errlen,
            "index %s is damaged (%s); rebuild it with: mnemo index --force", path, msg);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    int version = ver ? (int)strtol(ver, NULL, 10) : 0;
    free(ver);
    ver = NULL;
    if (version <= 0) {
        fmt(err, errlen, "index %s has no schema version; rebuild it with: mnemo index --force",
            path);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    if (version > STORE_SCHEMA_VERSION) {
        fmt(err, errlen,
            "index %s was written by a newer mnemo (schema %d, this build knows %d); upgrade "
            "mnemo or rebuild with: mnemo index --force",
            path, version, STORE_SCHEMA_VERSION);
        rc = MNEMO_CORRUPT;
        goto fail;
    }
    /* No mmap_size: memory-mapped reads measured slower here and inflate
     * RSS (fault-around maps neighbouring pages of a scattered table). */
    /* A page cache that holds a workspace's hot pages (it grows only as
     * pages are read; 64 MiB at most): warm searches then read no pages
     * from the OS. */
    exec(s, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536");
    if (version < STORE_SCHEMA_VERSION && (rc = migrate(s, version, err, errlen)))
        goto fail;
    *out = s;
    return MNEMO_OK;
fail:
    free(ver);
    store_close(s);
    return rc;
}

int store_create(const char *path, const store_settings *set, store **out, char *err,
                 size_t errlen)
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
        fmt(err, errlen, "cannot create index %s: %s", path,
            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        rc = store_code(rc);
        goto fail;
    }
    exec(s, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
            "PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY");
    schema = sqlite3_mprintf(schema_v1, set->language, set->language);
    if (!schema) {
        rc = MNEMO_NOMEM;
        goto fail;
    }
    char num[32];
    if ((rc = exec(s, "BEGIN")) || (rc = exec(s, schema)))
        goto sqlfail;
    for (int v = 1; v < STORE_SCHEMA_VERSION; v++)
        if ((rc = run_migration(s, v, set->language)))
            goto sqlfail;
    snprintf(num, sizeof num, "%d", STORE_SCHEMA_VERSION);
    if ((rc = store_meta_set(s, "schema_version", num)) ||
        (rc = store_meta_set(s, "mnemo_version", MNEMO_VERSION)) ||
        (rc = store_meta_set(s, "language", set->language)) ||
        (rc = store_meta_set(s, "index_rules", STORE_INDEX_RULES)))
        goto sqlfail;
    snprintf(num, sizeof num, "%d", set->chunk_tokens);
    if ((rc = store_meta_set(s, "chunk_tokens", num)))
        goto sqlfail;
    snprintf(num, sizeof num, "%d", set->chunk_overlap);
    if ((rc = store_meta_set(s, "chunk_overlap", num)) ||
        (rc = store_meta_set(s, "workspace", set->workspace ? set->workspace : "")) ||
        (rc = exec(s, "COMMIT")))
        goto sqlfail;
    /* Bulk load: flush FTS5's pending terms every 32 MiB, not every 1 MiB,
     * so that fewer, larger segments are written and merged. */
    exec(s, "INSERT INTO chunks_fts(chunks_fts, rank) VALUES('hashsize', 33554432)");
    sqlite3_free(schema);
    *out = s;
    return MNEMO_OK;
sqlfail:
    fmt(err, errlen, "cannot create index %s: %s", path, sqlite3_errmsg(s->db));
fail:
    sqlite3_free(schema);
    store_close(s);
    unlink(path);
    return rc ? rc : MNEMO_DB;
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
        rc = exec(s, "INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')");
    if (!rc)
        rc = exec(s, "DELETE FROM chunks_fts_config WHERE k = 'hashsize'");
    if (!rc)
        rc = exec(s, "PRAGMA locking_mode=NORMAL; PRAGMA journal_mode=WAL");
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

int store_begin(store *s) { return exec(s, "BEGIN IMMEDIATE"); }
int store_commit(store *s) { return exec(s, "COMMIT"); }
void store_rollback(store *s)
{
    if (s->db && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_meta_get(store *s, const char *key, char **val)
{
    *val = NULL;
    sqlite3_stmt *st = stmt(s, S_META_GET);
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
    sqlite3_stmt *st = stmt(s, S_META_SET);
    if (st) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, val, -1, SQLITE_STATIC);
    }
    return run(s, st);
}

int store_files_load(store *s, store_file **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, path, size, mtime_ns, hash, status, source FROM files",
                                -1,
                                &st, NULL);
    if (rc != SQLITE_OK)
        return store_code(rc);
    size_t cap = 0, count = 0;
    store_file *v = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? cap * 2 : 256;
            store_file *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                rc = SQLITE_NOMEM;
                break;
            }
            v = nv;
        }
        store_file *f = &v[count];
        memset(f, 0, sizeof *f);
        f->id = sqlite3_column_int64(st, 0);
        f->path = strdup((const char *)sqlite3_column_text(st, 1));
        f->size = sqlite3_column_int64(st, 2);
        f->mtime_ns = sqlite3_column_int64(st, 3);
        const char *h = (const char *)sqlite3_column_text(st, 4);
        snprintf(f->hash, sizeof f->hash, "%s", h ? h : "");
        f->ok = sqlite3_column_int(st, 5) == STORE_FILE_OK;
        const char *src = (const char *)sqlite3_column_text(st, 6);
        f->sessions = src && strcmp(src, "sessions") == 0;
        if (!f->path) {
            rc = SQLITE_NOMEM;
            break;
        }
        count++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_files_free(v, count);
        return store_code(rc);
    }
    *out = v;
    *n = count;
    return MNEMO_OK;
}

void store_files_free(store_file *f, size_t n)
{
    if (!f)
        return;
    for (size_t i = 0; i < n; i++)
        free(f[i].path);
    free(f);
}

/* The words of a path as files_fts indexes them: without the memory/
 * prefix every daily note shares. */
static const char *path_words(const char *path)
{
    return strncmp(path, "memory/", 7) == 0 ? path + 7 : path;
}

/* Removes file ID's path from files_fts (before its row changes or goes). */
static int fts_file_delete(store *s, int64_t id)
{
    sqlite3_stmt *q = stmt(s, S_FILE_PATH);
    if (!q)
        return store_code(sqlite3_errcode(s->db));
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(q);
        return rc == SQLITE_DONE ? MNEMO_OK : store_code(rc);
    }
    char *path = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_reset(q);
    if (!path)
        return MNEMO_NOMEM;
    sqlite3_stmt *st = stmt(s, S_FTS_FILE_DELETE);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, path_words(path), -1, SQLITE_TRANSIENT);
    }
    free(path);
    return run(s, st);
}

static int fts_file_insert(store *s, int64_t id, const char *path)
{
    sqlite3_stmt *st = stmt(s, S_FTS_FILE_INSERT);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, path_words(path), -1, SQLITE_STATIC);
    }
    return run(s, st);
}

/* Base name and stem (base name without its last extension) of PATH. */
static void name_parts(const char *path, const char **base, int *stem_len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    *base = b;
    *stem_len = dot && dot != b ? (int)(dot - b) : (int)strlen(b);
}

int store_file_insert(store *s, const char *path, int64_t size, int64_t mtime_ns,
                      const char *hash, int status, const char *reason, int sessions, int64_t *id)
{
    sqlite3_stmt *st = stmt(s, S_FILE_INSERT);
    if (st) {
        const char *base;
        int stem_len;
        name_parts(path, &base, &stem_len);
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, base, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, base, stem_len, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, size);
        sqlite3_bind_int64(st, 5, mtime_ns);
        sqlite3_bind_text(st, 6, hash ? hash : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 7, status);
        if (reason)
            sqlite3_bind_text(st, 8, reason, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, sessions ? "sessions" : "memory", -1, SQLITE_STATIC);
    }
    int rc = run(s, st);
    if (rc)
        return rc;
    int64_t rowid = sqlite3_last_insert_rowid(s->db);
    if (id)
        *id = rowid;
    return fts_file_insert(s, rowid, path);
}

int store_file_update(store *s, int64_t id, int64_t size, int64_t mtime_ns, const char *hash,
                      int status, const char *reason)
{
    sqlite3_stmt *st = stmt(s, S_FILE_UPDATE);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, size);
        sqlite3_bind_int64(st, 3, mtime_ns);
        sqlite3_bind_text(st, 4, hash ? hash : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 5, status);
        if (reason)
            sqlite3_bind_text(st, 6, reason, -1, SQLITE_STATIC);
    }
    return run(s, st);
}

int store_file_set_time(store *s, int64_t id, double when)
{
    sqlite3_stmt *st = stmt(s, S_FILE_TIME);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_double(st, 2, when);
    }
    return run(s, st);
}

int store_file_rename(store *s, int64_t id, const char *path)
{
    int rc = fts_file_delete(s, id);
    if (rc)
        return rc;
    sqlite3_stmt *st = stmt(s, S_FILE_RENAME);
    if (st) {
        const char *base;
        int stem_len;
        name_parts(path, &base, &stem_len);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, base, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, base, stem_len, SQLITE_STATIC);
    }
    if ((rc = run(s, st)))
        return rc;
    return fts_file_insert(s, id, path);
}

static int chunks_delete_from(store *s, int64_t file_id, int64_t from_seq, int64_t *removed);

int store_chunks_delete(store *s, int64_t file_id, int64_t *removed)
{
    return chunks_delete_from(s, file_id, 0, removed);
}

static int chunks_delete_from(store *s, int64_t file_id, int64_t from_seq, int64_t *removed)
{
    /* The FTS entries first: 'delete' needs the text that was indexed. */
    sqlite3_stmt *q = stmt(s, S_CHUNKS_OF_FILE);
    if (!q)
        return store_code(sqlite3_errcode(s->db));
    sqlite3_bind_int64(q, 1, file_id);
    sqlite3_bind_int64(q, 2, from_seq);
    int rc, step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        sqlite3_stmt *st = stmt(s, S_FTS_CHUNK_DELETE);
        if (st) {
            sqlite3_bind_int64(st, 1, sqlite3_column_int64(q, 0));
            sqlite3_bind_value(st, 2, sqlite3_column_value(q, 1));
        }
        if ((rc = run(s, st))) {
            sqlite3_reset(q);
            return rc;
        }
    }
    sqlite3_reset(q);
    if (step != SQLITE_DONE)
        return store_code(step);
    sqlite3_stmt *st = stmt(s, S_CHUNKS_DELETE);
    if (st) {
        sqlite3_bind_int64(st, 1, file_id);
        sqlite3_bind_int64(st, 2, from_seq);
    }
    rc = run(s, st);
    if (!rc && removed)
        *removed = sqlite3_changes64(s->db);
    return rc;
}

int store_file_delete(store *s, int64_t id)
{
    int rc = store_chunks_delete(s, id, NULL);
    if (rc || (rc = fts_file_delete(s, id)))
        return rc;
    sqlite3_stmt *st = stmt(s, S_FILE_DELETE);
    if (st)
        sqlite3_bind_int64(st, 1, id);
    return run(s, st);
}

/* Next free chunk id in the range of a source: memory chunks have ids
 * below STORE_SESSION_ID_BASE, transcript chunks at or above it, so that a
 * search can restrict itself to one corpus with a rowid range. */
static int next_chunk_id(store *s, int sessions, int64_t *id)
{
    if (!s->next_id[sessions]) {
        sqlite3_stmt *q = NULL;
        const char *sql = sessions ? "SELECT max(id) FROM chunks WHERE id >= ?1"
                                   : "SELECT max(id) FROM chunks WHERE id < ?1";
        if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
            return store_code(sqlite3_errcode(s->db));
        sqlite3_bind_int64(q, 1, STORE_SESSION_ID_BASE);
        int64_t max = 0;
        if (sqlite3_step(q) == SQLITE_ROW)
            max = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        s->next_id[sessions] = max ? max + 1 : sessions ? STORE_SESSION_ID_BASE : 1;
    }
    *id = s->next_id[sessions]++;
    return MNEMO_OK;
}

int store_chunks_write(store *s, int64_t file_id, const store_chunks *w, int64_t *removed,
                       size_t *added)
{
    const chunk_list *l = w->chunks;
    int rc;
    /* Keep the chunks that did not change at the start of the file (a
     * transcript that grew, a note edited at its end): their FTS entries
     * and vectors stay. */
    size_t keep = 0;
    if (w->replace) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db,
                               "SELECT hash, start_line, end_line FROM chunks WHERE file_id = ?1 "
                               "ORDER BY seq",
                               -1, &q, NULL) != SQLITE_OK)
            return store_code(sqlite3_errcode(s->db));
        sqlite3_bind_int64(q, 1, file_id);
        while (keep < l->n && sqlite3_step(q) == SQLITE_ROW) {
            const chunk *c = &l->items[keep];
            const char *h = (const char *)sqlite3_column_text(q, 0);
            if (!h || strcmp(h, c->hash) != 0 || sqlite3_column_int(q, 1) != c->start_line ||
                sqlite3_column_int(q, 2) != c->end_line)
                break;
            keep++;
        }
        sqlite3_finalize(q);
        if ((rc = chunks_delete_from(s, file_id, (int64_t)keep, removed)))
            return rc;
    }
    for (size_t i = keep; i < l->n; i++) {
        const chunk *c = &l->items[i];
        int64_t id = 0;
        if ((rc = next_chunk_id(s, w->sessions, &id)))
            return rc;
        sqlite3_stmt *st = stmt(s, S_CHUNK_INSERT);
        if (st) {
            sqlite3_bind_int64(st, 1, file_id);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
            sqlite3_bind_int(st, 3, c->start_line);
            sqlite3_bind_int(st, 4, c->end_line);
            sqlite3_bind_text(st, 5, c->hash, HASH_HEX_LEN, SQLITE_STATIC);
            sqlite3_bind_int(st, 6, c->importance);
            sqlite3_bind_text(st, 7, l->text.data + c->trig_off, (int)c->trig_len,
                              SQLITE_STATIC);
            sqlite3_bind_text(st, 8, chunk_text(l, c), (int)c->text_len, SQLITE_STATIC);
            sqlite3_bind_int64(st, 9, id);
            if (w->maps)
                sqlite3_bind_blob(st, 10, w->maps + w->map_off[i],
                                  (int)((w->map_off[i + 1] - w->map_off[i]) * sizeof(uint32_t)),
                                  SQLITE_STATIC);
        }
        if ((rc = run(s, st)))
            return rc;
        st = stmt(s, S_FTS_CHUNK_INSERT);
        if (st) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_text(st, 2, chunk_text(l, c), (int)c->text_len, SQLITE_STATIC);
        }
        if (w->toks) {
            s->feed.text = chunk_text(l, c);
            s->feed.len = c->text_len;
            s->feed.toks = w->toks + w->tok_off[i];
            s->feed.toks_len = w->tok_off[i + 1] - w->tok_off[i];
        }
        rc = run(s, st);
        s->feed.toks = NULL;
        if (rc)
            return rc;
    }
    if (added)
        *added = l->n - keep;
    sqlite3_stmt *st = stmt(s, S_FILE_NCHUNKS);
    if (st) {
        sqlite3_bind_int64(st, 1, file_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)l->n);
    }
    return run(s, st);
}
