/*
 * test_hybrid.c - semantic search through the library: the static table
 * finds a paraphrase that keywords miss; the embedding cache; the provider
 * policy (none, auto, named) and fallbacks; stale vectors; status.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/calib.h"
#include "provider_server.h"
#include "test.h"

static void notes(void)
{
    test_write("ws/memory/a.md", "My automobile is red.\n");
    test_write("ws/memory/b.md", "The kitten sleeps.\n");
    test_write("ws/memory/c.md", "Blue sky over Berlin.\n");
}

static char *search(mnemo *m, const char *q)
{
    mnemo_results *r;
    int rc = mnemo_search(m, q, NULL, &r);
    if (rc)
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    char *s = mnemo_results_json(r);
    mnemo_results_free(r);
    return s;
}

TEST(hybrid_static_table_finds_paraphrase)
{
    test_tiny_table();
    notes();
    /* Keywords alone: "car" is in no note. */
    mnemo *m = test_open("ws", "db.sqlite", "provider=none", NULL);
    test_sync(m);
    char *j = search(m, "car");
    ASSERT_STR_EQ(j, "{\"results\":[],\"mode\":\"keyword\"}");
    mnemo_free(j);
    mnemo_close(m);
    /* The static table bridges car -> automobile. */
    m = test_open("ws", "db.sqlite", "provider=static", "model=tiny", NULL);
    mnemo_sync_stats s = test_sync(m);
    ASSERT_EQ(s.chunks_embedded, 3);
    ASSERT_EQ(s.vectors_total, 3);
    j = search(m, "car");
    ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
    ASSERT_CONTAINS(j, "\"provider\":\"static\"");
    ASSERT_CONTAINS(j, "{\"path\":\"memory/a.md\"");
    ASSERT_NOT_CONTAINS(j, "memory/b.md"); /* unrelated: below minScore */
    ASSERT_CONTAINS(j, "\"vectorScore\":");
    mnemo_free(j);
    /* A strong keyword-only hit still clears minScore in hybrid mode. */
    j = search(m, "Berlin");
    ASSERT_CONTAINS(j, "memory/c.md");
    mnemo_free(j);
    mnemo_close(m);
}

TEST(hybrid_cache_and_incremental_embedding)
{
    ps_options o = {.dims = 16};
    provider_server *s = ps_start(&o);
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(s));
    notes();
    mnemo *m = test_open("ws", "db.sqlite", "provider=openai-compatible", url, "model=m1", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 3);
    /* The chunks, and once the fixed texts vector scores are measured
     * against (engine/calib.h). */
    int inputs = ps_inputs(s);
    ASSERT_EQ(inputs, 3 + CALIB_NTEXTS);
    /* Unchanged chunks are never embedded again: not by a sync, not by a
     * full rebuild (the cache and the fixed texts' vectors are carried
     * over). */
    st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 0);
    /* Each vector is kept once: the index's, its key in vec_keys; the
     * cache holds none of them. */
    const char *db = test_path("db.sqlite");
    ASSERT_EQ(test_sql_int(db, "SELECT count(*) FROM vec_keys"), 3);
    ASSERT_EQ(test_sql_int(db, "SELECT count(*) FROM embed_cache"), 0);
    mnemo_sync_opts force = {1, NULL, NULL};
    ASSERT_OK(mnemo_sync(m, &force, &st));
    ASSERT_EQ(st.chunks_embedded, 0);
    ASSERT_EQ(st.embed_cache_hits, 3);
    ASSERT_EQ(ps_inputs(s), inputs);
    ASSERT_EQ(test_sql_int(db, "SELECT count(*) FROM embed_cache"), 0);
    /* One changed file: one chunk embedded; the text it had is the
     * cache's now, and comes back from there. */
    test_write("ws/memory/b.md", "The kitten sleeps all day.\n");
    st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 1);
    ASSERT_EQ(ps_inputs(s), inputs + 1);
    ASSERT_EQ(test_sql_int(db, "SELECT count(*) FROM embed_cache"), 1);
    test_write("ws/memory/b.md", "The kitten sleeps.\n");
    st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 0);
    ASSERT_EQ(st.embed_cache_hits, 1);
    ASSERT_EQ(ps_inputs(s), inputs + 1);
    ASSERT_EQ(test_sql_int(db, "SELECT count(*) FROM embed_cache"), 1);
    test_write("ws/memory/b.md", "The kitten sleeps all day.\n");
    st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 0);
    ASSERT_EQ(ps_inputs(s), inputs + 1);
    /* Searching embeds the query only. */
    char *j = search(m, "kitten");
    ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
    mnemo_free(j);
    ASSERT_EQ(ps_inputs(s), inputs + 2);
    /* Notes and facts in one search: the query is embedded once, and the
     * same question again is not sent again; another one is. */
    int reqs = ps_requests(s);
    char *all = NULL;
    ASSERT_OK(mnemo_search_all(m, "sleeping kitten", "{\"kinds\":[\"note\",\"fact\"]}", &all));
    ASSERT_CONTAINS(all, "b.md");
    mnemo_free(all);
    ASSERT_EQ(ps_requests(s), reqs + 1);
    ASSERT_OK(mnemo_search_all(m, "sleeping kitten", NULL, &all));
    mnemo_free(all);
    ASSERT_EQ(ps_requests(s), reqs + 1);
    j = search(m, "red automobile");
    ASSERT_CONTAINS(j, "a.md");
    mnemo_free(j);
    ASSERT_EQ(ps_requests(s), reqs + 2);
    mnemo_close(m);
    ps_stop(s);
}

