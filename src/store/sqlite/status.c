/*
 * status.c - what `mnemo status` reports: workspace, database, counts,
 * last sync, tokenizer and chunking settings, skipped files and warnings.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/backend.h"
#include "engine/core.h"
#include "engine/files.h"
#include "store/sqlite/lite.h"
#include "util/errcode.h"
#include "util/time.h"
#include "store/sqlite/vectors.h"

static json_t *time_json_iso(double t)
{
    char iso[32];
    time_format_iso(t, iso);
    return json_string(iso);
}

static json_int_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (json_int_t)st.st_size : 0;
}

/* The first read of status that failed (SQLite's code), if any: a
 * damaged file is reported, never counted as -1. */
typedef struct reads {
    int rc;
} reads;

static json_int_t count(sqlite3 *db, const char *sql, reads *r)
{
    sqlite3_stmt *st = NULL;
    json_int_t n = -1;
    int s = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (s == SQLITE_OK && (s = sqlite3_step(st)) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (n < 0 && r && !r->rc)
        r->rc = s;
    return n;
}

/* PRAGMA CHECK (quick_check: every page and record read; integrity_check:
 * and every index against its table) of SCHEMA: SQLITE_OK, or an SQLite
 * error with the first complaint in WHY. */
static int quick_check(sqlite3 *db, const char *schema, const char *check, char *why, size_t n)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA %s.%s(1)", schema, check);
    sqlite3_stmt *st = NULL;
    int s = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (s == SQLITE_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        s = v && strcmp(v, "ok") == 0 ? SQLITE_OK : SQLITE_CORRUPT;
        /* "*** in database main ***\nPage 7: ...": the complaint alone. */
        const char *nl = v ? strrchr(v, '\n') : NULL;
        snprintf(why, n, "%s: %s", check, nl ? nl + 1 : v ? v : "no answer");
    } else {
        snprintf(why, n, "%s", check);
    }
    sqlite3_finalize(st);
    return s;
}

/* Memories are primary data and their store is small (1,000 memories
 * take about 1.8 MB): plain status checks a store up to this size whole,
 * tables against their indexes (integrity_check, about 1.5 ms a MB);
 * --deep checks any size, and every page of the index (quick_check). */
#define MEM_CHECK_BYTES (64 << 20)

/* Records the damage on the handle and as the report's error. */
static void damaged(mnemo *m, json_t *root, json_t *warnings, int rc, const char *what, int mem)
{
    int code = mem ? lite_mem_fail(m, rc, what) : lite_index_fail(m, rc, what);
    json_object_set_new(root, "error", json_string(core_errmsg(m)));
    json_object_set_new(root, "errorStatus", json_integer(code));
    json_array_append_new(warnings, json_string(core_errmsg(m)));
}

static json_t *meta_json(store *s, const char *key)
{
    char *v = NULL;
    if (store_meta_get(s, key, &v) || !v)
        return json_null();
    json_t *j = json_string(v);
    free(v);
    return j;
}

/* The embedding part of status: what the policy picks, whether the stored
 * vectors belong to it, and with DEEP a probe of the provider. */
