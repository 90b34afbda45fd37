/*
 * test_fuzz_replay.c - replays the fuzz corpora (fuzz/corpus/<harness>/)
 * through the harnesses as regression tests. The harnesses abort() on a
 * violated invariant, which fails the test (each test is its own process).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test.h"

int fuzz_tok_one(const uint8_t *data, size_t size);
int fuzz_chunk_one(const uint8_t *data, size_t size);
int fuzz_query_one(const uint8_t *data, size_t size);
int fuzz_jsonvec_one(const uint8_t *data, size_t size);
int fuzz_filter_one(const uint8_t *data, size_t size);
int fuzz_text_one(const uint8_t *data, size_t size);
int fuzz_records_one(const uint8_t *data, size_t size);
int fuzz_recover_one(const uint8_t *data, size_t size);
int fuzz_cli_one(const uint8_t *data, size_t size);

static int replay(const char *name, int (*fn)(const uint8_t *, size_t))
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", test_src_dir(), name);
    DIR *d = opendir(dir);
    ASSERT(d != NULL);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        size_t len;
        char *data = test_read(p, &len);
        ASSERT(data != NULL);
        fn((const uint8_t *)data, len);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

TEST(fuzz_replay_tok) { ASSERT(replay("tok", fuzz_tok_one) >= 10); }
TEST(fuzz_replay_chunk) { ASSERT(replay("chunk", fuzz_chunk_one) >= 10); }
TEST(fuzz_replay_query) { ASSERT(replay("query", fuzz_query_one) >= 10); }
TEST(fuzz_replay_jsonvec) { ASSERT(replay("jsonvec", fuzz_jsonvec_one) >= 10); }
TEST(fuzz_replay_filter) { ASSERT(replay("filter", fuzz_filter_one) >= 10); }
TEST(fuzz_replay_text) { ASSERT(replay("text", fuzz_text_one) >= 10); }
TEST(fuzz_replay_records) { ASSERT(replay("records", fuzz_records_one) >= 10); }
TEST(fuzz_replay_recover) { ASSERT(replay("recover", fuzz_recover_one) >= 10); }
TEST(fuzz_replay_cli) { ASSERT(replay("cli", fuzz_cli_one) >= 10); }