TEST(hybrid_policy_none_auto_named)
{
    notes();
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(s));
    /* auto with nothing configured: plain keyword search, no fallback. */
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    char *j = search(m, "kitten");
    ASSERT_STR_EQ(strstr(j, "\"mode\""), "\"mode\":\"keyword\"}");
    mnemo_free(j);
    mnemo_close(m);
    /* auto with an OpenAI key, against a server that fails: keyword
     * results, and the fallback says why. */
    setenv("OPENAI_API_KEY", "sk-test-key", 1);
    ps_options bad = {.dims = 8, .fail_first_n = 1000, .fail_status = 401};
    ps_set(s, &bad);
    m = test_open("ws", "db.sqlite", url, NULL);
    mnemo_sync_stats st = test_sync(m); /* embedding fails: still OK */
    ASSERT(st.embed_warning != NULL);
    ASSERT_CONTAINS(st.embed_warning, "401");
    j = search(m, "kitten");
    ASSERT_CONTAINS(j, "memory/b.md");
    ASSERT_CONTAINS(j, "\"fallback\":{\"from\":\"openai\",\"reason\":\"openai: 401");
    ASSERT_NOT_CONTAINS(j, "sk-test-key");
    mnemo_free(j);
    mnemo_close(m);
    /* The same provider named explicitly: the search fails, clearly. */
    m = test_open("ws", "db.sqlite", url, "provider=openai", NULL);
    mnemo_results *r = NULL;
    ASSERT_EQ(mnemo_search(m, "kitten", NULL, &r), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(mnemo_errmsg(m), "memory search unavailable: openai: 401");
    ASSERT_EQ(mnemo_sync(m, NULL, NULL), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(mnemo_errmsg(m), "keyword index updated");
    char *status;
    ASSERT_OK(mnemo_status_json(m, 1, &status));
    ASSERT_CONTAINS(status, "\"lastError\"");
    ASSERT_CONTAINS(status, "\"ok\": false");
    mnemo_free(status);
    mnemo_close(m);
    /* provider none: keyword on purpose, even with a key present. */
    m = test_open("ws", "db.sqlite", url, "provider=none", NULL);
    j = search(m, "kitten");
    ASSERT_NOT_CONTAINS(j, "fallback");
    ASSERT_CONTAINS(j, "\"mode\":\"keyword\"");
    mnemo_free(j);
    mnemo_close(m);
    unsetenv("OPENAI_API_KEY");
    ps_stop(s);
}

/* A model asked for by name that is not installed (a typo) is an error
 * that names the fix, never a silent fall back to keywords: under auto as
 * under a named provider, in search, sync, status and doctor. */
TEST(hybrid_mistyped_model_is_an_error)
{
    notes();
    test_tiny_table();
    const char *sets[][2] = {{"model=tinny", NULL}, {"model=tinny", "provider=static"}};
    for (size_t i = 0; i < 2; i++) {
        mnemo *m = test_open("ws", "db.sqlite", sets[i][0], sets[i][1], NULL);
        ASSERT_EQ(mnemo_sync(m, NULL, NULL), MNEMO_UNAVAILABLE);
        ASSERT_CONTAINS(mnemo_errmsg(m), "keyword index updated");
        ASSERT_CONTAINS(mnemo_errmsg(m), "did you mean 'tiny'?");
        mnemo_results *r = NULL;
        ASSERT_EQ(mnemo_search(m, "kitten", NULL, &r), MNEMO_UNAVAILABLE);
        ASSERT_CONTAINS(mnemo_errmsg(m), "memory search unavailable");
        ASSERT_CONTAINS(mnemo_errmsg(m), "did you mean 'tiny'?");
        mnemo_close(m);
    }
    /* Spelt right, the same settings search by meaning. */
    mnemo *m = test_open("ws", "db.sqlite", "model=tiny", NULL);
    test_sync(m);
    char *j = search(m, "kitten");
    ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
    mnemo_free(j);
    mnemo_close(m);
    char *out, *err;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "model=tinny", "search", "kitten", NULL),
              1);
    ASSERT_CONTAINS(err, "did you mean 'tiny'?");
    free(out);
    free(err);
    ASSERT(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                    test_path("db.sqlite"), "--set", "model=tinny", "doctor", NULL) != 0);
    ASSERT_CONTAINS(out, "did you mean 'tiny'?");
    free(out);
    free(err);
}

