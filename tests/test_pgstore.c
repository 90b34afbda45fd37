/*
 * test_pgstore.c - files and chunks on every storage backend: each test
 * body runs on SQLite, PostgreSQL 15 (keyword only) and PGlite with
 * pgvector (tests/backend.h), so the PostgreSQL backend is held to the
 * behaviour of the SQLite index: sync statistics, incremental sync,
 * keyword search (stemming, CJK, identifiers), ranking, hybrid search,
 * status, hostile input, a large note written a window at a time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "store/postgres/pgint.h"
#include "util/buf.h"

static long count_rows(const char *sql)
{
    if (be_kind() == BE_SQLITE)
        return -1;
    char *out = NULL;
    if (pg_psql(be_server(), sql, &out) != 0)
        test_fail(__FILE__, __LINE__, "psql %s: %s", sql, out ? out : "");
    long n = strtol(out, NULL, 10);
    free(out);
    return n;
}

/* The path of the first result, or "" (static buffer). */
static const char *top_path(mnemo *m, const char *q)
{
    static char path[512];
    mnemo_results *r = NULL;
    if (mnemo_search(m, q, NULL, &r) != MNEMO_OK)
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    const mnemo_result *x = mnemo_results_get(r, 0);
    snprintf(path, sizeof path, "%s", x ? x->path : "");
    mnemo_results_free(r);
    return path;
}

static size_t hits(mnemo *m, const char *q)
{
    mnemo_results *r = NULL;
    if (mnemo_search(m, q, NULL, &r) != MNEMO_OK)
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    size_t n = mnemo_results_count(r);
    mnemo_results_free(r);
    return n;
}

BACKEND_TEST(pgstore_sync_stats_and_incremental)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- The user prefers green tea.\n");
    test_write("ws/memory/a.md", "# Alpha\n\nThe alpha project ships in March.\n");
    test_write("ws/memory/b.md", "# Beta\n\nThe beta project ships in May.\n");
    test_write("ws/memory/c.md", "# Gamma\n\nThe gamma rollout needs a canary.\n");
    mnemo *m = be_open("ws", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.files_seen, 4);
    ASSERT_EQ(st.files_added, 4);
    ASSERT(st.chunks_added >= 4);
    if (be_kind() != BE_SQLITE) {
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_files"), 4);
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_chunks"), (long)st.chunks_added);
        ASSERT_EQ(count_rows("SELECT sum(nchunks) FROM mnemo_corpus"), (long)st.chunks_added);
    }
    /* Nothing changed: nothing read. */
    st = test_sync(m);
    ASSERT_EQ(st.files_unchanged, 4);
    ASSERT_EQ(st.files_added + st.files_changed + st.chunks_added, 0);
    /* Change one, rename one, delete one. */
    test_write("ws/memory/a.md", "# Alpha\n\nThe alpha project slipped to April.\n");
    char *beta = test_read(test_path("ws/memory/b.md"), NULL);
    test_write("ws/memory/renamed-beta.md", beta);
    free(beta);
    ASSERT_EQ(remove(test_path("ws/memory/b.md")), 0);
    ASSERT_EQ(remove(test_path("ws/memory/c.md")), 0);
    st = test_sync(m);
    ASSERT_EQ(st.files_changed, 1);
    ASSERT_EQ(st.files_renamed, 1);
    ASSERT_EQ(st.files_removed, 1);
    ASSERT_EQ(hits(m, "canary"), 0);
    ASSERT_STR_EQ(top_path(m, "April"), "memory/a.md");
    ASSERT_EQ(hits(m, "March"), 0);
    ASSERT_STR_EQ(top_path(m, "beta project May"), "memory/renamed-beta.md");
    if (be_kind() != BE_SQLITE) {
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_files"), 3);
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_files f WHERE f.nchunks <> (SELECT "
                             "count(*) FROM mnemo_chunks c WHERE c.tenant = f.tenant AND "
                             "c.file_id = f.id)"),
                  0);
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_corpus c WHERE nchunks <> (SELECT "
                             "count(*) FROM mnemo_chunks k WHERE k.tenant = c.tenant)"),
                  0);
    }
    /* Force rebuilds this tenant's rows. */
    mnemo_sync_opts o = {0};
    o.force = 1;
    ASSERT_OK(mnemo_sync(m, &o, &st));
    ASSERT_EQ(st.rebuilt, 1);
    ASSERT_EQ(st.files_added, 3);
    ASSERT_STR_EQ(top_path(m, "April"), "memory/a.md");
    mnemo_close(m);
}

BACKEND_TEST(pgstore_keyword_language)
{
    test_write("ws/memory/en.md", "# Deploys\n\nWe deployed the gateways with blue-green "
                                  "releases.\n");
    test_write("ws/memory/zh.md", "# 笔记\n\n我们讨论了数据库迁移计划。\n");
    test_write("ws/memory/ja.md", "# メモ\n\n明日は記憶検索の設計を見直す。\n");
    test_write("ws/memory/code.md", "# Code\n\nCall getUserName before rendering.\n");
    test_write("ws/memory/other.md", "# Other\n\nLunch was pasta.\n");
    mnemo *m = be_open("ws", NULL);
    test_sync(m);
    ASSERT_STR_EQ(top_path(m, "deploying gateway"), "memory/en.md");
    ASSERT_STR_EQ(top_path(m, "数据库迁移"), "memory/zh.md");
    ASSERT_STR_EQ(top_path(m, "記憶検索"), "memory/ja.md");
    ASSERT_STR_EQ(top_path(m, "user name"), "memory/code.md");
    ASSERT_STR_EQ(top_path(m, "getUserName"), "memory/code.md");
    /* A quoted phrase is required, an excluded word excludes. */
    ASSERT_STR_EQ(top_path(m, "\"blue-green releases\""), "memory/en.md");
    ASSERT_EQ(hits(m, "\"releases blue\""), 0);
    ASSERT_EQ(hits(m, "gateways -pasta"), 1);
    ASSERT_EQ(hits(m, "pasta -lunch"), 0);
    ASSERT_EQ(hits(m, "zebra"), 0);
    /* File names. */
    ASSERT_STR_EQ(top_path(m, "other.md"), "memory/other.md");
    mnemo_close(m);
}

BACKEND_TEST(pgstore_ranking)
{
    /* The stronger match first; between equal matches the newer note. */
    test_write("ws/memory/weak.md", "# Misc\n\nThe kettle is broken. Buy bread, milk and "
                                    "eggs, and call the plumber about the sink.\n");
    test_write("ws/memory/strong.md", "# Kettle\n\nThe kettle kettle repair: the kettle "
                                      "needs a new kettle switch.\n");
    test_write("ws/memory/2020-01-01.md", "The invoice for the harbour crane arrived.\n");
    test_write("ws/memory/2026-03-01.md", "The invoice for the harbour crane arrived.\n");
    mnemo *m = be_open("ws", NULL);
    test_sync(m);
    ASSERT_STR_EQ(top_path(m, "kettle"), "memory/strong.md");
    ASSERT_STR_EQ(top_path(m, "harbour crane invoice"), "memory/2026-03-01.md");
    mnemo_close(m);
}

/* A handle keeps what it learnt about chunks between searches only while
 * the index stays as it was: a sync by another handle (here a rename that
 * dates a note years back, its chunks unchanged) is seen by the next
 * search. */
