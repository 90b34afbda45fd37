/*
 * test_util.c - buffers, UTF-8, globs, the hash map, ISO 8601 times, and
 * the masking of credentials in what is printed (mnemo_redact).
 */
#include <stdio.h>
#include <stdlib.h>

#include "test.h"
#include "util/buf.h"
#include "util/glob.h"
#include "util/hash.h"
#include "util/io.h"
#include "util/map.h"
#include "util/sha.h"
#include "util/time.h"
#include "util/utf8.h"

TEST(util_buf_cap_is_sticky)
{
    buf b;
    buf_init(&b, 8);
    ASSERT_OK(buf_puts(&b, "1234"));
    ASSERT_EQ(buf_puts(&b, "56789"), MNEMO_INVALID);
    ASSERT_EQ(buf_puts(&b, "x"), MNEMO_INVALID); /* stays failed */
    ASSERT(buf_detach(&b) == NULL);
}

TEST(util_buf_printf_and_json)
{
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "%d-%s", 42, "x");
    buf_json_str(&b, "a\"b\\c\n\x01", 7);
    char *s = buf_detach(&b);
    ASSERT_STR_EQ(s, "42-x\"a\\\"b\\\\c\\n\\u0001\"");
    free(s);
    buf_init(&b, 0);
    for (int i = 0; i < 1000; i++)
        buf_printf(&b, "%0300d", i); /* longer than the small stack buffer */
    ASSERT_EQ(b.len, 300000);
    buf_cleanup(&b);
}

TEST(util_utf8_decode_and_repair)
{
    int32_t cp;
    ASSERT_EQ(utf8_decode("\xe6\x97\xa5", 3, &cp), 3);
    ASSERT_EQ(cp, 0x65e5);
    ASSERT_EQ(utf8_decode("\xc0\xaf", 2, &cp), 1); /* overlong */
    ASSERT_EQ(cp, -1);
    ASSERT_EQ(utf8_decode("\xed\xa0\x80", 3, &cp), 1); /* surrogate */
    ASSERT_EQ(cp, -1);
    ASSERT_EQ(utf8_decode("\xe6\x97", 2, &cp), 1); /* truncated */
    ASSERT(!utf8_valid("ab\xff", 3));
    ASSERT(utf8_valid("caf\xc3\xa9", 5));
    buf b;
    buf_init(&b, 0);
    utf8_repair(&b, "a\xffz\xe6\x97", 5);
    ASSERT_STR_EQ(b.data, "a\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd");
    ASSERT(utf8_valid(b.data, b.len));
    buf_cleanup(&b);
    ASSERT_EQ(utf8_count("日本語abc", strlen("日本語abc")), 6);
    ASSERT_EQ(utf8_prefix("日本語", 9, 2), 6);
}

TEST(util_utf8_cjk_ranges)
{
    ASSERT(utf8_is_cjk(0x4e2d));  /* 中 */
    ASSERT(utf8_is_cjk(0x3042));  /* あ */
    ASSERT(utf8_is_cjk(0x30ab));  /* カ */
    ASSERT(utf8_is_cjk(0x30fc));  /* ー */
    ASSERT(utf8_is_cjk(0xd55c));  /* 한 */
    ASSERT(utf8_is_cjk(0xff76));  /* halfwidth ｶ */
    ASSERT(utf8_is_cjk(0x20000)); /* extension B */
    ASSERT(!utf8_is_cjk('a'));
    ASSERT(!utf8_is_cjk(0xe9));   /* é */
    ASSERT(!utf8_is_cjk(0x3002)); /* 。 punctuation */
}

TEST(util_glob)
{
    ASSERT(glob_match("**/*.md", "a.md"));
    ASSERT(glob_match("**/*.md", "x/y/a.md"));
    ASSERT(!glob_match("**/*.md", "x/y/a.txt"));
    ASSERT(glob_match("*.md", "deep/down/a.md")); /* no slash: base name */
    ASSERT(glob_match("notes/*.md", "notes/a.md"));
    ASSERT(!glob_match("notes/*.md", "notes/sub/a.md"));
    ASSERT(glob_match("notes/**", "notes/sub/a.md"));
    ASSERT(glob_match("20[0-9][0-9]-?" "?-?" "?.md", "2026-11-29.md"));
    ASSERT(!glob_match("[!a]*", "abc"));
    ASSERT(glob_match("a/**/b.md", "a/b.md"));
    ASSERT(glob_match("a/**/b.md", "a/x/y/b.md"));
}

TEST(util_map)
{
    map m;
    map_init(&m);
    char keys[2000][16];
    for (int i = 0; i < 2000; i++) {
        snprintf(keys[i], 16, "k%d", i);
        ASSERT_OK(map_put(&m, keys[i], (size_t)i * 3));
    }
    size_t v = 0;
    for (int i = 0; i < 2000; i++) {
        ASSERT(map_get(&m, keys[i], &v));
        ASSERT_EQ(v, i * 3);
    }
    ASSERT(!map_get(&m, "missing", &v));
    ASSERT_OK(map_put(&m, keys[5], 7));
    ASSERT(map_get(&m, keys[5], &v));
    ASSERT_EQ(v, 7);
    ASSERT_EQ(m.n, 2000);
    map_cleanup(&m);
}

