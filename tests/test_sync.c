/*
 * test_sync.c - incremental sync (add, modify, delete, rename, unchanged
 * files not read, a changed file limit applied), scan rules, full rebuilds
 * and crash safety, watch mode, and the status of an index that cannot be
 * reached.
 */
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "backend.h"
#include "store/sqlite/fts.h"
#include "test.h"
#include "util/buf.h"

static long long db_int(const char *sql) { return test_sql_int(test_path("db.sqlite"), sql); }

static void basic_ws(void)
{
    test_write("ws/MEMORY.md", "# Memory\n- The gateway runs on atlas\n- Backups at 02:00\n");
    test_write("ws/USER.md", "- Chris prefers dark mode\n");
    test_write("ws/memory/2026-11-01.md", "# 2026-11-01\nDebugged the flaky billing test.\n");
    test_write("ws/memory/2026-11-02.md", "# 2026-11-02\nPostgres migration planning.\n");
}

TEST(sync_add_modify_delete)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 4);
    ASSERT_EQ(s.files_seen, 4);
    ASSERT(s.rebuilt);
    ASSERT_EQ(s.chunks_added, 6); /* 3 entries in MEMORY.md, 1 in USER.md, 2 notes */

    test_write("ws/memory/2026-11-01.md", "# 2026-11-01\nFixed the flaky billing test: a race.\n");
    test_write("ws/memory/2026-11-03.md", "Gateway certificate renewed.\n");
    unlink(test_path("ws/memory/2026-11-02.md"));
    s = test_sync(m);
    ASSERT(!s.rebuilt);
    ASSERT_EQ(s.files_added, 1);
    ASSERT_EQ(s.files_changed, 1);
    ASSERT_EQ(s.files_removed, 1);
    ASSERT_EQ(s.files_unchanged, 2);
    ASSERT_EQ(db_int("SELECT count(*) FROM files"), 4);
    ASSERT_EQ(db_int("SELECT count(*) FROM chunks"), 6);

    char *j = test_search_json(m, "race", 5);
    ASSERT_CONTAINS(j, "memory/2026-11-01.md");
    mnemo_free(j);
    j = test_search_json(m, "postgres", 5);
    ASSERT_STR_EQ(j, "{\"results\":[],\"mode\":\"keyword\"}");
    mnemo_free(j);
    /* The FTS index follows the chunks table exactly. */
    ASSERT_EQ(db_int("SELECT count(*) FROM chunks_fts_docsize"), 6);
    mnemo_close(m);
}

TEST(sync_unchanged_files_are_not_read)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT(s.bytes_read > 0);
    s = test_sync(m);
    ASSERT_EQ(s.bytes_read, 0);
    ASSERT_EQ(s.files_unchanged, 4);
    ASSERT_EQ(s.chunks_added, 0);
    /* Same content, new mtime: read and hashed, chunks kept. */
    long long before = db_int("SELECT max(id) FROM chunks");
    struct utimbuf ut = {time(NULL) + 100, time(NULL) + 100};
    ASSERT_OK(utime(test_path("ws/USER.md"), &ut));
    s = test_sync(m);
    ASSERT_EQ(s.files_touched, 1);
    ASSERT(s.bytes_read > 0);
    ASSERT_EQ(s.chunks_added, 0);
    ASSERT_EQ(db_int("SELECT max(id) FROM chunks"), before);
    mnemo_close(m);
}

