/*
 * pgmwrite.c - writing structured memories on PostgreSQL: the storage
 * steps of add (one statement, duplicates found by hash), update, delete,
 * confirm, purge, get and history, which the engine runs (mem_store,
 * memory.h), and the JSONL export and import (see pgmem.c).
 */
#include "store/postgres/pgint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/memory.h"

#define EXPORT_PAGE "500" /* rows per export query */

/* ----------------------------------------------------------------------
 * Add
 * -------------------------------------------------------------------- */

#define MEM_COLUMNS                                                                            \
    "tenant, id, text, text_fold, hash, category, importance, type, subject, user_id, "       \
    "agent_id, run_id, metadata, metadata_fold, triggers, created_at, updated_at, expires_at, " \
    "confirmations, last_confirmed_at, deleted_at, lang, ntok, tsv"

/* An add in one statement (its own transaction): the row ($1..$24, in
 * MEM_COLUMNS' order) and the ADD entry of its history (at $25); BM25's
 * statistics count it when the memories' index merges it (pgmpost.c). It
 * returns the new memory (first column 1); or, when the text is in the
 * scope already and was committed before the statement began, that memory
 * (0); or nothing, when it was committed meanwhile (or the id was taken). */
#define ADD_SQL                                                                                \
    "WITH " PM_POST_LOCK_CTE ", ins AS (INSERT INTO mnemo_memories(" MEM_COLUMNS ") SELECT $1, " \
    "$2, $3, $4, $5, $6, $7::float8, $8, $9, $10, $11, $12, $13::jsonb, $14::jsonb, $15, "    \
    "$16::float8, $17::float8, $18::float8, $19::bigint, $20::float8, $21::float8, $22, "     \
    "$23::int, $24::tsvector FROM lk ON CONFLICT DO NOTHING RETURNING *), "                   \
    "hi AS (INSERT INTO mnemo_memory_history(tenant, memory_id, event, new_text, at) "        \
    "SELECT $1, ins.id, 'ADD', ins.text, $25::float8 FROM ins) "                              \
    "SELECT 1, " COLS " FROM ins m UNION ALL SELECT 0, " COLS " FROM mnemo_memories m "       \
    "WHERE m.tenant = $1 AND m.hash = $5 AND m.user_id = $10 AND m.agent_id = $11 AND "       \
    "m.run_id = $12 AND m.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM ins)"

/* The live memory with this text in this scope: its id into ID ("" for
 * none). */
static int find_duplicate(mnemo *m, const char *hash, const char *user, const char *agent,
                          const char *run, char id[64])
{
    id[0] = 0;
    const char *p[5] = {pgconn_tenant(m), hash, user, agent, run};
    pg_rows *r = NULL;
    int rc = pgmem_q(m, "reading a memory",
               "SELECT id FROM mnemo_memories WHERE tenant = $1 AND hash = $2 AND user_id = $3 "
               "AND agent_id = $4 AND run_id = $5 AND deleted_at IS NULL",
               5, p, &r);
    if (!rc && pg_nrows(r))
        snprintf(id, 64, "%s", pg_value(r, 0, 0));
    pg_rows_free(r);
    return rc;
}

/* mem_store.insert: the add in one statement (ADD_SQL), again with
 * another id when it went in neither as new nor as a duplicate. */
