/*
 * test_sync.c - incremental sync (add, modify, delete, rename, unchanged
 * files not read, a changed file limit applied), scan rules, full rebuilds
 * and crash safety, watch mode, the status of an index that cannot be
 * reached, and large notes streamed in windows (the same index as read
 * whole, a bounded peak of memory).
 */
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "backend.h"
#include "engine/prep.h"
#include "store/sqlite/fts.h"
#include "test.h"
#include "util/buf.h"
#include "util/utf8.h"

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

/* ----------------------------------------------------------------------
 * Large notes, streamed in windows
 * -------------------------------------------------------------------- */

/* A note of about BYTES bytes with every kind of line the chunker and
 * the reading treat apart: a byte-order mark, CRLF ends, annotations,
 * lines longer than a chunk (and than a small window), CJK, bytes that are
 * not UTF-8, and no newline at the end. */
static void big_note(buf *b, size_t bytes, unsigned seed)
{
    static const char *const words[] = {"heron",   "deploy", "the",  "gateway", "rollback",
                                        "kafka",   "数据库", "迁移", "walrus",  "quartz",
                                        "sprocket", "ledger"};
    unsigned r = seed * 2654435761u + 1;
    buf_puts(b, "\xef\xbb\xbf# A large note\n");
    for (int i = 0; b->len < bytes; i++) {
        r = r * 1103515245u + 12345u;
        unsigned k = (r >> 16) % 20;
        if (k == 0) {
            buf_puts(b, "\n");
            continue;
        }
        int n = k == 1 ? 400 : 1 + (int)((r >> 8) % 14);
        if (k == 2)
            buf_puts(b, "- ");
        for (int w = 0; w < n; w++) {
            r = r * 1103515245u + 12345u;
            buf_printf(b, "%s%s", w ? " " : "", words[(r >> 16) % 12]);
        }
        if (k == 3)
            buf_printf(b, " <!-- importance: %u -->", 1 + (r >> 20) % 10);
        if (k == 4)
            buf_printf(b, " <!-- trigger: t%u -->", i % 97);
        if (k == 5)
            buf_puts(b, " caf\xe9 \xc3");
        buf_printf(b, " n%d%s", i, k == 6 ? "\r\n" : "\n");
    }
    buf_puts(b, "the last line without a newline");
}

/* Every chunk of DB (path, seq, lines, hash, importance, triggers, text)
 * and every file row, as one string. Caller frees. */
