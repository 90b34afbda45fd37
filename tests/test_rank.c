/*
 * test_rank.c - ranking stages: recency (and its floor), importance,
 * MMR diversity (by words and by CJK bigrams), strict thresholds, explain,
 * and trigger recall precision.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rank.h"
#include "engine/topk.h"
#include "util/hash.h"
#include "test.h"
#include "util/utf8.h"

static json_t *search_json(mnemo *m, const char *q, int max, int strict, int explain)
{
    mnemo_search_opts o;
    mnemo_search_opts_init(&o);
    o.max_results = max;
    o.strict = strict;
    o.explain = explain;
    mnemo_results *r;
    if (mnemo_search(m, q, &o, &r))
        test_fail(__FILE__, __LINE__, "search %s: %s", q, mnemo_errmsg(m));
    char *s = mnemo_results_json(r);
    mnemo_results_free(r);
    json_t *j = json_loads(s, 0, NULL);
    mnemo_free(s);
    ASSERT(j != NULL);
    return j;
}

static const char *path_at(json_t *j, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(j, "results"), i), "path"));
}

static size_t count(json_t *j) { return json_array_size(json_object_get(j, "results")); }

TEST(rank_path_dates)
{
    double d = rank_path_date("memory/2026-11-29.md");
    ASSERT_NEAR(d, 1795910400.0, 0.5);
    ASSERT_NEAR(rank_path_date("memory/2026-11-29-standup.md"), d, 0.5);
    ASSERT_NEAR(rank_path_date("memory/2026/2026-11-29.md"), d, 0.5);
    ASSERT_NEAR(rank_path_date("memory/2026-11-29/notes.md"), d, 0.5);
    ASSERT_NEAR(rank_path_date("memory/2026/11/29.md"), d, 0.5);
    ASSERT_NEAR(rank_path_date("memory/2026/11/29/x.md"), d, 0.5);
    ASSERT_NEAR(rank_path_date("MEMORY.md"), 0, 0);
    ASSERT_NEAR(rank_path_date("USER.md"), 0, 0);
    ASSERT_NEAR(rank_path_date("memory/projects/gateway.md"), 0, 0);
    ASSERT_NEAR(rank_path_date("memory/v12026-11-29.md"), 0, 0);
    ASSERT_NEAR(rank_path_date("memory/2026-13-45.md"), 0, 0);
}

TEST(rank_recency_and_importance_factors)
{
    double now = 1795953600.0, day = 86400;
    ASSERT_NEAR(rank_recency(0, now, 30, 0.8), 1.0, 1e-12);              /* evergreen */
    ASSERT_NEAR(rank_recency(now - day, now, 30, 0.8), 0.9954, 1e-3);
    ASSERT_NEAR(rank_recency(now - 30 * day, now, 30, 0.8), 0.9, 1e-9); /* one half-life */
    ASSERT_NEAR(rank_recency(now - 3650 * day, now, 30, 0.8), 0.8, 1e-6); /* the floor */
    ASSERT_NEAR(rank_recency(now + day, now, 30, 0.8), 1.0, 1e-12);     /* future */
    ASSERT_NEAR(rank_recency(now - 365 * day, now, 0, 0.8), 1.0, 1e-12); /* disabled */
    ASSERT_NEAR(rank_importance(0, 1.25), 1.0, 1e-12);
    ASSERT_NEAR(rank_importance(1, 1.25), 0.8, 1e-9);
    ASSERT_NEAR(rank_importance(10, 1.25), 1.25, 1e-9);
    ASSERT(rank_importance(7, 1.25) > rank_importance(6, 1.25));
}

