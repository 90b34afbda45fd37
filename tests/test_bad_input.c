/*
 * test_bad_input.c - invalid UTF-8, binary and huge files, unreadable and
 * special files, symlink loops, files vanishing mid-sync, an empty
 * workspace, corrupt, foreign and locked databases. Never a crash, never
 * a lost index.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/lock.h"
#include "util/utf8.h"

TEST(bad_invalid_utf8_indexed_with_replacement)
{
    test_write("ws/memory/latin1.md", "caf\xe9 au lait with walrus\n\xff\xfe broken \xc3 bytes\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 1);
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "walrus", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    const char *snip = mnemo_results_get(r, 0)->snippet;
    ASSERT(utf8_valid(snip, strlen(snip)));
    ASSERT_CONTAINS(snip, "caf\xef\xbf\xbd au lait");
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(bad_binary_huge_and_special_files_skipped)
{
    test_write("ws/memory/ok.md", "a fine note about herons\n");
    test_write_n("ws/memory/binary.md", "PNG\0\0\x01herons", 12);
    /* 11 MiB, sparse: skipped by size without being read. */
    int fd = open(test_path("ws/memory/huge.md"), O_CREAT | O_WRONLY, 0644);
    ASSERT(fd >= 0);
    ASSERT_OK(ftruncate(fd, 11 << 20));
    close(fd);
    ASSERT_OK(mkfifo(test_path("ws/memory/pipe.md"), 0644));
    test_write("ws/memory/locked.md", "herons in a locked file\n");
    chmod(test_path("ws/memory/locked.md"), 0);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    int root = geteuid() == 0; /* root reads mode-000 files */
    ASSERT_EQ(s.files_added, root ? 2 : 1);
    ASSERT_EQ(s.files_skipped, root ? 3 : 4);
    char *st;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    ASSERT_CONTAINS(st, "binary (contains NUL bytes)");
    ASSERT_CONTAINS(st, "too large (11534336 bytes, limit 10485760)");
    ASSERT_CONTAINS(st, "not a regular file");
    if (!root)
        ASSERT_CONTAINS(st, "unreadable: Permission denied");
    mnemo_free(st);
    /* A second sync does not re-read skipped files. */
    s = test_sync(m);
    ASSERT_EQ(s.bytes_read, 0);
    /* Fixing the file brings it in. */
    unlink(test_path("ws/memory/binary.md"));
    test_write("ws/memory/binary.md", "now text about herons\n");
    s = test_sync(m);
    ASSERT_EQ(s.files_changed + s.files_added, 1);
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "herons", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), root ? 3 : 2);
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(bad_symlink_loops)
{
    test_write("ws/memory/a.md", "note about loops\n");
    ASSERT_OK(symlink("loop1.md", test_path("ws/memory/loop2.md")));
    ASSERT_OK(symlink("loop2.md", test_path("ws/memory/loop1.md")));
    ASSERT_OK(symlink(".", test_path("ws/memory/self")));
    ASSERT_OK(symlink(test_path("ws"), test_path("ws/memory/up")));
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 1);
    mnemo_close(m);
}

static void vanish(void *ud, const mnemo_progress *p)
{
    (void)ud;
    if (strcmp(p->phase, "index") == 0 && p->done == 0) {
        unlink(test_path("ws/memory/b.md"));
        unlink(test_path("ws/memory/c.md"));
    }
}

