/*
 * test_serve.c - mnemo serve over real loopback HTTP: the JSON API equals
 * the CLI's --json output, memories over HTTP, bad input, the bearer token,
 * the pid lock, SIGTERM and SIGKILL during writes, concurrent writers,
 * clients that vanish, crowds of idle and slow connections, requests whose
 * end is in doubt, the workspace watch, and MCP at /mcp.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "util/buf.h"

/* ---- a daemon under test ---- */

typedef struct daemon_proc {
    pid_t pid;
    int port;
} daemon_proc;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts mnemo serve on workspace "ws", index "db.sqlite", with EXTRA
 * arguments (NULL-terminated) after "serve". Returns 0 when it listens. */
static int start_daemon(daemon_proc *d, const char *first, ...)
{
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)test_bin();
    argv[n++] = "--workspace";
    argv[n++] = (char *)test_path("ws");
    argv[n++] = "--db";
    argv[n++] = (char *)test_path("db.sqlite");
    argv[n++] = "--set";
    argv[n++] = "watchDebounceMs=100";
    argv[n++] = "serve";
    int listen_given = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 28; a = va_arg(ap, const char *)) {
        listen_given |= strcmp(a, "--listen") == 0;
        argv[n++] = (char *)a;
    }
    va_end(ap);
    if (!listen_given) {
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
    }
    argv[n] = NULL;
    unlink(test_path("db.sqlite.serve.pid"));
    d->pid = fork();
    if (d->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no daemon outlives a failed test */
        int fe = open(test_path("serve.log"), O_WRONLY | O_CREAT | O_APPEND, 0600);
        int fi = open("/dev/null", O_RDONLY);
        dup2(fi, 0);
        dup2(fe, 1);
        dup2(fe, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    double t0 = now_s();
    while (now_s() - t0 < 10) {
        char *pid = test_read(test_path("db.sqlite.serve.pid"), NULL);
        json_t *j = pid ? json_loads(pid, 0, NULL) : NULL;
        free(pid);
        const char *url = json_string_value(json_object_get(j, "url"));
        const char *colon = url ? strrchr(url, ':') : NULL;
        if (colon) {
            d->port = (int)strtol(colon + 1, NULL, 10);
            json_decref(j);
            return 0;
        }
        json_decref(j);
        int st;
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(10000);
    }
    return -1;
}

/* Sends SIG and returns the exit status. */
static int stop_daemon(daemon_proc *d, int sig)
{
    if (d->pid <= 0)
        return -1;
    kill(d->pid, sig);
    int st = 0;
    waitpid(d->pid, &st, 0);
    d->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- a small HTTP/1.1 client ---- */

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends the raw request REQ on a fresh connection; GOT gets the start of
 * the reply. */
static void raw(int port, const char *req, char *got, size_t cap)
{
    int fd = connect_port(port);
    send_all(fd, req, strlen(req));
    ssize_t r = recv(fd, got, cap - 1, 0);
    got[r > 0 ? r : 0] = 0;
    close(fd);
}

/* One request on a fresh connection. HEADERS: extra lines, each ending in
 * "\r\n" (may be NULL). Returns the status; *body gets the response body. */
static int http(int port, const char *method, const char *path, const char *headers,
                const char *body, char **resp)
{
    if (resp)
        *resp = NULL;
    int fd = connect_port(port);
    if (fd < 0)
        return -1;
    size_t blen = body ? strlen(body) : 0;
    char head[4096];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s"
                     "Content-Length: %zu\r\n\r\n",
                     method, path, body ? "Content-Type: application/json\r\n" : "",
                     headers ? headers : "", blen);
    if (send_all(fd, head, (size_t)n) || (blen && send_all(fd, body, blen))) {
        close(fd);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    char *rb = malloc(cap);
    ssize_t r;
    while ((r = recv(fd, rb + len, cap - len - 1, 0)) > 0) {
        len += (size_t)r;
        if (len + 1 == cap)
            rb = realloc(rb, cap *= 2);
    }
    close(fd);
    rb[len] = 0;
    int status = -1;
    sscanf(rb, "HTTP/1.%*d %d", &status);
    char *b = strstr(rb, "\r\n\r\n");
    if (resp)
        *resp = strdup(b ? b + 4 : "");
    free(rb);
    return status;
}

static json_t *http_json(int port, const char *method, const char *path, const char *body,
                         int *status)
{
    char *resp = NULL;
    *status = http(port, method, path, NULL, body, &resp);
    json_t *j = resp ? json_loads(resp, 0, NULL) : NULL;
    free(resp);
    return j;
}

static void workspace(void)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- The billing service runs on host zephyr-7.\n"
                               "- Deploys go through the acme/billing pipeline.\n");
    test_write("ws/memory/2026-11-20.md", "# Notes\n\nMigrated the orders database to "
                                          "Postgres 16 with logical replication.\n");
}

/* ---- the API equals the CLI ---- */

TEST(serve_api_matches_cli)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    char *resp = NULL;
    ASSERT_EQ(http(d.port, "GET", "/health", NULL, NULL, &resp), 200);
    ASSERT_CONTAINS(resp, "\"ok\":true");
    ASSERT_CONTAINS(resp, "\"workspace\":");
    free(resp);

    char *cli = NULL;
    ASSERT_EQ(test_cli(&cli, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "search", "--json", "-n", "3", "billing host",
                       NULL),
              0);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"billing host\",\"maxResults\":3}",
                   &resp),
              200);
    ASSERT_STR_EQ(resp, cli);
    ASSERT_CONTAINS(resp, "MEMORY.md#L3-L3");
    free(resp);
    free(cli);

    ASSERT_EQ(test_cli(&cli, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "get", "--json", "memory/2026-11-20.md", "--from",
                       "3", "--lines", "1", NULL),
              0);
    ASSERT_EQ(http(d.port, "POST", "/v1/get", NULL,
                   "{\"path\":\"memory/2026-11-20.md\",\"from\":3,\"lines\":1}", &resp),
              200);
    ASSERT_STR_EQ(resp, cli);
    free(resp);
    free(cli);

    test_write("ws/USER.md", "# User\n\n- Never deploy on Fridays. <!-- trigger: deploy friday -->\n");
    usleep(300000); /* the watch picks USER.md up; recall reads files as indexed */
    for (int i = 0; i < 50; i++) {
        ASSERT_EQ(test_cli(&cli, NULL, NULL, "--workspace", test_path("ws"), "--db",
                           test_path("db.sqlite"), "recall", "--json", "--triggers", "--message",
                           "can we deploy on friday?", NULL),
                  0);
        if (strstr(cli, "USER.md#L3"))
            break;
        free(cli);
        cli = NULL;
        usleep(100000);
    }
    ASSERT_CONTAINS(cli, "USER.md#L3");
    ASSERT_EQ(http(d.port, "POST", "/v1/recall", NULL,
                   "{\"message\":\"can we deploy on friday?\",\"triggers\":true}", &resp),
              200);
    ASSERT_STR_EQ(resp, cli);
    free(resp);
    free(cli);

    /* Paths stay confined to the memory roots. */
    ASSERT_EQ(http(d.port, "POST", "/v1/get", NULL, "{\"path\":\"../../etc/passwd\"}", &resp), 403);
    ASSERT_CONTAINS(resp, "\"code\":\"denied\"");
    free(resp);

    ASSERT_EQ(http(d.port, "GET", "/v1/status", NULL, NULL, &resp), 200);
    ASSERT_CONTAINS(resp, "\"files\"");
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/v1/nothing", NULL, "{}", &resp), 404);
    ASSERT_CONTAINS(resp, "\"code\":\"not_found\"");
    free(resp);
    ASSERT_EQ(http(d.port, "GET", "/v1/search", NULL, NULL, &resp), 405);
    free(resp);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
    ASSERT(access(test_path("db.sqlite.serve.pid"), F_OK) != 0); /* removed on exit */
}