TEST(rank_old_strong_beats_new_weak)
{
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    /* A year-old note that is all about the query, yesterday's note that
     * mentions one of its words in passing. */
    test_write("ws/memory/2025-11-20.md", "Kayak trip to the lake: rented two kayaks for the "
                                          "trip, kayak rental shop near the harbour.\n");
    test_write("ws/memory/2026-11-28.md", "Long standup. The trip budget spreadsheet needs "
                                          "numbers from finance before Friday, and the "
                                          "office move is scheduled; several follow-ups about "
                                          "hiring, laptops and the holiday party.\n");
    /* Two notes equal but for their date: the newer first. */
    test_write("ws/memory/2026-06-01.md", "Canoe club meeting notes.\n");
    test_write("ws/memory/2026-11-27.md", "Canoe club meeting notes.\n");
    mnemo *m = test_open("ws", "db.sqlite", "minScore=0", NULL);
    test_sync(m);
    json_t *j = search_json(m, "kayak trip", 5, -1, 1);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2025-11-20.md");
    ASSERT_STR_EQ(path_at(j, 1), "memory/2026-11-28.md");
    json_t *ex = json_object_get(json_array_get(json_object_get(j, "results"), 0), "explain");
    double rec = json_real_value(json_object_get(ex, "recency"));
    ASSERT(rec >= 0.8 && rec < 0.81); /* a year old: at the floor, not buried */
    json_decref(j);
    j = search_json(m, "canoe club", 5, -1, 0);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-27.md");
    ASSERT_STR_EQ(path_at(j, 1), "memory/2026-06-01.md");
    json_decref(j);
    mnemo_close(m);
    /* Without the floor (as tools that multiply by the decay do), the old
     * note would be buried: the floor is what keeps it. */
    m = test_open("ws", "db.sqlite", "minScore=0", "recencyFloor=0", NULL);
    j = search_json(m, "kayak trip", 5, -1, 0);
    ASSERT_STR_EQ(path_at(j, 0), "memory/2026-11-28.md");
    json_decref(j);
    mnemo_close(m);
}

TEST(rank_importance_orders_equal_entries)
{
    test_write("ws/MEMORY.md", "- Backup policy A for the billing cluster <!-- importance: 1 -->\n"
                               "- Backup policy B for the billing cluster\n"
                               "- Backup policy C for the billing cluster <!-- importance: 10 -->\n");
    mnemo *m = test_open("ws", "db.sqlite", "minScore=0", "mmrLambda=1", NULL);
    test_sync(m);
    json_t *j = search_json(m, "billing backup policy", 5, -1, 1);
    ASSERT_EQ(count(j), 3);
    json_t *res = json_object_get(j, "results");
    const char *first = json_string_value(json_object_get(json_array_get(res, 0), "snippet"));
    const char *last = json_string_value(json_object_get(json_array_get(res, 2), "snippet"));
    ASSERT_CONTAINS(first, "policy C");
    ASSERT_CONTAINS(last, "policy A");
    json_t *ex = json_object_get(json_array_get(res, 0), "explain");
    ASSERT_NEAR(json_real_value(json_object_get(ex, "importance")), 1.25, 1e-4);
    json_decref(j);
    mnemo_close(m);
}

TEST(rank_mmr_demotes_near_duplicates)
{
    const char *dup = "Deploy checklist for the payments service: freeze merges, run the "
                      "migration dry run, page the on-call, watch error budgets, roll back on "
                      "any spike in payment failures.\n";
    test_write("ws/memory/projects/payments-a.md", dup);
    test_write("ws/memory/projects/payments-b.md", dup);
    test_write("ws/memory/projects/billing.md",
               "Billing deploy plan: run the migration dry run on staging first, then switch "
               "the invoices table over on Tuesday with the finance team watching.\n");
    test_write("ws/memory/projects/other.md", "Unrelated notes about lunch.\n");
    mnemo *m = test_open("ws", "db.sqlite", "minScore=0", "mmrLambda=1", NULL);
    test_sync(m);
    json_t *j = search_json(m, "payments deploy migration dry run", 3, -1, 0);
    /* Without diversity the two copies take the first two places. */
    ASSERT(strstr(path_at(j, 0), "payments-") && strstr(path_at(j, 1), "payments-"));
    json_decref(j);
    mnemo_close(m);
    m = test_open("ws", "db.sqlite", "minScore=0", NULL);
    j = search_json(m, "payments deploy migration dry run", 3, -1, 1);
    ASSERT(strstr(path_at(j, 0), "payments-"));
    ASSERT_STR_EQ(path_at(j, 1), "memory/projects/billing.md");
    ASSERT(strstr(path_at(j, 2), "payments-"));
    /* It reorders; the scores stay those of the ranking. */
    json_t *second = json_array_get(json_object_get(j, "results"), 1);
    json_t *ex = json_object_get(second, "explain");
    ASSERT_EQ(json_integer_value(json_object_get(ex, "rankBefore")), 3);
    ASSERT_EQ(json_integer_value(json_object_get(ex, "rankAfter")), 2);
    json_decref(j);
    mnemo_close(m);
}

