/*
 * test_pgreplica.c - read replicas (store.readDsns) against real servers:
 * a Debian PostgreSQL 15 primary and a streaming hot standby made from it
 * with pg_basebackup. Writes on the primary found by searches on the
 * replica, a process reading its own writes (replay paused: it falls back
 * to the primary; resumed: it waits for the replica), the replica killed
 * and restarted under a search loop, the primary killed (reads go on,
 * writes fail naming it, nothing acknowledged is lost), and a read DSN
 * whose schema is not mnemo's (skipped, never migrated).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_server.h"
#include "test.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A handle writing to PRIMARY and reading from REPLICA, with up to two
 * more settings. */
static mnemo *open_rep(const pg_server *primary, const pg_server *replica, const char *extra1,
                       const char *extra2)
{
    char store[300], reads[300];
    snprintf(store, sizeof store, "store=%s", pg_url(primary));
    snprintf(reads, sizeof reads, "store.readDsns=%s", pg_url(replica));
    return test_open("ws", "db.sqlite", store, reads, "tenant=team",
                     extra1 ? extra1 : "store.replicaWaitMs=200", extra2, NULL);
}

/* psql's one-line answer, trailing newline removed (caller frees). */
static char *psql_one(const pg_server *s, const char *sql)
{
    char *out = NULL;
    if (pg_psql(s, sql, &out) != 0)
        test_fail(__FILE__, __LINE__, "psql %s: %s", sql, out ? out : "");
    out[strcspn(out, "\n")] = 0;
    return out;
}

/* Waits (5 s at most) until REPLICA has replayed everything PRIMARY wrote
 * so far. */
static void catch_up(const pg_server *primary, const pg_server *replica)
{
    char *lsn = psql_one(primary, "SELECT pg_current_wal_lsn()");
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn", lsn);
    free(lsn);
    for (int i = 0; i < 250; i++) {
        char *t = psql_one(replica, sql);
        int done = !strcmp(t, "t");
        free(t);
        if (done)
            return;
        sleep_ms(20);
    }
    test_fail(__FILE__, __LINE__, "the replica did not catch up in 5 s");
}

static void write_notes(int n, const char *word)
{
    char rel[128], text[512];
    for (int i = 0; i < n; i++) {
        snprintf(rel, sizeof rel, "ws/memory/note-%03d.md", i);
        snprintf(text, sizeof text,
                 "# Note %d\n\nThe %s service passed the deploy checklist on day %d.\n", i, word,
                 i + 1);
        test_write(rel, text);
    }
}

static json_t *status_of(mnemo *m)
{
    char *s = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &s));
    json_t *j = json_loads(s, 0, NULL);
    if (!j)
        test_fail(__FILE__, __LINE__, "status is not JSON: %s", s);
    mnemo_free(s);
    return j;
}

static const char *jstr(json_t *o, const char *path)
{
    /* "a.b.c": nested objects; "replicas.0.state" indexes arrays. */
    char key[64];
    const char *p = path;
    while (o && *p) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        o = json_is_array(o) ? json_array_get(o, strtoul(key, NULL, 10)) : json_object_get(o, key);
        p += n + (p[n] == '.');
    }
    return json_is_string(o) ? json_string_value(o) : json_is_true(o) ? "true"
                                                   : json_is_false(o) ? "false"
                                                                      : "";
}

static int search_count(mnemo *m, const char *q)
{
    mnemo_results *r = NULL;
    if (mnemo_search(m, q, NULL, &r))
        return -1;
    int n = (int)mnemo_results_count(r);
    mnemo_results_free(r);
    return n;
}

static int memory_found(mnemo *m, const char *q, const char *text)
{
    char *out = NULL;
    int rc = mnemo_memory_search(m, q, NULL, &out);
    int found = !rc && out && strstr(out, text);
    mnemo_free(out);
    return rc ? -1 : found;
}

/* Counts the lines of FILE holding NEEDLE. */
static int count_in(const char *file, const char *needle)
{
    char *t = test_read(file, NULL);
    int n = 0;
    for (const char *p = t ? t : ""; (p = strstr(p, needle)); p++)
        n++;
    free(t);
    return n;
}

