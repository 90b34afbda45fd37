/*
 * pgsync.c - the PostgreSQL backend's steps of a sync (sync.h, run by
 * sync.c's sync_run): files and chunks as the sink of the walk (see
 * pgstore.c for the batches and the lock; pgnpost.c for the index), the
 * generations a rebuild writes, and the vectors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/calib.h"
#include "engine/provider.h"
#include "engine/config.h"
#include "engine/sync.h"
#include "engine/walk.h"
#include "store/postgres/pgint.h"
#include "text/chunk.h"
#include "util/errcode.h"
#include "util/time.h"

/* ----------------------------------------------------------------------
 * Sync
 * -------------------------------------------------------------------- */

typedef struct psync {
    mnemo *m;
    const char *logical;         /* the tenant synced (its sync lock's key) */
    const char *tenant;          /* the generation written (key) */
    char *key;
    int build;                   /* a new generation, to replace the live one */
    int rolled;                  /* the open batch was rolled back */
    char ident[1024];            /* the identity of the vectors made, or "" */
    tok *dt;
    int in_txn;                  /* a batch is open */
    int begun;                   /* ... and its BEGIN was sent */
    int files, chunks;           /* in the open batch */
    long long d_chunks, d_tokens; /* corpus changes of the open batch's other statements */
    buf tsv, tmp, lc, name, stem;
    struct pwrites *pw;          /* the batch's file writes (ps_write) */
    struct pwrites *sent;        /* the writes on their way (settle), or NULL */
    struct pwrites *spare;       /* the other of the two */
    mnemo_sync_stats *stats;
    pgnpost *post;               /* the postings of the chunks written */
    int final;                   /* the next commit is the sync's last */
    struct pwrites *pws;         /* the two batches of file writes */
    sync_sink sink;              /* pg_sink, with media kept where vectors are */
} psync;

static int writes_send(psync *s);
static int settle(psync *s);

/* A batch opens; its BEGIN waits for a statement that needs it (stmt). */
static void begin(psync *s)
{
    if (s->in_txn)
        return;
    s->in_txn = 1;
    s->begun = 0;
    s->files = s->chunks = 0;
    s->d_chunks = s->d_tokens = 0;
}

/* Before a statement of the open batch: the writes on their way landed,
 * and the batch's transaction began. */
static int stmt(psync *s)
{
    begin(s);
    int rc = settle(s);
    if (!rc && !s->begun && !(rc = pgstore_q(s->m, "sync", "BEGIN", 0, NULL, NULL)))
        s->begun = 1;
    return rc;
}

/* Ends the open batch. A batch of file writes alone is one statement, its
 * own transaction, sent without waiting: the caller prepares the next
 * batch while the server stores this one, and the next commit (or any
 * other statement) takes its answer first. Other batches, the last one and
 * those that write the postings, run as one transaction, waited for. */
static int commit(psync *s)
{
    if (!s->in_txn)
        return MNEMO_OK;
    int rc = settle(s);
    if (!rc && !s->begun && !s->final && !pgnpost_due(s->post)) {
        s->in_txn = 0;
        return writes_send(s);
    }
    if (!rc && !s->begun && !(rc = pgstore_q(s->m, "sync", "BEGIN", 0, NULL, NULL)))
        s->begun = 1;
    if (!rc && !(rc = writes_send(s)))
        rc = settle(s);
    if (!rc)
        rc = pgnpost_flush(s->post, s->final);
    if (!rc && (s->d_chunks || s->d_tokens)) {
        char dc[32], dt[32];
        snprintf(dc, sizeof dc, "%lld", s->d_chunks);
        snprintf(dt, sizeof dt, "%lld", s->d_tokens);
        const char *p[3] = {s->tenant, dc, dt};
        rc = pgstore_q(s->m, "sync",
               "UPDATE mnemo_corpus SET nchunks = nchunks + $2::bigint, "
               "ntokens = ntokens + $3::bigint WHERE tenant = $1",
               3, p, NULL);
    }
    if (!rc)
        rc = pgstore_q(s->m, "sync", "COMMIT", 0, NULL, NULL);
    if (!rc)
        s->in_txn = s->begun = 0;
    return rc;
}

/* After a failure: the answer on its way taken, the open transaction
 * rolled back; the handle keeps the first error. */
static void rollback(psync *s)
{
    buf keep;
    buf_init(&keep, 0);
    buf_puts(&keep, s->m->err.data ? s->m->err.data : "");
    settle(s);
    if (s->begun)
        pgstore_q(s->m, "sync", "ROLLBACK", 0, NULL, NULL);
    core_error(s->m, MNEMO_DB, "%s", keep.data ? keep.data : "sync failed");
    buf_cleanup(&keep);
    s->in_txn = s->begun = 0;
}

/* Counts a written file; commits when the batch is full. */
static int written(psync *s, int chunks)
{
    s->files++;
    s->chunks += chunks;
    if (s->files >= BATCH_FILES || s->chunks >= BATCH_CHUNKS)
        return commit(s);
    return MNEMO_OK;
}

/* The name forms and path words of PATH into s->lc, s->name, s->stem,
 * s->tsv. */
static int path_forms(psync *s, const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t stem = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    pgstore_ascii_lower(&s->lc, path, strlen(path));
    pgstore_ascii_lower(&s->name, b, strlen(b));
    pgstore_ascii_lower(&s->stem, b, stem);
    const char *words = strncmp(path, "memory/", 7) == 0 ? path + 7 : path;
    int rc = pgstore_tsvector_text(s->dt, words, &s->tsv);
    return rc ? rc : buf_err(&s->lc) | buf_err(&s->name) | buf_err(&s->stem);
}

static int ps_load(void *ud, sync_file **out, size_t *n)
{
    psync *s = ud;
    pg_rows *r = NULL;
    const char *p[1] = {s->tenant};
    *out = NULL;
    *n = 0;
    int rc = pgstore_q(s->m, "reading files",
               "SELECT id, path, size, mtime_ns, hash, status, source, reason FROM mnemo_files "
               "WHERE tenant = $1",
               1, p, &r);
    if (rc)
        return rc;
    size_t cnt = pg_nrows(r);
    sync_file *v = calloc(cnt ? cnt : 1, sizeof *v);
    if (!v) {
        pg_rows_free(r);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < cnt; i++) {
        sync_file *f = &v[i];
        f->id = pgstore_ll(r, i, 0);
        f->path = strdup(pg_value(r, i, 1));
        f->size = pgstore_ll(r, i, 2);
        f->mtime_ns = pgstore_ll(r, i, 3);
        snprintf(f->hash, sizeof f->hash, "%s", pg_value(r, i, 4));
        f->ok = pgstore_ll(r, i, 5) == SYNC_FILE_OK;
        f->sessions = !strcmp(pg_value(r, i, 6), "sessions");
        if (!f->ok && !pg_isnull(r, i, 7)) /* sync_walk: does a limit still hold? */
            f->reason = strdup(pg_value(r, i, 7));
        if (!f->path || (!f->ok && !pg_isnull(r, i, 7) && !f->reason)) {
            sync_files_free(v, i + 1);
            pg_rows_free(r);
            return core_error(s->m, MNEMO_NOMEM, "out of memory");
        }
    }
    pg_rows_free(r);
    *out = v;
    *n = cnt;
    return MNEMO_OK;
}

/* Chunks removed by a statement returning (count, tokens, lexemes at 0)
 * in row 0. */
static void removed_from(psync *s, pg_rows *r, int64_t *removed)
{
    long long c = pgstore_ll(r, 0, 0), t = pgstore_ll(r, 0, 1);
    s->d_chunks -= c;
    s->d_tokens -= t;
    if (removed)
        *removed = c;
}

