/*
 * test_search.c - keyword search: partial matches, phrases, exclusions,
 * file-name tiers, Chinese and Japanese, score range and thresholds,
 * snippets and the result shape; the fast keyword leg against the
 * row-by-row one on generated data.
 */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/core.h"
#include "engine/blockmax.h"
#include "store/sqlite/lite.h"
#include "text/query.h"
#include "test.h"

static mnemo *setup_with(const char *kv)
{
    test_write("ws/MEMORY.md",
               "# Memory\n"
               "- The gateway runs on atlas; config key gateway.bind.port is 8443\n"
               "- Backups of the orders database run nightly at 02:00\n"
               "- Repo acme/gateway, see issue #412 for the flaky test\n");
    test_write("ws/USER.md", "- Chris prefers dark mode and concise bullet lists\n");
    test_write("ws/memory/2026-11-02.md",
               "# 2026-11-02\n"
               "Planned the postgres migration with Priya.\n"
               "We will use logical replication for the migration.\n");
    test_write("ws/memory/2026-11-03.md",
               "# 2026-11-03\n"
               "The deploy failed with ECONNREFUSED on port 5432.\n"
               "Replication lag was fine. Restarted pgbouncer.\n");
    test_write("ws/memory/2026-11-12.md",
               "# 2026-11-12\n"
               "和上海团队开会，讨论数据库迁移和服务器部署。\n"
               "下周完成迁移。\n");
    test_write("ws/memory/2026-11-18.md",
               "# 2026-11-18\n"
               "東京で顧客と打ち合わせ。デプロイの手順を説明した。\n"
               "サーバーの移行は来月。\n");
    test_write("ws/memory/projects/replication.md",
               "# Replication notes\nSlots must be dropped after cutover.\n");
    mnemo *m = test_open("ws", "db.sqlite", kv, NULL);
    test_sync(m);
    return m;
}

static mnemo *setup(void) { return setup_with(NULL); }

static json_t *search(mnemo *m, const char *q, int max)
{
    char *s = test_search_json(m, q, max);
    json_t *j = json_loads(s, 0, NULL);
    ASSERT(j != NULL);
    mnemo_free(s);
    return j;
}

static const char *path_at(json_t *j, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(j, "results"), i),
                                             "path"));
}

static double score_at(json_t *j, size_t i)
{
    return json_real_value(json_object_get(json_array_get(json_object_get(j, "results"), i),
                                           "score"));
}

static size_t count(json_t *j) { return json_array_size(json_object_get(j, "results")); }

TEST(search_partial_matches_rank_by_matched_terms)
{
    mnemo *m = setup_with("minScore=0");
    /* No document has all words; the one with most of them wins. */
    json_t *j = search(m, "what did we plan for the postgres migration with logical replication",
                       10);
    ASSERT(count(j) >= 2);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-02.md");
    ASSERT(score_at(j, 0) > score_at(j, 1));
    json_decref(j);
    /* A single matching word still finds its note. */
    j = search(m, "pgbouncer zeppelin", 10);
    ASSERT_EQ(count(j), 1);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-03.md");
    json_decref(j);
    mnemo_close(m);
}

TEST(search_phrases_and_exclusions)
{
    mnemo *m = setup();
    json_t *j = search(m, "\"logical replication\"", 10);
    ASSERT_EQ(count(j), 1);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-02.md");
    json_decref(j);
    j = search(m, "\"replication logical\"", 10);
    ASSERT_EQ(count(j), 0);
    json_decref(j);
    j = search(m, "replication -pgbouncer", 10);
    for (size_t i = 0; i < count(j); i++)
        ASSERT(strcmp(path_at(j, i), "memory/2026-11-03.md") != 0);
    ASSERT(count(j) >= 2);
    json_decref(j);
    j = search(m, "replication -\"logical replication\"", 10);
    for (size_t i = 0; i < count(j); i++)
        ASSERT(strcmp(path_at(j, i), "memory/2026-11-02.md") != 0);
    json_decref(j);
    /* Only exclusions or only punctuation: nothing to search, no error. */
    j = search(m, "-replication", 10);
    ASSERT_EQ(count(j), 0);
    json_decref(j);
    j = search(m, "?!  ...", 10);
    ASSERT_EQ(count(j), 0);
    json_decref(j);
    mnemo_close(m);
}

TEST(search_file_name_tiers_come_first)
{
    mnemo *m = setup();
    /* "replication" is in several notes' text, but names a file's stem. */
    json_t *j = search(m, "replication", 10);
    ASSERT_STR_EQ(path_at(j, 0), "memory/projects/replication.md");
    ASSERT_NEAR(score_at(j, 0), 1.0, 1e-9);
    json_decref(j);
    j = search(m, "2026-11-03", 10);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-03.md");
    json_decref(j);
    j = search(m, "USER.md", 10);
    ASSERT_STR_EQ(path_at(j, 0), "USER.md");
    json_decref(j);
    j = search(m, "memory/2026-11-12.md", 10);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-12.md");
    json_decref(j);
    /* Partial path match: "projects" only appears in a path. */
    j = search(m, "projects", 10);
    ASSERT_EQ(count(j), 1);
    ASSERT_STR_EQ(path_at(j, 0), "memory/projects/replication.md");
    ASSERT(score_at(j, 0) > 0 && score_at(j, 0) < 1);
    json_decref(j);
    mnemo_close(m);
}

/* A note at PATH of three chunks or more, LINE in the middle one. */
static void write_long_note(const char *path, const char *line)
{
    FILE *f = fopen(test_path(path), "w");
    ASSERT(f != NULL);
    fputs("# Notes\n", f);
    for (int i = 0; i < 60; i++) {
        if (i == 30)
            fprintf(f, "\n## Aside\n- %s\n\n", line);
        fprintf(f, "- line %d of river stone lantern copper meadow harbor violet canyon "
                   "orchard velvet marble willow ember quartz saddle timber\n", i);
    }
    fclose(f);
}

TEST(search_path_boost_reaches_every_candidate_of_a_matched_file)
{
    /* Twin notes, one with a query word in its path: its chunk holding the
     * other word (a keyword candidate, not its first chunk) gets the path
     * boost over the twin's, and stands for its file, whose first chunk
     * (no candidate) is not added on its own. */
    test_mkdir("ws/memory");
    write_long_note("ws/memory/zebra-notes.md", "the flamingo stood on one leg");
    write_long_note("ws/memory/plain-notes.md", "the flamingo stood on one leg");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_open(test_path("db.sqlite"), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM chunks c JOIN files f ON "
                                     "f.id = c.file_id WHERE f.path = 'memory/zebra-notes.md'",
                                 -1, &st, NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    ASSERT(sqlite3_column_int(st, 0) >= 3);
    sqlite3_finalize(st);
    sqlite3_close(db);
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0;
    o.max_results = 10;
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "zebra flamingo", &o, &r));
    const mnemo_result *zebra = NULL, *plain = NULL;
    int others = 0;
    for (size_t i = 0; i < mnemo_results_count(r); i++) {
        const mnemo_result *x = mnemo_results_get(r, i);
        int bird = strstr(x->snippet, "flamingo") != NULL;
        if (strcmp(x->path, "memory/zebra-notes.md") == 0 && bird)
            zebra = x;
        else if (strcmp(x->path, "memory/plain-notes.md") == 0 && bird)
            plain = x;
        else
            others++;
    }
    ASSERT(zebra != NULL && plain != NULL);
    ASSERT(zebra->start_line > 1);
    ASSERT_NEAR(zebra->text_score, plain->text_score, 1e-9);
    ASSERT(zebra->score > plain->score);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "memory/zebra-notes.md");
    ASSERT_EQ(others, 0);
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(search_chinese_and_japanese)
{
    mnemo *m = setup();
    json_t *j = search(m, "数据库迁移", 10);
    ASSERT(count(j) >= 1);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-12.md");
    json_decref(j);
    j = search(m, "服务器部署", 10);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-12.md");
    json_decref(j);
    j = search(m, "打ち合わせ", 10);
    ASSERT_EQ(count(j), 1);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-18.md");
    json_decref(j);
    j = search(m, "東京 デプロイ", 10);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-18.md");
    json_decref(j);
    /* A single character matches as a prefix of the bigrams. */
    j = search(m, "東", 10);
    ASSERT_EQ(count(j), 1);
    json_decref(j);
    j = search(m, "\"数据库迁移\"", 10);
    ASSERT_EQ(count(j), 1);
    json_decref(j);
    mnemo_close(m);
}