static json_t *embedding_json(mnemo *m, int deep, json_t *warnings, const char **mode)
{
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    json_t *e = json_object();
    json_object_set_new(e, "provider", json_string(name));
    json_object_set_new(e, "configured", json_string(cfg_str(m->cfg, CFG_PROVIDER)));
    *mode = "keyword";
    sqlite3 *h = LITE(m)->st ? store_db(LITE(m)->st) : NULL;
    if (h) {
        json_object_set_new(e, "vectors", json_integer(count(h, "SELECT count(*) FROM chunk_vectors", NULL)));
        json_object_set_new(e, "identity", meta_json(LITE(m)->st, "vec_identity"));
        json_t *le = meta_json(LITE(m)->st, "embed_error");
        if (json_is_string(le) && *json_string_value(le)) {
            json_object_set_new(e, "lastError", le);
            json_object_set_new(e, "lastErrorAt", meta_json(LITE(m)->st, "embed_error_at"));
            char w[1200];
            snprintf(w, sizeof w, "last embedding failed: %s", json_string_value(le));
            json_array_append_new(warnings, json_string(w));
        } else {
            json_decref(le);
        }
    }
    if (strcmp(name, "none") == 0) {
        int is_auto = strcmp(cfg_str(m->cfg, CFG_PROVIDER), "none") != 0;
        json_object_set_new(e, "reason", json_string(is_auto
                                                         ? "keyword only: no provider configured"
                                                         : "provider none (keyword only)"));
        /* Vectors from an index run with --set provider=...: say that
         * searches leave them unused, and how to use them. */
        const char *ident = json_string_value(json_object_get(e, "identity"));
        if (is_auto && ident && *ident && json_integer_value(json_object_get(e, "vectors")) > 0) {
            char from[32];
            buf why;
            buf_init(&why, 4096);
            provider_unused_hint(ident, from, &why);
            if (!buf_err(&why)) {
                json_object_set_new(e, "unused", json_string(why.data));
                json_array_append_new(warnings, json_string(why.data));
            }
            buf_cleanup(&why);
        }
        return e;
    }
    json_object_set_new(e, "credentials", provider_credentials(m, name));
    buf err;
    buf_init(&err, 8192);
    embedder *em = NULL;
    int rc = provider_embedder(m, name, &em, &err);
    if (rc) {
        json_object_set_new(e, "error", json_string(err.len ? err.data : errcode_text(rc)));
        json_array_append_new(warnings, json_string(err.len ? err.data : errcode_text(rc)));
        buf_cleanup(&err);
        return e;
    }
    json_object_set_new(e, "model", json_string(embed_model(em)));
    if (deep && !(deep & MNEMO_STATUS_NO_PROBE)) {
        const char *probe = "mnemo status probe";
        size_t len = strlen(probe);
        float *v = NULL;
        double t0 = time_mono();
        rc = embed_texts(em, EMBED_QUERY, &probe, &len, 1, &v, &err);
        json_t *pj = json_object();
        if (rc) {
            json_object_set_new(pj, "ok", json_false());
            json_object_set_new(pj, "error", json_string(err.len ? err.data : errcode_text(rc)));
        } else {
            json_object_set_new(pj, "ok", json_true());
            json_object_set_new(pj, "dims", json_integer(embed_dims(em)));
            json_object_set_new(pj, "latencyMs", json_real((time_mono() - t0) * 1000));
        }
        free(v);
        json_object_set_new(e, "probe", pj);
    }
    json_object_set_new(e, "dims", json_integer(embed_dims(em)));
    if (h) {
        char ident[1024];
        provider_chunk_identity(m, em, ident, sizeof ident);
        json_t *stored = json_object_get(e, "identity");
        int stale = embed_dims(em) && (!json_is_string(stored) ||
                                       strcmp(json_string_value(stored), ident) != 0);
        json_object_set_new(e, "stale", json_boolean(stale));
        if (stale)
            json_array_append_new(warnings, json_string("vectors are missing or were built with "
                                                        "another embedding setup; run: mnemo "
                                                        "index"));
        else if (json_integer_value(json_object_get(e, "vectors")) > 0)
            *mode = "hybrid";
    }
    buf_cleanup(&err);
    return e;
}

int lite_index_count(mnemo *m, long long *files)
{
    *files = 0;
    core_clear(m);
    int rc = lite_store(m);
    if (rc)
        return rc;
    reads r = {0};
    json_int_t n = count(store_db(LITE(m)->st), "SELECT count(*) FROM files WHERE status = 0", &r);
    if (n < 0)
        return core_error(m, MNEMO_DB, "cannot count the files of %s", m->db_path);
    *files = (long long)n;
    return MNEMO_OK;
}

