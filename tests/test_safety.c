/*
 * test_safety.c - data that must never be lost: foreign files left alone,
 * memories in a store of their own that no rebuild replaces, the move of
 * an older index's memories into it (and its resumption), salvage from
 * damaged files, rolling backups, and the stale-temp cleanup that removes
 * only what mnemo made.
 */
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/sqlite/fts.h"
#include "store/sqlite/store.h"
#include "test.h"
#include "util/buf.h"

static void run_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    ASSERT_EQ(fts_register(db, NULL, NULL), SQLITE_OK);
    char *e = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &e) != SQLITE_OK)
        test_fail(__FILE__, __LINE__, "%s: %s", sql, e);
    sqlite3_close(db);
}

static int cli(char **out, char **err, ...)
{
    /* mnemo --workspace ws --db db.sqlite ARGS... */
    const char *argv[32];
    int n = 0;
    argv[n++] = "--workspace";
    argv[n++] = test_path("ws");
    argv[n++] = "--db";
    argv[n++] = test_path("db.sqlite");
    va_list ap;
    va_start(ap, err);
    for (const char *a; n < 31 && (a = va_arg(ap, const char *));)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    char *o = NULL, *e = NULL;
    int rc = test_cli(&o, &e, NULL, argv[0], argv[1], argv[2], argv[3], n > 4 ? argv[4] : NULL,
                      n > 5 ? argv[5] : NULL, n > 6 ? argv[6] : NULL, n > 7 ? argv[7] : NULL,
                      n > 8 ? argv[8] : NULL, n > 9 ? argv[9] : NULL, NULL);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

/* Writes N bytes of BYTE into PATH at OFF. */
static void overwrite(const char *path, long off, int byte, size_t n)
{
    FILE *f = fopen(path, "r+b");
    ASSERT(f != NULL);
    char *junk = malloc(n);
    ASSERT(junk != NULL);
    memset(junk, byte, n);
    ASSERT_EQ(fseek(f, off, SEEK_SET), 0);
    ASSERT_EQ(fwrite(junk, 1, n, f), n);
    free(junk);
    fclose(f);
}

static int count_files(const char *pattern)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c -- '%s' > %s", test_dir(), pattern,
             test_path("count.txt"));
    if (system(cmd) < 0)
        return -1;
    char *c = test_read(test_path("count.txt"), NULL);
    int n = c ? atoi(c) : -1;
    free(c);
    return n;
}

/* A workspace, an index, and N memories (the first one updated twice),
 * with settings S1, S2 (may be NULL). */
static void with_memories_set(int n, const char *s1, const char *s2)
{
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    test_write("ws/MEMORY.md", "# Notes\n\nThe deploy runs on Fridays.\n");
    test_write("ws/memory/2026-11-28.md", "- talked about herons and the garden\n");
    mnemo *m = test_open("ws", "db.sqlite", s1, s2, NULL);
    test_sync(m);
    char *first = NULL;
    for (int i = 0; i < n; i++) {
        char rec[256], *out = NULL;
        snprintf(rec, sizeof rec, "{\"text\":\"fact number %d about the user's garden\"}", i);
        ASSERT_OK(mnemo_memory_add(m, rec, &out));
        if (i == 0) {
            json_t *j = json_loads(out, 0, NULL);
            first = strdup(json_string_value(json_object_get(j, "id")));
            json_decref(j);
        }
        mnemo_free(out);
    }
    for (int k = 0; k < 2 && first; k++) {
        char *out = NULL;
        ASSERT_OK(mnemo_memory_update(m, first, k ? "{\"text\":\"fact zero, twice\"}"
                                                  : "{\"text\":\"fact zero, changed\"}",
                                      &out));
        mnemo_free(out);
    }
    free(first);
    mnemo_close(m);
}

static void with_memories(int n) { with_memories_set(n, NULL, NULL); }

static long long memories_in_store(void)
{
    return test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memories");
}

static long long list_count(void)
{
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_list(m, "{\"limit\":1000}", &out));
    json_t *j = json_loads(out, 0, NULL);
    long long n = (long long)json_array_size(json_object_get(j, "memories"));
    json_decref(j);
    mnemo_free(out);
    mnemo_close(m);
    return n;
}

/* Turns the index back into schema 5: memories inside it, no application
 * id, no memory store. */
static void to_schema5(void)
{
    char sql[8192];
    snprintf(
        sql, sizeof sql,
        "ATTACH '%s' AS old;"
        "CREATE TABLE main.memories AS SELECT * FROM old.memories WHERE 0;"
        "DROP TABLE main.memories;"
        "CREATE TABLE main.memories(mid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
        "  text TEXT NOT NULL, hash TEXT NOT NULL, category TEXT NOT NULL,"
        "  importance REAL NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,"
        "  user_id TEXT NOT NULL, agent_id TEXT NOT NULL, run_id TEXT NOT NULL,"
        "  metadata TEXT NOT NULL, triggers TEXT NOT NULL, created_at REAL NOT NULL,"
        "  updated_at REAL NOT NULL, expires_at REAL, confirmations INTEGER NOT NULL DEFAULT 0,"
        "  last_confirmed_at REAL, deleted_at REAL);"
        "CREATE UNIQUE INDEX main.memories_dup ON memories(hash, user_id, agent_id, run_id)"
        "  WHERE deleted_at IS NULL;"
        "CREATE TABLE main.memory_history(hid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL,"
        "  event TEXT NOT NULL, old_text TEXT, new_text TEXT, at REAL NOT NULL, detail TEXT);"
        "CREATE TABLE main.memory_vectors(mid INTEGER PRIMARY KEY, vec BLOB NOT NULL);"
        "CREATE VIRTUAL TABLE main.memories_fts USING fts5(text, content='memories',"
        "  content_rowid='mid', tokenize='mnemo english');"
        "INSERT INTO main.memories SELECT * FROM old.memories;"
        "INSERT INTO main.memory_history SELECT * FROM old.memory_history;"
        "INSERT INTO main.memories_fts(memories_fts) VALUES('rebuild');"
        "DETACH old;"
        "ALTER TABLE main.chunk_vectors DROP COLUMN parts;"
        "ALTER TABLE main.files DROP COLUMN mime;"
        "DROP TABLE main.vec_calib;"
        "UPDATE main.meta SET value = '5' WHERE key = 'schema_version';"
        "PRAGMA main.application_id = 0;",
        test_path("db.memories.sqlite"));
    run_sql(test_path("db.sqlite"), sql);
    unlink(test_path("db.memories.sqlite"));
    unlink(test_path("db.memories.sqlite-wal"));
    unlink(test_path("db.memories.sqlite-shm"));
}