TEST(rank_mmr_cjk_similarity)
{
    test_write("ws/memory/projects/a.md", "数据库迁移计划：先在测试环境演练，再切换生产数据库。\n");
    test_write("ws/memory/projects/b.md", "数据库迁移计划：先在测试环境演练，再切换生产数据库。\n");
    test_write("ws/memory/projects/c.md", "服务器部署和数据库迁移的时间表。\n");
    mnemo *m = test_open("ws", "db.sqlite", "minScore=0", NULL);
    test_sync(m);
    json_t *j = search_json(m, "数据库迁移 演练", 3, -1, 0);
    ASSERT_EQ(count(j), 3);
    ASSERT_STR_EQ(path_at(j, 1), "memory/projects/c.md");
    json_decref(j);
    mnemo_close(m);
}

TEST(rank_strict_abstains_on_unrelated)
{
    test_write("ws/memory/projects/ops.md",
               "The gateway runs on atlas. Certificates renew automatically every sixty days "
               "through the internal certificate authority, and the renewal job posts to the "
               "ops channel; the team reviewed the rotation runbook last week.\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    /* One incidental shared word: below the threshold. */
    json_t *j = search_json(m, "weekend hiking trip week plans mountains", 5, 1, 0);
    ASSERT_EQ(count(j), 0);
    json_decref(j);
    /* Without strict, the keyword match is still returned. */
    j = search_json(m, "weekend hiking trip week plans mountains", 5, 0, 0);
    ASSERT_EQ(count(j), 1);
    json_decref(j);
    /* A related query answers in strict mode too. */
    j = search_json(m, "certificate renewal runbook", 5, 1, 0);
    ASSERT_EQ(count(j), 1);
    json_decref(j);
    mnemo_close(m);
    /* The config key does the same. */
    m = test_open("ws", "db.sqlite", "strictMinScore=true", NULL);
    j = search_json(m, "weekend hiking trip week plans mountains", 5, -1, 0);
    ASSERT_EQ(count(j), 0);
    json_decref(j);
    mnemo_close(m);
}

TEST(rank_trigger_recall_precision)
{
    test_write("ws/MEMORY.md",
               "# Memory\n"
               "- Never deploy on Fridays; hotfixes need two approvals. <!-- trigger: deploy, "
               "friday release -->\n"
               "- The gateway listens on port 8443. <!-- trigger: gateway port, bind port -->\n"
               "- Lin Mei leads the Shanghai team. <!-- trigger: Shanghai sync, Lin Mei -->\n"
               "- Minato Logistics is a customer in Tokyo. <!-- trigger: 東京, Minato -->\n"
               "- A plain entry without triggers about deploys.\n");
    test_write("ws/memory/2026-11-28.md", "- Deploy notes <!-- trigger: deploy -->\n");
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    static const struct {
        const char *msg, *want;
    } yes[] = {
        {"Can we deploy tonight?", "Never deploy on Fridays"},
        {"we are deploying the fix", "Never deploy on Fridays"},          /* stemming */
        {"which PORT is the Gateway on?", "port 8443"},                   /* order, case */
        {"is the sync with shanghai moved?", "Lin Mei"},
        {"会議は東京で", "Minato"},                                       /* CJK */
        {"what did lin mei say", "Lin Mei"},
    };
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        char *out = NULL;
        ASSERT_OK(mnemo_recall_triggers(m, yes[i].msg, &out));
        if (!strstr(out, yes[i].want))
            test_fail(__FILE__, __LINE__, "'%s' should recall '%s', got '%s'", yes[i].msg,
                      yes[i].want, out);
        ASSERT_CONTAINS(out, "(Source: MEMORY.md#L");
        ASSERT_NOT_CONTAINS(out, "2026-11-28"); /* daily notes never recall */
        ASSERT(strlen(out) <= 1800);
        mnemo_free(out);
    }
    static const char *no[] = {
        "the release is on Monday",        /* half of "friday release" */
        "what is the port of Hamburg like", /* half of "gateway port" */
        "lin the table",                    /* half of a name */
        "nice weather today",
        "",
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        char *out = NULL;
        ASSERT_OK(mnemo_recall_triggers(m, no[i], &out));
        if (*out)
            test_fail(__FILE__, __LINE__, "'%s' should recall nothing, got '%s'", no[i], out);
        mnemo_free(out);
    }
    mnemo_close(m);
}