static int ps_skip(void *ud, const sync_file *known, const char *path, int64_t size,
                   int64_t mtime_ns, const char *reason, int sessions)
{
    psync *s = ud;
    (void)known;
    char sz[32], mt[32];
    snprintf(sz, sizeof sz, "%lld", (long long)size);
    snprintf(mt, sizeof mt, "%lld", (long long)mtime_ns);
    int rc = stmt(s);
    if (!rc)
        rc = path_forms(s, path);
    if (rc)
        return rc == MNEMO_NOMEM ? core_error(s->m, rc, "out of memory") : rc;
    const char *p[10] = {s->tenant, path,   s->lc.data, s->name.data,
                         s->stem.data, s->tsv.data ? s->tsv.data : "", sessions ? "sessions" : "memory",
                         sz,        mt,     reason ? reason : "skipped"};
    pg_rows *r = NULL;
    rc = pgstore_q(s->m, "recording a skipped file",
           "WITH f AS (INSERT INTO mnemo_files(tenant, path, path_lc, name_lc, stem_lc, "
           "path_tsv, source, size, mtime_ns, hash, status, reason) VALUES ($1, $2, $3, $4, $5, "
           "$6::tsvector, $7, $8::bigint, $9::bigint, '', 1, $10) ON CONFLICT (tenant, path) DO "
           "UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, hash = '', status = 1, "
           "reason = excluded.reason, nchunks = 0, mime = NULL, indexed_at = now() RETURNING id), "
           "d AS (DELETE FROM mnemo_chunks c WHERE c.tenant = $1 AND "
           "c.file_id = ANY(ARRAY(SELECT id FROM f)) "
           "RETURNING c.id, c.ntok), " PGNPOST_DEAD
           "SELECT (SELECT count(*) FROM d), (SELECT coalesce(sum(ntok), 0) FROM d), "
           "NULL",
           10, p, &r);
    if (!rc)
        removed_from(s, r, NULL);
    pg_rows_free(r);
    return rc ? rc : written(s, 0);
}

static int ps_touch(void *ud, const sync_file *f, int64_t size, int64_t mtime_ns,
                    const char *hash)
{
    psync *s = ud;
    char id[32], sz[32], mt[32];
    snprintf(id, sizeof id, "%lld", (long long)f->id);
    snprintf(sz, sizeof sz, "%lld", (long long)size);
    snprintf(mt, sizeof mt, "%lld", (long long)mtime_ns);
    const char *p[5] = {s->tenant, id, sz, mt, hash};
    int rc = stmt(s);
    if (!rc)
        rc = pgstore_q(s->m, "updating a file",
               "UPDATE mnemo_files SET size = $3::bigint, mtime_ns = $4::bigint, hash = $5, "
               "status = 0, reason = NULL, indexed_at = now() WHERE tenant = $1 AND id = "
               "$2::bigint",
               5, p, NULL);
    return rc ? rc : written(s, 0);
}

static int ps_rename(void *ud, const sync_file *f, const char *path, int64_t size,
                     int64_t mtime_ns, const char *hash)
{
    psync *s = ud;
    char id[32], sz[32], mt[32];
    snprintf(id, sizeof id, "%lld", (long long)f->id);
    snprintf(sz, sizeof sz, "%lld", (long long)size);
    snprintf(mt, sizeof mt, "%lld", (long long)mtime_ns);
    int rc = stmt(s);
    if (!rc && (rc = path_forms(s, path)))
        return core_error(s->m, rc, "out of memory");
    const char *p[10] = {s->tenant,   id,           path, s->lc.data, s->name.data,
                         s->stem.data, s->tsv.data ? s->tsv.data : "", sz, mt, hash};
    if (!rc)
        rc = pgstore_q(s->m, "renaming a file",
               "UPDATE mnemo_files SET path = $3, path_lc = $4, name_lc = $5, stem_lc = $6, "
               "path_tsv = $7::tsvector, size = $8::bigint, mtime_ns = $9::bigint, hash = $10, "
               "status = 0, reason = NULL WHERE tenant = $1 AND id = $2::bigint",
               10, p, NULL);
    return rc ? rc : written(s, 0);
}

/* The batch's file writes, sent as one statement at its commit: text
 * arrays of the files (F_*) and binary arrays of their chunks (C_*, each
 * with its file's place K), which the server takes without parsing; the
 * chunks' lengths and sources stay here for their postings. */
enum { F_PATH, F_LC, F_NAME, F_STEM, F_PTSV, F_SRC, F_SIZE, F_MT, F_HASH, F_NC, F_TM, F_APP, F_N };
enum { C_K, C_SEQ, C_SL, C_EL, C_HASH, C_IMP, C_TRIG, C_MAP, C_TEXT, C_NTOK, C_TSV, C_N };

static const uint32_t c_oid[C_N] = {
    PG_INT4OID, PG_INT4OID, PG_INT4OID, PG_INT4OID, PG_TEXTOID, PG_INT4OID,
    PG_TEXTOID, PG_BYTEAOID, PG_TEXTOID, PG_INT4OID, PG_TSVECTOROID};

typedef struct pwrites {
    buf f[F_N];
    pgtext_barr c[C_N];
    size_t files, chunks;
    long long tokens;        /* the new chunks' */
    int *ntok;               /* each chunk's length */
    unsigned char *sessions; /* each chunk's source */
    size_t cap;
} pwrites;

static void pw_start(pwrites *w)
{
    for (int i = 0; i < F_N; i++) {
        buf_reset(&w->f[i]);
        buf_putc(&w->f[i], '{');
    }
    for (int i = 0; i < C_N; i++)
        pgtext_barr_start(&w->c[i], c_oid[i]);
    w->files = w->chunks = 0;
    w->tokens = 0;
}

static void pw_init(pwrites *w)
{
    memset(w, 0, sizeof *w);
    for (int i = 0; i < F_N; i++)
        buf_init(&w->f[i], 0);
    for (int i = 0; i < C_N; i++)
        pgtext_barr_init(&w->c[i]);
    pw_start(w);
}

static void pw_cleanup(pwrites *w)
{
    for (int i = 0; i < F_N; i++)
        buf_cleanup(&w->f[i]);
    for (int i = 0; i < C_N; i++)
        pgtext_barr_cleanup(&w->c[i]);
    free(w->ntok);
    free(w->sessions);
}

static int pw_err(const pwrites *w)
{
    for (int i = 0; i < F_N; i++)
        if (buf_err(&w->f[i]))
            return 1;
    for (int i = 0; i < C_N; i++)
        if (buf_err(&w->c[i].b))
            return 1;
    return 0;
}

/* An image or audio file (multimodal): its row with its MIME type and its
 * one labelled chunk, in a statement of its own in the open batch (media
 * are few: the notes' writes stay as they are). The chunk's id is the
 * media sequence's (PGSTORE_MEDIA_ID_BASE up) and its row holds no words:
 * media are found by their vectors and their paths, as on SQLite. */