TEST(bad_files_vanishing_during_sync)
{
    test_write("ws/memory/a.md", "alpha\n");
    test_write("ws/memory/b.md", "bravo\n");
    test_write("ws/memory/c.md", "charlie\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_opts o = {0, vanish, NULL};
    mnemo_sync_stats s;
    ASSERT_OK(mnemo_sync(m, &o, &s));
    ASSERT_EQ(s.files_added, 1);
    ASSERT_EQ(s.files_seen, 1);
    char *st;
    ASSERT_OK(mnemo_status_json(m, 0, &st));
    ASSERT_CONTAINS(st, "\"files\": 1");
    mnemo_free(st);
    mnemo_close(m);
}

TEST(bad_empty_workspace)
{
    test_mkdir("ws");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_seen, 0);
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "anything", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 0);
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(bad_corrupt_database)
{
    test_write("ws/memory/a.md", "alpha note\n");
    test_write("db.sqlite", "this is not a database at all, just some text that is long enough");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_results *r;
    ASSERT_EQ(mnemo_search(m, "alpha", NULL, &r), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), test_path("db.sqlite"));
    ASSERT_CONTAINS(mnemo_errmsg(m), "not a SQLite database");
    /* A foreign file is never overwritten, not even by --force. */
    mnemo_sync_opts o = {1, NULL, NULL};
    ASSERT_EQ(mnemo_sync(m, &o, NULL), MNEMO_CORRUPT);
    char *content = test_read(test_path("db.sqlite"), NULL);
    ASSERT_CONTAINS(content, "not a database at all");
    free(content);
    mnemo_close(m);

    /* A damaged mnemo index: --force rebuilds it. */
    unlink(test_path("db.sqlite"));
    m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    size_t len;
    char *db = test_read(test_path("db.sqlite"), &len);
    ASSERT(len > 8192);
    memset(db + 4096, 0x5a, len - 4096); /* everything after the first page */
    test_write_n("db.sqlite", db, len);
    free(db);
    m = test_open("ws", "db.sqlite", NULL);
    int rc = mnemo_search(m, "alpha", NULL, &r);
    ASSERT_EQ(rc, MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), "mnemo index --force");
    ASSERT_OK(mnemo_sync(m, &o, NULL));
    ASSERT_OK(mnemo_search(m, "alpha", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(bad_foreign_and_newer_database)
{
    test_write("ws/memory/a.md", "alpha note\n");
    sqlite3 *db;
    ASSERT(sqlite3_open(test_path("foreign.sqlite"), &db) == SQLITE_OK);
    ASSERT(sqlite3_exec(db, "CREATE TABLE contacts(name TEXT); INSERT INTO contacts VALUES('x')",
                        NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    mnemo *m = test_open("ws", "foreign.sqlite", NULL);
    ASSERT_EQ(mnemo_sync(m, NULL, NULL), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), "not a mnemo index");
    mnemo_sync_opts o = {1, NULL, NULL};
    ASSERT_EQ(mnemo_sync(m, &o, NULL), MNEMO_CORRUPT);
    mnemo_close(m);
    ASSERT(sqlite3_open(test_path("foreign.sqlite"), &db) == SQLITE_OK);
    sqlite3_stmt *st;
    ASSERT(sqlite3_prepare_v2(db, "SELECT name FROM contacts", -1, &st, NULL) == SQLITE_OK);
    ASSERT(sqlite3_step(st) == SQLITE_ROW); /* untouched */
    sqlite3_finalize(st);
    sqlite3_close(db);

    m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    ASSERT(sqlite3_open(test_path("db.sqlite"), &db) == SQLITE_OK);
    ASSERT(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", NULL,
                        NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    m = test_open("ws", "db.sqlite", NULL);
    mnemo_results *r;
    ASSERT_EQ(mnemo_search(m, "alpha", NULL, &r), MNEMO_CORRUPT);
    ASSERT_CONTAINS(mnemo_errmsg(m), "newer mnemo");
    mnemo_close(m);
}

TEST(bad_locked_index)
{
    test_write("ws/memory/a.md", "alpha note\n");
    mnemo *m = test_open("ws", "db.sqlite", "busyTimeoutMs=200", NULL);
    test_sync(m);
    char lockpath[1100];
    snprintf(lockpath, sizeof lockpath, "%s.lock", test_path("db.sqlite"));
    pid_t pid = fork();
    if (pid == 0) {
        int fd = lock_acquire(lockpath, 1000);
        if (fd < 0)
            _exit(1);
        sleep(3);
        _exit(0);
    }
    usleep(300000);
    test_write("ws/memory/b.md", "bravo note\n");
    ASSERT_EQ(mnemo_sync(m, NULL, NULL), MNEMO_BUSY);
    ASSERT_CONTAINS(mnemo_errmsg(m), "another mnemo process");
    /* Readers are not blocked by a writer. */
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "alpha", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    mnemo_results_free(r);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.files_added, 1);
    mnemo_close(m);
}