static int add_row(mnemo *m, const mem_fields *f, double now, char id[64], int64_t *mid,
                   int *dup, json_t **rec)
{
    *rec = NULL;
    derived d;
    pg_rows *res = NULL;
    int rc = pgmem_derive(m, f->text, f->metadata ? f->metadata : "{}", &d);
    for (int tries = 0; !rc && tries < 3; tries++) {
        if (tries)
            mem_uuid(id);
        mem_row r;
        mem_fields_row(m, f, id, now, &r);
        char t[10][32], conf[32];
        snprintf(conf, sizeof conf, "%lld", r.confirmations);
        const char *p[25] = {pgconn_tenant(m),
                             r.id,
                             r.text,
                             d.text_fold,
                             f->hash,
                             r.category,
                             pgmem_fmt_num(r.importance, t[0]),
                             r.type,
                             r.subject,
                             r.user,
                             r.agent,
                             r.run,
                             r.metadata,
                             d.meta_fold,
                             r.triggers,
                             pgmem_fmt_num(r.created, t[1]),
                             pgmem_fmt_num(r.updated, t[2]),
                             pgmem_fmt_num(r.expires, t[3]),
                             conf,
                             pgmem_fmt_num(r.confirmed, t[4]),
                             NULL,
                             pgmem_state(m) ? pgmem_state(m)->lang : "",
                             d.ntok,
                             d.tsv.data,
                             pgmem_fmt_num(now, t[5])};
        if ((rc = pgmem_qp(m, "storing a memory", ADD_SQL, 25, p, &res)))
            break;
        if (pg_nrows(res) == 1) {
            *dup = strcmp(pg_value(res, 0, 0), "1") != 0;
            snprintf(id, 64, "%s", pg_value(res, 0, 1));
            *mid = strtoll(pg_value(res, 0, 18), NULL, 10);
            if (!(*rec = pgmem_row_json(res, 0, 1)))
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
            goto done;
        }
        pg_rows_free(res);
        res = NULL;
        /* Not inserted, no duplicate seen: the text was committed meanwhile
         * (by another process), or the id is taken. */
        char other[64];
        if ((rc = find_duplicate(m, f->hash, r.user, r.agent, r.run, other)))
            break;
        if (other[0]) {
            *dup = 1;
            snprintf(id, 64, "%s", other);
            goto done;
        }
    }
    if (!rc)
        rc = core_error(m, MNEMO_DB, "storing a memory: conflicting writers; try again");
done:
    pg_rows_free(res);
    pgmem_derived_cleanup(&d);
    return rc;
}

/* ----------------------------------------------------------------------
 * The other steps of the writes the engine runs (mem_store, memory.h)
 * -------------------------------------------------------------------- */

/* mem_store.write: a transaction tried again after a serialization
 * failure or a deadlock; an add is one statement, its own transaction. */
static int in_write(mnemo *m, int one_insert, mem_write_fn fn, void *ud)
{
    return pgmem_in_tx(m, one_insert ? NULL : "BEGIN", fn, ud);
}

/* mem_store.load: a memory about to change is read after both of the
 * memories' index locks are taken shared (a merge running commits
 * first), its row locked. Steps here go by id: *MID stays 0. */
static int load(mnemo *m, const char *id, int lock, json_t **out, int64_t *mid)
{
    if (mid)
        *mid = 0;
    int rc = lock ? pgmpost_lock_shared(m) : MNEMO_OK;
    return rc ? rc : pgmem_load(m, id, lock, out);
}

static int update_row(mnemo *m, const char *id, int64_t mid, const mem_fields *f,
                      double importance, int set_expires, const char *old_text, double now)
{
    (void)mid;
    derived d;
    int rc = pgmem_derive(m, old_text ? f->text : NULL, f->metadata, &d);
    if (!rc && old_text)
        rc = pgmem_stats_one(m, id, -1);
    if (!rc) {
        char t[3][32];
        const char *p[21] = {pgconn_tenant(m),
                             id,
                             old_text ? f->text : NULL,
                             old_text ? d.text_fold : NULL,
                             old_text ? f->hash : NULL,
                             f->category,
                             importance >= 0 ? pgmem_fmt_num(importance, t[0]) : NULL,
                             f->type,
                             f->subject,
                             f->user,
                             f->agent,
                             f->run,
                             f->metadata,
                             f->metadata ? d.meta_fold : NULL,
                             f->triggers,
                             set_expires ? "true" : "false",
                             set_expires ? pgmem_fmt_num(f->expires, t[1]) : NULL,
                             pgmem_fmt_num(now, t[2]),
                             old_text ? d.ntok : NULL,
                             old_text ? d.tsv.data : NULL,
                             old_text && pgmem_state(m) ? pgmem_state(m)->lang : NULL};
        rc = pgmem_q(m, "updating a memory",
               "UPDATE mnemo_memories SET text = coalesce($3, text), "
               "text_fold = coalesce($4, text_fold), hash = coalesce($5, hash), "
               "category = coalesce($6, category), "
               "importance = coalesce($7::float8, importance), type = coalesce($8, type), "
               "subject = coalesce($9, subject), user_id = coalesce($10, user_id), "
               "agent_id = coalesce($11, agent_id), run_id = coalesce($12, run_id), "
               "metadata = coalesce($13::jsonb, metadata), "
               "metadata_fold = coalesce($14::jsonb, metadata_fold), "
               "triggers = coalesce($15, triggers), "
               "expires_at = CASE WHEN $16::boolean THEN $17::float8 ELSE expires_at END, "
               "updated_at = $18::float8, ntok = coalesce($19::int, ntok), "
               "tsv = coalesce($20::tsvector, tsv), lang = coalesce($21, lang) "
               "WHERE tenant = $1 AND id = $2",
               21, p, NULL);
        if (rc == MNEMO_DB && !strcmp(pgmem_sqlstate(m), "23505"))
            rc = core_error(m, MNEMO_INVALID, "another memory already says that");
    }
    if (!rc && old_text)
        rc = pgmem_stats_one(m, id, 1);
    if (!rc) /* its text or scope may have changed: read from its row */
        rc = pgmpost_dead(m, id);
    pgmem_derived_cleanup(&d);
    return rc;
}