int lite_files(mnemo *m, size_t limit, file_list *out)
{
    core_clear(m);
    int rc = lite_store(m);
    if (rc == MNEMO_NOTFOUND) { /* no index yet: said by "indexed", as status says it */
        core_clear(m);
        return MNEMO_OK;
    }
    if (rc)
        return rc;
    /* Rows read from a damaged file may be missing some: not a list. */
    if (lite_suspect(m))
        return lite_index_fail(m, SQLITE_CORRUPT, "a search met the damage");
    out->indexed = 1;
    sqlite3_stmt *st = NULL;
    int s = sqlite3_prepare_v2(store_db(LITE(m)->st),
                               "SELECT path, source = 'sessions', mime IS NOT NULL, size, "
                               "mtime_ns, nchunks FROM files WHERE status = 0 ORDER BY path "
                               "LIMIT ?",
                               -1, &st, NULL);
    if (s == SQLITE_OK)
        s = sqlite3_bind_int64(st, 1, (sqlite3_int64)limit + 1);
    while (s == SQLITE_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *path = (const char *)sqlite3_column_text(st, 0);
        if ((rc = file_list_add(out, path ? path : "", sqlite3_column_int(st, 1),
                                sqlite3_column_int(st, 2), sqlite3_column_int64(st, 3),
                                sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5))))
            goto done;
        s = SQLITE_OK;
    }
    if (s != SQLITE_DONE)
        rc = lite_index_fail(m, s, "listing the indexed files");
done:
    sqlite3_finalize(st);
    return rc;
}