static char *dump_chunks(const char *db)
{
    sqlite3 *h;
    ASSERT_EQ(sqlite3_open_v2(test_path(db), &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    buf out;
    buf_init(&out, 0);
    static const char *const sql[] = {
        "SELECT f.path, c.seq, c.start_line, c.end_line, c.hash, c.importance, c.triggers, "
        "c.text FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY f.path, c.seq",
        "SELECT path, size, hash, status, reason, nchunks FROM files ORDER BY path"};
    for (size_t i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_prepare_v2(h, sql[i], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                buf_printf(&out, "%s\x1f", v ? v : "(null)");
            }
            buf_putc(&out, '\n');
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    ASSERT_OK(buf_err(&out));
    return buf_detach(&out);
}

/* The results of QUERY as one string: each one's path, lines, scores and
 * snippet. Caller frees. */
static char *dump_search(mnemo *m, const char *query)
{
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.max_results = 20;
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, query, &o, &r));
    buf out;
    buf_init(&out, 0);
    for (size_t i = 0; i < mnemo_results_count(r); i++) {
        const mnemo_result *x = mnemo_results_get(r, i);
        buf_printf(&out, "%s %d-%d %.6f %.6f %s\n", x->path, x->start_line, x->end_line,
                   x->score, x->text_score, x->snippet);
    }
    mnemo_results_free(r);
    return buf_detach(&out);
}

/* Indexes ws into DB with the window WINDOW ("" for the default: the
 * note is read whole); returns the sync's statistics. */
static mnemo_sync_stats sync_window(const char *db, const char *window)
{
    if (*window)
        setenv("MNEMO_INDEX_WINDOW", window, 1);
    else
        unsetenv("MNEMO_INDEX_WINDOW");
    mnemo *m = test_open("ws", db, "maxFileBytes=2000000", NULL);
    mnemo_sync_stats s = test_sync(m);
    mnemo_close(m);
    unsetenv("MNEMO_INDEX_WINDOW");
    return s;
}

TEST(sync_large_note_streamed_in_windows_indexes_as_read_whole)
{
    buf note;
    buf_init(&note, 0);
    big_note(&note, 600000, 1);
    test_write_n("ws/memory/big.md", note.data, note.len);
    test_write("ws/memory/small.md", "a small note about a heron\n");
    /* Streamed or not, a binary note and one over the limit are skipped. */
    buf bin;
    buf_init(&bin, 0);
    big_note(&bin, 300000, 2);
    bin.data[250000] = 0;
    test_write_n("ws/memory/binary.md", bin.data, bin.len);
    buf huge;
    buf_init(&huge, 0);
    big_note(&huge, 2100000, 3);
    test_write_n("ws/memory/huge.md", huge.data, huge.len);

    static const char *const windows[] = {"", "65536", "100", "16"};
    static const char *const dbs[] = {"whole.sqlite", "w65536.sqlite", "w100.sqlite",
                                      "w16.sqlite"};
    static const char *const queries[] = {"heron walrus", "数据库 rollback", "caf",
                                          "\"kafka gateway\"", "quartz ledger sprocket", "deploy"};
    char *want = NULL, *want_q[6] = {0};
    for (size_t w = 0; w < 4; w++) {
        mnemo_sync_stats s = sync_window(dbs[w], windows[w]);
        ASSERT_EQ(s.files_added, 2);
        ASSERT_EQ(s.files_skipped, 2);
        ASSERT(s.chunks_added > 200);
        char *got = dump_chunks(dbs[w]);
        ASSERT_CONTAINS(got, "binary (contains NUL bytes)");
        ASSERT_CONTAINS(got, "too large (");
        ASSERT_CONTAINS(got, "caf\xef\xbf\xbd \xef\xbf\xbd");
        mnemo *m = test_open("ws", dbs[w], NULL);
        for (size_t q = 0; q < 6; q++) {
            char *res = dump_search(m, queries[q]);
            if (!*res)
                test_fail(__FILE__, __LINE__, "no result for %s", queries[q]);
            if (!w)
                want_q[q] = res;
            else {
                ASSERT_STR_EQ(res, want_q[q]);
                free(res);
            }
        }
        mnemo_close(m);
        if (!w)
            want = got;
        else {
            ASSERT_STR_EQ(got, want);
            free(got);
        }
    }
    free(want);

    /* An edit near the end: the leading chunks stay, the rest are
     * replaced, the same way whether the note is streamed or not. */
    memcpy(note.data + note.len - 2000, "EDITED", 6);
    note.len -= 500;
    test_write_n("ws/memory/big.md", note.data, note.len);
    mnemo_sync_stats s0 = sync_window(dbs[0], windows[0]);
    ASSERT_EQ(s0.files_changed, 1);
    ASSERT(s0.chunks_added > 0 && s0.chunks_added < 20);
    want = dump_chunks(dbs[0]);
    ASSERT_CONTAINS(want, "EDITED");
    for (size_t w = 1; w < 4; w++) {
        mnemo_sync_stats s = sync_window(dbs[w], windows[w]);
        ASSERT_EQ(s.files_changed, 1);
        ASSERT_EQ(s.chunks_added, s0.chunks_added);
        ASSERT_EQ(s.chunks_removed, s0.chunks_removed);
        char *got = dump_chunks(dbs[w]);
        ASSERT_STR_EQ(got, want);
        free(got);
    }
    free(want);
    for (size_t q = 0; q < 6; q++)
        free(want_q[q]);
    buf_cleanup(&note);
    buf_cleanup(&bin);
    buf_cleanup(&huge);
}

/* Every chunk of a streamed item's runs into OUT (texts and hashes). */
static void all_runs(prep_item *it, buf *out, size_t *n)
{
    int more;
    *n = 0;
    while (!prep_item_next(it, &more) && more) {
        ASSERT_EQ(it->first, *n);
        for (size_t i = 0; i < it->chunks.n; i++) {
            const chunk *c = &it->chunks.items[i];
            buf_printf(out, "%d-%d %s ", c->start_line, c->end_line, c->hash);
            buf_append(out, chunk_text(&it->chunks, c), c->text_len);
            buf_putc(out, '\n');
        }
        *n += it->chunks.n;
    }
}

/* The same for TEXT read whole as a note (a byte-order mark dropped, bytes
 * that are not UTF-8 replaced). */
static void whole_chunks(const buf *text, buf *out, size_t *n)
{
    const char *s = text->data + 3;
    size_t len = text->len - 3;
    buf fixed;
    buf_init(&fixed, 0);
    ASSERT_OK(utf8_repair(&fixed, s, len));
    chunk_list l;
    chunk_list_init(&l);
    chunk_opts o = {400, 80, 0};
    ASSERT_OK(chunk_markdown(fixed.data, fixed.len, &o, &l));
    for (size_t i = 0; i < l.n; i++) {
        const chunk *c = &l.items[i];
        buf_printf(out, "%d-%d %s ", c->start_line, c->end_line, c->hash);
        buf_append(out, chunk_text(&l, c), c->text_len);
        buf_putc(out, '\n');
    }
    *n = l.n;
    chunk_list_cleanup(&l);
    buf_cleanup(&fixed);
}

TEST(sync_streamed_note_changed_between_reads_keeps_the_bytes_chunked)
{
    buf note;
    buf_init(&note, 0);
    big_note(&note, 200000, 4);
    test_write_n("ws/memory/a.md", note.data, note.len);
    prep_input in;
    memset(&in, 0, sizeof in);
    in.abs = (char *)test_path("ws/memory/a.md");
    prep_opts o;
    memset(&o, 0, sizeof o);
    o.chunking = (chunk_opts){400, 80, 0};
    o.max_bytes = 10 << 20;
    o.language = "english";
    o.window = 4096;
    for (int change = 0; change < 4; change++) {
        test_write_n("ws/memory/a.md", note.data, note.len);
        o.max_bytes = change == 3 ? (int64_t)note.len + 1000 : 10 << 20;
        prep *p;
        ASSERT_OK(prep_start(&p, &in, 1, &o));
        prep_item *it = prep_next(p);
        ASSERT_OK(it->status);
        ASSERT(it->streamed && it->chunked);
        ASSERT_EQ(it->bytes, note.len);
        char h[HASH_HEX_LEN + 1];
        hash_hex(note.data, note.len, h);
        ASSERT_STR_EQ(it->hash, h);
        /* Between the read that hashed it and the one that chunks it, the
         * note is written in place: a line in the middle (1), a NUL byte
         * (2), or it grows past the limit (3: read up to the limit, as its
         * next sync skips it): the chunks are those of the bytes read, and
         * the hash theirs
         * (the sink stores it with the size and time from before the
         * first read, which the write changed: the next sync reads it). */
        buf now;
        buf_init(&now, 0);
        buf_append(&now, note.data, note.len);
        if (change == 1)
            memcpy(now.data + note.len / 2, "\nA LINE WRITTEN MEANWHILE\n", 26);
        if (change == 2)
            now.data[note.len / 3] = 0;
        if (change == 3)
            for (int i = 0; i < 200; i++)
                buf_printf(&now, "grown line %d\n", i);
        if (change) {
            int fd = open(test_path("ws/memory/a.md"), O_WRONLY);
            ASSERT(fd >= 0);
            ASSERT_EQ(pwrite(fd, now.data, now.len, 0), (long long)now.len);
            close(fd);
        }
        buf got, want;
        buf_init(&got, 0);
        buf_init(&want, 0);
        size_t ngot, nwant;
        all_runs(it, &got, &ngot);
        ASSERT(ngot > 50);
        ASSERT_EQ(it->changed, change != 0);
        if (change == 3) {
            ASSERT(now.len > note.len + 1000);
            now.len = note.len + 1000; /* what was read */
        }
        hash_hex(now.data, now.len, h);
        ASSERT_STR_EQ(it->hash, h);
        whole_chunks(&now, &want, &nwant);
        ASSERT_EQ(ngot, nwant);
        ASSERT_EQ(got.len, want.len); /* a NUL byte may be in them */
        ASSERT(memcmp(got.data, want.data, got.len) == 0);
        if (change == 1)
            ASSERT_CONTAINS(got.data, "A LINE WRITTEN MEANWHILE");
        prep_stop(p);
        buf_cleanup(&got);
        buf_cleanup(&want);
        buf_cleanup(&now);
    }
    buf_cleanup(&note);
}

/* AddressSanitizer's shadow memory and quarantine make a peak of resident
 * memory say nothing of the sync's own. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

/* Peak resident memory (KiB) of `mnemo index` on ws into DB, with the
 * window WINDOW (NULL: the default). */
static long index_peak_kib(const char *db, const char *window)
{
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 0);
        dup2(fd, 1);
        if (window)
            setenv("MNEMO_INDEX_WINDOW", window, 1);
        setenv("MNEMO_MAX_FILE_BYTES", "100000000", 1);
        setenv("MNEMO_PROVIDER", "none", 1);
        execl(test_bin(), test_bin(), "-w", test_path("ws"), "--db", test_path(db), "index",
              "-q", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return ru.ru_maxrss;
}

TEST(sync_large_note_peak_memory_stays_bounded)
{
    buf note;
    buf_init(&note, 0);
    big_note(&note, ASAN ? 8 << 20 : 40 << 20, 5);
    test_write_n("ws/memory/big.md", note.data, note.len);
    buf_cleanup(&note);
    /* Streamed, the sync holds a window of it, its chunks and tokens, and
     * SQLite's page cache and FTS5 buffer (about 150 MiB in all, as for a
     * 200 MB note); read whole, this note took about 370 MiB. */
    long peak = index_peak_kib("db.sqlite", NULL);
    ASSERT(db_int("SELECT count(*) FROM chunks") > (ASAN ? 2000 : 10000));
    ASSERT_EQ(db_int("SELECT count(*) FROM files WHERE status = 0"), 1);
    if (!ASAN && peak > 240 << 10)
        test_fail(__FILE__, __LINE__, "indexing a 40 MiB note peaked at %ld KiB", peak);
}
