/*
 * test_search.c - keyword search: partial matches, phrases, exclusions,
 * file-name tiers, Chinese and Japanese, score range and thresholds,
 * snippets and the result shape.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