TEST(util_time_iso)
{
    double t;
    ASSERT_OK(time_parse_iso("2026-11-29T12:00:00Z", &t));
    ASSERT_NEAR(t, 1795953600.0, 0.001);
    ASSERT_OK(time_parse_iso("2026-11-29", &t));
    ASSERT_NEAR(t, 1795910400.0, 0.001);
    ASSERT_OK(time_parse_iso("2026-11-29T14:00:00+02:00", &t));
    ASSERT_NEAR(t, 1795953600.0, 0.001);
    ASSERT_OK(time_parse_iso("2026-11-29T12:00:00.5Z", &t));
    ASSERT_NEAR(t, 1795953600.5, 0.001);
    ASSERT(time_parse_iso("2026-13-01", &t) != 0);
    ASSERT(time_parse_iso("yesterday", &t) != 0);
    ASSERT(time_parse_iso("2026-11-29T12:00:00Zjunk", &t) != 0);
    char s[32];
    time_format_iso(1795953600.0, s);
    ASSERT_STR_EQ(s, "2026-11-29T12:00:00Z");
}

typedef struct got {
    float v[8][4];
    size_t idx[8], n[8];
    int count;
} got;

static int take(void *ud, size_t index, const float *v, size_t n)
{
    got *g = ud;
    if (g->count >= 8 || n > 4)
        return -1;
    g->idx[g->count] = index;
    g->n[g->count] = n;
    memcpy(g->v[g->count], v, n * sizeof *v);
    g->count++;
    return 0;
}

#include "util/jsonvec.h"

TEST(util_jsonvec_formats_and_errors)
{
    float scratch[4];
    char err[256];
    got g = {0};
    const char *openai = "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":1,"
                         "\"embedding\":[0.5,-1.25e-1,3E2]},{\"embedding\":[1,2,3],\"index\":0}],"
                         "\"usage\":{\"total_tokens\":7,\"x\":[true,false,null,\"a\\\"b\"]}}";
    ASSERT_EQ(jsonvec_scan(openai, strlen(openai), JSONVEC_OPENAI, scratch, 4, take, &g, err,
                           sizeof err),
              2);
    ASSERT_EQ(g.idx[0], 1);
    ASSERT_NEAR(g.v[0][1], -0.125, 1e-7);
    ASSERT_NEAR(g.v[0][2], 300, 1e-4);
    ASSERT_EQ(g.idx[1], 0);
    memset(&g, 0, sizeof g);
    const char *ollama = "{\"model\":\"m\",\"embeddings\":[[0.1,0.2],[0.30000000000000004,4]]}";
    ASSERT_EQ(jsonvec_scan(ollama, strlen(ollama), JSONVEC_OLLAMA, scratch, 4, take, &g, err,
                           sizeof err),
              2);
    ASSERT_NEAR(g.v[1][0], 0.3, 1e-7);
    memset(&g, 0, sizeof g);
    const char *gemini = "{\"embeddings\":[{\"values\":[0.25]}]}";
    ASSERT_EQ(jsonvec_scan(gemini, strlen(gemini), JSONVEC_GEMINI, scratch, 4, take, &g, err,
                           sizeof err),
              1);
    /* Errors: truncated, trailing garbage, too long, missing list. */
    const char *bad[] = {"{\"data\":[{\"embedding\":[0.1,0.2", "{\"data\":[]} x",
                         "{\"data\":[{\"embedding\":[1,2,3,4,5]}]}", "{\"error\":\"quota\"}",
                         "{\"data\":[{\"embedding\":[1,]}]}", "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&g, 0, sizeof g);
        err[0] = 0;
        ASSERT_EQ(jsonvec_scan(bad[i], strlen(bad[i]), JSONVEC_OPENAI, scratch, 4, take, &g, err,
                               sizeof err),
                  -1);
        ASSERT(err[0] != 0);
    }
}

/* One data folder for the index and the models, with the same fallbacks. */
TEST(util_data_dir)
{
    char *xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_DATA_HOME", "/x/data", 1);
    setenv("HOME", "/h", 1);
    char *d = io_data_dir("models");
    ASSERT_STR_EQ(d, "/x/data/mnemo/models");
    free(d);
    setenv("XDG_DATA_HOME", "", 1);
    d = io_data_dir(NULL);
    ASSERT_STR_EQ(d, "/h/.local/share/mnemo");
    free(d);
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    d = io_data_dir("models");
    ASSERT_STR_EQ(d, "/tmp/mnemo/models");
    free(d);
    if (xdg)
        setenv("XDG_DATA_HOME", xdg, 1);
    if (home)
        setenv("HOME", home, 1);
    free(xdg);
    free(home);
}

