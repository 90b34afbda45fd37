/*
 * readbench.c - read throughput: PROCS client processes, each with its own
 * handle, searching back to back for SECONDS (after a warm-up), as many
 * agents reading one shared memory do. Prints the searches per second of
 * all of them together, latency percentiles over all searches, and where
 * the reads went (with store.readDsns: how many processes read from a
 * replica at the end, from the status's "reads").
 *
 *   readbench WORKSPACE DB QUERIES [--procs N] [--seconds S] [--warmup S]
 *             [--set KEY=VALUE ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnemo.h"

#define MAX_PROCS 64
#define MAX_LAT 200000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* One client: searches until the deadline, then writes its count, its
 * latencies (ms, float) and where its last read went to FD. */
static int client(mnemo_config *cfg, char **queries, int nq, int id, double warmup,
                  double seconds, int fd)
{
    mnemo *m;
    if (mnemo_open(cfg, &m)) {
        fprintf(stderr, "client %d: %s\n", id, mnemo_errmsg(m));
        return 1;
    }
    float *lat = malloc(MAX_LAT * sizeof *lat);
    if (!lat)
        return 1;
    int n = 0, q = id * 17;
    double start = now(), end = start + warmup + seconds;
    for (double t = start; t < end; t = now()) {
        mnemo_results *res;
        double t0 = now();
        if (mnemo_search(m, queries[q++ % nq], NULL, &res)) {
            fprintf(stderr, "client %d: %s\n", id, mnemo_errmsg(m));
            return 1;
        }
        mnemo_results_free(res);
        double t1 = now();
        if (t0 >= start + warmup && n < MAX_LAT)
            lat[n++] = (float)((t1 - t0) * 1000.0);
    }
    char *st = NULL;
    int replica = !mnemo_status_json(m, 0, &st) && st &&
                  strstr(st, "\"last\":{\"server\":\"replica\"") != NULL;
    mnemo_free(st);
    mnemo_close(m);
    int head[2] = {n, replica};
    if (write(fd, head, sizeof head) != (ssize_t)sizeof head ||
        write(fd, lat, (size_t)n * sizeof *lat) != (ssize_t)((size_t)n * sizeof *lat))
        return 1;
    free(lat);
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: readbench WORKSPACE DB QUERIES [--procs N] [--seconds S] "
                        "[--warmup S] [--set K=V ...]\n");
        return 2;
    }
    int procs = 4;
    double seconds = 10, warmup = 2;
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    mnemo_config_set(cfg, "workspace", argv[1], "bench", NULL);
    mnemo_config_set(cfg, "db", argv[2], "bench", NULL);
    mnemo_config_load_standard(cfg, NULL, NULL);
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--procs") && i + 1 < argc)
            procs = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
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
    if (procs < 1 || procs > MAX_PROCS || seconds <= 0) {
        fprintf(stderr, "--procs 1..%d, --seconds > 0\n", MAX_PROCS);
        return 2;
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
    int fds[MAX_PROCS];
    pid_t pids[MAX_PROCS];
    fflush(stdout);
    for (int i = 0; i < procs; i++) {
        int p[2];
        if (pipe(p) != 0)
            return 1;
        if ((pids[i] = fork()) == 0) {
            close(p[0]);
            _exit(client(cfg, queries, nq, i, warmup, seconds, p[1]));
        }
        close(p[1]);
        fds[i] = p[0];
    }
    float *all = malloc((size_t)procs * MAX_LAT * sizeof *all);
    size_t total = 0;
    int on_replica = 0, bad = 0;
    for (int i = 0; i < procs; i++) {
        int head[2];
        if (read_all(fds[i], head, sizeof head) ||
            read_all(fds[i], all + total, (size_t)head[0] * sizeof *all)) {
            bad = 1;
        } else {
            total += (size_t)head[0];
            on_replica += head[1];
        }
        close(fds[i]);
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    }
    if (bad || !total) {
        fprintf(stderr, "a client failed\n");
        return 1;
    }
    qsort(all, total, sizeof *all, cmp);
    printf("procs %d  seconds %.0f  searches %zu  %.1f searches/s  p50 %.2f ms  p99 %.2f ms  "
           "last read on a replica: %d of %d\n",
           procs, seconds, total, (double)total / seconds, all[total / 2],
           all[total * 99 / 100], on_replica, procs);
    free(all);
    for (int i = 0; i < nq; i++)
        free(queries[i]);
    mnemo_config_free(cfg);
    return 0;
}
