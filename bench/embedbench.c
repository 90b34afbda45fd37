/*
 * embedbench.c - the embedding pipeline against the provider test server:
 * chunks per second through mnemo's sync (batching, 4 requests in flight,
 * cache writes) versus the server's own capacity, measured in the same run
 * by a bare libcurl client that only sends prepared requests.
 *
 *   embedbench [CHUNKS] [DELAY_MS]      (default 4000 chunks, 0 ms)
 *
 * DELAY_MS makes the server wait before each answer, like a model would.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

/* The bare client: REQUESTS requests of BATCH inputs, CONC in flight. */
static double bare_client(const char *url, int requests, int batch, int conc)
{
    char body[65536];
    size_t off = (size_t)snprintf(body, sizeof body, "{\"model\":\"m\",\"input\":[");
    for (int i = 0; i < batch; i++)
        off += (size_t)snprintf(body + off, sizeof body - off,
                                "%s\"chunk %d of the benchmark with some words in it\"",
                                i ? "," : "", i);
    snprintf(body + off, sizeof body - off, "]}");
    CURLM *multi = curl_multi_init();
    CURL *easy[16];
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    int started = 0, done = 0, running = 0;
    double t0 = now();
    for (int i = 0; i < conc; i++) {
        easy[i] = curl_easy_init();
        curl_easy_setopt(easy[i], CURLOPT_URL, url);
        curl_easy_setopt(easy[i], CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(easy[i], CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, discard);
        if (started < requests) {
            curl_multi_add_handle(multi, easy[i]);
            started++;
        }
    }
    while (done < requests) {
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *e = msg->easy_handle;
            curl_multi_remove_handle(multi, e);
            done++;
            if (started < requests) {
                curl_multi_add_handle(multi, e);
                started++;
            }
        }
        curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    double dt = now() - t0;
    for (int i = 0; i < conc; i++)
        curl_easy_cleanup(easy[i]);
    curl_slist_free_all(h);
    curl_multi_cleanup(multi);
    return (double)requests * batch / dt;
}

int main(int argc, char **argv)
{
    int chunks = argc > 1 ? atoi(argv[1]) : 4000;
    int delay = argc > 2 ? atoi(argv[2]) : 0;
    ps_options o = {.dims = 384, .delay_ms = delay};
    provider_server *s = ps_start(&o);
    if (!s)
        return 1;
    char dir[] = "/tmp/mnemo-embedbench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256];
    snprintf(path, sizeof path, "%s/memory", dir);
    mkdir(path, 0755);
    /* One chunk per file, about 300 bytes each. */
    for (int i = 0; i < chunks; i++) {
        snprintf(path, sizeof path, "%s/memory/n%05d.md", dir, i);
        FILE *f = fopen(path, "w");
        fprintf(f, "# note %d\nThe deploy of service %d went fine after the migration of the "
                   "database; we agreed to watch latency, error rates and the queue depth for "
                   "a week before the next release. Follow-up owner: team %d. Ticket #%d.\n",
                i, i * 7, i % 13, 1000 + i);
        fclose(f);
    }
    char url[256], db[256];
    snprintf(url, sizeof url, "%s/v1", ps_url(s));
    snprintf(db, sizeof db, "%s/index.sqlite", dir);
    mnemo_config *cfg;
    mnemo_config_new(&cfg);
    mnemo_config_set(cfg, "workspace", dir, "bench", NULL);
    mnemo_config_set(cfg, "db", db, "bench", NULL);
    mnemo_config_set(cfg, "provider", "none", "bench", NULL);
    mnemo *m;
    mnemo_open(cfg, &m);
    mnemo_sync(m, NULL, NULL); /* keyword index first, not timed */
    mnemo_close(m);
    mnemo_config_set(cfg, "provider", "openai-compatible", "bench", NULL);
    mnemo_config_set(cfg, "baseUrl", url, "bench", NULL);
    mnemo_config_set(cfg, "model", "bench-model", "bench", NULL);
    mnemo_open(cfg, &m);
    mnemo_sync_stats st;
    double t0 = now();
    int rc = mnemo_sync(m, NULL, &st);
    double dt = now() - t0;
    if (rc) {
        fprintf(stderr, "%s\n", mnemo_errmsg(m));
        return 1;
    }
    int requests = ps_requests(s);
    double mine = (double)st.chunks_embedded / dt;
    int per_req = requests ? (int)(st.chunks_embedded / (size_t)requests) : 1;
    char eurl[300];
    snprintf(eurl, sizeof eurl, "%s/embeddings", url);
    double server = bare_client(eurl, requests, per_req > 0 ? per_req : 1, 4);
    printf("server delay %d ms, %d dims: mnemo embedded %zu chunks in %.2f s = %.0f chunks/s "
           "(%d requests, %d chunks each, %d in flight at most, %d connections)\n",
           delay, o.dims, st.chunks_embedded, dt, mine, requests, per_req, ps_max_in_flight(s),
           ps_connections(s));
    printf("server capacity (bare client, same requests, 4 in flight): %.0f chunks/s; mnemo "
           "reaches %.0f%%\n",
           server, mine / server * 100);
    mnemo_close(m);
    mnemo_config_free(cfg);
    ps_stop(s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