TEST(sync_rename_keeps_chunks)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    long long id = db_int("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                          "WHERE f.path = 'memory/2026-11-02.md'");
    test_mkdir("ws/memory/archive");
    ASSERT_OK(rename(test_path("ws/memory/2026-11-02.md"),
                     test_path("ws/memory/archive/2026-11-02.md")));
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_renamed, 1);
    ASSERT_EQ(s.files_removed, 0);
    ASSERT_EQ(s.chunks_added, 0);
    ASSERT_EQ(db_int("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                     "WHERE f.path = 'memory/archive/2026-11-02.md'"),
              id);
    char *j = test_search_json(m, "postgres", 5);
    ASSERT_CONTAINS(j, "\"citation\":\"memory/archive/2026-11-02.md#L1-L2\"");
    mnemo_free(j);
    /* The renamed file is found by its new name too. */
    j = test_search_json(m, "archive", 5);
    ASSERT_CONTAINS(j, "memory/archive/2026-11-02.md");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(sync_scan_rules)
{
    basic_ws();
    test_write("ws/memory/.hidden.md", "secret hidden note\n");
    test_write("ws/memory/.obsidian/x.md", "hidden folder note\n");
    test_write("ws/memory/node_modules/pkg/readme.md", "dependency readme\n");
    test_write("ws/memory/.git/HEAD.md", "git internals\n");
    test_write("ws/memory/notes.txt", "not markdown\n");
    test_write("ws/memory/sub/deep/nested.md", "nested note about kayaks\n");
    test_write("outside/target.md", "outside target text\n");
    ASSERT_OK(symlink(test_path("outside/target.md"), test_path("ws/memory/link.md")));
    ASSERT_OK(symlink(test_path("outside"), test_path("ws/memory/linkdir")));
    ASSERT_OK(link(test_path("ws/memory/2026-11-01.md"), test_path("ws/memory/hardlink.md")));
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 5); /* 4 + nested; the hard link is the same file */
    ASSERT_EQ(db_int("SELECT count(*) FROM files WHERE status = 0"), 5);
    ASSERT_EQ(db_int("SELECT count(*) FROM files WHERE status = 1 AND reason LIKE 'symlink%'"), 2);
    char *j = test_search_json(m, "secret hidden dependency internals outside markdown", 10);
    ASSERT_STR_EQ(j, "{\"results\":[],\"mode\":\"keyword\"}");
    mnemo_free(j);
    j = test_search_json(m, "kayaks", 10);
    ASSERT_CONTAINS(j, "memory/sub/deep/nested.md");
    mnemo_free(j);
    char *st;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    ASSERT_CONTAINS(st, "\"path\": \"memory/link.md\"");
    ASSERT_CONTAINS(st, "symlink (not followed)");
    mnemo_free(st);
    mnemo_close(m);
}