/* An index built with --set provider=static --set model=tiny, searched
 * later without them: keyword only, and the results, status and the
 * command say that the vectors are unused and how to use them. */
TEST(hybrid_unused_vectors_are_reported)
{
    static const char *const keys[] = {"OPENAI_API_KEY", "GEMINI_API_KEY", "VOYAGE_API_KEY",
                                       "MISTRAL_API_KEY"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        unsetenv(keys[i]);
    test_tiny_table();
    notes();
    char *out, *err;
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=static", "--set", "model=tiny",
                       "index", "--quiet", NULL),
              0);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    char *j = search(m, "kitten");
    ASSERT_CONTAINS(j, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(j, "\"fallback\":{\"from\":\"static\",\"reason\":\"vectors present but unused");
    ASSERT_CONTAINS(j, "run with --set provider=static --set model=tiny");
    ASSERT_CONTAINS(j, "mnemo config set provider static && mnemo config set model tiny");
    mnemo_free(j);
    char *status;
    ASSERT_OK(mnemo_status_json(m, 0, &status));
    ASSERT_CONTAINS(status, "\"unused\": \"vectors present but unused");
    ASSERT_CONTAINS(status, "\"mode\": \"keyword\"");
    mnemo_free(status);
    mnemo_close(m);
    /* provider none is keyword on purpose: nothing to report. */
    m = test_open("ws", "db.sqlite", "provider=none", NULL);
    j = search(m, "kitten");
    ASSERT_NOT_CONTAINS(j, "fallback");
    mnemo_free(j);
    mnemo_close(m);
    /* The command: a note on stderr, the warning in status. */
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "search", "kitten", NULL),
              0);
    ASSERT_CONTAINS(out, "memory/b.md");
    ASSERT_CONTAINS(err, "keyword search only (static): vectors present but unused");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "status", NULL),
              0);
    ASSERT_CONTAINS(out, "chunks have vectors, unused");
    ASSERT_CONTAINS(out, "warning:    vectors present but unused");
    free(out);
    /* With the settings the hint names, the vectors are used. */
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=static", "--set", "model=tiny",
                       "search", "--json", "kitten", NULL),
              0);
    ASSERT_CONTAINS(out, "\"mode\":\"hybrid\"");
    free(out);
}