static int media_write(psync *s, const char *path, int64_t size, int64_t mtime_ns,
                       const prep_item *it, int64_t *removed, size_t *added)
{
    const chunk_list *l = &it->chunks;
    if (l->n != 1)
        return core_error(s->m, MNEMO_INVALID, "%s: a media file is one entry", path);
    const chunk *c = &l->items[0];
    int rc = stmt(s);
    if (!rc && (rc = path_forms(s, path)))
        return core_error(s->m, rc, "out of memory");
    if (rc)
        return rc;
    char sz[32], mt[32], sl[16], el[16], imp[16];
    snprintf(sz, sizeof sz, "%lld", (long long)size);
    snprintf(mt, sizeof mt, "%lld", (long long)mtime_ns);
    snprintf(sl, sizeof sl, "%d", c->start_line);
    snprintf(el, sizeof el, "%d", c->end_line);
    snprintf(imp, sizeof imp, "%d", c->importance);
    buf text, trig;
    buf_init(&text, 0);
    buf_init(&trig, 0);
    buf_append(&text, chunk_text(l, c), c->text_len);
    buf_append(&trig, l->text.data + c->trig_off, c->trig_len);
    const char *p[15] = {s->tenant,   path,       s->lc.data, s->name.data,
                         s->stem.data, s->tsv.data ? s->tsv.data : "",
                         sz,          mt,         it->hash,   it->mime,
                         sl,          el,         c->hash,    imp,
                         trig.data ? trig.data : ""};
    const char *pt[16];
    memcpy(pt, p, sizeof p);
    pt[15] = text.data ? text.data : "";
    pg_rows *r = NULL;
    if (buf_err(&text) || buf_err(&trig))
        rc = core_error(s->m, MNEMO_NOMEM, "out of memory");
    else
        rc = pgstore_q(s->m, "writing a media file",
               "WITH f AS (INSERT INTO mnemo_files(tenant, path, path_lc, name_lc, stem_lc, "
               "path_tsv, source, size, mtime_ns, hash, status, reason, nchunks, time, mime) "
               "VALUES ($1, $2, $3, $4, $5, $6::tsvector, 'memory', $7::bigint, $8::bigint, $9, "
               "0, NULL, 1, 0, $10) ON CONFLICT (tenant, path) DO UPDATE SET size = "
               "excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash, status = 0, "
               "reason = NULL, nchunks = 1, time = 0, source = excluded.source, mime = "
               "excluded.mime, indexed_at = now() RETURNING id), "
               "d AS (DELETE FROM mnemo_chunks c WHERE c.tenant = $1 AND "
               "c.file_id = ANY(ARRAY(SELECT id FROM f)) RETURNING c.id, c.ntok), " PGNPOST_DEAD
               ", i AS (INSERT INTO mnemo_chunks(tenant, id, file_id, seq, start_line, end_line, "
               "hash, importance, triggers, line_map, source, text, ntok, tsv) SELECT $1, "
               "nextval('mnemo_media_chunk_ids'), f.id, 0, $11::int, $12::int, $13, $14::int, "
               "$15, NULL, 'memory', $16, 0, ''::tsvector FROM f) "
               "SELECT (SELECT count(*) FROM d), (SELECT coalesce(sum(ntok), 0) FROM d), NULL",
               16, pt, &r);
    buf_cleanup(&text);
    buf_cleanup(&trig);
    if (!rc) {
        removed_from(s, r, removed);
        s->d_chunks++;
        *added = 1;
    }
    pg_rows_free(r);
    return rc ? rc : written(s, 1);
}

/* A run of IT's chunks into the batch's writes, as file K's. */
static int run_add(psync *s, const prep_item *it, int32_t k, int sessions, long long *tokens)
{
    pwrites *w = s->pw;
    const chunk_list *l = &it->chunks;
    if (w->chunks + l->n > w->cap) {
        size_t nc = (w->chunks + l->n) * 2 + 64;
        int *nt = realloc(w->ntok, nc * sizeof *nt);
        if (nt)
            w->ntok = nt;
        unsigned char *ns = realloc(w->sessions, nc);
        if (ns)
            w->sessions = ns;
        if (!nt || !ns)
            return core_error(s->m, MNEMO_NOMEM, "out of memory");
        w->cap = nc;
    }
    for (size_t i = 0; i < l->n; i++) {
        const chunk *c = &l->items[i];
        int ntok = 0;
        int rc = pgstore_tsvector_bin(it->toks.data + it->tok_off[i],
                                      it->tok_off[i + 1] - it->tok_off[i], &s->tsv, &ntok);
        if (rc)
            return core_error(s->m, rc, "out of memory");
        *tokens += ntok;
        w->ntok[w->chunks] = ntok;
        w->sessions[w->chunks] = (unsigned char)(sessions != 0);
        w->chunks++;
        pgtext_barr_int4(&w->c[C_K], k);
        pgtext_barr_int4(&w->c[C_SEQ], (int32_t)(it->first + i));
        pgtext_barr_int4(&w->c[C_SL], c->start_line);
        pgtext_barr_int4(&w->c[C_EL], c->end_line);
        pgtext_barr_bytes(&w->c[C_HASH], c->hash, strlen(c->hash));
        pgtext_barr_int4(&w->c[C_IMP], c->importance);
        pgtext_barr_bytes(&w->c[C_TRIG], l->text.data + c->trig_off, c->trig_len);
        /* The line map's bytes as they are in memory (read back the same way). */
        if (sessions && it->map_off)
            pgtext_barr_bytes(&w->c[C_MAP],
                              (const uint32_t *)(const void *)it->maps.data + it->map_off[i],
                              (it->map_off[i + 1] - it->map_off[i]) * sizeof(uint32_t));
        else
            pgtext_barr_bytes(&w->c[C_MAP], "", 0);
        pgtext_barr_bytes(&w->c[C_TEXT], chunk_text(l, c), c->text_len);
        pgtext_barr_int4(&w->c[C_NTOK], ntok);
        pgtext_barr_bytes(&w->c[C_TSV], s->tsv.data ? s->tsv.data : "", s->tsv.len);
    }
    return pw_err(w) ? core_error(s->m, MNEMO_NOMEM, "out of memory") : MNEMO_OK;
}

/* The row of file PATH into the batch's writes, with TOTAL chunks so far.
 * APPEND: its chunks before these were sent already (its old ones went
 * then). Not FINAL: more runs follow, and until they land the row holds
 * no hash and size -1, so that a sync cut short reads the file again. */
static int row_add(psync *s, const char *path, int64_t size, int64_t mtime_ns,
                   const prep_item *it, int sessions, size_t total, int append, int final)
{
    pwrites *w = s->pw;
    /* The path's words (s->tsv held the chunks'). */
    const char *words = strncmp(path, "memory/", 7) == 0 ? path + 7 : path;
    int rc = pgstore_tsvector_text(s->dt, words, &s->tmp);
    if (rc)
        return core_error(s->m, rc, "out of memory");
    char num[32];
    pgstore_arr_add(&w->f[F_PATH], path, strlen(path));
    pgstore_arr_add(&w->f[F_LC], s->lc.data, s->lc.len);
    pgstore_arr_add(&w->f[F_NAME], s->name.data, s->name.len);
    pgstore_arr_add(&w->f[F_STEM], s->stem.data, s->stem.len);
    pgstore_arr_add(&w->f[F_PTSV], s->tmp.data ? s->tmp.data : "", s->tmp.len);
    pgstore_arr_add(&w->f[F_SRC], sessions ? "sessions" : "memory", sessions ? 8 : 6);
    pgstore_arr_int(&w->f[F_SIZE], final ? (long long)size : -1);
    pgstore_arr_int(&w->f[F_MT], (long long)mtime_ns);
    pgstore_arr_add(&w->f[F_HASH], final ? it->hash : "", final ? strlen(it->hash) : 0);
    pgstore_arr_int(&w->f[F_NC], (long long)total);
    snprintf(num, sizeof num, "%.17g", sessions ? it->time : 0.0);
    pgstore_arr_add(&w->f[F_TM], num, strlen(num));
    pgstore_arr_add(&w->f[F_APP], append ? "t" : "f", 1);
    return pw_err(w) ? core_error(s->m, MNEMO_NOMEM, "out of memory") : MNEMO_OK;
}

