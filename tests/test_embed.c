/*
 * test_embed.c - HTTP embedding providers against the provider test server
 * on a loopback port: the OpenAI, Ollama and Gemini wire formats, retries
 * (429 with Retry-After, 5xx), timeouts, broken answers, batch splitting,
 * concurrency, keep-alive, and API keys that never show in messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "embed/embed.h"
#include "embed/embed_http.h"
#include "provider_server.h"
#include "test.h"
#include "util/time.h"

static embed_cfg cfg_for(const char *provider, const char *url)
{
    embed_cfg c;
    memset(&c, 0, sizeof c);
    c.provider = provider;
    c.model = strcmp(provider, "gemini") == 0 ? "test-embed-1.0" : "test-embed";
    c.base_url = url;
    c.api_key_env = "";
    c.headers_json = "";
    c.query_input_type = c.document_input_type = c.query_prefix = c.document_prefix = "";
    c.batch_bytes = 8000;
    c.concurrency = 4;
    c.query_timeout_ms = 2000;
    c.batch_timeout_ms = 2000;
    return c;
}

static embedder *open_or_fail(const embed_cfg *c)
{
    buf err;
    buf_init(&err, 0);
    embedder *e;
    int rc = embed_open(c, &e, &err);
    if (rc)
        test_fail(__FILE__, __LINE__, "embed_open: %s", err.data);
    buf_cleanup(&err);
    return e;
}

static int embed_n(embedder *e, int n, float **out, buf *err)
{
    static char texts[64][32];
    const char *p[64];
    size_t lens[64];
    for (int i = 0; i < n; i++) {
        snprintf(texts[i], sizeof texts[i], "chunk number %d", i);
        p[i] = texts[i];
        lens[i] = strlen(texts[i]);
    }
    return embed_texts(e, EMBED_DOCUMENT, p, lens, (size_t)n, out, err);
}

static void check_vectors(const float *v, int n, int dims)
{
    for (int i = 0; i < n; i++) {
        char text[32];
        snprintf(text, sizeof text, "chunk number %d", i);
        float want[64];
        ps_vector(text, strlen(text), dims, want);
        for (int d = 0; d < dims; d++)
            ASSERT_NEAR(v[i * dims + d], want[d], 1e-5);
    }
}

TEST(embed_wire_formats)
{
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    setenv("GEMINI_API_KEY", "gemini-test-key", 1);
    char url[128];
    const char *providers[] = {"openai-compatible", "ollama", "gemini"};
    for (int k = 0; k < 3; k++) {
        snprintf(url, sizeof url, "%s%s", ps_url(s), k == 0 ? "/v1" : k == 2 ? "/v1beta" : "");
        embed_cfg c = cfg_for(providers[k], url);
        embedder *e = open_or_fail(&c);
        ASSERT_EQ(embed_dims(e), 0); /* unknown model: learned from the answer */
        float *v = NULL;
        buf err;
        buf_init(&err, 0);
        int rc = embed_n(e, 10, &v, &err);
        if (rc)
            test_fail(__FILE__, __LINE__, "%s: %s", providers[k], err.data);
        ASSERT_EQ(embed_dims(e), 8);
        check_vectors(v, 10, 8);
        free(v);
        buf_cleanup(&err);
        embed_close(e);
    }
    /* Gemini sends task types; Voyage-style input types when configured. */
    char *body = ps_last_body(s);
    ASSERT_CONTAINS(body, "\"taskType\":\"RETRIEVAL_DOCUMENT\"");
    ASSERT_CONTAINS(body, "\"model\":\"models/test-embed-1.0\"");
    free(body);
    ps_stop(s);
}