TEST(safety_force_refuses_a_foreign_sqlite_file)
{
    test_write("ws/MEMORY.md", "a note\n");
    run_sql(test_path("db.sqlite"), "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                                    "CREATE TABLE orders(id INT); INSERT INTO orders VALUES(42);");
    char *err = NULL;
    ASSERT_EQ(cli(NULL, &err, "index", "--force", NULL), 5);
    ASSERT_CONTAINS(err, "not a mnemo index");
    free(err);
    ASSERT_EQ(cli(NULL, NULL, "index", NULL), 5);
    ASSERT_EQ(cli(NULL, NULL, "status", NULL), 5);
    ASSERT_EQ(cli(NULL, NULL, "search", "note", NULL), 5);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "SELECT id FROM orders"), 42);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "SELECT count(*) FROM sqlite_schema"), 3);
    ASSERT_EQ(count_files("damaged"), 0);
    /* Another application's id, with every table an index has: refused too. */
    unlink(test_path("db.sqlite"));
    run_sql(test_path("db.sqlite"),
            "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); CREATE TABLE files(x);"
            "CREATE TABLE chunks(x); CREATE TABLE chunks_fts(x); CREATE TABLE files_fts(x);"
            "INSERT INTO meta VALUES('schema_version', '6'); PRAGMA application_id = 7;");
    ASSERT_EQ(cli(NULL, &err, "index", "--force", NULL), 5);
    ASSERT_CONTAINS(err, "application id 0x00000007");
    free(err);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "SELECT count(*) FROM meta"), 1);
    /* Not SQLite at all. */
    test_write("db.sqlite", "just some text the user keeps here\n");
    ASSERT_EQ(cli(NULL, NULL, "index", "--force", NULL), 5);
    char *t = test_read(test_path("db.sqlite"), NULL);
    ASSERT_STR_EQ(t, "just some text the user keeps here\n");
    free(t);
    /* A memory store path holding a foreign database is refused as well. */
    unlink(test_path("db.sqlite"));
    run_sql(test_path("db.memories.sqlite"), "CREATE TABLE mine(x); INSERT INTO mine VALUES(1);");
    ASSERT(cli(NULL, &err, "memory", "add", "User likes tea", NULL) != 0);
    ASSERT_CONTAINS(err, "not a mnemo memory store");
    free(err);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM mine"), 1);
}

TEST(safety_memories_live_apart_from_the_index)
{
    with_memories(20);
    ASSERT_EQ(memories_in_store(), 20);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                    "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'memor%'"),
              0);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "PRAGMA application_id"), 0x6d6e6d6f);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "PRAGMA application_id"), 0x6d6e6d6d);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT journal_mode = 'wal' FROM "
                                                      "pragma_journal_mode"),
              1);
    /* Damage the index badly: a rebuild brings the notes back, and the
     * memories were never in it. */
    overwrite(test_path("db.sqlite"), 4096, 0x5a, 16384);
    char *err = NULL;
    ASSERT_EQ(cli(NULL, &err, "index", "--force", NULL), 0);
    free(err);
    ASSERT_EQ(count_files("db.sqlite.damaged-"), 1);
    ASSERT_EQ(list_count(), 20);
    char *out = NULL;
    ASSERT_EQ(cli(&out, NULL, "memory", "search", "fact zero twice", NULL), 0);
    ASSERT_CONTAINS(out, "fact zero, twice");
    free(out);
    ASSERT_EQ(cli(&out, NULL, "search", "herons", NULL), 0);
    ASSERT_CONTAINS(out, "2026-11-28.md");
    free(out);
    /* And a rebuild of a sound index keeps them as well, history included. */
    ASSERT_EQ(cli(NULL, NULL, "index", "--force", NULL), 0);
    ASSERT_EQ(list_count(), 20);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memory_history"),
              22);
}

TEST(safety_schema5_memories_move_to_their_store)
{
    with_memories(20);
    to_schema5();
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "SELECT count(*) FROM memories"), 20);
    ASSERT_EQ(list_count(), 20);
    ASSERT_EQ(memories_in_store(), 20);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memory_history"), 22);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                    "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'memor%'"),
              0);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "SELECT value FROM meta WHERE key = "
                                            "'schema_version'"),
              STORE_SCHEMA_VERSION);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"), "PRAGMA application_id"), 0x6d6e6d6f);
    char *out = NULL;
    ASSERT_EQ(cli(&out, NULL, "memory", "search", "garden number 7", NULL), 0);
    ASSERT_CONTAINS(out, "fact number 7");
    free(out);
}

TEST(safety_schema5_move_that_died_half_way_finishes)
{
    with_memories(20);
    /* The copy was committed to the store, the index still has its tables:
     * as if the process died between the two steps. */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp %s %s", test_path("db.memories.sqlite"),
             test_path("keep.sqlite"));
    ASSERT_EQ(system(cmd), 0);
    to_schema5();
    snprintf(cmd, sizeof cmd, "cp %s %s", test_path("keep.sqlite"),
             test_path("db.memories.sqlite"));
    ASSERT_EQ(system(cmd), 0);
    ASSERT_EQ(list_count(), 20); /* not 40 */
    ASSERT_EQ(memories_in_store(), 20);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memory_history"), 22);
    ASSERT_EQ(test_sql_int(test_path("db.sqlite"),
                    "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'memor%'"),
              0);
}

TEST(safety_force_on_a_schema5_index_moves_memories_first)
{
    with_memories(20);
    to_schema5();
    ASSERT_EQ(cli(NULL, NULL, "index", "--force", NULL), 0);
    ASSERT_EQ(memories_in_store(), 20);
    ASSERT_EQ(list_count(), 20);
}

TEST(safety_damaged_schema5_index_is_salvaged_on_rebuild)
{
    with_memories(20);
    to_schema5();
    /* Damage a page of the notes (found with dbstat), not the memories. */
    long long pg = test_sql_int(test_path("db.sqlite"),
                         "SELECT pageno FROM dbstat WHERE name = 'chunks' ORDER BY pageno LIMIT 1");
    ASSERT(pg > 1);
    FILE *f = fopen(test_path("db.sqlite"), "r+b");
    ASSERT(f != NULL);
    char junk[4096];
    memset(junk, 0xa5, sizeof junk);
    fseek(f, (long)(pg - 1) * 4096 + 8, SEEK_SET);
    fwrite(junk, 1, 2000, f);
    fclose(f);
    char *err = NULL;
    ASSERT_EQ(cli(NULL, &err, "index", "--force", NULL), 0);
    ASSERT_CONTAINS(err, "20 memories salvaged");
    free(err);
    ASSERT_EQ(count_files("db.sqlite.damaged-"), 1);
    ASSERT_EQ(list_count(), 20);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memory_history"), 22);
}