static int mark_deleted(mnemo *m, const char *id, int64_t mid, const char *text, double now)
{
    (void)mid;
    (void)text;
    int rc = pgmem_stats_one(m, id, -1);
    if (!rc)
        rc = pgmpost_dead(m, id);
    char t[32];
    const char *p[3] = {pgconn_tenant(m), id, pgmem_fmt_num(now, t)};
    return rc ? rc
              : pgmem_q(m, "deleting a memory",
                        "UPDATE mnemo_memories SET deleted_at = $3::float8, tsv = ''::tsvector, "
                        "ntok = 0 WHERE tenant = $1 AND id = $2",
                        3, p, NULL);
}

static int mark_restored(mnemo *m, const char *id, int64_t mid, const char *text, double now)
{
    (void)mid;
    (void)now;
    derived d;
    int rc = pgmem_derive(m, text, NULL, &d);
    if (!rc) {
        const char *p[5] = {pgconn_tenant(m), id, d.ntok, d.tsv.data,
                            pgmem_state(m) ? pgmem_state(m)->lang : NULL};
        rc = pgmem_q(m, "restoring a memory",
                     "UPDATE mnemo_memories SET deleted_at = NULL, ntok = $3::int, "
                     "tsv = $4::tsvector, lang = coalesce($5, lang) WHERE tenant = $1 AND id = $2",
                     5, p, NULL);
        if (rc == MNEMO_DB && !strcmp(pgmem_sqlstate(m), "23505"))
            rc = core_error(m, MNEMO_INVALID, "another memory already says that");
    }
    if (!rc)
        rc = pgmem_stats_one(m, id, 1);
    if (!rc) /* back in the index: read from its row */
        rc = pgmpost_dead(m, id);
    pgmem_derived_cleanup(&d);
    return rc;
}

static int mark_confirmed(mnemo *m, const char *id, int64_t mid, double now)
{
    (void)mid;
    int rc = pgmpost_dead(m, id); /* its factors changed: read from its row */
    char t[32];
    const char *p[3] = {pgconn_tenant(m), id, pgmem_fmt_num(now, t)};
    return rc ? rc
              : pgmem_q(m, "confirming a memory",
                        "UPDATE mnemo_memories SET confirmations = confirmations + 1, "
                        "last_confirmed_at = $3::float8 WHERE tenant = $1 AND id = $2",
                        3, p, NULL);
}

static int drop_vector(mnemo *m, const char *id, int64_t mid)
{
    (void)mid;
    return pgmem_drop_vectors(m, "m.id = $2", id);
}

static void embed(mnemo *m, const char *id, int64_t mid, const char *text)
{
    (void)mid;
    pgmem_embed_one(m, id, text);
}

static void catch_up(mnemo *m, int64_t mid) { pgmpost_catch_up(m, mid); }

/* The deleted memories purge removes: all of the tenant's, or ID. */
#define PURGE_COND "m.deleted_at IS NOT NULL AND ($2::text IS NULL OR m.id = $2)"

static int count_deleted(mnemo *m, const char *id, size_t *n)
{
    *n = 0;
    const char *p[2] = {pgconn_tenant(m), id};
    pg_rows *r = NULL;
    int rc = pgmem_q(m, "purging memories",
               "SELECT count(*) FROM mnemo_memories m WHERE m.tenant = $1 AND " PURGE_COND, 2, p,
               &r);
    if (!rc)
        *n = (size_t)strtoull(pg_value(r, 0, 0), NULL, 10);
    pg_rows_free(r);
    return rc;
}

