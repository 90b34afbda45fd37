/*
 * test_pgsource.c - searching an existing PostgreSQL memory table: the
 * redaction, identifier and env file helpers; the config keys; end to end
 * against PGlite with pgvector (priorities, maxResults, minScore, the result
 * shape, custom columns, SQL injection attempts, the CLI) with queries
 * embedded by the provider test server; the fallback to the local index
 * when the server is down, the table is missing or is not pgvector; and
 * credentials from an env file against Debian's PostgreSQL 15.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/postgres/pgint.h"
#include "pg_server.h"
#include "provider_server.h"
#include "test.h"

#define DIMS 1536
#define QUERY "how do we deploy the database"

/* ---- helpers ------------------------------------------------------------ */

static char *redact(const char *s, const char *secret)
{
    buf b;
    buf_init(&b, 0);
    dsn_redact(&b, s, secret);
    return buf_detach(&b);
}

/* normalize(a * q + b * noise) */
static void mix(const float *q, const char *noise_text, double a, double b, float *out)
{
    float *n = malloc(DIMS * sizeof *n);
    ps_vector(noise_text, strlen(noise_text), DIMS, n);
    double norm = 0;
    for (int i = 0; i < DIMS; i++) {
        out[i] = (float)(a * q[i] + b * n[i]);
        norm += (double)out[i] * out[i];
    }
    for (int i = 0; i < DIMS; i++)
        out[i] = (float)(out[i] / sqrt(norm));
    free(n);
}

static double dot(const float *a, const float *b)
{
    double s = 0;
    for (int i = 0; i < DIMS; i++)
        s += (double)a[i] * b[i];
    return s;
}

static void put_vector(buf *b, const float *v)
{
    buf_putc(b, '\'');
    buf_putc(b, '[');
    for (int i = 0; i < DIMS; i++)
        buf_printf(b, i ? ",%.9g" : "%.9g", (double)v[i]);
    buf_puts(b, "]'");
}

typedef struct fixture {
    double sim[4]; /* cosine of each row with the query */
} fixture;

/* memory_embeddings as agent installs have it, with four rows: exact (a
 * note, priority 0.35), close (a value, 0.9, two lines), mid (a type
 * without priority) and far (0.9); plus the same rows in a table with
 * other column names. */
static fixture load_rows(const pg_server *s)
{
    fixture fx;
    float *q = malloc(DIMS * sizeof *q), *v = malloc(DIMS * sizeof *v);
    ps_vector(QUERY, strlen(QUERY), DIMS, q);
    buf sql;
    buf_init(&sql, 0);
    buf_puts(&sql, "CREATE EXTENSION IF NOT EXISTS vector;\n"
                   "CREATE TABLE memory_embeddings (id serial PRIMARY KEY, content "
                   "text NOT NULL, "
                   "source_type varchar(50) NOT NULL, embedding vector(1536), "
                   "created_at timestamptz DEFAULT now(), updated_at timestamptz "
                   "DEFAULT now());\n"
                   "CREATE TABLE memory_type_priorities (source_type varchar(50) "
                   "PRIMARY KEY, "
                   "priority numeric(3,2) NOT NULL DEFAULT 0.5, description text);\n"
                   "INSERT INTO memory_type_priorities VALUES ('note', 0.35, 'notes'), "
                   "('value', 0.90, 'values'), ('fact', 0.90, 'facts');\n"
                   "CREATE TABLE agent_memories (mem_id text, body text, kind text, "
                   "vec vector(1536));\n");
    static const char *const content[4] = {
        "Deploy the database with the migration script.",
        "Database deploys run on Tuesdays.\nThe DBA approves each one.",
        "Staging databases are rebuilt nightly.",
        "The office plants need water on Fridays.",
    };
    static const char *const type[4] = {"note", "value", "unknowntype", "fact"};
    static const double a[4] = {1, 0.9, 0.6, 0}, b[4] = {0, 0.44, 0.8, 1};
    static const char *const noise[4] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 4; i++) {
        mix(q, noise[i], a[i], b[i], v);
        fx.sim[i] = dot(q, v);
        buf_printf(&sql,
                   "INSERT INTO memory_embeddings (id, content, source_type, embedding) "
                   "VALUES (%d, '%s', '%s', ",
                   i + 1, content[i], type[i]);
        put_vector(&sql, v);
        buf_puts(&sql, ");\n");
        buf_printf(&sql, "INSERT INTO agent_memories VALUES ('m-%d', '%s', '%s', ", i + 1,
                   content[i], type[i]);
        put_vector(&sql, v);
        buf_puts(&sql, ");\n");
    }
    buf_puts(&sql, "CREATE INDEX ON memory_embeddings USING hnsw (embedding "
                   "vector_cosine_ops);\n");
    char *out = NULL;
    int rc = pg_psql(s, sql.data, &out);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "psql failed (%d): %s", rc, out ? out : "");
    free(out);
    buf_cleanup(&sql);
    free(q);
    free(v);
    return fx;
}