TEST(safety_memory_recover_reads_pages_sqlite_cannot)
{
    with_memories(20);
    to_schema5();
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mv %s %s", test_path("db.sqlite"), test_path("old.sqlite"));
    ASSERT_EQ(system(cmd), 0);
    /* Page 1 holds the schema's root: zeroed, SQLite reads nothing. */
    overwrite(test_path("old.sqlite"), 100, 0, 3996);
    char *out = NULL;
    ASSERT_EQ(cli(&out, NULL, "memory", "recover", test_path("old.sqlite"), "--json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(j != NULL);
    ASSERT_EQ(json_integer_value(json_object_get(j, "recovered")), 20);
    ASSERT_EQ(json_integer_value(json_object_get(j, "history")), 22);
    json_decref(j);
    free(out);
    ASSERT_EQ(list_count(), 20);
    ASSERT_EQ(cli(&out, NULL, "memory", "search", "fact zero twice", NULL), 0);
    ASSERT_CONTAINS(out, "fact zero, twice");
    free(out);
    /* Again: nothing new, every memory already there. */
    ASSERT_EQ(cli(&out, NULL, "memory", "recover", test_path("old.sqlite"), "--json", NULL), 0);
    ASSERT_CONTAINS(out, "\"recovered\":0,\"present\":20");
    free(out);
    /* Something that holds no memories: a clear error. */
    test_write("plain.txt", "hello\n");
    char *err = NULL;
    ASSERT_EQ(cli(NULL, &err, "memory", "recover", test_path("plain.txt"), NULL), 3);
    ASSERT_CONTAINS(err, "holds no memories");
    free(err);
    /* The live store is never its own source. */
    ASSERT_EQ(cli(NULL, &err, "memory", "recover", test_path("db.memories.sqlite"), NULL), 2);
    ASSERT_CONTAINS(err, "the memory store itself");
    free(err);
}

TEST(safety_rolling_backups)
{
    /* 12 adds + 2 updates = 14 writes: snapshots at the first write (none
     * yet), then 5 writes later, at 6 and 11; one kept. */
    with_memories_set(12, "memoryBackupEvery=5", "memoryBackups=1");
    ASSERT_EQ(count_files("db.memories.sqlite.backup-.*-0*6.jsonl$"), 0); /* pruned */
    ASSERT_EQ(count_files("db.memories.sqlite.backup-.*-0*11.jsonl$"), 1);
    ASSERT_EQ(count_files("db.memories.sqlite.backup-"), 1);
    ASSERT_EQ(count_files(".part$"), 0);
    /* A snapshot imports into an empty store. */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp %s/db.memories.sqlite.backup-*-000000000011.jsonl %s", test_dir(),
             test_path("snap.jsonl"));
    ASSERT_EQ(system(cmd), 0);
    char *out = NULL;
    char dbarg[4096];
    snprintf(dbarg, sizeof dbarg, "%s", test_path("other.sqlite"));
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "--db", dbarg, "memory",
                       "import", test_path("snap.jsonl"), "--json", NULL),
              0);
    ASSERT_CONTAINS(out, "\"imported\":11");
    free(out);
    ASSERT_EQ(test_sql_int(test_path("other.memories.sqlite"), "SELECT count(*) FROM memories"), 11);
}

TEST(safety_stale_temp_cleanup_removes_only_its_own)
{
    test_write("ws/MEMORY.md", "a note\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    /* A pid that is gone. */
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    char ours[256], user_digits[256], wal[256];
    snprintf(ours, sizeof ours, "db.sqlite.tmp-%ld", (long)p);
    snprintf(wal, sizeof wal, "db.sqlite.tmp-%ld-wal", (long)p);
    snprintf(user_digits, sizeof user_digits, "db.sqlite.tmp-%ld", (long)p + 1000000);
    run_sql(test_path(ours), "PRAGMA application_id = 1835953519; CREATE TABLE t(x);");
    test_write(wal, "leftover");
    test_write(user_digits, "a user's file, not SQLite");
    test_write("db.sqlite.tmp-notes.txt", "my notes");
    m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    struct stat st;
    ASSERT(stat(test_path(ours), &st) != 0);
    ASSERT(stat(test_path(wal), &st) != 0);
    ASSERT(stat(test_path(user_digits), &st) == 0);
    char *t = test_read(test_path("db.sqlite.tmp-notes.txt"), NULL);
    ASSERT_STR_EQ(t, "my notes");
    free(t);
}

TEST(safety_stored_values_that_are_not_utf8)
{
    /* Another tool wrote bytes that are not UTF-8 into the memory store:
     * every reader repairs them (U+FFFD), nothing crashes, export writes
     * only what import accepts. */
    with_memories(2);
    run_sql(test_path("db.memories.sqlite"),
            "UPDATE memories SET id = CAST(x'6964ff' AS TEXT), text = "
            "CAST(x'55736572206c696b657320ff20746561' AS TEXT), subject = CAST(x'c3' AS TEXT), "
            "metadata = CAST(x'7b22a0223a317d' AS TEXT), triggers = CAST(x'5b22ff225d' AS TEXT) "
            "WHERE mid = 1;"
            "UPDATE memory_history SET old_text = CAST(x'ff' AS TEXT), new_text = "
            "CAST(x'fe' AS TEXT) WHERE hid = 1;"
            "INSERT INTO memories_fts(memories_fts) VALUES('rebuild')");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    char *out = NULL;
    ASSERT_OK(mnemo_memory_recall(m, "{\"message\":\"tea\"}", &out));
    ASSERT_CONTAINS(out, "User likes \xef\xbf\xbd tea");
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_search(m, "tea", "{\"type\":\"all\"}", &out));
    ASSERT_CONTAINS(out, "\"id\":\"id\xef\xbf\xbd\"");
    mnemo_free(out);
    ASSERT_OK(mnemo_memory_list(m, NULL, &out));
    ASSERT_CONTAINS(out, "User likes \xef\xbf\xbd tea");
    mnemo_free(out);
    mnemo_close(m);
    char *exp = NULL;
    ASSERT_EQ(cli(&exp, NULL, "memory", "export", NULL), 0);
    ASSERT_CONTAINS(exp, "\"text\":\"User likes \xef\xbf\xbd tea\"");
    ASSERT_CONTAINS(exp, "\"subject\":\"\xef\xbf\xbd\"");
    test_write("exp.jsonl", exp);
    /* Every line of the export imports into a fresh store. */
    char *o2 = NULL;
    char dbarg[4096];
    snprintf(dbarg, sizeof dbarg, "%s", test_path("other.sqlite"));
    ASSERT_EQ(test_cli(&o2, NULL, NULL, "--workspace", test_path("ws"), "--db", dbarg, "memory",
                       "import", test_path("exp.jsonl"), "--json", NULL),
              0);
    ASSERT_CONTAINS(o2, "\"imported\":2");
    free(o2);
    free(exp);
    ASSERT_EQ(cli(&out, NULL, "recall", "--message", "tea", NULL), 0);
    free(out);
}