BACKEND_TEST_CONCURRENT(pgstore_factors_follow_other_handles)
{
    test_write("ws/memory/2020-01-01.md", "The invoice for the harbour crane arrived.\n");
    test_write("ws/memory/2026-03-01.md", "The invoice for the harbour crane arrived.\n");
    test_write("ws/memory/notes.md", "The crane operator called about the harbour.\n");
    mnemo *reader = be_open("ws", NULL);
    test_sync(reader);
    ASSERT_STR_EQ(top_path(reader, "harbour crane invoice"), "memory/2026-03-01.md");
    ASSERT_STR_EQ(top_path(reader, "harbour crane invoice"), "memory/2026-03-01.md");
    mnemo *writer = be_open("ws", NULL);
    ASSERT_EQ(rename(test_path("ws/memory/2026-03-01.md"), test_path("ws/memory/2010-03-01.md")),
              0);
    mnemo_sync_stats st = test_sync(writer);
    ASSERT_EQ(st.files_renamed, 1);
    ASSERT_STR_EQ(top_path(reader, "harbour crane invoice"), "memory/2020-01-01.md");
    mnemo_close(writer);
    mnemo_close(reader);
}

/* The results of a corpus as JSON: equal on every backend. */
BACKEND_TEST(pgstore_results_json_same_everywhere)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- Deploys go out on Tuesdays.\n"
                               "- The staging database is called atlas.\n");
    test_write("ws/memory/2026-01-10.md", "# Standup\n\nWe moved the deploy to Wednesday "
                                          "because the atlas database migration ran late.\n");
    test_write("ws/memory/notes.md", "# Notes\n\nDatabase backups run nightly; the deploy "
                                     "checklist lives in the wiki.\n");
    mnemo *m = be_open("ws", "provider=none", NULL);
    test_sync(m);
    char *js = test_search_json(m, "deploy database atlas", 5);
    ASSERT_CONTAINS(js, "{\"results\":[{\"path\":\"");
    ASSERT_CONTAINS(js, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(js, "memory/2026-01-10.md");
    /* The same bytes as the SQLite index gives for the same files. */
    if (be_kind() != BE_SQLITE) {
        mnemo *lite = test_open("ws", "lite.sqlite", "store=sqlite", "provider=none", NULL);
        test_sync(lite);
        char *want = test_search_json(lite, "deploy database atlas", 5);
        ASSERT_STR_EQ(js, want);
        mnemo_free(want);
        want = test_search_json(lite, "\"staging database\" -wiki", 5);
        char *got = test_search_json(m, "\"staging database\" -wiki", 5);
        ASSERT_STR_EQ(got, want);
        mnemo_free(want);
        mnemo_free(got);
        mnemo_close(lite);
    }
    mnemo_free(js);
    mnemo_close(m);
}

/* Vectors built with --set provider=..., then a search without it: on every
 * backend the keyword search says the vectors are unused, and how to use
 * them, in fallback and in status. */
BACKEND_TEST(pgstore_unused_vectors_are_reported)
{
    if (!be_has_vectors())
        return; /* no vectors stored on PostgreSQL without pgvector */
    static const char *const keys[] = {"OPENAI_API_KEY", "GEMINI_API_KEY", "VOYAGE_API_KEY",
                                       "MISTRAL_API_KEY"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        unsetenv(keys[i]);
    test_tiny_table();
    test_write("ws/memory/pets.md", "# Pets\n\nThe kitten sleeps all day.\n");
    mnemo *m = be_open("ws", "provider=static", "model=tiny", NULL);
    test_sync(m);
    mnemo_close(m);
    m = be_open("ws", NULL);
    mnemo_results *r = NULL;
    ASSERT_OK(mnemo_search(m, "kitten", NULL, &r));
    ASSERT_STR_EQ(mnemo_results_mode(r), "keyword");
    const char *reason = NULL;
    ASSERT_STR_EQ(mnemo_results_fallback(r, &reason), "static");
    ASSERT_CONTAINS(reason, "vectors present but unused");
    ASSERT_CONTAINS(reason, "--set provider=static --set model=tiny");
    mnemo_results_free(r);
    char *status = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &status));
    ASSERT_CONTAINS(status, "vectors present but unused");
    mnemo_free(status);
    mnemo_close(m);
    /* provider none: keyword on purpose, nothing said. */
    m = be_open("ws", "provider=none", NULL);
    ASSERT_OK(mnemo_search(m, "kitten", NULL, &r));
    ASSERT(mnemo_results_fallback(r, &reason) == NULL);
    mnemo_results_free(r);
    mnemo_close(m);
}

BACKEND_TEST(pgstore_hybrid_tiny_table)
{
    test_tiny_table();
    test_write("ws/memory/cars.md", "# Garage\n\nThe automobile needs new tyres.\n");
    test_write("ws/memory/pets.md", "# Pets\n\nThe kitten sleeps all day.\n");
    mnemo *m = be_open("ws", "provider=static", "model=tiny", NULL);
    mnemo_sync_stats st = test_sync(m);
    mnemo_results *r = NULL;
    ASSERT_OK(mnemo_search(m, "automobile", NULL, &r));
    ASSERT(mnemo_results_count(r) >= 1);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "memory/cars.md");
    char *status = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &status));
    if (be_has_vectors()) {
        ASSERT_STR_EQ(mnemo_results_mode(r), "hybrid");
        ASSERT(st.vectors_total >= 2 || be_kind() == BE_SQLITE);
        ASSERT_CONTAINS(status, "hybrid");
    } else {
        ASSERT_STR_EQ(mnemo_results_mode(r), "keyword");
        const char *reason = NULL;
        ASSERT(mnemo_results_fallback(r, &reason) != NULL);
        ASSERT_CONTAINS(reason, "pgvector");
        ASSERT_CONTAINS(status, "\"enabled\":false");
        ASSERT_CONTAINS(status, "pgvector");
        ASSERT(st.embed_warning != NULL);
    }
    mnemo_results_free(r);
    mnemo_free(status);
    /* Meaning without the word: car ~ automobile (vectors only). */
    if (be_has_vectors()) {
        ASSERT_OK(mnemo_search(m, "car", NULL, &r));
        ASSERT(mnemo_results_count(r) >= 1);
        ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "memory/cars.md");
        mnemo_results_free(r);
    }
    mnemo_close(m);
    if (be_has_vectors() && be_kind() != BE_SQLITE) {
        /* The first load built the index after its rows; one that stopped
         * before it gets it at the next sync, from the rows it holds. */
        const char *idx = "SELECT count(*) FROM pg_indexes WHERE indexname LIKE "
                          "'mnemo_chunk_vec_%_hnsw'";
        ASSERT_EQ(count_rows(idx), 1);
        char *out = NULL;
        if (pg_psql(be_server(), "DO $$ DECLARE i text; BEGIN FOR i IN SELECT indexname FROM "
                                 "pg_indexes WHERE indexname LIKE 'mnemo_chunk_vec_%_hnsw' LOOP "
                                 "EXECUTE 'DROP INDEX ' || quote_ident(i); END LOOP; END $$",
                    &out) != 0)
            test_fail(__FILE__, __LINE__, "psql: %s", out ? out : "");
        free(out);
        ASSERT_EQ(count_rows(idx), 0);
        m = be_open("ws", "provider=static", "model=tiny", NULL);
        st = test_sync(m);
        ASSERT_EQ(st.files_added + st.files_changed, 0);
        ASSERT_EQ(count_rows(idx), 1);
        ASSERT_OK(mnemo_search(m, "car", NULL, &r));
        ASSERT(mnemo_results_count(r) >= 1);
        ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "memory/cars.md");
        mnemo_results_free(r);
        mnemo_close(m);
    }
}

