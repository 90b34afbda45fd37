/*
 * lite_sync.c - the SQLite backend's steps of a sync (sync.h, run by
 * sync.c's sync_run): the index file as the sink of the walk, in one
 * transaction, then the vectors.
 *
 * A full build (first index, --force, or changed tokenizer/chunking
 * settings) writes a fresh database beside the old one and renames it over,
 * so the last good index survives a crash or kill at any point.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "engine/backend.h"
#include "util/errcode.h"
#include "engine/sync.h"
#include "store/sqlite/lite.h"
#include "util/lock.h"
#include "util/time.h"
#include "store/sqlite/memvec.h"
#include "store/sqlite/recover.h"
#include "store/sqlite/vectors.h"

/* A sync of the SQLite index: the walk's sink and the steps' state. */
typedef struct sync_ctx {
    mnemo *m;
    store *st;                 /* where the walk writes */
    mnemo_sync_stats *stats;
    int lock;                  /* the index's write lock */
    int fresh;                 /* a new index beside the live one, renamed over it */
    int kind;                  /* what the live file was (STORE_KIND_*), when fresh */
    char tmp[PATH_MAX + 32];   /* the new index, when fresh */
    char aside[PATH_MAX + 64]; /* where a damaged live index is kept, else "" */
} sync_ctx;

/* Names the file being written: the live index, or during a rebuild the
 * new one beside it (a full disk is then the new file's, not the index's). */
static int db_fail(sync_ctx *c, int rc, const char *what)
{
    return core_error(c->m, rc ? rc : MNEMO_DB, "index %s: %s: %s",
                      c->st ? store_path(c->st) : c->m->db_path, what, store_errmsg(c->st));
}

/* The SQLite index as the sink of sync_walk(). */

static int lite_load(void *ud, sync_file **files, size_t *n)
{
    sync_ctx *c = ud;
    int rc = store_files_load(c->st, files, n);
    return rc ? db_fail(c, rc, "reading files") : MNEMO_OK;
}

static int lite_skip(void *ud, const sync_file *known, const char *path, int64_t size,
                     int64_t mtime_ns, const char *reason, int sessions)
{
    sync_ctx *c = ud;
    int rc = MNEMO_OK;
    if (known)
        rc = store_chunks_delete(c->st, known->id, NULL);
    if (!rc)
        rc = known ? store_file_update(c->st, known->id, size, mtime_ns, "", SYNC_FILE_SKIPPED,
                                       reason)
                   : store_file_insert(c->st, path, size, mtime_ns, "", SYNC_FILE_SKIPPED,
                                       reason, sessions, NULL);
    if (!rc && known) /* a skipped file is no image or audio any more */
        rc = store_file_set_mime(c->st, known->id, NULL);
    return rc ? db_fail(c, rc, "recording a skipped file") : MNEMO_OK;
}

static int lite_touch(void *ud, const sync_file *f, int64_t size, int64_t mtime_ns,
                      const char *hash)
{
    sync_ctx *c = ud;
    int rc = store_file_update(c->st, f->id, size, mtime_ns, hash, SYNC_FILE_OK, NULL);
    return rc ? db_fail(c, rc, "updating a file") : MNEMO_OK;
}

static int lite_rename(void *ud, const sync_file *f, const char *path, int64_t size,
                       int64_t mtime_ns, const char *hash)
{
    sync_ctx *c = ud;
    int rc = store_file_rename(c->st, f->id, path);
    if (!rc)
        rc = store_file_update(c->st, f->id, size, mtime_ns, hash, SYNC_FILE_OK, NULL);
    return rc ? db_fail(c, rc, "renaming a file") : MNEMO_OK;
}

