/*
 * pgmwrite.c - writing structured memories on PostgreSQL: add (with
 * duplicates found by hash), update with history, delete, confirm, purge,
 * and the JSONL export and import (see pgmem.c).
 */
#include "store/postgres/pgmem.h"
#include "store/postgres/pgmem_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/memory.h"
#include "store/postgres/pgconn.h"
#include "store/postgres/pgschema.h"

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
    int rc = pm_q(m, "reading a memory",
               "SELECT id FROM mnemo_memories WHERE tenant = $1 AND hash = $2 AND user_id = $3 "
               "AND agent_id = $4 AND run_id = $5 AND deleted_at IS NULL",
               5, p, &r);
    if (!rc && pg_nrows(r))
        snprintf(id, 64, "%s", pg_value(r, 0, 0));
    pg_rows_free(r);
    return rc;
}

typedef struct add_ctx {
    mem_fields *f;
    derived *d;
    double now;
    char id[64];
    int dup;
    pg_rows *row; /* the memory (COLS from column 1), when the statement returned it */
} add_ctx;

static int add_tx(mnemo *m, void *ud)
{
    add_ctx *a = ud;
    a->dup = 0;
    pg_rows_free(a->row);
    a->row = NULL;
    for (int tries = 0; tries < 3; tries++) {
        mem_row r;
        mem_uuid(a->id);
        mem_fields_row(m, a->f, a->id, a->now, &r);
        char t[10][32], conf[32];
        snprintf(conf, sizeof conf, "%lld", r.confirmations);
        const char *p[25] = {pgconn_tenant(m),
                             r.id,
                             r.text,
                             a->d->text_fold,
                             a->f->hash,
                             r.category,
                             pm_fmt_num(r.importance, t[0]),
                             r.type,
                             r.subject,
                             r.user,
                             r.agent,
                             r.run,
                             r.metadata,
                             a->d->meta_fold,
                             r.triggers,
                             pm_fmt_num(r.created, t[1]),
                             pm_fmt_num(r.updated, t[2]),
                             pm_fmt_num(r.expires, t[3]),
                             conf,
                             pm_fmt_num(r.confirmed, t[4]),
                             NULL,
                             pm_state(m) ? pm_state(m)->lang : "",
                             a->d->ntok,
                             a->d->tsv.data,
                             pm_fmt_num(a->now, t[5])};
        pg_rows *res = NULL;
        int rc = pm_qp(m, "storing a memory", ADD_SQL, 25, p, &res);
        if (rc)
            return rc;
        if (pg_nrows(res) == 1) {
            a->dup = strcmp(pg_value(res, 0, 0), "1") != 0;
            snprintf(a->id, sizeof a->id, "%s", pg_value(res, 0, 1));
            a->row = res;
            return MNEMO_OK;
        }
        pg_rows_free(res);
        /* Not inserted, no duplicate seen: the text was committed meanwhile
         * (by another process), or the id is taken. */
        if ((rc = find_duplicate(m, a->f->hash, r.user, r.agent, r.run, a->id)))
            return rc;
        if (a->id[0]) {
            a->dup = 1;
            return MNEMO_OK;
        }
    }
    return core_error(m, MNEMO_DB, "storing a memory: conflicting writers; try again");
}

int pgmem_add(mnemo *m, const char *record, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *o;
    mem_fields f;
    int rc = mem_add_parse(m, record, &o, &f);
    if (rc)
        return rc;
    derived d;
    memset(&d, 0, sizeof d);
    rc = pm_derive(m, f.text, f.metadata ? f.metadata : "{}", &d);
    add_ctx a = {&f, &d, mem_now(), "", 0, NULL};
    if (!rc)
        rc = pm_in_tx(m, NULL, add_tx, &a);
    if (!rc && !a.dup)
        pm_embed_one(m, a.id, f.text);
    if (!rc && !a.dup && a.row)
        pgmpost_catch_up(m, strtoll(pg_value(a.row, 0, 18), NULL, 10));
    json_t *j = NULL;
    if (!rc && a.row && !(j = pm_row_json(a.row, 0, 1)))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    else if (!rc && !a.row)
        rc = pm_load(m, a.id, 0, &j);
    if (!rc) {
        if (a.dup)
            json_object_set_new(j, "duplicate", json_true());
        rc = mem_dump(j, out);
    }
    pg_rows_free(a.row);
    pm_derived_cleanup(&d);
    mem_fields_cleanup(&f);
    json_decref(o);
    return rc;
}

/* ----------------------------------------------------------------------
 * Update, delete, confirm, purge
 * -------------------------------------------------------------------- */