TEST(rank_trigger_recall_caps)
{
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    FILE *f;
    test_mkdir("ws");
    f = fopen(test_path("ws/MEMORY.md"), "w");
    for (int i = 0; i < 6; i++)
        fprintf(f, "- entry %d %s <!-- trigger: alarm bells -->\n", i, big);
    fclose(f);
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    test_sync(m);
    char *out = NULL;
    ASSERT_OK(mnemo_recall_triggers(m, "alarm bells ringing", &out));
    int lines = 0;
    for (char *p = out; *p; p++)
        lines += *p == '\n';
    ASSERT(lines >= 1 && lines <= 3);
    ASSERT(strlen(out) <= 1800);
    mnemo_free(out);
    mnemo_close(m);
}

static int by_score_then_id(const void *a, const void *b)
{
    const topk_item *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

TEST(rank_topk_keeps_the_best_by_score_then_id)
{
    /* The keyword pools of both backends are cut by topk.h: the K kept must
     * be the first K of a full sort by score (descending), then id, with
     * many ties, and each kept row's slot must hold that row. */
    enum { N = 5000 };
    static topk_item all[N], ref[N];
    static int64_t payload[N];
    size_t caps[] = {0, 1, 7, 200, N - 1, N, N + 10};
    unsigned x = 777;
    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        all[i].id = (int64_t)((x >> 8) % 1000003) * N + (int64_t)i; /* unique, unordered */
        all[i].score = (double)((x >> 4) % 50) / 7.0;                /* many ties */
        ref[i] = all[i];
    }
    qsort(ref, N, sizeof *ref, by_score_then_id);
    for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
        topk k;
        ASSERT_OK(topk_init(&k, caps[c]));
        for (size_t i = 0; i < N; i++) {
            size_t slot = topk_offer(&k, all[i].score, all[i].id);
            if (slot != TOPK_NONE) {
                ASSERT(slot < caps[c]);
                payload[slot] = all[i].id;
            }
        }
        size_t want = caps[c] < N ? caps[c] : N;
        ASSERT_EQ(k.n, want);
        topk_item *got = malloc((want ? want : 1) * sizeof *got);
        ASSERT(got != NULL);
        for (size_t i = 0; i < k.n; i++) {
            ASSERT_EQ(payload[k.v[i].slot], k.v[i].id);
            got[i] = k.v[i];
        }
        qsort(got, want, sizeof *got, by_score_then_id);
        for (size_t i = 0; i < want; i++) {
            ASSERT_EQ(got[i].id, ref[i].id);
            ASSERT(got[i].score == ref[i].score);
        }
        free(got);
        topk_cleanup(&k);
    }
}