static int lite_write(void *ud, const sync_file *known, const char *path, int64_t size,
                      int64_t mtime_ns, prep_item *it, int sessions, int64_t *removed,
                      size_t *added)
{
    sync_ctx *c = ud;
    int64_t id;
    int rc;
    if (known) {
        id = known->id;
        if ((rc = store_file_update(c->st, id, size, mtime_ns, it->hash, SYNC_FILE_OK, NULL)))
            return db_fail(c, rc, "updating a file");
    } else if ((rc = store_file_insert(c->st, path, size, mtime_ns, it->hash, SYNC_FILE_OK,
                                       NULL, sessions, &id))) {
        return db_fail(c, rc, "adding a file");
    }
    store_chunks w = {&it->chunks,
                      NULL,
                      NULL,
                      NULL,
                      NULL,
                      sessions,
                      it->mime[0] != 0,
                      known != NULL,
                      0};
    size_t total = 0;
    int more;
    /* A run at a time: a large note's chunks come as its windows are read. */
    while (!(rc = prep_item_next(it, &more)) && more) {
        w.toks = it->toks.data;
        w.tok_off = it->tok_off;
        w.maps = sessions ? (const uint32_t *)(const void *)it->maps.data : NULL;
        w.map_off = it->map_off;
        w.first = it->first;
        if ((rc = store_chunks_write(c->st, id, &w, removed, added)))
            return db_fail(c, rc, "writing chunks");
        total = it->first + it->chunks.n;
    }
    if (rc)
        return core_error(c->m, rc, "reading %s again: %s", path,
                          it->reason[0] ? it->reason : errcode_text(rc));
    if ((rc = store_chunks_end(c->st, id, &w, total, removed)))
        return db_fail(c, rc, "writing chunks");
    /* The hash of the bytes chunked, when the file changed while read. */
    if (it->changed &&
        (rc = store_file_update(c->st, id, size, mtime_ns, it->hash, SYNC_FILE_OK, NULL)))
        return db_fail(c, rc, "updating a file");
    if (sessions)
        rc = store_file_set_time(c->st, id, it->time);
    if (!rc && (it->mime[0] || known))
        rc = store_file_set_mime(c->st, id, it->mime[0] ? it->mime : NULL);
    return rc ? db_fail(c, rc, "writing chunks") : MNEMO_OK;
}

static int lite_remove(void *ud, const sync_file *f)
{
    sync_ctx *c = ud;
    int rc = store_file_delete(c->st, f->id);
    return rc ? db_fail(c, rc, "removing a file") : MNEMO_OK;
}

static const sync_sink lite_sink = {lite_load,   lite_skip,  lite_touch,
                                    lite_rename, lite_write, lite_remove, 1, NULL};

/* Whether NAME (in DIR, beside index BASE) is a temporary file of a build
 * by a process that is gone: "<base>.tmp-<pid>" with a SQLite header
 * carrying the index's application id (set first thing by store_create),
 * or that file's -wal, -shm or -journal. A user's file that merely shares
 * the prefix is never matched. */