TEST(safety_secret_rules_each_with_a_positive_and_a_negative)
{
    static const struct {
        const char *yes, *no;
    } rules[] = {
        {"key sk-proj-4fQ9zX2kLmN8pR3tV6wY1aB5", "the sk-learn docs"},
        {"SK-4fQ9zX2kLmN8pR3tV6wY1aB5cD7e", "SK-1 is the first task"},
        {"sk_live_4fQ9zX2kLmN8pR3tV6wY1aB5", "sk_live_ is a prefix"},
        {"rk_live_4fQ9zX2kLmN8pR3tV6wY1aB5", "rk_live_short"},
        {"ghp_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH", "ghp_ tokens are GitHub's"},
        {"AKIAQ4FZ9XK2LMN8PR3T", "AKIA is how AWS keys start"},
        {"xoxb-4fQ9zX2kLm-N8pR3tV6wY", "xoxb- is a Slack prefix"},
        {"https://hooks.slack.com/services/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",
         "see https://hooks.slack.com for webhooks"},
        {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0g",
         "eyJ starts a JWT header"},
        {"postgres://app:hunter2pw@db.internal:5432/prod", "postgres://db.internal:5432/prod"},
        {"npm_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH1iJ2", "run npm_install.sh"},
        {"hf_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH1", "hf_hub_download is a function"},
        {"SG.4fQ9zX2kLmN8pR3tV6wY1a.B5cD7eF0gH1iJ2kL3mN4oP5qR6sT7uV8wX9yZ0aB1c",
         "SG. is SendGrid"},
        {"SK0123456789abcdef0123456789abcdef", "SKIP the flaky test"},
        {"MTA4NzY1NDMyMTA5ODc2NTQz.GhT6aQ.4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0g",
         "Meet at noon. Bring the plan."},
        {"DefaultEndpointsProtocol=https;AccountKey=4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH1iJ2kL3mN4o=",
         "AccountKey=unset"},
        {"api token 3f786850e387550fdab836ed7e6dc881de23001b",
         "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it"},
        {"aws secret key 4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH1iJ2kL3m",
         "the aws secret access key has 40 characters"},
        {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
         "-----BEGIN CERTIFICATE-----\nMIIB\n"},
        {"-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----BEGIN PUBLIC KEY-----"},
        {"password=hunter2", "reset my password"},
        {"the deploy secret is Xq7vB2mK9pL4wR8tN3cF6hJ1sD5gA0eZ", /* entropy */
         "ListOrdersByCustomerIdAndDateRange2024 got slow"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        if (!mnemo_secret_kind(rules[i].yes, strlen(rules[i].yes)))
            test_fail(__FILE__, __LINE__, "not caught: %s", rules[i].yes);
        const char *k = mnemo_secret_kind(rules[i].no, strlen(rules[i].no));
        if (k)
            test_fail(__FILE__, __LINE__, "caught as %s: %s", k, rules[i].no);
    }
    /* Every field of a memory is checked, and no message repeats a secret. */
    test_write("ws/MEMORY.md", "a note\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    static const char *const records[] = {
        "{\"text\":\"fine\",\"subject\":\"sk_live_4fQ9zX2kLmN8pR3tV6wY1aB5\"}",
        "{\"text\":\"fine\",\"user_id\":\"npm_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH1iJ2\"}",
        "{\"text\":\"fine\",\"agent_id\":\"hf_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH1\"}",
        "{\"text\":\"fine\",\"run_id\":\"AKIAQ4FZ9XK2LMN8PR3T\"}",
        "{\"text\":\"fine\",\"triggers\":[\"ghp_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH\"]}",
        "{\"text\":\"fine\",\"metadata\":{\"db\":{\"password\":\"hunter2\"}}}",
        "{\"text\":\"fine\",\"metadata\":{\"note\":\"postgres://app:hunter2pw@db/prod\"}}",
        "{\"text\":\"fine\",\"category\":\"sk-proj-4fQ9zX2kLmN8pR3tV6wY1aB5\"}",
    };
    for (size_t i = 0; i < sizeof records / sizeof *records; i++) {
        char *out = NULL;
        int rc = mnemo_memory_add(m, records[i], &out);
        if (rc != MNEMO_INVALID)
            test_fail(__FILE__, __LINE__, "stored: %s", records[i]);
        ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "4fQ9zX2kLm");
        ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "hunter2");
        ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "AKIAQ4FZ");
        mnemo_free(out);
    }
    /* History on import. */
    size_t in = 0, skip = 0;
    const char *line = "{\"id\":\"11111111-2222-4333-8444-555555555555\",\"text\":\"fine\","
                       "\"history\":[{\"event\":\"UPDATE\",\"at\":\"2026-11-01T00:00:00Z\","
                       "\"old_text\":\"password=hunter2\",\"new_text\":\"fine\"}]}\n";
    ASSERT_EQ(mnemo_memory_import(m, line, strlen(line), &in, &skip), MNEMO_INVALID);
    ASSERT_NOT_CONTAINS(mnemo_errmsg(m), "hunter2");
    mnemo_close(m);
    /* The command line does not echo one either. */
    char *err = NULL;
    ASSERT(cli(NULL, &err, "memory", "add", "-----BEGIN RSA PRIVATE KEY----- MIIEow", NULL) != 0);
    ASSERT_NOT_CONTAINS(err, "MIIEow");
    free(err);
    ASSERT(cli(NULL, &err, "memory", "add", "fine", "--category",
               "sk-proj-4fQ9zX2kLmN8pR3tV6wY1aB5", NULL) != 0);
    ASSERT_NOT_CONTAINS(err, "4fQ9zX2kLm");
    free(err);
}

/* Texts the credential filter refuses, each with the part of the secret no
 * message may repeat; the six kinds stated in prose or disguised (a
 * zero-width space, full-width letters, a split token, a .pgpass line) two
 * or three ways each. */
static const struct {
    const char *text, *secret;
} disguised[] = {
    {"my bank password is hunter2", "hunter2"},
    {"My password for the bank is Tr0ub4dor&3", "Tr0ub4dor"},
    {"the wifi passphrase was \"correct horse battery staple\"", "horse battery"},
    {"the pin is 4821", "4821"},
    {"PIN code is 4821", "4821"},
    {"passcode is 483920", "483920"},
    {"password: hunter2", "hunter2"},
    {"Password=hunter2", "hunter2"},
    {"pwd: s3cr3tpass", "s3cr3t"},
    {"db pw: abc123", "abc123"},
    {"AKIA\u200bIOSFODNN7EXAMPLE", "IOSFODNN7"},
    {"aws key AKIA\u2060IOSF\u00adODNN7EXAMPLE here", "ODNN7"},
    {"\uff21\uff2b\uff29\uff21\uff29\uff2f\uff33\uff26\uff2f\uff24\uff2e\uff2e\uff17\uff25\uff38"
     "\uff21\uff2d\uff30\uff2c\uff25",
     "\uff2f\uff24\uff2e\uff2e"},
    {"aws key: \uff21\uff2b\uff29\uff21IOSFODNN7EXAMPLE", "IOSFODNN7"},
    {"ghp_abcd1234 efgh5678ijkl9012mnop3456qrst", "efgh5678"},
    {"token ghp_4fQ9zX2kLmN8pR3t.V6wY1aB5cD7eF0gH", "4fQ9zX2k"},
    {"ghp_4fQ9zX2kLm\u200bN8pR3tV6wY1aB5cD7eF0gH", "N8pR3tV6"},
    {"AKIAIOSF ODNN7EXAMPLE", "ODNN7"},
    {"sk-proj-4fQ9zX2kLm N8pR3tV6wY1aB5", "N8pR3tV6"},
    {"host:5432:db:user:secret", "user:secret"},
    {"db.internal:5432:prod:app:Xy7#pq", "Xy7#pq"},
    {"the line `localhost:5432:mnemo:bob:pa\\:ss` is in ~/.pgpass", "pa\\:ss"},
    {"*:*:*:postgres:hunter2", "hunter2"},
    {"\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44 is hunter2", "hunter2"},
    {"pass\u00adword: hunter2", "hunter2"},
};

