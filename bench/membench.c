/*
 * membench.c - structured memories at scale: adding N memories one call at
 * a time (what an agent does), importing them as JSON lines, and warm
 * search and recall latency over them.
 *
 *   membench DIR [N] [--writers W] [--no-search] [--again STAMP] [--set KEY=VALUE ...]
 *
 * N defaults to 100000. DIR is created (an empty workspace and its index);
 * the memories are synthetic sentences over a Zipf-distributed vocabulary,
 * spread over categories, 20 users (half of them for the first user) and
 * some sessions. With --writers W, W processes add N/W memories each to
 * the same store (and tenant) at once, each on its own handle, and the
 * adds per second of all of them together are reported. --no-search stops
 * after the import. --again STAMP searches the memories an earlier run on
 * PostgreSQL stored (its tenants carry STAMP, printed by that run) with
 * the same queries, adding nothing: for comparing searches alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnemo.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's CPU time (user and system), in seconds. */
static double cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t pick(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static const char *const common[] = {
    "deploy",   "gateway", "friday",   "coffee",  "postgres", "meeting", "review",  "berlin",
    "tokyo",    "release", "budget",   "editor",  "report",   "cluster", "backup",  "oncall",
    "customer", "latency", "invoice",  "design",  "kafka",    "python",  "rust",    "travel",
    "family",   "doctor",  "birthday", "project", "priya",    "jonas",   "marco",   "dark",
    "mode",     "bullet",  "lists",    "tea",     "garden",   "train",   "flight",  "hotel"};
#define NCOMMON (sizeof common / sizeof *common)
static char tail[5000][10];

static const char *word(void)
{
    /* Zipf-ish: common words often, a long tail of made-up ones. */
    uint32_t r = pick(100);
    if (r < 60)
        return common[pick((uint32_t)NCOMMON)];
    return tail[pick(r < 90 ? 500 : 5000)];
}

static const char *const cats[] = {"identity", "configuration", "rule",    "preference",
                                   "decision", "technical",     "project", "operational",
                                   "relationship"};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    printf("%s: runs %d  mean %.2f ms  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms\n", what, n,
           sum / n * 1000, t[n / 2] * 1000, t[n * 9 / 10] * 1000, t[n * 99 / 100] * 1000);
}

static int sink(void *ud, const char *data, size_t len)
{
    FILE *f = ud;
    return fwrite(data, 1, len, f) == len ? 0 : 1;
}

static long run_started; /* names the run's tenants, the same in every writer */

/* On PostgreSQL each run and each of its two stores (added, imported) is a
 * tenant of its own, so nothing is skipped as a duplicate of an earlier one. */
static mnemo *open_db(const char *ws, const char *db, const char *tenant, int argc, char **argv)
{
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    mnemo_config_set(cfg, "workspace", ws, "bench", NULL);
    mnemo_config_set(cfg, "db", db, "bench", NULL);
    mnemo_config_load_standard(cfg, NULL, NULL);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--writers") == 0)
            i++;
        else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            char key[128];
            const char *eq = strchr(argv[++i], '=');
            if (!eq)
                continue;
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
            mnemo_config_set(cfg, key, eq + 1, "flag", NULL);
        }
    }
    char tn[64];
    snprintf(tn, sizeof tn, "membench-%ld-%s", run_started, tenant);
    mnemo_config_set(cfg, "tenant", tn, "bench", NULL);
    mnemo *m;
    if (mnemo_open(cfg, &m)) {
        fprintf(stderr, "%s\n", mnemo_errmsg(m));
        exit(1);
    }
    mnemo_config_free(cfg);
    return m;
}

/* Adds memories FIRST..FIRST+N-1 (their numbers keep them distinct across
 * writers); the duplicates found into *DUPS, each add's time into LAT[i -
 * FIRST] when LAT is given. 0 on success. */
static int add_range(mnemo *m, int first, int n, size_t *dups, double *lat)
{
    int dry = m == NULL; /* the same random draws, nothing added */
    char rec[1024], *out;
    for (int i = first; i < first + n; i++) {
        int len = snprintf(rec, sizeof rec, "{\"text\":\"");
        int words = 6 + (int)pick(14);
        for (int w = 0; w < words; w++)
            len += snprintf(rec + len, sizeof rec - (size_t)len, "%s%s", w ? " " : "", word());
        uint32_t u = pick(20);
        len += snprintf(rec + len, sizeof rec - (size_t)len,
                        " #%d\",\"category\":\"%s\",\"user_id\":\"user%u\"%s}", i,
                        cats[pick(9)], u < 10 ? 0 : u,
                        pick(10) == 0 ? ",\"run_id\":\"session1\"" : "");
        if (dry)
            continue;
        double t0 = lat ? now() : 0;
        if (mnemo_memory_add(m, rec, &out)) {
            fprintf(stderr, "add: %s\n", mnemo_errmsg(m));
            return 1;
        }
        if (lat)
            lat[i - first] = now() - t0;
        *dups += strstr(out, "\"duplicate\"") != NULL;
        mnemo_free(out);
    }
    return 0;
}

/* W processes adding N memories between them to the store of M's
 * settings; each opens its own handle. */