static int stale_temp(const char *dir, const char *base, const char *name)
{
    size_t blen = strlen(base);
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp-", 5) != 0)
        return 0;
    const char *p = name + blen + 5, *q = p;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q == p || q - p > 10)
        return 0;
    if (*q && strcmp(q, "-wal") != 0 && strcmp(q, "-shm") != 0 && strcmp(q, "-journal") != 0)
        return 0;
    long pid = strtol(p, NULL, 10);
    if (pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
        return 0; /* alive, or not ours to tell */
    char main_file[PATH_MAX + 300];
    snprintf(main_file, sizeof main_file, "%s/%.*s", dir, (int)(q - name), name);
    unsigned char h[72];
    int fd = open(main_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return *q != 0 && errno == ENOENT; /* a -wal or -shm left alone */
    ssize_t n = read(fd, h, sizeof h);
    close(fd);
    if (n == 0)
        return 1;
    if (n < 72 || memcmp(h, "SQLite format 3", 16) != 0)
        return 0;
    uint32_t app = (uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71];
    return app == STORE_APP_ID;
}

/* Removes leftovers of builds that died beside the index. We hold the
 * writer lock, so no live build owns one; the pid check is for a build
 * that did not take the lock. */
static void remove_stale_temps(const char *db_path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", db_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = 0;
    const char *base = slash + 1;
    DIR *d = opendir(dir[0] ? dir : "/");
    if (!d)
        return;
    /* Sidecars first would orphan nothing: decide on the names, then unlink. */
    char **doomed = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!stale_temp(dir, base, de->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            char **g = realloc(doomed, cap * sizeof *g);
            if (!g)
                break;
            doomed = g;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        if (!(doomed[n] = malloc(len)))
            break;
        snprintf(doomed[n++], len, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        unlink(doomed[i]);
        free(doomed[i]);
    }
    free(doomed);
}

/* Removes the temporary index TMP and whatever SQLite left beside it. */
static void remove_temp(const char *tmp)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    char p[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
        snprintf(p, sizeof p, "%s%s", tmp, sfx[i]);
        unlink(p);
    }
}

static void fsync_dir(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = slash == dir ? '/' : 0;
    if (slash == dir)
        slash[1] = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Renames TMP over the live index when no other connection has it open,
 * which SQLite proves by letting this one leave WAL mode (it refuses while
 * another is open). The copy of swap_in() needs room for the old file, the
 * new one and a WAL as large as the new one; the rename only for the two.
 * The exclusive lock taken on the old file is held until it has been
 * replaced, so no connection starts on it meanwhile, and one that opened it
 * just before reopens (store.c, open_checked). Returns 1 when it decided,
 * with the outcome in *RC; 0 when the index is in use (copy it instead). */
static int rename_alone(mnemo *m, const char *tmp, int *rc)
{
    sqlite3 *db = NULL;
    int alone = 0;
    if (sqlite3_open_v2(m->db_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_exec(db, "PRAGMA locking_mode=EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        sqlite3_busy_timeout(db, 0);
        if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=DELETE", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW) {
            const char *mode = (const char *)sqlite3_column_text(q, 0);
            alone = mode && strcmp(mode, "delete") == 0;
        }
        sqlite3_finalize(q);
    }
    if (!alone) {
        sqlite3_close_v2(db);
        return 0;
    }
    *rc = MNEMO_OK;
    if (rename(tmp, m->db_path) != 0) {
        *rc = core_error(m, MNEMO_IO, "cannot move the new index into place at %s: %s",
                         m->db_path, strerror(errno));
        sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL); /* as it was */
    } else {
        fsync_dir(m->db_path);
    }
    sqlite3_close_v2(db);
    return 1;
}

/* Puts the fresh index TMP in place of the live one. With no live index,
 * or when no other connection has it open, by renaming it. Otherwise its
 * pages are copied into the live database
 * with SQLite's backup API, in one write transaction: renaming a new file
 * over a database in WAL mode would leave other processes' connections on
 * the old file sharing the -wal and -shm files of the new one, and the
 * first of them to close could checkpoint or delete what others had just
 * committed. ASIDE: the live file could not be read; it is moved there
 * (kept for recovery) and TMP renamed in. */
static int swap_in(mnemo *m, const char *tmp, const char *aside)
{
    char side[PATH_MAX + 64];
    struct stat st;
    int exists = stat(m->db_path, &st) == 0;
    if (exists && aside) {
        if (rename(m->db_path, aside) != 0)
            return core_error(m, MNEMO_IO, "cannot move the damaged index %s aside: %s",
                              m->db_path, strerror(errno));
        snprintf(side, sizeof side, "%s-wal", m->db_path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", m->db_path);
        unlink(side);
        exists = 0;
    }
    if (!exists) {
        if (rename(tmp, m->db_path) != 0)
            return core_error(m, MNEMO_IO, "cannot move the new index into place at %s: %s",
                              m->db_path, strerror(errno));
        fsync_dir(m->db_path);
        return MNEMO_OK;
    }
    sqlite3 *dst = NULL, *src = NULL;
    int rc = MNEMO_OK;
    if (rename_alone(m, tmp, &rc))
        return rc;
    if (sqlite3_open_v2(m->db_path, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_open_v2(tmp, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = core_error(m, MNEMO_DB, "cannot open %s to replace it: %s", m->db_path,
                        dst ? sqlite3_errmsg(dst) : "out of memory");
        goto done;
    }
    sqlite3_busy_timeout(dst, (int)cfg_int(m->cfg, CFG_BUSY_TIMEOUT_MS));
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b) {
        rc = core_error(m, MNEMO_DB, "cannot replace %s: %s", m->db_path, sqlite3_errmsg(dst));
        goto done;
    }
    int s2 = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (s2 != SQLITE_DONE) {
        rc = core_error(m, (s2 & 0xff) == SQLITE_BUSY ? MNEMO_BUSY : MNEMO_DB,
                        "cannot replace %s: %s", m->db_path, sqlite3_errstr(s2));
        goto done;
    }
    /* Fold the copy into the file now rather than at some later commit. */
    sqlite3_exec(dst, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
done:
    sqlite3_close_v2(src);
    sqlite3_close_v2(dst);
    if (!rc)
        remove_temp(tmp);
    return rc;
}

/* May a fresh build replace the file at the index path? Only when it is
 * absent or provably a mnemo index (possibly damaged); never a foreign or
 * unprovable file. *KIND: what it is (STORE_KIND_*). DEEP: check the pages
 * too (a rebuild asked for with --force may be one after damage). */
static int replaceable(mnemo *m, int deep, int *kind)
{
    buf err;
    buf_init(&err, 16384);
    *kind = store_identify(m->db_path, (int)cfg_int(m->cfg, CFG_BUSY_TIMEOUT_MS), deep, &err);
    int rc = MNEMO_OK;
    switch (*kind) {
    case STORE_KIND_ABSENT:
    case STORE_KIND_OURS:
    case STORE_KIND_DAMAGED:
    case STORE_KIND_NEWER:
        break;
    case STORE_KIND_FOREIGN:
        rc = core_error(m, MNEMO_CORRUPT, "%s", err.len ? err.data : "");
        break;
    default:
        rc = core_error(m, MNEMO_IO, "%s", err.len ? err.data : "cannot read the index");
    }
    buf_cleanup(&err);
    return rc;
}

/* Salvages the memories a damaged index of schema 5 kept in itself into
 * the memory store attached to the new index ST. */
static void salvage_old(mnemo *m, store *st, const char *aside, mnemo_sync_stats *stats)
{
    buf err;
    buf_init(&err, 16384);
    salvage_report r;
    sqlite3 *db = store_db(st);
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = salvage_memories(m->db_path, db, &r, &err);
    if (rc == SQLITE_NOTFOUND)
        rc = SQLITE_OK; /* no memories in it (they live in the memory store) */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    buf_reset(&m->warn);
    m->warn.err = 0;
    if (rc != SQLITE_OK)
        buf_printf(&m->warn,
                   "the old index is damaged and kept as %s; its memories could not "
                   "be salvaged (%s): run mnemo memory recover on it",
                   aside, err.data ? err.data : "");
    else if (r.found)
        buf_printf(&m->warn,
                   "the old index is damaged and kept as %s; %ld memories salvaged "
                   "from it (%ld already in the memory store, %ld damaged places skipped)",
                   aside, r.recovered, r.present, r.unreadable_reads);
    else
        buf_printf(&m->warn, "the old index is damaged and kept as %s", aside);
    stats->embed_warning = m->warn.data;
    buf_cleanup(&err);
}

static int settings_changed(mnemo *m, const char **why)
{
    static const struct {
        const char *meta;
        int key;
        const char *why;
    } checks[] = {{"language", CFG_LANGUAGE, "the stemmer language changed"},
                  {"chunk_tokens", CFG_CHUNK_TOKENS, "the chunk size changed"},
                  {"chunk_overlap", CFG_CHUNK_OVERLAP, "the chunk overlap changed"},
                  {"index_rules", -1, "it was built by a mnemo with other indexing rules"},
                  {"workspace", -2, "it was built for another workspace"}};
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
        char *v = NULL;
        if (store_meta_get(LITE(m)->st, checks[i].meta, &v))
            return 0;
        const char *want = checks[i].key == -1   ? PREP_INDEX_RULES
                           : checks[i].key == -2 ? m->workspace
                                                 : cfg_str(m->cfg, checks[i].key);
        int differs = !v || strcmp(v, want) != 0;
        free(v);
        if (differs) {
            *why = checks[i].why;
            return 1;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------------
 * The steps of a sync (sync.h)
 * -------------------------------------------------------------------- */

/* Lets go of C: the lock, and a new index not put in place. */
static void sync_free(sync_ctx *c, int remove)
{
    if (c->fresh) {
        store_close(c->st);
        if (remove)
            remove_temp(c->tmp);
    }
    lock_release(c->lock);
    free(c);
}

/* Writes into the live index, in one transaction, unless there is none, it
 * was built with other settings or found damaged, or --force asks for a
 * new one: that is built beside it (lite_end renames it over). */
static int lite_begin(mnemo *m, const mnemo_sync_opts *opts, int again, mnemo_sync_stats *stats,
                      const sync_sink **sink, void **ud)
{
    char lockpath[PATH_MAX + 8];
    snprintf(lockpath, sizeof lockpath, "%s.lock", m->db_path);
    int lock = lock_acquire(lockpath, (int)cfg_int(m->cfg, CFG_BUSY_TIMEOUT_MS));
    if (lock == -2)
        return core_error(m, MNEMO_BUSY,
                          "another mnemo process is writing the index %s (lock %s held)",
                          m->db_path, lockpath);
    if (lock < 0)
        return core_error(m, MNEMO_IO, "cannot lock %s: %s", lockpath, strerror(errno));
    sync_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        lock_release(lock);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    c->m = m;
    c->stats = stats;
    c->lock = lock;
    buf err; /* a store's message */
    buf_init(&err, 16384);

    remove_stale_temps(m->db_path);
    int fresh = opts && opts->force, suspect = lite_suspect(m);
    const char *why = fresh ? "--force" : NULL;
    int rc = MNEMO_OK;
    if (again) {
        /* The index is made from the notes: a damaged one is rebuilt
         * (and kept aside), not patched. */
        fresh = suspect = 1;
        why = "the sync found it damaged";
    }
    if (!fresh && suspect) {
        fresh = 1;
        why = "a search or status found it damaged";
    }
    if (!fresh) {
        store_close(LITE(m)->st); /* reopen: another process may have swapped the file */
        LITE(m)->st = NULL;
        rc = lite_store(m);
        if (rc == MNEMO_NOTFOUND) {
            fresh = 1;
            why = "no index yet";
            rc = MNEMO_OK;
        } else if (rc) {
            goto fail;
        } else if (settings_changed(m, &why)) {
            fresh = 1;
        }
    }
    if (!fresh) {
        c->st = LITE(m)->st;
        if ((rc = store_begin(c->st))) {
            db_fail(c, rc, "starting a transaction");
            goto fail;
        }
        /* An index made before the file-name leg's own index gets it. */
        if ((rc = store_index_files_state(c->st))) {
            db_fail(c, rc, "indexing the files' state");
            goto fail;
        }
        goto done;
    }

    /* Full build beside the live index, then an atomic rename. */
    if ((rc = replaceable(m, (opts && opts->force) || suspect, &c->kind)))
        goto fail;
    if (c->kind == STORE_KIND_OURS) {
        /* An index of schema 5 keeps its memories in itself: they move to
         * the memory store (on open) before anything replaces it. A memory
         * store that cannot be opened does not stop a rebuild otherwise. */
        if ((rc = lite_store(m)))
            goto fail;
        if (store_legacy_memories(LITE(m)->st)) {
            rc = core_error(m, MNEMO_IO,
                            "the memories in %s could not be moved to the memory store %s "
                            "(%s); the index is left as it is",
                            m->db_path, m->mem_path,
                            LITE(m)->mem_err.len ? LITE(m)->mem_err.data
                                                 : "read-only, or the move failed");
            goto fail;
        }
    }
    store_close(LITE(m)->st);
    LITE(m)->st = NULL;
    c->fresh = 1;
    snprintf(c->tmp, sizeof c->tmp, "%s.tmp-%ld", m->db_path, (long)getpid());
    store_settings set = {cfg_str(m->cfg, CFG_LANGUAGE), (int)cfg_int(m->cfg, CFG_CHUNK_TOKENS),
                          (int)cfg_int(m->cfg, CFG_CHUNK_OVERLAP), m->workspace};
    if ((rc = store_create(c->tmp, &set, &c->st, &err))) {
        core_error(m, rc, "%s", err.len ? err.data : "");
        goto fail;
    }
    /* The memory store is shared, not rebuilt: the new index attaches it
     * as the old one did (its vectors are refreshed with the notes'). */
    if ((rc = store_attach_memories(c->st, m->mem_path, set.language, &err)) &&
        rc != MNEMO_CORRUPT) {
        core_error(m, rc, "%s", err.len ? err.data : "");
        goto fail;
    }
    if (rc) { /* a damaged memory store stays as it is; notes are rebuilt */
        buf_reset(&m->warn);
        m->warn.err = 0;
        buf_printf(&m->warn, "%s", err.len ? err.data : "");
        stats->embed_warning = m->warn.data;
        rc = MNEMO_OK;
    }
    stats->rebuilt = 1;
    stats->rebuild_reason = why;
    if ((rc = store_begin(c->st))) {
        db_fail(c, rc, "starting a transaction");
        goto fail;
    }
done:
    buf_cleanup(&err);
    *sink = &lite_sink;
    *ud = c;
    return MNEMO_OK;
fail:
    buf_cleanup(&err);
    sync_free(c, c->st != NULL);
    return rc;
}

/* Records the sync and commits. A new index also gets the memories a
 * damaged one of schema 5 kept in itself (salvaged first, before it is
 * moved aside), and the cached vectors of the live one. */
static int lite_commit(void *ud, const sync_record *rec)
{
    sync_ctx *c = ud;
    int rc = store_kw_flush(c->st);
    if (rc)
        return db_fail(c, rc, "writing the keyword postings");
    rc = store_meta_set(c->st, "last_sync_at", rec->when);
    if (!rc)
        rc = store_meta_set(c->st, "last_sync_ms", rec->ms);
    if (!rc && rec->json)
        rc = store_meta_set(c->st, "last_sync", rec->json);
    if (rc)
        return db_fail(c, rc, "recording the sync");
    if ((rc = store_commit(c->st)))
        return db_fail(c, rc, "committing");
    if (!c->fresh)
        return MNEMO_OK;
    if (c->kind == STORE_KIND_DAMAGED) {
        char when[32];
        time_format_iso(time_wall(), when);
        snprintf(c->aside, sizeof c->aside, "%s.damaged-%s", c->m->db_path, when);
        salvage_old(c->m, c->st, c->aside, c->stats);
    }
    vectors_carry_cache(c->st, c->m->db_path);
    return MNEMO_OK;
}

/* The chunks and memories without a vector. */
static int lite_vectors(void *ud, embedder *e, const mnemo_sync_opts *opts,
                        mnemo_sync_stats *stats, buf *err)
{
    sync_ctx *c = ud;
    int rc = vectors_sync(c->m, c->st, c->m->db_path, e, opts, stats, err);
    if (!rc)
        rc = mem_embed_missing(c->m, c->st, e, err);
    return rc;
}

/* The vectors' outcome in meta, for `status`. */
static int lite_vectors_done(void *ud, int ran, int rc, const char *why)
{
    sync_ctx *c = ud;
    if (!ran)
        return MNEMO_OK;
    char when[32];
    time_format_iso(time_wall(), when);
    if (rc) {
        store_meta_set(c->st, "embed_error", why);
        store_meta_set(c->st, "embed_error_at", when);
    } else {
        store_meta_set(c->st, "embed_error", "");
        store_meta_set(c->st, "embed_ok_at", when);
    }
    return MNEMO_OK;
}

/* A new index committed is finished and put in place; the live one's
 * transaction is rolled back when the walk or commit failed, and a damaged
 * live index asks for a new one. */
static int lite_end(void *ud, int rc, int committed)
{
    sync_ctx *c = ud;
    mnemo *m = c->m;
    if (!c->fresh) {
        if (!committed)
            store_rollback(c->st);
        sync_free(c, 0);
        return rc == MNEMO_CORRUPT ? SYNC_AGAIN : rc;
    }
    int krc = committed ? MNEMO_OK : rc; /* the keyword index's */
    if (!krc && (krc = store_finish(c->st)))
        core_error(m, krc, "cannot finish the new index %s", c->tmp);
    store_close(c->st);
    c->st = NULL;
    if (!krc)
        krc = swap_in(m, c->tmp, c->aside[0] ? c->aside : NULL);
    if (!krc)
        lite_unsuspect(m);
    sync_free(c, krc != MNEMO_OK);
    return krc ? krc : rc;
}

const sync_store lite_sync_store = {lite_begin,  lite_commit,       NULL,
                                    lite_vectors, lite_vectors_done, lite_end};