TEST(serve_memories)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    int st;
    json_t *m = http_json(d.port, "POST", "/v1/memories",
                          "{\"text\":\"User prefers dark mode\",\"category\":\"preference\"}", &st);
    ASSERT_EQ(st, 201);
    const char *id = json_string_value(json_object_get(m, "id"));
    ASSERT(id && strlen(id) == 36);
    char path[128], *resp;
    snprintf(path, sizeof path, "/v1/memories/%s", id);

    json_t *g = http_json(d.port, "GET", path, NULL, &st);
    ASSERT_EQ(st, 200);
    ASSERT_STR_EQ(json_string_value(json_object_get(g, "text")), "User prefers dark mode");
    json_decref(g);

    g = http_json(d.port, "PATCH", path, "{\"text\":\"User prefers light mode\"}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_STR_EQ(json_string_value(json_object_get(g, "text")), "User prefers light mode");
    json_decref(g);

    g = http_json(d.port, "POST", "/v1/memories/search", "{\"query\":\"light mode\"}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_array_size(json_object_get(g, "results")), 1);
    json_decref(g);

    /* The CLI sees what the daemon stored. */
    char *cli = NULL;
    ASSERT_EQ(test_cli(&cli, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "memory", "get", "--json", id, NULL),
              0);
    ASSERT_CONTAINS(cli, "light mode");
    free(cli);

    ASSERT_EQ(http(d.port, "PATCH", path, NULL, "{\"id\":\"other\",\"text\":\"x\"}", &resp), 400);
    free(resp);
    ASSERT_EQ(http(d.port, "DELETE", path, NULL, NULL, &resp), 200);
    ASSERT_CONTAINS(resp, id);
    free(resp);
    st = http(d.port, "DELETE", path, NULL, NULL, &resp);
    ASSERT_CONTAINS(resp, "not_found");
    ASSERT_EQ(st, 404);
    free(resp);
    g = http_json(d.port, "POST", "/v1/memories/list", "{}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(g, "total")), 0);
    json_decref(g);
    ASSERT_EQ(http(d.port, "GET", "/v1/memories/00000000-0000-4000-8000-000000000000", NULL,
                   NULL, &resp),
              404);
    free(resp);
    /* Credentials are refused. */
    ASSERT_EQ(http(d.port, "POST", "/v1/memories", NULL,
                   "{\"text\":\"api key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\"}",
                   &resp),
              400);
    free(resp);
    json_decref(m);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_openapi_and_memory_operations)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    int st;
    /* The description lists every operation of the table, at its route. */
    json_t *api = http_json(d.port, "GET", "/openapi.json", NULL, &st);
    ASSERT_EQ(st, 200);
    ASSERT_STR_EQ(json_string_value(json_object_get(api, "openapi")), "3.1.0");
    json_t *paths = json_object_get(api, "paths");
    static const char *const routes[][3] = {
        {"/v1/search", "post", "search"},
        {"/v1/get", "post", "get"},
        {"/v1/recall", "post", "recall"},
        {"/v1/memories", "post", "memory_add"},
        {"/v1/memories/{id}", "get", "memory_get"},
        {"/v1/memories/{id}", "patch", "memory_update"},
        {"/v1/memories/{id}", "delete", "memory_delete"},
        {"/v1/memories/{id}/history", "get", "memory_history"},
        {"/v1/memories/{id}/confirm", "post", "memory_confirm"},
        {"/v1/memories/{id}/restore", "post", "memory_restore"},
        {"/v1/memories/search", "post", "memory_search"},
        {"/v1/memories/list", "post", "memory_list"},
        {"/v1/memories/counts", "post", "memory_counts"},
        {"/v1/memories/purge", "post", "memory_purge"},
        {"/v1/memories/export", "get", "memory_export"},
        {"/v1/memories/import", "post", "memory_import"},
        {"/v1/status", "get", "status"},
        {"/v1/files", "get", "files"},
        {"/v1/timeline", "post", "timeline"},
    };
    size_t nops = 0;
    const char *k;
    json_t *v;
    json_object_foreach(paths, k, v) nops += json_object_size(v);
    ASSERT_EQ(nops, sizeof routes / sizeof *routes + 3); /* + /health, /mcp, /v1/events */
    ASSERT_STR_EQ(json_string_value(json_object_get(
                      json_object_get(json_object_get(paths, "/v1/events"), "get"), "operationId")),
                  "events");
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        json_t *op = json_object_get(json_object_get(paths, routes[i][0]), routes[i][1]);
        if (!op)
            test_fail(__FILE__, __LINE__, "openapi.json lacks %s %s", routes[i][1], routes[i][0]);
        ASSERT_STR_EQ(json_string_value(json_object_get(op, "operationId")), routes[i][2]);
        ASSERT(json_object_get(json_object_get(op, "responses"), "default") != NULL);
    }
    json_t *sb = json_object_get(json_object_get(json_object_get(json_object_get(
                     json_object_get(json_object_get(paths, "/v1/search"), "post"), "requestBody"),
                     "content"), "application/json"), "schema");
    ASSERT(json_object_get(json_object_get(sb, "properties"), "kinds") != NULL);
    /* And by a validator of the OpenAPI specification, where installed. */
    char *doc = json_dumps(api, 0);
    test_write("openapi.json", doc);
    free(doc);
    if (system("python3 -c 'import openapi_spec_validator' 2>/dev/null") == 0) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import json,sys; from openapi_spec_validator import validate; "
                 "validate(json.load(open(sys.argv[1])))' '%s' 2>'%s'",
                 test_path("openapi.json"), test_path("validate.err"));
        if (system(cmd) != 0) {
            char *e = test_read(test_path("validate.err"), NULL);
            test_fail(__FILE__, __LINE__, "openapi.json is not valid OpenAPI: %s", e ? e : "");
        }
    } else {
        printf("    (openapi-spec-validator not installed: structure checked only)\n");
    }
    json_decref(api);
    /* History, confirm, export, purge and import over HTTP. */
    json_t *m = http_json(d.port, "POST", "/v1/memories",
                          "{\"text\":\"Deploys happen on Tuesdays\",\"category\":\"rule\"}", &st);
    ASSERT_EQ(st, 201);
    char id[64], path[160], *resp = NULL;
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(m, "id")));
    json_decref(m);
    snprintf(path, sizeof path, "/v1/memories/%s/confirm", id);
    m = http_json(d.port, "POST", path, NULL, &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(m, "confirmations")), 1);
    json_decref(m);
    snprintf(path, sizeof path, "/v1/memories/%s/history", id);
    m = http_json(d.port, "GET", path, NULL, &st);
    ASSERT_EQ(st, 200);
    json_t *h = json_object_get(m, "history");
    ASSERT_EQ(json_array_size(h), 2);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(h, 0), "event")), "ADD");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(h, 1), "event")), "CONFIRM");
    json_decref(m);
    ASSERT_EQ(http(d.port, "POST", path, NULL, NULL, &resp), 405); /* history takes GET */
    free(resp);
    json_t *ex = http_json(d.port, "GET", "/v1/memories/export", NULL, &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(ex, "count")), 1);
    snprintf(path, sizeof path, "/v1/memories/%s", id);
    ASSERT_EQ(http(d.port, "DELETE", path, NULL, NULL, &resp), 200);
    free(resp);
    m = http_json(d.port, "POST", "/v1/memories/purge", "{}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(m, "purged")), 1);
    json_decref(m);
    ASSERT_EQ(http(d.port, "GET", path, NULL, NULL, &resp), 404);
    free(resp);
    /* The export brings it back. */
    json_t *body = json_pack("{s:O}", "memories", json_object_get(ex, "memories"));
    char *bs = json_dumps(body, JSON_COMPACT);
    m = http_json(d.port, "POST", "/v1/memories/import", bs, &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(m, "imported")), 1);
    json_decref(m);
    m = http_json(d.port, "POST", "/v1/memories/import", bs, &st);
    ASSERT_EQ(json_integer_value(json_object_get(m, "skipped")), 1);
    json_decref(m);
    free(bs);
    json_decref(body);
    json_decref(ex);
    m = http_json(d.port, "GET", path, NULL, &st);
    ASSERT_EQ(st, 200);
    ASSERT_STR_EQ(json_string_value(json_object_get(m, "text")), "Deploys happen on Tuesdays");
    json_decref(m);
    /* The unified search over HTTP finds the fact. */
    m = http_json(d.port, "POST", "/v1/search", "{\"query\":\"deploys tuesdays\"}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_STR_EQ(json_string_value(json_object_get(
                      json_array_get(json_object_get(m, "results"), 0), "kind")),
                  "fact");
    json_decref(m);
    ASSERT_EQ(http(d.port, "GET", "/v1/nothing", NULL, NULL, &resp), 404);
    ASSERT_CONTAINS(resp, "openapi.json");
    free(resp);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