TEST(rank_factor_pruning_keeps_the_exact_top)
{
    /* Factors are computed only for candidates that can still make the
     * top; the results must equal those of computing all of them. */
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    char rel[64], body[256];
    unsigned x = 12345;
    for (int i = 0; i < 300; i++) {
        x = x * 1103515245u + 12345u;
        int month = 1 + (int)(x >> 16) % 12, day = 1 + (int)(x >> 8) % 28;
        snprintf(rel, sizeof rel, "ws/memory/%d-%02d-%02d-n%03d.md", 2024 + (int)(x >> 4) % 3,
                 month, day, i);
        int reps = 1 + (int)(x >> 20) % 4;
        snprintf(body, sizeof body,
                 "- heron sighting%s%s%s near the pond, with ducks, geese, coots, grebes, "
                 "swans and a kingfisher on the far bank <!-- importance: %d -->\n",
                 reps > 1 ? " heron" : "", reps > 2 ? " heron" : "", reps > 3 ? " heron" : "",
                 1 + (int)(x >> 12) % 10);
        test_write(rel, body);
    }
    mnemo *m = test_open("ws", "db.sqlite", "minScore=0", "mmrLambda=1", "mmrPool=0", NULL);
    test_sync(m);
    json_t *j = search_json(m, "heron", 10, -1, 1);
    char *pruned = json_dumps(json_object_get(j, "results"), 0);
    json_decref(j);
    mnemo_close(m);
    m = test_open("ws", "db.sqlite", "minScore=0", "mmrLambda=1", "mmrPool=1000", NULL);
    j = search_json(m, "heron", 10, -1, 1);
    char *full = json_dumps(json_object_get(j, "results"), 0);
    /* The factors did reorder: some result outranks a better text match. */
    json_t *rs = json_object_get(j, "results");
    int reordered = 0;
    for (size_t i = 1; i < json_array_size(rs); i++)
        if (json_real_value(json_object_get(json_array_get(rs, i - 1), "textScore")) <
            json_real_value(json_object_get(json_array_get(rs, i), "textScore")))
            reordered = 1;
    ASSERT(reordered);
    ASSERT_EQ(json_array_size(rs), 10);
    json_decref(j);
    mnemo_close(m);
    ASSERT_STR_EQ(pruned, full);
    free(pruned);
    free(full);
}

/* The sketch's sort and the branch-free Jaccard merge against plain
 * reference code, on generated texts (repeated words, CJK, sizes around
 * the sketch size). */
static double jaccard_reference(const rank_tokens *a, const rank_tokens *b)
{
    if (!a->n || !b->n)
        return 0;
    size_t i = 0, j = 0, seen = 0, inter = 0;
    while (seen < RANK_SKETCH && (i < a->n || j < b->n)) {
        if (j >= b->n || (i < a->n && a->h[i] < b->h[j])) {
            i++;
        } else if (i >= a->n || b->h[j] < a->h[i]) {
            j++;
        } else {
            inter++;
            i++;
            j++;
        }
        seen++;
    }
    return (double)inter / (double)seen;
}

TEST(rank_sketch_sort_and_jaccard_match_reference)
{
    static const char *const words[] = {"gateway", "Deploy", "port", "数据库", "迁移", "the",
                                        "v2", "acme", "orders", "nightly", "backup"};
    uint64_t s = 42;
    enum { NTEXT = 40 };
    rank_tokens t[NTEXT];
    for (int k = 0; k < NTEXT; k++) {
        char text[16384];
        size_t n = 0;
        int nwords = 1 + k * 17 % 400;
        for (int w = 0; w < nwords; w++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned r = (unsigned)(s >> 33);
            /* A bounded vocabulary for some texts (many repeats), a wide
             * one for others (more tokens than the sketch keeps). */
            if (k % 2)
                n += (size_t)snprintf(text + n, sizeof text - n, "%s ",
                                      words[r % (sizeof words / sizeof *words)]);
            else
                n += (size_t)snprintf(text + n, sizeof text - n, "w%u ", r % 700);
        }
        ASSERT_OK(rank_tokens_build(text, n, &t[k]));
        ASSERT(t[k].n <= RANK_SKETCH);
        for (size_t i = 1; i < t[k].n; i++)
            ASSERT(t[k].h[i - 1] < t[k].h[i]); /* sorted, no duplicates */
    }
    for (int a = 0; a < NTEXT; a++)
        for (int b = 0; b < NTEXT; b++)
            ASSERT(rank_jaccard(&t[a], &t[b]) == jaccard_reference(&t[a], &t[b]));
    for (int k = 0; k < NTEXT; k++)
        free(t[k].h);
}

/* rank_mmr compares a candidate with the picks only while it can still
 * win a position; the order must be that of comparing every candidate
 * with every pick, as below. Random scores (with ties) and similarities,
 * several pool sizes and lambdas. */