typedef struct upd_ctx {
    const char *id;
    json_t *o;
    mem_fields *f;
    derived *d;
    double now;
    int text_changed;
} upd_ctx;

static int update_tx(mnemo *m, void *ud)
{
    upd_ctx *u = ud;
    mem_fields *f = u->f;
    json_t *old = NULL;
    int rc = pgmpost_lock_shared(m);
    if (!rc)
        rc = pm_load_live(m, u->id, &old);
    /* A memory that cannot be read is repaired by new metadata, or not changed. */
    if (!rc && !f->metadata)
        rc = mem_readable(m, old);
    const char *old_text = old ? json_string_value(json_object_get(old, "text")) : NULL;
    u->text_changed = !rc && f->text && strcmp(f->text, old_text) != 0;
    if (u->text_changed) {
        /* The new text may duplicate another memory of the scope. */
        char other[64];
        const char *user = f->user ? f->user : json_string_value(json_object_get(old, "user_id"));
        const char *agent =
            f->agent ? f->agent : json_string_value(json_object_get(old, "agent_id"));
        const char *run = f->run ? f->run : json_string_value(json_object_get(old, "run_id"));
        if (!(rc = find_duplicate(m, f->hash, user, agent, run, other)) && other[0] &&
            strcmp(other, u->id) != 0)
            rc = core_error(m, MNEMO_INVALID, "memory %s already says that", other);
    }
    if (!rc && u->text_changed)
        rc = pm_stats_one(m, u->id, -1);
    if (!rc) {
        /* Category changes bring their default importance unless one is given. */
        double imp = f->importance >= 0 ? f->importance
                     : f->category       ? mem_default_importance(f->category)
                                         : -1;
        char t[3][32];
        int set_exp = json_object_get(u->o, "expires_at") != NULL;
        const char *p[21] = {pgconn_tenant(m),
                             u->id,
                             u->text_changed ? f->text : NULL,
                             u->text_changed ? u->d->text_fold : NULL,
                             u->text_changed ? f->hash : NULL,
                             f->category,
                             imp >= 0 ? pm_fmt_num(imp, t[0]) : NULL,
                             f->type,
                             f->subject,
                             f->user,
                             f->agent,
                             f->run,
                             f->metadata,
                             f->metadata ? u->d->meta_fold : NULL,
                             f->triggers,
                             set_exp ? "true" : "false",
                             set_exp ? pm_fmt_num(f->expires, t[1]) : NULL,
                             pm_fmt_num(u->now, t[2]),
                             u->text_changed ? u->d->ntok : NULL,
                             u->text_changed ? u->d->tsv.data : NULL,
                             u->text_changed && pm_state(m) ? pm_state(m)->lang : NULL};
        rc = pm_q(m, "updating a memory",
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
        if (rc == MNEMO_DB && !strcmp(pm_sqlstate(m), "23505"))
            rc = core_error(m, MNEMO_INVALID, "another memory already says that");
    }
    if (!rc && u->text_changed)
        rc = pm_stats_one(m, u->id, 1);
    if (!rc) {
        char *detail = json_dumps(u->o, JSON_COMPACT | JSON_SORT_KEYS);
        rc = detail ? pm_history(m, u->id, "UPDATE", old_text, f->text ? f->text : old_text,
                              u->now, detail)
                    : MNEMO_NOMEM;
        free(detail);
    }
    if (!rc && u->text_changed) /* its vector is of the old text */
        rc = pm_drop_vectors(m, "m.id = $2", u->id);
    if (!rc) /* its text or scope may have changed: read from its row */
        rc = pgmpost_dead(m, u->id);
    json_decref(old);
    return rc;
}

int pgmem_update(mnemo *m, const char *id, const char *changes, char **out)
{
    *out = NULL;
    core_clear(m);
    json_t *o;
    mem_fields f;
    int rc = mem_update_parse(m, id, changes, &o, &f);
    if (rc)
        return rc;
    derived d;
    memset(&d, 0, sizeof d);
    rc = pm_derive(m, f.text, f.metadata, &d);
    upd_ctx u = {id, o, &f, &d, mem_now(), 0};
    if (!rc)
        rc = pm_in_tx(m, "BEGIN", update_tx, &u);
    if (!rc && u.text_changed)
        pm_embed_one(m, id, f.text);
    json_t *j = NULL;
    if (!rc && !(rc = pm_load(m, id, 0, &j)))
        rc = mem_dump(j, out);
    pm_derived_cleanup(&d);
    mem_fields_cleanup(&f);
    json_decref(o);
    return rc;
}

typedef struct simple_ctx {
    const char *id;
    double now;
    size_t count;
} simple_ctx;

static int delete_tx(mnemo *m, void *ud)
{
    simple_ctx *s = ud;
    json_t *old = NULL;
    int rc = pgmpost_lock_shared(m);
    if (!rc)
        rc = pm_load_live(m, s->id, &old);
    char t[32];
    if (!rc)
        rc = pm_stats_one(m, s->id, -1);
    if (!rc)
        rc = pgmpost_dead(m, s->id);
    if (!rc) {
        const char *p[3] = {pgconn_tenant(m), s->id, pm_fmt_num(s->now, t)};
        rc = pm_q(m, "deleting a memory",
               "UPDATE mnemo_memories SET deleted_at = $3::float8, tsv = ''::tsvector, ntok = 0 "
               "WHERE tenant = $1 AND id = $2",
               3, p, NULL);
    }
    if (!rc)
        rc = pm_history(m, s->id, "DELETE", json_string_value(json_object_get(old, "text")), NULL,
                     s->now, NULL);
    json_decref(old);
    return rc;
}

int pgmem_delete(mnemo *m, const char *id)
{
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "delete: no memory id");
    simple_ctx s = {id, mem_now(), 0};
    return pm_in_tx(m, "BEGIN", delete_tx, &s);
}