/* Deleted memories are out of the BM25 statistics already (mark_deleted). */
static int purge(mnemo *m, const char *id)
{
    const char *p[2] = {pgconn_tenant(m), id};
    int rc = pgmem_q(m, "purging memories",
               "DELETE FROM mnemo_memory_history h USING mnemo_memories m WHERE h.tenant = $1 "
               "AND m.tenant = h.tenant AND m.id = h.memory_id AND " PURGE_COND,
               2, p, NULL);
    if (!rc)
        rc = pgmem_drop_vectors(m, PURGE_COND, id);
    if (!rc)
        rc = pgmem_q(m, "purging memories",
               "DELETE FROM mnemo_memories m WHERE m.tenant = $1 AND " PURGE_COND, 2, p, NULL);
    /* Maintenance: the writers' counters folded together. */
    if (!rc)
        rc = pgmem_stats_fold(m);
    return rc;
}

static int export_rows(mnemo *m, mem_export_fn fn, void *ud);
static int import(mnemo *m, const char *jsonl, size_t len, size_t *nin, size_t *nskip);
static void imported(mnemo *m);

const mem_store pgmwrite_store = {
    .open = NULL,
    .write = in_write,
    .load = load,
    .find_duplicate = find_duplicate,
    .insert = add_row,
    .history = pgmem_history,
    .update_row = update_row,
    .mark_deleted = mark_deleted,
    .mark_restored = mark_restored,
    .mark_confirmed = mark_confirmed,
    .drop_vector = drop_vector,
    .embed = embed,
    .catch_up = catch_up,
    .count_deleted = count_deleted,
    .purge = purge,
    .read_history = pgmem_read_history,
    .list = pgmem_list,
    .count = pgmem_count,
    .count_spans = pgmem_count_spans,
    .export_rows = export_rows,
    .import = import,
    .imported = imported,
};

/* ----------------------------------------------------------------------
 * Export and import
 * -------------------------------------------------------------------- */

typedef struct export_ctx {
    mem_export_fn fn;
    void *ud;
} export_ctx;

static int export_tx(mnemo *m, void *ud)
{
    export_ctx *e = ud;
    int rc = e->fn(m, e->ud, NULL, NULL); /* a transaction tried again starts over */
    char after[32] = "0";
    while (!rc) {
        const char *p[2] = {pgconn_tenant(m), after};
        pg_rows *r = NULL;
        rc = pgmem_q(m, "exporting memories",
                     "SELECT " COLS ", " HISTORY_AGG " FROM mnemo_memories m WHERE m.tenant = $1 "
                     "AND m.seq > $2::bigint ORDER BY m.seq LIMIT " EXPORT_PAGE,
                     2, p, &r);
        size_t n = pg_nrows(r);
        for (size_t i = 0; !rc && i < n; i++) {
            json_t *j = pgmem_row_json(r, i, 0);
            snprintf(after, sizeof after, "%s", pg_value(r, i, 17));
            if (!j) {
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
                break;
            }
            rc = e->fn(m, e->ud, j, pgmem_history_from_agg(pg_value(r, i, NCOLS)));
        }
        pg_rows_free(r);
        if (n == 0)
            break;
    }
    return rc;
}

/* Every memory with its history, in one snapshot (mem_store.export_rows),
 * a page of rows a query. */