typedef struct sim_table {
    const double *m;
    size_t n;
    size_t calls;
} sim_table;

static double table_sim(void *ud, size_t i, size_t j)
{
    sim_table *t = ud;
    t->calls++;
    return t->m[i * t->n + j];
}

static void mmr_reference(size_t *order, size_t n, const double *score, double lambda,
                          size_t pool, size_t picks, sim_table *t)
{
    if (pool > n)
        pool = n;
    if (picks > pool)
        picks = pool;
    if (pool < 3 || picks < 2 || lambda >= 1.0)
        return;
    size_t cand[64], left = pool;
    double maxsim[64] = {0};
    memcpy(cand, order, pool * sizeof *cand);
    for (size_t pos = 0; pos < picks; pos++) {
        size_t best = 0;
        double best_v = -INFINITY;
        for (size_t k = 0; k < left; k++) {
            double v = lambda * score[cand[k]] - (1.0 - lambda) * maxsim[k];
            if (v > best_v) {
                best_v = v;
                best = k;
            }
        }
        size_t pick = cand[best];
        order[pos] = pick;
        memmove(cand + best, cand + best + 1, (left - best - 1) * sizeof *cand);
        memmove(maxsim + best, maxsim + best + 1, (left - best - 1) * sizeof *maxsim);
        left--;
        if (pos + 1 < picks)
            for (size_t k = 0; k < left; k++) {
                double s = table_sim(t, pick, cand[k]);
                if (s > maxsim[k])
                    maxsim[k] = s;
            }
    }
    memcpy(order + picks, cand, left * sizeof *cand);
}

TEST(rank_mmr_lazy_matches_reference)
{
    enum { N = 40 };
    uint64_t s = 9;
    size_t calls = 0, ref_calls = 0;
    for (int round = 0; round < 400; round++) {
        double m[N * N], score[N];
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j <= i; j++) {
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                /* Mostly small similarities, some near-duplicates, some
                 * negative (cosines). */
                double v = (double)(s >> 40) / (double)(1 << 24);
                v = round % 3 == 0 ? v * v : round % 3 == 1 ? v - 0.2 : v * v * v;
                m[i * N + j] = m[j * N + i] = i == j ? 1.0 : v;
            }
        for (size_t i = 0; i < N; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            /* Scores in a narrow band, coarse enough for ties. */
            score[i] = 0.5 + (double)((s >> 33) % (round % 2 ? 8 : 400)) / 800.0;
        }
        size_t order[N], ref[N];
        for (size_t i = 0; i < N; i++)
            order[i] = i;
        /* Sorted by score descending, as the caller does. */
        for (size_t i = 1; i < N; i++)
            for (size_t k = i; k > 0 && score[order[k - 1]] < score[order[k]]; k--) {
                size_t x = order[k];
                order[k] = order[k - 1];
                order[k - 1] = x;
            }
        memcpy(ref, order, sizeof ref);
        double lambda = round % 4 == 0 ? 0.3 : round % 4 == 1 ? 0.5 : 0.7;
        size_t pool = 3 + (size_t)round % 30, picks = 2 + (size_t)round % 15;
        sim_table t = {m, N, 0}, rt = {m, N, 0};
        rank_mmr(order, N, score, lambda, pool, picks, table_sim, &t);
        mmr_reference(ref, N, score, lambda, pool, picks, &rt);
        for (size_t i = 0; i < N; i++)
            ASSERT_EQ(order[i], ref[i]);
        calls += t.calls;
        ref_calls += rt.calls;
    }
    ASSERT(calls <= ref_calls);
}

/* rank_tokens_build against a plain copy of its first version (decode
 * every character, qsort), on generated byte strings: ASCII, accents,
 * no-break spaces, CJK and halfwidth kana runs, invalid and cut UTF-8. */
static uint32_t ref_decode(const unsigned char *s, size_t n, size_t *len)
{
    int32_t cp;
    *len = (size_t)utf8_decode((const char *)s, n, &cp);
    return cp < 0 ? 0xfffd : (uint32_t)cp;
}

