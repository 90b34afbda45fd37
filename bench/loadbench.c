/*
 * loadbench.c - load for mnemo serve: N concurrent clients over loopback,
 * each on one keep-alive connection, posting searches back to back for a
 * while. Reports throughput and latency percentiles (the time from
 * writing a request to having read its whole response).
 *
 *   loadbench --port P [--clients N] [--seconds S] [--path /v1/search]
 *             [--queries FILE] [--max-results K] [--warmup S]
 *             [--fresh] [--idle N] [--slow N]
 *
 * The queries come one per line from FILE (bench/gen.c writes DIR.queries);
 * without it a few fixed queries are used. --path /health sends GETs.
 *
 * A crowd around the clients, all from 127.0.0.1 as local agents are:
 * --fresh opens a new connection for each request (the time then counts
 * the connect), --idle N holds N keep-alive connections that made one
 * request each, --slow N keeps N connections sending a request a byte
 * every 100 ms (one the daemon closes is opened again).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port = 7373, clients = 8, max_results = 6, fresh, idle_n, slow_n;
static double seconds = 5, warmup = 1;
static const char *path = "/v1/search";
static char **queries;
static size_t nqueries;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct client {
    int id;
    double *lat; /* milliseconds */
    size_t n, cap;
    size_t errors;
} client;