static void hex_of(int sha1, const char *s, size_t n, size_t reps, char out[65])
{
    sha_ctx c;
    if (sha1)
        sha1_init(&c);
    else
        sha256_init(&c);
    for (size_t i = 0; i < reps; i++)
        sha_update(&c, s, n);
    sha_final_hex(&c, out);
}

TEST(util_sha256_and_sha1_known_answers)
{
    char h[65];
    hex_of(0, "", 0, 1, h);
    ASSERT_STR_EQ(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of(0, "abc", 3, 1, h);
    ASSERT_STR_EQ(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* 56 bytes: the padding spills into a second block. */
    hex_of(0, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, 1, h);
    ASSERT_STR_EQ(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* A million 'a', fed in pieces that straddle blocks. */
    hex_of(0, "aaaaaaaaaaaaaaaaaaaaaaaaa", 25, 40000, h);
    ASSERT_STR_EQ(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    hex_of(1, "", 0, 1, h);
    ASSERT_STR_EQ(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    hex_of(1, "abc", 3, 1, h);
    ASSERT_STR_EQ(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
    /* git's blob id of "hello\n". */
    sha_ctx c;
    sha1_init(&c);
    sha_update(&c, "blob 6", 7); /* with the NUL */
    sha_update(&c, "hello\n", 6);
    sha_final_hex(&c, h);
    ASSERT_STR_EQ(h, "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST(util_redact_masks_credentials_in_urls)
{
    static const char *const cases[][2] = {
        {"http://bob:SECRET@host/v1", "http://bob:***@host/v1"},
        {"cannot reach https://bob:p%40SECRET@10.0.0.1:8080/v1 (refused)",
         "cannot reach https://bob:***@10.0.0.1:8080/v1 (refused)"},
        {"http://:SECRET@host", "http://:***@host"},
        {"http://bob@host/v1", "http://bob@host/v1"}, /* a user name alone is no secret */
        {"https://ghp_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH@github.com/o/r.git",
         "https://***@github.com/o/r.git"},
        {"https://ghp_4fQ9zX2kLmN8pR3tV6wY1aB5cD7eF0gH:x-oauth-basic@github.com/o/r.git",
         "https://***:***@github.com/o/r.git"},
        {"https://x-access-token:SECRET@github.com", "https://x-access-token:***@github.com"},
        {"https://h/v1?api_key=SECRET&x=1", "https://h/v1?api_key=***&x=1"},
        {"https://h/v1?x=1&key=SECRET", "https://h/v1?x=1&key=***"},
        {"https://h/p?token=SECRET#top", "https://h/p?token=***#top"},
        {"https://h/cb#access_token=SECRET&state=s1", "https://h/cb#access_token=***&state=s1"},
        {"https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=SECRET%2Bx",
         "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=***"},
        {"https://b.s3.amazonaws.com/k?X-Amz-Credential=SECRET&X-Amz-Signature=SECRET",
         "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***"},
        {"https://h/?client_secret=SECRET;apikey=SECRET",
         "https://h/?client_secret=***;apikey=***"},
        {"https://h/?Password=SECRET", "https://h/?password=***"},
        {"http://u:SECRET@h/?monkey=1&sort=key&keys=2", "http://u:***@h/?monkey=1&sort=key&keys=2"},
        {"https://huggingface.co/api/models/o/r", "https://huggingface.co/api/models/o/r"},
        {"the key=value pairs and tokens", "the key=value pairs and tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *r = mnemo_redact(cases[i][0]);
        ASSERT_STR_EQ(r, cases[i][1]);
        ASSERT_NOT_CONTAINS(r, "SECRET");
        mnemo_free(r);
    }
    ASSERT(mnemo_redact(NULL) == NULL);
}

TEST(util_hash_stream_equals_the_hash_at_once)
{
    static const size_t sizes[] = {0, 1, 16, 17, 128, 129, 240, 241, 1024, 4096, 100003};
    char *data = malloc(100003);
    ASSERT(data != NULL);
    for (size_t i = 0; i < 100003; i++)
        data[i] = (char)(i * 2654435761u >> 13);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        char want[HASH_HEX_LEN + 1], have[HASH_HEX_LEN + 1];
        hash_hex(data, sizes[s], want);
        static const size_t pieces[] = {1, 7, 64, 1000, 65536};
        for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
            hash_stream *h = hash_stream_new();
            ASSERT(h != NULL);
            for (size_t pos = 0; pos < sizes[s]; pos += pieces[p])
                hash_stream_update(h, data + pos,
                                   sizes[s] - pos < pieces[p] ? sizes[s] - pos : pieces[p]);
            hash_stream_hex(h, have);
            ASSERT_STR_EQ(have, want);
            hash_stream_free(h);
        }
    }
    /* Another byte, another hash. */
    char a[HASH_HEX_LEN + 1], b[HASH_HEX_LEN + 1];
    hash_hex(data, 4096, a);
    data[4000] ^= 1;
    hash_hex(data, 4096, b);
    ASSERT(strcmp(a, b) != 0);
    hash_stream_free(NULL);
    free(data);
}