TEST(sync_extra_paths)
{
    basic_ws();
    test_write("ws/docs/guide.md", "guide about zebras\n");
    test_write("ws/docs/raw.txt", "text about giraffes\n");
    test_write("ext/single.txt", "one file about penguins\n");
    test_write("ext/folder/a.rst", "restructured walruses\n");
    test_write("ext/folder/b.md", "markdown otters\n");
    char extra[1024];
    snprintf(extra, sizeof extra,
             "[\"docs\", \"%s\", {\"path\": \"%s\", \"pattern\": \"*.rst\"}, \"memory\"]",
             test_path("ext/single.txt"), test_path("ext/folder"));
    char kv[1100];
    snprintf(kv, sizeof kv, "extraPaths=%s", extra);
    mnemo *m = test_open("ws", "db.sqlite", kv, NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 7); /* 4 + guide.md + single.txt + a.rst; memory/ listed once */
    char *j = test_search_json(m, "zebras penguins walruses", 10);
    ASSERT_CONTAINS(j, "\"docs/guide.md\"");
    ASSERT_CONTAINS(j, "ext/single.txt");
    ASSERT_CONTAINS(j, "ext/folder/a.rst");
    mnemo_free(j);
    j = test_search_json(m, "giraffes otters", 10);
    ASSERT_STR_EQ(j, "{\"results\":[],\"mode\":\"keyword\"}");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(sync_force_rebuild_swaps_in_fresh_file)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    struct stat a, b;
    ASSERT_OK(stat(test_path("db.sqlite"), &a));
    mnemo_sync_opts o = {1, NULL, NULL};
    mnemo_sync_stats s;
    ASSERT_OK(mnemo_sync(m, &o, &s));
    ASSERT(s.rebuilt);
    ASSERT_STR_EQ(s.rebuild_reason, "--force");
    ASSERT_OK(stat(test_path("db.sqlite"), &b));
    /* Nobody else had it open: renamed in (copied in when a reader has it,
     * test_safety.c), and the build's temporary file is gone. */
    ASSERT(a.st_ino != b.st_ino);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp- > %s", test_dir(), test_path("n"));
    system(cmd);
    char *n = test_read(test_path("n"), NULL);
    ASSERT_STR_EQ(n, "0\n");
    free(n);
    char *j = test_search_json(m, "atlas", 5);
    ASSERT_CONTAINS(j, "MEMORY.md#L2-L2");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(sync_settings_change_rebuilds)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    m = test_open("ws", "db.sqlite", "language=none", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT(s.rebuilt);
    ASSERT_CONTAINS(s.rebuild_reason, "language");
    /* No stemming now: "migration" no longer matches "migrations". */
    test_write("ws/memory/2026-11-05.md", "more migrations\n");
    test_sync(m);
    char *j = test_search_json(m, "migration", 5);
    ASSERT_CONTAINS(j, "2026-11-02.md");
    ASSERT_NOT_CONTAINS(j, "2026-11-05.md");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(sync_rules_and_workspace_changes_rebuild)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    /* An index written under older indexing rules is rebuilt. */
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(test_path("db.sqlite"), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '0' WHERE key = 'index_rules'", NULL,
                           NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);
    m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT(s.rebuilt);
    ASSERT_CONTAINS(s.rebuild_reason, "indexing rules");
    s = test_sync(m);
    ASSERT(!s.rebuilt);
    mnemo_close(m);
    /* The same index file pointed at another workspace is rebuilt for it. */
    test_write("ws2/memory/other.md", "kumquat harvest\n");
    m = test_open("ws2", "db.sqlite", NULL);
    s = test_sync(m);
    ASSERT(s.rebuilt);
    ASSERT_CONTAINS(s.rebuild_reason, "another workspace");
    char *j = test_search_json(m, "kumquat", 5);
    ASSERT_CONTAINS(j, "memory/other.md");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(sync_migrates_older_schema_in_place)
{
    basic_ws();
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    long long chunks = db_int("SELECT count(*) FROM chunks");
    /* Turn the index back into schema 3 (no transcript time, no memories,
     * one vector a chunk, no calibration vectors). */
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(test_path("db.sqlite"), &db), SQLITE_OK);
    ASSERT_EQ(fts_register(db, NULL, NULL), SQLITE_OK); /* to drop memories_fts */
    ASSERT_EQ(sqlite3_exec(db, "ALTER TABLE files DROP COLUMN time; "
                               "ALTER TABLE files DROP COLUMN mime; "
                               "ALTER TABLE chunk_vectors DROP COLUMN parts; "
                               "DROP TABLE vec_calib; "
                               "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);
    m = test_open("ws", "db.sqlite", NULL);
    char *j = test_search_json(m, "postgres", 5); /* search alone upgrades it */
    ASSERT_CONTAINS(j, "memory/2026-11-02.md");
    mnemo_free(j);
    mnemo_sync_stats s = test_sync(m);
    ASSERT(!s.rebuilt);
    ASSERT_EQ(s.files_unchanged, s.files_seen);
    mnemo_close(m);
    ASSERT_EQ(db_int("SELECT value FROM meta WHERE key = 'schema_version'"), 10);
    ASSERT_EQ(db_int("SELECT count(*) FROM sqlite_schema WHERE name = 'kw_seg'"), 1);
    ASSERT_EQ(db_int("SELECT count(*) FROM pragma_table_info('files') WHERE name = 'mime'"), 1);
    ASSERT_EQ(db_int("SELECT count(*) FROM pragma_table_info('chunk_vectors') WHERE name = "
                     "'parts'"),
              1);
    ASSERT_EQ(db_int("SELECT count(*) FROM sqlite_schema WHERE name = 'vec_calib'"), 1);
    /* Later migrations ran: memories were created, then moved to the store. */
    ASSERT_EQ(db_int("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'memor%'"), 0);
    ASSERT_EQ(db_int("SELECT count(*) FROM chunks"), chunks);
    ASSERT_EQ(db_int("SELECT count(*) FROM files WHERE time = 0"), db_int("SELECT count(*) FROM files"));
}

TEST(sync_open_handle_follows_a_rebuild)
{
    /* A long-lived handle (a daemon) keeps answering from the current index
     * after another handle rebuilt it and renamed the new file into place. */
    basic_ws();
    mnemo *daemon = test_open("ws", "db.sqlite", NULL);
    test_sync(daemon);
    char *j = test_search_json(daemon, "postgres", 5);
    ASSERT_CONTAINS(j, "memory/2026-11-02.md");
    mnemo_free(j);
    test_write("ws/memory/2026-11-20.md", "albatross colony count\n");
    mnemo *cli = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_opts o = {1, NULL, NULL};
    mnemo_sync_stats s;
    ASSERT_OK(mnemo_sync(cli, &o, &s));
    ASSERT(s.rebuilt);
    mnemo_close(cli);
    j = test_search_json(daemon, "albatross", 5);
    ASSERT_CONTAINS(j, "memory/2026-11-20.md");
    mnemo_free(j);
    mnemo_close(daemon);
}

TEST(sync_rename_into_entry_file_rechunks)
{
    /* A note moved to MEMORY.md is chunked by entries there, not kept. */
    const char *text = "- first fact about herons\n- second fact about egrets\n";
    test_write("ws/memory/draft.md", text);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    ASSERT_OK(rename(test_path("ws/memory/draft.md"), test_path("ws/MEMORY.md")));
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_renamed, 0);
    ASSERT_EQ(s.files_added, 1);
    ASSERT_EQ(s.files_removed, 1);
    char *j = test_search_json(m, "egrets", 5);
    ASSERT_CONTAINS(j, "\"citation\":\"MEMORY.md#L2-L2\"");
    mnemo_free(j);
    mnemo_close(m);
}

static void kill_at_half(void *ud, const mnemo_progress *p)
{
    (void)ud;
    if (strcmp(p->phase, "index") == 0 && p->total && p->done == p->total / 2)
        raise(SIGKILL);
}

static void big_ws(const char *word)
{
    char rel[64], body[4096];
    for (int i = 0; i < 200; i++) {
        snprintf(rel, sizeof rel, "ws/memory/n%03d.md", i);
        snprintf(body, sizeof body, "note %d about %s\n%s\n", i, word,
                 "filler text to make the note a bit longer than one line of words");
        test_write(rel, body);
    }
}

/* Runs a sync in a child that kills itself halfway through. */
static void sync_and_die(int force)
{
    pid_t pid = fork();
    if (pid == 0) {
        mnemo *m = test_open("ws", "db.sqlite", NULL);
        mnemo_sync_opts o = {force, kill_at_half, NULL};
        mnemo_sync(m, &o, NULL);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(sync_killed_mid_rebuild_keeps_last_good_index)
{
    big_ws("walrus");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    big_ws("narwhal"); /* every file changes */
    sync_and_die(1);
    m = test_open("ws", "db.sqlite", NULL);
    char *j = test_search_json(m, "walrus", 3);
    ASSERT_CONTAINS(j, "memory/n0");
    mnemo_free(j);
    j = test_search_json(m, "narwhal", 3);
    ASSERT_STR_EQ(j, "{\"results\":[],\"mode\":\"keyword\"}");
    mnemo_free(j);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp-", test_path("db.sqlite"));
    /* The next sync cleans up the dead build's file and completes. */
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_changed, 200);
    j = test_search_json(m, "narwhal", 3);
    ASSERT_CONTAINS(j, "memory/n0");
    mnemo_free(j);
    mnemo_close(m);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s* 2>/dev/null | wc -l", tmp);
    FILE *f = popen(cmd, "r");
    int n = -1;
    ASSERT(fscanf(f, "%d", &n) == 1);
    pclose(f);
    ASSERT_EQ(n, 0);
}

TEST(sync_killed_mid_incremental_rolls_back)
{
    big_ws("walrus");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    big_ws("narwhal");
    sync_and_die(0);
    m = test_open("ws", "db.sqlite", NULL);
    char *j = test_search_json(m, "narwhal", 3);
    ASSERT_STR_EQ(j, "{\"results\":[],\"mode\":\"keyword\"}"); /* nothing half-written */
    mnemo_free(j);
    j = test_search_json(m, "walrus", 300);
    ASSERT_CONTAINS(j, "memory/n199.md");
    mnemo_free(j);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_changed, 200);
    mnemo_close(m);
}

static volatile int stop_watch;
static void on_term(int sig)
{
    (void)sig;
    stop_watch = 1;
}

TEST(sync_watch_picks_up_changes)
{
    basic_ws();
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, on_term);
        mnemo *m = test_open("ws", "db.sqlite", "watchDebounceMs=200", NULL);
        int rc = mnemo_watch(m, &stop_watch, NULL, NULL);
        mnemo_close(m);
        _exit(rc);
    }
    /* Wait for the first sync, then change files. */
    for (int i = 0; i < 100 && access(test_path("db.sqlite"), F_OK) != 0; i++)
        usleep(50000);
    usleep(300000);
    test_write("ws/memory/sub/2026-11-09.md", "a note about capybaras\n");
    test_write("ws/MEMORY.md", "- The gateway moved to hydra\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    int found = 0;
    for (int i = 0; i < 100 && !found; i++) {
        usleep(100000);
        mnemo_results *r = NULL;
        if (mnemo_search(m, "capybaras hydra", NULL, &r) == 0 && mnemo_results_count(r) == 2)
            found = 1;
        mnemo_results_free(r);
    }
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    ASSERT(found);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    mnemo_close(m);
}

/* The status JSON of M. Caller frees. */
static char *status_of(mnemo *m)
{
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    return st;
}

BACKEND_TEST(sync_file_limit_rechecked_when_it_changes)
{
    test_write("ws/MEMORY.md", "# Memory\n- a short note about herons\n");
    buf big;
    buf_init(&big, 0);
    for (int i = 0; i < 70; i++) /* 3,150 bytes */
        buf_printf(&big, "- The kestrel hovers over meadow %02d at dusk.\n", i);
    ASSERT_EQ(big.len, 3150);
    test_write("ws/memory/kestrels.md", big.data);
    buf_cleanup(&big);
    mnemo *m = be_open("ws", "maxFileBytes=2048", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 1);
    ASSERT_EQ(s.files_skipped, 1);
    char *st = status_of(m), *j;
    ASSERT_CONTAINS(st, "too large (3150 bytes, limit 2048)");
    mnemo_free(st);
    j = test_search_json(m, "kestrel", 5);
    ASSERT_NOT_CONTAINS(j, "kestrels.md");
    mnemo_free(j);
    /* Unchanged, the same limit: not looked at again. */
    s = test_sync(m);
    ASSERT_EQ(s.files_unchanged, 1);
    ASSERT_EQ(s.files_skipped, 1);
    ASSERT_EQ(s.files_changed + s.files_added, 0);
    mnemo_close(m);
    /* The limit raised: a plain index brings the file in, no rebuild. */
    m = be_open("ws", "maxFileBytes=8192", NULL);
    s = test_sync(m);
    ASSERT(!s.rebuilt);
    ASSERT_EQ(s.files_changed, 1);
    ASSERT_EQ(s.files_skipped, 0);
    ASSERT(s.chunks_added >= 1);
    ASSERT_EQ(s.bytes_read, 3150);
    j = test_search_json(m, "kestrel", 5);
    ASSERT_CONTAINS(j, "memory/kestrels.md");
    mnemo_free(j);
    st = status_of(m);
    ASSERT_NOT_CONTAINS(st, "too large");
    mnemo_free(st);
    s = test_sync(m);
    ASSERT_EQ(s.files_unchanged, 2);
    ASSERT_EQ(s.bytes_read, 0);
    mnemo_close(m);
    /* Lowered again: it leaves the index, as a new file that size stays out. */
    m = be_open("ws", "maxFileBytes=2048", NULL);
    s = test_sync(m);
    ASSERT(!s.rebuilt);
    ASSERT_EQ(s.files_skipped, 1);
    ASSERT_EQ(s.bytes_read, 0); /* its size alone says so */
    j = test_search_json(m, "kestrel", 5);
    ASSERT_NOT_CONTAINS(j, "kestrels.md");
    mnemo_free(j);
    st = status_of(m);
    ASSERT_CONTAINS(st, "too large (3150 bytes, limit 2048)");
    mnemo_free(st);
    mnemo_close(m);
    /* Raised, not enough: still out, the reason naming the limit in force. */
    m = be_open("ws", "maxFileBytes=3000", NULL);
    s = test_sync(m);
    ASSERT_EQ(s.files_skipped, 1);
    ASSERT_EQ(s.files_unchanged, 1);
    st = status_of(m);
    ASSERT_CONTAINS(st, "too large (3150 bytes, limit 3000)");
    mnemo_free(st);
    mnemo_close(m);
}

TEST(status_postgres_unreachable_exits_nonzero)
{
    test_write("ws/MEMORY.md", "# Memory\n- a note\n");
    char url[200];
    snprintf(url, sizeof url, "postgres://mnemo:Hunter2-Secret@127.0.0.1:%d/x?sslmode=disable",
             pg_free_port());
    char *out = NULL, *err = NULL;
    /* Not "(not built)", exit 0: the server named, unreachable, exit 1 as
     * any command that needs it (search, index). */
    int code = test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--store", url,
                        "status", NULL);
    ASSERT_EQ(code, 1);
    ASSERT_NOT_CONTAINS(out, "not built");
    ASSERT_CONTAINS(out, "PostgreSQL server postgres://mnemo:");
    ASSERT_CONTAINS(out, "@127.0.0.1:");
    ASSERT_CONTAINS(out, " unreachable");
    ASSERT_CONTAINS(out, "cannot connect to PostgreSQL");
    ASSERT_NOT_CONTAINS(out, "Hunter2-Secret");
    ASSERT_NOT_CONTAINS(err, "Hunter2-Secret");
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--store", url, "search",
                    "note", NULL);
    ASSERT_EQ(code, 1);
    free(out);
    free(err);
    code = test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--store", url, "status",
                    "--json", NULL);
    ASSERT_EQ(code, 1);
    ASSERT_CONTAINS(out, "\"reachable\":false");
    ASSERT_CONTAINS(out, "\"errorStatus\":");
    ASSERT_NOT_CONTAINS(out, "Hunter2-Secret");
    free(out);
    free(err);
}

