/*
 * test_pgbackend.c - the PostgreSQL backend as a whole, against real
 * servers: two writers and several readers at once, the server killed and
 * restarted during a sync, concurrent first use (migrations run once),
 * tenants, a schema newer than the build, a dead server, and the CLI.
 * The behaviour shared with SQLite (sync, search, memories, filters) is
 * tested once for every backend in test_pgstore.c and test_pgmem.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pg_server.h"
#include "store/postgres/pgint.h"
#include "test.h"
#include "text/tok.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static mnemo *open_pg(const pg_server *s, const char *ws, const char *tenant)
{
    char store[300], tn[200];
    snprintf(store, sizeof store, "store=%s", pg_url(s));
    snprintf(tn, sizeof tn, "tenant=%s", tenant ? tenant : "");
    return test_open(ws, "db.sqlite", store, tn, NULL);
}

/* The number in the first row of psql's unaligned output. */
static long psql_count(const pg_server *s, const char *sql)
{
    char *out = NULL;
    if (pg_psql(s, sql, &out) != 0)
        test_fail(__FILE__, __LINE__, "psql %s: %s", sql, out ? out : "");
    long n = strtol(out, NULL, 10);
    free(out);
    return n;
}

static void write_notes(const char *ws, int from, int n, const char *word)
{
    char rel[256], text[512];
    for (int i = from; i < from + n; i++) {
        snprintf(rel, sizeof rel, "%s/memory/note-%05d.md", ws, i);
        snprintf(text, sizeof text,
                 "# Note %d\n\nThe %s service was checked on day %d; note number %d "
                 "mentions token%d and the deploy checklist.\n",
                 i, word, i % 28 + 1, i, i);
        test_write(rel, text);
    }
}

static int search_count(mnemo *m, const char *q)
{
    mnemo_results *r = NULL;
    int rc = mnemo_search(m, q, NULL, &r);
    if (rc)
        return -1;
    int n = (int)mnemo_results_count(r);
    mnemo_results_free(r);
    return n;
}

/* A child: WRITER adds notes and memories and syncs after each note;
 * otherwise searches until the writers are done. Exit 0 when every call
 * succeeded. */
static void child(const pg_server *s, int writer, char tag)
{
    mnemo *m = open_pg(s, "ws", "team");
    int bad = 0;
    for (int i = 0; i < 12 && !bad; i++) {
        if (writer) {
            char rel[128], text[256], rec[256];
            snprintf(rel, sizeof rel, "ws/memory/w%c-%02d.md", tag, i);
            snprintf(text, sizeof text, "Writer %c wrote zebra%c%d today.\n", tag, tag, i);
            test_write(rel, text);
            mnemo_sync_stats st;
            if (mnemo_sync(m, NULL, &st)) {
                fprintf(stderr, "writer %c sync: %s\n", tag, mnemo_errmsg(m));
                bad = 1;
            }
            snprintf(rec, sizeof rec, "{\"text\":\"Writer %c fact number %d about giraffes\"}",
                     tag, i);
            char *out = NULL;
            if (mnemo_memory_add(m, rec, &out)) {
                fprintf(stderr, "writer %c add: %s\n", tag, mnemo_errmsg(m));
                bad = 1;
            }
            mnemo_free(out);
        } else {
            if (search_count(m, "deploy checklist") < 0) {
                fprintf(stderr, "reader search: %s\n", mnemo_errmsg(m));
                bad = 1;
            }
            char *out = NULL;
            if (mnemo_memory_search(m, "giraffes", NULL, &out)) {
                fprintf(stderr, "reader memory search: %s\n", mnemo_errmsg(m));
                bad = 1;
            }
            mnemo_free(out);
        }
    }
    mnemo_close(m);
    _exit(bad);
}