TEST(hybrid_stale_identity_keeps_keyword_search)
{
    notes();
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(s));
    mnemo *m = test_open("ws", "db.sqlite", "provider=openai-compatible", url, "model=m1", NULL);
    test_sync(m);
    mnemo_close(m);
    /* Another model: the stored vectors are stale. */
    m = test_open("ws", "db.sqlite", "provider=openai-compatible", url, "model=m2",
                  "dimensions=12", NULL);
    char *j = search(m, "kitten");
    ASSERT_CONTAINS(j, "memory/b.md");
    ASSERT_CONTAINS(j, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(j, "another embedding setup");
    mnemo_free(j);
    char *status;
    ASSERT_OK(mnemo_status_json(m, 0, &status));
    ASSERT_CONTAINS(status, "\"stale\": true");
    mnemo_free(status);
    /* mnemo index re-embeds for the new identity. */
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.chunks_embedded, 3);
    j = search(m, "kitten");
    ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
    mnemo_free(j);
    ASSERT_OK(mnemo_status_json(m, 1, &status));
    ASSERT_CONTAINS(status, "\"stale\": false");
    ASSERT_CONTAINS(status, "\"dims\": 12");
    ASSERT_CONTAINS(status, "\"latencyMs\"");
    mnemo_free(status);
    mnemo_close(m);
    ps_stop(s);
}

TEST(hybrid_cli_named_provider_failure)
{
    notes();
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(s));
    char *out, *err;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=openai-compatible", "--set", url,
                       "index", NULL),
              0);
    ASSERT_CONTAINS(out, "embedded 3 passages");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=openai-compatible", "--set", url,
                       "search", "--json", "kitten", NULL),
              0);
    ASSERT_CONTAINS(out, "\"mode\":\"hybrid\"");
    ASSERT_CONTAINS(out, "\"vectorScore\":");
    free(out);
    free(err);
    /* The provider goes away: a named provider makes the search fail. */
    ps_stop(s);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=openai-compatible", "--set", url,
                       "search", "--json", "kitten", NULL),
              1);
    ASSERT_CONTAINS(out, "{\"error\":{\"code\":\"");
    ASSERT_CONTAINS(err, "memory search unavailable: openai-compatible");
    free(out);
    free(err);
}

/* The handle keeps the vectors file mapped across searches; after a sync
 * that changes the vectors, and after another process's sync, the next
 * search must see the new ones. */
TEST(hybrid_kept_vectors_follow_syncs)
{
    test_tiny_table();
    notes();
    mnemo *m = test_open("ws", "db.sqlite", "provider=static", "model=tiny", NULL);
    test_sync(m);
    char *j = search(m, "kitten");
    ASSERT_NOT_CONTAINS(j, "memory/d.md");
    mnemo_free(j);
    test_write("ws/memory/d.md", "# D\n\nThe cat sleeps all day.\n");
    test_sync(m);
    j = search(m, "kitten"); /* only the vector leg can find it */
    ASSERT_CONTAINS(j, "memory/d.md");
    mnemo_free(j);
    /* Another process removes it and adds another. */
    unlink(test_path("ws/memory/d.md"));
    test_write("ws/memory/e.md", "# E\n\nA cat on the roof.\n");
    char *err = NULL;
    int rc = test_cli(NULL, &err, NULL, "--workspace", test_path("ws"), "--db",
                      test_path("db.sqlite"), "--set", "provider=static", "--set", "model=tiny",
                      "index", NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "index exited %d: %s", rc, err ? err : "");
    free(err);
    j = search(m, "kitten");
    ASSERT_NOT_CONTAINS(j, "memory/d.md");
    ASSERT_CONTAINS(j, "memory/e.md");
    mnemo_free(j);
    mnemo_close(m);
}

/* A vector-only hit that stands far above the rest of a small workspace is
 * returned; an unrelated note is not; a strong keyword-only hit keeps its
 * place however the vectors lean. */
