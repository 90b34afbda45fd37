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