TEST(pgreplica_writes_on_primary_found_on_replica)
{
    pg_server p, r;
    pg_debian_start_primary(&p);
    pg_debian_start_standby(&r, &p);
    /* The writer knows only the primary. */
    write_notes(5, "billing");
    char store[300];
    snprintf(store, sizeof store, "store=%s", pg_url(&p));
    mnemo *w = test_open("ws", "db.sqlite", store, "tenant=team", NULL);
    ASSERT_EQ(test_sync(w).files_added, 5);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_add(w, "{\"text\":\"The gateway listens on port 7443\"}", &out));
    mnemo_free(out);
    mnemo_close(w);
    catch_up(&p, &r);

    /* A reader with the replica: finds both, and says where it read. */
    mnemo *m = open_rep(&p, &r, NULL, NULL);
    ASSERT_EQ(search_count(m, "billing checklist"), 5);
    ASSERT_EQ(memory_found(m, "gateway port", "port 7443"), 1);
    json_t *st = status_of(m);
    ASSERT_STR_EQ(jstr(st, "reads.server"), "replica");
    ASSERT_STR_EQ(jstr(st, "reads.last.server"), "replica");
    ASSERT_STR_EQ(jstr(st, "reads.last.fellBack"), "false");
    ASSERT_STR_EQ(jstr(st, "reads.primary.state"), "ok");
    ASSERT_STR_EQ(jstr(st, "reads.replicas.0.state"), "ok");
    ASSERT_STR_EQ(jstr(st, "indexed"), "true");
    char *dump = json_dumps(st, JSON_COMPACT);
    ASSERT_NOT_CONTAINS(dump, PG_TEST_SUPERPASS);
    char port[32];
    snprintf(port, sizeof port, "127.0.0.1:%d", r.port);
    ASSERT_CONTAINS(jstr(st, "reads.replicas.0.dsn"), port);
    free(dump);
    json_decref(st);
    mnemo_close(m);

    /* The same through the CLI, the replicas given with --set. */
    char ws[512], dsn[300], reads[320];
    snprintf(ws, sizeof ws, "%s", test_path("ws"));
    snprintf(dsn, sizeof dsn, "%s", pg_url(&p));
    snprintf(reads, sizeof reads, "store.readDsns=%s", pg_url(&r));
    char *err = NULL;
    out = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", ws, "--store", dsn, "--set", reads,
                       "--set", "tenant=team", "search", "--json", "billing", NULL),
              0);
    ASSERT_CONTAINS(out, "note-004.md");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", ws, "--store", dsn, "--set", reads,
                       "--set", "tenant=team", "status", NULL),
              0);
    ASSERT_CONTAINS(out, "reads:      replica");
    ASSERT_CONTAINS(out, port);
    ASSERT_NOT_CONTAINS(out, PG_TEST_SUPERPASS);
    free(out);
    free(err);
    /* The replica is read-only: nothing was written there by hand. */
    ASSERT_EQ(pg_psql(&r, "CREATE TABLE x(i int)", NULL) != 0, 1);
    pg_stop(&r);
    pg_stop(&p);
}

TEST(pgreplica_reads_own_writes)
{
    pg_server p, r;
    pg_debian_start_primary(&p);
    pg_debian_start_standby(&r, &p);
    test_mkdir("ws/memory");
    mnemo *m = open_rep(&p, &r, "store.replicaWaitMs=1000", NULL);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"Release trains leave on Thursdays\"}", &out));
    mnemo_free(out);
    ASSERT_EQ(memory_found(m, "release trains", "Thursdays"), 1);
    catch_up(&p, &r);

    /* Replay paused: the replica never gets the next write, so the
     * writer's read falls back to the primary after the wait and finds it;
     * another process (reading the replica, without writes of its own)
     * does not. */
    free(psql_one(&r, "SELECT pg_wal_replay_pause()"));
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"The canary region is eu-west-3\"}", &out));
    mnemo_free(out);
    ASSERT_EQ(memory_found(m, "canary region", "eu-west-3"), 1);
    json_t *st = status_of(m);
    ASSERT_STR_EQ(jstr(st, "reads.last.server"), "primary");
    ASSERT_STR_EQ(jstr(st, "reads.last.fellBack"), "true");
    ASSERT_CONTAINS(jstr(st, "reads.last.reason"), "had not replayed");
    ASSERT(json_number_value(json_object_get(json_object_get(json_object_get(st, "reads"),
                                                             "last"),
                                             "waitedMs")) >= 900);
    json_decref(st);
    char ws[512], dsn[300], reads[320];
    snprintf(ws, sizeof ws, "%s", test_path("ws"));
    snprintf(dsn, sizeof dsn, "%s", pg_url(&p));
    snprintf(reads, sizeof reads, "store.readDsns=%s", pg_url(&r));
    char *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", ws, "--store", dsn, "--set", reads,
                       "--set", "tenant=team", "memory", "search", "--json", "canary region",
                       NULL),
              0);
    ASSERT_NOT_CONTAINS(out, "eu-west-3");
    free(out);
    free(err);

    /* Replay resumed: the writer's next reads wait for the replica and
     * are served there; a note synced is found at once too. */
    free(psql_one(&r, "SELECT pg_wal_replay_resume()"));
    for (int i = 0; i < 5; i++) {
        char rec[128], q[64], want[64], rel[64], text[128];
        snprintf(rec, sizeof rec, "{\"text\":\"Rotation %d is owned by team zulu%d\"}", i, i);
        snprintf(q, sizeof q, "zulu%d", i);
        snprintf(want, sizeof want, "team zulu%d", i);
        ASSERT_OK(mnemo_memory_add(m, rec, &out));
        mnemo_free(out);
        ASSERT_EQ(memory_found(m, q, want), 1);
        snprintf(rel, sizeof rel, "ws/memory/n%d.md", i);
        snprintf(text, sizeof text, "Incident %d was closed by kilo%d.\n", i, i);
        test_write(rel, text);
        test_sync(m);
        snprintf(q, sizeof q, "kilo%d", i);
        ASSERT_EQ(search_count(m, q), 1);
    }
    st = status_of(m);
    ASSERT_STR_EQ(jstr(st, "reads.last.server"), "replica");
    ASSERT_STR_EQ(jstr(st, "reads.last.fellBack"), "false");
    json_decref(st);
    mnemo_close(m);
    pg_stop(&r);
    pg_stop(&p);
}

