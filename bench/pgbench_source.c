/*
 * pgbench_source.c - the database part of an existing-table search
 * (config sourceTable): one handle, many searches through mnemo_search, the
 * query embedded in process by a static table of random vectors (so what
 * is timed beyond the embedding is the PostgreSQL round trip: the pgvector
 * ORDER BY <=> LIMIT with the priorities join, and building the results).
 * Prints p50/p90/p99 of that part and of the whole search, and the machine.
 *
 *   pgbench_source DSN TABLE [RUNS] [DIMS] [--set KEY=VALUE ...]
 *
 * The table must exist with a vector(DIMS) embedding column (bench/pgsource.sh
 * makes one in PGlite with pgvector).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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

static double pct(const double *v, int n, double p)
{
    int i = (int)(p * (n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static void machine(void)
{
    struct utsname u;
    char model[512] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *c = strchr(line, ':');
            snprintf(model, sizeof model, "%s", c ? c + 2 : line);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    }
    if (f)
        fclose(f);
    uname(&u);
    printf("machine: %s, %ld CPUs, %s %s\n", model, sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
           u.release);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pgbench_source DSN TABLE [RUNS] [DIMS] [--set K=V ...]\n");
        return 2;
    }
    int runs = argc > 3 && argv[3][0] != '-' ? atoi(argv[3]) : 300;
    int dims = argc > 4 && argv[4][0] != '-' ? atoi(argv[4]) : 1536;
    if (runs < 1 || dims < 1 || dims > 8192) {
        fprintf(stderr, "pgbench_source: bad RUNS or DIMS\n");
        return 2;
    }
    /* A static table of 200 words with random vectors, in a scratch folder. */
    char dir[] = "/tmp/pgbench-source-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/words.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    srand(42);
    for (int w = 0; w < 200; w++) {
        fprintf(f, "w%d", w);
        for (int d = 0; d < dims; d++)
            fprintf(f, " %.5f", (double)rand() / RAND_MAX - 0.5);
        fputc('\n', f);
    }
    fclose(f);
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    char models[600];
    snprintf(models, sizeof models, "%s/models", dir);
    mnemo_config_set(cfg, "workspace", dir, "bench", NULL);
    mnemo_config_set(cfg, "modelsDir", models, "bench", NULL);
    mnemo_config_set(cfg, "provider", "static", "bench", NULL);
    mnemo_config_set(cfg, "model", "benchwords", "bench", NULL);
    mnemo_config_set(cfg, "minScore", "0", "bench", NULL);
    mnemo_config_set(cfg, "language", "none", "bench", NULL);
    char *err = NULL;
    if (mnemo_config_set(cfg, "store", argv[1], "bench", &err) ||
        mnemo_config_set(cfg, "sourceTable", argv[2], "bench", &err)) {
        fprintf(stderr, "pgbench_source: %s\n", err);
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            char key[128];
            const char *eq = strchr(argv[++i], '=');
            if (!eq)
                continue;
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
            if (mnemo_config_set(cfg, key, eq + 1, "flag", &err)) {
                fprintf(stderr, "%s\n", err);
                return 2;
            }
        }
    }
    mnemo *m;
    if (mnemo_open(cfg, &m)) {
        fprintf(stderr, "pgbench_source: %s\n", mnemo_errmsg(m));
        return 1;
    }
    char *out = NULL;
    if (mnemo_model_import(m, path, "benchwords", 0, &out)) {
        fprintf(stderr, "pgbench_source: import: %s\n", mnemo_errmsg(m));
        return 1;
    }
    mnemo_free(out);

    double *db = malloc(sizeof(double) * (size_t)runs);
    double *total = malloc(sizeof(double) * (size_t)runs);
    double *wall = malloc(sizeof(double) * (size_t)runs);
    size_t results = 0;
    for (int i = -5; i < runs; i++) { /* 5 warm-up searches: connect, check the table */
        char q[64];
        snprintf(q, sizeof q, "w%d w%d w%d", rand() % 200, rand() % 200, rand() % 200);
        mnemo_results *r = NULL;
        double t0 = now();
        if (mnemo_search(m, q, NULL, &r)) {
            fprintf(stderr, "pgbench_source: %s\n", mnemo_errmsg(m));
            return 1;
        }
        double t1 = now();
        const char *reason = NULL;
        if (mnemo_results_fallback(r, &reason)) {
            fprintf(stderr, "pgbench_source: fell back: %s\n", reason);
            return 1;
        }
        if (i >= 0) {
            mnemo_search_timing t;
            mnemo_results_timing(r, &t);
            db[i] = t.results_ms;
            total[i] = t.total_ms;
            wall[i] = (t1 - t0) * 1000.0;
            results += mnemo_results_count(r);
        }
        mnemo_results_free(r);
    }
    qsort(db, (size_t)runs, sizeof *db, cmp);
    qsort(total, (size_t)runs, sizeof *total, cmp);
    qsort(wall, (size_t)runs, sizeof *wall, cmp);
    machine();
    printf("table %s, %d searches, %d dims, %.1f results each\n", argv[2], runs, dims,
           (double)results / runs);
    printf("database part ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", pct(db, runs, 0.5),
           pct(db, runs, 0.9), pct(db, runs, 0.99), db[runs - 1]);
    printf("whole search ms:  p50 %.2f  p90 %.2f  p99 %.2f  (wall p50 %.2f)\n",
           pct(total, runs, 0.5), pct(total, runs, 0.9), pct(total, runs, 0.99),
           pct(wall, runs, 0.5));
    mnemo_close(m);
    mnemo_config_free(cfg);
    free(db);
    free(total);
    free(wall);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "pgbench_source: could not remove %s\n", dir);
    return 0;
}
