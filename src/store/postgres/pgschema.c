/*
 * pgschema.c - mnemo's schema on PostgreSQL: migrations, run on each new
 * connection of the handle, and the pgvector check (see pgint.h).
 */
#include "store/postgres/pgint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/core.h"

#define BUILD_TIMEOUT_MS (6 * 3600 * 1000) /* an index built over a table's rows */
#define MIGRATION_LOCK "7170531" /* pg_advisory_xact_lock key of migrations */

static const char *const *const migrations[PGSCHEMA_VERSION + 1] = {
    NULL, pgstore_ddl, pgmem_ddl, pgstore_ddl3, pgmem_ddl4, pgstore_ddl5, pgstore_ddl6,
    pgmem_ddl7, pgmem_ddl8, pgstore_ddl9, pgstore_ddl10, pgmem_ddl11, pgmem_ddl12,
    pgstore_ddl13};

static int q(mnemo *m, pg_conn *c, const char *what, const char *sql, int n,
             const char *const *params, pg_rows **out)
{
    return pgconn_query(m, c, 0, what, sql, n, params, out);
}

/* A statement without parameters that may run long (an index build). */
static int q_long(mnemo *m, pg_conn *c, const char *what, const char *sql)
{
    pg_rows *r = NULL;
    buf err;
    buf_init(&err, 0);
    int rc = pg_query(c, sql, 0, NULL, BUILD_TIMEOUT_MS, &r, &err);
    if (rc)
        rc = pgconn_fail(m, rc, what, &err);
    pg_rows_free(r);
    buf_cleanup(&err);
    return rc;
}

/* The schema version recorded, 0 for a database mnemo never used. */
static int version_of(mnemo *m, pg_conn *c, int *v)
{
    pg_rows *r = NULL;
    buf err;
    buf_init(&err, 0);
    int rc = pg_query(c, "SELECT coalesce(max(version), 0) FROM mnemo_migrations", 0, NULL,
                      PGCONN_QUERY_TIMEOUT_MS, &r, &err);
    *v = 0;
    if (rc == MNEMO_DB && !strcmp(pg_sqlstate(c), "42P01")) /* undefined_table */
        rc = MNEMO_OK;
    else if (!rc)
        *v = (int)strtol(pg_value(r, 0, 0), NULL, 10);
    if (rc)
        pgconn_fail(m, rc, "schema version", &err);
    pg_rows_free(r);
    buf_cleanup(&err);
    return rc;
}

static int migrate(mnemo *m, pg_conn *c)
{
    int v, rc = version_of(m, c, &v);
    if (rc || v == PGSCHEMA_VERSION)
        return rc;
    if (v > PGSCHEMA_VERSION)
        return core_error(m, MNEMO_CORRUPT,
                          "PostgreSQL schema is version %d, newer than this mnemo (%d): "
                          "upgrade mnemo",
                          v, PGSCHEMA_VERSION);
    if ((rc = q(m, c, "migration", "BEGIN", 0, NULL, NULL)))
        return rc;
    rc = q(m, c, "migration", "SELECT pg_advisory_xact_lock(" MIGRATION_LOCK ")", 0, NULL, NULL);
    if (!rc)
        rc = q(m, c, "migration",
               "CREATE TABLE IF NOT EXISTS mnemo_migrations(version int PRIMARY KEY, "
               "applied_at timestamptz NOT NULL DEFAULT now())",
               0, NULL, NULL);
    if (!rc)
        rc = version_of(m, c, &v); /* another process may have migrated meanwhile */
    for (int next = v + 1; !rc && next <= PGSCHEMA_VERSION; next++) {
        for (const char *const *s = migrations[next]; !rc && *s; s++)
            rc = q(m, c, "migration", *s, 0, NULL, NULL);
        char num[16];
        snprintf(num, sizeof num, "%d", next);
        const char *p[1] = {num};
        if (!rc)
            rc = q(m, c, "migration", "INSERT INTO mnemo_migrations(version) VALUES ($1::int)", 1,
                   p, NULL);
    }
    if (rc) {
        buf keep;
        buf_init(&keep, 0);
        buf_puts(&keep, m->err.data ? m->err.data : "");
        q(m, c, "migration", "ROLLBACK", 0, NULL, NULL);
        core_error(m, rc, "%s", keep.data ? keep.data : "migration failed");
        buf_cleanup(&keep);
        return rc;
    }
    return q(m, c, "migration", "COMMIT", 0, NULL, NULL);
}