/* Memories per week over HTTP, and the overview's timeline that reads them. */
TEST(serve_memory_counts_and_timeline)
{
    workspace();
    setenv("MNEMO_NOW", "2026-12-03T10:00:00Z", 1); /* a Thursday */
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    static const char *const recs[] = {
        "{\"text\":\"User prefers dark mode\",\"category\":\"preference\"}",
        "{\"text\":\"User prefers tea\",\"category\":\"preference\"}",
        "{\"text\":\"Deploys happen on Tuesdays\",\"category\":\"rule\"}",
        "{\"text\":\"Bob likes coffee\",\"user_id\":\"bob\"}",
    };
    int st;
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
        json_t *m = http_json(d.port, "POST", "/v1/memories", recs[i], &st);
        ASSERT_EQ(st, 201);
        json_decref(m);
    }
    json_t *c = http_json(d.port, "POST", "/v1/memories/counts", "{}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(c, "total")), 3);
    json_t *b = json_array_get(json_object_get(c, "buckets"), 0);
    ASSERT_EQ(json_array_size(json_object_get(c, "buckets")), 1);
    ASSERT_STR_EQ(json_string_value(json_object_get(b, "start")), "2026-11-30T00:00:00Z");
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(b, "byCategory"), "preference")),
              2);
    json_decref(c);
    c = http_json(d.port, "POST", "/v1/memories/counts", "{\"user_id\":\"bob\",\"bucket\":\"day\"}",
                  &st);
    ASSERT_EQ(st, 200);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(json_object_get(c, "buckets"), 0),
                                                    "start")),
                  "2026-12-03T00:00:00Z");
    json_decref(c);
    char *resp = NULL;
    ASSERT_EQ(http(d.port, "POST", "/v1/memories/counts", NULL, "{\"bucket\":\"year\"}", &resp),
              400);
    ASSERT_CONTAINS(resp, "bucket");
    free(resp);
    /* The overview: the facts of the week by category, beside the notes. */
    json_t *t = http_json(d.port, "POST", "/v1/timeline", "{}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(t, "facts")), 3);
    size_t i;
    json_t *w, *week = NULL;
    json_array_foreach(json_object_get(t, "weeks"), i, w) {
        if (strcmp(json_string_value(json_object_get(w, "week")), "2026-11-30") == 0)
            week = w;
    }
    ASSERT(week != NULL);
    json_t *facts = json_object_get(week, "facts");
    ASSERT_EQ(json_integer_value(json_object_get(facts, "preference")), 2);
    ASSERT_EQ(json_integer_value(json_object_get(facts, "rule")), 1);
    ASSERT_EQ(json_object_size(facts), 2);
    json_decref(t);
    t = http_json(d.port, "POST", "/v1/timeline", "{\"user_id\":\"bob\"}", &st);
    ASSERT_EQ(json_integer_value(json_object_get(t, "facts")), 1);
    json_decref(t);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
    unsetenv("MNEMO_NOW");
}