TEST(search_identifiers)
{
    mnemo *m = setup();
    json_t *j = search(m, "gateway.bind.port", 10);
    ASSERT_STR_EQ(path_at(j, 0), "MEMORY.md");
    json_decref(j);
    j = search(m, "#412", 10);
    ASSERT_EQ(count(j), 1);
    ASSERT_STR_EQ(path_at(j, 0), "MEMORY.md");
    json_decref(j);
    j = search(m, "acme/gateway", 10);
    ASSERT_STR_EQ(path_at(j, 0), "MEMORY.md");
    json_decref(j);
    j = search(m, "econnrefused", 10);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-03.md");
    json_decref(j);
    /* By its parts too. */
    j = search(m, "bind port", 10);
    ASSERT_STR_EQ(path_at(j, 0), "MEMORY.md");
    json_decref(j);
    mnemo_close(m);
}

TEST(search_scores_and_thresholds)
{
    mnemo *m = setup();
    json_t *j = search(m, "migration replication postgres", 10);
    ASSERT(count(j) >= 2);
    for (size_t i = 0; i < count(j); i++) {
        double s = score_at(j, i);
        ASSERT(s > 0 && s <= 1);
        if (i)
            ASSERT(s <= score_at(j, i - 1));
    }
    json_decref(j);

    /* minScore drops weak results; when none clears it, keyword mode keeps
     * the matches instead of answering nothing. */
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0.99;
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "pgbouncer", &o, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    mnemo_results_free(r);
    o.min_score = 0.5;
    ASSERT_OK(mnemo_search(m, "migration replication postgres", &o, &r));
    for (size_t i = 0; i < mnemo_results_count(r); i++)
        ASSERT(mnemo_results_get(r, i)->score >= 0.5);
    mnemo_results_free(r);
    o.min_score = 0;
    o.max_results = 1;
    ASSERT_OK(mnemo_search(m, "replication", &o, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    ASSERT_STR_EQ(mnemo_results_mode(r), "keyword");
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(search_snippets_whole_lines_and_capped)
{
    char line[200];
    test_mkdir("ws/memory");
    FILE *f = fopen(test_path("ws/memory/long.md"), "w");
    for (int i = 1; i <= 60; i++) {
        snprintf(line, sizeof line, "line %d of a long note with enough words to fill space%s\n",
                 i, i == 40 ? " and the magic word flamingo" : "");
        fputs(line, f);
    }
    fclose(f);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "flamingo", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    const mnemo_result *x = mnemo_results_get(r, 0);
    ASSERT(strlen(x->snippet) <= 700);
    ASSERT_CONTAINS(x->snippet, "flamingo");
    ASSERT(x->start_line <= 40 && x->end_line >= 40);
    /* The snippet is exactly lines start..end of the file. */
    snprintf(line, sizeof line, "line %d of", x->start_line);
    ASSERT(strncmp(x->snippet, line, strlen(line)) == 0);
    int lines = 1;
    for (const char *p = x->snippet; *p; p++)
        lines += *p == '\n';
    ASSERT_EQ(lines, x->end_line - x->start_line + 1);
    char cit[128];
    snprintf(cit, sizeof cit, "memory/long.md#L%d-L%d", x->start_line, x->end_line);
    ASSERT_STR_EQ(x->citation, cit);
    ASSERT_STR_EQ(x->source, "memory");
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(search_long_line_snippet_is_cut_around_match)
{
    char *big = malloc(20000);
    size_t n = 0;
    for (int i = 0; i < 1500; i++)
        n += (size_t)snprintf(big + n, 20000 - n, "%s ", i == 1000 ? "ocelot" : "word");
    big[n++] = '\n';
    big[n] = 0;
    test_write("ws/memory/one-line.md", big);
    free(big);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "ocelot", NULL, &r));
    ASSERT_EQ(mnemo_results_count(r), 1);
    const mnemo_result *x = mnemo_results_get(r, 0);
    ASSERT_CONTAINS(x->snippet, "ocelot");
    ASSERT_CONTAINS(x->snippet, "\xe2\x80\xa6"); /* … marks the cut */
    ASSERT_EQ(x->start_line, 1);
    ASSERT_EQ(x->end_line, 1);
    mnemo_results_free(r);
    mnemo_close(m);
}

TEST(search_no_index_and_empty_query)
{
    test_mkdir("ws");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    mnemo_results *r = NULL;
    ASSERT_EQ(mnemo_search(m, "anything", NULL, &r), MNEMO_NOTFOUND);
    ASSERT_CONTAINS(mnemo_errmsg(m), "mnemo index");
    ASSERT(r == NULL);
    test_sync(m);
    ASSERT_EQ(mnemo_search(m, "   ", NULL, &r), MNEMO_INVALID);
    ASSERT_EQ(mnemo_search(m, "anything", NULL, &r), MNEMO_OK);
    ASSERT_EQ(mnemo_results_count(r), 0);
    mnemo_results_free(r);
    mnemo_close(m);
}

/* ----------------------------------------------------------------------
 * Exactness of the fast keyword leg: mnemo_phrases() (each phrase's rows
 * read with xQueryPhrase and merged in C) must gather exactly what
 * mnemo_collect() gathers row by row from the OR query, and lengths kept
 * across searches must follow changes to the index.
 * -------------------------------------------------------------------- */

static const char *const gen_words[] = {
    "gateway", "deploy",  "backup", "postgres", "migration", "replication", "port",
    "config",  "release", "atlas",  "orders",   "nightly",   "cutover",     "slot",
    "latency", "cache",   "token",  "review",   "priya",     "chris",       "the",
    "and",     "of",      "on",     "with",     "fix",       "test",        "flaky",
    "build",   "server",  "client", "queue",    "worker",    "index",       "search",
    "memory",  "vector",  "model",  "budget",   "meeting",   "customer",    "plan",
    "acme/gateway", "gateway.bind.port", "v2.4.1", "#412", "数据库迁移", "服务器部署",
    "デプロイ", "移行"};
#define GEN_NWORDS (sizeof gen_words / sizeof *gen_words)

static uint64_t gen_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Zipf-like: low indices far more often. */
static const char *gen_word(uint64_t *s)
{
    double u = (double)(gen_next(s) % 100000) / 100000.0;
    return gen_words[(size_t)(u * u * u * (double)GEN_NWORDS)];
}

static void gen_workspace(const char *ws, int notes, uint64_t seed)
{
    uint64_t s = seed;
    char path[256];
    for (int i = 0; i < notes; i++) {
        char text[8192];
        size_t n = 0;
        int lines = 1 + (int)(gen_next(&s) % 8);
        for (int l = 0; l < lines; l++) {
            int words = 2 + (int)(gen_next(&s) % 14);
            for (int w = 0; w < words && n < sizeof text - 100; w++)
                n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", w ? " " : "- ",
                                      gen_word(&s));
            text[n++] = '\n';
        }
        text[n] = 0;
        snprintf(path, sizeof path, "%s/memory/2026-%02d-%02d-n%d.md", ws, 1 + i % 12,
                 1 + i % 28, i);
        test_write(path, text);
    }
}

static void gen_query(uint64_t *s, char *out, size_t cap)
{
    size_t n = 0;
    int words = 1 + (int)(gen_next(s) % 4);
    for (int w = 0; w < words; w++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", w ? " " : "", gen_word(s));
    switch (gen_next(s) % 6) {
    case 0: /* a required phrase */
        n += (size_t)snprintf(out + n, cap - n, " \"%s %s\"", gen_word(s), gen_word(s));
        break;
    case 1: /* an exclusion */
        n += (size_t)snprintf(out + n, cap - n, " -%s", gen_word(s));
        break;
    case 2: /* a lone CJK character: a prefix */
        n += (size_t)snprintf(out + n, cap - n, " 移");
        break;
    default:
        break;
    }
}

typedef struct hits_copy {
    size_t n;
    int64_t *id;
    int *dl;
    uint8_t *tf;
    uint64_t *mask;
    int64_t df[BM25_MAX_PHRASES], ndocs;
    double avgdl;
} hits_copy;

static void collect_with(mnemo *m, const char *sql, const query *q, int64_t lo, int64_t hi,
                         hits_copy *out)
{
    fts_rank *r = store_rank(LITE(m)->st);
    fts_rank_reset(r, q->nphrase);
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_prepare_v2(store_db(LITE(m)->st), sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, lo);
    sqlite3_bind_int64(st, 3, hi);
    sqlite3_bind_int(st, 4, q->npositive);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    ASSERT_EQ(rc, SQLITE_DONE);
    sqlite3_finalize(st);
    const bm25_hits *h = &r->hits;
    out->n = h->n;
    out->id = malloc((h->n + 1) * sizeof *out->id);
    out->dl = malloc((h->n + 1) * sizeof *out->dl);
    out->mask = malloc((h->n + 1) * sizeof *out->mask);
    out->tf = malloc((h->n + 1) * BM25_MAX_PHRASES);
    ASSERT(out->id && out->dl && out->mask && out->tf);
    if (h->n) {
        memcpy(out->id, h->id, h->n * sizeof *out->id);
        memcpy(out->dl, h->dl, h->n * sizeof *out->dl);
        memcpy(out->mask, h->mask, h->n * sizeof *out->mask);
        memcpy(out->tf, h->tf, h->n * BM25_MAX_PHRASES);
    }
    memcpy(out->df, h->df, sizeof out->df);
    out->ndocs = h->stats ? h->ndocs : 0;
    out->avgdl = h->stats ? h->avgdl : 0;
}

static void hits_copy_free(hits_copy *c)
{
    free(c->id);
    free(c->dl);
    free(c->tf);
    free(c->mask);
}

TEST(search_phrase_lists_equal_row_by_row_collection)
{
    gen_workspace("ws", 1200, 7);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    tok *t;
    ASSERT_OK(lite_qtok(m, &t));
    uint64_t s = 11;
    size_t nonempty = 0, excluded = 0, ranged = 0, rows = 0;
    for (int i = 0; i < 300; i++) {
        char text[512];
        gen_query(&s, text, sizeof text);
        query q;
        ASSERT_OK(query_parse(t, text, &q));
        if (!q.match) {
            query_cleanup(&q);
            continue;
        }
        /* Whole table, then a range with ends inside it. */
        int64_t lo = 0, hi = INT64_MAX;
        if (i % 3 == 0) {
            lo = (int64_t)(gen_next(&s) % 600);
            hi = lo + 1 + (int64_t)(gen_next(&s) % 900);
            ranged++;
        }
        hits_copy a, b;
        collect_with(m,
                     "SELECT mnemo_collect(chunks_fts) FROM chunks_fts "
                     "WHERE chunks_fts MATCH ?1 AND rowid >= ?2 AND rowid < ?3",
                     &q, lo, hi, &a);
        collect_with(m,
                     "SELECT mnemo_phrases(chunks_fts, ?4, ?2, ?3) FROM chunks_fts "
                     "WHERE chunks_fts MATCH ?1 AND rowid >= ?2 AND rowid < ?3 LIMIT 1",
                     &q, lo, hi, &b);
        if (a.n != b.n)
            test_fail(__FILE__, __LINE__, "query %s [%lld, %lld): %zu rows != %zu", text,
                      (long long)lo, (long long)hi, a.n, b.n);
        for (size_t k = 0; k < a.n; k++) {
            ASSERT_EQ(a.id[k], b.id[k]);
            ASSERT_EQ(a.dl[k], b.dl[k]);
            ASSERT_EQ(a.mask[k], b.mask[k]);
            ASSERT(memcmp(a.tf + k * BM25_MAX_PHRASES, b.tf + k * BM25_MAX_PHRASES,
                          (size_t)q.nphrase) == 0);
        }
        for (int k = 0; k < q.nphrase; k++)
            ASSERT_EQ(a.df[k], b.df[k]);
        if (a.n) {
            ASSERT_EQ(a.ndocs, b.ndocs);
            ASSERT(a.avgdl == b.avgdl);
            nonempty++;
        }
        excluded += q.nphrase > q.npositive && a.n;
        rows += a.n;
        hits_copy_free(&a);
        hits_copy_free(&b);
        query_cleanup(&q);
    }
    /* The data exercised what it is meant to: many rows, exclusions, ranges. */
    ASSERT(nonempty > 200);
    ASSERT(excluded > 10);
    ASSERT(ranged > 50);
    ASSERT(rows > 50000);
    mnemo_close(m);
}

/* Lengths and factors kept between searches are dropped when another
 * connection changes the index (this handle's own syncs reopen the index). Deleting
 * the files that hold the highest chunk ids and then adding others gives
 * the new chunks the same ids with other lengths. */
TEST(search_kept_lengths_follow_index_changes)
{
    gen_workspace("ws", 700, 3);
    mnemo *a = test_open("ws", "db.sqlite", NULL);
    test_sync(a);
    const char *qs[] = {"gateway deploy", "backup the orders", "zebra"};
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
            mnemo_free(test_search_json(a, qs[i], 10));
        sqlite3_stmt *st = NULL;
        ASSERT_EQ(sqlite3_prepare_v2(store_db(LITE(a)->st),
                                     "SELECT DISTINCT f.path FROM chunks c JOIN files f ON "
                                     "f.id = c.file_id ORDER BY c.id DESC LIMIT 5",
                                     -1, &st, NULL),
                  SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            char path[256];
            snprintf(path, sizeof path, "ws/%s", sqlite3_column_text(st, 0));
            ASSERT_EQ(unlink(test_path(path)), 0);
        }
        sqlite3_finalize(st);
        mnemo *w = test_open("ws", "db.sqlite", NULL);
        test_sync(w);
        mnemo_close(w);
        for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
            mnemo_free(test_search_json(a, qs[i], 10));
        for (int n = 0; n < 5; n++) {
            /* Another length each: "zebra" ranks them by length. */
            char path[128], text[2048];
            size_t len = (size_t)snprintf(text, sizeof text, "- zebra\n-");
            for (int k = 0; k < round * 12 + n * 5; k++)
                len += (size_t)snprintf(text + len, sizeof text - len, " padding%d", k);
            snprintf(text + len, sizeof text - len, "\n");
            /* Dated differently each round: other recency factors too. */
            snprintf(path, sizeof path, "ws/memory/2026-0%d-15-zebra-%d.md", round + 1, n);
            test_write(path, text);
        }
        w = test_open("ws", "db.sqlite", NULL);
        test_sync(w);
        mnemo_close(w);
        mnemo *fresh = test_open("ws", "db.sqlite", NULL);
        for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
            char *x = test_search_json(a, qs[i], 10), *y = test_search_json(fresh, qs[i], 10);
            ASSERT_STR_EQ(x, y);
            mnemo_free(x);
            mnemo_free(y);
        }
        mnemo_close(fresh);
    }
    mnemo_close(a);
}