/* Results as "path:line:score;..." into OUT. */
static void results_line(mnemo_results *r, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < mnemo_results_count(r) && len + 1 < cap; i++) {
        const mnemo_result *x = mnemo_results_get(r, i);
        int w = snprintf(out + len, cap - len, "%s:%d:%.6f:%.6f;", x->path, x->start_line,
                         x->score, x->vector_score);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* Whether two results_line() strings hold the same results in the same
 * order, their scores within 1e-5: a cosine the server computed and one
 * the handle computed from the same vectors may differ in their last bit
 * (pgvector sums in float, in its own order). */
static int results_close(const char *a, const char *b)
{
    while (*a && *b) {
        const char *ea = strchr(a, ';'), *eb = strchr(b, ';');
        if (!ea || !eb)
            return 0;
        const char *na = a, *nb = b; /* path:line: */
        for (int k = 0; k < 2; k++) {
            na = strchr(na, ':');
            nb = strchr(nb, ':');
            if (!na || !nb)
                return 0;
            na++;
            nb++;
        }
        if (na - a != nb - b || memcmp(a, b, (size_t)(na - a)) != 0)
            return 0;
        char *pa, *pb;
        double sa = strtod(na, &pa), sb = strtod(nb, &pb);
        double va = strtod(pa + 1, NULL), vb = strtod(pb + 1, NULL);
        if (fabs(sa - sb) > 1e-5 || fabs(va - vb) > 1e-5)
            return 0;
        a = ea + 1;
        b = eb + 1;
    }
    return !*a && !*b;
}

#define ASSERT_RESULTS_CLOSE(got, want)                                                           \
    do {                                                                                          \
        if (!results_close((got), (want)))                                                        \
            test_fail(__FILE__, __LINE__, "results differ:\n  %s\n  %s", (got), (want));         \
    } while (0)

/* A static table "cal" of 24 words w00..w23 of 128 dimensions (a fixed
 * pseudo-random walk) and 3 query words in no note, each near one word and
 * a little of the next: qa ~ w00 (+ w01), qb ~ w07, qc ~ w14. */
static void random_table(void)
{
    buf tab;
    buf_init(&tab, 0);
    unsigned x = 12345;
    float wv[24][128];
    for (int w = 0; w < 24; w++) {
        buf_printf(&tab, "w%02d", w);
        for (int d = 0; d < 128; d++) {
            x = x * 1103515245u + 12345u;
            wv[w][d] = (float)((x >> 16) & 0x7fff) / 32768.0f - 0.5f;
            buf_printf(&tab, " %.4f", (double)wv[w][d]);
        }
        buf_putc(&tab, '\n');
    }
    static const char *qw[] = {"qa", "qb", "qc"};
    for (int q = 0; q < 3; q++) {
        buf_puts(&tab, qw[q]);
        for (int d = 0; d < 128; d++)
            buf_printf(&tab, " %.4f", (double)(wv[q * 7][d] + 0.3f * wv[q * 7 + 1][d]));
        buf_putc(&tab, '\n');
    }
    test_write("cal.txt", tab.data);
    buf_cleanup(&tab);
    test_import_table("cal.txt", "cal", "\"words\":27");
}

/* N notes ws/memory/nNN.md, each a heading and a line of three of the
 * table's 24 words (random_table). */
static void grid_notes(int n)
{
    char path[64], text[160];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "ws/memory/n%02d.md", i);
        snprintf(text, sizeof text, "# w%02d\n\nw%02d w%02d w%02d\n", i % 24, (i * 5 + 1) % 24,
                 (i * 7 + 3) % 24, (i * 11 + 2) % 24);
        test_write(path, text);
    }
}

/* The vector scores' calibration (the mean and spread of the query's
 * cosines): the PostgreSQL handle computes it itself from the second search
 * of a corpus on, and fetches it again when a sync changed the corpus: every
 * search of one handle scores as a fresh handle's does. */
BACKEND_TEST(pgstore_hybrid_calibration_kept)
{
    random_table();
    grid_notes(48);
    char path[64], text[160];
    char store[600];
    snprintf(store, sizeof store, "store=%s", be_store());
    /* A note of no word the table knows: a vector without length, whose
     * cosine counts 0 (pgvector's distance is NaN). */
    test_write("ws/memory/none.md", "# Zzz\n\nnothing known here\n");
    mnemo *m = be_open("ws", "provider=static", "model=cal", store, NULL);
    test_sync(m);
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0;
    static const char *queries[] = {"qa", "qb", "qc w05", "qa w00"};
    char first[4][4096], again[4096];
    int vector_hits = 0;
    for (int round = 0; round < 3; round++)
        for (int q = 0; q < 4; q++) {
            mnemo_results *r = NULL;
            ASSERT_OK(mnemo_search(m, queries[q], &o, &r));
            if (be_has_vectors())
                ASSERT_STR_EQ(mnemo_results_mode(r), "hybrid");
            for (size_t i = 0; i < mnemo_results_count(r); i++)
                vector_hits += mnemo_results_get(r, i)->vector_score > 0;
            results_line(r, round ? again : first[q], sizeof again);
            mnemo_results_free(r);
            if (round)
                ASSERT_RESULTS_CLOSE(again, first[q]);
        }
    ASSERT(vector_hits > 0 || !be_has_vectors());
    /* The corpus changes: eight more notes. */
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof path, "ws/memory/c%02d.md", i);
        snprintf(text, sizeof text, "# More %d\n\nw00 w07 w14 w%02d\n", i, i + 16);
        test_write(path, text);
    }
    test_sync(m);
    mnemo *fresh = be_open("ws", "provider=static", "model=cal", store, NULL);
    int moved = 0; /* queries whose results the new notes changed */
    for (int q = 0; q < 4; q++) {
        char want[4096];
        mnemo_results *r = NULL;
        ASSERT_OK(mnemo_search(fresh, queries[q], &o, &r));
        results_line(r, want, sizeof want);
        mnemo_results_free(r);
        moved += strcmp(want, first[q]) != 0;
        for (int round = 0; round < 2; round++) {
            ASSERT_OK(mnemo_search(m, queries[q], &o, &r));
            results_line(r, again, sizeof again);
            mnemo_results_free(r);
            ASSERT_RESULTS_CLOSE(again, want);
        }
    }
    ASSERT(moved >= 2 || !be_has_vectors());
    mnemo_close(fresh);
    mnemo_close(m);
}

/* From a handle's second search on, PostgreSQL runs the vector leg on a
 * second connection while the keyword leg reads the postings: the results
 * are a fresh handle's (whose one search runs both legs on its own
 * connection, one after the other); a side connection killed under it
 * costs no search; and PGlite, whose connections share one session, gets
 * no second connection (its read-only setting would have been the
 * writer's too). */