TEST(serve_bad_input)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, "--max-body", "4096", NULL), 0);
    char *resp;
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":", &resp), 400);
    ASSERT_CONTAINS(resp, "invalid JSON body");
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "[1,2]", &resp), 400);
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"x\",\"maxResult\":3}", &resp),
              400);
    ASSERT_CONTAINS(resp, "unknown argument 'maxResult'");
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"x\",\"maxResults\":\"3\"}",
                   &resp),
              400);
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{}", &resp), 400);
    ASSERT_CONTAINS(resp, "missing argument 'query'");
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"\\u0000\\udc00 x\"}", &resp),
              400); /* jansson refuses NUL and lone surrogates */
    free(resp);

    /* Oversized: announced, and sent without a length (chunked). */
    size_t big = 100000;
    char *huge = malloc(big + 32);
    snprintf(huge, big + 32, "{\"query\":\"%0*d\"}", (int)big, 7);
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, huge, &resp), 413);
    free(resp);
    int fd = connect_port(d.port);
    const char *h = "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    send_all(fd, h, strlen(h));
    char chunk[64];
    for (int i = 0; i < 8; i++) {
        snprintf(chunk, sizeof chunk, "%x\r\n", 1000);
        send_all(fd, chunk, strlen(chunk));
        send_all(fd, huge + 10, 1000);
        send_all(fd, "\r\n", 2);
    }
    send_all(fd, "0\r\n\r\n", 5);
    char got[512] = "";
    ssize_t r = recv(fd, got, sizeof got - 1, 0);
    got[r > 0 ? r : 0] = 0;
    close(fd);
    ASSERT_CONTAINS(got, " 413 ");
    free(huge);

    /* Headers past the cap. */
    size_t hn = 100000;
    char *hdr = malloc(hn + 32);
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'a', hn);
    memcpy(hdr + 7 + hn, "\r\n", 3);
    int status = http(d.port, "GET", "/health", hdr, NULL, &resp);
    ASSERT(status == 431 || status == 413 || status == -1 || status == 400);
    free(resp);
    free(hdr);

    /* Browsers: a foreign Origin, and a text/plain body (a form post). */
    ASSERT_EQ(http(d.port, "GET", "/health", "Origin: http://evil.example\r\n", NULL, &resp), 403);
    free(resp);
    raw(d.port,
        "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
        "Content-Length: 10\r\nConnection: close\r\n\r\n{\"text\":1}",
        got, sizeof got);
    ASSERT_CONTAINS(got, " 415 ");

    /* DNS rebinding: a page on evil.example resolved to 127.0.0.1. */
    raw(d.port,
        "GET /v1/status HTTP/1.1\r\nHost: evil.example:8080\r\nConnection: close\r\n\r\n",
        got, sizeof got);
    ASSERT_CONTAINS(got, " 403 ");
    /* Content types: a look-alike, and a non-JSON type without a body. */
    raw(d.port,
        "POST /v1/search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/jsonx\r\n"
        "Content-Length: 13\r\nConnection: close\r\n\r\n{\"query\":\"x\"}",
        got, sizeof got);
    ASSERT_CONTAINS(got, " 415 ");
    raw(d.port,
        "POST /v1/memories/list HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
        "Content-Length: 0\r\nConnection: close\r\n\r\n",
        got, sizeof got);
    ASSERT_CONTAINS(got, " 415 ");
    /* Methods: 405 with the methods that work. */
    raw(d.port,
        "POST /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n",
        got, sizeof got);
    ASSERT_CONTAINS(got, " 405 ");
    ASSERT_CONTAINS(got, "Allow: GET");
    /* Names cut inside a character still give a JSON error. */
    char key[400] = "{\"";
    for (int i = 0; i < 120; i++)
        strcat(key, "\xc3\xa9"); /* é */
    strcat(key, "\":1}");
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, key, &resp), 400);
    json_t *ej = json_loads(resp, 0, NULL);
    ASSERT(ej != NULL);
    ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(ej, "error"), "message")),
                    "unknown argument");
    json_decref(ej);
    free(resp);
    ASSERT_EQ(http(d.port, "GET", "/nope\xff\xfe", NULL, NULL, &resp), 404);
    ASSERT_CONTAINS(resp, "\"code\":\"not_found\"");
    free(resp);

    /* The daemon is still there after all that. */
    ASSERT_EQ(http(d.port, "GET", "/health", NULL, NULL, &resp), 200);
    free(resp);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_token)
{
    workspace();
    daemon_proc d;
    /* Off loopback without a token: refused. */
    ASSERT_EQ(start_daemon(&d, "--listen", "0.0.0.0:0", NULL), 2);
    char *log = test_read(test_path("serve.log"), NULL);
    ASSERT_CONTAINS(log, "not a loopback address");
    free(log);
    /* An empty token file: refused, not taken as "no token". */
    test_write("empty-token", "\n");
    chmod(test_path("empty-token"), 0600);
    ASSERT_EQ(start_daemon(&d, "--token-file", test_path("empty-token"), NULL), 2);
    /* A token file others can read: refused. */
    test_write("token", "0123456789abcdef0123\n");
    chmod(test_path("token"), 0644);
    ASSERT_EQ(start_daemon(&d, "--token-file", test_path("token"), NULL), 2);
    chmod(test_path("token"), 0600);
    ASSERT_EQ(start_daemon(&d, "--listen", "0.0.0.0:0", "--token-file", test_path("token"), NULL),
              0);
    char *resp;
    ASSERT_EQ(http(d.port, "GET", "/health", NULL, NULL, &resp), 401);
    ASSERT_CONTAINS(resp, "bearer token");
    free(resp);
    ASSERT_EQ(http(d.port, "GET", "/health", "Authorization: Bearer 0123456789abcdef0124\r\n",
                   NULL, &resp),
              401);
    free(resp);
    ASSERT_EQ(http(d.port, "GET", "/health", "Authorization: Bearer 0123456789abcdef012\r\n",
                   NULL, &resp),
              401); /* a prefix is not enough */
    free(resp);
    ASSERT_EQ(http(d.port, "GET", "/health", "Authorization: bearer 0123456789abcdef0123\r\n",
                   NULL, &resp),
              200); /* the scheme is case-insensitive */
    free(resp);
    int code = http(d.port, "POST", "/v1/search", "Authorization: Bearer 0123456789abcdef0123\r\n",
                    "{\"query\":\"zephyr\"}", &resp);
    if (code != 200)
        test_fail(__FILE__, __LINE__, "search with the token: %d %s", code, resp);
    ASSERT_CONTAINS(resp, "zephyr");
    free(resp);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
    /* The token never reaches the log. */
    log = test_read(test_path("serve.log"), NULL);
    ASSERT_NOT_CONTAINS(log, "0123456789abcdef");
    free(log);
}

TEST(serve_listen_port_range_and_bound_address)
{
    workspace();
    daemon_proc d;
    /* A port past 65535 is refused, not taken modulo 65536. */
    static const char *const bad[] = {"127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:-1",
                                      "127.0.0.1:", "127.0.0.1:http"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        unlink(test_path("serve.log"));
        ASSERT_EQ(start_daemon(&d, "--listen", bad[i], NULL), 2);
        char *log = test_read(test_path("serve.log"), NULL);
        ASSERT(log != NULL);
        ASSERT_CONTAINS(log, "the port must be a number from 0 to 65535");
        free(log);
    }
    /* A wildcard: the log names it and the port the kernel gave, and the
     * URL this host reaches it at. */
    test_write("token", "0123456789abcdef0123\n");
    chmod(test_path("token"), 0600);
    unlink(test_path("serve.log"));
    ASSERT_EQ(start_daemon(&d, "--listen", "0.0.0.0:0", "--token-file", test_path("token"), NULL),
              0);
    ASSERT(d.port > 0 && d.port <= 65535);
    char want[128], url[128];
    snprintf(want, sizeof want, "listening on 0.0.0.0:%d, ", d.port);
    snprintf(url, sizeof url, "http://127.0.0.1:%d from this host", d.port);
    char *log = NULL;
    for (int i = 0; i < 500; i++) { /* the line follows the pid file */
        free(log);
        log = test_read(test_path("serve.log"), NULL);
        if (log && strstr(log, "listening on"))
            break;
        usleep(10000);
    }
    ASSERT(log != NULL);
    ASSERT_CONTAINS(log, want);
    ASSERT_CONTAINS(log, url);
    free(log);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_pid_lock)
{
    workspace();
    daemon_proc a, b;
    ASSERT_EQ(start_daemon(&a, NULL), 0);
    char *err = NULL;
    int rc = test_cli(NULL, &err, NULL, "--workspace", test_path("ws"), "--db",
                      test_path("db.sqlite"), "serve", "--listen", "127.0.0.1:0", NULL);
    ASSERT_EQ(rc, 6);
    ASSERT_CONTAINS(err, "already serves this index");
    free(err);
    ASSERT_EQ(stop_daemon(&a, SIGTERM), 0);
    /* A daemon killed hard leaves its pid file, but not its lock. */
    ASSERT_EQ(start_daemon(&a, NULL), 0);
    ASSERT_EQ(stop_daemon(&a, SIGKILL), 128 + SIGKILL);
    ASSERT_EQ(start_daemon(&b, NULL), 0);
    ASSERT_EQ(stop_daemon(&b, SIGTERM), 0);
}

/* --parent PID: the daemon stops by itself, cleanly (pid file removed), once
 * PID is gone; not before. */
TEST(serve_parent_gone_stops)
{
    workspace();
    pid_t parent = fork();
    if (parent == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pause();
        _exit(0);
    }
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)parent);
    daemon_proc a;
    ASSERT_EQ(start_daemon(&a, "--parent", pid, NULL), 0);
    usleep(1500 * 1000); /* more than one check: still serving while PID lives */
    ASSERT_EQ(waitpid(a.pid, NULL, WNOHANG), 0);
    kill(parent, SIGKILL);
    waitpid(parent, NULL, 0);
    double t0 = now_s();
    int st = 0, gone = 0;
    while (!gone && now_s() - t0 < 5) {
        gone = waitpid(a.pid, &st, WNOHANG) == a.pid;
        if (!gone)
            usleep(20000);
    }
    ASSERT(gone);
    a.pid = 0;
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ASSERT(access(test_path("db.sqlite.serve.pid"), F_OK) != 0);
    char *log = test_read(test_path("serve.log"), NULL);
    ASSERT_CONTAINS(log, "the parent process is gone");
    free(log);
    char *err = NULL;
    ASSERT_EQ(test_cli(NULL, &err, NULL, "--workspace", test_path("ws"), "serve", "--parent",
                       "0", NULL),
              2);
    free(err);
}