/* Text about secrets, times, addresses: stored. */
static const char *const not_secrets[] = {
    "User wants to reset the password policy on Monday",
    "the key to the cabin is under the mat",
    "User forgot their password again",
    "password managers like 1Password are recommended",
    "the meeting is at 10:30:00",
    "the server listens on localhost:5432",
    "Her PIN code policy changed",
    "the standup moved to 09:15:00 on 2026-11-02T09:15:00Z",
    "IPv6 loopback is ::1 and the router is fe80::1:2:3:4",
    "2001:0db8:85a3:0000:0000:8a2e:0370:7334 is the address",
    "the token ring network was replaced in 1998",
    "AKIA is the prefix of AWS access keys",
    "the password is strong enough",
    "the password is in the vault, not here",
    "the password is AES-256 encrypted at rest",
    "Password: see 1Password, entry \"bank\"",
    "password: ******** (redacted)",
    "The PIN is printed on the card",
    "the pin count is 2048 on that chip",
    "pwd: /home/alice/projects",
    "password is 12 characters minimum",
    "ghp_ tokens are GitHub personal access tokens",
    "the sk-learn LogisticRegression2 class",
    "the pgpass format is hostname:port:database:username:password",
    "MAC 00:1a:2b:3c:4d:5e is the printer",
    "time 23:59:59.999 UTC",
    "\uff34\uff48\uff45 meeting is at \uff11\uff10\uff1a\uff13\uff10, caf\u00e9 on the left",
    "a soft\u00adhyphen and a zero\u200bwidth space stay as written",
};

TEST(safety_secret_filter_reads_normalised_text)
{
    for (size_t i = 0; i < sizeof disguised / sizeof *disguised; i++) {
        const char *k = mnemo_secret_kind(disguised[i].text, strlen(disguised[i].text));
        if (!k)
            test_fail(__FILE__, __LINE__, "not caught: %s", disguised[i].text);
        ASSERT_NOT_CONTAINS(k, disguised[i].secret);
    }
    for (size_t i = 0; i < sizeof not_secrets / sizeof *not_secrets; i++) {
        const char *k = mnemo_secret_kind(not_secrets[i], strlen(not_secrets[i]));
        if (k)
            test_fail(__FILE__, __LINE__, "caught as %s: %s", k, not_secrets[i]);
    }
    /* Through a store: refused with a message that names the kind, not the
     * secret; the rest stored as written, not as normalised. */
    test_write("ws/MEMORY.md", "a note\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    for (size_t i = 0; i < sizeof disguised / sizeof *disguised; i++) {
        json_t *r = json_pack("{s:s}", "text", disguised[i].text);
        char *rec = json_dumps(r, 0), *out = NULL;
        if (mnemo_memory_add(m, rec, &out) != MNEMO_INVALID)
            test_fail(__FILE__, __LINE__, "stored: %s", disguised[i].text);
        ASSERT_CONTAINS(mnemo_errmsg(m), "credential");
        ASSERT_NOT_CONTAINS(mnemo_errmsg(m), disguised[i].secret);
        mnemo_free(out);
        free(rec);
        json_decref(r);
    }
    for (size_t i = 0; i < sizeof not_secrets / sizeof *not_secrets; i++) {
        json_t *r = json_pack("{s:s}", "text", not_secrets[i]);
        char *rec = json_dumps(r, 0), *out = NULL;
        if (mnemo_memory_add(m, rec, &out) != MNEMO_OK)
            test_fail(__FILE__, __LINE__, "%s refused: %s", not_secrets[i], mnemo_errmsg(m));
        json_t *got = json_loads(out, 0, NULL);
        const char *id = json_string_value(json_object_get(got, "id"));
        char *back = NULL;
        ASSERT_OK(mnemo_memory_get(m, id, &back));
        json_t *b = json_loads(back, 0, NULL);
        ASSERT_STR_EQ(json_string_value(json_object_get(b, "text")), not_secrets[i]);
        json_decref(b);
        mnemo_free(back);
        json_decref(got);
        mnemo_free(out);
        free(rec);
        json_decref(r);
    }
    mnemo_close(m);
}

/* memory add, update and import on the command line and memory_add over
 * MCP (the daemon's POST /v1/memories runs the same operation) refuse the
 * same texts, and none repeats the secret. */
TEST(safety_secret_filter_on_every_entry_point)
{
    test_write("ws/MEMORY.md", "a note\n");
    static const size_t picks[] = {0, 6, 10, 12, 14, 19}; /* one of each kind */
    char *out, *err;
    ASSERT_EQ(cli(&out, NULL, "memory", "add", "User likes green tea", "--json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    char id[64];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "id")));
    json_decref(j);
    free(out);
    buf mcp;
    buf_init(&mcp, 0);
    buf_puts(&mcp, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                   "\"name\":\"t\",\"version\":\"1\"}}}\n"
                   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) {
        const char *text = disguised[picks[i]].text, *secret = disguised[picks[i]].secret;
        ASSERT(cli(&out, &err, "memory", "add", text, NULL) != 0);
        ASSERT_CONTAINS(err, "credential");
        ASSERT_NOT_CONTAINS(err, secret);
        ASSERT_NOT_CONTAINS(out, secret);
        free(out);
        free(err);
        ASSERT(cli(&out, &err, "memory", "update", id, "--text", text, NULL) != 0);
        ASSERT_CONTAINS(err, "credential");
        ASSERT_NOT_CONTAINS(err, secret);
        free(out);
        free(err);
        json_t *line = json_pack("{s:s}", "text", text);
        char *l = json_dumps(line, 0);
        test_write("one.jsonl", l);
        ASSERT(cli(&out, &err, "memory", "import", test_path("one.jsonl"), NULL) != 0);
        ASSERT_CONTAINS(err, "credential");
        ASSERT_NOT_CONTAINS(err, secret);
        free(out);
        free(err);
        json_t *call = json_pack("{s:s,s:I,s:s,s:{s:s,s:{s:s}}}", "jsonrpc", "2.0", "id",
                                 (json_int_t)(10 + i), "method", "tools/call", "params", "name",
                                 "memory_add", "arguments", "text", text);
        char *c = json_dumps(call, 0);
        buf_puts(&mcp, c);
        buf_putc(&mcp, '\n');
        free(c);
        json_decref(call);
        free(l);
        json_decref(line);
    }
    ASSERT_EQ(test_cli(&out, &err, mcp.data, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "mcp", NULL),
              0);
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++)
        ASSERT_NOT_CONTAINS(out, disguised[picks[i]].secret);
    /* Every call answered with the refusal. */
    size_t refused = 0;
    for (char *p = out, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        *nl = 0;
        json_t *r = json_loads(p, 0, NULL);
        json_t *res = json_object_get(r, "result");
        if (json_integer_value(json_object_get(r, "id")) >= 10 &&
            json_is_true(json_object_get(res, "isError")) && strstr(p, "credential"))
            refused++;
        json_decref(r);
    }
    ASSERT_EQ(refused, sizeof picks / sizeof *picks);
    free(out);
    free(err);
    buf_cleanup(&mcp);
    ASSERT_EQ(cli(&out, NULL, "memory", "list", "--json", NULL), 0);
    j = json_loads(out, 0, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(j, "total")), 1);
    json_decref(j);
    free(out);
    ASSERT_EQ(cli(&out, NULL, "memory", "get", id, "--json", NULL), 0);
    ASSERT_CONTAINS(out, "User likes green tea");
    free(out);
}