TEST(pgbackend_two_writers_three_readers)
{
    pg_server s;
    pg_debian_start(&s);
    write_notes("ws", 0, 200, "billing");
    mnemo *m = open_pg(&s, "ws", "team");
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.files_added, 200);
    pid_t pids[5];
    for (int i = 0; i < 5; i++) {
        pids[i] = fork();
        ASSERT(pids[i] >= 0);
        if (pids[i] == 0)
            child(&s, i < 2, (char)('A' + i));
    }
    for (int i = 0; i < 5; i++) {
        int status;
        ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            test_fail(__FILE__, __LINE__, "child %d failed (status %d)", i, status);
    }
    /* Each writer synced after its last note: nothing is left to do. */
    st = test_sync(m);
    ASSERT_EQ(st.files_seen, 224);
    ASSERT_EQ(st.files_added + st.files_changed + st.files_removed, 0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files WHERE tenant = 'team'"), 224);
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 12; i++) {
            char q[32];
            snprintf(q, sizeof q, "zebra%c%d", 'A' + w, i);
            if (search_count(m, q) < 1)
                test_fail(__FILE__, __LINE__, "%s not found", q);
        }
    /* Every memory both writers added is there, once. */
    char *out = NULL;
    ASSERT_OK(mnemo_memory_list(m, "{\"limit\":100,\"type\":\"all\"}", &out));
    ASSERT_CONTAINS(out, "\"total\":24");
    ASSERT_CONTAINS(out, "Writer A fact number 11 about giraffes");
    ASSERT_CONTAINS(out, "Writer B fact number 0 about giraffes");
    mnemo_free(out);
    /* Chunk counts agree with the files that own them. */
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files f WHERE f.nchunks <> "
                             "(SELECT count(*) FROM mnemo_chunks c WHERE c.tenant = f.tenant "
                             "AND c.file_id = f.id)"),
              0);
    mnemo_close(m);
    pg_stop(&s);
}

/* The child's sync stops once past 500 files (two commits made, a third
 * open) until the server has been restarted under it: the restart lands
 * mid-sync however fast the machine is. */
static int midway[2], resume[2];

static void pause_midway(void *ud, const mnemo_progress *p)
{
    int *told = ud;
    char c = 1;
    if (!*told && !strcmp(p->phase, "index") && p->done >= 500) {
        *told = 1;
        if (write(midway[1], &c, 1) != 1 || read(resume[0], &c, 1) != 1)
            _exit(30);
    }
}

TEST(pgbackend_server_restart_during_sync)
{
    pg_server s;
    pg_debian_start(&s);
    test_mkdir("ws/memory");
    mnemo *m = open_pg(&s, "ws", NULL);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"The staging password rotates monthly\"}", &out));
    mnemo_free(out);
    write_notes("ws", 0, 3000, "ledger");
    ASSERT(pipe(midway) == 0 && pipe(resume) == 0);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        mnemo *c = open_pg(&s, "ws", NULL);
        mnemo_sync_stats st;
        int told = 0;
        mnemo_sync_opts o = {0, pause_midway, &told};
        int rc = mnemo_sync(c, &o, &st);
        mnemo_close(c);
        _exit(rc == MNEMO_OK ? 0 : rc == MNEMO_UNAVAILABLE || rc == MNEMO_DB ? 10 : 20);
    }
    /* Once the sync is writing, the server restarted under it (a child
     * that ends without pausing closes the pipe: the read fails). */
    close(midway[1]);
    close(resume[0]);
    char c = 0;
    ASSERT_EQ(read(midway[0], &c, 1), 1);
    long seen = 0;
    char *o = NULL;
    if (pg_psql(&s, "SELECT count(*) FROM mnemo_files", &o) == 0)
        seen = strtol(o, NULL, 10);
    free(o);
    pg_debian_restart(&s, 200);
    ASSERT_EQ(write(resume[1], &c, 1), 1);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    close(midway[0]);
    close(resume[1]);
    ASSERT(WIFEXITED(status));
    /* The server went away after the first files were committed and long
     * before the last: the sync failed with a connection error. */
    ASSERT(seen > 0 && seen < 3000);
    ASSERT_EQ(WEXITSTATUS(status), 10);

    /* The handle opened before the restart works again (a lost connection
     * is reopened), and the next sync completes what was left. */
    mnemo_sync_stats st;
    int rc = mnemo_sync(m, NULL, &st);
    if (rc)
        rc = mnemo_sync(m, NULL, &st);
    if (rc)
        test_fail(__FILE__, __LINE__, "sync after restart: %s", mnemo_errmsg(m));
    ASSERT_EQ(st.files_seen, 3000);
    st = test_sync(m);
    ASSERT_EQ(st.files_added + st.files_changed + st.files_removed, 0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files"), 3000);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files f WHERE f.nchunks <> "
                             "(SELECT count(*) FROM mnemo_chunks c WHERE c.tenant = f.tenant "
                             "AND c.file_id = f.id)"),
              0);
    ASSERT(search_count(m, "token2999") >= 1);
    ASSERT(search_count(m, "token0") >= 1);
    /* The memory stored before the restart survived. */
    ASSERT_OK(mnemo_memory_search(m, "staging password", NULL, &out));
    ASSERT_CONTAINS(out, "rotates monthly");
    mnemo_free(out);
    mnemo_close(m);
    pg_stop(&s);
}

