/*
 * searchbench.c - warm search latency: one process, one handle, many
 * searches (what the daemon and the OpenClaw plugin see), with the mean
 * time of each search stage; or, with --recall, warm trigger recall with
 * each query line as the inbound message.
 *
 *   searchbench WORKSPACE DB QUERIES [RUNS] [--recall] [--set KEY=VALUE ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mnemo.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr,
                "usage: searchbench WORKSPACE DB QUERIES [RUNS] [--recall] [--set K=V ...]\n");
        return 2;
    }
    int runs = argc > 4 && argv[4][0] != '-' ? atoi(argv[4]) : 500;
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    mnemo_config_set(cfg, "workspace", argv[1], "bench", NULL);
    mnemo_config_set(cfg, "db", argv[2], "bench", NULL);
    mnemo_config_load_standard(cfg, NULL, NULL);
    int recall = 0;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--recall") == 0)
            recall = 1;
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            char key[128];
            const char *eq = strchr(argv[++i], '=');
            if (!eq)
                continue;
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
            char *err = NULL;
            if (mnemo_config_set(cfg, key, eq + 1, "flag", &err)) {
                fprintf(stderr, "%s\n", err);
                return 2;
            }
        }
    }
    mnemo *m;
    if (mnemo_open(cfg, &m)) {
        fprintf(stderr, "%s\n", mnemo_errmsg(m));
        return 1;
    }
    char *queries[4096];
    int nq = 0;
    FILE *f = fopen(argv[3], "r");
    char line[1024];
    while (f && nq < 4096 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (*line)
            queries[nq++] = strdup(line);
    }
    if (f)
        fclose(f);
    if (!nq) {
        fprintf(stderr, "no queries\n");
        return 2;
    }
    double *t = malloc((size_t)runs * sizeof *t);
    const char *mode = "?";
    mnemo_search_timing sum_st = {0};
    size_t fired = 0;
    for (int r = -20; r < runs; r++) {
        const char *q = queries[(r + 20) % nq];
        double t0 = now(), dt;
        if (recall) {
            char *out;
            if (mnemo_recall_triggers(m, q, &out)) {
                fprintf(stderr, "%s\n", mnemo_errmsg(m));
                return 1;
            }
            dt = now() - t0;
            mode = "trigger recall";
            if (r >= 0 && *out)
                fired++;
            mnemo_free(out);
        } else {
            mnemo_results *res;
            if (mnemo_search(m, q, NULL, &res)) {
                fprintf(stderr, "%s\n", mnemo_errmsg(m));
                return 1;
            }
            dt = now() - t0;
            mode = mnemo_results_mode(res)[0] == 'h' ? "hybrid search" : "keyword search";
            mnemo_search_timing st;
            mnemo_results_timing(res, &st);
            if (r >= 0) {
                sum_st.keyword_ms += st.keyword_ms;
                sum_st.vector_ms += st.vector_ms;
                sum_st.merge_ms += st.merge_ms;
                sum_st.rank_ms += st.rank_ms;
                sum_st.diversity_ms += st.diversity_ms;
                sum_st.results_ms += st.results_ms;
                sum_st.total_ms += st.total_ms;
            }
            mnemo_results_free(res);
        }
        if (r >= 0)
            t[r] = dt;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    double sum = 0;
    for (int r = 0; r < runs; r++)
        sum += t[r];
    printf("warm %s: runs %d  mean %.2f ms  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms\n", mode, runs,
           sum / runs * 1000, t[runs / 2] * 1000, t[runs * 9 / 10] * 1000,
           t[runs * 99 / 100] * 1000);
    if (recall) {
        printf("messages that recalled something: %zu of %d\n", fired, runs);
    } else {
        double tot = sum_st.total_ms > 0 ? sum_st.total_ms : 1;
        printf("stages, mean ms (share): keyword %.2f (%.0f%%)  vector %.2f (%.0f%%)  "
               "merge %.2f (%.0f%%)  rank %.2f (%.1f%%)  diversity %.2f (%.1f%%)  "
               "results %.2f (%.0f%%)\n",
               sum_st.keyword_ms / runs, 100 * sum_st.keyword_ms / tot,
               sum_st.vector_ms / runs, 100 * sum_st.vector_ms / tot, sum_st.merge_ms / runs,
               100 * sum_st.merge_ms / tot, sum_st.rank_ms / runs, 100 * sum_st.rank_ms / tot,
               sum_st.diversity_ms / runs, 100 * sum_st.diversity_ms / tot,
               sum_st.results_ms / runs, 100 * sum_st.results_ms / tot);
        printf("ranking stages (recency, importance, threshold, diversity): %.2f ms, %.1f%% of "
               "search time\n",
               (sum_st.rank_ms + sum_st.diversity_ms) / runs,
               100 * (sum_st.rank_ms + sum_st.diversity_ms) / tot);
    }
    free(t);
    for (int i = 0; i < nq; i++)
        free(queries[i]);
    mnemo_close(m);
    mnemo_config_free(cfg);
    return 0;
}