static int connect_once(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Appends S to OUT as a JSON string body. */
static size_t json_str(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    out[n++] = '"';
    for (; *s && n + 8 < cap; s++) {
        if (*s == '"' || *s == '\\')
            out[n++] = '\\';
        if ((unsigned char)*s < 0x20)
            continue;
        out[n++] = *s;
    }
    out[n++] = '"';
    return n;
}

/* One request/response on FD: a GET of /health, else a search POSTed to
 * TO; LAST asks the daemon to close after it. Returns the status or -1. */
static int exchange(int fd, const char *to, int last, const char *query, char *buf, size_t cap)
{
    char body[2048];
    size_t bn = (size_t)snprintf(body, sizeof body, "{\"query\":");
    bn += json_str(body + bn, sizeof body - bn - 32, query);
    bn += (size_t)snprintf(body + bn, sizeof body - bn, ",\"maxResults\":%d}", max_results);
    char req[4096];
    const char *conn = last ? "Connection: close\r\n" : "";
    int rn = strcmp(to, "/health") == 0
                 ? snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", to,
                            conn)
                 : snprintf(req, sizeof req,
                            "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                            "application/json\r\n%sContent-Length: %zu\r\n\r\n%.*s",
                            to, conn, bn, (int)bn, body);
    if (send(fd, req, (size_t)rn, MSG_NOSIGNAL) != rn)
        return -1;
    size_t len = 0;
    char *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    int status = -1;
    sscanf(buf, "HTTP/1.%*d %d", &status);
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0;
    size_t have = len - (size_t)(end + 4 - buf);
    while (have < want) {
        ssize_t r = recv(fd, buf, cap - 1, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    return status;
}

static double t_start, t_measure, t_end;

static void *run_client(void *arg)
{
    client *c = arg;
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    int fd = connect_once();
    size_t q = (size_t)c->id * 7919;
    for (;;) {
        double t0 = now();
        if (t0 >= t_end)
            break;
        if (fd < 0 && (fd = connect_once()) < 0) {
            c->errors++;
            usleep(1000);
            continue;
        }
        int st = exchange(fd, path, fresh, queries[q++ % nqueries], buf, cap);
        double t1 = now();
        if (fresh) {
            close(fd);
            fd = -1;
        }
        if (st != 200) {
            c->errors++;
            close(fd);
            fd = -1;
            continue;
        }
        if (t0 < t_measure)
            continue;
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 4096;
            c->lat = realloc(c->lat, c->cap * sizeof *c->lat);
        }
        c->lat[c->n++] = (t1 - t0) * 1e3;
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

/* ---- the crowd: idle and slow connections ---- */

static int *idle_fds, *slow_fds;
static size_t *slow_sent, slow_cut;
static volatile int crowd_stop;

/* Opens the idle connections, one request each; returns how many answered 200. */
static int open_idle(void)
{
    char *buf = malloc(1 << 16);
    int ok = 0;
    idle_fds = calloc((size_t)idle_n, sizeof *idle_fds);
    for (int i = 0; i < idle_n; i++) {
        idle_fds[i] = connect_once();
        ok += idle_fds[i] >= 0 && exchange(idle_fds[i], "/health", 0, "", buf, 1 << 16) == 200;
    }
    free(buf);
    return ok;
}

/* How many idle connections the daemon has kept open. */
static int idle_kept(void)
{
    int kept = 0;
    for (int i = 0; i < idle_n; i++) {
        char b;
        ssize_t r = idle_fds[i] < 0 ? 0 : recv(idle_fds[i], &b, 1, MSG_DONTWAIT);
        kept += r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        if (idle_fds[i] >= 0)
            close(idle_fds[i]);
    }
    return kept;
}

/* Trickles a request that never ends on each slow connection, a byte
 * every 100 ms, and opens again the ones the daemon closes. */
static void *run_slow(void *arg)
{
    (void)arg;
    static const char head[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    slow_fds = malloc((size_t)slow_n * sizeof *slow_fds);
    slow_sent = calloc((size_t)slow_n, sizeof *slow_sent);
    for (int i = 0; i < slow_n; i++)
        slow_fds[i] = -1;
    while (!crowd_stop) {
        for (int i = 0; i < slow_n; i++) {
            int *fd = &slow_fds[i];
            char c = slow_sent[i] < sizeof head - 1 ? head[slow_sent[i]] : 'a', b;
            if (*fd < 0) {
                *fd = connect_once();
                slow_sent[i] = 0;
                continue;
            }
            ssize_t r = recv(*fd, &b, 1, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                send(*fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                close(*fd);
                *fd = -1;
                slow_cut++;
                continue;
            }
            slow_sent[i]++;
        }
        usleep(100 * 1000);
    }
    for (int i = 0; i < slow_n; i++)
        if (slow_fds[i] >= 0)
            close(slow_fds[i]);
    return NULL;
}

/* Room for every connection of this process. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)(idle_n + slow_n + clients) + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void load_queries(const char *file)
{
    static char *fixed[] = {"postgres migration", "deploy pipeline", "billing service host",
                            "who owns the database", "kubernetes upgrade notes"};
    if (!file) {
        queries = fixed;
        nqueries = sizeof fixed / sizeof *fixed;
        return;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "loadbench: cannot read %s: %s\n", file, strerror(errno));
        exit(2);
    }
    char line[2048];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *q = strchr(line, '\t') ? strchr(line, '\t') + 1 : line; /* "id\tquery" or "query" */
        if (!*q)
            continue;
        if (nqueries == cap)
            queries = realloc(queries, (cap = cap ? cap * 2 : 256) * sizeof *queries);
        queries[nqueries++] = strdup(q);
    }
    fclose(f);
    if (!nqueries) {
        fprintf(stderr, "loadbench: no queries in %s\n", file);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const char *qfile = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--fresh")) {
            fresh = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "loadbench: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--port"))
            port = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--clients"))
            clients = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--seconds"))
            seconds = strtod(v, NULL);
        else if (!strcmp(a, "--warmup"))
            warmup = strtod(v, NULL);
        else if (!strcmp(a, "--path"))
            path = v;
        else if (!strcmp(a, "--queries"))
            qfile = v;
        else if (!strcmp(a, "--max-results"))
            max_results = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--idle"))
            idle_n = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--slow"))
            slow_n = (int)strtol(v, NULL, 10);
        else {
            fprintf(stderr, "usage: loadbench --port P [--clients N] [--seconds S] [--warmup S] "
                            "[--path /v1/search] [--queries FILE] [--max-results K] [--fresh] "
                            "[--idle N] [--slow N]\n");
            return 2;
        }
        i++;
    }
    if (clients < 1 || clients > 1024 || seconds <= 0 || idle_n < 0 || slow_n < 0) {
        fprintf(stderr, "loadbench: bad --clients, --seconds, --idle or --slow\n");
        return 2;
    }
    load_queries(qfile);
    raise_fd_limit();
    int idle_ok = idle_n ? open_idle() : 0;
    pthread_t slow_thread;
    if (slow_n)
        pthread_create(&slow_thread, NULL, run_slow, NULL);
    client *c = calloc((size_t)clients, sizeof *c);
    pthread_t *t = calloc((size_t)clients, sizeof *t);
    t_start = now();
    t_measure = t_start + warmup;
    t_end = t_measure + seconds;
    for (int i = 0; i < clients; i++) {
        c[i].id = i;
        pthread_create(&t[i], NULL, run_client, &c[i]);
    }
    size_t n = 0, errors = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(t[i], NULL);
        n += c[i].n;
        errors += c[i].errors;
    }
    crowd_stop = 1;
    if (slow_n)
        pthread_join(slow_thread, NULL);
    if (idle_n || slow_n)
        printf("idle %d (answered %d, kept to the end %d)  slow %d (closed by the daemon %zu)\n",
               idle_n, idle_ok, idle_kept(), slow_n, slow_cut);
    if (n == 0) {
        fprintf(stderr, "loadbench: no successful requests (%zu errors); is mnemo serve on port %d?\n",
                errors, port);
        return 1;
    }
    double *all = malloc(n * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + k, c[i].lat, c[i].n * sizeof *all);
        k += c[i].n;
        free(c[i].lat);
    }
    qsort(all, n, sizeof *all, cmp);
    printf("clients %d  requests %zu  errors %zu  throughput %.0f req/s  "
           "p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms\n",
           clients, n, errors, (double)n / seconds, all[n / 2], all[n * 9 / 10],
           all[n * 99 / 100], all[n - 1]);
    free(all);
    free(c);
    free(t);
    return errors ? 1 : 0;
}
