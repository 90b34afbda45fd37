/*
 * refreshbench.c - what keeping the index current costs mnemo mcp: the
 * time of mnemo_refresh before a search when nothing changed, and when one
 * note changed (its sync), on an indexed workspace.
 *
 *   refreshbench WORKSPACE DB [--rounds N] [--set KEY=VALUE ...]
 *
 * Each round appends a line to one note of the workspace (the first .md
 * found under memory/) and calls mnemo_refresh; between rounds it calls it
 * again with nothing changed. Prints the percentiles of both in
 * milliseconds. The note gets its original content back at the end.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
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

static char note[4400]; /* the note each round changes */

static int first_note(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F || !strstr(path, ".md"))
        return 0;
    snprintf(note, sizeof note, "%s", path);
    return 1;
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%-22s p50 %8.3f ms  p90 %8.3f ms  max %8.3f ms  (%d calls)\n", what, v[n / 2],
           v[n * 9 / 10], v[n - 1], n);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: refreshbench WORKSPACE DB [--rounds N] [--set KEY=VALUE ...]\n");
        return 2;
    }
    int rounds = 20;
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    mnemo_config_set(cfg, "workspace", argv[1], "bench", NULL);
    mnemo_config_set(cfg, "db", argv[2], "bench", NULL);
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            char *kv = argv[++i], *eq = strchr(kv, '=');
            char *err = NULL;
            if (!eq)
                return 2;
            *eq = 0;
            if (mnemo_config_set(cfg, kv, eq + 1, "flag", &err)) {
                fprintf(stderr, "%s\n", err ? err : "bad setting");
                return 2;
            }
        }
    }
    if (rounds < 2)
        rounds = 2;
    char dir[4000];
    snprintf(dir, sizeof dir, "%s/memory", argv[1]);
    nftw(dir, first_note, 16, FTW_PHYS);
    if (!note[0]) {
        fprintf(stderr, "refreshbench: no note under %s\n", dir);
        return 1;
    }
    FILE *f = fopen(note, "r");
    char *orig = calloc(1, 1 << 20);
    size_t olen = f ? fread(orig, 1, (1 << 20) - 1, f) : 0;
    if (f)
        fclose(f);

    mnemo *m;
    if (mnemo_open(cfg, &m)) {
        fprintf(stderr, "refreshbench: %s\n", mnemo_errmsg(m));
        return 1;
    }
    int synced;
    double t = now();
    if (mnemo_refresh(m, &synced, NULL)) {
        fprintf(stderr, "refreshbench: %s\n", mnemo_errmsg(m));
        return 1;
    }
    printf("%-22s %8.3f ms\n", "first call (watch+sync)", (now() - t) * 1000.0);
    double *idle = malloc((size_t)rounds * sizeof *idle), *changed = malloc((size_t)rounds * sizeof *changed);
    for (int r = 0; r < rounds; r++) {
        f = fopen(note, "a");
        fprintf(f, "- refreshbench line %d about a kestrel\n", r);
        fclose(f);
        t = now();
        int rc = mnemo_refresh(m, &synced, NULL);
        changed[r] = (now() - t) * 1000.0;
        if (rc || !synced) {
            fprintf(stderr, "refreshbench: round %d: %s\n", r, rc ? mnemo_errmsg(m) : "no sync");
            return 1;
        }
        t = now();
        rc = mnemo_refresh(m, &synced, NULL);
        idle[r] = (now() - t) * 1000.0;
        if (rc || synced) {
            fprintf(stderr, "refreshbench: round %d: a sync without a change\n", r);
            return 1;
        }
    }
    report("nothing changed", idle, rounds);
    report("one note changed", changed, rounds);
    f = fopen(note, "w");
    if (f) {
        fwrite(orig, 1, olen, f);
        fclose(f);
    }
    mnemo_refresh(m, &synced, NULL);
    mnemo_close(m);
    mnemo_config_free(cfg);
    free(orig);
    free(idle);
    free(changed);
    return 0;
}