TEST(pgbackend_first_use_migrates_once)
{
    pg_server s;
    pg_debian_start(&s);
    write_notes("ws", 0, 20, "atlas");
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        ASSERT(pids[i] >= 0);
        if (pids[i] == 0) {
            mnemo *c = open_pg(&s, "ws", "shared");
            mnemo_sync_stats st;
            int rc = mnemo_sync(c, NULL, &st);
            if (rc)
                fprintf(stderr, "sync %d: %s\n", i, mnemo_errmsg(c));
            mnemo_close(c);
            _exit(rc != 0);
        }
    }
    for (int i = 0; i < 4; i++) {
        int status;
        ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
        ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char *out = NULL;
    ASSERT_EQ(pg_psql(&s, "SELECT string_agg(version::text, ',' ORDER BY version) "
                          "FROM mnemo_migrations",
                      &out),
              0);
    ASSERT_CONTAINS(out, "1,2");
    free(out);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files WHERE tenant = 'shared'"), 20);
    pg_stop(&s);
}

TEST(pgbackend_tenants_do_not_mix)
{
    pg_server s;
    pg_debian_start(&s);
    test_write("one/memory/a.md", "The aurora project ships in March.\n");
    test_write("two/memory/b.md", "The borealis project ships in May.\n");
    /* Default tenants: host and workspace, so the two never mix. */
    mnemo *a = open_pg(&s, "one", NULL), *b = open_pg(&s, "two", NULL);
    test_sync(a);
    test_sync(b);
    ASSERT_EQ(search_count(a, "aurora"), 1);
    ASSERT_EQ(search_count(b, "aurora"), 0);
    ASSERT_EQ(search_count(b, "borealis"), 1);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_add(a, "{\"text\":\"Ana prefers tea\"}", &out));
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_search(b, "tea", NULL, &out));
    ASSERT_NOT_CONTAINS(out, "Ana prefers tea");
    mnemo_free(out);
    mnemo_close(a);
    mnemo_close(b);
    /* Asked to share: the same tenant sees the same memories. */
    a = open_pg(&s, "one", "team");
    b = open_pg(&s, "two", "team");
    ASSERT_OK(mnemo_memory_add(a, "{\"text\":\"The team standup is at nine\"}", &out));
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_search(b, "standup", NULL, &out));
    ASSERT_CONTAINS(out, "The team standup is at nine");
    mnemo_free(out);
    mnemo_close(a);
    mnemo_close(b);
    pg_stop(&s);
}