/* A conversation note: the answer is the reply after the line that
 * matches the question, and shares only a name with the question. */
static const char *const conversation[] = {
    "- Tim: I spent the weekend fixing the old bike in the garage, it took forever but it rides "
    "well now.",
    "- John: Nice work! I was at practice most of Saturday, the coach had us running drills "
    "until dark.",
    "- Tim: Sounds exhausting. Did the new shoes help with the blisters you mentioned last month?",
    "- John: A bit, yes. I also started stretching every morning, which seems to make a "
    "difference.",
    "- Tim: I should try that too. My back has been stiff since I moved the bookshelf upstairs.",
    "- John: Definitely do it. Ten minutes a day is enough to feel better within a couple of "
    "weeks.",
    "- Tim: Good to know. By the way, I am finally planning the trip to Europe this summer with "
    "my sister.",
    "- Tim: Which city would you recommend for a first visit? I have never been there before.",
    "- John: Barcelona, no doubt. The food, the architecture and the beaches are amazing in June.",
    "- Tim: That sounds perfect, I will look at flights tonight and tell my sister about it.",
    "- John: Send me pictures when you are there! I want to see the cathedral again.",
    "- Tim: Will do. How is the new team treating you so far, are the other players friendly?",
    "- John: They are great. We had a team dinner on Friday and everyone was really welcoming."};

