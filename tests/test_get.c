/*
 * test_get.c - reading memory files: ranges, caps, continuation hints, and
 * confinement to the memory roots.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

static mnemo *setup(void)
{
    char line[64];
    FILE *f;
    test_mkdir("ws/memory");
    f = fopen(test_path("ws/memory/2026-11-01.md"), "w");
    for (int i = 1; i <= 300; i++) {
        snprintf(line, sizeof line, "line %d\n", i);
        fputs(line, f);
    }
    fclose(f);
    test_write("ws/MEMORY.md", "- fact one\n- fact two\n");
    test_write("ws/secret.md", "not a memory file\n");
    test_write("ws/memory/.private.md", "hidden\n");
    test_write("ws/memory/notes.txt", "not markdown\n");
    test_write("outside.md", "outside the workspace\n");
    symlink(test_path("outside.md"), test_path("ws/memory/escape.md"));
    return test_open("ws", "db.sqlite", NULL);
}

TEST(get_ranges_and_continuation)
{
    mnemo *m = setup();
    mnemo_excerpt e;
    ASSERT_OK(mnemo_get(m, "memory/2026-11-01.md", 0, 0, &e));
    ASSERT_EQ(e.from, 1);
    ASSERT_EQ(e.to, 120);
    ASSERT_EQ(e.total_lines, 300);
    ASSERT(e.truncated);
    ASSERT_EQ(e.next_from, 121);
    ASSERT(strncmp(e.text, "line 1\nline 2\n", 14) == 0);
    ASSERT_STR_EQ(e.path, "memory/2026-11-01.md");
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/2026-11-01.md", 295, 10, &e));
    ASSERT_STR_EQ(e.text, "line 295\nline 296\nline 297\nline 298\nline 299\nline 300\n");
    ASSERT(!e.truncated);
    ASSERT_EQ(e.next_from, 0);
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/2026-11-01.md", 400, 10, &e));
    ASSERT_STR_EQ(e.text, "");
    ASSERT_EQ(e.to, 399);
    mnemo_excerpt_cleanup(&e);
    /* Absolute paths inside the roots are fine. */
    ASSERT_OK(mnemo_get(m, test_path("ws/MEMORY.md"), 2, 1, &e));
    ASSERT_STR_EQ(e.text, "- fact two\n");
    ASSERT_STR_EQ(e.path, "MEMORY.md");
    mnemo_excerpt_cleanup(&e);
    mnemo_close(m);
}

TEST(get_character_cap)
{
    char *line = malloc(5001);
    memset(line, 'x', 5000);
    line[5000] = 0;
    FILE *f;
    test_mkdir("ws/memory");
    f = fopen(test_path("ws/memory/wide.md"), "w");
    for (int i = 0; i < 10; i++)
        fprintf(f, "%s\n", line);
    fclose(f);
    free(line);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_excerpt e;
    ASSERT_OK(mnemo_get(m, "memory/wide.md", 1, 100, &e));
    ASSERT_EQ(e.to, 2); /* 2 x 5001 characters fit in 12,000, a third does not */
    ASSERT(e.truncated);
    ASSERT_EQ(e.next_from, 3);
    mnemo_excerpt_cleanup(&e);
    mnemo_close(m);
}