static int cmp_u64_ref(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static size_t tokens_reference(const char *text, size_t len, uint64_t *h)
{
    const unsigned char *s = (const unsigned char *)text;
    char word[64];
    size_t n = 0, wl = 0, run = 0, prev = 0, prevlen = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t k = 1;
        uint32_t cp = c < 0x80 ? c : ref_decode(s + i, len - i, &k);
        int cjk = cp >= 0x80 && utf8_is_cjk((int32_t)cp);
        int letter = cp >= 0x80 ? !cjk && cp != 0xfffd && cp != 0xa0
                                : (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        if (!letter && wl) {
            h[n++] = hash64(word, wl);
            wl = 0;
        }
        if (!cjk && run) {
            if (run == 1)
                h[n++] = hash64(s + prev, prevlen);
            run = 0;
        }
        if (letter) {
            for (size_t j = 0; j < k && wl < sizeof word; j++)
                word[wl++] = (char)(c < 0x80 && c >= 'A' && c <= 'Z' ? c | 0x20 : s[i + j]);
        } else if (cjk) {
            if (run)
                h[n++] = hash64(s + prev, prevlen + k);
            run++;
            prev = i;
            prevlen = k;
        }
        i += k;
    }
    if (wl)
        h[n++] = hash64(word, wl);
    if (run == 1)
        h[n++] = hash64(s + prev, prevlen);
    qsort(h, n, sizeof *h, cmp_u64_ref);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || h[u - 1] != h[i])
            h[u++] = h[i];
    return u < RANK_SKETCH ? u : RANK_SKETCH;
}

TEST(rank_tokens_match_reference)
{
    static const char *const pieces[] = {
        "Gateway", "port", "8443", " ", "  ", "\n", ".", "-", "_", "ABCdef", "é", "Café",
        "\xc2\xa0", "数据库", "迁移", "デプロイ", "ｶﾀｶﾅ", "한국어", "\xff", "\xe6\x95", "\xc3",
        "\xef\xbf\xbd", "x", "averyveryveryveryveryveryveryveryveryveryveryveryverylongwordindeed",
        "Z", "@", "9", "\xf0\xa0\x80\x80\xf0\xa0\x80\x81", "\xe3\x80\x85", "\xe1\x84\x80",
        "\xc0\x80", "\xed\xa0\x80"};
    uint64_t s = 5;
    static uint64_t ref[8192];
    for (int round = 0; round < 500; round++) {
        char text[4096];
        size_t n = 0;
        int count = round % 200;
        for (int i = 0; i < count; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            const char *p = pieces[(s >> 33) % (sizeof pieces / sizeof *pieces)];
            size_t l = strlen(p);
            if (n + l >= sizeof text)
                break;
            memcpy(text + n, p, l);
            n += l;
        }
        rank_tokens t;
        ASSERT_OK(rank_tokens_build(text, n, &t));
        size_t rn = tokens_reference(text, n, ref);
        ASSERT_EQ(t.n, rn);
        for (size_t i = 0; i < rn; i++)
            ASSERT(t.h[i] == ref[i]);
        free(t.h);
    }
}

/* Near-duplicates see CJK as the tokenizer does: characters of extension B,
 * Hangul Jamo and 々 are CJK (bigrams), not one long word as they once were
 * here while the tokenizer split them. */
TEST(rank_tokens_cjk_as_the_tokenizer_sees_it)
{
    /* four ideographs of extension B: three bigrams */
    const char *extb = "\xf0\xa0\x80\x80\xf0\xa0\x80\x81\xf0\xa0\x80\x82\xf0\xa0\x80\x83";
    rank_tokens t;
    ASSERT_OK(rank_tokens_build(extb, strlen(extb), &t));
    ASSERT_EQ(t.n, 3);
    free(t.h);
    /* 人々 and three Hangul Jamo: one bigram, then two */
    const char *mixed = "\xe4\xba\xba\xe3\x80\x85 \xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8";
    ASSERT_OK(rank_tokens_build(mixed, strlen(mixed), &t));
    ASSERT_EQ(t.n, 3);
    free(t.h);
}