static int ps_write(void *ud, const sync_file *known, const char *path, int64_t size,
                    int64_t mtime_ns, prep_item *it, int sessions, int64_t *removed,
                    size_t *added)
{
    psync *s = ud;
    (void)known;
    *removed = 0; /* counted when the batch is written */
    if (it->mime[0])
        return media_write(s, path, size, mtime_ns, it, removed, added);
    begin(s);
    int rc = path_forms(s, path);
    if (rc)
        return core_error(s->m, rc, "out of memory");
    /* A run at a time. A file read whole is one run, and its row and
     * chunks one entry of the batch; a large note's runs each go in a
     * statement of their own as they are read (one statement cannot hold
     * a file twice), the first replacing its old chunks. */
    int32_t k = (int32_t)++s->pw->files;
    long long tokens = 0;
    size_t total = 0, sent = 0; /* chunks of this file, and of them those sent */
    int runs = 0, more;
    while (!(rc = prep_item_next(it, &more)) && more) {
        if (runs++) {
            if ((rc = row_add(s, path, size, mtime_ns, it, sessions, total, sent > 0, 0)))
                return rc;
            s->pw->tokens += tokens;
            int n = (int)(total - sent);
            sent = total;
            if ((rc = written(s, n)) || (rc = commit(s)))
                return rc;
            begin(s);
            k = (int32_t)++s->pw->files;
            tokens = 0;
        }
        if ((rc = run_add(s, it, k, sessions, &tokens)))
            return rc;
        total = it->first + it->chunks.n;
    }
    if (rc)
        return core_error(s->m, rc, "reading %s again: %s", path,
                          it->reason[0] ? it->reason : errcode_text(rc));
    if ((rc = row_add(s, path, size, mtime_ns, it, sessions, total, sent > 0, 1)))
        return rc;
    *added = total;
    s->pw->tokens += tokens;
    return written(s, (int)(total - sent));
}

/* The batch's file writes as one statement, sent (settle takes its
 * answer): the files' rows, their old chunks out (counted out of the
 * statistics, recorded dead for the index), their new chunks in, the
 * corpus counts moved. The writes are kept until their answer brings the
 * new chunks' ids for the postings. */
static int writes_send(psync *s)
{
    pwrites *w = s->pw;
    if (!w->files)
        return MNEMO_OK;
    for (int i = 0; i < F_N; i++)
        buf_putc(&w->f[i], '}');
    for (int i = 0; i < C_N; i++)
        pgtext_barr_end(&w->c[i]);
    if (pw_err(w))
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    char nc[32], nt[32];
    snprintf(nc, sizeof nc, "%zu", w->chunks);
    snprintf(nt, sizeof nt, "%lld", w->tokens);
    enum { NP = 3 + F_N + C_N };
    const char *p[NP];
    int lens[NP], fmt[NP];
    memset(lens, 0, sizeof lens);
    memset(fmt, 0, sizeof fmt);
    p[0] = s->tenant;
    for (int i = 0; i < F_N; i++)
        p[1 + i] = w->f[i].data;
    for (int i = 0; i < C_N; i++) {
        p[1 + F_N + i] = w->c[i].b.data;
        lens[1 + F_N + i] = (int)w->c[i].b.len;
        fmt[1 + F_N + i] = 1;
    }
    p[1 + F_N + C_N] = nc;
    p[2 + F_N + C_N] = nt;
    int rc = pgstore_send(s->m, "writing chunks",
           "WITH x AS (SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], "
           "$6::tsvector[], $7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::int[], "
           "$12::float8[], $13::bool[]) WITH ORDINALITY AS x(path, lc, name, stem, ptsv, src, "
           "size, mt, hash, nc, tm, app, k)), "
           "f AS (INSERT INTO mnemo_files(tenant, path, path_lc, name_lc, stem_lc, path_tsv, "
           "source, size, mtime_ns, hash, status, reason, nchunks, time) SELECT $1, x.path, x.lc, "
           "x.name, x.stem, x.ptsv, x.src, x.size, x.mt, x.hash, 0, NULL, x.nc, x.tm FROM x "
           "ORDER BY x.k ON CONFLICT (tenant, path) DO UPDATE SET size = excluded.size, "
           "mtime_ns = excluded.mtime_ns, hash = excluded.hash, status = 0, reason = NULL, "
           "nchunks = excluded.nchunks, time = excluded.time, source = excluded.source, "
           "mime = NULL, indexed_at = now() RETURNING id, path), "
           "d AS (DELETE FROM mnemo_chunks c WHERE c.tenant = $1 AND "
           "c.file_id = ANY(ARRAY(SELECT f.id FROM f JOIN x ON x.path = f.path WHERE NOT x.app)) "
           "RETURNING c.id, c.ntok), " PGNPOST_DEAD ", "
           "y AS (SELECT * FROM unnest($14::int[], $15::int[], $16::int[], $17::int[], "
           "$18::text[], $19::int[], $20::text[], $21::bytea[], $22::text[], $23::int[], "
           "$24::tsvector[]) WITH ORDINALITY AS y(k, seq, sl, el, hash, imp, trig, map, txt, "
           "ntok, tsv, o)), "
           "i AS (INSERT INTO mnemo_chunks(tenant, file_id, seq, start_line, end_line, hash, "
           "importance, triggers, line_map, source, text, ntok, tsv) SELECT $1, f.id, y.seq, "
           "y.sl, y.el, y.hash, y.imp, y.trig, NULLIF(y.map, ''::bytea), x.src, y.txt, y.ntok, "
           "y.tsv FROM y JOIN x ON x.k = y.k JOIN f ON f.path = x.path ORDER BY y.o "
           "RETURNING id, file_id, seq), "
           "u AS (UPDATE mnemo_corpus SET nchunks = nchunks + $25::bigint - (SELECT count(*) "
           "FROM d), ntokens = ntokens + $26::bigint - (SELECT coalesce(sum(ntok), 0) FROM d) "
           "WHERE tenant = $1) "
           "SELECT (SELECT count(*) FROM d), (SELECT coalesce(sum(ntok), 0) FROM d), "
           "NULL, (SELECT count(*) FROM i), (SELECT array_agg(i.id ORDER BY x.k, "
           "i.seq) FROM i JOIN f ON f.id = i.file_id JOIN x ON x.path = f.path)",
           NP, p, lens, fmt);
    if (rc)
        return rc;
    /* These writes wait for their answer; the next batch fills the other. */
    s->sent = w;
    s->pw = s->spare;
    s->spare = w;
    pw_start(s->pw);
    return MNEMO_OK;
}

/* The answer to the writes on their way, if any: the files' old chunks
 * counted, the new chunks' postings added (in the order of their ids). */
static int settle(psync *s)
{
    pwrites *w = s->sent;
    if (!w)
        return MNEMO_OK;
    s->sent = NULL;
    pg_rows *r = NULL;
    int rc = pgstore_collect(s->m, "writing chunks", &r);
    if (!rc) {
        s->stats->chunks_removed += (size_t)pgstore_ll(r, 0, 0);
        if ((size_t)pgstore_ll(r, 0, 3) != w->chunks)
            rc = core_error(s->m, MNEMO_DB, "writing chunks: %lld of %zu stored",
                            pgstore_ll(r, 0, 3), w->chunks);
        /* The tsvectors are the elements of the last array, in order. */
        const unsigned char *t = (const unsigned char *)w->c[C_TSV].b.data + 20,
                            *end = (const unsigned char *)w->c[C_TSV].b.data + w->c[C_TSV].b.len;
        long long one;
        const char *ids = pg_isnull(r, 0, 4) ? "{}" : pg_value(r, 0, 4);
        for (size_t i = 0; !rc && i < w->chunks && *++ids && sscanf(ids, "%lld", &one) == 1;
             i++) {
            if (end - t < 4) {
                rc = core_error(s->m, MNEMO_INVALID, "writing chunks: a tsvector missing");
                break;
            }
            size_t n = (size_t)t[0] << 24 | (size_t)t[1] << 16 | (size_t)t[2] << 8 | t[3];
            t += 4;
            if ((size_t)(end - t) < n) {
                rc = core_error(s->m, MNEMO_INVALID, "writing chunks: a tsvector cut short");
                break;
            }
            rc = pgnpost_add_bin(s->post, one, w->sessions[i] ? "sessions" : "memory",
                                 w->ntok[i], t, n);
            t += n;
            while (*ids && *ids != ',' && *ids != '}')
                ids++;
        }
    }
    pg_rows_free(r);
    return rc;
}