/* ---- writes under fire ---- */

typedef struct writer {
    int port, first, count;
    char ids[64][40];
    int acked;
} writer;

static void *write_memories(void *arg)
{
    writer *w = arg;
    for (int i = 0; i < w->count; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"text\":\"fact number %d about the fleet\"}", w->first + i);
        int st;
        json_t *j = http_json(w->port, "POST", "/v1/memories", body, &st);
        if (st == 201 && j) {
            snprintf(w->ids[w->acked++], 40, "%s", json_string_value(json_object_get(j, "id")));
        }
        json_decref(j);
        if (st != 201)
            break;
    }
    return NULL;
}

/* Every acknowledged memory is stored; the index passes integrity_check. */
static void check_acked(writer *w, int nw)
{
    mnemo *m = test_open("ws", "db.sqlite", NULL);
    for (int k = 0; k < nw; k++)
        for (int i = 0; i < w[k].acked; i++) {
            char *out = NULL;
            ASSERT_OK(mnemo_memory_get(m, w[k].ids[i], &out));
            mnemo_free(out);
        }
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(m, 1, &st));
    ASSERT_NOT_CONTAINS(st, "\"integrity\": \"damaged");
    mnemo_free(st);
    mnemo_close(m);
}

static void writes_then_signal(int sig)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    writer w[4];
    pthread_t t[4];
    for (int k = 0; k < 4; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].port = d.port;
        w[k].first = k * 1000;
        w[k].count = 60;
        pthread_create(&t[k], NULL, write_memories, &w[k]);
    }
    usleep(150000);
    int code = stop_daemon(&d, sig);
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    int acked = w[0].acked + w[1].acked + w[2].acked + w[3].acked;
    ASSERT(acked > 0);
    ASSERT_EQ(code, sig == SIGTERM ? 0 : 128 + sig);
    check_acked(w, 4);
    /* And a new daemon serves them. */
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    int st;
    json_t *j = http_json(d.port, "POST", "/v1/memories/list", "{\"limit\":1}", &st);
    ASSERT_EQ(st, 200);
    ASSERT(json_integer_value(json_object_get(j, "total")) >= acked);
    json_decref(j);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_sigterm_during_writes) { writes_then_signal(SIGTERM); }

/* SIGTERM lets a request that has begun finish, and its reply go out. */
TEST(serve_sigterm_finishes_requests)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    int fd = connect_port(d.port);
    const char *body = "{\"text\":\"Staging moved to the quokka cluster\"}";
    char head[256];
    snprintf(head, sizeof head,
             "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n",
             strlen(body));
    send_all(fd, head, strlen(head));
    send_all(fd, body, 10);
    usleep(100000);
    kill(d.pid, SIGTERM);
    usleep(300000);
    ASSERT_EQ(waitpid(d.pid, NULL, WNOHANG), 0); /* still finishing */
    send_all(fd, body + 10, strlen(body) - 10);
    char got[2048];
    size_t n = 0;
    ssize_t r;
    while ((r = recv(fd, got + n, sizeof got - 1 - n, 0)) > 0)
        n += (size_t)r;
    got[n] = 0;
    close(fd);
    ASSERT_CONTAINS(got, " 201 ");
    ASSERT_CONTAINS(got, "quokka");
    int st;
    waitpid(d.pid, &st, 0);
    d.pid = 0;
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* New connections are refused once it stops accepting. */
    ASSERT(connect_port(d.port) < 0);
}
TEST(serve_sigkill_during_writes) { writes_then_signal(SIGKILL); }

typedef struct patcher {
    int port;
    const char *path;
    const char *text;
    int ok;
} patcher;

static void *patch_loop(void *arg)
{
    patcher *p = arg;
    for (int i = 0; i < 20; i++) {
        char body[128], *resp = NULL;
        snprintf(body, sizeof body, "{\"text\":\"%s %d\"}", p->text, i);
        if (http(p->port, "PATCH", p->path, NULL, body, &resp) == 200)
            p->ok++;
        free(resp);
    }
    return NULL;
}

TEST(serve_two_writers_one_memory)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    int st;
    json_t *m = http_json(d.port, "POST", "/v1/memories", "{\"text\":\"The deploy window is Tuesday\"}",
                          &st);
    ASSERT_EQ(st, 201);
    char path[128];
    snprintf(path, sizeof path, "/v1/memories/%s", json_string_value(json_object_get(m, "id")));
    patcher a = {d.port, path, "window Monday", 0}, b = {d.port, path, "window Friday", 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, patch_loop, &a);
    pthread_create(&tb, NULL, patch_loop, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ASSERT_EQ(a.ok, 20);
    ASSERT_EQ(b.ok, 20);
    /* Every change is in the history, in some order, and the text is the last. */
    mnemo *h = test_open("ws", "db.sqlite", NULL);
    char *hist = NULL;
    ASSERT_OK(mnemo_memory_history(h, json_string_value(json_object_get(m, "id")), &hist));
    json_t *hj = json_loads(hist, 0, NULL);
    ASSERT_EQ(json_array_size(hj), 41); /* ADD + 40 UPDATEs */
    const char *last = json_string_value(json_object_get(json_array_get(hj, 40), "new_text"));
    json_t *g = http_json(d.port, "GET", path, NULL, &st);
    ASSERT_STR_EQ(json_string_value(json_object_get(g, "text")), last);
    json_decref(g);
    json_decref(hj);
    mnemo_free(hist);
    mnemo_close(h);
    json_decref(m);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_client_disconnects)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    /* Half a request, then gone; a full request, then gone before reading. */
    for (int i = 0; i < 20; i++) {
        int fd = connect_port(d.port);
        const char *h = i % 2 ? "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                                "Content-Type: application/json\r\n\r\n{\"query\""
                              : "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 19\r\n"
                                "Content-Type: application/json\r\n\r\n{\"query\":\"zephyr\"}";
        send_all(fd, h, strlen(h));
        struct linger lg = {1, 0}; /* reset, not a polite close */
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
    }
    char *resp;
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"zephyr\"}", &resp), 200);
    ASSERT_CONTAINS(resp, "zephyr-7");
    free(resp);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_watches_workspace)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    char *resp;
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"quokka\"}", &resp), 200);
    ASSERT_CONTAINS(resp, "\"results\":[]");
    free(resp);
    test_write("ws/memory/2026-11-29.md", "# Notes\n\nThe staging cluster is named quokka.\n");
    int found = 0;
    for (double t0 = now_s(); !found && now_s() - t0 < 8;) {
        usleep(100000);
        ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"quokka\"}", &resp), 200);
        found = strstr(resp, "2026-11-29.md") != NULL;
        free(resp);
    }
    ASSERT(found);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

/* ---- MCP over Streamable HTTP ---- */

TEST(serve_mcp_http)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    char *resp;
    const char *accept = "Accept: application/json, text/event-stream\r\n";
    ASSERT_EQ(http(d.port, "POST", "/mcp", accept,
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                   &resp),
              200);
    ASSERT_CONTAINS(resp, "\"protocolVersion\":\"2025-06-18\"");
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/mcp", accept,
                   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &resp),
              202);
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/mcp",
                   "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n",
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"memory_search\",\"arguments\":{\"query\":\"zephyr\"}}}",
                   &resp),
              200);
    ASSERT_CONTAINS(resp, "MEMORY.md#L3-L3");
    ASSERT_CONTAINS(resp, "\"structuredContent\"");
    free(resp);
    ASSERT_EQ(http(d.port, "POST", "/mcp", "MCP-Protocol-Version: 1999-01-01\r\n",
                   "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", &resp),
              400);
    free(resp);
    ASSERT_EQ(http(d.port, "GET", "/mcp", accept, NULL, &resp), 405);
    free(resp);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