TEST(hybrid_vector_only_hit_in_small_workspace)
{
    test_write("table.txt", "car 1 0 0 0\n"
                            "automobile 0.95 0.1 0 0\n"
                            "mechanic 0 1 0 0\n"
                            "garage 0.1 0.95 0 0\n"
                            "repair 0.2 0.8 0.1 0\n"
                            "milk 0 0 1 0\n"
                            "eggs 0 0 0.9 0.2\n"
                            "bread 0 0 0.8 0.3\n"
                            "tuesday 0 0 0.1 1\n"
                            "list 0 0.1 0.1 0.9\n");
    test_import_table("table.txt", "cars", NULL);
    test_write("ws/memory/a.md", "Automobile repair booked at the garage for Tuesday.\n");
    test_write("ws/memory/b.md", "Grocery list: milk, eggs and bread.\n");
    mnemo *m = test_open("ws", "db.sqlite", "provider=static", "model=cars", NULL);
    test_sync(m);
    char *j = search(m, "car mechanic"); /* no keyword matches either note */
    ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
    ASSERT_CONTAINS(j, "{\"path\":\"memory/a.md\"");
    ASSERT_NOT_CONTAINS(j, "memory/b.md");
    mnemo_free(j);
    /* "grocery" is in no table: keywords alone find b.md, first. */
    j = search(m, "grocery garage");
    ASSERT(strstr(j, "memory/b.md") != NULL);
    mnemo_free(j);
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "grocery", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    const mnemo_result *x = mnemo_results_get(r, 0);
    ASSERT_STR_EQ(x->path, "memory/b.md");
    ASSERT(x->score >= x->text_score); /* meaning never lowers a keyword hit */
    mnemo_results_free(r);
    mnemo_close(m);
}

/* A note at PATH of NLINES lines and LINE in the middle. */
static void write_long_note(const char *path, const char *line, int nlines)
{
    FILE *f = fopen(test_path(path), "w");
    ASSERT(f != NULL);
    fputs("# Notes\n", f);
    for (int i = 0; i < nlines; i++) {
        if (i == nlines / 2)
            fprintf(f, "\n## Aside\n- %s\n\n", line);
        fprintf(f, "- line %d of river stone lantern copper meadow harbor violet canyon "
                   "orchard velvet marble willow ember quartz saddle timber\n", i);
    }
    fclose(f);
}

/* Twin notes, one with a query word in its path: their chunk that only
 * the vector leg finds gets the path boost in that one. The notes have
 * more chunks than the vector leg brings candidates (the pool, 200). */
TEST(hybrid_path_boost_reaches_vector_candidates)
{
    test_tiny_table();
    test_mkdir("ws/memory");
    write_long_note("ws/memory/zebra-notes.md", "my automobile is red", 2400);
    write_long_note("ws/memory/plain-notes.md", "my automobile is red", 2400);
    mnemo *m = test_open("ws", "db.sqlite", "provider=static", "model=tiny", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT(st.vectors_total > 2 * 200);
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0;
    o.max_results = 10;
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "zebra car", &o, &r)); /* "car": in no note */
    ASSERT_STR_EQ(mnemo_results_mode(r), "hybrid");
    const mnemo_result *zebra = NULL, *plain = NULL;
    for (size_t i = 0; i < mnemo_results_count(r); i++) {
        const mnemo_result *x = mnemo_results_get(r, i);
        if (!strstr(x->snippet, "automobile"))
            continue;
        if (strcmp(x->path, "memory/zebra-notes.md") == 0)
            zebra = x;
        else if (strcmp(x->path, "memory/plain-notes.md") == 0)
            plain = x;
    }
    ASSERT(zebra != NULL && plain != NULL);
    ASSERT(zebra->start_line > 1);
    ASSERT_NEAR(zebra->text_score, 0, 1e-9);
    ASSERT_NEAR(zebra->vector_score, plain->vector_score, 1e-9);
    ASSERT(zebra->score > plain->score);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "memory/zebra-notes.md");
    mnemo_results_free(r);
    mnemo_close(m);
}