typedef struct killer {
    pg_server *s;
    int after_ms;
} killer;

static void *kill_later(void *ud)
{
    killer *k = ud;
    sleep_ms(k->after_ms);
    pg_debian_kill(k->s);
    return NULL;
}

TEST(pgreplica_replica_restarted_under_search_loop)
{
    pg_server p, r;
    pg_debian_start_primary(&p);
    pg_debian_start_standby(&r, &p);
    write_notes(20, "ledger");
    mnemo *m = open_rep(&p, &r, "store.replicaRetryMs=200", NULL);
    test_sync(m);
    /* Warnings go to stderr: kept in a file for the loop. */
    fflush(stderr);
    int saved = dup(2);
    FILE *log = fopen(test_path("stderr.log"), "w");
    ASSERT(log && saved >= 0);
    dup2(fileno(log), 2);
    int failed = 0, searches = 0;
    char first_error[512] = "";
    /* Searches while the replica is killed under them ... */
    pthread_t th;
    killer k = {&r, 150};
    ASSERT_EQ(pthread_create(&th, NULL, kill_later, &k), 0);
    for (int i = 0; i < 60; i++, searches++) {
        if (search_count(m, "ledger checklist") != 6 && !failed++)
            snprintf(first_error, sizeof first_error, "%s", mnemo_errmsg(m));
        sleep_ms(5);
    }
    pthread_join(th, NULL);
    /* ... while it is down (past its back-off: tried again, still down) ... */
    for (int i = 0; i < 40; i++, searches++) {
        if (search_count(m, "ledger checklist") != 6 && !failed++)
            snprintf(first_error, sizeof first_error, "%s", mnemo_errmsg(m));
        sleep_ms(10);
    }
    json_t *st = status_of(m);
    char down_state[32], down_server[32];
    snprintf(down_state, sizeof down_state, "%s", jstr(st, "reads.replicas.0.state"));
    snprintf(down_server, sizeof down_server, "%s", jstr(st, "reads.server"));
    json_decref(st);
    /* ... and after it is back. */
    pg_debian_resume(&r);
    int back = 0;
    for (int i = 0; i < 200 && !back; i++, searches++) {
        if (search_count(m, "ledger checklist") != 6 && !failed++)
            snprintf(first_error, sizeof first_error, "%s", mnemo_errmsg(m));
        st = status_of(m);
        back = !strcmp(jstr(st, "reads.last.server"), "replica");
        json_decref(st);
        sleep_ms(20);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(log);
    if (failed)
        test_fail(__FILE__, __LINE__, "%d of %d searches failed, first: %s", failed, searches,
                  first_error);
    ASSERT_STR_EQ(down_state, "down");
    ASSERT_STR_EQ(down_server, "primary");
    ASSERT_EQ(back, 1);
    /* One warning for the whole outage, one note when it came back. */
    if (count_in(test_path("stderr.log"), "is skipped") != 1 ||
        count_in(test_path("stderr.log"), "is back") != 1)
        test_fail(__FILE__, __LINE__, "expected one warning and one note:\n%s",
                  test_read(test_path("stderr.log"), NULL));
    char *text = test_read(test_path("stderr.log"), NULL);
    ASSERT_NOT_CONTAINS(text, PG_TEST_SUPERPASS);
    free(text);
    st = status_of(m);
    ASSERT_STR_EQ(jstr(st, "reads.replicas.0.state"), "ok");
    json_decref(st);
    mnemo_close(m);
    pg_stop(&r);
    pg_stop(&p);
}

TEST(pgreplica_primary_killed)
{
    pg_server p, r;
    pg_debian_start_primary(&p);
    pg_debian_start_standby(&r, &p);
    write_notes(10, "archive");
    mnemo *m = open_rep(&p, &r, NULL, NULL);
    test_sync(m);
    char *out = NULL;
    for (int i = 0; i < 3; i++) {
        char rec[128];
        snprintf(rec, sizeof rec, "{\"text\":\"Acknowledged fact %d about quokkas\"}", i);
        ASSERT_OK(mnemo_memory_add(m, rec, &out));
        mnemo_free(out);
    }
    catch_up(&p, &r);
    pg_debian_kill(&p);

    /* Reads go on from the replica. */
    ASSERT_EQ(search_count(m, "archive checklist"), 6);
    ASSERT_EQ(memory_found(m, "quokkas", "Acknowledged fact 2"), 1);
    /* Writes fail, naming the primary, without its password. */
    int rc = mnemo_memory_add(m, "{\"text\":\"Lost while the primary was down\"}", &out);
    ASSERT_EQ(rc, MNEMO_UNAVAILABLE);
    char port[32];
    snprintf(port, sizeof port, "127.0.0.1:%d", p.port);
    ASSERT_CONTAINS(mnemo_errmsg(m), "writes go to the primary");
    ASSERT_CONTAINS(mnemo_errmsg(m), port);
    ASSERT_NOT_CONTAINS(mnemo_errmsg(m), PG_TEST_SUPERPASS);
    test_write("ws/memory/late.md", "Written while the primary was down.\n");
    mnemo_sync_stats ss;
    ASSERT_EQ(mnemo_sync(m, NULL, &ss), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(mnemo_errmsg(m), "writes go to the primary");
    json_t *st = status_of(m);
    ASSERT_STR_EQ(jstr(st, "reads.primary.state"), "down");
    ASSERT_STR_EQ(jstr(st, "reads.server"), "replica");
    ASSERT_STR_EQ(jstr(st, "reads.replicas.0.state"), "ok");
    json_decref(st);
    /* The CLI likewise: search works, memory add fails clearly. */
    char ws[512], dsn[300], reads[320];
    snprintf(ws, sizeof ws, "%s", test_path("ws"));
    snprintf(dsn, sizeof dsn, "%s", pg_url(&p));
    snprintf(reads, sizeof reads, "store.readDsns=%s", pg_url(&r));
    char *err = NULL;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", ws, "--store", dsn, "--set", reads,
                       "--set", "tenant=team", "search", "--json", "archive", NULL),
              0);
    ASSERT_CONTAINS(out, "note-000.md");
    free(out);
    free(err);
    ASSERT(test_cli(&out, &err, NULL, "--workspace", ws, "--store", dsn, "--set", reads, "--set",
                    "tenant=team", "memory", "add", "Also lost", NULL) != 0);
    ASSERT_CONTAINS(err, "writes go to the primary");
    ASSERT_CONTAINS(err, port);
    ASSERT_NOT_CONTAINS(err, PG_TEST_SUPERPASS);
    free(out);
    free(err);

    /* The primary back: writes work, and everything acknowledged is there. */
    pg_debian_resume(&p);
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"Written after the primary returned\"}", &out));
    mnemo_free(out);
    char *n = psql_one(&p, "SELECT count(*) FROM mnemo_memories WHERE tenant = 'team'");
    ASSERT_STR_EQ(n, "4");
    free(n);
    n = psql_one(&p, "SELECT count(*) FROM mnemo_memories WHERE text LIKE '%lost%' OR text "
                     "LIKE '%Lost%'");
    ASSERT_STR_EQ(n, "0");
    free(n);
    n = psql_one(&p, "SELECT count(*) FROM mnemo_files WHERE tenant = 'team'");
    ASSERT_STR_EQ(n, "10");
    free(n);
    ASSERT_EQ(memory_found(m, "returned", "after the primary returned"), 1);
    ASSERT_EQ(test_sync(m).files_added, 1);
    mnemo_close(m);
    pg_stop(&r);
    pg_stop(&p);
}