static int export_rows(mnemo *m, mem_export_fn fn, void *ud)
{
    export_ctx e = {fn, ud};
    return pgmem_in_tx(m, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", export_tx, &e);
}

/* Imported memories go in batches of at most IMPORT_ROWS rows or about
 * IMPORT_BYTES of text, each batch one statement (IMPORT_SQL): the rows
 * ($2, JSON) and their history entries ($3); the statistics count them
 * when the memories' index merges them, as for an add. A row
 * is skipped when its id is there, or (live) its text in its scope; the
 * history of the rows inserted follows them. A batch never holds one id
 * twice, so the history joins its row by id. */
#define IMPORT_ROWS 1000
#define IMPORT_BYTES (8u << 20)

#define IMPORT_SQL                                                                             \
    "WITH " PM_POST_LOCK_CTE ", ins AS (INSERT INTO mnemo_memories(" MEM_COLUMNS ") SELECT "  \
    "$1, x.id, x.text, "                                                                       \
    "x.text_fold, x.hash, x.category, x.importance::float8, x.type, x.subject, x.user_id, "   \
    "x.agent_id, x.run_id, x.metadata::jsonb, x.metadata_fold::jsonb, x.triggers, "           \
    "x.created_at::float8, x.updated_at::float8, x.expires_at::float8, "                      \
    "x.confirmations::bigint, x.last_confirmed_at::float8, x.deleted_at::float8, x.lang, "    \
    "x.ntok::int, x.tsv::tsvector FROM lk, json_to_recordset($2::json) AS x(o int, id text, " \
    "text text, text_fold text, hash text, category text, importance text, type text, "       \
    "subject text, user_id text, agent_id text, run_id text, metadata text, "                 \
    "metadata_fold text, triggers text, created_at text, updated_at text, expires_at text, "  \
    "confirmations text, last_confirmed_at text, deleted_at text, lang text, ntok text, "     \
    "tsv text) ORDER BY x.o ON CONFLICT DO NOTHING RETURNING id), "                          \
    "hi AS (INSERT INTO mnemo_memory_history(tenant, memory_id, event, old_text, new_text, " \
    "at, detail) SELECT $1, h.memory_id, h.event, h.old_text, h.new_text, h.at::float8, "     \
    "h.detail FROM json_to_recordset($3::json) AS h(o int, memory_id text, event text, "      \
    "old_text text, new_text text, at text, detail text) WHERE h.memory_id IN (SELECT id "    \
    "FROM ins) ORDER BY h.o) SELECT id FROM ins"

typedef struct import_ctx {
    const char *jsonl;
    size_t len;
    size_t nin, nskip;
    json_t *rows, *hist, *ids; /* the batch: its rows, their history, its ids */
    size_t bytes;
    const char *id; /* the row whose history is being read */
    int nomem;
} import_ctx;

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

static void import_reset(import_ctx *ic)
{
    json_decref(ic->rows);
    json_decref(ic->hist);
    json_decref(ic->ids);
    ic->rows = json_array();
    ic->hist = json_array();
    ic->ids = json_object();
    ic->bytes = 0;
}

/* Sends the batch; *INSERTED (when given) tells whether the row WANT went in. */
static int import_flush(mnemo *m, import_ctx *ic, const char *want, int *inserted)
{
    size_t n = json_array_size(ic->rows);
    if (!n)
        return MNEMO_OK;
    char *rows = json_dumps(ic->rows, JSON_COMPACT);
    char *hist = json_dumps(ic->hist, JSON_COMPACT);
    const char *p[3] = {pgconn_tenant(m), rows, hist};
    pg_rows *r = NULL;
    int rc = rows && hist ? pgmem_qp(m, "importing memories", IMPORT_SQL, 3, p, &r)
                          : core_error(m, MNEMO_NOMEM, "out of memory");
    size_t in = pg_nrows(r);
    if (!rc) {
        ic->nin += in;
        ic->nskip += n - in;
    }
    for (size_t i = 0; !rc && want && i < in; i++)
        if (!strcmp(pg_value(r, i, 0), want))
            *inserted = 1;
    pg_rows_free(r);
    free(rows);
    free(hist);
    import_reset(ic);
    return rc;
}

static int import_history_fn(mnemo *m, void *ud, const char *event, const char *old_text,
                             const char *new_text, double at, const char *detail)
{
    (void)m;
    import_ctx *ic = ud;
    char t[32];
    json_t *h = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "o",
                          (json_int_t)json_array_size(ic->hist), "memory_id", jstr(ic->id),
                          "event", jstr(event), "old_text", jstr(old_text), "new_text",
                          jstr(new_text), "at", jstr(pgmem_fmt_num(at, t)), "detail", jstr(detail));
    if (!h || json_array_append_new(ic->hist, h))
        ic->nomem = 1;
    return ic->nomem ? MNEMO_NOMEM : MNEMO_OK;
}