BACKEND_TEST(pgstore_hybrid_vector_leg_beside)
{
    if (be_kind() == BE_SQLITE || !be_has_vectors())
        return;
    random_table();
    grid_notes(40);
    char store[600];
    snprintf(store, sizeof store, "store=%s", be_store());
    mnemo *m = be_open("ws", "provider=static", "model=cal", store, NULL);
    test_sync(m);
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0;
    static const char *queries[] = {"qa w03", "qb w05 w11", "w07", "qc w00 w01"};
    char want[4][4096], got[4096];
    for (int q = 0; q < 4; q++) {
        mnemo *f = be_open("ws", "provider=static", "model=cal", store, NULL);
        mnemo_results *r = NULL;
        ASSERT_OK(mnemo_search(f, queries[q], &o, &r));
        ASSERT_STR_EQ(mnemo_results_mode(r), "hybrid");
        ASSERT(mnemo_results_count(r) > 0);
        results_line(r, want[q], sizeof want[q]);
        mnemo_results_free(r);
        mnemo_close(f);
    }
    /* The side's last statement is the vector leg's (nr AS ...). */
    static const char side_sql[] =
        "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND "
        "query LIKE '%nr AS (SELECT v.chunk_id%'";
    for (int round = 0; round < 2; round++)
        for (int q = 0; q < 4; q++) {
            mnemo_results *r = NULL;
            ASSERT_OK(mnemo_search(m, queries[q], &o, &r));
            results_line(r, got, sizeof got);
            mnemo_results_free(r);
            ASSERT_RESULTS_CLOSE(got, want[q]);
        }
    char *out = NULL;
    if (be_kind() == BE_PGNATIVE) {
        ASSERT_EQ(pg_psql(be_server(), side_sql, &out), 0);
        ASSERT_EQ(atoi(out), 1);
        free(out);
        /* Killed: the next searches answer on the handle's connection. */
        ASSERT_EQ(pg_psql(be_server(),
                          "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                          "pid <> pg_backend_pid() AND query LIKE '%nr AS (SELECT v.chunk_id%'",
                          &out),
                  0);
        ASSERT_EQ(atoi(out), 1);
        free(out);
        for (int q = 0; q < 4; q++) {
            mnemo_results *r = NULL;
            ASSERT_OK(mnemo_search(m, queries[q], &o, &r));
            results_line(r, got, sizeof got);
            mnemo_results_free(r);
            ASSERT_RESULTS_CLOSE(got, want[q]);
        }
    }
    /* Writes on the handle still work (on PGlite too). */
    test_write("ws/memory/late.md", "# Late\n\nw02 w04 w06\n");
    test_sync(m);
    char *id = NULL;
    ASSERT_OK(mnemo_memory_add(m, "{\"text\":\"The beside leg keeps writes working\"}", &id));
    mnemo_free(id);
    mnemo_close(m);
}

/* Results as "path:first-last;..." (static buffer). */
static const char *result_lines(mnemo_results *r)
{
    static char out[2048];
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < mnemo_results_count(r) && len + 64 < sizeof out; i++) {
        const mnemo_result *x = mnemo_results_get(r, i);
        len += (size_t)snprintf(out + len, sizeof out - len, "%s:%d-%d;", x->path, x->start_line,
                                x->end_line);
    }
    return out;
}

/* A chunk is embedded as its parts (vectorChars): a question that shares no
 * word with a note but means one of its lines gets the passage around that
 * line, where one vector for the whole chunk can only show its first lines.
 * The same results on every backend. */
BACKEND_TEST(pgstore_hybrid_parts_find_the_line)
{
    random_table();
    char path[64], text[160];
    for (int i = 0; i < 40; i++) { /* notes of other words: the spread */
        snprintf(path, sizeof path, "ws/memory/n%02d.md", i);
        snprintf(text, sizeof text, "# Note %d\n\nw%02d w%02d w%02d\n", i, 2 + i % 22,
                 2 + (i * 5 + 1) % 22, 2 + (i * 7 + 3) % 22);
        test_write(path, text);
    }
    /* Twelve lines of other words, the eleventh one what qa means. */
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "# Log\n\n");
    for (int i = 0; i < 12; i++)
        buf_printf(&b, "%s\n", i == 10 ? "w00 w01 w00" : (i % 2 ? "w05 w09 w13" : "w17 w20 w22"));
    test_write("ws/memory/log.md", b.data); /* the eleventh: line 13 */
    buf_cleanup(&b);
    char store[600];
    snprintf(store, sizeof store, "store=%s", be_store());
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0;
    char want[2048] = "";
    for (int parts = 1; parts >= 0; parts--) {
        const char *vc = parts ? "vectorChars=1" : "vectorChars=0";
        mnemo *m = be_open("ws", "provider=static", "model=cal", "snippetChars=80", vc, store,
                           NULL);
        mnemo_sync_stats st = test_sync(m);
        if (!be_has_vectors()) {
            mnemo_close(m);
            return;
        }
        ASSERT(st.vectors_total == 41);
        mnemo_results *r = NULL;
        ASSERT_OK(mnemo_search(m, "qa", &o, &r));
        ASSERT_STR_EQ(mnemo_results_mode(r), "hybrid");
        ASSERT(mnemo_results_count(r) >= 1);
        const mnemo_result *log = NULL;
        for (size_t i = 0; i < mnemo_results_count(r) && !log; i++)
            if (!strcmp(mnemo_results_get(r, i)->path, "memory/log.md"))
                log = mnemo_results_get(r, i);
        ASSERT(log != NULL);
        ASSERT(log->end_line - log->start_line <= 7); /* 80 characters */
        if (parts) { /* first, around the line that means it */
            ASSERT(log == mnemo_results_get(r, 0));
            ASSERT(log->start_line <= 13 && 13 <= log->end_line);
            ASSERT(log->vector_score > 0);
            snprintf(want, sizeof want, "%s", result_lines(r));
        } else { /* the chunk's first window */
            ASSERT_EQ(log->start_line, 1);
            ASSERT(log->end_line < 13);
        }
        if (parts && be_kind() != BE_SQLITE) { /* SQLite's passages */
            mnemo *lite = test_open("ws", "lite.sqlite", "store=sqlite", "provider=static",
                                    "model=cal", "snippetChars=80", vc, NULL);
            test_sync(lite);
            mnemo_results *lr = NULL;
            ASSERT_OK(mnemo_search(lite, "qa", &o, &lr));
            ASSERT_STR_EQ(result_lines(lr), want);
            mnemo_results_free(lr);
            mnemo_close(lite);
        }
        mnemo_results_free(r);
        mnemo_close(m);
    }
    if (be_kind() == BE_SQLITE)
        return;
    /* A database from before parts (one row a chunk, keyed by chunk):
     * migration 10 keys the rows by part, and a sync with parts fills them. */
    ASSERT_EQ(pg_psql(be_server(),
                      "BEGIN; DELETE FROM mnemo_chunk_vec_128 WHERE part > 0; "
                      "ALTER TABLE mnemo_chunk_vec_128 DROP CONSTRAINT mnemo_chunk_vec_128_pkey; "
                      "ALTER TABLE mnemo_chunk_vec_128 DROP COLUMN part; "
                      "ALTER TABLE mnemo_chunk_vec_128 ADD PRIMARY KEY (tenant, chunk_id); "
                      "DELETE FROM mnemo_migrations WHERE version >= 10; COMMIT",
                      NULL),
              0);
    mnemo *m = be_open("ws", "provider=static", "model=cal", "snippetChars=80", "vectorChars=1",
                       store, NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_migrations WHERE version = 10"), 1);
    /* 41 chunks, 93 parts: every note's heading and line, the log's
     * heading and 12 lines. */
    ASSERT_EQ(st.vectors_total, 41);
    ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_chunk_vec_128 WHERE part > 0"), 93 - 41);
    mnemo_results *r = NULL;
    ASSERT_OK(mnemo_search(m, "qa", &o, &r));
    ASSERT_STR_EQ(result_lines(r), want);
    mnemo_results_free(r);
    mnemo_close(m);
}