TEST(pgbackend_newer_schema_refused)
{
    pg_server s;
    pg_debian_start(&s);
    test_write("ws/memory/a.md", "Kept safe.\n");
    mnemo *m = open_pg(&s, "ws", NULL);
    test_sync(m);
    mnemo_close(m);
    ASSERT_EQ(pg_psql(&s, "INSERT INTO mnemo_migrations(version) VALUES (99)", NULL), 0);
    m = open_pg(&s, "ws", NULL);
    mnemo_sync_stats st;
    ASSERT_EQ(mnemo_sync(m, NULL, &st), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), "newer than this mnemo");
    mnemo_close(m);
    /* Nothing was dropped or rewritten. */
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_chunks"), 1);
    pg_stop(&s);
}

TEST(pgbackend_dead_server_clear_error)
{
    int port = pg_free_port();
    char store[200];
    snprintf(store, sizeof store,
             "store=postgres://mnemo:Hunter2-Secret@127.0.0.1:%d/x?sslmode=disable", port);
    test_write("ws/memory/a.md", "Hello.\n");
    mnemo *m = test_open("ws", "db.sqlite", store, NULL);
    mnemo_sync_stats st;
    ASSERT_EQ(mnemo_sync(m, NULL, &st), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(mnemo_errmsg(m), "PostgreSQL");
    ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "Hunter2-Secret");
    mnemo_results *r = NULL;
    ASSERT_EQ(mnemo_search(m, "hello", NULL, &r), MNEMO_UNAVAILABLE);
    ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "Hunter2-Secret");
    char *out = NULL;
    ASSERT_EQ(mnemo_memory_add(m, "{\"text\":\"x\"}", &out), MNEMO_UNAVAILABLE);
    ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "Hunter2-Secret");
    ASSERT_EQ(mnemo_status_json(m, 0, &out), MNEMO_OK);
    ASSERT_CONTAINS(out, "\"backend\":\"postgres\"");
    ASSERT_NOT_CONTAINS(out, "Hunter2-Secret");
    mnemo_free(out);
    mnemo_close(m);
    /* No local index was made instead. */
    ASSERT(access(test_path("db.sqlite"), F_OK) != 0);
}

TEST(pgbackend_cli)
{
    pg_server s;
    pg_debian_start(&s);
    test_write("ws/memory/2026-03-01.md", "# Deploy\n\nWe deploy the gateway with blue-green "
                                          "releases.\n");
    const char *url = pg_url(&s);
    char *out = NULL, *err = NULL;
    int code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "--store", url, "index", NULL);
    if (code)
        test_fail(__FILE__, __LINE__, "index: %s%s", out, err);
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "--store", url, "search", "--json",
                    "deploying gateways", NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out, "\"path\":\"memory/2026-03-01.md\"");
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "--store", url, "memory", "add",
                    "Ops prefers blue-green releases", NULL);
    ASSERT_EQ(code, 0);
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "--store", url, "memory", "search",
                    "--json", "releases", NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out, "Ops prefers blue-green releases");
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", "ws", "--db", "db.sqlite", "--store", url, "status", "--json",
                    NULL);
    ASSERT_EQ(code, 0);
    ASSERT_CONTAINS(out, "\"backend\":\"postgres\"");
    ASSERT_CONTAINS(out, "pgvector");        /* why vectors are off here */
    ASSERT_NOT_CONTAINS(out, PG_TEST_SUPERPASS);
    free(out);
    free(err);
    /* Nothing went to a local index file. */
    ASSERT(access(test_path("db.sqlite"), F_OK) != 0);
    pg_stop(&s);
}

/* A reader until STOP exists: every search must find the full index (the
 * 8 best of 300 notes for the common words, and one note's own word). Exit
 * 0 when all did, having searched at least once. */