int lite_status_json(mnemo *m, int deep, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *root = json_object();
    if (!root)
        return MNEMO_NOMEM;
    char side[4096];
    snprintf(side, sizeof side, "%s-wal", m->db_path);
    json_object_set_new(root, "version", json_string(MNEMO_VERSION));
    json_object_set_new(root, "workspace", json_string(m->workspace));
    json_t *db = json_object();
    json_object_set_new(db, "path", json_string(m->db_path));
    json_object_set_new(root, "db", db);
    json_t *warnings = json_array();

    int rc = lite_store(m);
    json_object_set_new(root, "indexed", json_boolean(rc == MNEMO_OK));
    if (rc == MNEMO_NOTFOUND) {
        json_array_append_new(warnings, json_string("no index yet; run: mnemo index"));
        rc = MNEMO_OK;
    } else if (rc) {
        json_object_set_new(root, "error", json_string(core_errmsg(m)));
        json_object_set_new(root, "errorStatus", json_integer(rc)); /* a MNEMO_* code */
        json_array_append_new(warnings, json_string(core_errmsg(m)));
        rc = MNEMO_OK;
    } else {
        sqlite3 *h = store_db(LITE(m)->st);
        reads ix = {0}, mr = {0};
        json_object_set_new(db, "sizeBytes", json_integer(file_size(m->db_path) + file_size(side)));
        char *ver = NULL;
        store_meta_get(LITE(m)->st, "schema_version", &ver);
        json_object_set_new(db, "schemaVersion", json_integer(ver ? (int)strtol(ver, NULL, 10) : 0));
        free(ver);
        json_object_set_new(root, "files",
                            json_integer(count(h, "SELECT count(*) FROM files WHERE status = 0", &ix)));
        json_object_set_new(root, "chunks", json_integer(count(h, "SELECT count(*) FROM chunks", &ix)));
        json_object_set_new(root, "bytes", json_integer(count(h, "SELECT coalesce(sum(size),0) "
                                                                 "FROM files WHERE status = 0", &ix)));
        json_t *last = json_object();
        json_object_set_new(last, "at", meta_json(LITE(m)->st, "last_sync_at"));
        char *ms = NULL;
        store_meta_get(LITE(m)->st, "last_sync_ms", &ms);
        json_object_set_new(last, "durationMs", ms ? json_real(strtod(ms, NULL)) : json_null());
        free(ms);
        char *stats = NULL;
        store_meta_get(LITE(m)->st, "last_sync", &stats);
        json_t *sj = stats ? json_loads(stats, 0, NULL) : NULL;
        free(stats);
        if (sj)
            json_object_update(last, sj);
        json_decref(sj);
        json_object_set_new(root, "lastSync", last);

        /* The memory store: primary data, kept apart from the index. */
        json_t *mj = json_object();
        json_object_set_new(mj, "path", json_string(m->mem_path));
        if (LITE(m)->mem_rc) {
            const char *why = LITE(m)->mem_err.len ? LITE(m)->mem_err.data : "";
            json_object_set_new(mj, "error", json_string(why));
            json_array_append_new(warnings, json_string(why));
            if (LITE(m)->mem_rc == MNEMO_CORRUPT) { /* damaged, or not a store */
                json_object_set_new(root, "error", json_string(why));
                json_object_set_new(root, "errorStatus", json_integer(MNEMO_CORRUPT));
            }
        } else {
            json_object_set_new(mj, "count", json_integer(count(h, "SELECT count(*) FROM "
                                                                   "memories WHERE deleted_at "
                                                                   "IS NULL", &mr)));
            char *bw = NULL;
            store_mem_meta_get(LITE(m)->st, "backup_at", &bw);
            json_object_set_new(mj, "lastBackup",
                                bw ? time_json_iso(strtod(bw, NULL)) : json_null());
            free(bw);
        }
        json_object_set_new(root, "memories", mj);

        json_t *tokj = json_object();
        json_t *lang = meta_json(LITE(m)->st, "language");
        const char *cl = cfg_str(m->cfg, CFG_LANGUAGE);
        if (json_is_string(lang) && strcmp(json_string_value(lang), cl) != 0) {
            char w[256];
            snprintf(w, sizeof w,
                     "the index uses language %s but the configuration says %s; run: mnemo index",
                     json_string_value(lang), cl);
            json_array_append_new(warnings, json_string(w));
        }
        json_object_set_new(tokj, "language", lang);
        json_object_set_new(tokj, "stopWords", json_boolean(cfg_bool(m->cfg, CFG_STOP_WORDS)));
        json_object_set_new(tokj, "cjk", json_string("bigrams"));
        json_object_set_new(tokj, "bm25", json_pack("{s:f,s:f}", "k1",
                                                    cfg_num(m->cfg, CFG_BM25_K1), "b",
                                                    cfg_num(m->cfg, CFG_BM25_B)));
        json_object_set_new(root, "tokenizer", tokj);
        char *ct = NULL, *co = NULL;
        store_meta_get(LITE(m)->st, "chunk_tokens", &ct);
        store_meta_get(LITE(m)->st, "chunk_overlap", &co);
        json_object_set_new(root, "chunking", json_pack("{s:i,s:i}", "tokens", ct ? (int)strtol(ct, NULL, 10) : 0,
                                                        "overlap", co ? (int)strtol(co, NULL, 10) : 0));
        free(ct);
        free(co);

        json_t *skipped = json_array();
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, "SELECT path, reason FROM files WHERE status != 0 ORDER BY path",
                               -1, &st, NULL) == SQLITE_OK) {
            int s;
            while ((s = sqlite3_step(st)) == SQLITE_ROW) {
                const char *r = (const char *)sqlite3_column_text(st, 1);
                json_array_append_new(
                    skipped, json_pack("{s:s,s:s}", "path", (const char *)sqlite3_column_text(st, 0),
                                       "reason", r ? r : "skipped"));
            }
            if (s != SQLITE_DONE && !ix.rc)
                ix.rc = s;
        }
        sqlite3_finalize(st);
        json_object_set_new(root, "skipped", skipped);

        /* Damage: what the reads above met, every page of a small memory
         * store, and with DEEP every page of both files (quick_check: see
         * docs/benchmarks.md for its cost). */
        char why[512] = "reading the index", mwhy[512] = "reading the memory store";
        if (!ix.rc && lite_suspect(m)) {
            ix.rc = SQLITE_CORRUPT;
            snprintf(why, sizeof why, "a search met the damage");
        }
        if (!ix.rc && deep)
            ix.rc = quick_check(h, "main", "quick_check", why, sizeof why);
        if (!mr.rc && (deep || file_size(m->mem_path) <= MEM_CHECK_BYTES) && !LITE(m)->mem_rc)
            mr.rc = quick_check(h, "mem", "integrity_check", mwhy, sizeof mwhy);
        if (mr.rc) {
            lite_mem_fail(m, mr.rc, mwhy);
            json_object_set_new(mj, "error", json_string(core_errmsg(m)));
        }
        if (ix.rc || mr.rc)
            damaged(m, root, warnings, ix.rc ? ix.rc : mr.rc, ix.rc ? why : mwhy, !ix.rc);
    }
    const char *mode = "keyword";
    json_t *emb = embedding_json(m, deep, warnings, &mode);
    json_object_set_new(root, "mode", json_string(mode));
    json_object_set_new(root, "embedding", emb);
    core_clear(m);
    json_object_set_new(root, "warnings", warnings);
    *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(root);
    return *out ? rc : MNEMO_NOMEM;
}