BACKEND_TEST(pgstore_status)
{
    test_write("ws/memory/a.md", "Plain note.\n");
    test_write_n("ws/memory/bin.md", "\x00\x01\x02\xff\xfe binary", 12);
    test_write("ws/memory/bad.md", "ok \xc3\x28 invalid utf8 \xff\n");
    mnemo *m = be_open("ws", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT(st.files_skipped >= 1);
    char *out = NULL;
    ASSERT_OK(mnemo_status_json(m, 0, &out));
    ASSERT_CONTAINS(out, "bin.md");
    ASSERT_CONTAINS(out, "\"reason\"");
    if (be_kind() != BE_SQLITE) {
        ASSERT_CONTAINS(out, "\"backend\":\"postgres\"");
        ASSERT_CONTAINS(out, "\"tenant\"");
        ASSERT_CONTAINS(out, "\"schemaVersion\"");
        ASSERT_NOT_CONTAINS(out, PG_TEST_SUPERPASS);
        if (!be_has_vectors())
            ASSERT_CONTAINS(out, "\"enabled\":false");
    }
    mnemo_free(out);
    ASSERT_EQ(hits(m, "binary"), 0);
    mnemo_close(m);
}

BACKEND_TEST(pgstore_hostile_input)
{
    test_write("ws/memory/'; DROP TABLE mnemo_chunks; --.md",
               "Robert's note: quotes ' and \" and back\\slash and $1 and :* & | ! ( ).\n");
    test_write("ws/memory/plain.md", "The lighthouse keeper logs the weather.\n");
    mnemo *m = be_open("ws", NULL);
    mnemo_sync_stats st = test_sync(m);
    ASSERT_EQ(st.files_added, 2);
    const char *queries[] = {"'; DROP TABLE mnemo_chunks; --", "Robert's", "back\\slash",
                             "$1", "\"unclosed", "a:* & !b | (c", "' OR 1=1 --", "\\",
                             "DROP TABLE mnemo_files"};
    for (size_t i = 0; i < sizeof queries / sizeof *queries; i++) {
        mnemo_results *r = NULL;
        ASSERT_OK(mnemo_search(m, queries[i], NULL, &r));
        mnemo_results_free(r);
    }
    ASSERT(hits(m, "Robert") >= 1);
    ASSERT_STR_EQ(top_path(m, "lighthouse"), "memory/plain.md");
    if (be_kind() != BE_SQLITE) {
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_files"), 2);
        ASSERT(count_rows("SELECT count(*) FROM mnemo_chunks") >= 2);
    }
    /* Recall and get work on this corpus too. */
    char *out = NULL;
    ASSERT_OK(mnemo_recall_triggers(m, "'; DROP TABLE mnemo_chunks; --", &out));
    mnemo_free(out);
    mnemo_close(m);
}

BACKEND_TEST(pgstore_recall_and_get)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- Deploy freezes start on Fridays.\n"
                               "  <!-- trigger: deploy freeze -->\n"
                               "- Ana likes oolong tea.\n");
    mnemo *m = be_open("ws", NULL);
    test_sync(m);
    char *out = NULL;
    ASSERT_OK(mnemo_recall_triggers(m, "can we deploy during the freeze?", &out));
    ASSERT_CONTAINS(out, "Deploy freezes start on Fridays");
    ASSERT_CONTAINS(out, "MEMORY.md#L");
    mnemo_free(out);
    ASSERT_OK(mnemo_recall_triggers(m, "what tea?", &out));
    ASSERT_STR_EQ(out, "");
    mnemo_free(out);
    mnemo_excerpt e;
    ASSERT_OK(mnemo_get(m, "MEMORY.md", 3, 1, &e));
    ASSERT_CONTAINS(e.text, "Deploy freezes");
    mnemo_excerpt_cleanup(&e);
    mnemo_close(m);
}

/* Chunks whose file row is gone. */
#define ORPHANS                                                                               \
    "SELECT count(*) FROM mnemo_chunks c WHERE NOT EXISTS (SELECT 1 FROM mnemo_files f "     \
    "WHERE f.tenant = c.tenant AND f.id = c.file_id)"

/* The searches of the index's words agree with SQLite's, byte for byte. */
static void same_as(mnemo *m, mnemo *lite)
{
    static const char *const q[] = {"tea",   "xylograph", "project ships", "alpha -beta",
                                    "\"beta project\"", "proj*", "tea +project", "\xe6\x9d\xb1",
                                    "\xe4\xba\xac -tea", "\"cr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e\"",
                                    "m\xc3\xbcller -tea"};
    if (!lite)
        return;
    test_sync(lite);
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        char *got = test_search_json(m, q[i], 6), *want = test_search_json(lite, q[i], 6);
        ASSERT_STR_EQ(got, want);
        mnemo_free(got);
        mnemo_free(want);
    }
}

/* The keyword index kept by sync gives SQLite's results through additions,
 * changes, renames, skips, removals and a rebuild (document frequencies
 * included: the scores are in the JSON), for words, excluded words,
 * required words, phrases and prefixes. */