static void rebuild_reader(const pg_server *s, const char *stop)
{
    mnemo *m = open_pg(s, "ws", "team");
    int bad = 0, runs = 0;
    while (!bad && (access(stop, F_OK) != 0 || runs == 0)) {
        mnemo_search_opts o;
        mnemo_search_opts_init(&o);
        o.max_results = 8;
        mnemo_results *r = NULL;
        if (mnemo_search(m, "deploy checklist", &o, &r) || mnemo_results_count(r) != 8) {
            fprintf(stderr, "reader: %zu results: %s\n", r ? mnemo_results_count(r) : 0,
                    mnemo_errmsg(m));
            bad = 1;
        }
        mnemo_results_free(r);
        char q[32];
        snprintf(q, sizeof q, "token%d", (runs * 37) % 300);
        if (search_count(m, q) < 1) {
            fprintf(stderr, "reader: %s not found: %s\n", q, mnemo_errmsg(m));
            bad = 1;
        }
        runs++;
    }
    mnemo_close(m);
    _exit(bad);
}

/* `index --force` on PostgreSQL writes a new generation of the tenant's
 * files and chunks beside the live one and switches in one statement:
 * searches during the rebuild see the whole old index, then the whole new
 * one. The generation it replaced goes at the next sync; a rebuild killed
 * half way leaves the live index as it was, and the next sync removes what
 * it wrote. */
TEST(pgbackend_rebuild_beside_live)
{
    pg_server s;
    pg_debian_start(&s);
    write_notes("ws", 0, 300, "billing");
    mnemo *m = open_pg(&s, "ws", "team");
    test_sync(m);
    const char *stop = test_path("stop");
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        rebuild_reader(&s, stop);
    sleep_ms(200);
    mnemo_sync_opts o = {0};
    o.force = 1;
    mnemo_sync_stats st;
    ASSERT_OK(mnemo_sync(m, &o, &st));
    ASSERT_EQ(st.rebuilt, 1);
    ASSERT_EQ(st.files_added, 300);
    test_write("stop", "");
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        test_fail(__FILE__, __LINE__, "a search during the rebuild failed (status %d)", status);
    /* The new generation is live; the old one is still there until the next
     * sync, which removes it. */
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_live WHERE tenant = 'team' AND live "
                             "LIKE 'team#gen%' AND previous = 'team' AND building IS NULL"),
              1);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files WHERE tenant = 'team'"), 300);
    ASSERT_EQ(search_count(m, "token17"), 1);
    st = test_sync(m);
    ASSERT_EQ(st.files_unchanged, 300);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files WHERE tenant = 'team'"), 0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_chunks WHERE tenant = 'team'"), 0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_corpus WHERE tenant = 'team'"), 0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files"), 300);
    /* Memories are not part of a generation: one added before a rebuild is
     * there after it. */
    char *out = NULL;
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"The pelican survey is due in June\"}", &out));
    mnemo_free(out);
    /* A rebuild killed half way. */
    write_notes("ws", 300, 1700, "billing");
    test_sync(m);
    ASSERT(pipe(midway) == 0 && pipe(resume) == 0);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        mnemo *k = open_pg(&s, "ws", "team");
        int told = 0;
        mnemo_sync_opts f = {1, pause_midway, &told};
        mnemo_sync(k, &f, NULL);
        _exit(0);
    }
    /* Killed while paused past 500 files of the new generation. */
    close(midway[1]);
    close(resume[0]);
    char c = 0;
    ASSERT_EQ(read(midway[0], &c, 1), 1);
    kill(pid, SIGKILL);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    close(midway[0]);
    close(resume[1]);
    ASSERT(psql_count(&s, "SELECT count(*) FROM mnemo_files f JOIN mnemo_live l ON f.tenant = "
                          "l.building") >= 200);
    mnemo *r = open_pg(&s, "ws", "team");
    mnemo_search_opts so;
    mnemo_search_opts_init(&so);
    so.max_results = 8;
    mnemo_results *res = NULL;
    ASSERT_OK(mnemo_search(r, "deploy checklist", &so, &res));
    ASSERT_EQ(mnemo_results_count(res), 8);
    mnemo_results_free(res);
    ASSERT_EQ(search_count(r, "token1999"), 1);
    mnemo_close(r);
    st = test_sync(m);
    ASSERT_EQ(st.rebuilt, 0);
    ASSERT_EQ(st.files_unchanged, 2000);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_live WHERE building IS NOT NULL OR "
                             "previous IS NOT NULL"),
              0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files"), 2000);
    ASSERT_OK(mnemo_memory_search(m, "pelican survey", NULL, &out));
    ASSERT_CONTAINS(out, "pelican survey is due in June");
    mnemo_free(out);
    mnemo_close(m);
    pg_stop(&s);
}