static void write_conversation(const char *path, int copies)
{
    FILE *f = fopen(test_path(path), "w");
    ASSERT(f != NULL);
    fputs("# 2:00 pm on 10 January, 2024\n\n", f);
    for (int k = 0; k < copies; k++)
        for (size_t i = 0; i < sizeof conversation / sizeof *conversation; i++)
            fprintf(f, "%s\n", conversation[i]);
    fclose(f);
}

TEST(search_passage_holds_the_reply)
{
    test_mkdir("ws/memory");
    write_conversation("ws/memory/2024-01-10.md", 2);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    json_t *j = search(m, "Which city did John recommend to Tim?", 3);
    ASSERT(count(j) >= 1);
    json_t *r = json_array_get(json_object_get(j, "results"), 0);
    const char *snip = json_string_value(json_object_get(r, "snippet"));
    ASSERT_CONTAINS(snip, "Which city would you recommend");
    ASSERT_CONTAINS(snip, "John: Barcelona, no doubt.");
    ASSERT(strlen(snip) <= 700);
    /* startLine..endLine are exactly the snippet's lines, the reply among them. */
    int sl = (int)json_integer_value(json_object_get(r, "startLine"));
    int el = (int)json_integer_value(json_object_get(r, "endLine"));
    int lines = 1;
    for (const char *p = snip; *p; p++)
        lines += *p == '\n';
    ASSERT_EQ(lines, el - sl + 1);
    int reply = 0; /* a line number of the reply: 3 + 8 or 3 + 13 + 8 */
    for (int k = 0; k < 2; k++)
        if (sl <= 3 + 13 * k + 8 && 3 + 13 * k + 8 <= el)
            reply = 1;
    ASSERT(reply);
    /* Lines are those of the file. */
    mnemo_excerpt ex;
    ASSERT_OK(mnemo_get(m, "memory/2024-01-10.md", sl, el - sl + 1, &ex));
    ASSERT_CONTAINS(ex.text, "Barcelona");
    ASSERT(strncmp(ex.text, snip, strlen(snip)) == 0);
    mnemo_excerpt_cleanup(&ex);
    json_decref(j);
    mnemo_close(m);
}

TEST(search_passages_of_one_chunk_and_the_next)
{
    /* Two answers far apart in one chunk: two results from it, neither
     * repeating the other's lines. */
    test_write("ws/memory/notes.md",
               "The staging database lives on host db-stage-2.\n"
               "Nothing else happened that morning, we cleaned up tickets.\n"
               "Lunch was late because the meeting ran over by half an hour.\n"
               "The team talked about the offsite and the budget for it.\n"
               "Somebody brought cake for the birthday in the afternoon.\n"
               "We reviewed three pull requests and merged two of them.\n"
               "The coffee machine on the third floor is broken again.\n"
               "In the evening the production database moved to host db-prod-9.\n");
    mnemo *m = test_open("ws", "db.sqlite", "snippetChars=120", NULL);
    test_sync(m);
    json_t *j = search(m, "database host", 5);
    ASSERT(count(j) >= 2);
    int saw_stage = 0, saw_prod = 0, last_end = 0;
    for (size_t i = 0; i < count(j); i++) {
        json_t *r = json_array_get(json_object_get(j, "results"), i);
        const char *snip = json_string_value(json_object_get(r, "snippet"));
        ASSERT(strlen(snip) <= 120 + 6);
        saw_stage |= strstr(snip, "db-stage-2") != NULL;
        saw_prod |= strstr(snip, "db-prod-9") != NULL;
        int sl = (int)json_integer_value(json_object_get(r, "startLine"));
        int el = (int)json_integer_value(json_object_get(r, "endLine"));
        for (size_t k = 0; k < i; k++) { /* no two results share a line */
            json_t *o = json_array_get(json_object_get(j, "results"), k);
            int os = (int)json_integer_value(json_object_get(o, "startLine"));
            int oe = (int)json_integer_value(json_object_get(o, "endLine"));
            ASSERT(el < os || oe < sl);
        }
        last_end = el;
    }
    (void)last_end;
    ASSERT(saw_stage && saw_prod);
    json_decref(j);
    mnemo_close(m);
}

TEST(search_dated_note_shows_its_date)
{
    test_mkdir("ws/memory");
    write_conversation("ws/memory/2024-01-10.md", 1);
    test_write("ws/MEMORY.md", "- Barcelona is the favourite city of John.\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    json_t *j = search(m, "Barcelona", 5);
    ASSERT_EQ(count(j), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *r = json_array_get(json_object_get(j, "results"), i);
        const char *path = json_string_value(json_object_get(r, "path"));
        json_t *date = json_object_get(r, "date");
        if (strcmp(path, "MEMORY.md") == 0)
            ASSERT(date == NULL); /* evergreen: no date */
        else
            ASSERT_STR_EQ(json_string_value(date), "2024-01-10");
    }
    json_decref(j);
    /* A passage at the top of a note brings the note's heading (a blank
     * line between) when it fits. */
    test_write("ws/memory/2024-02-01.md",
               "# 9:00 am on 1 February, 2024\n\n- Tim: The flamingo exhibit opens today.\n");
    test_sync(m);
    j = search(m, "flamingo", 5);
    json_t *r = json_array_get(json_object_get(j, "results"), 0);
    ASSERT_EQ(json_integer_value(json_object_get(r, "startLine")), 1);
    ASSERT_CONTAINS(json_string_value(json_object_get(r, "snippet")),
                    "# 9:00 am on 1 February, 2024\n\n- Tim: The flamingo");
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "date")), "2024-02-01");
    json_decref(j);
    mnemo_close(m);
}