static int ps_remove(void *ud, const sync_file *f)
{
    psync *s = ud;
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)f->id);
    const char *p[2] = {s->tenant, id};
    pg_rows *r = NULL;
    int rc = stmt(s);
    if (!rc)
        rc = pgstore_q(s->m, "removing a file",
               "WITH d AS (DELETE FROM mnemo_chunks WHERE tenant = $1 AND file_id = $2::bigint "
               "RETURNING id, ntok), f AS (DELETE FROM mnemo_files WHERE tenant = $1 AND "
               "id = $2::bigint), " PGNPOST_DEAD
               "SELECT (SELECT count(*) FROM d), (SELECT coalesce(sum(ntok), 0) FROM d), "
               "NULL",
               2, p, &r);
    if (!rc)
        removed_from(s, r, NULL);
    pg_rows_free(r);
    return rc ? rc : written(s, 0);
}

/* Images and audio are found by their vectors alone: without pgvector
 * they are skipped, saying so (pg_begin). */
static const sync_sink pg_sink = {
    ps_load,   ps_skip, ps_touch, ps_rename, ps_write, ps_remove, 0,
    "this PostgreSQL server has no pgvector, and images and audio are found by their vectors"};

/* The vector table's name for the embedder, created if needed. */
static int vec_table_for(mnemo *m, embedder *e, char *name, size_t size, int *deferred)
{
    int dims = embed_dims(e);
    if (dims <= 0) {
        /* Learn the dimensions from one embedding. */
        const char *probe = "dimensions";
        size_t len = strlen(probe);
        float *v = NULL;
        buf err;
        buf_init(&err, 4096);
        int rc = embed_texts(e, EMBED_DOCUMENT, &probe, &len, 1, &v, &err);
        free(v);
        if (rc) {
            core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
            buf_cleanup(&err);
            return rc;
        }
        buf_cleanup(&err);
        dims = embed_dims(e);
    }
    return pgschema_vec_table(m, "chunk", dims, name, size, deferred);
}

/* Stores the vectors OUT[i] (DIMS each) of part PARTS[i] of chunk IDS[i],
 * I < N, in TABLE under IDENT, in one transaction: a chunk's rows of
 * another setup go with the new ones in. */
static int put_vectors(mnemo *m, const char *table, const char *tenant, const char *ident,
                       const long long *cids, const int *parts_of, const float *out, size_t n,
                       int dims)
{
    buf ids, vecs, parts, tmp;
    buf_init(&ids, 0);
    buf_init(&vecs, 0);
    buf_init(&parts, 0);
    buf_init(&tmp, 0);
    buf_putc(&ids, '{');
    buf_putc(&vecs, '{');
    buf_putc(&parts, '{');
    for (size_t i = 0; i < n; i++) {
        pgstore_arr_int(&ids, cids[i]);
        pgstore_arr_int(&parts, parts_of[i]);
        buf_reset(&tmp);
        pgtext_vector_literal(&tmp, out + i * (size_t)dims, dims);
        pgstore_arr_add(&vecs, tmp.data, tmp.len);
    }
    buf_putc(&ids, '}');
    buf_putc(&vecs, '}');
    buf_putc(&parts, '}');
    char del[512], sql[1024];
    snprintf(del, sizeof del, "DELETE FROM %s WHERE tenant = $1 AND chunk_id = ANY ($2::bigint[])",
             table);
    snprintf(sql, sizeof sql,
             "INSERT INTO %s(tenant, chunk_id, part, model, embedding) SELECT $1, x.id, "
             "x.part, $2, x.e FROM unnest($3::bigint[], $5::smallint[], $4::vector[]) "
             "AS x(id, part, e) ON CONFLICT (tenant, chunk_id, part) DO UPDATE SET "
             "model = excluded.model, embedding = excluded.embedding",
             table);
    const char *p1[2] = {tenant, ids.data};
    const char *p2[5] = {tenant, ident, ids.data, vecs.data, parts.data};
    int rc;
    if (buf_err(&ids) || buf_err(&vecs) || buf_err(&parts) || buf_err(&tmp))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    else if (!(rc = pgstore_q(m, "storing vectors", "BEGIN", 0, NULL, NULL))) {
        rc = pgstore_q(m, "storing vectors", del, 2, p1, NULL);
        if (!rc)
            rc = pgstore_q(m, "storing vectors", sql, 5, p2, NULL);
        if (!rc)
            rc = pgstore_q(m, "storing vectors", "COMMIT", 0, NULL, NULL);
        if (rc)
            pgstore_q(m, "storing vectors", "ROLLBACK", 0, NULL, NULL);
    }
    buf_cleanup(&ids);
    buf_cleanup(&vecs);
    buf_cleanup(&parts);
    buf_cleanup(&tmp);
    return rc;
}

/* Embeds the images and audio without a vector of IDENT (their chunks,
 * from PGSTORE_MEDIA_ID_BASE up), MEDIA_BATCH at a time: each label with
 * its file's bytes, read again from disk and checked against the hash the
 * sync stored; a file changed or gone since is left for the next sync. */
static int embed_media_missing(mnemo *m, const char *tenant, embedder *e, const char *ident,
                               const char *table, mnemo_sync_stats *stats)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT c.id, c.text, f.path, f.hash, f.mime FROM mnemo_chunks c JOIN mnemo_files "
             "f ON f.tenant = c.tenant AND f.id = c.file_id WHERE c.tenant = $1 AND c.id > "
             "$3::bigint AND c.id >= " PGSTORE_MEDIA_IDS " AND NOT EXISTS (SELECT 1 FROM %s v "
             "WHERE v.tenant = c.tenant AND v.chunk_id = c.id AND v.model = $2) ORDER BY c.id "
             "LIMIT %d",
             table, MEDIA_BATCH);
    cfg_media mm;
    cfg_multimodal(m->cfg, &mm);
    int dims = embed_dims(e), rc = MNEMO_OK;
    long long after = 0;
    buf err;
    buf_init(&err, 8192);
    while (!rc) {
        char from[32];
        snprintf(from, sizeof from, "%lld", after);
        const char *p[3] = {tenant, ident, from};
        pg_rows *r = NULL;
        if ((rc = pgstore_q(m, "embedding", sql, 3, p, &r)))
            break;
        size_t n = pg_nrows(r), k = 0;
        if (n == 0) {
            pg_rows_free(r);
            break;
        }
        after = pgstore_ll(r, n - 1, 0);
        const char *texts[MEDIA_BATCH];
        size_t lens[MEDIA_BATCH];
        embed_media media[MEDIA_BATCH];
        long long cids[MEDIA_BATCH];
        int zero[MEDIA_BATCH] = {0};
        buf data[MEDIA_BATCH];
        for (size_t i = 0; !rc && i < n && i < MEDIA_BATCH; i++) {
            if (pg_isnull(r, i, 4))
                continue;
            int mrc = walk_media_read(m->workspace, pg_value(r, i, 2), mm.max_bytes,
                                      pg_value(r, i, 3), &data[k]);
            if (mrc) {
                buf_cleanup(&data[k]);
                if (mrc == MNEMO_NOMEM)
                    rc = core_error(m, mrc, "out of memory");
                continue; /* changed or gone since the sync read it: the next one */
            }
            texts[k] = pg_value(r, i, 1);
            lens[k] = strlen(texts[k]);
            media[k] = (embed_media){pg_value(r, i, 4), data[k].data, data[k].len};
            cids[k++] = pgstore_ll(r, i, 0);
        }
        float *out = NULL;
        if (!rc && k) {
            buf_reset(&err);
            rc = embed_media_docs(e, texts, lens, media, k, &out, &err);
            if (rc)
                core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
        }
        if (!rc && k)
            rc = put_vectors(m, table, tenant, ident, cids, zero, out, k, dims);
        if (!rc)
            stats->chunks_embedded += k;
        free(out);
        for (size_t i = 0; i < k; i++)
            buf_cleanup(&data[i]);
        pg_rows_free(r);
    }
    buf_cleanup(&err);
    return rc;
}