/* A sync's batches of file writes go out without waiting for the server
 * (each its own transaction, answered at the next commit). One that fails
 * on the server fails the sync with the server's message; the batches
 * before it stay whole, the corpus counts match the rows they hold, the
 * handle works on, and the next sync completes the rest. */
TEST(pgbackend_sync_batch_failure_on_its_way)
{
    pg_server s;
    pg_debian_start(&s);
    write_notes("ws", 0, 1, "harbor");
    mnemo *m = open_pg(&s, "ws", "team");
    test_sync(m);
    /* Past 500 files the server refuses file rows. */
    char *out = NULL;
    if (pg_psql(&s,
                "CREATE FUNCTION refuse_files() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "IF (SELECT count(*) FROM mnemo_files) >= 500 THEN RAISE EXCEPTION "
                "'quota of files reached'; END IF; RETURN NULL; END $$; "
                "CREATE TRIGGER refuse_files BEFORE INSERT ON mnemo_files FOR EACH STATEMENT "
                "EXECUTE FUNCTION refuse_files();",
                &out) != 0)
        test_fail(__FILE__, __LINE__, "psql: %s", out ? out : "");
    free(out);
    write_notes("ws", 1, 1499, "harbor");
    mnemo_sync_stats st;
    int rc = mnemo_sync(m, NULL, &st);
    ASSERT(rc != MNEMO_OK);
    ASSERT_CONTAINS(mnemo_errmsg(m), "quota of files reached");
    /* Whole batches of 200 files (the first file was there before). */
    long files = psql_count(&s, "SELECT count(*) FROM mnemo_files WHERE tenant = 'team'");
    ASSERT(files >= 500 && files < 1500);
    ASSERT_EQ((files - 1) % 200, 0);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_corpus c WHERE tenant = 'team' AND "
                             "nchunks = (SELECT count(*) FROM mnemo_chunks WHERE tenant = 'team') "
                             "AND ntokens = (SELECT sum(ntok) FROM mnemo_chunks WHERE tenant = "
                             "'team')"),
              1);
    /* The handle is usable at once. */
    ASSERT_EQ(search_count(m, "token3"), 1);
    if (pg_psql(&s, "DROP TRIGGER refuse_files ON mnemo_files", &out) != 0)
        test_fail(__FILE__, __LINE__, "psql: %s", out ? out : "");
    free(out);
    st = test_sync(m);
    ASSERT_EQ(st.files_added, (size_t)(1500 - files));
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_files WHERE tenant = 'team'"), 1500);
    ASSERT_EQ(psql_count(&s, "SELECT count(*) FROM mnemo_corpus c WHERE tenant = 'team' AND "
                             "nchunks = (SELECT count(*) FROM mnemo_chunks WHERE tenant = 'team') "
                             "AND ntokens = (SELECT sum(ntok) FROM mnemo_chunks WHERE tenant = "
                             "'team')"),
              1);
    ASSERT_EQ(search_count(m, "token1499"), 1);
    ASSERT_EQ(search_count(m, "token700"), 1);
    /* Every chunk in the postings, none twice: a word in every note. */
    mnemo_search_opts so;
    mnemo_search_opts_init(&so);
    so.max_results = 2000;
    so.min_score = 0;
    mnemo_results *res = NULL;
    ASSERT_OK(mnemo_search(m, "harbor", &so, &res));
    ASSERT_EQ(mnemo_results_count(res), 1500);
    mnemo_results_free(res);
    mnemo_close(m);
    pg_stop(&s);
}