BACKEND_TEST(pgstore_terms_exact)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- The user prefers green tea.\n");
    test_write("ws/memory/a.md", "# Alpha\n\nThe alpha project ships in March; tea break.\n");
    test_write("ws/memory/b.md", "# Beta\n\nThe beta project ships in May.\n");
    test_write("ws/memory/c.md", "# Gamma\n\nThe gamma rollout needs a xylograph canary.\n");
    test_write("ws/memory/d.md", "# Delta\n\nDelta notes about the project and tea.\n");
    test_write("ws/memory/f.md", "# Caf\xc3\xa9\n\nM\xc3\xbcller's caf\xc3\xa9 serves "
                                 "cr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e and chai; cafeteria "
                                 "\xe6\x9d\xb1\xe4\xba\xac\xe3\x82\xbf\xe3\x83\xaf\xe3\x83\xbc.\n");
    mnemo *m = be_open("ws", NULL);
    mnemo *lite = be_kind() == BE_SQLITE
                      ? NULL
                      : test_open("ws", "lite.sqlite", "store=sqlite", NULL);
    test_sync(m);
    same_as(m, lite);
    /* A lone CJK character is a prefix of the bigrams (a range of lexemes). */
    ASSERT_EQ(hits(m, "\xe6\x9d\xb1"), 1);
    ASSERT_EQ(hits(m, "\xe4\xba\xac -tea"), 1);
    ASSERT_EQ(hits(m, "\"cr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e\""), 1);
    ASSERT_EQ(hits(m, "\"beta project\""), 1);
    if (lite) {
        ASSERT_EQ(count_rows("SELECT count(*) FROM pg_tables WHERE tablename = 'mnemo_terms'"),
                  0);
        /* Rows are found through the postings: no GIN index on the chunks. */
        ASSERT_EQ(count_rows("SELECT count(*) FROM pg_indexes WHERE tablename = 'mnemo_chunks' "
                             "AND indexdef LIKE '%gin%'"),
                  0);
        /* A chunk's row stays whole up to a page (no compression tried). */
        ASSERT_EQ(count_rows("SELECT count(*) FROM pg_class WHERE relname = 'mnemo_chunks' AND "
                             "reloptions::text LIKE '%toast_tuple_target=8160%'"),
                  1);
    }
    /* Change one, rename one, remove one (its unique word goes), one
     * becomes unreadable (skipped). */
    test_write("ws/memory/a.md", "# Alpha\n\nThe alpha project slipped to April.\n");
    char *beta = test_read(test_path("ws/memory/b.md"), NULL);
    test_write("ws/memory/renamed-beta.md", beta);
    free(beta);
    ASSERT_EQ(remove(test_path("ws/memory/b.md")), 0);
    ASSERT_EQ(remove(test_path("ws/memory/c.md")), 0);
    test_write_n("ws/memory/d.md", "\x00\x01\x02\xff\xfe binary", 12);
    test_sync(m);
    ASSERT_EQ(hits(m, "xylograph"), 0);
    ASSERT_EQ(hits(m, "tea"), 1);
    same_as(m, lite);
    /* No foreign key keeps the chunks to their files: the statements do. */
    if (lite)
        ASSERT_EQ(count_rows(ORPHANS), 0);
    /* Words come back with a new file. */
    test_write("ws/memory/e.md", "# Epsilon\n\nA xylograph of tea leaves.\n");
    test_sync(m);
    ASSERT_EQ(hits(m, "xylograph"), 1);
    same_as(m, lite);
    /* A rebuild counts afresh. */
    mnemo_sync_opts o = {0};
    o.force = 1;
    mnemo_sync_stats st;
    ASSERT_OK(mnemo_sync(m, &o, &st));
    ASSERT_EQ(st.rebuilt, 1);
    if (lite) /* ties rank by chunk id: rebuilt alike */
        ASSERT_OK(mnemo_sync(lite, &o, &st));
    same_as(m, lite);
    if (lite) {
        ASSERT_EQ(count_rows(ORPHANS), 0);
        mnemo_close(lite);
    }
    mnemo_close(m);
}

/* MaxScore (the PostgreSQL keyword leg for plain words) reads the rarest
 * terms' matches first: here the rare word matches three long notes, far
 * fewer than the candidate pool and weaker than the short notes of the
 * second word, which must be read too (and rank first); with a pool filled
 * by the first term ("alpha entries") the common one is never read. Either
 * way the results are SQLite's, byte for byte. */
BACKEND_TEST(pgstore_maxscore_second_term)
{
    char path[64], text[1024];
    for (int i = 0; i < 260; i++) {
        int n = snprintf(text, sizeof text, "Record %d: entries", i);
        for (int k = 0; i < 40 && k < i % 4 + 1; k++)
            n += snprintf(text + n, sizeof text - (size_t)n, " ledger");
        for (int k = 0; i < 220 && k < i % 3 + 1; k++)
            n += snprintf(text + n, sizeof text - (size_t)n, " alpha");
        snprintf(text + n, sizeof text - (size_t)n, "%s closing words %d.\n",
                 i % 10 == 0 ? " quartz" : "", i * 7);
        snprintf(path, sizeof path, "ws/memory/r%03d.md", i);
        test_write(path, text);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "ws/memory/z%d.md", i);
        snprintf(text, sizeof text,
                 "A long rambling paragraph %d that mentions zephyr once among many other "
                 "words: harbour cranes, invoices, kettles, bread, milk, eggs, plumbers, "
                 "sinks, lighthouses, weather, gateways, releases, deploys, databases, "
                 "migrations, checklists, wikis, standups, canaries, rollouts, projects.\n",
                 i);
        test_write(path, text);
    }
    mnemo *m = be_open("ws", "provider=none", NULL);
    test_sync(m);
    const char *queries[] = {"zephyr ledger", "alpha entries", "zephyr ledger -quartz",
                             "\"zephyr\" ledger", "alpha zephyr ledger quartz", "ledger alpha"};
    size_t nq = sizeof queries / sizeof *queries;
    char *got[8];
    for (size_t i = 0; i < nq; i++) {
        got[i] = test_search_json(m, queries[i], 6);
        ASSERT_CONTAINS(got[i], "{\"results\":[{\"path\":\"");
    }
    /* The second term's notes rank first. */
    ASSERT_CONTAINS(got[0], "{\"results\":[{\"path\":\"memory/r0");
    if (be_kind() != BE_SQLITE) {
        mnemo *lite = test_open("ws", "lite.sqlite", "store=sqlite", "provider=none", NULL);
        test_sync(lite);
        for (size_t i = 0; i < nq; i++) {
            char *want = test_search_json(lite, queries[i], 6);
            ASSERT_STR_EQ(got[i], want);
            mnemo_free(want);
        }
        mnemo_close(lite);
    }
    for (size_t i = 0; i < nq; i++)
        mnemo_free(got[i]);
    mnemo_close(m);
}

/* A note of the postings test: N words of a small vocabulary (so that
 * lexemes are shared and frequencies vary), from seed X. */
static void postings_note(const char *path, unsigned x, int n)
{
    static const char *const vocab[] = {
        "harbour", "crane", "invoice", "kettle", "bread", "plumber", "sink", "lighthouse",
        "weather", "gateway", "release", "deploy", "database", "migration", "checklist",
        "standup", "canary", "rollout", "project", "ledger", "quartz", "zephyr", "alpha",
        "entries", "tea", "coffee", "garden", "tomato", "bicycle", "mechanic", "garage",
        "invoices", "deploying", "gardens", "cranes", "kettles", "budget", "review"};
    size_t nv = sizeof vocab / sizeof *vocab;
    buf b;
    buf_init(&b, 0);
    buf_printf(&b, "# Note %u\n\n", x % 1000);
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        /* Skewed: low indexes far more often. */
        size_t k = ((x >> 8) % nv) * ((x >> 20) % nv) / nv;
        buf_printf(&b, "%s%s", vocab[k], i % 12 == 11 ? ".\n" : " ");
    }
    buf_puts(&b, "\n");
    test_write(path, b.data);
    buf_cleanup(&b);
}

/* The PostgreSQL keyword index (posting segments per lexeme, a merged mark,
 * dead chunks) gives SQLite's results byte for byte through rounds of
 * changes, removals and additions (segments folded past eight), a sync
 * killed before merging (chunks above the mark, read from their
 * tsvectors, merged by the next sync), a database from before the index
 * (the other leg, until a sync builds it) and a mass removal (every lexeme
 * folded, the dead list emptied). */