int pgschema_conn(mnemo *m, pg_conn **out)
{
    *out = NULL;
    pgback *b = pgconn_state(m);
    if (b && b->read) {
        /* A replica is never reconnected under a running read: the router
         * runs the read again elsewhere. */
        if (!pg_ok(b->read->c))
            return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL replica: connection lost");
        *out = b->read->c;
        return MNEMO_OK;
    }
    return pgschema_primary(m, out);
}

int pgschema_primary(mnemo *m, pg_conn **out)
{
    int fresh, rc = pgconn_open(m, out, &fresh);
    if (rc || !fresh)
        return rc;
    if ((rc = migrate(m, *out))) {
        pg_close(*out);
        *out = PGB(m)->conn->c = NULL;
        return rc;
    }
    return MNEMO_OK;
}

int pgschema_vectors(mnemo *m, const char **why)
{
    pg_conn *c;
    *why = NULL;
    int rc = pgschema_conn(m, &c);
    if (rc) {
        *why = m->err.data ? m->err.data : "PostgreSQL is unavailable";
        return 0;
    }
    struct pgstate *s = pgconn_cur(m);
    if (!s->vec_checked) {
        pg_rows *r = NULL;
        s->vec_checked = 1;
        rc = q(m, c, "pgvector", "SELECT 1 FROM pg_extension WHERE extname = 'vector'", 0, NULL,
               &r);
        s->vec_ok = !rc && pg_nrows(r) == 1;
        pg_rows_free(r);
        if (!rc && !s->vec_ok && s->replica) {
            /* A replica creates nothing: say what the primary would. */
            r = NULL;
            rc = q(m, c, "pgvector",
                   "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'", 0, NULL, &r);
            int avail = !rc && pg_nrows(r) == 1;
            pg_rows_free(r);
            snprintf(s->vec_why, sizeof s->vec_why, "%s",
                     avail ? "vectors are off: the vector extension is not enabled in this "
                             "database yet (the first writer on the primary enables it); "
                             "keyword search only"
                           : "vectors are off: the pgvector extension is not installed on the "
                             "PostgreSQL server (install pgvector there to enable them); "
                             "keyword search only");
        } else if (!rc && !s->vec_ok) {
            /* Inside a caller's transaction a failed CREATE would abort it:
             * try under a savepoint there. */
            int txn = pg_in_transaction(c);
            if (txn)
                rc = q(m, c, "pgvector", "SAVEPOINT mnemo_vector", 0, NULL, NULL);
            if (!rc)
                rc = q(m, c, "pgvector", "CREATE EXTENSION IF NOT EXISTS vector", 0, NULL, NULL);
            s->vec_ok = !rc;
            if (txn) {
                buf keep;
                buf_init(&keep, 0);
                buf_puts(&keep, m->err.data ? m->err.data : "");
                q(m, c, "pgvector",
                  s->vec_ok ? "RELEASE SAVEPOINT mnemo_vector" : "ROLLBACK TO SAVEPOINT mnemo_vector",
                  0, NULL, NULL);
                core_error(m, rc, "%s", keep.data ? keep.data : "");
                buf_cleanup(&keep);
            }
        }
        if (!s->vec_ok && !s->replica) {
            /* The server's own words, first line only, when it is not one of
             * the two usual reasons. */
            const char *code = pg_sqlstate(c), *msg = m->err.data ? m->err.data : "";
            const char *e = strstr(msg, "ERROR:");
            e = e ? e + 6 : msg;
            while (*e == ' ')
                e++;
            int len = (int)strcspn(e, "\n");
            if (!strcmp(code, "0A000") || !strcmp(code, "58P01"))
                snprintf(s->vec_why, sizeof s->vec_why,
                         "vectors are off: the pgvector extension is not installed on the "
                         "PostgreSQL server (install pgvector there to enable them); "
                         "keyword search only");
            else if (!strcmp(code, "42501"))
                snprintf(s->vec_why, sizeof s->vec_why,
                         "vectors are off: the vector extension is not enabled in this "
                         "database and this role may not create it (as an administrator: "
                         "CREATE EXTENSION vector); keyword search only");
            else
                snprintf(s->vec_why, sizeof s->vec_why,
                         "vectors are off: the vector extension could not be enabled (%.*s); "
                         "keyword search only",
                         len, e);
        }
        core_clear(m);
    }
    if (!s->vec_ok)
        *why = s->vec_why;
    return s->vec_ok;
}