/* The binary forms a sync sends (arrays, tsvectors) read by the server as
 * the text forms are. */
/* The hex text form of bytea, as the server sends it. */
TEST(pgtext_unhex_decodes)
{
    unsigned char b[8];
    ASSERT_EQ(pgtext_unhex("\\x00ff7fA0", b, sizeof b), 4);
    ASSERT(b[0] == 0 && b[1] == 0xff && b[2] == 0x7f && b[3] == 0xa0);
    ASSERT_EQ(pgtext_unhex("deadBEEF", b, sizeof b), 4); /* no prefix, either case */
    ASSERT(b[0] == 0xde && b[3] == 0xef);
    ASSERT_EQ(pgtext_unhex("\\x", b, sizeof b), 0);
    ASSERT_EQ(pgtext_unhex("\\x0", b, sizeof b), -1);         /* half a byte */
    ASSERT_EQ(pgtext_unhex("\\x0g", b, sizeof b), -1);        /* not hex */
    ASSERT_EQ(pgtext_unhex("\\x:0", b, sizeof b), -1);        /* next to '9' */
    ASSERT_EQ(pgtext_unhex("\\x0@", b, sizeof b), -1);        /* next to 'A' */
    ASSERT_EQ(pgtext_unhex("\\x000102030405060708", b, sizeof b), -1); /* 9 bytes into 8 */
    ASSERT_EQ(pgtext_unhex("0001020304050607", b, sizeof b), 8);
    ASSERT_EQ(b[7], 7);
}