BACKEND_TEST_CONCURRENT(pgstore_postings_exact)
{
    char path[64];
    for (int i = 0; i < 120; i++) {
        snprintf(path, sizeof path, "ws/memory/n%03d.md", i);
        postings_note(path, (unsigned)i * 7919u + 1u, 20 + (i * 37) % 400);
    }
    mnemo *m = be_open("ws", "provider=none", NULL);
    mnemo *lite = be_kind() == BE_SQLITE
                      ? NULL
                      : test_open("ws", "lite.sqlite", "store=sqlite", "provider=none", NULL);
    const char *queries[] = {"harbour crane",        "zephyr ledger quartz", "deploy migration",
                             "tea coffee garden",    "+canary rollout",      "review budget alpha",
                             "mechanic garage",      "invoice kettle bread", "\"harbour crane\"",
                             "garden -tomato",       "\"deploy migration\" -quartz zephyr",
                             "kettle -\"harbour crane\" -tea"};
    size_t nq = sizeof queries / sizeof *queries;
#define SAME_AS_SQLITE()                                                                         \
    do {                                                                                         \
        test_sync(m);                                                                            \
        if (lite) {                                                                              \
            test_sync(lite);                                                                     \
            for (size_t q = 0; q < nq; q++) {                                                    \
                char *got = test_search_json(m, queries[q], 8);                                  \
                char *want = test_search_json(lite, queries[q], 8);                              \
                ASSERT_CONTAINS(want, "\"path\":\"memory/");                                     \
                ASSERT_STR_EQ(got, want);                                                        \
                mnemo_free(got);                                                                 \
                mnemo_free(want);                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)
    SAME_AS_SQLITE();
    if (lite) {
        ASSERT(count_rows("SELECT count(*) FROM mnemo_postings") > 30);
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_post_state WHERE merged = (SELECT "
                             "max(id) FROM mnemo_chunks)"),
                  1);
    }
    /* Rounds of changes: each sync writes a segment per lexeme it saw. */
    for (int round = 0; round < 11; round++) {
        for (int j = 0; j < 8; j++) {
            int i = (round * 31 + j * 13) % 120;
            snprintf(path, sizeof path, "ws/memory/n%03d.md", i);
            postings_note(path, (unsigned)(round * 1000 + j), 30 + (round * 53 + j * 17) % 300);
        }
        snprintf(path, sizeof path, "ws/memory/n%03d.md", (round * 17 + 5) % 120);
        remove(test_path(path));
        snprintf(path, sizeof path, "ws/memory/new%02d.md", round);
        postings_note(path, (unsigned)round * 104729u, 60);
        SAME_AS_SQLITE();
    }
    if (lite) {
        /* Folded: no lexeme keeps more than eight segments plus the last. */
        ASSERT(count_rows("SELECT max(c) FROM (SELECT count(*) AS c FROM mnemo_postings GROUP BY "
                          "tenant, source, lexeme) x") <= 9);
        ASSERT(count_rows("SELECT count(*) FROM mnemo_post_dead") > 0);
        /* A sync killed before its merge: the index is behind the chunks. */
        char *out = NULL;
        ASSERT_EQ(pg_psql(be_server(), "UPDATE mnemo_post_state SET merged = 0; DELETE FROM "
                          "mnemo_postings; DELETE FROM mnemo_post_dead", &out), 0);
        free(out);
        for (size_t q = 0; q < nq; q++) {
            char *got = test_search_json(m, queries[q], 8);
            char *want = test_search_json(lite, queries[q], 8);
            ASSERT_STR_EQ(got, want);
            mnemo_free(got);
            mnemo_free(want);
        }
        SAME_AS_SQLITE(); /* nothing changed, but the index is merged */
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_post_state WHERE merged = (SELECT "
                             "max(id) FROM mnemo_chunks)"),
                  1);
        ASSERT(count_rows("SELECT count(*) FROM mnemo_postings") > 30);
        /* A database from before the index: searches use the other leg. */
        ASSERT_EQ(pg_psql(be_server(), "DELETE FROM mnemo_post_state; DELETE FROM "
                          "mnemo_postings", &out), 0);
        free(out);
        mnemo_close(m);
        m = be_open("ws", "provider=none", NULL);
        for (size_t q = 0; q < nq; q++) {
            char *got = test_search_json(m, queries[q], 8);
            char *want = test_search_json(lite, queries[q], 8);
            ASSERT_STR_EQ(got, want);
            mnemo_free(got);
            mnemo_free(want);
        }
        SAME_AS_SQLITE();
        ASSERT(count_rows("SELECT count(*) FROM mnemo_postings") > 30);
    }
    /* A mass removal: more dead chunks than the index keeps. */
    for (int i = 0; i < 1100; i++) {
        snprintf(path, sizeof path, "ws/memory/bulk/b%04d.md", i);
        postings_note(path, (unsigned)i * 31u + 7u, 8);
    }
    SAME_AS_SQLITE();
    for (int i = 0; i < 1100; i++) {
        snprintf(path, sizeof path, "ws/memory/bulk/b%04d.md", i);
        ASSERT_EQ(remove(test_path(path)), 0);
    }
    SAME_AS_SQLITE();
    if (lite) {
        ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_post_dead"), 0);
        ASSERT_EQ(count_rows("SELECT max(c) FROM (SELECT count(*) AS c FROM mnemo_postings "
                             "GROUP BY tenant, source, lexeme) x"),
                  1);
    }
#undef SAME_AS_SQLITE
    if (lite)
        mnemo_close(lite);
    mnemo_close(m);
}

/* Vector literals bring every float back exactly (seven digits, as the
 * note index once wrote them, do not), and lexemes double quotes and
 * backslashes. */
/* A chunk's tsvector text: each lexeme once, in byte order, its positions
 * rising, every token counted, for words that share long prefixes (the
 * sort compares their first 8 bytes as one number) and repeat often. */
TEST(pgtext_tsvector_sorted)
{
    static const char *const stem[] = {"a", "ab", "abcdefg", "abcdefgh", "abcdefghij",
                                       "abcdefghik", "abcdefgi", "b", "zz"};
    tok *t = NULL;
    ASSERT_OK(tok_new("none", 0, &t));
    buf text, out;
    buf_init(&text, 0);
    buf_init(&out, 0);
    uint32_t x = 7;
    int words = 3000;
    for (int i = 0; i < words; i++) {
        x = x * 1103515245u + 12345u;
        buf_printf(&text, "%s%c ", stem[(x >> 16) % 9], "qrs"[(x >> 8) % 3]);
    }
    ASSERT_OK(pgstore_tsvector_text(t, text.data, &out));
    /* 'lexeme':p,p,... separated by spaces */
    const char *p = out.data, *prev = NULL;
    size_t prevlen = 0;
    int lexemes = 0, positions = 0;
    while (*p) {
        ASSERT(*p == '\'');
        const char *lx = ++p;
        while (*p && *p != '\'')
            p++;
        size_t len = (size_t)(p - lx);
        ASSERT(*p == '\'' && p[1] == ':');
        if (prev) {
            size_t n = len < prevlen ? len : prevlen;
            int c = memcmp(prev, lx, n);
            ASSERT(c < 0 || (c == 0 && prevlen < len));
        }
        prev = lx;
        prevlen = len;
        lexemes++;
        p += 2;
        long last = 0;
        for (;;) {
            char *end;
            long pos = strtol(p, &end, 10);
            ASSERT(end > p && pos > last);
            last = pos;
            positions++;
            p = end;
            if (*p != ',')
                break;
            p++;
        }
        if (*p == ' ')
            p++;
    }
    ASSERT_EQ(lexemes, 27);
    ASSERT_EQ(positions, words);
    buf_cleanup(&text);
    buf_cleanup(&out);
    tok_free(t);
}