/* The same in a workspace of ten notes whose vectors all lean one way, as
 * neural models' do (every cosine near 0.9): the match stands far out from
 * the others' spread though only 0.04 above their mean, and is returned;
 * a query that matches nothing is answered with nothing. */
TEST(hybrid_vector_only_hit_high_baseline)
{
    test_lean_table();
    for (int k = 0; k < 9; k++) {
        char path[64], text[64];
        snprintf(path, sizeof path, "ws/memory/%s.md", test_lean_words[k]);
        snprintf(text, sizeof text, "The %s, noted.\n", test_lean_words[k]);
        test_write(path, text);
    }
    test_write("ws/memory/auto.md", "The automobile, noted.\n");
    mnemo *m = test_open("ws", "db.sqlite", "provider=static", "model=lean", NULL);
    test_sync(m);
    char *j = search(m, "car");
    ASSERT_CONTAINS(j, "\"mode\":\"hybrid\"");
    ASSERT_CONTAINS(j, "{\"path\":\"memory/auto.md\"");
    ASSERT_NOT_CONTAINS(j, "memory/apple.md");
    mnemo_free(j);
    j = search(m, "zebra");
    ASSERT_CONTAINS(j, "\"results\":[]");
    mnemo_free(j);
    mnemo_close(m);
}

/* auto picks a provider by the key it would use: with apiKeyEnv naming a
 * variable that is unset, GOOGLE_API_KEY does not make it gemini (the
 * provider would then refuse for want of that variable). */