TEST(pgtext_binary_forms)
{
    pg_server s;
    pg_debian_start(&s);
    pg_target t = {pg_url(&s), "", 10, 1};
    pg_conn *c = NULL;
    buf err;
    buf_init(&err, 0);
    if (pg_connect(&t, 10000, &c, &err))
        test_fail(__FILE__, __LINE__, "connect: %s", err.data);
    tok *tk = NULL;
    ASSERT_OK(tok_new("english", 0, &tk));
    buf many, pre, text, bin;
    buf_init(&many, 0);
    buf_init(&pre, 0);
    buf_init(&text, 0);
    buf_init(&bin, 0);
    for (int i = 0; i < 300; i++)
        buf_puts(&many, "echo ");
    for (int i = 0; i < 17000; i++)
        buf_printf(&many, "w%d ", i % 50);
    const char *texts[] = {"",
                           "It's a \\back\\slash with 'quotes' and \"double\" ones",
                           "記憶の検索エンジン 中文测试 한국어",
                           "Café naïve résumé Zürich",
                           "getUserName snake_case v0.11.4 https://example.com/a?b=c",
                           many.data};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        int ntok = 0, ntok2 = 0;
        buf_reset(&pre);
        ASSERT_OK(tok_pretokenize(tk, texts[i], strlen(texts[i]), &pre));
        ASSERT_OK(pgstore_tsvector_of(pre.data ? pre.data : "", pre.len, &text, &ntok));
        ASSERT_OK(pgstore_tsvector_bin(pre.data ? pre.data : "", pre.len, &bin, &ntok2));
        ASSERT_EQ(ntok, ntok2);
        const char *p[2] = {text.data ? text.data : "", bin.data};
        int lens[2] = {0, (int)bin.len}, fmt[2] = {0, 1};
        pg_rows *r = NULL;
        if (pg_send(c, "SELECT $1::tsvector::text = $2::tsvector::text, length($2::tsvector)", 2,
                    p, lens, fmt, &err) ||
            pg_collect(c, 10000, &r, &err))
            test_fail(__FILE__, __LINE__, "text %zu: %s", i, err.data);
        if (strcmp(pg_value(r, 0, 0), "t"))
            test_fail(__FILE__, __LINE__, "text %zu: binary and text tsvectors differ", i);
        if (i == 5)
            ASSERT_STR_EQ(pg_value(r, 0, 1), "51");
        pg_rows_free(r);
    }
    /* Arrays of each element type, and an empty one. */
    pgtext_barr a[6];
    for (int i = 0; i < 6; i++)
        pgtext_barr_init(&a[i]);
    pgtext_barr_start(&a[0], PG_INT4OID);
    pgtext_barr_int4(&a[0], 1);
    pgtext_barr_int4(&a[0], -2);
    pgtext_barr_int4(&a[0], 2147483647);
    pgtext_barr_start(&a[1], PG_INT8OID);
    pgtext_barr_int8(&a[1], -9000000000LL);
    pgtext_barr_int8(&a[1], 0);
    pgtext_barr_start(&a[2], PG_FLOAT8OID);
    pgtext_barr_float8(&a[2], 0.5);
    pgtext_barr_float8(&a[2], -1e300);
    pgtext_barr_start(&a[3], PG_TEXTOID);
    pgtext_barr_bytes(&a[3], "a\"b", 3);
    pgtext_barr_bytes(&a[3], "", 0);
    pgtext_barr_bytes(&a[3], "中文", strlen("中文"));
    pgtext_barr_start(&a[4], PG_BYTEAOID);
    pgtext_barr_bytes(&a[4], "\x00\x01\xff", 3);
    pgtext_barr_bytes(&a[4], "", 0);
    pgtext_barr_start(&a[5], PG_INT4OID);
    const char *p[6];
    int lens[6], fmt[6];
    for (int i = 0; i < 6; i++) {
        pgtext_barr_end(&a[i]);
        ASSERT(!buf_err(&a[i].b));
        p[i] = a[i].b.data;
        lens[i] = (int)a[i].b.len;
        fmt[i] = 1;
    }
    pg_rows *r = NULL;
    if (pg_send(c, "SELECT $1::int[]::text, $2::bigint[]::text, $3::float8[]::text, "
                   "$4::text[]::text, $5::bytea[]::text, $6::int[]::text, cardinality($6::int[])",
                6, p, lens, fmt, &err) ||
        pg_collect(c, 10000, &r, &err))
        test_fail(__FILE__, __LINE__, "arrays: %s", err.data);
    ASSERT_STR_EQ(pg_value(r, 0, 0), "{1,-2,2147483647}");
    ASSERT_STR_EQ(pg_value(r, 0, 1), "{-9000000000,0}");
    ASSERT_STR_EQ(pg_value(r, 0, 2), "{0.5,-1e+300}");
    ASSERT_STR_EQ(pg_value(r, 0, 3), "{\"a\\\"b\",\"\",中文}");
    ASSERT_STR_EQ(pg_value(r, 0, 4), "{\"\\\\x0001ff\",\"\\\\x\"}");
    ASSERT_STR_EQ(pg_value(r, 0, 5), "{}");
    ASSERT_STR_EQ(pg_value(r, 0, 6), "0");
    pg_rows_free(r);
    /* One statement on its way at a time; a query meanwhile is refused. */
    const char *one[1] = {"1"};
    ASSERT_OK(pg_send(c, "SELECT pg_sleep(0.05), $1::int", 1, one, NULL, NULL, &err));
    ASSERT(pg_inflight(c));
    ASSERT(pg_query(c, "SELECT 2", 0, NULL, 10000, &r, &err) != MNEMO_OK);
    buf_reset(&err);
    ASSERT_OK(pg_collect(c, 10000, &r, &err));
    ASSERT_STR_EQ(pg_value(r, 0, 1), "1");
    pg_rows_free(r);
    ASSERT(pg_collect(c, 10000, &r, &err) != MNEMO_OK);
    for (int i = 0; i < 6; i++)
        pgtext_barr_cleanup(&a[i]);
    buf_cleanup(&many);
    buf_cleanup(&pre);
    buf_cleanup(&text);
    buf_cleanup(&bin);
    buf_cleanup(&err);
    tok_free(tk);
    pg_close(c);
    pg_stop(&s);
}