static int confirm_tx(mnemo *m, void *ud)
{
    simple_ctx *s = ud;
    json_t *old = NULL;
    int rc = pgmpost_lock_shared(m);
    if (!rc)
        rc = pm_load_live(m, s->id, &old);
    if (!rc)
        rc = mem_readable(m, old); /* its record could not be returned */
    json_decref(old);
    if (!rc) /* its factors changed: read from its row */
        rc = pgmpost_dead(m, s->id);
    char t[32];
    if (!rc) {
        const char *p[3] = {pgconn_tenant(m), s->id, pm_fmt_num(s->now, t)};
        rc = pm_q(m, "confirming a memory",
               "UPDATE mnemo_memories SET confirmations = confirmations + 1, "
               "last_confirmed_at = $3::float8 WHERE tenant = $1 AND id = $2",
               3, p, NULL);
    }
    if (!rc)
        rc = pm_history(m, s->id, "CONFIRM", NULL, NULL, s->now, NULL);
    return rc;
}

int pgmem_confirm(mnemo *m, const char *id, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!id || !*id)
        return core_error(m, MNEMO_INVALID, "confirm: no memory id");
    simple_ctx s = {id, mem_now(), 0};
    int rc = pm_in_tx(m, "BEGIN", confirm_tx, &s);
    json_t *j = NULL;
    if (!rc && !(rc = pm_load(m, id, 0, &j)))
        rc = mem_dump(j, out);
    return rc;
}

/* The deleted memories purge removes: all of the tenant's, or ID. */
#define PURGE_COND "m.deleted_at IS NOT NULL AND ($2::text IS NULL OR m.id = $2)"

/* Deleted memories are out of the BM25 statistics already (delete_tx). */
static int purge_tx(mnemo *m, void *ud)
{
    simple_ctx *s = ud;
    const char *p[2] = {pgconn_tenant(m), s->id};
    pg_rows *r = NULL;
    s->count = 0;
    int rc = pm_q(m, "purging memories",
               "SELECT count(*) FROM mnemo_memories m WHERE m.tenant = $1 AND " PURGE_COND, 2, p,
               &r);
    if (!rc)
        s->count = (size_t)strtoull(pg_value(r, 0, 0), NULL, 10);
    pg_rows_free(r);
    if (!rc && s->id && s->count == 0)
        return core_error(m, MNEMO_NOTFOUND, "no deleted memory with id %s (delete it first)",
                          s->id);
    if (!rc)
        rc = pm_q(m, "purging memories",
               "DELETE FROM mnemo_memory_history h USING mnemo_memories m WHERE h.tenant = $1 "
               "AND m.tenant = h.tenant AND m.id = h.memory_id AND " PURGE_COND,
               2, p, NULL);
    if (!rc)
        rc = pm_drop_vectors(m, PURGE_COND, s->id);
    if (!rc)
        rc = pm_q(m, "purging memories",
               "DELETE FROM mnemo_memories m WHERE m.tenant = $1 AND " PURGE_COND, 2, p, NULL);
    /* Maintenance: the writers' counters folded together. */
    if (!rc)
        rc = pm_stats_fold(m);
    return rc;
}

int pgmem_purge(mnemo *m, const char *id, size_t *purged)
{
    core_clear(m);
    if (purged)
        *purged = 0;
    simple_ctx s = {id, 0, 0};
    int rc = pm_in_tx(m, "BEGIN", purge_tx, &s);
    if (!rc && purged)
        *purged = s.count;
    return rc;
}