/* Rolls back the open transaction after RC, keeping the first error. */
static int rollback_keep(mnemo *m, pg_conn *c, const char *what, int rc)
{
    buf keep;
    buf_init(&keep, 0);
    buf_puts(&keep, m->err.data ? m->err.data : "");
    q(m, c, what, "ROLLBACK", 0, NULL, NULL);
    core_error(m, rc, "%s", keep.data ? keep.data : "failed");
    buf_cleanup(&keep);
    return rc;
}

/* The HNSW index of vector table NAME, built if missing, inside the open
 * transaction and without its deadline: over a table's rows it may take
 * minutes. */
static int hnsw_index(mnemo *m, pg_conn *c, const char *name)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE INDEX IF NOT EXISTS %s_hnsw ON %s USING hnsw (embedding vector_cosine_ops)",
             name, name);
    int rc = q(m, c, "vector index", "SET LOCAL statement_timeout = 0", 0, NULL, NULL);
    return rc ? rc : q_long(m, c, "vector index", sql);
}

int pgschema_vec_table(mnemo *m, const char *kind, int dims, char *name, size_t size,
                       int *deferred)
{
    const char *why;
    if (dims <= 0 || dims > 16000 ||
        (strcmp(kind, "chunk") != 0 && strcmp(kind, "memory") != 0 && strcmp(kind, "calib") != 0))
        return core_error(m, MNEMO_INVALID, "vector table: bad kind or dimensions");
    if (!pgschema_vectors(m, &why))
        return core_error(m, MNEMO_UNAVAILABLE, "%s", why);
    snprintf(name, size, "mnemo_%s_vec_%d", kind, dims);
    struct pgstate *s = pgconn_cur(m);
    for (int i = 0; i < s->nvec; i++)
        if (!strcmp(s->vec_tables[i], name))
            return MNEMO_OK;
    if (s->replica) {
        /* The primary creates vector tables; a replica only finds them. */
        pg_rows *r = NULL;
        const char *p[1] = {name};
        int rc = q(m, s->c, "vector table", "SELECT to_regclass($1) IS NOT NULL", 1, p, &r);
        int found = !rc && !strcmp(pg_value(r, 0, 0), "t");
        pg_rows_free(r);
        if (rc)
            return rc;
        if (!found)
            return core_error(m, MNEMO_UNAVAILABLE, "vector table %s: not created yet", name);
        if (s->nvec < PGCONN_VEC_TABLES)
            snprintf(s->vec_tables[s->nvec++], sizeof s->vec_tables[0], "%s", name);
        return MNEMO_OK;
    }
    /* The name is built from a fixed word and a number: nothing from
     * outside reaches this SQL. HNSW indexes vectors up to 2000 dimensions;
     * beyond that the table is searched exactly. */
    char sql[1024];
    /* A chunk has a vector for each of its parts (chunk_parts). The fixed
     * texts' vectors (engine/calib.h) are few and read whole: no index. */
    int parts = !strcmp(kind, "chunk"), calib = !strcmp(kind, "calib");
    if (calib)
        snprintf(sql, sizeof sql,
                 "CREATE TABLE IF NOT EXISTS %s(tenant text NOT NULL, identity text NOT NULL, "
                 "i int NOT NULL, embedding vector(%d) NOT NULL, PRIMARY KEY (tenant, identity, "
                 "i))",
                 name, dims);
    else
        snprintf(sql, sizeof sql,
                 "CREATE TABLE IF NOT EXISTS %s(tenant text NOT NULL, %s NOT NULL, %s"
                 "model text NOT NULL, embedding vector(%d) NOT NULL, "
                 "PRIMARY KEY (tenant, %s))",
                 name, parts ? "chunk_id bigint" : "memory_id text",
                 parts ? "part smallint NOT NULL DEFAULT 0, " : "", dims,
                 parts ? "chunk_id, part" : "memory_id");
    int rc = q(m, s->c, "vector table", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = q(m, s->c, "vector table",
               "SELECT pg_advisory_xact_lock(" MIGRATION_LOCK ")", 0, NULL, NULL);
    if (!rc)
        rc = q(m, s->c, "vector table", sql, 0, NULL, NULL);
    /* An empty table's index waits for the load when the caller builds it
     * after (pgschema_vec_index): one build from all rows takes a fraction
     * of the time of inserting each into the graph. */
    int later = 0;
    if (!rc && deferred && dims <= 2000 && !calib) {
        pg_rows *r = NULL;
        snprintf(sql, sizeof sql,
                 "SELECT to_regclass('%s_hnsw') IS NULL AND NOT EXISTS (SELECT 1 FROM %s)", name,
                 name);
        rc = q(m, s->c, "vector table", sql, 0, NULL, &r);
        later = !rc && !strcmp(pg_value(r, 0, 0), "t");
        pg_rows_free(r);
    }
    /* Also built over the rows already there: a load that stopped before
     * its index. */
    if (!rc && dims <= 2000 && !later && !calib)
        rc = hnsw_index(m, s->c, name);
    if (rc)
        return rollback_keep(m, s->c, "vector table", rc);
    if ((rc = q(m, s->c, "vector table", "COMMIT", 0, NULL, NULL)))
        return rc;
    if (deferred)
        *deferred = later;
    if (s->nvec < PGCONN_VEC_TABLES && !later)
        snprintf(s->vec_tables[s->nvec++], sizeof s->vec_tables[0], "%s", name);
    return MNEMO_OK;
}

int pgschema_vec_index(mnemo *m, const char *name)
{
    struct pgstate *s = pgconn_cur(m);
    int rc = q(m, s->c, "vector index", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = q(m, s->c, "vector index", "SELECT pg_advisory_xact_lock(" MIGRATION_LOCK ")", 0,
               NULL, NULL);
    if (!rc)
        rc = hnsw_index(m, s->c, name);
    if (!rc)
        rc = q(m, s->c, "vector index", "COMMIT", 0, NULL, NULL);
    if (rc)
        return rollback_keep(m, s->c, "vector index", rc);
    if (s->nvec < PGCONN_VEC_TABLES)
        snprintf(s->vec_tables[s->nvec++], sizeof s->vec_tables[0], "%s", name);
    return MNEMO_OK;
}

int pgschema_replica_schema(mnemo *m, struct pgstate *s, buf *err)
{
    if (s->schema_ok)
        return MNEMO_OK;
    /* Checked, never migrated: the primary migrates and the replica
     * follows it. */
    int v = 0, rc;
    if ((rc = version_of(m, s->c, &v)))
        buf_puts(err, core_errmsg(m));
    else if (v != PGSCHEMA_VERSION) {
        buf_printf(err,
                   v > PGSCHEMA_VERSION
                       ? "schema version %d is newer than this mnemo (%d): upgrade mnemo"
                       : "schema version %d, this mnemo needs %d (the primary migrates; the "
                         "replica follows it)",
                   v, PGSCHEMA_VERSION);
        rc = v > PGSCHEMA_VERSION ? MNEMO_CORRUPT : MNEMO_UNAVAILABLE;
    }
    core_clear(m);
    s->schema_ok = rc == MNEMO_OK;
    return rc;
}