static void local_notes(void)
{
    test_write("ws/MEMORY.md", "# Memory\n\nThe database deploy checklist lives in the wiki.\n");
}

/* A handle on the local workspace ws with the provider server embedding
 * queries as text-embedding-3-small would, plus SETTINGS. */
static mnemo *open_with(provider_server *ps, const char *store, const char *s1, const char *s2,
                        const char *s3)
{
    char url[160], st[512];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(ps));
    snprintf(st, sizeof st, "store=%s", store);
    setenv("OPENAI_API_KEY", "sk-test-key", 1);
    return test_open("ws", "db.sqlite", "provider=openai", "model=text-embedding-3-small", url, st,
                     s1 ? s1 : "maxResults=6", s2 ? s2 : "maxResults=6", s3 ? s3 : "maxResults=6",
                     NULL);
}

/* Searches and fails the test on an error or a fallback, with the reason. */
static mnemo_results *search_pg(mnemo *m, const char *q, const mnemo_search_opts *so)
{
    mnemo_results *r = NULL;
    if (mnemo_search(m, q, so, &r))
        test_fail(__FILE__, __LINE__, "search: %s", mnemo_errmsg(m));
    const char *reason = NULL;
    if (mnemo_results_fallback(r, &reason))
        test_fail(__FILE__, __LINE__, "fallback: %s", reason);
    return r;
}

/* ---- helpers in isolation ----------------------------------------------- */