/* Runs mnemo on workspace "ws" and index "db.sqlite" with ARGS (NULL-ended)
 * as a user the permission bits apply to: root reads a mode-000 folder, so
 * under root the command runs as nobody (the test folder given to it).
 * Its standard output in *OUT (caller frees); returns the exit status. */
static int mnemo_unprivileged(char **out, const char *const *args)
{
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)test_bin();
    argv[n++] = "--workspace";
    argv[n++] = (char *)test_path("ws");
    argv[n++] = "--db";
    argv[n++] = (char *)test_path("db.sqlite");
    for (; *args && n < 15; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        int fd = open(test_path("out.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(126);
        if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    *out = test_read(test_path("out.txt"), NULL);
    ASSERT(*out != NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A folder under the memory roots that cannot be read is listed as
 * skipped, with why, in the sync statistics and status: not dropped as if
 * its notes were deleted. */
TEST(sync_unreadable_folder_is_skipped)
{
    test_write("ws/memory/ok.md", "a note about herons\n");
    test_write("ws/memory/secret/a.md", "a note about egrets\n");
    test_write("out.txt", "");
    if (geteuid() == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "chown -R 65534:65534 '%s'", test_dir());
        ASSERT_EQ(system(cmd), 0);
    }
    char *out;
    static const char *const index_json[] = {"index", "--json", NULL};
    static const char *const status_json[] = {"status", "--json", NULL};
    ASSERT_EQ(mnemo_unprivileged(&out, index_json), 0);
    ASSERT_CONTAINS(out, "\"filesAdded\":2");
    free(out);
    ASSERT_EQ(chmod(test_path("ws/memory/secret"), 0), 0);
    ASSERT_EQ(mnemo_unprivileged(&out, index_json), 0);
    ASSERT_CONTAINS(out, "\"filesSkipped\":1");
    free(out);
    ASSERT_EQ(mnemo_unprivileged(&out, status_json), 0);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(j != NULL);
    json_t *sk = json_object_get(j, "skipped");
    ASSERT_EQ(json_array_size(sk), 1);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(sk, 0), "path")),
                  "memory/secret");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(sk, 0), "reason")),
                  "unreadable folder: Permission denied");
    json_decref(j);
    free(out);
    /* The text report lists it too. */
    static const char *const status_text[] = {"status", NULL};
    ASSERT_EQ(mnemo_unprivileged(&out, status_text), 0);
    ASSERT_CONTAINS(out, "memory/secret: unreadable folder: Permission denied");
    free(out);
    /* Readable again: its note comes back, nothing is skipped. */
    ASSERT_EQ(chmod(test_path("ws/memory/secret"), 0755), 0);
    ASSERT_EQ(mnemo_unprivileged(&out, index_json), 0);
    ASSERT_CONTAINS(out, "\"filesAdded\":1");
    ASSERT_CONTAINS(out, "\"filesSkipped\":0");
    free(out);
    /* A folder that can be listed but not entered: its notes are named
     * as skipped, one by one, not dropped without a word. */
    ASSERT_EQ(chmod(test_path("ws/memory/secret"), 0444), 0);
    ASSERT_EQ(mnemo_unprivileged(&out, index_json), 0);
    ASSERT_CONTAINS(out, "\"filesSkipped\":1");
    free(out);
    ASSERT_EQ(mnemo_unprivileged(&out, status_text), 0);
    ASSERT_CONTAINS(out, "memory/secret/a.md: unreadable: Permission denied (its folder cannot be "
                         "entered)");
    free(out);
    ASSERT_EQ(chmod(test_path("ws/memory/secret"), 0755), 0);
}