/* The daemon's situation without HTTP: several handles in one process on
 * one index, and another process that opens and closes it in between. A
 * handle's opening must not drop this process's locks (it once read the
 * file header with open()/close(), and the other process then reset the
 * WAL under the live connections: "database disk image is malformed"). */
TEST(serve_handles_keep_locks)
{
    workspace();
    mnemo *a = test_open("ws", "db.sqlite", NULL);
    test_sync(a);
    char *out = NULL;
    for (int round = 0; round < 20; round++) {
        char rec[96];
        snprintf(rec, sizeof rec, "{\"text\":\"round %d of the lock test\"}", round);
        ASSERT_OK(mnemo_memory_add(a, rec, &out));
        json_t *j = json_loads(out, 0, NULL);
        mnemo_free(out);
        mnemo *b = test_open("ws", "db.sqlite", NULL); /* a second worker's handle */
        ASSERT_OK(mnemo_memory_get(b, json_string_value(json_object_get(j, "id")), &out));
        mnemo_free(out);
        ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db",
                           test_path("db.sqlite"), "memory", "list", "--json", NULL),
                  0);
        snprintf(rec, sizeof rec, "{\"text\":\"round %d changed after the other process\"}",
                 round);
        ASSERT_OK(mnemo_memory_update(a, json_string_value(json_object_get(j, "id")), rec, &out));
        mnemo_free(out);
        ASSERT_OK(mnemo_memory_get(b, json_string_value(json_object_get(j, "id")), &out));
        ASSERT_CONTAINS(out, "changed after the other process");
        mnemo_free(out);
        mnemo_close(b);
        json_decref(j);
    }
    char *st = NULL;
    ASSERT_OK(mnemo_status_json(a, 1, &st));
    ASSERT_NOT_CONTAINS(st, "damaged");
    mnemo_free(st);
    mnemo_close(a);
}

/* ---- many connections, deadlines, room ---- */

/* Raises this process's descriptor limit to N (a daemon it starts
 * inherits it); 0 when the hard limit is lower. */
static int raise_fds(rlim_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < n) {
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < n)
            return 0;
        rl.rlim_cur = n;
        return setrlimit(RLIMIT_NOFILE, &rl) == 0;
    }
    return 1;
}

/* A connection to the daemon at address TO (NULL: 127.0.0.1), blocking. */
static int connect_to(const char *to, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, to ? to : "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A connection from loopback address FROM to the daemon on
 * 127.0.0.1:PORT, non-blocking. */
static int connect_from(const char *from, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in me = {0}, sa = {0};
    me.sin_family = AF_INET;
    inet_pton(AF_INET, from, &me.sin_addr);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

/* Reads one reply on FD into GOT (its headers, then Content-Length bytes
 * of body) within 5 s. Returns its status, or -1. */
static int read_reply(int fd, char *got, size_t cap)
{
    size_t len = 0, want = 0;
    char *end = NULL;
    double t0 = now_s();
    while (!end || len < want) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)((5.0 - (now_s() - t0)) * 1000);
        if (len + 1 >= cap || left <= 0 || poll(&p, 1, left) <= 0)
            return -1;
        ssize_t r = recv(fd, got + len, cap - 1 - len, 0);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        got[len] = 0;
        if (!end && (end = strstr(got, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(got, "\r\nContent-Length:");
            want = (size_t)(end + 4 - got) + (cl ? strtoul(cl + 17, NULL, 10) : 0);
        }
    }
    int status = -1;
    sscanf(got, "HTTP/1.%*d %d", &status);
    return status;
}

/* GET PATH on the keep-alive connection FD, HEADERS (lines ending in
 * "\r\n") added; returns the status, or -1. */
static int keepalive_get(int fd, const char *path, const char *headers)
{
    char req[512], got[8192];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path,
             headers ? headers : "");
    if (send_all(fd, req, strlen(req)))
        return -1;
    return read_reply(fd, got, sizeof got);
}

/* Whether the server has closed FD, waiting up to MS for it. */
static int closed_by_server(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    char b[256];
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

TEST(serve_slow_clients_do_not_lock_others_out)
{
    /* Every local agent comes from 127.0.0.1. From there: 1,000 keep-alive
     * connections that made a request each and stay open, and 300 that
     * send a request a byte at a time (shut down at the deadline, and
     * opened again). /health on a fresh connection answers all along. */
    enum { IDLE = 1000, SLOW = 300 };
    if (!raise_fds(IDLE + SLOW + 256)) {
        printf("    (skipped: the descriptor limit is below %d)\n", IDLE + SLOW + 256);
        return;
    }
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, "--request-timeout", "2", "--keepalive-timeout", "120", NULL), 0);
    static int idle[IDLE], slow[SLOW];
    static double opened[SLOW];
    static size_t sent[SLOW];
    for (int i = 0; i < IDLE; i++) {
        idle[i] = connect_to(NULL, d.port);
        ASSERT(idle[i] >= 0);
        ASSERT_EQ(keepalive_get(idle[i], "/health", NULL), 200);
    }
    for (int i = 0; i < SLOW; i++) {
        ASSERT((slow[i] = connect_from("127.0.0.1", d.port)) >= 0);
        opened[i] = now_s();
    }
    /* Headers that never end: the line grows a byte at a time. */
    const char *head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    double t0 = now_s(), worst = 0;
    int checks = 0, healthy = 0, cut = 0;
    while (now_s() - t0 < 5.0) {
        for (int i = 0; i < SLOW; i++) {
            if (closed_by_server(slow[i], 0)) {
                double lived = now_s() - opened[i];
                if (lived < 1.5)
                    test_fail(__FILE__, __LINE__, "a slow connection closed after %.2f s", lived);
                cut++;
                close(slow[i]);
                ASSERT((slow[i] = connect_from("127.0.0.1", d.port)) >= 0);
                opened[i] = now_s();
                sent[i] = 0;
                continue;
            }
            char c = sent[i] < strlen(head) ? head[sent[i]] : 'a';
            if (send(slow[i], &c, 1, MSG_NOSIGNAL) == 1)
                sent[i]++;
        }
        double h0 = now_s();
        int st = http(d.port, "GET", "/health", NULL, NULL, NULL);
        double took = now_s() - h0;
        if (took >= 5.0)
            test_fail(__FILE__, __LINE__, "/health took %.2f s", took);
        worst = took > worst ? took : worst;
        checks++;
        healthy += st == 200;
        usleep(100 * 1000);
    }
    printf("    (/health answered %d of %d times, the slowest in %.1f ms; %d slow connections "
           "cut)\n",
           healthy, checks, worst * 1e3, cut);
    ASSERT_EQ(healthy, checks);
    ASSERT(checks >= 3);
    ASSERT(cut >= SLOW); /* the first 300, at their deadline */
    /* The idle ones were kept, and answer again. */
    for (int i = 0; i < IDLE; i++)
        if (closed_by_server(idle[i], 0))
            test_fail(__FILE__, __LINE__, "idle connection %d was closed", i);
    for (int i = 0; i < IDLE; i += 50)
        ASSERT_EQ(keepalive_get(idle[i], "/health", NULL), 200);
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    for (int i = 0; i < SLOW; i++)
        close(slow[i]);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_keepalive_idle_closed)
{
    /* A keep-alive connection idle for --keepalive-timeout is closed by
     * the server; one that keeps asking stays open past it. */
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, "--keepalive-timeout", "1", NULL), 0);
    int idle = connect_to(NULL, d.port), busy = connect_to(NULL, d.port);
    ASSERT_EQ(keepalive_get(idle, "/health", NULL), 200);
    double t0 = now_s();
    ASSERT(closed_by_server(idle, 5000));
    double lived = now_s() - t0;
    if (lived < 0.9 || lived > 3.0)
        test_fail(__FILE__, __LINE__, "closed after %.2f s idle, not about 1 s", lived);
    close(idle);
    for (int i = 0; i < 6; i++) { /* 2.4 s in all, never 1 s idle */
        ASSERT_EQ(keepalive_get(busy, "/health", NULL), 200);
        usleep(400 * 1000);
    }
    ASSERT_EQ(keepalive_get(busy, "/health", NULL), 200);
    close(busy);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