/* ----------------------------------------------------------------------
 * Export and import
 * -------------------------------------------------------------------- */

typedef struct export_ctx {
    mnemo_write_fn write;
    void *ud;
    size_t count;
    mem_skips left; /* rows that cannot be read: import would refuse them */
} export_ctx;

static int export_tx(mnemo *m, void *ud)
{
    export_ctx *e = ud;
    e->count = 0;
    mem_skips_cleanup(&e->left); /* a transaction tried again starts over */
    char after[32] = "0";
    for (;;) {
        const char *p[2] = {pgconn_tenant(m), after};
        pg_rows *r = NULL;
        int rc = pm_q(m, "exporting memories",
                   "SELECT " COLS ", " HISTORY_AGG " FROM mnemo_memories m WHERE m.tenant = $1 "
                   "AND m.seq > $2::bigint ORDER BY m.seq LIMIT " EXPORT_PAGE,
                   2, p, &r);
        size_t n = pg_nrows(r);
        for (size_t i = 0; !rc && i < n; i++) {
            json_t *j = pm_row_json(r, i, 0);
            snprintf(after, sizeof after, "%s", pg_value(r, i, 17));
            if (!j) {
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
                break;
            }
            if (mem_skip(&e->left, j)) {
                json_decref(j);
                continue;
            }
            json_object_set_new(j, "history", pm_history_from_agg(pg_value(r, i, NCOLS)));
            char *line = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_decref(j);
            if (!line) {
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
                break;
            }
            size_t len = strlen(line);
            line[len] = '\n';
            if (e->write(e->ud, line, len + 1))
                rc = core_error(m, MNEMO_IO, "export: writing failed");
            free(line);
            e->count++;
        }
        pg_rows_free(r);
        if (rc || n == 0)
            return rc;
    }
}

int pgmem_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count)
{
    core_clear(m);
    if (count)
        *count = 0;
    export_ctx e = {write, ud, 0, {NULL}};
    /* One snapshot for the whole export. */
    int rc = pm_in_tx(m, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", export_tx, &e);
    if (count)
        *count = e.count;
    if (!rc)
        rc = mem_skips_report(m, &e.left, NULL);
    mem_skips_cleanup(&e.left);
    return rc;
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
    int rc = rows && hist ? pm_qp(m, "importing memories", IMPORT_SQL, 3, p, &r)
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
                          jstr(new_text), "at", jstr(pm_fmt_num(at, t)), "detail", jstr(detail));
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
    if ((rc = pm_derive(m, r.text, r.metadata, &d))) {
        pm_derived_cleanup(&d);
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
        "importance", jstr(pm_fmt_num(r.importance, t[0])), "type", jstr(r.type), "subject",
        jstr(r.subject), "user_id", jstr(r.user), "agent_id", jstr(r.agent), "run_id",
        jstr(r.run), "metadata", jstr(r.metadata), "metadata_fold", jstr(d.meta_fold),
        "triggers", jstr(r.triggers), "created_at", jstr(pm_fmt_num(r.created, t[1])),
        "updated_at", jstr(pm_fmt_num(r.updated, t[2])), "expires_at",
        jstr(pm_fmt_num(r.expires, t[3])), "confirmations", jstr(conf), "last_confirmed_at",
        jstr(pm_fmt_num(r.confirmed, t[4])), "deleted_at", jstr(pm_fmt_num(r.deleted, t[5])),
        "lang", jstr(pm_state(m) ? pm_state(m)->lang : ""), "ntok", jstr(live ? d.ntok : "0"),
        "tsv", jstr(live ? d.tsv.data : ""));
    ic->bytes += strlen(r.text) * 2 + d.tsv.len + strlen(r.metadata) * 2 + 512;
    pm_derived_cleanup(&d);
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

int pgmem_import(mnemo *m, const char *jsonl, size_t len, size_t *imported, size_t *skipped)
{
    core_clear(m);
    import_ctx ic = {jsonl, len, 0, 0, NULL, NULL, NULL, 0, NULL, 0};
    /* All or nothing: one transaction. */
    int rc = pm_in_tx(m, "BEGIN", import_tx, &ic);
    json_decref(ic.rows);
    json_decref(ic.hist);
    json_decref(ic.ids);
    if (!rc && ic.nin)
        pgmpost_catch_up(m, -1);
    if (!rc && ic.nin) {
        vecsetup vs;
        if (pm_vec_setup(m, &vs))
            pm_embed_missing(m, &vs); /* best effort */
    }
    if (imported)
        *imported = rc ? 0 : ic.nin;
    if (skipped)
        *skipped = rc ? 0 : ic.nskip;
    return rc;
}