/* Embeds the chunks without a vector of the current identity. */
static int embed_missing(mnemo *m, const char *tenant, embedder *e, const char *ident,
                         mnemo_sync_stats *stats)
{
    char table[64], sql[1024];
    int deferred = 0;
    int rc = vec_table_for(m, e, table, sizeof table, &deferred);
    if (rc)
        return rc;
    int dims = embed_dims(e), vc = (int)cfg_int(m->cfg, CFG_VECTOR_CHARS);
    buf err;
    buf_init(&err, 8192);
    long long after = 0;
    for (;;) {
        char from[32];
        snprintf(from, sizeof from, "%lld", after);
        snprintf(sql, sizeof sql,
                 "SELECT c.id, c.text FROM mnemo_chunks c WHERE c.tenant = $1 AND c.id > "
                 "$3::bigint AND c.id < " PGSTORE_MEDIA_IDS " AND NOT EXISTS (SELECT 1 FROM %s "
                 "v WHERE v.tenant = c.tenant AND v.chunk_id = c.id AND v.model = $2) ORDER BY "
                 "c.id LIMIT %d",
                 table, EMBED_ROWS);
        const char *p[3] = {tenant, ident, from};
        pg_rows *r = NULL;
        if ((rc = pgstore_q(m, "embedding", sql, 3, p, &r)))
            break;
        size_t n = pg_nrows(r);
        if (n == 0) {
            pg_rows_free(r);
            break;
        }
        /* Each chunk as its parts (chunk_parts), a row each. */
        size_t cap = n * 4 + 16, np = 0;
        const char **texts = malloc(cap * sizeof *texts);
        size_t *lens = malloc(cap * sizeof *lens);
        size_t *of = malloc(cap * sizeof *of); /* the chunk of each part */
        int *num = malloc(cap * sizeof *num);  /* its number in the chunk */
        float *out = NULL;
        if (!texts || !lens || !of || !num)
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n; i++) {
            const char *t = pg_value(r, i, 1);
            size_t tl = strlen(t);
            chunk_part cp[CHUNK_MAX_PARTS];
            int k = chunk_parts(t, tl, vc, cp);
            if (k == 0) { /* blank: the whole text, as before parts */
                cp[0] = (chunk_part){0, 0, 0, tl};
                k = 1;
            }
            if (np + (size_t)k > cap) {
                cap = (np + (size_t)k) * 2;
                const char **nt = realloc(texts, cap * sizeof *nt);
                if (nt)
                    texts = nt;
                size_t *nl = realloc(lens, cap * sizeof *nl);
                if (nl)
                    lens = nl;
                size_t *no = realloc(of, cap * sizeof *no);
                if (no)
                    of = no;
                int *nn = realloc(num, cap * sizeof *nn);
                if (nn)
                    num = nn;
                if (!nt || !nl || !no || !nn) {
                    rc = core_error(m, MNEMO_NOMEM, "out of memory");
                    break;
                }
            }
            for (int j = 0; j < k; j++, np++) {
                texts[np] = t + cp[j].off;
                lens[np] = cp[j].len;
                of[np] = i;
                num[np] = j;
            }
        }
        if (!rc) {
            buf_reset(&err);
            rc = embed_texts(e, EMBED_DOCUMENT, texts, lens, np, &out, &err);
            if (rc)
                core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
        }
        if (!rc) {
            long long *cids = malloc((np ? np : 1) * sizeof *cids);
            if (!cids)
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
            for (size_t i = 0; !rc && i < np; i++)
                cids[i] = pgstore_ll(r, of[i], 0);
            if (!rc)
                rc = put_vectors(m, table, tenant, ident, cids, num, out, np, dims);
            free(cids);
            after = pgstore_ll(r, n - 1, 0);
            if (!rc)
                stats->chunks_embedded += np;
        }
        free(out);
        free(texts);
        free(lens);
        free(of);
        free(num);
        pg_rows_free(r);
        if (rc)
            break;
    }
    if (!rc)
        rc = embed_media_missing(m, tenant, e, ident, table, stats);
    if (!rc) {
        /* Vectors of chunks that are gone. */
        snprintf(sql, sizeof sql,
                 "DELETE FROM %s v WHERE v.tenant = $1 AND NOT EXISTS (SELECT 1 FROM "
                 "mnemo_chunks c WHERE c.tenant = v.tenant AND c.id = v.chunk_id)",
                 table);
        const char *p[1] = {tenant};
        rc = pgstore_q(m, "removing old vectors", sql, 1, p, NULL);
    }
    if (!rc) {
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM %s WHERE tenant = $1 AND model = $2 AND part = 0", table);
        const char *p[2] = {tenant, ident};
        pg_rows *r = NULL;
        if (!pgstore_q(m, "counting vectors", sql, 2, p, &r))
            stats->vectors_total = (size_t)pgstore_ll(r, 0, 0);
        pg_rows_free(r);
    }
    /* The first load of the table: its index now, over what was stored
     * (also after a failure, so that searches find those by the index). */
    if (deferred) {
        buf keep;
        buf_init(&keep, 0);
        buf_puts(&keep, rc && m->err.data ? m->err.data : "");
        int rc2 = pgschema_vec_index(m, table);
        if (rc)
            core_error(m, rc, "%s", keep.data ? keep.data : "embedding failed");
        else
            rc = rc2;
        buf_cleanup(&keep);
    }
    buf_cleanup(&err);
    return rc;
}

/* The fixed texts' vectors (engine/calib.h) for E's setup, embedded when
 * the tenant has none for it: once (rows of another setup go then). Only
 * distinct ones that are not zero are kept (calib_distinct). */
static int calib_store(mnemo *m, const char *tenant, embedder *e)
{
    char table[64], ident[1200], sql[512];
    int dims = embed_dims(e);
    int rc = pgschema_vec_table(m, "calib", dims, table, sizeof table, NULL);
    if (rc)
        return rc;
    provider_calib_identity(m, e, ident, sizeof ident);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE tenant = $1 AND identity = $2",
             table);
    const char *p[4] = {tenant, ident, NULL, NULL};
    pg_rows *r = NULL;
    if ((rc = pgstore_q(m, "calibration vectors", sql, 2, p, &r)))
        return rc;
    long long have = pgstore_ll(r, 0, 0);
    pg_rows_free(r);
    if (have > 0)
        return MNEMO_OK;
    size_t lens[CALIB_NTEXTS];
    for (size_t i = 0; i < CALIB_NTEXTS; i++)
        lens[i] = strlen(calib_texts[i]);
    float *v = NULL;
    buf err, is, vecs, tmp;
    buf_init(&err, 4096);
    buf_init(&is, 0);
    buf_init(&vecs, 0);
    buf_init(&tmp, 0);
    rc = embed_texts(e, EMBED_DOCUMENT, (const char **)calib_texts, lens, CALIB_NTEXTS, &v, &err);
    if (rc)
        core_error(m, rc, "cannot embed the calibration texts: %s",
                   err.len ? err.data : errcode_text(rc));
    size_t k = rc ? 0 : calib_distinct(v, CALIB_NTEXTS, dims);
    buf_putc(&is, '{');
    buf_putc(&vecs, '{');
    for (size_t i = 0; i < k; i++) {
        pgstore_arr_int(&is, (long long)i);
        buf_reset(&tmp);
        pgtext_vector_literal(&tmp, v + i * (size_t)dims, dims);
        pgstore_arr_add(&vecs, tmp.data, tmp.len);
    }
    buf_putc(&is, '}');
    buf_putc(&vecs, '}');
    if (!rc && (buf_err(&is) || buf_err(&vecs) || buf_err(&tmp)))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    if (!rc && k && !(rc = pgstore_q(m, "calibration vectors", "BEGIN", 0, NULL, NULL))) {
        p[2] = is.data;
        p[3] = vecs.data;
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE tenant = $1", table);
        rc = pgstore_q(m, "calibration vectors", sql, 1, p, NULL);
        snprintf(sql, sizeof sql,
                 "INSERT INTO %s(tenant, identity, i, embedding) SELECT $1, $2, x.i, x.e FROM "
                 "unnest($3::int[], $4::vector[]) AS x(i, e)",
                 table);
        if (!rc)
            rc = pgstore_q(m, "calibration vectors", sql, 4, p, NULL);
        if (!rc)
            rc = pgstore_q(m, "calibration vectors", "COMMIT", 0, NULL, NULL);
        if (rc)
            pgstore_q(m, "calibration vectors", "ROLLBACK", 0, NULL, NULL);
    }
    free(v);
    buf_cleanup(&err);
    buf_cleanup(&is);
    buf_cleanup(&vecs);
    buf_cleanup(&tmp);
    return rc;
}