TEST(serve_full_house_closes_the_oldest_idle)
{
    /* Every place taken by idle keep-alive connections: a new client is
     * still served, and the connections idle longest make room. */
    enum { MAX = 32, N = 48 };
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, "--max-connections", "32", "--keepalive-timeout", "120", NULL),
              0);
    int fds[N];
    for (int i = 0; i < N; i++) {
        ASSERT((fds[i] = connect_to(NULL, d.port)) >= 0);
        ASSERT_EQ(keepalive_get(fds[i], "/health", NULL), 200);
    }
    usleep(300 * 1000);
    /* The oldest closed, the newest kept (near the boundary two replies
     * may have ended in the other order on the server). */
    int open_ = 0;
    for (int i = 0; i < N; i++) {
        int gone = closed_by_server(fds[i], 0);
        open_ += !gone;
        if ((i < 8 && !gone) || (i >= N - 24 && gone))
            test_fail(__FILE__, __LINE__, "connection %d of %d %s", i, N,
                      gone ? "closed: not among the oldest" : "kept: among the oldest");
    }
    ASSERT(open_ < MAX);
    ASSERT(open_ >= MAX - 4);
    ASSERT_EQ(keepalive_get(fds[N - 1], "/health", NULL), 200);
    ASSERT_EQ(http(d.port, "GET", "/health", NULL, NULL, NULL), 200);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

/* An IPv4 address of this machine other than loopback, or NULL. */
static const char *local_address(char *out, size_t n)
{
    struct ifaddrs *all = NULL;
    const char *found = NULL;
    if (getifaddrs(&all) != 0)
        return NULL;
    for (struct ifaddrs *i = all; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK) &&
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
                      (socklen_t)n))
            found = out;
    freeifaddrs(all);
    return found;
}

TEST(serve_per_client_cap_off_loopback)
{
    /* Bound beyond loopback, an address other than loopback may hold
     * --max-per-client connections; loopback is not capped. */
    char ip[INET_ADDRSTRLEN];
    if (!local_address(ip, sizeof ip)) {
        printf("    (skipped: this machine has no address but loopback)\n");
        return;
    }
    workspace();
    test_write("token", "0123456789abcdef0123\n");
    chmod(test_path("token"), 0600);
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, "--listen", "0.0.0.0:0", "--token-file", test_path("token"),
                           "--max-per-client", "4", NULL),
              0);
    const char *auth = "Authorization: Bearer 0123456789abcdef0123\r\n";
    int remote[5], local[20];
    for (int i = 0; i < 4; i++) {
        ASSERT((remote[i] = connect_to(ip, d.port)) >= 0);
        ASSERT_EQ(keepalive_get(remote[i], "/health", auth), 200);
    }
    ASSERT((remote[4] = connect_to(ip, d.port)) >= 0); /* the kernel accepts; the server not */
    ASSERT(closed_by_server(remote[4], 3000));
    close(remote[4]);
    for (int i = 0; i < 20; i++) {
        ASSERT((local[i] = connect_to(NULL, d.port)) >= 0);
        ASSERT_EQ(keepalive_get(local[i], "/health", auth), 200);
    }
    /* Once one of the four closes, the address has a place again. */
    close(remote[0]);
    int st = -1;
    for (double t0 = now_s(); st != 200 && now_s() - t0 < 5;) {
        usleep(100 * 1000);
        remote[0] = connect_to(ip, d.port);
        st = keepalive_get(remote[0], "/health", auth);
        if (st != 200)
            close(remote[0]);
    }
    ASSERT_EQ(st, 200);
    for (int i = 0; i < 4; i++)
        close(remote[i]);
    for (int i = 0; i < 20; i++)
        close(local[i]);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

/* ---- framing: where a request ends ---- */

/* REQ on a fresh connection; the whole reply until the server closes, or
 * 5 s pass (*closed stays 0). */
static char *until_close(int port, const char *req, int *closed)
{
    int fd = connect_to(NULL, port);
    size_t cap = 1 << 16, len = 0;
    char *got = calloc(1, cap);
    *closed = 0;
    if (fd < 0 || send_all(fd, req, strlen(req)) != 0) {
        if (fd >= 0)
            close(fd);
        return got;
    }
    for (double t0 = now_s(); len + 1 < cap;) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)((5.0 - (now_s() - t0)) * 1000);
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t r = recv(fd, got + len, cap - 1 - len, 0);
        if (r <= 0) {
            *closed = r == 0 || errno == ECONNRESET;
            break;
        }
        len += (size_t)r;
    }
    got[len] = 0;
    close(fd);
    return got;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* REQ gets STATUS with one set of headers, an error in the daemon's JSON
 * shape, and the connection closed; nothing sent after it is answered. */
static void refused(int port, const char *why, const char *req, int status)
{
    int closed;
    char *got = until_close(port, req, &closed);
    char line[32];
    snprintf(line, sizeof line, "HTTP/1.1 %d ", status);
    const char *body = strstr(got, "\r\n\r\n");
    const char *cl = strstr(got, "\r\nContent-Length: ");
    json_t *j = body ? json_loads(body + 4, 0, NULL) : NULL;
    if (strncmp(got, line, strlen(line)) != 0 || !closed || count(got, "\nHTTP/1.") != 0 ||
        count(got, "\r\nConnection: close\r\n") != 1 || count(got, "\r\nContent-Length:") != 1 ||
        !cl || strtoul(cl + 18, NULL, 10) != strlen(body + 4) ||
        !json_string_value(json_object_get(json_object_get(j, "error"), "message")) ||
        strstr(got, "\"ok\":true"))
        test_fail(__FILE__, __LINE__, "%s: want %d, one reply, then the close; got (%s):\n%s", why,
                  status, closed ? "closed" : "still open", got);
    json_decref(j);
    free(got);
}

TEST(serve_strict_framing)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
#define POST_SEARCH                                                                                \
    "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