/* The lines just above the best passage, which it starts after, are not
 * lost: a window running into a chosen passage ends before it. Here the
 * answer ("piano lessons") shares only the speaker's name with the
 * question; the next line holds the question's words. */
TEST(search_line_above_the_best_passage_is_shown)
{
    test_write("ws/memory/2024-03-05.md",
               "- John: Hey Tim, long time no see! How have you been lately?\n"
               "- Tim: Things have been great. School is busy, and I started piano lessons "
               "this winter.\n"
               "- John: Wow! Learning to play an instrument is awesome, what a beautiful "
               "instrument to play.\n"
               "- Tim: Thanks! My favourite song is a theme from a movie I really enjoy.\n"
               "- John: That is cool, music brings back memories.\n"
               "- Tim: Yeah, the first movie of the series is special to me.\n"
               "- John: We should watch it together some time.\n"
               "- Tim: Sure, let me know when you are free next week.\n");
    mnemo *m = test_open("ws", "db.sqlite", "snippetChars=300", NULL);
    test_sync(m);
    json_t *j = search(m, "What instrument does Tim play?", 6);
    ASSERT(count(j) >= 2);
    json_t *r0 = json_array_get(json_object_get(j, "results"), 0);
    ASSERT_EQ(json_integer_value(json_object_get(r0, "startLine")), 3);
    int shown = 0;
    for (size_t i = 0; i < count(j); i++) {
        json_t *r = json_array_get(json_object_get(j, "results"), i);
        const char *snip = json_string_value(json_object_get(r, "snippet"));
        ASSERT(strlen(snip) <= 300);
        if (strstr(snip, "piano lessons")) {
            shown = 1;
            ASSERT(json_integer_value(json_object_get(r, "endLine")) == 2);
        }
    }
    ASSERT(shown);
    json_decref(j);
    mnemo_close(m);
}

/* Passages of overlapping chunks overlap: a passage loses the lines a
 * better result of its file shows and keeps the rest, instead of being
 * dropped whole (which left most of this note out). */
TEST(search_overlapping_passages_keep_their_own_lines)
{
    test_write("ws/memory/2024-03-05.md",
               "- Ann: The quarterly report is due on Friday, the numbers look fine.\n"
               "- Bo: Did the marketing team send their part of the quarterly report?\n"
               "- Ann: Not yet, they promised it for Thursday morning.\n"
               "- Bo: Who is writing the summary of the quarterly report this time?\n"
               "- Ann: Priya is writing the summary, she did it last quarter too.\n"
               "- Bo: Great, then the report should be ready in time.\n"
               "- Ann: I hope so, the board meeting is on Monday.\n");
    mnemo *m = test_open("ws", "db.sqlite", "snippetChars=140", "chunkTokens=40",
                         "chunkOverlap=20", NULL);
    test_sync(m);
    json_t *j = search(m, "Who writes the summary of the quarterly report?", 6);
    ASSERT(count(j) >= 3);
    json_t *res = json_object_get(j, "results");
    ASSERT_CONTAINS(json_string_value(json_object_get(json_array_get(res, 0), "snippet")),
                    "Priya is writing the summary");
    for (size_t i = 0; i < count(j); i++) {
        json_t *r = json_array_get(res, i);
        int sl = (int)json_integer_value(json_object_get(r, "startLine"));
        int el = (int)json_integer_value(json_object_get(r, "endLine"));
        const char *snip = json_string_value(json_object_get(r, "snippet"));
        int lines = 1;
        for (const char *p = snip; *p; p++)
            lines += *p == '\n';
        ASSERT_EQ(lines, el - sl + 1); /* the range is exactly the snippet's lines */
        for (size_t k = 0; k < i; k++) { /* no two results share a line */
            json_t *o = json_array_get(res, k);
            int os = (int)json_integer_value(json_object_get(o, "startLine"));
            int oe = (int)json_integer_value(json_object_get(o, "endLine"));
            ASSERT(el < os || oe < sl);
        }
    }
    json_decref(j);
    mnemo_close(m);
}

/* minScore is a bar on relevance: a year-old note (recency at its floor,
 * 0.8) that is as relevant as an evergreen one is ranked below it but not
 * dropped, also in strict mode. */
TEST(search_threshold_is_on_relevance_not_age)
{
    const char *text = "- The vault backup key is rotated every ninety days by Priya.\n";
    test_write("ws/MEMORY.md", text);
    test_write("ws/memory/2020-01-01.md", text);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.min_score = 0;
    mnemo_results *r;
    ASSERT_OK(mnemo_search(m, "vault backup key rotation", &o, &r));
    ASSERT_EQ(mnemo_results_count(r), 2);
    ASSERT_STR_EQ(mnemo_results_get(r, 0)->path, "MEMORY.md");
    double fresh = mnemo_results_get(r, 0)->score, old = mnemo_results_get(r, 1)->score;
    ASSERT(old < 0.85 * fresh);
    mnemo_results_free(r);
    o.min_score = 0.9 * fresh; /* above the old note's score, below its relevance */
    o.strict = 1;
    ASSERT_OK(mnemo_search(m, "vault backup key rotation", &o, &r));
    ASSERT_EQ(mnemo_results_count(r), 2);
    ASSERT_STR_EQ(mnemo_results_get(r, 1)->path, "memory/2020-01-01.md");
    mnemo_results_free(r);
    o.min_score = 1.01 * fresh > 1 ? 1 : 1.01 * fresh; /* above both: strict abstains */
    ASSERT_OK(mnemo_search(m, "vault backup key rotation", &o, &r));
    ASSERT_EQ(mnemo_results_count(r), 0);
    mnemo_results_free(r);
    mnemo_close(m);
}

/* ----------------------------------------------------------------------
 * Top-k over the postings (kwpost.h, blockmax.h): the same pool, scores
 * and results as ranking every row FTS5 returns.
 * -------------------------------------------------------------------- */

/* Block-max MaxScore over random lists (many equal scores, rows gone, a
 * required phrase) keeps exactly what scoring every row keeps. */
typedef struct fake_list {
    int64_t *id;
    uint8_t *tf;
    int32_t *dl;
    size_t n;
    size_t nblocks;
    int64_t *first, *last;
    double *ub;
    blockmax_bound *bound;
} fake_list;

typedef struct fake {
    fake_list l[8];
    int64_t gone[64];
    size_t ngone;
} fake;

static int fake_read(void *ud, const blockmax_term *t, size_t b, blockmax_posts *out)
{
    fake *f = ud;
    const fake_list *l = &f->l[t->phrase];
    size_t from = b * 16, to = from + 16 < l->n ? from + 16 : l->n;
    *out = (blockmax_posts){l->id + from, l->tf + from, l->dl + from, to - from};
    return MNEMO_OK;
}

static int fake_gone(void *ud, int64_t id)
{
    fake *f = ud;
    for (size_t i = 0; i < f->ngone; i++)
        if (f->gone[i] == id)
            return 1;
    return 0;
}

