/*
 * searchbench.c - warm search latency: one process, one handle, many
 * searches (what the daemon and the OpenClaw plugin see).
 *
 *   searchbench WORKSPACE DB QUERIES [RUNS] [--set KEY=VALUE ...]
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
        fprintf(stderr, "usage: searchbench WORKSPACE DB QUERIES [RUNS] [--set K=V ...]\n");
        return 2;
    }
    int runs = argc > 4 && argv[4][0] != '-' ? atoi(argv[4]) : 500;
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    mnemo_config_set(cfg, "workspace", argv[1], "bench", NULL);
    mnemo_config_set(cfg, "db", argv[2], "bench", NULL);
    mnemo_config_load_standard(cfg, NULL, NULL);
    for (int i = 4; i < argc; i++) {
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
    for (int r = -20; r < runs; r++) {
        mnemo_results *res;
        double t0 = now();
        if (mnemo_search(m, queries[(r + 20) % nq], NULL, &res)) {
            fprintf(stderr, "%s\n", mnemo_errmsg(m));
            return 1;
        }
        double dt = now() - t0;
        mode = mnemo_results_mode(res)[0] == 'h' ? "hybrid" : "keyword";
        mnemo_results_free(res);
        if (r >= 0)
            t[r] = dt;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    double sum = 0;
    for (int r = 0; r < runs; r++)
        sum += t[r];
    printf("warm %s search: runs %d  mean %.2f ms  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms\n", mode,
           runs, sum / runs * 1000, t[runs / 2] * 1000, t[runs * 9 / 10] * 1000,
           t[runs * 99 / 100] * 1000);
    free(t);
    for (int i = 0; i < nq; i++)
        free(queries[i]);
    mnemo_close(m);
    mnemo_config_free(cfg);
    return 0;
}
