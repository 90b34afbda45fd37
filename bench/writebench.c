/*
 * writebench.c - memory writes while the index is rebuilt: the latency of
 * memory adds (one handle, as an agent or the daemon makes them) while
 * another process runs `index --force` that embeds every passage again
 * through a slow provider, against the same adds with nothing else running.
 *
 *   writebench DIR [NOTES] [ADDS] [MS_PER_INPUT] [MS_PER_REQUEST]
 *       (defaults 220 notes, 300 adds, 2 ms an input, 0 ms a request)
 *
 * The provider is the test server (tests/provider_server.c) answering the
 * OpenAI wire format, slowed down per input (a model's compute) and per
 * request (a network round trip). The rebuild switches model, so nothing
 * comes from the cache. The adds embed their own text through the same
 * provider, so MS_PER_REQUEST adds to every add: that is the provider's
 * latency, not the index's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnemo.h"
#include "provider_server.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static mnemo *open_ws(const char *dir, const char *url, const char *model)
{
    char ws[4096], db[4096];
    snprintf(ws, sizeof ws, "%s/ws", dir);
    snprintf(db, sizeof db, "%s/idx.sqlite", dir);
    const char *set[][2] = {{"workspace", ws},          {"db", db},
                            {"provider", "openai-compatible"}, {"baseUrl", url},
                            {"model", model},           {"memoryBackups", "0"}};
    mnemo_config *cfg = NULL;
    mnemo *m = NULL;
    char *err = NULL;
    mnemo_config_new(&cfg);
    for (size_t i = 0; i < sizeof set / sizeof *set; i++)
        if (mnemo_config_set(cfg, set[i][0], set[i][1], "bench", &err) != MNEMO_OK) {
            fprintf(stderr, "%s\n", err ? err : set[i][0]);
            exit(1);
        }
    if (mnemo_open(cfg, &m) != MNEMO_OK) {
        fprintf(stderr, "open: %s\n", m ? mnemo_errmsg(m) : "out of memory");
        exit(1);
    }
    mnemo_config_free(cfg);
    return m;
}

/* ADDS adds on M; stops early when STOP (a child pid) has exited. Returns
 * how many were made; their latencies in MS (ms), failures in *FAILED. */
static int adds(mnemo *m, int n, const char *tag, pid_t stop, double *ms, int *failed)
{
    int k = 0;
    *failed = 0;
    for (int i = 0; i < n; i++) {
        if (stop > 0 && waitpid(stop, NULL, WNOHANG) == stop)
            break;
        char rec[256], *out = NULL;
        snprintf(rec, sizeof rec, "{\"text\":\"%s fact %d: the user waters bed %d on day %d\"}",
                 tag, i, i, i % 7);
        double t0 = now();
        int rc = mnemo_memory_add(m, rec, &out);
        ms[k++] = (now() - t0) * 1000.0;
        if (rc) {
            (*failed)++;
            fprintf(stderr, "add: %s\n", mnemo_errmsg(m));
        }
        mnemo_free(out);
        usleep(20000);
    }
    return k;
}

static void report(const char *what, double *ms, int n, int failed)
{
    if (n == 0) {
        printf("| %-38s | %5d | %8s | %8s | %8s | %6d |\n", what, 0, "-", "-", "-", failed);
        return;
    }
    qsort(ms, (size_t)n, sizeof *ms, by_double);
    printf("| %-38s | %5d | %8.1f | %8.1f | %8.1f | %6d |\n", what, n, ms[n / 2],
           ms[(int)(0.99 * (n - 1))], ms[n - 1], failed);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: writebench DIR [NOTES] [ADDS] [MS_PER_INPUT] [MS_PER_REQUEST]\n");
        return 2;
    }
    const char *dir = argv[1];
    int notes = argc > 2 ? atoi(argv[2]) : 220, nadd = argc > 3 ? atoi(argv[3]) : 300;
    int per_input = argc > 4 ? atoi(argv[4]) : 2, per_request = argc > 5 ? atoi(argv[5]) : 0;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && \"$(dirname '%s')/gen\" '%s/ws' %d >/dev/null",
             dir, dir, argv[0], dir, notes);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot make the workspace\n");
        return 1;
    }
    ps_options o = {.dims = 64};
    provider_server *s = ps_start(&o);
    if (!s)
        return 1;
    char url[160];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    mnemo *m = open_ws(dir, url, "m1");
    if (mnemo_sync(m, NULL, NULL) != MNEMO_OK) {
        fprintf(stderr, "index: %s\n", mnemo_errmsg(m));
        return 1;
    }
    mnemo_close(m);
    o.delay_ms = per_request;
    o.delay_per_input_ms = per_input;
    ps_set(s, &o);

    double *ms = malloc((size_t)nadd * sizeof *ms);
    int failed = 0, n;
    printf("%d notes; the provider takes %d ms a request and %d ms an input\n\n", notes,
           per_request, per_input);
    printf("| %-38s | %5s | %8s | %8s | %8s | %6s |\n", "memory adds", "adds", "p50 ms", "p99 ms",
           "max ms", "failed");
    printf("|%s|-------|----------|----------|----------|--------|\n",
           "----------------------------------------");
    /* Alone: each add embeds its text (the store's vectors are m1's). */
    m = open_ws(dir, url, "m1");
    n = adds(m, nadd / 3, "idle", 0, ms, &failed);
    report("nothing else running", ms, n, failed);
    mnemo_close(m);
    /* The rebuild's model: its adds embed once the rebuild has reset the
     * memories' vectors for it, in its first moments. */
    m = open_ws(dir, url, "m2");

    double t0 = now();
    pid_t p = fork();
    if (p == 0) {
        mnemo *r = open_ws(dir, url, "m2");
        mnemo_sync_opts so = {.force = 1};
        int rc = mnemo_sync(r, &so, NULL);
        if (rc)
            fprintf(stderr, "rebuild: %s\n", mnemo_errmsg(r));
        mnemo_close(r);
        _exit(rc ? 1 : 0);
    }
    usleep(300000); /* the rebuild is embedding by now */
    n = adds(m, nadd, "busy", p, ms, &failed);
    int status = 0;
    waitpid(p, &status, 0);
    double built = now() - t0;
    report("during index --force", ms, n, failed);
    printf("\nthe rebuild took %.1f s (exit %d); %d adds ran beside it\n", built,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, n);
    mnemo_close(m);
    free(ms);
    ps_stop(s);
    return 0;
}