TEST(blockmax_pool_equals_scoring_every_row)
{
    uint64_t s = 3;
    size_t pruned = 0, total = 0;
    for (int round = 0; round < 300; round++) {
        fake f;
        memset(&f, 0, sizeof f);
        int np = 1 + (int)(gen_next(&s) % 5);
        int64_t ndocs = 50 + (int64_t)(gen_next(&s) % 2000);
        double w[BM25_MAX_PHRASES], idf[BM25_MAX_PHRASES], k1 = 1.2, b = 0.75, avgdl = 20;
        uint64_t required = round % 7 == 0 ? 1 : 0;
        for (int k = 0; k < np; k++) {
            fake_list *l = &f.l[k];
            l->id = malloc((size_t)ndocs * sizeof *l->id);
            l->tf = malloc((size_t)ndocs);
            l->dl = malloc((size_t)ndocs * sizeof *l->dl);
            uint64_t density = 1 + gen_next(&s) % 90;
            for (int64_t d = 1; d <= ndocs; d++) {
                if (gen_next(&s) % 100 >= density)
                    continue;
                l->id[l->n] = d;
                /* Few distinct values: many rows tie. */
                l->tf[l->n] = (uint8_t)(1 + (d * 7 + k) % 3 + (gen_next(&s) % 50 == 0) * 20);
                l->dl[l->n] = (int32_t)(10 + (d * 13) % 4 * 5);
                l->n++;
            }
            idf[k] = bm25_idf((double)ndocs, (double)l->n);
            w[k] = 1.0;
            l->nblocks = (l->n + 15) / 16;
            l->first = malloc((l->nblocks + 1) * sizeof *l->first);
            l->last = malloc((l->nblocks + 1) * sizeof *l->last);
            l->ub = malloc((l->nblocks + 1) * sizeof *l->ub);
            l->bound = calloc(l->nblocks + 1, sizeof *l->bound);
            for (size_t i = 0; i < l->n; i++) {
                size_t bi = i / 16;
                if (i % 16 == 0)
                    l->first[bi] = l->id[i];
                l->last[bi] = l->id[i];
                blockmax_bound_add(&l->bound[bi], l->tf[i], (uint32_t)l->dl[i]);
            }
            for (size_t bi = 0; bi < l->nblocks; bi++)
                l->ub[bi] = blockmax_bound_share(&l->bound[bi], w[k], idf[k], k1, b, avgdl);
        }
        for (int g = 0; g < 5; g++)
            f.gone[f.ngone++] = 1 + (int64_t)(gen_next(&s) % (uint64_t)ndocs);
        size_t cap = 1 + gen_next(&s) % 60;
        /* Every row scored as bm25_score does, in phrase order. */
        topk all;
        ASSERT_OK(topk_init(&all, cap));
        for (int64_t d = 1; d <= ndocs; d++) {
            if (fake_gone(&f, d))
                continue;
            uint8_t tf[BM25_MAX_PHRASES] = {0};
            int32_t dl = 0;
            uint64_t mask = 0;
            for (int k = 0; k < np; k++)
                for (size_t i = 0; i < f.l[k].n; i++)
                    if (f.l[k].id[i] == d) {
                        tf[k] = f.l[k].tf[i];
                        dl = f.l[k].dl[i];
                        mask |= (uint64_t)1 << k;
                    }
            if (!mask || (mask & required) != required)
                continue;
            double norm = bm25_norm(k1, b, (double)dl, avgdl), score = 0;
            for (int k = 0; k < np; k++)
                if (tf[k])
                    score += bm25_part(w[k], idf[k], (double)tf[k], k1, norm);
            topk_offer(&all, score, d);
        }
        blockmax_term t[8];
        int nt = 0;
        for (int k = 0; k < np; k++)
            if (f.l[k].nblocks)
                t[nt++] = (blockmax_term){.phrase = k, .nblocks = f.l[k].nblocks,
                                          .first = f.l[k].first, .last = f.l[k].last,
                                          .ub = f.l[k].ub};
        blockmax_query bq = {.t = t, .nt = nt, .np = np, .w = w, .idf = idf, .k1 = k1, .b = b,
                             .avgdl = avgdl, .required = required, .read = fake_read,
                             .gone = fake_gone, .ud = &f};
        topk top;
        ASSERT_OK(topk_init(&top, cap));
        ASSERT_OK(blockmax_run(&bq, &top));
        ASSERT_EQ(top.n, all.n);
        /* The same rows with the same scores, in the same heap order. */
        while (all.n) {
            ASSERT_EQ(top.v[0].id, all.v[0].id);
            ASSERT(top.v[0].score == all.v[0].score);
            topk_item x = all.v[0];
            topk_item y = top.v[0];
            (void)x;
            (void)y;
            /* Pop the worst of each by offering nothing better: rebuild. */
            all.v[0] = all.v[--all.n];
            top.v[0] = top.v[--top.n];
            for (topk *h = &all; h; h = h == &all ? &top : NULL) {
                size_t i = 0;
                for (;;) {
                    size_t l = 2 * i + 1, r = l + 1, m = i;
                    if (l < h->n && topk_worse(&h->v[l], &h->v[m]))
                        m = l;
                    if (r < h->n && topk_worse(&h->v[r], &h->v[m]))
                        m = r;
                    if (m == i)
                        break;
                    topk_item tmp = h->v[i];
                    h->v[i] = h->v[m];
                    h->v[m] = tmp;
                    i = m;
                }
            }
        }
        /* A row's score on its own, as the other legs' candidates get it. */
        for (int64_t d = 1; d <= ndocs; d += 37) {
            double one = 0;
            ASSERT_OK(blockmax_score_of(&bq, d, &one));
            ASSERT(one >= 0);
        }
        total += (size_t)ndocs;
        pruned += (size_t)ndocs - bq.rows_scored;
        topk_cleanup(&all);
        topk_cleanup(&top);
        for (int k = 0; k < np; k++) {
            free(f.l[k].id);
            free(f.l[k].tf);
            free(f.l[k].dl);
            free(f.l[k].first);
            free(f.l[k].last);
            free(f.l[k].ub);
            free(f.l[k].bound);
        }
    }
    /* The bounds let it leave rows unscored. */
    ASSERT(pruned > total / 4);
}

/* Removes "timing" (wall times) from a results JSON text. */
static char *untimed(char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    ASSERT(j != NULL);
    json_object_del(j, "timing");
    mnemo_free(s);
    char *out = json_dumps(j, JSON_SORT_KEYS);
    json_decref(j);
    return out;
}

/* Copies index FROM to TO with the postings' marks dropped: searches of TO
 * take FTS5's path alone. */