TEST(hybrid_auto_follows_the_configured_key_variable)
{
    notes();
    unsetenv("MNEMO_TEST_UNSET_KEY");
    setenv("GOOGLE_API_KEY", "AIza-test-key-not-used", 1);
    mnemo *m = test_open("ws", "db.sqlite", "apiKeyEnv=MNEMO_TEST_UNSET_KEY", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT(st.embed_warning == NULL);
    char *j = search(m, "kitten");
    ASSERT_NOT_CONTAINS(j, "fallback");
    ASSERT_CONTAINS(j, "\"mode\":\"keyword\"");
    mnemo_free(j);
    mnemo_close(m);
    /* Without apiKeyEnv the Google variable is gemini's. */
    m = test_open("ws", "db.sqlite", "baseUrl=http://127.0.0.1:9/v1beta", NULL);
    j = search(m, "kitten");
    ASSERT_CONTAINS(j, "\"from\":\"gemini\"");
    mnemo_free(j);
    mnemo_close(m);
    unsetenv("GOOGLE_API_KEY");
}

/* The vectors of mnemo_embed_json, parsed: N x DIMS floats into V. */
static void embed_parse(const char *js, const char *provider, int n, int dims, float *v)
{
    json_error_t je;
    json_t *j = json_loads(js, 0, &je);
    ASSERT(j != NULL);
    ASSERT_STR_EQ(json_string_value(json_object_get(j, "provider")), provider);
    ASSERT_EQ(json_integer_value(json_object_get(j, "dims")), dims);
    json_t *vs = json_object_get(j, "vectors");
    ASSERT_EQ((int)json_array_size(vs), n);
    for (int i = 0; i < n; i++) {
        json_t *row = json_array_get(vs, (size_t)i);
        ASSERT_EQ((int)json_array_size(row), dims);
        for (int k = 0; k < dims; k++)
            v[i * dims + k] = (float)json_number_value(json_array_get(row, (size_t)k));
    }
    json_decref(j);
}

TEST(embed_json_gives_the_providers_vectors_with_prefixes)
{
    ps_options o = {.dims = 8};
    provider_server *s = ps_start(&o);
    char url[160];
    snprintf(url, sizeof url, "baseUrl=%s/v1", ps_url(s));
    test_mkdir("ws");
    mnemo *m = test_open("ws", "db.sqlite", "provider=openai-compatible", url, "model=m1",
                         "queryPrefix=query: ", "documentPrefix=passage: ", NULL);
    const char *texts[] = {"red car", "kitten"};
    char *out = NULL;
    float got[16], want[8];
    /* Queries: the query prefix goes to the server, the vectors come back in order. */
    ASSERT_OK(mnemo_embed_json(m, texts, 2, 1, &out));
    ASSERT_CONTAINS(out, "\"model\":\"m1\"");
    embed_parse(out, "openai-compatible", 2, 8, got);
    mnemo_free(out);
    char *body = ps_last_body(s);
    ASSERT_CONTAINS(body, "query: red car");
    free(body);
    for (int i = 0; i < 2; i++) {
        char t[64];
        snprintf(t, sizeof t, "query: %s", texts[i]);
        ps_vector(t, strlen(t), 8, want);
        for (int k = 0; k < 8; k++)
            ASSERT(fabsf(got[i * 8 + k] - want[k]) < 1e-6f);
    }
    /* Documents: the document prefix, so other vectors. */
    ASSERT_OK(mnemo_embed_json(m, texts + 1, 1, 0, &out));
    embed_parse(out, "openai-compatible", 1, 8, got);
    mnemo_free(out);
    ps_vector("passage: kitten", 15, 8, want);
    for (int k = 0; k < 8; k++)
        ASSERT(fabsf(got[k] - want[k]) < 1e-6f);
    /* A dead provider: its error, no output. */
    ps_stop(s);
    out = NULL;
    ASSERT(mnemo_embed_json(m, texts, 1, 1, &out) != MNEMO_OK);
    ASSERT(out == NULL);
    ASSERT_CONTAINS(mnemo_errmsg(m), "openai-compatible");
    mnemo_close(m);
}

TEST(embed_json_static_table_and_no_provider)
{
    test_tiny_table();
    test_mkdir("ws");
    mnemo *m = test_open("ws", "db.sqlite", "provider=static", "model=tiny", NULL);
    const char *texts[] = {"car", "kitten"};
    char *out = NULL;
    float v[8];
    ASSERT_OK(mnemo_embed_json(m, texts, 2, 0, &out));
    embed_parse(out, "static", 2, 4, v);
    mnemo_free(out);
    /* One word: its row of the table, unit length ("car 1 0 0 0.05"). */
    float n = sqrtf(1.0f + 0.05f * 0.05f);
    ASSERT(fabsf(v[0] - 1.0f / n) < 1e-6f && fabsf(v[3] - 0.05f / n) < 1e-6f);
    ASSERT(fabsf(v[1]) < 1e-6f && fabsf(v[2]) < 1e-6f);
    ASSERT(fabsf(v[5] - 1.0f) < 1e-6f); /* kitten 0 1 0 0 */
    mnemo_close(m);
    /* Nothing configured: says so, for none and for auto. */
    m = test_open("ws", "db.sqlite", "provider=none", NULL);
    ASSERT_EQ(mnemo_embed_json(m, texts, 1, 0, &out), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(mnemo_errmsg(m), "provider is none");
    mnemo_close(m);
    unsetenv("OPENAI_API_KEY");
    m = test_open("ws", "db.sqlite", NULL);
    ASSERT_EQ(mnemo_embed_json(m, texts, 1, 0, &out), MNEMO_UNAVAILABLE);
    ASSERT_CONTAINS(mnemo_errmsg(m), "provider auto found no static table");
    mnemo_close(m);
}

TEST(embed_cli_prints_vectors_and_refuses_bad_use)
{
    test_tiny_table();
    test_mkdir("ws");
    char *out, *err;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "--set", "provider=static", "--set", "model=tiny",
                       "embed", "--query", "car", "kitten cat", NULL),
              0);
    float v[8];
    embed_parse(out, "static", 2, 4, v);
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "embed", NULL), 2);
    ASSERT_CONTAINS(err, "no text given");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "embed", "--query",
                       "--document", "x", NULL),
              2);
    ASSERT_CONTAINS(err, "exclude each other");
    free(out);
    free(err);
    ASSERT(test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--set", "provider=none",
                    "embed", "x", NULL) != 0);
    ASSERT_CONTAINS(err, "provider is none");
    ASSERT_STR_EQ(out, "");
    free(out);
    free(err);
}