/* The settings of the chunks: the corpus row's columns. */
static void settings_params(mnemo *m, char *ct, char *co, size_t n, const char **lang)
{
    snprintf(ct, n, "%lld", (long long)cfg_int(m->cfg, CFG_CHUNK_TOKENS));
    snprintf(co, n, "%lld", (long long)cfg_int(m->cfg, CFG_CHUNK_OVERLAP));
    *lang = cfg_str(m->cfg, CFG_LANGUAGE);
}

/* Why the rows of generation KEY must be rebuilt (settings changed,
 * --force), or NULL; *FRESH when it holds nothing yet (its corpus row is
 * created then). */
static int check_settings(mnemo *m, const char *key, int force, const char **why, int *fresh)
{
    char ct[32], co[32];
    const char *lang;
    settings_params(m, ct, co, sizeof ct, &lang);
    const char *p[5] = {key, lang, ct, co, PREP_INDEX_RULES};
    pg_rows *r = NULL;
    int rc = pgstore_q(m, "reading the corpus",
               "SELECT language, chunk_tokens, chunk_overlap, index_rules, (SELECT count(*) FROM "
               "mnemo_files WHERE tenant = $1) FROM mnemo_corpus WHERE tenant = $1",
               1, p, &r);
    if (rc)
        return rc;
    *why = force ? "--force" : NULL;
    *fresh = pg_nrows(r) == 0 || pgstore_ll(r, 0, 4) == 0;
    if (pg_nrows(r) == 0) {
        *why = NULL; /* nothing stored yet */
    } else if (!*why) {
        if (strcmp(pg_value(r, 0, 0), lang) != 0)
            *why = "the stemmer language changed";
        else if (strcmp(pg_value(r, 0, 1), ct) != 0)
            *why = "the chunk size changed";
        else if (strcmp(pg_value(r, 0, 2), co) != 0)
            *why = "the chunk overlap changed";
        else if (strcmp(pg_value(r, 0, 3), PREP_INDEX_RULES) != 0)
            *why = "it was built by a mnemo with other indexing rules";
    }
    int exists = pg_nrows(r) == 1;
    pg_rows_free(r);
    if (*fresh && *why) {
        /* Nothing to keep: the empty generation takes the new settings. */
        rc = pgstore_q(m, "rebuilding",
               "UPDATE mnemo_corpus SET nchunks = 0, ntokens = 0, language = $2, "
               "chunk_tokens = $3::int, chunk_overlap = $4::int, index_rules = $5 "
               "WHERE tenant = $1",
               5, p, NULL);
        if (!rc)
            rc = pgnpost_reset(m, key);
        return rc;
    }
    if (!exists)
        rc = pgstore_q(m, "creating the corpus",
               "INSERT INTO mnemo_corpus(tenant, language, chunk_tokens, chunk_overlap, "
               "index_rules) VALUES ($1, $2, $3::int, $4::int, $5) ON CONFLICT (tenant) DO "
               "NOTHING",
               5, p, NULL);
    return rc;
}

/* Removes the rows of generation KEY: files, chunks, statistics, index and
 * vectors. */