static void copy_without_postings(const char *from, const char *to)
{
    sqlite3 *a = NULL, *b = NULL;
    unlink(test_path(to));
    ASSERT_EQ(sqlite3_open(test_path(from), &a), SQLITE_OK);
    ASSERT_EQ(sqlite3_open(test_path(to), &b), SQLITE_OK);
    sqlite3_backup *bk = sqlite3_backup_init(b, "main", a, "main");
    ASSERT(bk != NULL);
    ASSERT_EQ(sqlite3_backup_step(bk, -1), SQLITE_DONE);
    sqlite3_backup_finish(bk);
    ASSERT_EQ(sqlite3_exec(b, "DROP TABLE kw_mark", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(a);
    sqlite3_close(b);
}

static int64_t count_rows(const char *db, const char *sql)
{
    sqlite3 *d = NULL;
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_open(test_path(db), &d), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(d);
    return n;
}

TEST(search_postings_equal_fts5_through_changes)
{
    /* One clock for both stores: recency would move between their searches. */
    setenv("MNEMO_NOW", "2027-06-01T12:00:00Z", 1);
    gen_workspace("ws", 1500, 21);
    /* Equal notes: equal scores, the order by chunk id. */
    for (int i = 0; i < 6; i++) {
        char path[64];
        snprintf(path, sizeof path, "ws/memory/2025-01-0%d-same.md", 1 + i);
        test_write(path, "- gateway deploy gateway nightly\n");
    }
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    uint64_t s = 77;
    size_t compared = 0, hits = 0;
    for (int round = 0; round < 14; round++) {
        ASSERT(count_rows("db.sqlite", "SELECT count(*) FROM kw_seg") > 0);
        ASSERT(count_rows("db.sqlite", "SELECT mark FROM kw_mark WHERE range = 0") ==
               count_rows("db.sqlite", "SELECT max(id) FROM chunks WHERE id < 1099511627776"));
        copy_without_postings("db.sqlite", "ref.sqlite");
        mnemo *ref = test_open("ws", "ref.sqlite", NULL);
        for (int i = 0; i < 40; i++) {
            char text[512];
            if (i % 4 == 0)
                snprintf(text, sizeof text, "%s", gen_word(&s));
            else if (i % 8 == 1) /* a required word: a quoted phrase of one */
                snprintf(text, sizeof text, "\"%s\" %s %s", gen_word(&s), gen_word(&s),
                         gen_word(&s));
            else
                gen_query(&s, text, sizeof text);
            char *a = untimed(test_search_json(m, text, 40));
            char *b = untimed(test_search_json(ref, text, 40));
            if (strcmp(a, b) != 0)
                test_fail(__FILE__, __LINE__, "round %d, query %s:\n%s\n!=\n%s", round, text,
                          a, b);
            hits += strstr(a, "\"path\"") != NULL;
            compared++;
            free(a);
            free(b);
        }
        mnemo_close(ref);
        /* Edits, removals and new notes, then a sync. */
        for (int i = 0; i < 60; i++) {
            char path[256];
            int n = (int)(gen_next(&s) % 1500);
            snprintf(path, sizeof path, "ws/memory/2026-%02d-%02d-n%d.md", 1 + n % 12,
                     1 + n % 28, n);
            if (i % 3 == 0)
                unlink(test_path(path));
            else
                test_write(path, i % 3 == 1 ? "- deploy the gateway, then deploy again\n"
                                            : "- nightly backup of orders\n- gateway\n");
        }
        for (int i = 0; i < 20; i++) {
            char path[64];
            snprintf(path, sizeof path, "ws/memory/2027-01-01-r%d-%d.md", round, i);
            test_write(path, "- release the worker queue; deploy deploy deploy\n");
        }
        test_sync(m);
    }
    /* Each sync wrote a segment of "deploy": they were folded. */
    ASSERT(count_rows("db.sqlite", "SELECT count(*) FROM kw_seg WHERE term = 'deploy'") <= 10);
    ASSERT(count_rows("db.sqlite", "SELECT count(*) FROM kw_dead") > 0);
    ASSERT(compared == 560);
    ASSERT(hits > 350);
    mnemo_close(m);
}

static void exec_on(const char *db, const char *sql)
{
    sqlite3 *d = NULL;
    ASSERT_EQ(sqlite3_open(test_path(db), &d), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(d, sql, NULL, NULL, &err) != SQLITE_OK)
        test_fail(__FILE__, __LINE__, "%s: %s", sql, err);
    sqlite3_close(d);
}

/* Notes of many words (Zipf-like over 40,000): segments of all sizes. */
static void gen_wide_workspace(const char *ws, int notes, uint64_t seed)
{
    uint64_t s = seed;
    static char text[16384];
    for (int i = 0; i < notes; i++) {
        size_t n = 0;
        int words = 60 + (int)(gen_next(&s) % 200);
        for (int w = 0; w < words; w++) {
            double u = (double)(gen_next(&s) % 100000) / 100000.0;
            n += (size_t)snprintf(text + n, sizeof text - n, "%sw%u", w % 12 ? " " : "\n- ",
                                  (unsigned)(u * u * 40000));
        }
        char path[256];
        snprintf(path, sizeof path, "%s/memory/2026-01-01-b%d.md", ws, i);
        test_write(path, text);
    }
}

/* Asserts that indexes A and B hold the same postings' rows and marks;
 * their number. */
static size_t same_segments(const char *da, const char *db)
{
    sqlite3 *a = NULL, *b = NULL;
    sqlite3_stmt *qa = NULL, *qb = NULL;
    const char *sql = "SELECT term, last, n, data FROM kw_seg ORDER BY term, last";
    ASSERT_EQ(sqlite3_open(test_path(da), &a), SQLITE_OK);
    ASSERT_EQ(sqlite3_open(test_path(db), &b), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(a, sql, -1, &qa, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(b, sql, -1, &qb, NULL), SQLITE_OK);
    size_t rows = 0;
    int sa;
    while ((sa = sqlite3_step(qa)) == SQLITE_ROW) {
        ASSERT_EQ(sqlite3_step(qb), SQLITE_ROW);
        ASSERT_STR_EQ((const char *)sqlite3_column_text(qb, 0),
                      (const char *)sqlite3_column_text(qa, 0));
        ASSERT_EQ(sqlite3_column_int64(qb, 1), sqlite3_column_int64(qa, 1));
        ASSERT_EQ(sqlite3_column_int64(qb, 2), sqlite3_column_int64(qa, 2));
        int n = sqlite3_column_bytes(qa, 3);
        ASSERT_EQ(sqlite3_column_bytes(qb, 3), n);
        ASSERT(memcmp(sqlite3_column_blob(qa, 3), sqlite3_column_blob(qb, 3), (size_t)n) == 0);
        rows++;
    }
    ASSERT_EQ(sa, SQLITE_DONE);
    ASSERT_EQ(sqlite3_step(qb), SQLITE_DONE);
    sqlite3_finalize(qa);
    sqlite3_finalize(qb);
    sqlite3_close(a);
    sqlite3_close(b);
    for (int r = 0; r < 3; r++) {
        char sql2[96];
        snprintf(sql2, sizeof sql2, "SELECT coalesce(max(mark), -1) FROM kw_mark WHERE range = %d",
                 r);
        ASSERT_EQ(count_rows(da, sql2), count_rows(db, sql2));
    }
    return rows;
}

/* A flush's segments are encoded in batches: by the accumulating thread
 * while the sync thread writes them (chunks written by a sync), or by the
 * sync thread alone (chunks read back). Both write the same rows. */
TEST(search_postings_encoded_alike_by_either_thread)
{
    gen_wide_workspace("ws", 4000, 41);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    /* Enough for several batches (of 1 MiB). */
    ASSERT(count_rows("db.sqlite", "SELECT sum(length(data)) FROM kw_seg") > (2 << 20));
    copy_without_postings("db.sqlite", "ref.sqlite");
    exec_on("ref.sqlite", "DELETE FROM kw_seg; DELETE FROM kw_dead; CREATE TABLE kw_mark("
                          "range INTEGER PRIMARY KEY, mark INTEGER NOT NULL)");
    m = test_open("ws", "ref.sqlite", NULL);
    test_sync(m); /* nothing changed: the chunks are read back */
    mnemo_close(m);
    ASSERT(same_segments("db.sqlite", "ref.sqlite") > 10000);
}

/* A fresh build sets its flushes' segments aside in runs and merges them
 * into the table at its commit; a sync of an existing index writes each
 * flush into the table. The same chunks get the same rows. */
TEST(search_postings_set_aside_in_a_fresh_build)
{
    setenv("MNEMO_KW_FLUSH_BYTES", "65536", 1); /* a flush every 64 KiB of tokens */
    gen_wide_workspace("ws", 1200, 43);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    mnemo_close(m);
    /* The same notes, into an index made before them. */
    test_mkdir("ws2/memory");
    m = test_open("ws2", "ref.sqlite", NULL);
    test_sync(m);
    gen_wide_workspace("ws2", 1200, 43);
    test_sync(m);
    mnemo_close(m);
    unsetenv("MNEMO_KW_FLUSH_BYTES");
    ASSERT_EQ(count_rows("db.sqlite", "SELECT count(*) FROM chunks"),
              count_rows("ref.sqlite", "SELECT count(*) FROM chunks"));
    size_t rows = same_segments("db.sqlite", "ref.sqlite");
    /* Many flushes: terms with many segments. */
    ASSERT((int64_t)rows > 2 * count_rows("db.sqlite", "SELECT count(DISTINCT term) FROM kw_seg"));
    /* The runs' file is gone. */
    DIR *d = opendir(test_path("."));
    ASSERT(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)))
        ASSERT(strstr(e->d_name, "kwrun") == NULL);
    closedir(d);
}

/* A damaged segment of the postings is an error that says what to do,
 * never "nothing found". */
TEST(search_damaged_postings_say_so)
{
    mnemo *m = setup();
    mnemo_close(m);
    exec_on("db.sqlite", "UPDATE kw_seg SET data = x'01ff7f' WHERE term = 'gateway'");
    m = test_open("ws", "db.sqlite", NULL);
    mnemo_results *r = NULL;
    ASSERT_EQ(mnemo_search(m, "gateway", NULL, &r), MNEMO_CORRUPT);
    ASSERT(strstr(mnemo_errmsg(m), "damaged") != NULL);
    ASSERT(strstr(mnemo_errmsg(m), "mnemo index --force") != NULL);
    /* Words whose segments are sound are still found. */
    ASSERT_EQ(mnemo_search(m, "pgbouncer", NULL, &r), MNEMO_OK);
    ASSERT(mnemo_results_count(r) > 0);
    mnemo_results_free(r);
    mnemo_close(m);
}

/* An index from before the postings (schema 9) is searched through FTS5
 * alone, and the next sync, even one with nothing to do, reads its chunks
 * into the postings; results stay the same. So does an index whose sync
 * was killed before it wrote them (chunks above the marks). */
TEST(search_postings_built_for_an_older_index)
{
    gen_workspace("ws", 300, 5);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    const char *qs[] = {"gateway deploy", "nightly backup orders", "数据库迁移", "v2.4.1 cache"};
    char *before[4];
    for (int i = 0; i < 4; i++)
        before[i] = untimed(test_search_json(m, qs[i], 30));
    mnemo_close(m);
    exec_on("db.sqlite", "DROP TABLE kw_seg; DROP TABLE kw_dead; DROP TABLE kw_mark; "
                         "UPDATE meta SET value = '9' WHERE key = 'schema_version'");
    m = test_open("ws", "db.sqlite", NULL);
    for (int i = 0; i < 4; i++) {
        char *now = untimed(test_search_json(m, qs[i], 30));
        ASSERT_STR_EQ(now, before[i]);
        free(now);
    }
    test_sync(m);
    mnemo_close(m);
    ASSERT(count_rows("db.sqlite", "SELECT count(*) FROM kw_seg") > 0);
    ASSERT(count_rows("db.sqlite", "SELECT mark FROM kw_mark WHERE range = 0") ==
           count_rows("db.sqlite", "SELECT max(id) FROM chunks"));
    /* A killed sync: chunks written, their postings not. */
    exec_on("db.sqlite", "DELETE FROM kw_seg WHERE last > 100; "
                         "UPDATE kw_mark SET mark = (SELECT coalesce(max(last), 0) FROM kw_seg) "
                         "WHERE range = 0");
    m = test_open("ws", "db.sqlite", NULL);
    for (int i = 0; i < 4; i++) {
        char *now = untimed(test_search_json(m, qs[i], 30));
        ASSERT_STR_EQ(now, before[i]);
        free(now);
    }
    test_write("ws/memory/2027-02-02.md", "- the gateway deploy is done\n");
    test_sync(m);
    ASSERT(count_rows("db.sqlite", "SELECT mark FROM kw_mark WHERE range = 0") ==
           count_rows("db.sqlite", "SELECT max(id) FROM chunks"));
    copy_without_postings("db.sqlite", "ref.sqlite");
    mnemo *ref = test_open("ws", "ref.sqlite", NULL);
    for (int i = 0; i < 4; i++) {
        char *a = untimed(test_search_json(m, qs[i], 30));
        char *b = untimed(test_search_json(ref, qs[i], 30));
        ASSERT_STR_EQ(a, b);
        free(a);
        free(b);
    }
    mnemo_close(ref);
    mnemo_close(m);
    for (int i = 0; i < 4; i++)
        free(before[i]);
}

TEST(search_files_state_index_gives_the_same_and_a_sync_adds_it)
{
    /* Paths holding the query's words, in more files than the file-name
     * leg keeps: its answers through files_state equal those through the
     * files' rows (an index made before it), and a sync adds it back. */
    setenv("MNEMO_NOW", "2027-06-01T12:00:00Z", 1);
    gen_workspace("ws", 200, 9);
    for (int i = 0; i < 2100; i++) {
        char path[128];
        snprintf(path, sizeof path, "ws/memory/%s-%s-%d.md", i % 3 ? "gateway" : "backup",
                 i % 5 ? "deploy" : "notes", i);
        test_write(path, i % 7 ? "- the nightly gateway job\n" : "- orders and invoices\n");
    }
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    ASSERT_EQ(count_rows("db.sqlite",
                         "SELECT count(*) FROM sqlite_schema WHERE name = 'files_state'"),
              1);
    static const char *const queries[] = {"gateway deploy", "backup notes invoices",
                                          "nightly gateway", "deploy", "orders notes"};
    enum { NQ = sizeof queries / sizeof *queries };
    char *with[NQ];
    for (int i = 0; i < NQ; i++) {
        with[i] = untimed(test_search_json(m, queries[i], 40));
        ASSERT(strstr(with[i], "\"path\"") != NULL);
    }
    mnemo_close(m);
    exec_on("db.sqlite", "DROP INDEX files_state");
    m = test_open("ws", "db.sqlite", NULL);
    for (int i = 0; i < NQ; i++) {
        char *without = untimed(test_search_json(m, queries[i], 40));
        ASSERT_STR_EQ(without, with[i]);
        free(without);
    }
    test_sync(m);
    ASSERT_EQ(count_rows("db.sqlite",
                         "SELECT count(*) FROM sqlite_schema WHERE name = 'files_state'"),
              1);
    for (int i = 0; i < NQ; i++) {
        char *again = untimed(test_search_json(m, queries[i], 40));
        ASSERT_STR_EQ(again, with[i]);
        free(again);
        free(with[i]);
    }
    mnemo_close(m);
}