TEST(get_confined_to_memory_roots)
{
    mnemo *m = setup();
    mnemo_excerpt e;
    const char *denied[] = {"secret.md", "../outside.md", "memory/../secret.md",
                            "memory/escape.md", "memory/.private.md", "memory/notes.txt",
                            "/etc/passwd", "memory"};
    for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
        int rc = mnemo_get(m, denied[i], 1, 10, &e);
        if (rc != MNEMO_DENIED)
            test_fail(__FILE__, __LINE__, "%s: expected DENIED, got %d (%s)", denied[i], rc,
                      mnemo_errmsg(m));
        ASSERT(e.text == NULL);
    }
    ASSERT_CONTAINS(mnemo_errmsg(m), "outside the memory roots");
    ASSERT_EQ(mnemo_get(m, "memory/missing.md", 1, 10, &e), MNEMO_NOTFOUND);
    /* A missing file outside the roots is refused, not reported missing. */
    ASSERT_EQ(mnemo_get(m, "../../no/such/file.md", 1, 10, &e), MNEMO_DENIED);
    ASSERT_EQ(mnemo_get(m, "/no/such/file.md", 1, 10, &e), MNEMO_DENIED);
    ASSERT_EQ(mnemo_get(m, "", 1, 10, &e), MNEMO_INVALID);
    ASSERT_OK(mnemo_get(m, "./memory/../MEMORY.md", 1, 10, &e));
    mnemo_excerpt_cleanup(&e);
    mnemo_close(m);
}

/* Lines FROM..TO of file PATH (under the test directory), each ending in
 * a newline. Caller frees. */
static char *file_lines(const char *path, int from, int to)
{
    FILE *f = fopen(test_path(path), "r");
    ASSERT(f != NULL);
    char *out = calloc(1, 1 << 16), line[4096];
    size_t n = 0;
    for (int i = 1; fgets(line, sizeof line, f); i++)
        if (i >= from && i <= to) {
            size_t l = strlen(line);
            memcpy(out + n, line, l);
            n += l;
            if (l && line[l - 1] != '\n')
                out[n++] = '\n';
        }
    fclose(f);
    return out;
}

/* Every citation a search gives reads back exactly its lines, through the
 * library and the CLI; the other forms name the same lines. */