static int import_line(mnemo *m, void *ud, json_t *o, mem_fields *f, size_t line)
{
    import_ctx *ic = ud;
    int rc = MNEMO_OK;
    /* One id once per batch: a second one waits for the next. */
    if (json_object_get(ic->ids, f->id) && (rc = import_flush(m, ic, NULL, NULL)))
        return rc;
    mem_row r;
    mem_fields_row(m, f, f->id, mem_now(), &r);
    derived d;
    if ((rc = pgmem_derive(m, r.text, r.metadata, &d))) {
        pgmem_derived_cleanup(&d);
        return rc;
    }
    int live = isnan(r.deleted);
    char t[6][32], conf[32];
    snprintf(conf, sizeof conf, "%lld", r.confirmations);
    json_t *row = json_pack(
        "{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
        "s:o,s:o,s:o}",
        "o", (json_int_t)json_array_size(ic->rows), "id", jstr(r.id), "text", jstr(r.text),
        "text_fold", jstr(d.text_fold), "hash", jstr(f->hash), "category", jstr(r.category),
        "importance", jstr(pgmem_fmt_num(r.importance, t[0])), "type", jstr(r.type), "subject",
        jstr(r.subject), "user_id", jstr(r.user), "agent_id", jstr(r.agent), "run_id",
        jstr(r.run), "metadata", jstr(r.metadata), "metadata_fold", jstr(d.meta_fold),
        "triggers", jstr(r.triggers), "created_at", jstr(pgmem_fmt_num(r.created, t[1])),
        "updated_at", jstr(pgmem_fmt_num(r.updated, t[2])), "expires_at",
        jstr(pgmem_fmt_num(r.expires, t[3])), "confirmations", jstr(conf), "last_confirmed_at",
        jstr(pgmem_fmt_num(r.confirmed, t[4])), "deleted_at", jstr(pgmem_fmt_num(r.deleted, t[5])),
        "lang", jstr(pgmem_state(m) ? pgmem_state(m)->lang : ""), "ntok", jstr(live ? d.ntok : "0"),
        "tsv", jstr(live ? d.tsv.data : ""));
    ic->bytes += strlen(r.text) * 2 + d.tsv.len + strlen(r.metadata) * 2 + 512;
    pgmem_derived_cleanup(&d);
    if (!row || json_array_append_new(ic->rows, row) ||
        json_object_set_new(ic->ids, f->id, json_true()))
        return core_error(m, MNEMO_NOMEM, "out of memory");
    /* Its history, read now; a bad entry matters only if the row goes in
     * (as when rows went in one at a time), which the batch, sent at once,
     * tells. */
    size_t nh = json_array_size(ic->hist);
    ic->id = f->id;
    rc = mem_import_history(m, json_object_get(o, "history"), line, import_history_fn, ic);
    if (ic->nomem)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    if (rc) {
        while (json_array_size(ic->hist) > nh)
            json_array_remove(ic->hist, json_array_size(ic->hist) - 1);
        buf keep;
        buf_init(&keep, 0);
        buf_puts(&keep, m->err.data ? m->err.data : "");
        int bad = rc, inserted = 0;
        core_clear(m);
        if (!(rc = import_flush(m, ic, f->id, &inserted)) && inserted)
            rc = core_error(m, bad, "%s", keep.data ? keep.data : "import failed");
        buf_cleanup(&keep);
        return rc;
    }
    if (json_array_size(ic->rows) >= IMPORT_ROWS || ic->bytes >= IMPORT_BYTES)
        rc = import_flush(m, ic, NULL, NULL);
    return rc;
}

static int import_tx(mnemo *m, void *ud)
{
    import_ctx *ic = ud;
    ic->nin = ic->nskip = 0;
    import_reset(ic);
    int rc = mem_import_each(m, ic->jsonl, ic->len, import_line, ic);
    if (!rc)
        rc = import_flush(m, ic, NULL, NULL);
    return rc;
}

/* In batches, one transaction (mem_store.import). */
static int import(mnemo *m, const char *jsonl, size_t len, size_t *nin, size_t *nskip)
{
    import_ctx ic = {jsonl, len, 0, 0, NULL, NULL, NULL, 0, NULL, 0};
    int rc = pgmem_in_tx(m, "BEGIN", import_tx, &ic);
    json_decref(ic.rows);
    json_decref(ic.hist);
    json_decref(ic.ids);
    *nin = ic.nin;
    *nskip = ic.nskip;
    return rc;
}

/* The memories' index, and their vectors (mem_store.imported). */
static void imported(mnemo *m)
{
    pgmpost_catch_up(m, -1);
    vecsetup vs;
    if (pgmem_vec_setup(m, &vs))
        pgmem_embed_missing(m, &vs);
}