static int drop_generation(mnemo *m, const char *key)
{
    static const char *const sql[] = {
        "DELETE FROM mnemo_chunks WHERE tenant = $1", "DELETE FROM mnemo_files WHERE tenant = $1",
        "DELETE FROM mnemo_postings WHERE tenant = $1",
        "DELETE FROM mnemo_post_dead WHERE tenant = $1",
        "DELETE FROM mnemo_post_state WHERE tenant = $1",
        "DELETE FROM mnemo_corpus WHERE tenant = $1", NULL};
    const char *p[1] = {key};
    int rc = pgstore_q(m, "removing an old index", "BEGIN", 0, NULL, NULL);
    for (int i = 0; !rc && sql[i]; i++)
        rc = pgstore_q(m, "removing an old index", sql[i], 1, p, NULL);
    /* The vector tables of every dimension count. */
    pg_rows *r = NULL;
    if (!rc)
        rc = pgstore_q(m, "removing an old index",
               "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND "
               "tablename ~ '^mnemo_chunk_vec_[0-9]+$'",
               0, NULL, &r);
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        char q[128];
        snprintf(q, sizeof q, "DELETE FROM %s WHERE tenant = $1", pg_value(r, i, 0));
        rc = pgstore_q(m, "removing an old index", q, 1, p, NULL);
    }
    pg_rows_free(r);
    if (!rc)
        return pgstore_q(m, "removing an old index", "COMMIT", 0, NULL, NULL);
    pgstore_q(m, "removing an old index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

/* The generation this sync writes (*KEY, owned by the caller) and whether
 * it is a new one that replaces the live one at the end (*BUILD). Removes
 * the generation the last rebuild replaced, and a rebuild that did not
 * finish, first. */
static int choose_generation(mnemo *m, const char *tenant, int force, char **key, int *build,
                             const char **why)
{
    *key = NULL;
    *build = 0;
    const char *p[3] = {tenant, NULL, NULL};
    pg_rows *r = NULL;
    int rc = pgstore_q(m, "reading the index",
               "SELECT live, building, previous FROM mnemo_live WHERE tenant = $1", 1, p, &r);
    if (rc)
        return rc;
    char *live = strdup(pg_nrows(r) ? pg_value(r, 0, 0) : tenant);
    for (int col = 1; !rc && live && pg_nrows(r) && col <= 2; col++)
        if (!pg_isnull(r, 0, col) && strcmp(pg_value(r, 0, col), live) != 0)
            rc = drop_generation(m, pg_value(r, 0, col));
    int had = pg_nrows(r) > 0;
    pg_rows_free(r);
    if (!live)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    if (!rc && had)
        rc = pgstore_q(m, "reading the index",
               "UPDATE mnemo_live SET building = NULL, previous = NULL WHERE tenant = $1", 1, p,
               NULL);
    int fresh = 0;
    if (!rc)
        rc = check_settings(m, live, force, why, &fresh);
    if (rc || !*why || fresh) {
        *key = live;
        return rc;
    }
    /* A new generation beside the live one, under its own key. */
    size_t n = strlen(tenant) + 40;
    char *next = malloc(n);
    if (!next) {
        free(live);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    snprintf(next, n, "%s#gen%.0f", tenant, time_wall() * 1000.0);
    p[1] = live;
    p[2] = next;
    rc = pgstore_q(m, "rebuilding",
           "INSERT INTO mnemo_live(tenant, live, building) VALUES ($1, $2, $3) ON CONFLICT "
           "(tenant) DO UPDATE SET building = excluded.building",
           3, p, NULL);
    free(live);
    int f2;
    const char *w2;
    if (!rc)
        rc = check_settings(m, next, 0, &w2, &f2);
    if (rc) {
        free(next);
        return rc;
    }
    *key = next;
    *build = 1;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * The steps of a sync (sync.h)
 * -------------------------------------------------------------------- */

/* Lets go of S: the sync lock, and its state; the handle keeps the error
 * of RC (cleared without one). Returns RC. */
static int release(psync *s, int rc)
{
    mnemo *m = s->m;
    buf keep;
    buf_init(&keep, 0);
    buf_puts(&keep, m->err.data ? m->err.data : "");
    const char *p[1] = {s->logical};
    pgstore_q(m, "sync", "SELECT pg_advisory_unlock(" SYNC_LOCK ", hashtext($1))", 1, p, NULL);
    if (rc)
        core_error(m, rc, "%s", keep.data ? keep.data : "sync failed");
    else
        core_clear(m);
    buf_cleanup(&keep);
    buf_cleanup(&s->tsv);
    buf_cleanup(&s->tmp);
    buf_cleanup(&s->lc);
    buf_cleanup(&s->name);
    buf_cleanup(&s->stem);
    pw_cleanup(&s->pws[0]);
    pw_cleanup(&s->pws[1]);
    free(s->pws);
    pgnpost_free(s->post);
    free(s->key);
    free(s);
    return rc;
}

/* One sync of a tenant at a time (the lock goes with the session if the
 * process dies), into the live generation or a new one beside it
 * (choose_generation). */
static int pg_begin(mnemo *m, const mnemo_sync_opts *opts, int again, mnemo_sync_stats *stats,
                    const sync_sink **sink, void **ud)
{
    (void)again; /* a damaged generation is not detected here */
    const char *logical = pgconn_tenant(m);
    pg_conn *c;
    tok *dt;
    int rc = pgschema_conn(m, &c);
    if (rc)
        return rc;
    if ((rc = pgstore_tokenizers(m, NULL, &dt)))
        return rc;
    const char *p[1] = {logical};
    if ((rc = pgstore_q(m, "waiting for another sync",
                        "SELECT pg_advisory_lock(" SYNC_LOCK ", hashtext($1))", 1, p, NULL)))
        return rc;
    psync *s = calloc(1, sizeof *s);
    pwrites *pws = s ? calloc(2, sizeof *pws) : NULL;
    if (!pws) {
        free(s);
        pgstore_q(m, "sync", "SELECT pg_advisory_unlock(" SYNC_LOCK ", hashtext($1))", 1, p, NULL);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    s->m = m;
    s->logical = logical;
    s->dt = dt;
    buf_init(&s->tsv, 0);
    buf_init(&s->tmp, 0);
    buf_init(&s->lc, 0);
    buf_init(&s->name, 0);
    buf_init(&s->stem, 0);
    s->pws = pws;
    pw_init(&s->pws[0]);
    pw_init(&s->pws[1]);
    s->pw = &s->pws[0];
    s->spare = &s->pws[1];
    s->stats = stats;
    const char *why = NULL;
    if ((rc = choose_generation(m, logical, opts && opts->force, &s->key, &s->build, &why)))
        return release(s, rc);
    s->tenant = s->key;
    if ((rc = pgnpost_open(m, s->tenant, &s->post)))
        return release(s, rc);
    if (why) {
        stats->rebuilt = 1;
        stats->rebuild_reason = why;
    }
    const char *off;
    s->sink = pg_sink;
    s->sink.media = pgschema_vectors(m, &off);
    *sink = &s->sink;
    *ud = s;
    return MNEMO_OK;
}

/* The writes on their way land, the last batch commits with every posting
 * still waiting; then the record, and the counts from the rows themselves
 * (batches a lost connection cut short cannot leave them off). */
static int pg_commit(void *ud, const sync_record *rec)
{
    psync *s = ud;
    mnemo *m = s->m;
    mnemo_sync_stats *stats = s->stats;
    int rc = settle(s);
    s->final = 1;
    if (!rc && (pgnpost_pending(s->post) || stats->chunks_removed))
        begin(s);
    if (!rc)
        rc = commit(s);
    if (rc) {
        rollback(s);
        s->rolled = 1;
        return rc;
    }
    const char *p4[4] = {s->tenant, rec->when, rec->ms, rec->json ? rec->json : "{}"};
    rc = pgstore_q(m, "recording the sync",
                   "UPDATE mnemo_corpus SET last_sync_at = $2, last_sync_ms = $3::float8, "
                   "last_sync = $4 WHERE tenant = $1",
                   4, p4, NULL);
    if (!rc && (stats->files_added || stats->files_changed || stats->files_removed ||
                stats->chunks_removed || stats->rebuilt))
        rc = pgstore_q(
            m, "counting chunks",
            "UPDATE mnemo_corpus SET nchunks = x.n, ntokens = x.t, nmedia = x.m FROM (SELECT "
            "count(*) AS n, coalesce(sum(ntok), 0) AS t, count(*) FILTER (WHERE id >= "
            PGSTORE_MEDIA_IDS ") AS m FROM mnemo_chunks WHERE tenant = $1) x WHERE tenant = $1",
            1, (const char *const[]){s->tenant}, NULL);
    /* Fresh statistics after a large change, so that the planner reads
     * candidates' rows by id rather than scanning a tenant's. */
    if (!rc && stats->chunks_added + stats->chunks_removed >= 1000) {
        rc = pgstore_q(m, "analyzing", "ANALYZE mnemo_chunks", 0, NULL, NULL);
        if (!rc)
            rc = pgstore_q(m, "analyzing", "ANALYZE mnemo_files", 0, NULL, NULL);
    }
    return rc;
}

/* Vectors need pgvector. */
static const char *pg_no_vectors(void *ud)
{
    psync *s = ud;
    const char *why = NULL;
    if (pgschema_vectors(s->m, &why))
        return NULL;
    return why ? why : "vectors are off";
}

/* The chunks without a vector of the embedder's identity, and the fixed
 * texts' vectors (calib.h). */
static int pg_vectors(void *ud, embedder *e, const mnemo_sync_opts *opts,
                      mnemo_sync_stats *stats, buf *err)
{
    (void)opts;
    psync *s = ud;
    mnemo *m = s->m;
    provider_chunk_identity(m, e, s->ident, sizeof s->ident);
    int rc = embed_missing(m, s->tenant, e, s->ident, stats);
    if (!rc)
        rc = calib_store(m, s->tenant, e);
    if (rc) {
        s->ident[0] = 0;
        buf_puts(err, m->err.data ? m->err.data : "");
    }
    return rc;
}

/* The identity of the vectors made, and why there are none, in the
 * corpus row. */
static int pg_vectors_done(void *ud, int ran, int rc, const char *why)
{
    psync *s = ud;
    buf note;
    buf_init(&note, 0);
    if (!ran)
        buf_puts(&note, why ? why : "");
    else if (rc)
        buf_printf(&note, "last embedding failed: %s", why);
    const char *p[3] = {s->tenant, s->ident, note.data ? note.data : ""};
    int rc2 =
        pgstore_q(s->m, "recording vectors",
                  "UPDATE mnemo_corpus SET vec_identity = CASE WHEN $2 = '' THEN vec_identity "
                  "ELSE $2 END, vec_note = $3 WHERE tenant = $1",
                  3, p, NULL);
    buf_cleanup(&note);
    return rc2;
}

/* A new generation replaces the live one in one statement, once its
 * keyword index is complete (failed embeddings are reported, as for an
 * update, and done by the next sync); the one it replaced goes at the next
 * sync, once searches begun on it are done. */
static int pg_end(void *ud, int rc, int committed)
{
    psync *s = ud;
    mnemo *m = s->m;
    if (!committed && !s->rolled)
        rollback(s);
    if (committed && s->build) {
        buf keep;
        buf_init(&keep, 0);
        buf_puts(&keep, rc && m->err.data ? m->err.data : "");
        const char *p[1] = {s->logical};
        int rc2 =
            pgstore_q(m, "switching to the new index",
                      "UPDATE mnemo_live SET previous = live, live = building, building = NULL "
                      "WHERE tenant = $1 AND building IS NOT NULL",
                      1, p, NULL);
        if (rc && !rc2)
            core_error(m, rc, "%s", keep.data ? keep.data : "embedding failed");
        else
            rc = rc2;
        buf_cleanup(&keep);
    }
    return release(s, rc);
}

const sync_store pgsync_store = {pg_begin,   pg_commit,       pg_no_vectors,
                                  pg_vectors, pg_vectors_done, pg_end};