TEST(safety_folders_too_deep_are_reported)
{
    test_write("ws/MEMORY.md", "a note\n");
    char rel[4096] = "ws/memory";
    for (int i = 0; i < 70; i++)
        strcat(rel, "/d");
    strcat(rel, "/deep.md");
    test_write(rel, "a note about narwhals far down\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT(s.files_skipped >= 1);
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    ASSERT_CONTAINS(st, "more than 64 levels deep");
    mnemo_free(st);
    mnemo_close(m);
}

TEST(safety_unreadable_memory_store_leaves_notes_working)
{
    with_memories(3);
    test_write("db.memories.sqlite", "this is not a database at all, but it is the user's file");
    unlink(test_path("db.memories.sqlite-wal"));
    unlink(test_path("db.memories.sqlite-shm"));
    char *out = NULL, *err = NULL;
    ASSERT_EQ(cli(&out, NULL, "search", "herons", NULL), 0);
    ASSERT_CONTAINS(out, "2026-11-28.md");
    free(out);
    ASSERT_EQ(cli(NULL, &err, "memory", "list", NULL), 5);
    ASSERT_CONTAINS(err, "cannot be read");
    ASSERT_CONTAINS(err, "mnemo memory recover");
    free(err);
    /* A rebuild of the notes goes on; the store is not touched. */
    ASSERT_EQ(cli(NULL, NULL, "index", "--force", NULL), 0);
    char *t = test_read(test_path("db.memories.sqlite"), NULL);
    ASSERT_STR_EQ(t, "this is not a database at all, but it is the user's file");
    free(t);
}

static int header_byte(const char *path, long off)
{
    FILE *f = fopen(path, "rb");
    ASSERT(f != NULL);
    ASSERT_EQ(fseek(f, off, SEEK_SET), 0);
    int c = fgetc(f);
    fclose(f);
    return c;
}

/* A rebuild nobody else watches renames the new file in (room for two
 * files, not three); one with a reader attached copies it in, and the
 * reader goes on with the new index. Either way the file is left in WAL
 * mode with nothing beside it. */
TEST(safety_rebuild_renames_when_alone_and_copies_when_in_use)
{
    with_memories(3);
    struct stat a, b, c;
    ASSERT_EQ(stat(test_path("db.sqlite"), &a), 0);
    ASSERT_EQ(cli(NULL, NULL, "index", "--force", NULL), 0);
    ASSERT_EQ(stat(test_path("db.sqlite"), &b), 0);
    ASSERT(a.st_ino != b.st_ino);
    ASSERT_EQ(header_byte(test_path("db.sqlite"), 18), 2); /* WAL */
    ASSERT_EQ(count_files("tmp-"), 0);
    ASSERT_EQ(count_files("sqlite-journal"), 0);
    ASSERT(test_sql_int(test_path("db.sqlite"), "SELECT count(*) FROM chunks") > 0);
    ASSERT_EQ(list_count(), 3);

    sqlite3 *reader;
    ASSERT_EQ(sqlite3_open_v2(test_path("db.sqlite"), &reader, SQLITE_OPEN_READONLY, NULL),
              SQLITE_OK);
    sqlite3_stmt *q;
    ASSERT_EQ(sqlite3_prepare_v2(reader, "SELECT count(*) FROM chunks", -1, &q, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    ASSERT_EQ(sqlite3_reset(q), SQLITE_OK);
    test_write("ws/memory/2026-11-30.md", "- a third note about kites\n");
    ASSERT_EQ(cli(NULL, NULL, "index", "--force", NULL), 0);
    ASSERT_EQ(stat(test_path("db.sqlite"), &c), 0);
    ASSERT_EQ(b.st_ino, c.st_ino); /* copied: the reader's file is the live one */
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int(q, 0), test_sql_int(test_path("db.sqlite"), "SELECT count(*) FROM chunks"));
    sqlite3_finalize(q);
    sqlite3_close(reader);
    ASSERT_EQ(header_byte(test_path("db.sqlite"), 18), 2);
    ASSERT_EQ(count_files("tmp-"), 0);
    char *out = NULL;
    ASSERT_EQ(cli(&out, NULL, "search", "kites", NULL), 0);
    ASSERT(strstr(out, "2026-11-30.md") != NULL);
    free(out);
    ASSERT_EQ(list_count(), 3);

    /* A handle in the same process (a daemon's worker) counts as a reader. */
    mnemo *m1 = test_open("ws", "db.sqlite", NULL), *m2 = test_open("ws", "db.sqlite", NULL);
    char *j = test_search_json(m1, "kites", 5);
    ASSERT_CONTAINS(j, "2026-11-30.md");
    mnemo_free(j);
    test_write("ws/memory/2026-12-01.md", "- a fourth note about lanterns\n");
    mnemo_sync_opts o = {1, NULL, NULL};
    mnemo_sync_stats st;
    ASSERT_OK(mnemo_sync(m2, &o, &st));
    ASSERT(st.rebuilt);
    ASSERT_EQ(stat(test_path("db.sqlite"), &a), 0);
    ASSERT_EQ(a.st_ino, c.st_ino);
    j = test_search_json(m1, "lanterns", 5);
    ASSERT_CONTAINS(j, "2026-12-01.md");
    mnemo_free(j);
    mnemo_close(m2);
    mnemo_close(m1);
}

/* A rebuild killed after leaving WAL mode and before its rename left the
 * index in rollback mode: the next writer puts it back. */
TEST(safety_index_left_in_rollback_mode_returns_to_wal)
{
    with_memories(1);
    run_sql(test_path("db.sqlite"), "PRAGMA journal_mode=DELETE");
    ASSERT_EQ(header_byte(test_path("db.sqlite"), 18), 1);
    ASSERT_EQ(cli(NULL, NULL, "index", NULL), 0);
    ASSERT_EQ(header_byte(test_path("db.sqlite"), 18), 2);
    ASSERT_EQ(list_count(), 1);
}

/* An index cut so short that SQLite cannot read its schema is still known
 * as ours by the id in its header: the recommended fix rebuilds it, keeps
 * the damaged file under the name it reports, and loses no memory. */
TEST(safety_index_with_unreadable_schema_is_rebuilt)
{
    with_memories(5);
    ASSERT_EQ(truncate(test_path("db.sqlite"), 4096), 0);
    unlink(test_path("db.sqlite-wal"));
    unlink(test_path("db.sqlite-shm"));
    char *out = NULL, *err = NULL;
    ASSERT_EQ(cli(&out, NULL, "status", NULL), 5);
    ASSERT_CONTAINS(out, "rebuild it with: mnemo index --force");
    free(out);
    ASSERT_EQ(cli(NULL, &err, "index", "--force", NULL), 0);
    ASSERT_CONTAINS(err, "kept as ");
    const char *name = strstr(err, "kept as ") + strlen("kept as ");
    char kept[1024];
    size_t k = 0;
    while (name[k] && name[k] != '\n' && name[k] != ';' && k < sizeof kept - 1) {
        kept[k] = name[k];
        k++;
    }
    kept[k] = 0;
    struct stat st;
    ASSERT_EQ(stat(kept, &st), 0); /* the name it gave is the file kept */
    ASSERT_EQ(st.st_size, 4096);
    free(err);
    ASSERT_EQ(cli(NULL, NULL, "status", NULL), 0);
    ASSERT_EQ(list_count(), 5);
}

/* ----------------------------------------------------------------------
 * Salvage from damaged stores, checked against the page layout
 * -------------------------------------------------------------------- */

#define DAMAGE_ROWS 300

/* A memory store of DAMAGE_ROWS memories, one ADD event each, every tenth
 * long enough to spill onto overflow pages, moved aside as old.sqlite (the
 * next open starts an empty store). */
static void store_to_damage(void)
{
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    test_write("ws/MEMORY.md", "# Notes\n");
    unlink(test_path("db.memories.sqlite"));
    unlink(test_path("db.memories.sqlite-wal"));
    unlink(test_path("db.memories.sqlite-shm"));
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < DAMAGE_ROWS; i++) {
        buf_printf(&b, "{\"id\":\"mem-%04d\",\"text\":\"fact %d about the garden", i, i);
        for (int k = 0; i % 10 == 0 && k < 1000; k++)
            buf_puts(&b, " heron");
        buf_puts(&b, "\",\"created_at\":\"2026-01-01T00:00:00Z\",\"history\":[{\"event\":\"ADD\","
                     "\"old_text\":null,\"new_text\":\"added\",\"at\":\"2026-01-01T00:00:00Z\","
                     "\"detail\":null}]}\n");
    }
    ASSERT(!buf_err(&b));
    size_t imported = 0, skipped = 0;
    ASSERT_OK(mnemo_memory_import(m, b.data, b.len, &imported, &skipped));
    ASSERT_EQ(imported, DAMAGE_ROWS);
    buf_cleanup(&b);
    mnemo_close(m);
    run_sql(test_path("db.memories.sqlite"), "PRAGMA wal_checkpoint(TRUNCATE)");
    ASSERT_EQ(rename(test_path("db.memories.sqlite"), test_path("old.sqlite")), 0);
    unlink(test_path("db.memories.sqlite-wal"));
    unlink(test_path("db.memories.sqlite-shm"));
}

/* The rows of the memories table of PATH (intact) that no page matching
 * the SQL condition DAMAGED (on dbstat's pageno) touches: their leaf and
 * every overflow page of theirs are elsewhere. An independent count of
 * what any salvage can read back, from SQLite's own view of the pages. */
static long long rows_clear_of(const char *path, const char *damaged)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "WITH p AS (SELECT pagetype, path, ncell, (%s) AS hit FROM dbstat "
             "WHERE name = 'memories'), "
             "cut AS (SELECT DISTINCT substr(path, 1, instr(path, '+') - 1) AS cell FROM p "
             "WHERE pagetype = 'overflow' AND hit) "
             "SELECT (SELECT sum(ncell) FROM p WHERE pagetype = 'leaf' AND NOT hit) - "
             "(SELECT count(*) FROM cut JOIN p ON p.pagetype = 'leaf' AND NOT p.hit AND "
             "p.path = substr(cut.cell, 1, length(cut.cell) - 3))",
             damaged);
    return test_sql_int(path, sql);
}