#define SMUGGLED "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    static const struct {
        const char *why, *req;
        int status;
    } cases[] = {
        {"two Content-Lengths", POST_SEARCH "Content-Length: 13\r\nContent-Length: 5\r\n\r\n"
                                            "{\"query\":\"x\"}",
         400},
        {"one Content-Length twice", POST_SEARCH "Content-Length: 13\r\nContent-Length: 13\r\n\r\n"
                                                 "{\"query\":\"x\"}",
         400},
        {"Content-Length and chunked", POST_SEARCH "Content-Length: 18\r\n"
                                                   "Transfer-Encoding: chunked\r\n\r\n"
                                                   "d\r\n{\"query\":\"x\"}\r\n0\r\n\r\n" SMUGGLED,
         400},
        {"xchunked", POST_SEARCH "Transfer-Encoding: xchunked\r\n\r\n"
                                 "d\r\n{\"query\":\"x\"}\r\n0\r\n\r\n",
         400},
        {"gzip, chunked", POST_SEARCH "Transfer-Encoding: gzip, chunked\r\n\r\n"
                                      "d\r\n{\"query\":\"x\"}\r\n0\r\n\r\n",
         400},
        {"chunked twice", POST_SEARCH "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
                                      "\r\nd\r\n{\"query\":\"x\"}\r\n0\r\n\r\n" SMUGGLED,
         400},
        {"chunked in HTTP/1.0", "POST /v1/search HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "d\r\n{\"query\":\"x\"}\r\n0\r\n\r\n",
         400},
        {"a malformed Content-Length", POST_SEARCH "Content-Length: 1x\r\n\r\n{\"query\":\"x\"}"
                                                   SMUGGLED,
         400},
        {"a negative Content-Length", POST_SEARCH "Content-Length: -13\r\n\r\n{\"query\":\"x\"}",
         400},
        {"a Content-Length past 2^64", POST_SEARCH "Content-Length: 99999999999999999999999\r\n\r\n"
                                                   "{\"query\":\"x\"}",
         413},
        {"a space before the colon", POST_SEARCH "Content-Length : 13\r\n\r\n{\"query\":\"x\"}"
                                                 SMUGGLED,
         400},
        {"two Hosts", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n", 400},
        {"an empty Host", "GET /health HTTP/1.1\r\nHost: \r\n\r\n", 400},
        {"no Host in HTTP/1.1", "GET /health HTTP/1.1\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        refused(d.port, cases[i].why, cases[i].req, cases[i].status);

    /* Requests framed as they should be: a length, chunks, two on one
     * connection, HTTP/1.0 without Host. */
    char *resp = NULL;
    ASSERT_EQ(http(d.port, "POST", "/v1/search", NULL, "{\"query\":\"zephyr\"}", &resp), 200);
    ASSERT_CONTAINS(resp, "zephyr-7");
    free(resp);
    int closed;
    char *got = until_close(d.port,
                            POST_SEARCH "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                        "6\r\n{\"quer\r\nc\r\ny\":\"zephyr\"}\r\n0\r\n\r\n",
                            &closed);
    ASSERT_EQ(strncmp(got, "HTTP/1.1 200 ", 13), 0);
    ASSERT_CONTAINS(got, "zephyr-7");
    ASSERT(closed);
    free(got);
    got = until_close(d.port,
                      SMUGGLED POST_SEARCH "Content-Length: 18\r\nConnection: close\r\n\r\n"
                                           "{\"query\":\"zephyr\"}",
                      &closed);
    ASSERT_EQ(count(got, "HTTP/1.1 200 "), 2);
    ASSERT_CONTAINS(got, "\"ok\":true");
    ASSERT_CONTAINS(got, "zephyr-7");
    ASSERT(closed);
    free(got);
    got = until_close(d.port, "GET /health HTTP/1.0\r\n\r\n", &closed);
    ASSERT_EQ(strncmp(got, "HTTP/1.0 200 ", 13) == 0 || strncmp(got, "HTTP/1.1 200 ", 13) == 0, 1);
    ASSERT(closed);
    free(got);
#undef POST_SEARCH
#undef SMUGGLED
    ASSERT_EQ(http(d.port, "GET", "/health", NULL, NULL, NULL), 200);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}


TEST(serve_hostile_arguments_get_400)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, NULL), 0);
    /* A filter of 10,000 ORs. */
    buf b;
    buf_init(&b, 1 << 22);
    buf_puts(&b, "{\"query\":\"x\",\"filters\":{\"OR\":[");
    for (int i = 0; i < 10000; i++)
        buf_printf(&b, "%s{\"category\":\"c%d\"}", i ? "," : "", i);
    buf_puts(&b, "]}}");
    char *resp = NULL;
    ASSERT_EQ(http(d.port, "POST", "/v1/memories/search", NULL, b.data, &resp), 400);
    ASSERT_CONTAINS(resp, "too many conditions");
    free(resp);
    buf_reset(&b);
    /* A 100 KB path. */
    buf_puts(&b, "{\"path\":\"");
    for (int i = 0; i < 100000; i++)
        buf_putc(&b, 'a');
    buf_puts(&b, "\"}");
    ASSERT_EQ(http(d.port, "POST", "/v1/get", NULL, b.data, &resp), 400);
    ASSERT_CONTAINS(resp, "path too long");
    free(resp);
    buf_cleanup(&b);
    ASSERT_EQ(http(d.port, "GET", "/health", NULL, NULL, NULL), 200);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
    /* Another loopback address: the pid file names it, and it answers. */
    ASSERT_EQ(start_daemon(&d, "--listen", "127.0.0.2:0", NULL), 0);
    char *pid = test_read(test_path("db.sqlite.serve.pid"), NULL);
    ASSERT_CONTAINS(pid, "\"url\":\"http://127.0.0.2:");
    free(pid);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
}

/* POST and PATCH /v1/memories refuse credentials however they are written
 * (prose, a zero-width space, full-width letters, a split token, a .pgpass
 * line), and neither the answer nor the log repeats one. */
TEST(serve_refuses_disguised_credentials)
{
    workspace();
    daemon_proc d;
    ASSERT_EQ(start_daemon(&d, "--verbose", NULL), 0);
    static const struct {
        const char *body, *secret;
    } cases[] = {
        {"{\"text\":\"my bank password is hunter2\"}", "hunter2"},
        {"{\"text\":\"password: hunter2\"}", "hunter2"},
        {"{\"text\":\"AKIA\\u200bIOSFODNN7EXAMPLE\"}", "IOSFODNN7"},
        {"{\"text\":\"\\uff21\\uff2b\\uff29\\uff21IOSFODNN7EXAMPLE\"}", "IOSFODNN7"},
        {"{\"text\":\"ghp_abcd1234 efgh5678ijkl9012mnop3456qrst\"}", "efgh5678"},
        {"{\"text\":\"host:5432:db:user:secret\"}", "user:secret"},
    };
    int st;
    json_t *m = http_json(d.port, "POST", "/v1/memories", "{\"text\":\"User likes green tea\"}",
                          &st);
    ASSERT_EQ(st, 201);
    char path[128];
    snprintf(path, sizeof path, "/v1/memories/%s", json_string_value(json_object_get(m, "id")));
    json_decref(m);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *resp = NULL;
        ASSERT_EQ(http(d.port, "POST", "/v1/memories", NULL, cases[i].body, &resp), 400);
        ASSERT_CONTAINS(resp, "credential");
        ASSERT_NOT_CONTAINS(resp, cases[i].secret);
        free(resp);
        ASSERT_EQ(http(d.port, "PATCH", path, NULL, cases[i].body, &resp), 400);
        ASSERT_CONTAINS(resp, "credential");
        ASSERT_NOT_CONTAINS(resp, cases[i].secret);
        free(resp);
    }
    json_t *l = http_json(d.port, "POST", "/v1/memories/list", "{}", &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(json_integer_value(json_object_get(l, "total")), 1);
    json_decref(l);
    ASSERT_EQ(stop_daemon(&d, SIGTERM), 0);
    char *log = test_read(test_path("serve.log"), NULL);
    ASSERT_CONTAINS(log, "POST /v1/memories 400");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ASSERT_NOT_CONTAINS(log, cases[i].secret);
    free(log);
}