TEST(pgsource_redact)
{
    static const char *const cases[][2] = {
        {"postgres://bob:hunter22@db.example:5432/mem", "postgres://bob:***@db.example:5432/mem"},
        {"postgresql://bob:p%40ss@h/db?sslmode=require",
         "postgresql://bob:***@h/db?sslmode=require"},
        {"postgres://bob@h/db", "postgres://bob@h/db"},
        {"host=h user=bob password=hunter22 dbname=x", "host=h user=bob password=*** dbname=x"},
        {"host=h password = 'hun ter\\'22' port=1", "host=h password=*** port=1"},
        {"postgres://h/db?user=bob&password=hunter22&x=1",
         "postgres://h/db?user=bob&password=***&x=1"},
        {"PASSWORD=hunter22", "password=***"},
        {"password authentication failed for user \"bob\"",
         "password authentication failed for user \"bob\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *r = redact(cases[i][0], NULL);
        ASSERT_STR_EQ(r, cases[i][1]);
        free(r);
    }
    char *r = redact("server said: hunter22 is wrong", "hunter22");
    ASSERT_STR_EQ(r, "server said: *** is wrong");
    free(r);
}

TEST(pgsource_identifiers)
{
    ASSERT(dsn_ident_valid("memory_embeddings"));
    ASSERT(dsn_ident_valid("public.memory_embeddings"));
    ASSERT(dsn_ident_valid("_t1"));
    static const char *const bad[] = {
        "",
        "1abc",
        "a-b",
        "a b",
        "a;DROP TABLE x",
        "a\"b",
        "a.b.c",
        ".a",
        "a.",
        "a'--",
        "tab\x01",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (dsn_ident_valid(bad[i]))
            test_fail(__FILE__, __LINE__, "'%s' accepted", bad[i]);
    buf b;
    buf_init(&b, 0);
    pg_quote_ident(&b, "public.memory_embeddings");
    ASSERT_STR_EQ(b.data, "\"public\".\"memory_embeddings\"");
    buf_cleanup(&b);
}

typedef struct kvs {
    char text[1024];
} kvs;

static void collect(void *ud, const char *k, const char *v)
{
    kvs *x = ud;
    size_t n = strlen(x->text);
    snprintf(x->text + n, sizeof x->text - n, "%s=[%s];", k, v);
}

TEST(pgsource_envfile)
{
    test_write("db.env", "# credentials\n"
                         "\n"
                         "PGHOST=127.0.0.1\n"
                         "export PGPORT=5433\n"
                         "PGUSER = 'reader'\n"
                         "PGPASSWORD=\"s3cret #1\"\n"
                         "PGDATABASE=mem # the database\n"
                         "DATABASE_URL=postgres://u:p@h/d\r\n");
    kvs x = {""};
    buf err;
    buf_init(&err, 0);
    ASSERT_OK(pg_envfile_parse(test_path("db.env"), collect, &x, &err));
    ASSERT_STR_EQ(x.text, "PGHOST=[127.0.0.1];PGPORT=[5433];PGUSER=[reader];"
                          "PGPASSWORD=[s3cret #1];PGDATABASE=[mem];"
                          "DATABASE_URL=[postgres://u:p@h/d];");
    /* A malformed line is named by number, never shown: it may be a secret. */
    test_write("bad.env", "PGHOST=h\nhunter22\n");
    buf_reset(&err);
    ASSERT_EQ(pg_envfile_parse(test_path("bad.env"), collect, &x, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "bad.env:2");
    ASSERT_NOT_CONTAINS(err.data, "hunter22");
    buf_reset(&err);
    ASSERT_EQ(pg_envfile_parse(test_path("missing.env"), collect, &x, &err), MNEMO_IO);
    buf_cleanup(&err);
}

TEST(pgsource_config_keys)
{
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    ASSERT_STR_EQ(mnemo_config_get(c, "store"), "{\"backend\":\"sqlite\"}");
    ASSERT_STR_EQ(mnemo_config_get(c, "sourcePriorities"), "memory_type_priorities");
    ASSERT_OK(mnemo_config_set(c, "store", "postgres://bob:hunter22@h/db", "flag", NULL));
    ASSERT_STR_EQ(mnemo_config_get(c, "store"),
                  "{\"backend\":\"postgres\",\"dsn\":\"postgres://bob:hunter22@h/db\"}");
    ASSERT_OK(mnemo_config_set(c, "store", "{\"dsn\":\"host=h password=hunter22\"}", "t", NULL));
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"backend\":\"postgres\"");
    char *j = mnemo_config_json(c, 0);
    ASSERT_CONTAINS(j, "password=***");
    ASSERT_NOT_CONTAINS(j, "hunter22");
    mnemo_free(j);
    char *err = NULL;
    ASSERT_EQ(mnemo_config_set(c, "store", "{\"backend\":\"mysql\"}", "t", &err), MNEMO_INVALID);
    mnemo_free(err);
    err = NULL;
    ASSERT_EQ(mnemo_config_set(c, "store", "mysql://h/db", "t", &err), MNEMO_INVALID);
    mnemo_free(err);
    ASSERT_OK(mnemo_config_set(c, "sourceTable", "public.memory_embeddings", "t", NULL));
    ASSERT_OK(mnemo_config_set(c, "sourceColumns", "{\"content\":\"body\",\"id\":\"mem_id\"}", "t",
                               NULL));
    static const char *const inject[][2] = {
        {"sourceTable", "memory_embeddings; DROP TABLE memory_embeddings"},
        {"sourceTable", "memory_embeddings\"--"},
        {"sourceTable", "a.b.c"},
        {"sourcePriorities", "p WHERE 1=1; --"},
        {"sourceColumns", "{\"content\":\"body) FROM pg_shadow --\"}"},
        {"sourceColumns", "{\"content\":\"t.body\"}"},
        {"sourceColumns", "{\"password\":\"x\"}"},
        {"sourceColumns", "{\"id\":1}"},
    };
    for (size_t i = 0; i < sizeof inject / sizeof *inject; i++) {
        err = NULL;
        if (mnemo_config_set(c, inject[i][0], inject[i][1], "t", &err) != MNEMO_INVALID)
            test_fail(__FILE__, __LINE__, "%s=%s accepted", inject[i][0], inject[i][1]);
        ASSERT(err != NULL);
        mnemo_free(err);
    }
    ASSERT_STR_EQ(mnemo_config_get(c, "sourceTable"), "public.memory_embeddings");
    /* The file form takes the object as it is. */
    test_write("mnemo.json", "{\"store\":{\"backend\":\"postgres\",\"dsn\":\"postgres://h/db\"},"
                             "\"pgEnvFile\":\"db.env\",\"sourceTable\":\"memory_embeddings\","
                             "\"sourceColumns\":{\"embedding\":\"vec\"}}");
    ASSERT_OK(mnemo_config_load_file(c, test_path("mnemo.json"), NULL));
    ASSERT_STR_EQ(mnemo_config_get(c, "sourceColumns"), "{\"embedding\":\"vec\"}");
    ASSERT_STR_EQ(mnemo_config_get(c, "pgEnvFile"), "db.env");
    mnemo_config_free(c);
}

/* ---- end to end against PGlite + pgvector -------------------------------- */

TEST(pgsource_pglite_search)
{
    pg_server srv;
    pglite_start(&srv);
    fixture fx = load_rows(&srv);
    ASSERT_NEAR(fx.sim[0], 1.0, 1e-5);
    ps_options o = {.dims = DIMS};
    provider_server *ps = ps_start(&o);
    local_notes();

    /* Priorities reorder: close (0.9 x 0.90) > mid (0.6 x 1) > exact (1 x 0.35).
     */
    mnemo *m = open_with(ps, pg_url(&srv), "sourceTable=memory_embeddings", "minScore=0", NULL);
    mnemo_results *r = NULL;
    r = search_pg(m, QUERY, NULL);
    ASSERT_STR_EQ(mnemo_results_mode(r), "vector");
    ASSERT(mnemo_results_fallback(r, NULL) == NULL);
    ASSERT(mnemo_results_count(r) >= 3);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "postgres:memory_embeddings#2");
    ASSERT_STR_EQ(mnemo_results_get(r, 1)->path, "postgres:memory_embeddings#3");
    ASSERT_STR_EQ(mnemo_results_get(r, 2)->path, "postgres:memory_embeddings#1");
    ASSERT_NEAR(mnemo_results_get(r, 0)->score, fx.sim[1] * 0.9, 1e-3);
    ASSERT_NEAR(mnemo_results_get(r, 1)->score, fx.sim[2], 1e-3);
    ASSERT_NEAR(mnemo_results_get(r, 2)->score, 0.35, 1e-3);
    const mnemo_result *top = mnemo_results_get(r, 0);
    ASSERT_EQ(top->start_line, 1);
    ASSERT_EQ(top->end_line, 2);
    ASSERT_STR_EQ(top->source, "value");
    ASSERT_STR_EQ(top->citation, "postgres:memory_embeddings#2");
    ASSERT_STR_EQ(top->snippet, "Database deploys run on Tuesdays.\nThe DBA approves each one.");
    char *j = mnemo_results_json(r);
    ASSERT_CONTAINS(j, "{\"results\":[{\"path\":\"postgres:memory_embeddings#2\","
                       "\"startLine\":1,"
                       "\"endLine\":2,\"score\":");
    ASSERT_CONTAINS(j, "\"source\":\"value\",\"citation\":\"postgres:memory_embeddings#2\"}");
    ASSERT_CONTAINS(j, "\"mode\":\"vector\",\"provider\":\"openai\","
                       "\"model\":\"text-embedding-3-small\"");
    ASSERT_NOT_CONTAINS(j, "fallback");
    mnemo_free(j);
    mnemo_results_free(r);

    /* maxResults and minScore, from the options and from the config. */
    mnemo_search_opts so;
    mnemo_search_opts_init(&so);
    so.max_results = 1;
    r = search_pg(m, QUERY, &so);
    ASSERT_EQ(mnemo_results_count(r), 1);
    mnemo_results_free(r);
    mnemo_search_opts_init(&so);
    so.min_score = 0.5;
    r = search_pg(m, QUERY, &so);
    ASSERT_EQ(mnemo_results_count(r), 2);
    mnemo_results_free(r);
    /* SQL in the query text is only ever embedded. */
    r = search_pg(m, "'; DROP TABLE memory_embeddings; --", NULL);
    ASSERT(mnemo_results_fallback(r, NULL) == NULL);
    mnemo_results_free(r);
    mnemo_close(m);
    char *out = NULL;
    ASSERT_EQ(pg_psql(&srv, "SELECT count(*) FROM memory_embeddings", &out), 0);
    ASSERT_STR_EQ(out, "4\n");
    free(out);

    /* Without priorities: similarity alone. The default minScore (0.35). */
    m = open_with(ps, pg_url(&srv), "sourceTable=memory_embeddings", "sourcePriorities=", NULL);
    r = search_pg(m, QUERY, NULL);
    ASSERT_EQ(mnemo_results_count(r), 3);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "postgres:memory_embeddings#1");
    ASSERT_NEAR(mnemo_results_get(r, 0)->score, 1.0, 1e-4);
    mnemo_results_free(r);
    mnemo_close(m);

    /* A priorities table that does not exist weighs nothing. */
    m = open_with(ps, pg_url(&srv), "sourceTable=memory_embeddings", "sourcePriorities=nope",
                  "maxResults=1");
    r = search_pg(m, QUERY, NULL);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "postgres:memory_embeddings#1");
    mnemo_results_free(r);
    mnemo_close(m);

    /* Other column names, schema-qualified table. */
    m = open_with(ps, pg_url(&srv), "sourceTable=public.agent_memories",
                  "sourceColumns={\"id\":\"mem_id\",\"content\":\"body\","
                  "\"source_type\":\"kind\","
                  "\"embedding\":\"vec\"}",
                  "minScore=0");
    r = search_pg(m, QUERY, NULL);
    ASSERT(mnemo_results_fallback(r, NULL) == NULL);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "postgres:public.agent_memories#m-2");
    mnemo_results_free(r);
    mnemo_close(m);

    /* A missing table: the local (SQLite) index answers, and says why. The DSN's
     * password never shows. */
    test_sync(m = open_with(ps, "sqlite", NULL, NULL, NULL));
    mnemo_close(m);
    m = open_with(ps, pg_url(&srv), "sourceTable=no_such_table", NULL, NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    const char *reason = NULL;
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "table no_such_table not found");
    ASSERT(mnemo_results_count(r) >= 1);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "MEMORY.md");
    j = mnemo_results_json(r);
    ASSERT_CONTAINS(j, "\"fallback\":{\"from\":\"postgres\",\"reason\":\"table no_such_table");
    ASSERT_NOT_CONTAINS(j, PG_TEST_SUPERPASS);
    mnemo_free(j);
    mnemo_results_free(r);
    mnemo_close(m);

    /* A missing column: the server's message, and the fallback. */
    m = open_with(ps, pg_url(&srv), "sourceTable=memory_embeddings",
                  "sourceColumns={\"content\":\"body\"}", NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "body");
    mnemo_results_free(r);
    mnemo_close(m);

    /* Another model's dimensions: a clear reason. */
    ps_options o8 = {.dims = 8};
    provider_server *ps8 = ps_start(&o8);
    m = open_with(ps8, pg_url(&srv), "sourceTable=memory_embeddings", "model=small-model", NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "have 1536 dimensions, the query's 8 (openai small-model)");
    mnemo_results_free(r);
    mnemo_close(m);
    ps_stop(ps8);

    /* The CLI: --store and --source-table. */
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(ps));
    char *err = NULL;
    int code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "search",
                        "--store", pg_url(&srv), "--source-table", "memory_embeddings", "--json",
                        "--set", "provider=openai", "--set", "model=text-embedding-3-small",
                        "--set", url, "--min-score", "0", "-n", "2", QUERY, NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out, "{\"results\":[{\"kind\":\"note\",\"path\":\"postgres:memory_embeddings#2\"");
    ASSERT_CONTAINS(out, "\"path\":\"postgres:memory_embeddings#3\"");
    ASSERT_NOT_CONTAINS(out, "#1\"");
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "search", "--store",
                    pg_url(&srv), "--source-table", "gone", "--set", "provider=openai", "--set",
                    url, "database", NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(err, "PostgreSQL could not answer (table gone not found)");
    ASSERT_CONTAINS(out, "MEMORY.md");
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "search", "--store",
                    pg_url(&srv), "--source-table", "x;DROP TABLE y", "q", NULL);
    ASSERT_EQ(code, 2);
    ASSERT_CONTAINS(err, "is not a table name");
    free(out);
    free(err);

    ps_stop(ps);
    pg_stop(&srv);
}