TEST(pgreplica_foreign_read_dsn_skipped_never_migrated)
{
    /* A read DSN that is no replica of the primary: a fresh server without
     * mnemo's schema. It is skipped (schema version 0), reads go to the
     * primary, and mnemo never creates its tables there. */
    pg_server p, other;
    pg_debian_start(&p);
    pg_debian_start(&other);
    write_notes(3, "harbor");
    fflush(stderr);
    int saved = dup(2);
    FILE *log = fopen(test_path("stderr.log"), "w");
    ASSERT(log && saved >= 0);
    dup2(fileno(log), 2);
    mnemo *m = open_rep(&p, &other, NULL, NULL);
    test_sync(m);
    int n1 = search_count(m, "harbor"), n2 = search_count(m, "harbor checklist");
    json_t *st = status_of(m);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(log);
    ASSERT_EQ(n1, 3);
    ASSERT_EQ(n2, 3);
    ASSERT_STR_EQ(jstr(st, "reads.server"), "primary");
    ASSERT_STR_EQ(jstr(st, "reads.replicas.0.state"), "down");
    ASSERT_CONTAINS(jstr(st, "reads.replicas.0.reason"), "schema version 0");
    json_decref(st);
    ASSERT_EQ(count_in(test_path("stderr.log"), "is skipped"), 1);
    char *t = psql_one(&other, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'mnemo%'");
    ASSERT_STR_EQ(t, "0");
    free(t);
    mnemo_close(m);
    pg_stop(&other);
    pg_stop(&p);
}

TEST(pgreplica_config_keys)
{
    mnemo_config *c;
    ASSERT_OK(mnemo_config_new(&c));
    ASSERT_OK(mnemo_config_set(c, "store", "postgres://bob:hunter22@p/db", "flag", NULL));
    /* One field at a time, the others kept: a comma-separated list ... */
    ASSERT_OK(mnemo_config_set(c, "store.readDsns",
                               "postgres://bob:hunter22@r1/db, postgres://r2/db", "flag", NULL));
    ASSERT_OK(mnemo_config_set(c, "store.replicaWaitMs", "50", "flag", NULL));
    ASSERT_STR_EQ(mnemo_config_get(c, "store"),
                  "{\"backend\":\"postgres\",\"dsn\":\"postgres://bob:hunter22@p/db\","
                  "\"readDsns\":[\"postgres://bob:hunter22@r1/db\",\"postgres://r2/db\"],"
                  "\"replicaWaitMs\":50}");
    /* ... or a JSON array, for a DSN that holds a comma. */
    ASSERT_OK(mnemo_config_set(c, "store.readDsns", "[\"postgres://r1,r2/db\"]", "flag", NULL));
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"readDsns\":[\"postgres://r1,r2/db\"]");
    /* The object form, numbers as numbers. */
    ASSERT_OK(mnemo_config_set(c, "store",
                               "{\"dsn\":\"postgres://p/db\",\"readDsns\":[\"host=r "
                               "password=hunter22\"],\"replicaMaxLagMs\":2500,"
                               "\"replicaRetryMs\":\"100\"}",
                               "t", NULL));
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"replicaMaxLagMs\":2500");
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"replicaRetryMs\":100");
    char *j = mnemo_config_json(c, 0);
    ASSERT_CONTAINS(j, "password=***");
    ASSERT_NOT_CONTAINS(j, "hunter22");
    mnemo_free(j);
    static const char *const bad[][2] = {
        {"store.replicaWaitMs", "-1"},
        {"store.replicaWaitMs", "soon"},
        {"store.replicaMaxLagMs", "1.5"},
        {"store.readDsns", "[1]"},
        {"store.readDsns", "[\"a\""},
        {"store", "{\"readDsns\":{\"a\":\"b\"}}"},
        {"store", "{\"replicas\":[]}"},
        {"store.nothing", "x"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *err = NULL;
        if (mnemo_config_set(c, bad[i][0], bad[i][1], "t", &err) != MNEMO_INVALID)
            test_fail(__FILE__, __LINE__, "%s=%s accepted", bad[i][0], bad[i][1]);
        ASSERT(err != NULL);
        mnemo_free(err);
    }
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"replicaMaxLagMs\":2500");
    /* The file form. */
    test_write("mnemo.json", "{\"store\":{\"backend\":\"postgres\",\"dsn\":\"postgres://p/db\","
                             "\"readDsns\":[\"postgres://r/db\"],\"replicaWaitMs\":0}}");
    ASSERT_OK(mnemo_config_load_file(c, test_path("mnemo.json"), NULL));
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"readDsns\":[\"postgres://r/db\"]");
    ASSERT_CONTAINS(mnemo_config_get(c, "store"), "\"replicaWaitMs\":0");
    mnemo_config_free(c);
}