static long long memories_page(const char *type, int nth)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = '%s' "
             "ORDER BY path LIMIT 1 OFFSET %d",
             type, nth);
    return test_sql_int(test_path("old.sqlite"), sql);
}

/* Recovers FILE into a new, empty memory store: what was recovered and the
 * damaged places reported. */
static void recover_fresh(const char *file, long long *recovered, long long *places)
{
    unlink(test_path("db.memories.sqlite"));
    unlink(test_path("db.memories.sqlite-wal"));
    unlink(test_path("db.memories.sqlite-shm"));
    char *out = NULL;
    ASSERT_EQ(cli(&out, NULL, "memory", "recover", file, "--json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(j != NULL);
    *recovered = json_integer_value(json_object_get(j, "recovered"));
    *places = json_integer_value(json_object_get(j, "damagedPlaces"));
    json_decref(j);
    free(out);
    ASSERT_EQ(memories_in_store(), *recovered);
}

static int byte_at(const char *path, long off)
{
    int c = header_byte(path, off);
    ASSERT(c >= 0);
    return c;
}

/* Writes a page of bytes from a fixed sequence over page PG of PATH. */
static void scramble_page(const char *path, long long pg)
{
    FILE *f = fopen(path, "r+b");
    ASSERT(f != NULL);
    unsigned char junk[4096];
    unsigned int x = 2463534242u;
    for (size_t i = 0; i < sizeof junk; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        junk[i] = (unsigned char)(x >> 24);
    }
    junk[0] = 0xa5; /* no b-tree page's kind */
    ASSERT_EQ(fseek(f, (long)(pg - 1) * 4096, SEEK_SET), 0);
    ASSERT_EQ(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    fclose(f);
}

/* An intact file: every memory and event, nothing reported skipped. */
TEST(safety_recover_intact_store_reports_nothing_skipped)
{
    store_to_damage();
    long long got, places;
    recover_fresh(test_path("old.sqlite"), &got, &places);
    ASSERT_EQ(got, DAMAGE_ROWS);
    ASSERT_EQ(places, 0);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memory_history"),
              DAMAGE_ROWS);
}

/* A row's rowid made large on its leaf: SQLite reads the file without an
 * error, but a seek past that rowid skips every later row. Then flipped
 * bytes in the keys of the tree above the leaves. Every row is still on
 * its leaf, and every one comes back. */
TEST(safety_recover_reads_rows_a_damaged_tree_hides)
{
    store_to_damage();
    char old[1024]; /* test_path's buffers are reused */
    snprintf(old, sizeof old, "%s", test_path("old.sqlite"));
    long long leaves = test_sql_int(old, "SELECT count(*) FROM dbstat WHERE name = 'memories' "
                                         "AND pagetype = 'leaf'");
    long long root = memories_page("internal", 0);
    long long leaf = memories_page("leaf", (int)leaves * 2 / 3);
    ASSERT(root > 1 && leaf > 1);
    char cond[64];
    snprintf(cond, sizeof cond, "pageno IN (%lld, %lld)", root, leaf);
    long long clear = rows_clear_of(old, cond);
    ASSERT(clear > 0 && clear < DAMAGE_ROWS);
    /* The first of the two varint bytes of the rowid of the leaf's first
     * cell (after its payload size), set: the same length, a rowid past
     * 16,000. */
    long lbase = (long)(leaf - 1) * 4096;
    long cell = lbase + (byte_at(old, lbase + 8) << 8 | byte_at(old, lbase + 9));
    int k = 0;
    while (byte_at(old, cell + k) & 0x80)
        k++;
    ASSERT(byte_at(old, cell + k + 1) & 0x80);
    ASSERT(!(byte_at(old, cell + k + 2) & 0x80));
    overwrite(old, cell + k + 1, 0xff, 1);
    long long got, places;
    recover_fresh(old, &got, &places);
    ASSERT(got >= clear);
    ASSERT_EQ(got, DAMAGE_ROWS); /* no row's own bytes were touched... */
    ASSERT_EQ(places, 0);        /* ...and none was skipped */
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memory_history"),
              DAMAGE_ROWS);
    /* The keys of a third of the interior cells (after each 4-byte child). */
    long base = (long)(root - 1) * 4096;
    int ncell = byte_at(old, base + 3) << 8 | byte_at(old, base + 4);
    ASSERT(ncell > 4);
    for (int i = 0; i < ncell; i += 3) {
        long key = base + (byte_at(old, base + 12 + 2 * i) << 8 | byte_at(old, base + 13 + 2 * i));
        overwrite(old, key + 4, byte_at(old, key + 4) ^ 0x30, 1);
    }
    recover_fresh(old, &got, &places);
    ASSERT_EQ(got, DAMAGE_ROWS);
    ASSERT_EQ(places, 0);
}

/* A page of the tree overwritten (the root above every leaf) and a leaf
 * overwritten: the rows of every other leaf come back, and the lost ones
 * are reported as skipped. */
TEST(safety_recover_reads_leaves_under_an_overwritten_page)
{
    store_to_damage();
    char old[1024]; /* test_path's buffers are reused */
    snprintf(old, sizeof old, "%s", test_path("old.sqlite"));
    long long root = memories_page("internal", 0), leaf = memories_page("leaf", 12);
    char cond[64];
    snprintf(cond, sizeof cond, "pageno IN (%lld, %lld)", root, leaf);
    long long clear = rows_clear_of(old, cond);
    ASSERT(clear > 0 && clear < DAMAGE_ROWS);
    scramble_page(old, root);
    scramble_page(old, leaf);
    long long got, places;
    recover_fresh(old, &got, &places);
    ASSERT(got >= clear);
    ASSERT(got < DAMAGE_ROWS);
    ASSERT(places > 0);
    /* Nothing but the root: nothing lost, the page still counted. */
    store_to_damage();
    root = memories_page("internal", 0);
    scramble_page(old, root);
    recover_fresh(old, &got, &places);
    ASSERT_EQ(got, DAMAGE_ROWS);
    ASSERT_EQ(places, 1);
}

/* A file cut at 60 %: every row wholly before the cut comes back, rows
 * cut off are reported as skipped. */
TEST(safety_recover_reads_what_is_left_of_a_file_cut_short)
{
    store_to_damage();
    char old[1024]; /* test_path's buffers are reused */
    snprintf(old, sizeof old, "%s", test_path("old.sqlite"));
    struct stat st;
    ASSERT_EQ(stat(old, &st), 0);
    long cut = (long)(st.st_size * 6 / 10) + 100; /* inside a page */
    char cond[64];
    snprintf(cond, sizeof cond, "pageno > %ld", cut / 4096);
    long long clear = rows_clear_of(old, cond);
    ASSERT(clear > 0 && clear < DAMAGE_ROWS);
    ASSERT_EQ(truncate(old, cut), 0);
    long long got, places;
    recover_fresh(old, &got, &places);
    ASSERT(got >= clear);
    ASSERT(got < DAMAGE_ROWS);
    ASSERT(places > 0);
}

/* Deleted rows on pages SQLite freed (a delete without secure_delete
 * leaves their bytes) stay deleted: the freelist is not read, and is not
 * damage. */
TEST(safety_recover_leaves_freed_pages_alone)
{
    store_to_damage();
    char old[1024]; /* test_path's buffers are reused */
    snprintf(old, sizeof old, "%s", test_path("old.sqlite"));
    run_sql(old, "PRAGMA secure_delete = OFF;"
                 "DELETE FROM memories WHERE id BETWEEN 'mem-0100' AND 'mem-0199';"
                 "DELETE FROM memory_history WHERE memory_id BETWEEN 'mem-0100' AND 'mem-0199'");
    ASSERT(test_sql_int(old, "PRAGMA freelist_count") > 0);
    long long got, places;
    recover_fresh(old, &got, &places);
    ASSERT_EQ(got, DAMAGE_ROWS - 100);
    ASSERT_EQ(places, 0);
    ASSERT_EQ(test_sql_int(test_path("db.memories.sqlite"), "SELECT count(*) FROM memories "
                                                            "WHERE id BETWEEN 'mem-0100' AND "
                                                            "'mem-0199'"),
              0);
}

/* The record header of the memory in cell I of leaf LEAF: its offset in
 * the file and its length. */
static long record_header(const char *path, long long leaf, int i, int *hlen)
{
    long base = (long)(leaf - 1) * 4096;
    long c = base + (byte_at(path, base + 8 + 2 * i) << 8 | byte_at(path, base + 9 + 2 * i));
    for (int v = 0; v < 2; v++) /* the payload's length, the rowid */
        while (byte_at(path, c++) & 0x80)
            ;
    *hlen = byte_at(path, c);
    return c;
}

/* The memories of the store equal, column by column, to those of ORIG. */
static long long same_as(const char *orig)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(test_path("db.memories.sqlite"), &db), SQLITE_OK);
    char sql[2048];
    snprintf(sql, sizeof sql, "ATTACH '%s' AS o", orig);
    ASSERT_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    ASSERT_EQ(sqlite3_prepare_v2(
                  db,
                  "SELECT count(*) FROM memories m JOIN o.memories x USING (id) WHERE "
                  "m.text = x.text AND m.hash = x.hash AND m.category = x.category AND "
                  "m.importance = x.importance AND m.type = x.type AND m.subject = x.subject AND "
                  "m.user_id = x.user_id AND m.agent_id = x.agent_id AND m.run_id = x.run_id AND "
                  "m.metadata = x.metadata AND m.triggers = x.triggers AND "
                  "m.created_at = x.created_at AND m.updated_at = x.updated_at AND "
                  "m.expires_at IS x.expires_at AND m.confirmations = x.confirmations AND "
                  "m.last_confirmed_at IS x.last_confirmed_at AND m.deleted_at IS x.deleted_at",
                  -1, &q, NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    long long n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* A damaged type in a row's header: its lengths no longer add up, and
 * SQLite reads the values after it shifted. One changed type (the hash's
 * length) and two types joined into one (a top bit set) are read around:
 * both memories come back whole, counted as repaired and as damaged
 * places. */
TEST(safety_recover_mends_rows_whose_types_were_damaged)
{
    store_to_damage();
    char old[1024], orig[1024];
    snprintf(old, sizeof old, "%s", test_path("old.sqlite"));
    snprintf(orig, sizeof orig, "%s", test_path("orig.sqlite"));
    size_t n;
    char *bytes = test_read(old, &n);
    ASSERT(bytes != NULL);
    test_write_n("orig.sqlite", bytes, n);
    free(bytes);
    long long leaf = memories_page("leaf", 3);
    int hlen, i = 0;
    long h;
    /* A short text: mid, id, text and hash (32 characters) one byte each. */
    while ((h = record_header(old, leaf, i, &hlen)), byte_at(old, h + 3) >= 0x80)
        ASSERT(++i < 5);
    ASSERT_EQ(byte_at(old, h + 4), 32 * 2 + 13);
    overwrite(old, h + 4, 33 * 2 + 13, 1);
    /* confirmations (the integer 0), then last_confirmed_at and deleted_at
     * (NULL): the first's top bit set joins it with the next, a blob of
     * 506 bytes. */
    h = record_header(old, leaf, i + 1, &hlen);
    ASSERT_EQ(byte_at(old, h + hlen - 3), 8);
    ASSERT_EQ(byte_at(old, h + hlen - 2), 0);
    overwrite(old, h + hlen - 3, 0x88, 1);
    long long got, places;
    recover_fresh(old, &got, &places);
    ASSERT_EQ(got, DAMAGE_ROWS);
    ASSERT_EQ(places, 2);
    ASSERT_EQ(same_as(orig), DAMAGE_ROWS);
    char *out = NULL;
    ASSERT_EQ(cli(&out, NULL, "memory", "list", "--limit", "1", "--json", NULL), 0);
    free(out);
}