/* ---- the fallback when the server is down ---------------------------------
 */

TEST(pgsource_fallback_server_down)
{
    ps_options o = {.dims = DIMS};
    provider_server *ps = ps_start(&o);
    local_notes();
    char dsn[256];
    snprintf(dsn, sizeof dsn, "postgres://bob:hunter22secret@127.0.0.1:%d/mem", pg_free_port());
    mnemo *m = open_with(ps, "sqlite", NULL, NULL, NULL);
    test_sync(m);
    mnemo_close(m);
    m = open_with(ps, dsn, "sourceTable=memory_embeddings", NULL, NULL);
    mnemo_results *r = NULL;
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    const char *reason = NULL;
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "cannot connect to PostgreSQL");
    ASSERT_NOT_CONTAINS(reason, "hunter22secret");
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "MEMORY.md");
    char *j = mnemo_results_json(r);
    ASSERT_CONTAINS(j, "\"fallback\":{\"from\":\"postgres\",\"reason\":\"cannot connect");
    ASSERT_NOT_CONTAINS(j, "hunter22secret");
    mnemo_free(j);
    mnemo_results_free(r);
    /* The same handle tries again on the next search. */
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, NULL), "postgres");
    mnemo_results_free(r);
    mnemo_close(m);

    /* A password in a key=value DSN and a malformed URI are redacted too. */
    m = open_with(ps, "{\"dsn\":\"host=127.0.0.1 port=1 password=hunter22secret bogus=1\"}",
                  "sourceTable=memory_embeddings", NULL, NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_NOT_CONTAINS(reason, "hunter22secret");
    mnemo_results_free(r);
    mnemo_close(m);
    m = open_with(ps, "postgres://bob:hunter22secret@127.0.0.1:1/mem?bogus=hunter22secret",
                  "sourceTable=memory_embeddings", NULL, NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    mnemo_results_fallback(r, &reason);
    ASSERT_NOT_CONTAINS(reason, "hunter22secret");
    mnemo_results_free(r);
    mnemo_close(m);

    /* No provider to embed the query with: the reason says so. */
    m = test_open("ws", "db.sqlite", "provider=none", "sourceTable=memory_embeddings", NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "no embedding provider");
    mnemo_results_free(r);
    mnemo_close(m);
    ps_stop(ps);
}

/* ---- Debian's PostgreSQL 15: env file credentials, no pgvector ------------
 */

TEST(pgsource_debian_envfile)
{
    pg_server srv;
    pg_debian_start(&srv);
    char *out = NULL;
    int rc = pg_psql(&srv,
                     "CREATE ROLE reader LOGIN PASSWORD 'R3ader-pw#x';\n"
                     "CREATE DATABASE mem OWNER reader;\n",
                     &out);
    if (rc)
        test_fail(__FILE__, __LINE__, "psql: %s", out ? out : "");
    free(out);
    /* A table of the usual shape, but without pgvector: float8[] vectors. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "\\c postgres://reader:R3ader-pw%%23x@127.0.0.1:%d/mem?sslmode=disable\n"
             "CREATE TABLE memory_embeddings (id serial, content text, source_type "
             "text, "
             "embedding float8[]);\n"
             "INSERT INTO memory_embeddings (content, source_type) VALUES ('x', "
             "'note');\n",
             srv.port);
    rc = pg_psql(&srv, sql, &out);
    if (rc)
        test_fail(__FILE__, __LINE__, "psql: %s", out ? out : "");
    free(out);

    ps_options o = {.dims = DIMS};
    provider_server *ps = ps_start(&o);
    local_notes();
    mnemo *m = open_with(ps, "sqlite", NULL, NULL, NULL);
    test_sync(m);
    mnemo_close(m);

    /* Credentials from the env file: the connection works, and the table
     * is found to lack a pgvector column. */
    char env[512];
    snprintf(env, sizeof env,
             "# mnemo test\nexport PGHOST=127.0.0.1\nPGPORT=%d\nPGUSER='reader'\n"
             "PGPASSWORD=\"R3ader-pw#x\"\nPGDATABASE=mem\nPGSSLMODE=disable\n",
             srv.port);
    test_write("db.env", env);
    char envkey[600];
    snprintf(envkey, sizeof envkey, "pgEnvFile=%s", test_path("db.env"));
    m = open_with(ps, "postgres", envkey, "sourceTable=memory_embeddings", NULL);
    mnemo_results *r = NULL;
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    const char *reason = NULL;
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "column embedding of memory_embeddings is double precision[], not a "
                            "pgvector vector");
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "MEMORY.md");
    mnemo_results_free(r);
    mnemo_close(m);

    /* A wrong password: refused, and the password is not in the reason. */
    snprintf(env, sizeof env,
             "PGHOST=127.0.0.1\nPGPORT=%d\nPGUSER=reader\nPGPASSWORD=Wrong-pw-zz9\n"
             "PGDATABASE=mem\nPGSSLMODE=disable\n",
             srv.port);
    test_write("db.env", env);
    m = open_with(ps, "postgres", envkey, "sourceTable=memory_embeddings", NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "password authentication failed");
    ASSERT_NOT_CONTAINS(reason, "Wrong-pw-zz9");
    mnemo_results_free(r);
    mnemo_close(m);

    /* DATABASE_URL serves when there is no DSN; a relative pgEnvFile is in
     * the workspace. */
    snprintf(env, sizeof env,
             "DATABASE_URL=postgres://reader:R3ader-pw%%23x@127.0.0.1:%d/"
             "mem?sslmode=disable\n",
             srv.port);
    test_write("ws/.env", env);
    m = open_with(ps, "postgres", "pgEnvFile=.env", "sourceTable=memory_embeddings", NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "not a pgvector vector");
    mnemo_results_free(r);
    mnemo_close(m);

    /* The DSN wins over the env file (whose password is wrong here). */
    snprintf(env, sizeof env, "PGUSER=reader\nPGPASSWORD=Wrong-pw-zz9\n");
    test_write("ws/.env", env);
    char dsn2[256];
    snprintf(dsn2, sizeof dsn2,
             "postgres://reader:R3ader-pw%%23x@127.0.0.1:%d/mem?sslmode=disable", srv.port);
    m = open_with(ps, dsn2, "pgEnvFile=.env", "sourceTable=memory_embeddings", NULL);
    ASSERT_OK(mnemo_search(m, "database deploy", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "postgres");
    ASSERT_CONTAINS(reason, "not a pgvector vector");
    mnemo_results_free(r);
    mnemo_close(m);

    /* The session is read-only: nothing mnemo sends can write. */
    char dsn[256];
    snprintf(dsn, sizeof dsn, "postgres://reader:R3ader-pw%%23x@127.0.0.1:%d/mem?sslmode=disable",
             srv.port);
    pg_target t = {dsn, "", 3, 0};
    pg_conn *pc = NULL;
    buf err;
    buf_init(&err, 0);
    ASSERT_OK(pg_connect(&t, 1000, &pc, &err));
    pg_rows *rows = NULL;
    ASSERT_EQ(pg_query(pc, "CREATE TABLE written (x int)", 0, NULL, 1000, &rows, &err), MNEMO_DB);
    ASSERT_CONTAINS(err.data, "read-only transaction");
    /* And bounded: a statement over its timeout is cancelled. */
    buf_reset(&err);
    ASSERT_EQ(pg_query(pc, "SELECT pg_sleep(5)", 0, NULL, 3000, &rows, &err), MNEMO_DB);
    ASSERT_CONTAINS(err.data, "statement timeout");
    buf_reset(&err);
    const char *one[1] = {"41"};
    ASSERT_OK(pg_query(pc, "SELECT $1::int + 1", 1, one, 1000, &rows, &err));
    ASSERT_STR_EQ(pg_value(rows, 0, 0), "42");
    pg_rows_free(rows);
    pg_close(pc);
    buf_cleanup(&err);

    ps_stop(ps);
    pg_stop(&srv);
}