TEST(get_citations_round_trip)
{
    test_mkdir("ws/memory");
    test_write("ws/MEMORY.md", "# Memory\n\n- Priya leads the gateway cutover\n- The koala "
                               "exhibit opens in March\n- Deploys run from the blue runner\n");
    test_write("ws/memory/2026-11-02.md",
               "# 2026-11-02\n\n- Met Priya about the gateway cutover\n- Koala photos for the "
               "newsletter\n- Deploy freeze until Friday\n\n## Later\n\n- The cutover slipped "
               "a week\n- Blue runner out of disk again\n");
    test_write("ws/memory/team notes.md", "# Team\n\n- Priya: gateway\n- Sam: koala "
                                          "newsletter\n- Deploy rota on the wiki\n");
    /* A file whose very name looks like a citation is read whole. */
    test_write("ws/memory/odd#L2.md", "first\nsecond koala\nthird\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    ASSERT_OK(mnemo_sync(m, NULL, NULL));
    const char *queries[] = {"priya", "koala", "deploy", "cutover", "runner", "gateway"};
    int checked = 0;
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        mnemo_results *r = NULL;
        ASSERT_OK(mnemo_search(m, queries[q], NULL, &r));
        ASSERT(mnemo_results_count(r) > 0);
        for (size_t i = 0; i < mnemo_results_count(r); i++) {
            const mnemo_result *x = mnemo_results_get(r, i);
            mnemo_excerpt e;
            int rc = mnemo_get(m, x->citation, 0, 0, &e);
            if (rc)
                test_fail(__FILE__, __LINE__, "%s: %s", x->citation, mnemo_errmsg(m));
            ASSERT_STR_EQ(e.path, x->path);
            ASSERT_EQ(e.from, x->start_line);
            ASSERT_EQ(e.to, x->end_line);
            char file[512];
            snprintf(file, sizeof file, "ws/%s", x->path);
            char *want = file_lines(file, x->start_line, x->end_line);
            ASSERT_STR_EQ(e.text, want);
            free(want);
            mnemo_excerpt_cleanup(&e);
            /* The CLI reads the same lines. */
            char *out = NULL;
            ASSERT_EQ(test_cli(&out, NULL, NULL, "-w", test_path("ws"), "--db",
                               test_path("db.sqlite"), "get", "--json", "--", x->citation,
                               NULL),
                      0);
            char want_from[64], want_to[64];
            snprintf(want_from, sizeof want_from, "\"from\":%d,", x->start_line);
            snprintf(want_to, sizeof want_to, "\"to\":%d,", x->end_line);
            ASSERT_CONTAINS(out, want_from);
            ASSERT_CONTAINS(out, want_to);
            free(out);
            checked++;
        }
        mnemo_results_free(r);
    }
    ASSERT(checked >= 6);

    mnemo_excerpt e;
    ASSERT_OK(mnemo_get(m, "memory/2026-11-02.md#L3", 0, 0, &e)); /* that line */
    ASSERT_STR_EQ(e.text, "- Met Priya about the gateway cutover\n");
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/2026-11-02.md#L3-4", 0, 0, &e));
    ASSERT_EQ(e.to, 4);
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/2026-11-02.md:9:2", 0, 0, &e)); /* path:from:count */
    ASSERT_STR_EQ(e.text, "- The cutover slipped a week\n- Blue runner out of disk again\n");
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/2026-11-02.md:9", 0, 0, &e)); /* from there on */
    ASSERT_EQ(e.from, 9);
    ASSERT_EQ(e.to, 10);
    mnemo_excerpt_cleanup(&e);
    /* Lines given by the caller take precedence. */
    ASSERT_OK(mnemo_get(m, "memory/2026-11-02.md#L3-L4", 5, 1, &e));
    ASSERT_STR_EQ(e.text, "- Deploy freeze until Friday\n");
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/team notes.md#L3-L3", 0, 0, &e));
    ASSERT_STR_EQ(e.text, "- Priya: gateway\n");
    mnemo_excerpt_cleanup(&e);
    ASSERT_OK(mnemo_get(m, "memory/odd#L2.md", 0, 0, &e));
    ASSERT_EQ(e.to, 3);
    mnemo_excerpt_cleanup(&e);
    ASSERT_EQ(mnemo_get(m, "memory/2026-11-02.md#L4-L3", 0, 0, &e), MNEMO_INVALID);
    ASSERT_CONTAINS(mnemo_errmsg(m), "run backwards");
    /* Line numbers out of range are a bad citation, not a path elsewhere. */
    const char *bad[] = {"memory/2026-11-02.md#L0-L2", "memory/2026-11-02.md:99999999999:1",
                         "memory/2026-11-02.md:0", "memory/2026-11-02.md#L2-L99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ASSERT_EQ(mnemo_get(m, bad[i], 0, 0, &e), MNEMO_INVALID);
        ASSERT_CONTAINS(mnemo_errmsg(m), "numbered from 1");
    }
    /* A citation is confined as a path is. */
    test_write("outside.md", "one\ntwo\n");
    ASSERT_EQ(mnemo_get(m, "../outside.md#L1-L2", 0, 0, &e), MNEMO_DENIED);
    ASSERT_EQ(mnemo_get(m, "../outside.md:1:1", 0, 0, &e), MNEMO_DENIED);
    ASSERT_EQ(mnemo_get(m, "memory/missing.md#L1-L2", 0, 0, &e), MNEMO_NOTFOUND);
    mnemo_close(m);
}

/* A hint to read on quotes a path the shell would split. */
TEST(get_hint_quotes_paths)
{
    test_mkdir("ws/memory");
    FILE *f = fopen(test_path("ws/memory/team notes.md"), "w");
    for (int i = 1; i <= 200; i++)
        fprintf(f, "line %d\n", i);
    fclose(f);
    char *err = NULL;
    ASSERT_EQ(test_cli(NULL, &err, NULL, "-w", test_path("ws"), "--db", test_path("db.sqlite"),
                       "get", "memory/team notes.md", NULL),
              0);
    ASSERT_CONTAINS(err, "continue with: mnemo get 'memory/team notes.md' --from 121");
    free(err);
}