TEST(embed_dimensions_prefix_headers_and_key)
{
    ps_options o = {.dims = 8, .require_key = "sk-test-SECRET-123"};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    setenv("TEST_EMBED_KEY", "sk-test-SECRET-123", 1);
    embed_cfg c = cfg_for("openai-compatible", url);
    c.api_key_env = "TEST_EMBED_KEY";
    c.dims = 16;
    c.document_prefix = "passage: ";
    c.headers_json = "{\"X-Team\":\"memory\"}";
    embedder *e = open_or_fail(&c);
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    const char *text = "hello";
    size_t len = 5;
    ASSERT_OK(embed_texts(e, EMBED_DOCUMENT, &text, &len, 1, &v, &err));
    float want[16];
    ps_vector("passage: hello", 14, 16, want);
    ASSERT_NEAR(v[3], want[3], 1e-5);
    free(v);
    char *body = ps_last_body(s), *team = ps_last_header(s, "X-Team");
    ASSERT_CONTAINS(body, "\"dimensions\":16");
    ASSERT_STR_EQ(team, "memory");
    free(body);
    free(team);
    embed_close(e);
    /* A wrong key: the error names the status, never the key. */
    setenv("TEST_EMBED_KEY", "sk-wrong-SECRET-456", 1);
    e = open_or_fail(&c);
    buf_reset(&err);
    int rc = embed_texts(e, EMBED_QUERY, &text, &len, 1, &v, &err);
    ASSERT_EQ(rc, MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(err.data, "401");
    ASSERT_NOT_CONTAINS(err.data, "SECRET");
    embed_close(e);
    /* No key at all. */
    unsetenv("TEST_EMBED_KEY");
    buf_reset(&err);
    ASSERT_EQ(embed_open(&c, &e, &err), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(err.data, "TEST_EMBED_KEY");
    buf_cleanup(&err);
    ps_stop(s);
}

TEST(embed_retries_429_with_retry_after_and_5xx)
{
    ps_options o = {.dims = 8, .fail_first_n = 2, .fail_status = 429, .retry_after_s = 1};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    embed_cfg c = cfg_for("openai-compatible", url);
    c.batch_timeout_ms = 10000;
    embedder *e = open_or_fail(&c);
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    double t0 = time_mono();
    int rc = embed_n(e, 3, &v, &err);
    double took = time_mono() - t0;
    if (rc)
        test_fail(__FILE__, __LINE__, "%s", err.data);
    ASSERT(took >= 1.9); /* two waits of Retry-After: 1 */
    ASSERT_EQ(ps_requests(s), 3);
    check_vectors(v, 3, 8);
    free(v);
    /* Two 500s are retried with backoff; the third try succeeds. */
    ps_options o2 = {.dims = 8, .fail_first_n = 2, .fail_status = 500};
    ps_set(s, &o2);
    ASSERT_OK(embed_n(e, 3, &v, &err));
    free(v);
    /* Three 500s exhaust the tries. */
    ps_options o3 = {.dims = 8, .fail_first_n = 3, .fail_status = 503};
    ps_set(s, &o3);
    buf_reset(&err);
    ASSERT_EQ(embed_n(e, 3, &v, &err), MNEMO_HTTP);
    ASSERT_CONTAINS(err.data, "503");
    ASSERT_CONTAINS(err.data, "3 tries");
    /* Five 429s without Retry-After exhaust the rate-limit tries. */
    ps_options o4 = {.dims = 8, .fail_first_n = 5, .fail_status = 429};
    ps_set(s, &o4);
    buf_reset(&err);
    ASSERT_EQ(embed_n(e, 3, &v, &err), MNEMO_HTTP);
    ASSERT_CONTAINS(err.data, "429");
    buf_cleanup(&err);
    embed_close(e);
    ps_stop(s);
}

TEST(embed_timeouts_and_dead_server)
{
    ps_options o = {.dims = 8, .delay_ms = 3000};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    embed_cfg c = cfg_for("openai-compatible", url);
    c.query_timeout_ms = 300;
    embedder *e = open_or_fail(&c);
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    const char *q = "query";
    size_t len = 5;
    double t0 = time_mono();
    ASSERT_EQ(embed_texts(e, EMBED_QUERY, &q, &len, 1, &v, &err), MNEMO_TIMEOUT);
    ASSERT(time_mono() - t0 < 2.5); /* the query deadline, not three full timeouts */
    ASSERT_CONTAINS(err.data, "timed out");
    embed_close(e);
    ps_stop(s);
    /* Nothing listening at all. */
    e = open_or_fail(&c);
    buf_reset(&err);
    int rc = embed_texts(e, EMBED_QUERY, &q, &len, 1, &v, &err);
    ASSERT(rc == MNEMO_HTTP || rc == MNEMO_TIMEOUT);
    ASSERT_CONTAINS(err.data, "openai-compatible");
    buf_cleanup(&err);
    embed_close(e);
}

/* A query embedded while the caller works: the request is on its way
 * before embed_finish is called, and the vector is the provider's. The
 * last query is kept: asked again, it is not sent again. */
TEST(embed_query_job_runs_beside_the_caller)
{
    ps_options o = {.dims = 8, .delay_ms = 200};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    embed_cfg c = cfg_for("openai-compatible", url);
    embedder *e = open_or_fail(&c);
    const char *q = "where is the kitten";
    embed_job j;
    embed_start(&j, e, EMBED_QUERY, q, strlen(q));
    double t0 = time_mono();
    while (ps_requests(s) < 1 && time_mono() - t0 < 5)
        usleep(1000);
    ASSERT_EQ(ps_requests(s), 1); /* sent while this thread was free */
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    ASSERT_OK(embed_finish(&j, &v, &err));
    float want[8];
    ps_vector(q, strlen(q), 8, want);
    for (int d = 0; d < 8; d++)
        ASSERT_NEAR(v[d], want[d], 1e-5);
    free(v);
    /* The same query: a copy, no request; documents are never taken from it. */
    size_t len = strlen(q);
    ASSERT_OK(embed_texts(e, EMBED_QUERY, &q, &len, 1, &v, &err));
    ASSERT_NEAR(v[0], want[0], 1e-5);
    free(v);
    ASSERT_EQ(ps_requests(s), 1);
    ASSERT_OK(embed_texts(e, EMBED_DOCUMENT, &q, &len, 1, &v, &err));
    free(v);
    ASSERT_EQ(ps_requests(s), 2);
    /* A job dropped unfinished, and a failing one: the error comes back. */
    const char *q2 = "another question";
    embed_start(&j, e, EMBED_QUERY, q2, strlen(q2));
    embed_drop(&j);
    ps_stop(s);
    embed_start(&j, e, EMBED_QUERY, "third", 5);
    int rc = embed_finish(&j, &v, &err);
    ASSERT(rc == MNEMO_HTTP || rc == MNEMO_TIMEOUT);
    ASSERT(v == NULL);
    ASSERT_CONTAINS(err.data, "openai-compatible");
    buf_cleanup(&err);
    embed_close(e);
}

TEST(embed_broken_answers_are_errors)
{
    ps_options o = {.dims = 8, .truncate_json = 1};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    embed_cfg c = cfg_for("openai-compatible", url);
    c.dims = 8;
    embedder *e = open_or_fail(&c);
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    ASSERT_EQ(embed_n(e, 4, &v, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "invalid JSON");
    ps_options o2 = {.dims = 8, .wrong_dims = 1};
    ps_set(s, &o2);
    buf_reset(&err);
    ASSERT_EQ(embed_n(e, 4, &v, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "9 dimensions, expected 8");
    ps_options o3 = {.dims = 8, .wrong_count = 1};
    ps_set(s, &o3);
    buf_reset(&err);
    ASSERT_EQ(embed_n(e, 4, &v, &err), MNEMO_INVALID);
    ASSERT_CONTAINS(err.data, "3 vectors for 4 inputs");
    buf_cleanup(&err);
    embed_close(e);
    ps_stop(s);
}

TEST(embed_batches_split_when_too_large)
{
    ps_options o = {.dims = 8, .max_batch_inputs = 3};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    embed_cfg c = cfg_for("openai-compatible", url);
    embedder *e = open_or_fail(&c);
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    int rc = embed_n(e, 10, &v, &err);
    if (rc)
        test_fail(__FILE__, __LINE__, "%s", err.data);
    check_vectors(v, 10, 8); /* rows land in their places after splitting */
    ASSERT(ps_requests(s) > 4);
    ASSERT_EQ(ps_inputs(s), 10);
    free(v);
    embed_close(e);
    /* Batches are also capped by bytes on our side. */
    ps_options o2 = {.dims = 8};
    ps_set(s, &o2);
    int before = ps_requests(s);
    c.batch_bytes = 40; /* about two inputs */
    e = open_or_fail(&c);
    ASSERT_OK(embed_n(e, 10, &v, &err));
    ASSERT(ps_requests(s) - before >= 5);
    free(v);
    buf_cleanup(&err);
    embed_close(e);
    ps_stop(s);
}

TEST(embed_concurrency_and_keep_alive)
{
    ps_options o = {.dims = 8, .delay_ms = 100};
    provider_server *s = ps_start(&o);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    embed_cfg c = cfg_for("openai-compatible", url);
    c.batch_bytes = 20; /* one input per request */
    embedder *e = open_or_fail(&c);
    float *v = NULL;
    buf err;
    buf_init(&err, 0);
    double t0 = time_mono();
    ASSERT_OK(embed_n(e, 16, &v, &err));
    double took = time_mono() - t0;
    free(v);
    ASSERT_EQ(ps_requests(s), 16);
    ASSERT(ps_max_in_flight(s) >= 3);
    ASSERT(ps_max_in_flight(s) <= 4);
    ASSERT(took < 1.2); /* 16 x 100 ms, four at a time */
    /* Connections are kept alive across requests and calls. */
    ASSERT_OK(embed_n(e, 16, &v, &err));
    free(v);
    ASSERT(ps_connections(s) <= 4);
    embed_close(e);
    ps_stop(s);
    /* Ollama: one request at a time, whatever the configured concurrency. */
    s = ps_start(&o);
    c.provider = "ollama";
    c.base_url = ps_url(s);
    e = open_or_fail(&c);
    ASSERT_OK(embed_n(e, 4, &v, &err));
    free(v);
    ASSERT_EQ(ps_requests(s), 4);
    ASSERT_EQ(ps_max_in_flight(s), 1);
    embed_close(e);
    ps_stop(s);
    buf_cleanup(&err);
}

/* Whether ERR holds any 8 consecutive characters of SECRET. */
static int leaks(const char *err, const char *secret)
{
    size_t n = strlen(secret);
    for (size_t i = 0; i + 8 <= n; i++) {
        char part[9];
        memcpy(part, secret + i, 8);
        part[8] = 0;
        if (err && strstr(err, part))
            return 1;
    }
    return 0;
}

TEST(embed_error_bodies_never_leak_a_key_at_any_offset)
{
    /* A provider that echoes the key (or a header value) anywhere in its
     * error body, plain or JSON: masked before the message is cut. */
    const char *key = "sk-test-Q4fZ9xK2LmN8pR3tV6wY1aB5cD7eF0gH1iJ2kL3m";
    const char *hdr = "hdr-secret-7Yq2Wm4Rt9Zp3Kx8Vb6Nc";
    setenv("MNEMO_TEST_ECHO_KEY", key, 1);
    provider_server *s = ps_start(NULL);
    ASSERT(s != NULL);
    char url[128];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    int tried = 0;
    for (int json = 0; json < 2; json++)
        for (int off = 0; off <= 420; off += 3) {
            char body[2048], pad[512];
            memset(pad, 'x', (size_t)off);
            pad[off] = 0;
            const char *which = off % 2 ? hdr : key;
            if (json)
                snprintf(body, sizeof body, "{\"error\":{\"message\":\"%s %s bad\"}}", pad, which);
            else
                snprintf(body, sizeof body, "%s%s trailing words", pad, which);
            ps_options o = {0};
            o.fail_first_n = 1;
            o.fail_status = 400;
            o.fail_body = body;
            ps_set(s, &o);
            embed_cfg c = cfg_for("openai-compatible", url);
            c.api_key_env = "MNEMO_TEST_ECHO_KEY";
            c.headers_json = "{\"X-Extra\":\"Bearer hdr-secret-7Yq2Wm4Rt9Zp3Kx8Vb6Nc\"}";
            embedder *e = open_or_fail(&c);
            buf err;
            buf_init(&err, 0);
            float *v = NULL;
            ASSERT(embed_n(e, 1, &v, &err) != 0);
            free(v);
            if (leaks(err.data, key) || leaks(err.data, hdr))
                test_fail(__FILE__, __LINE__, "offset %d (%s): %s", off, json ? "json" : "text",
                          err.data);
            buf_cleanup(&err);
            embed_close(e);
            tried++;
        }
    ASSERT(tried > 200);
    ps_stop(s);
    unsetenv("MNEMO_TEST_ECHO_KEY");
}

/* DeepInfra: OpenAI's wire at its own base, DEEPINFRA_API_KEY as the
 * bearer, BAAI/bge-m3 (1024 dimensions) unless a model is set. */
TEST(embed_deepinfra_provider)
{
    ps_options o = {.dims = 1024, .require_key = "di-test-KEY-42"};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    char url[128];
    snprintf(url, sizeof url, "%s/v1/openai", ps_url(s));
    unsetenv("DEEPINFRA_API_KEY");
    embed_cfg c = cfg_for("deepinfra", url);
    c.model = "";
    buf err;
    buf_init(&err, 0);
    embedder *e = NULL;
    ASSERT_EQ(embed_open(&c, &e, &err), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(err.data, "deepinfra: no API key (set DEEPINFRA_API_KEY)");
    setenv("DEEPINFRA_API_KEY", "di-test-KEY-42", 1);
    e = open_or_fail(&c);
    ASSERT_STR_EQ(embed_model(e), "BAAI/bge-m3");
    ASSERT_EQ(embed_dims(e), 1024);
    const char *text = "apple pie";
    size_t len = strlen(text);
    float *v = NULL;
    buf_reset(&err);
    ASSERT_OK(embed_texts(e, EMBED_DOCUMENT, &text, &len, 1, &v, &err));
    static float want[1024];
    ps_vector(text, len, 1024, want);
    for (int d = 0; d < 1024; d += 97)
        ASSERT_NEAR(v[d], want[d], 1e-5);
    free(v);
    embed_close(e);
    char *body = ps_last_body(s), *auth = ps_last_header(s, "Authorization");
    ASSERT_CONTAINS(body, "\"model\":\"BAAI/bge-m3\"");
    ASSERT_STR_EQ(auth, "Bearer di-test-KEY-42");
    free(body);
    free(auth);
    ASSERT_EQ(ps_requests(s), 1);
    /* Its own address when no baseUrl is set. */
    c.base_url = "";
    e = open_or_fail(&c);
    ASSERT_STR_EQ(e->base_url, "https://api.deepinfra.com/v1/openai");
    embed_close(e);
    buf_cleanup(&err);
    unsetenv("DEEPINFRA_API_KEY");
    ps_stop(s);
}

/* inputType sets the input type of queries and documents alike;
 * queryInputType and documentInputType win over it for their kind. */
TEST(embed_input_type_setting)
{
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    ASSERT(s != NULL);
    char base[160];
    snprintf(base, sizeof base, "baseUrl=%s/v1", ps_url(s));
    test_write("ws/memory/a.md", "The deploy key rotates every Monday.\n");
    mnemo *m = test_open("ws", "db1.sqlite", "provider=openai-compatible", base,
                         "inputType=document", NULL);
    test_sync(m);
    char *body = ps_last_body(s);
    ASSERT_CONTAINS(body, "\"input_type\":\"document\"");
    free(body);
    free(test_search_json(m, "deploy key", 5));
    body = ps_last_body(s);
    ASSERT_CONTAINS(body, "\"input\":[\"deploy key\"]");
    ASSERT_CONTAINS(body, "\"input_type\":\"document\"");
    free(body);
    mnemo_close(m);
    m = test_open("ws", "db2.sqlite", "provider=openai-compatible", base, "inputType=document",
                  "queryInputType=query", NULL);
    test_sync(m);
    body = ps_last_body(s);
    ASSERT_CONTAINS(body, "\"input_type\":\"document\"");
    free(body);
    free(test_search_json(m, "deploy key", 5));
    body = ps_last_body(s);
    ASSERT_CONTAINS(body, "\"input\":[\"deploy key\"]");
    ASSERT_CONTAINS(body, "\"input_type\":\"query\"");
    free(body);
    mnemo_close(m);
    /* Neither: none is sent. */
    m = test_open("ws", "db3.sqlite", "provider=openai-compatible", base, NULL);
    test_sync(m);
    body = ps_last_body(s);
    ASSERT_NOT_CONTAINS(body, "input_type");
    free(body);
    mnemo_close(m);
    ps_stop(s);
}