static int add_parallel(const char *ws, const char *db, int n, int writers, int argc,
                        char **argv)
{
    pid_t pid[64];
    for (int w = 0; w < writers; w++) {
        if ((pid[w] = fork()) == 0) {
            rng += 0x9e3779b97f4a7c15ull * (uint64_t)(w + 1);
            mnemo *m = open_db(ws, db, "add", argc, argv);
            size_t dups = 0;
            int per = n / writers, first = w * per;
            int bad = add_range(m, first, w == writers - 1 ? n - first : per, &dups, NULL);
            mnemo_close(m);
            _exit(bad || dups);
        }
    }
    int bad = 0;
    for (int w = 0; w < writers; w++) {
        int st;
        waitpid(pid[w], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: membench DIR [N] [--writers W] [--no-search] [--set KEY=VALUE ...]\n");
        return 2;
    }
    int n = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : 100000;
    int writers = 1, search = 1;
    long again = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--writers") == 0 && i + 1 < argc)
            writers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--again") == 0 && i + 1 < argc)
            again = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--no-search") == 0)
            search = 0;
    }
    if (writers < 1 || writers > 64) {
        fprintf(stderr, "membench: --writers takes 1 to 64\n");
        return 2;
    }
    run_started = again ? again : (long)time(NULL);
    for (int i = 0; i < 5000; i++) {
        static const char *const syl[] = {"ka", "ro", "mi", "ten", "sul", "ba", "dor", "vi"};
        snprintf(tail[i], sizeof tail[i], "%s%s%s", syl[pick(8)], syl[pick(8)], syl[pick(8)]);
    }
    char ws[4096], db[4200], db2[4200], dump[4200];
    snprintf(ws, sizeof ws, "%s/ws", argv[1]);
    snprintf(db, sizeof db, "%s/add.sqlite", argv[1]);
    snprintf(db2, sizeof db2, "%s/import.sqlite", argv[1]);
    snprintf(dump, sizeof dump, "%s/memories.jsonl", argv[1]);
    mkdir(argv[1], 0755);
    mkdir(ws, 0755);
    remove(db);
    remove(db2);
    mnemo *m = open_db(ws, db, "add", argc, argv);
    mnemo_sync(m, NULL, NULL);
    printf("stamp %ld\n", run_started);
    if (again) {
        size_t none = 0;
        add_range(NULL, 0, n, &none, NULL);
        goto searches;
    }

    /* Adding, one call each. */
    char *out;
    double t0 = now(), c0 = cpu();
    size_t dups = 0;
    double *lat = writers == 1 ? malloc((size_t)(n ? n : 1) * sizeof *lat) : NULL;
    if (writers == 1 ? add_range(m, 0, n, &dups, lat)
                     : add_parallel(ws, db, n, writers, argc, argv))
        return 1;
    double add_s = now() - t0, add_cpu = cpu() - c0;
    if (writers == 1)
        printf("add %d memories one call at a time: %.2f s, %.0f memories/s (%zu duplicates; "
               "this process's CPU %.1f us an add)\n",
               n, add_s, n / add_s, dups, add_cpu * 1e6 / n);
    else
        printf("add %d memories one call at a time, %d writers at once: %.2f s, %.0f "
               "memories/s in all\n",
               n, writers, add_s, n / add_s);
    if (lat && n > 0) {
        report("add", lat, n);
        printf("add: slowest %.2f ms\n", lat[n - 1] * 1000);
    }
    free(lat);

    /* Export and import. */
    FILE *f = fopen(dump, "w");
    size_t count = 0;
    t0 = now();
    mnemo_memory_export(m, sink, f, &count);
    fclose(f);
    printf("export: %zu memories in %.2f s\n", count, now() - t0);
    mnemo *m2 = open_db(ws, db2, "import", argc, argv);
    mnemo_sync(m2, NULL, NULL);
    f = fopen(dump, "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)sz + 1);
    fread(data, 1, (size_t)sz, f);
    fclose(f);
    size_t in = 0, skip = 0;
    t0 = now();
    if (mnemo_memory_import(m2, data, (size_t)sz, &in, &skip)) {
        fprintf(stderr, "import: %s\n", mnemo_errmsg(m2));
        return 1;
    }
    double imp_s = now() - t0;
    printf("import: %zu memories in %.2f s, %.0f memories/s\n", in, imp_s, (double)in / imp_s);
    free(data);
    mnemo_close(m2);
    if (!search) {
        mnemo_close(m);
        return 0;
    }

searches:;
    /* Warm search and recall for the biggest user (half the memories). */
    int runs = 300;
    double *t = malloc((size_t)runs * sizeof *t);
    const char *mode = "keyword";
    for (int r = -20; r < runs; r++) {
        char q[256];
        snprintf(q, sizeof q, "%s %s %s", word(), word(), word());
        double s0 = now();
        if (mnemo_memory_search(m, q, "{\"user_id\":\"user0\",\"type\":\"all\"}", &out)) {
            fprintf(stderr, "search: %s\n", mnemo_errmsg(m));
            return 1;
        }
        if (strstr(out, "\"mode\":\"hybrid\""))
            mode = "hybrid";
        mnemo_free(out);
        if (r >= 0)
            t[r] = now() - s0;
    }
    char what[128];
    snprintf(what, sizeof what, "warm %s memory search, %d memories of user0", mode, n / 2);
    report(what, t, runs);
    for (int r = -5; r < runs; r++) {
        char q[512];
        snprintf(q, sizeof q,
                 "{\"user_id\":\"user0\",\"message\":\"[Telegram] what about %s and %s?\"}",
                 word(), word());
        double s0 = now();
        if (mnemo_memory_recall(m, q, &out)) {
            fprintf(stderr, "recall: %s\n", mnemo_errmsg(m));
            return 1;
        }
        mnemo_free(out);
        if (r >= 0)
            t[r] = now() - s0;
    }
    report("warm recall block (smart, with a message)", t, runs);
    free(t);
    mnemo_close(m);
    return 0;
}