TEST(pgtext_forms)
{
    float v[512];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        x = x * 1103515245u + 12345u;
        v[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * (i % 7 ? 1.0f : 1e-6f);
    }
    buf b;
    buf_init(&b, 1 << 20);
    pgtext_vector_literal(&b, v, (int)(sizeof v / sizeof *v));
    ASSERT(b.data[0] == '[' && b.data[b.len - 1] == ']');
    const char *p = b.data + 1;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char *end;
        float back = strtof(p, &end);
        ASSERT(end != p);
        if (back != v[i])
            test_fail(__FILE__, __LINE__, "element %zu: %.9g came back as %.9g", i, (double)v[i],
                      (double)back);
        p = end + 1;
    }
    buf_reset(&b);
    pgtext_lexeme(&b, "it's a\\b", 8);
    ASSERT_STR_EQ(b.data, "'it''s a\\\\b'");
    buf_cleanup(&b);
}

/* The paths a search finds, sorted, one per line (caller frees). */
static char *found(mnemo *m, const char *q)
{
    mnemo_results *r = NULL;
    if (mnemo_search(m, q, NULL, &r) != MNEMO_OK)
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    size_t n = mnemo_results_count(r);
    const char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = mnemo_results_get(r, i)->path;
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful */
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "%s\n", v[i]);
    free(v);
    mnemo_results_free(r);
    return b.data ? b.data : strdup("");
}

/* A quoted identifier finds what the bare one finds: "#412" is also 412
 * written inside a word (acme/gateway#412), as the bare #412 is. */
BACKEND_TEST(pgstore_quoted_identifiers)
{
    test_write("ws/memory/a.md", "# A\n\n- Reviewed acme/gateway#412 with Priya.\n");
    test_write("ws/memory/b.md", "# B\n\n- Ticket #412 closed on Friday.\n");
    test_write("ws/memory/c.md", "# C\n\n- Ticket 4120 and #41 are unrelated.\n");
    mnemo *m = be_open("ws", NULL);
    test_sync(m);
    char *bare = found(m, "#412"), *quoted = found(m, "\"#412\"");
    ASSERT_STR_EQ(bare, "memory/a.md\nmemory/b.md\n");
    ASSERT_STR_EQ(quoted, bare);
    free(bare);
    free(quoted);
    quoted = found(m, "\"ticket #412\"");
    ASSERT_STR_EQ(quoted, "memory/b.md\n");
    free(quoted);
    quoted = found(m, "\"gateway#412\"");
    ASSERT_STR_EQ(quoted, "memory/a.md\n");
    free(quoted);
    mnemo_close(m);
}

/* A handle on the index NAME: a tenant of its own on PostgreSQL, an index
 * file of its own on SQLite. */
static mnemo *open_named(const char *name)
{
    if (be_kind() == BE_SQLITE) {
        char db[64];
        snprintf(db, sizeof db, "%s.sqlite", name);
        return test_open("ws", db, NULL);
    }
    char tenant[64];
    snprintf(tenant, sizeof tenant, "tenant=%s", name);
    return be_open("ws", tenant, NULL);
}

/* The results of QUERY as one string: paths, lines, scores, snippets. */
static char *results_of(mnemo *m, const char *q)
{
    mnemo_results *r = NULL;
    if (mnemo_search(m, q, NULL, &r) != MNEMO_OK)
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < mnemo_results_count(r); i++) {
        const mnemo_result *x = mnemo_results_get(r, i);
        buf_printf(&b, "%s %d-%d %.6f %s\n", x->path, x->start_line, x->end_line, x->score,
                   x->snippet);
    }
    mnemo_results_free(r);
    return buf_detach(&b);
}

/* Syncs the index NAME with the window WINDOW (NULL: the default, the
 * note read whole). */
static mnemo_sync_stats sync_named(const char *name, const char *window)
{
    if (window)
        setenv("MNEMO_INDEX_WINDOW", window, 1);
    mnemo *m = open_named(name);
    mnemo_sync_stats st = test_sync(m);
    mnemo_close(m);
    unsetenv("MNEMO_INDEX_WINDOW");
    return st;
}

BACKEND_TEST(pgstore_large_note_streamed_as_read_whole)
{
    buf note;
    buf_init(&note, 0);
    for (int i = 0; note.len < 120000; i++)
        buf_printf(&note, "%sline %d: the %s project ships %s after the %s review\n",
                   i % 9 == 0 ? "\n## Week\n" : "", i, i % 3 ? "alpha" : "heron",
                   i % 4 ? "soon" : "later", i % 5 ? "design" : "walrus");
    test_write_n("ws/memory/big.md", note.data, note.len);
    test_write("ws/memory/small.md", "The heron project has a small note too.\n");
    static const char *const queries[] = {"heron walrus", "alpha project later", "line 1234"};
    for (int round = 0; round < 2; round++) {
        if (round) { /* an edit in the middle: the streamed note is written again */
            memcpy(note.data + note.len / 2, "\nEDITED\n", 8);
            test_write_n("ws/memory/big.md", note.data, note.len);
        }
        mnemo_sync_stats a = sync_named("whole", NULL);
        mnemo_sync_stats b = sync_named("streamed", "4096");
        ASSERT_EQ(a.files_added + a.files_changed, round ? 1 : 2);
        ASSERT_EQ(b.files_added + b.files_changed, round ? 1 : 2);
        ASSERT(a.chunks_added > 30);
        ASSERT_EQ(b.chunks_added, a.chunks_added);
        mnemo *ma = open_named("whole"), *mb = open_named("streamed");
        for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
            char *ra = results_of(ma, queries[q]), *rb = results_of(mb, queries[q]);
            ASSERT(*ra);
            ASSERT_STR_EQ(rb, ra);
            free(ra);
            free(rb);
        }
        if (round) {
            char *ra = results_of(ma, "EDITED");
            ASSERT_CONTAINS(ra, "memory/big.md");
            free(ra);
        }
        mnemo_close(ma);
        mnemo_close(mb);
        if (be_kind() != BE_SQLITE) {
            /* Two tenants, their chunks the same (and the files' counts and hashes). */
            const char *same =
                "SELECT count(DISTINCT h) * 10 + count(*) FROM (SELECT md5(string_agg(f.path || "
                "' ' || c.seq || ' ' || c.start_line || ' ' || c.end_line || ' ' || c.hash || "
                "' ' || md5(c.text) || ' ' || f.hash || ' ' || f.size || ' ' || f.nchunks, ',' "
                "ORDER BY f.path, c.seq)) h FROM mnemo_chunks c JOIN mnemo_files f ON f.id = "
                "c.file_id AND f.tenant = c.tenant GROUP BY c.tenant) t";
            ASSERT_EQ(count_rows(same), 12);
            ASSERT_EQ(count_rows("SELECT count(*) FROM mnemo_files f WHERE f.nchunks <> (SELECT "
                                 "count(*) FROM mnemo_chunks c WHERE c.tenant = f.tenant AND "
                                 "c.file_id = f.id)"),
                      0);
        }
    }
    buf_cleanup(&note);
}
