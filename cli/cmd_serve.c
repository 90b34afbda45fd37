/*
 * cmd_serve.c - `mnemo serve`: the daemon. It keeps the index, vectors and
 * embedding tables open and hot, syncs the workspace as it changes, and
 * answers JSON over HTTP (the operations of api.h under /v1/, MCP over
 * Streamable HTTP at /mcp).
 *
 * libmicrohttpd runs a pool of worker threads; each opens its own library
 * handle on first use. The library is loaded when the daemon starts, so
 * the other commands do not pay for linking it.
 *
 * Safety: loopback by default; any other address needs a bearer token,
 * compared in constant time. Browsers are kept out: a request with a
 * foreign Origin is refused, and bodies must be application/json (which a
 * cross-site form cannot send). Bodies and headers are capped, a request
 * whose end is in doubt is refused and its connection closed, every
 * connection has a deadline for what it is doing (the arrival of a
 * request, idling between two), SIGTERM finishes the requests in flight
 * before exit, and a locked pid file keeps a second daemon off the same
 * index.
 * With --parent PID it also stops, the same way, once that process is gone
 * (an integration that starts the daemon does not leave it behind).
 *
 * About 1,300 lines in one file on purpose: routing, the connection
 * limits, listening and the daemon's life all share the server struct and
 * its locks, which nothing else may see.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "cli.h"
#include "mcp.h"
#include "web.h"

/* ----------------------------------------------------------------------
 * libmicrohttpd, loaded at run time
 * -------------------------------------------------------------------- */

static struct {
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                        enum MHD_ResponseMemoryMode);
    MHD_socket (*quiesce_daemon)(struct MHD_Daemon *);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
                                      struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
                                           const char *);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
                                                           enum MHD_ConnectionInfoType, ...);
    int (*get_connection_values)(struct MHD_Connection *, enum MHD_ValueKind,
                                 MHD_KeyValueIterator, void *);
    struct MHD_Response *(*create_response_from_callback)(uint64_t, size_t,
                                                          MHD_ContentReaderCallback, void *,
                                                          MHD_ContentReaderFreeCallback);
    void (*suspend_connection)(struct MHD_Connection *);
    void (*resume_connection)(struct MHD_Connection *);
} mhd;

static int mhd_load(void)
{
    static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof names / sizeof *names; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        cli_error("serve: cannot load libmicrohttpd (%s); install it: apt install libmicrohttpd12",
                  dlerror());
        return -1;
    }
    struct {
        const char *name;
        void **fn;
    } syms[] = {
        {"MHD_start_daemon", (void **)&mhd.start_daemon},
        {"MHD_stop_daemon", (void **)&mhd.stop_daemon},
        {"MHD_quiesce_daemon", (void **)&mhd.quiesce_daemon},
        {"MHD_create_response_from_buffer", (void **)&mhd.create_response_from_buffer},
        {"MHD_add_response_header", (void **)&mhd.add_response_header},
        {"MHD_queue_response", (void **)&mhd.queue_response},
        {"MHD_destroy_response", (void **)&mhd.destroy_response},
        {"MHD_lookup_connection_value", (void **)&mhd.lookup_connection_value},
        {"MHD_get_connection_info", (void **)&mhd.get_connection_info},
        {"MHD_get_connection_values", (void **)&mhd.get_connection_values},
        {"MHD_create_response_from_callback", (void **)&mhd.create_response_from_callback},
        {"MHD_suspend_connection", (void **)&mhd.suspend_connection},
        {"MHD_resume_connection", (void **)&mhd.resume_connection},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        *syms[i].fn = dlsym(h, syms[i].name);
        if (!*syms[i].fn) {
            cli_error("serve: libmicrohttpd lacks %s", syms[i].name);
            return -1;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------------
 * The server
 * -------------------------------------------------------------------- */

#define MAX_HANDLES 64

typedef struct server {
    mnemo_config *cfg;
    char *token; /* NULL: none required */
    size_t token_len;
    size_t max_body;
    int verbose;
    uint16_t port;
    char self[NI_MAXHOST + 2]; /* the bound address as a Host names it: 127.0.0.2, [::1] */
    char *workspace;
    pthread_mutex_t lock;
    mnemo *handles[MAX_HANDLES]; /* one per worker, closed at exit */
    int nhandles;
    int inflight; /* requests begun and not yet completed (under lock) */
    /* Every open connection (under wlock): the watchdog shuts down the
     * ones past their deadline, a new one makes room when all are taken,
     * and an address off loopback is counted against its cap. */
    pthread_mutex_t wlock;
    struct conn_watch *watched; /* newest first */
    int nconns, nshut;          /* watched, and of those shut down already */
    int max_conns, per_client;
    double arrival_ms, keepalive_ms;
    int stop_watchdog;
    /* Server-sent events (under elock): the last events sent, numbered,
     * and the streams that read them (a stream waiting for the next one
     * is a suspended connection, resumed when it comes). */
    pthread_mutex_t elock;
    struct sse_stream *streams;
    int nstreams;
    unsigned long nevents;         /* events so far; event N is in ring[N % EVENT_RING] */
    char *ring[16];
    unsigned long pings;           /* keep-alive comments asked for so far */
    int ending;                    /* the daemon stops: every stream ends */
} server;

#define EVENT_RING 16
#define MAX_STREAMS 32

static void publish(server *s, const char *name, json_t *data);

/* Where a connection is in its life; each phase has its own deadline. */
typedef enum conn_phase {
    W_NEW,  /* opened, no request yet: the whole request within --request-timeout */
    W_HEAD, /* a request line has arrived, its headers not all yet */
    W_BODY, /* the handler has the headers; the body is arriving */
    W_BUSY, /* the request is whole: its reply is made and sent (--timeout) */
    W_IDLE  /* the reply went out: the next request line within --keepalive-timeout */
} conn_phase;

typedef struct conn_watch {
    struct MHD_Connection *conn;
    int fd;
    pthread_t worker;   /* the thread that serves it, for its whole life */
    unsigned char ip[16];
    size_t iplen;       /* 4 or 16; 0 for loopback, which has no cap */
    conn_phase phase;
    double since;       /* the start of the phase's deadline */
    int shut;
    struct conn_watch *prev, *next;
} conn_watch;

typedef struct request {
    char *body;
    size_t len, cap;
    int too_big;
    unsigned status;
    double start;
    char line[128]; /* "METHOD /path", for the log */
} request;

static _Thread_local mnemo *worker_handle;
static _Thread_local unsigned last_status; /* of the response queued last */
static _Thread_local const char *allow = "POST"; /* the Allow header of a 405 */
static _Thread_local int closing; /* the reply ends the connection */
/* "timeout=N" of --keepalive-timeout, set before the daemon starts: a
 * client that reads it (Node's http.Agent, undici) drops an idle
 * connection before the daemon closes it, instead of sending a request
 * into the close. */
static char keep_alive[32];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* This worker's handle, opened on its first request. */
static mnemo *handle(server *s, char **err)
{
    if (worker_handle)
        return worker_handle;
    mnemo *m = NULL;
    int rc = mnemo_open(s->cfg, &m);
    if (rc) {
        *err = strdup(m ? mnemo_errmsg(m) : mnemo_strerror(rc));
        mnemo_close(m);
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    if (s->nhandles < MAX_HANDLES) {
        s->handles[s->nhandles++] = m;
        worker_handle = m;
    }
    pthread_mutex_unlock(&s->lock);
    if (!worker_handle) {
        mnemo_close(m);
        *err = strdup("too many worker threads");
    }
    return worker_handle;
}

/* Queues BODY (malloc'ed, taken) with STATUS. */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned int status, char *body,
                               const char *type)
{
    size_t n = body ? strlen(body) : 0;
    struct MHD_Response *r =
        mhd.create_response_from_buffer(n, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    if (body)
        mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (status == MHD_HTTP_UNAUTHORIZED)
        mhd.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (closing)
        mhd.add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    else
        mhd.add_response_header(r, "Keep-Alive", keep_alive);
    last_status = status;
    enum MHD_Result ok = mhd.queue_response(c, status, r);
    mhd.destroy_response(r);
    return ok;
}

/* Ends S with a newline, as the CLI prints it. */
static char *with_newline(char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t)
        return s;
    t[n] = '\n';
    t[n + 1] = 0;
    return t;
}

static enum MHD_Result respond_json(struct MHD_Connection *c, unsigned int status, json_t *j)
{
    char *s = api_dump(j);
    json_decref(j);
    return respond(c, status, with_newline(s), "application/json");
}

static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned int status, int rc,
                                     const char *msg)
{
    return respond_json(c, status, api_error_json(rc, msg));
}

/* Constant-time: the time taken depends on the given token's length only. */
static int token_ok(const server *s, const char *header)
{
    static const char prefix[] = "Bearer ";
    if (!header || strncasecmp(header, prefix, sizeof prefix - 1) != 0)
        return 0;
    const unsigned char *given = (const unsigned char *)header + sizeof prefix - 1;
    size_t n = strlen((const char *)given);
    unsigned char diff = (unsigned char)(n != s->token_len);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(given[i] ^ (unsigned char)s->token[i % s->token_len]);
    return diff == 0;
}

/* Without a token the daemon answers only to its loopback names: a web page
 * that rebinds its own host name to 127.0.0.1 sends that name as Host. */
static int host_ok(const server *s, const char *host)
{
    if (s->token || !host)
        return 1;
    const char *const names[] = {"127.0.0.1", "localhost", "[::1]", s->self};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char want[NI_MAXHOST + 16];
        if (!names[i][0])
            continue;
        snprintf(want, sizeof want, "%s:%u", names[i], (unsigned)s->port);
        if (strcasecmp(host, want) == 0 || strcasecmp(host, names[i]) == 0)
            return 1;
    }
    return 0;
}

/* An Origin header, when present, must be this server itself. */
static int origin_ok(const server *s, const char *origin)
{
    if (!origin)
        return 1;
    const char *const hosts[] = {"127.0.0.1", "localhost", "[::1]", s->self};
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++) {
        char want[NI_MAXHOST + 24];
        if (!hosts[i][0])
            continue;
        snprintf(want, sizeof want, "http://%s:%u", hosts[i], (unsigned)s->port);
        if (strcmp(origin, want) == 0)
            return 1;
    }
    return 0;
}

static json_t *parse_body(const request *r, char **err)
{
    if (r->len == 0)
        return json_object();
    json_error_t je;
    json_t *j = json_loadb(r->body, r->len, 0, &je);
    if (!j) {
        char buf[300];
        snprintf(buf, sizeof buf, "invalid JSON body: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        *err = strdup(buf);
    } else if (!json_is_object(j)) {
        *err = strdup("the body must be a JSON object");
        json_decref(j);
        j = NULL;
    }
    return j;
}

static enum MHD_Result run_op(server *s, struct MHD_Connection *c, const char *opname,
                              json_t *args, unsigned int ok_status)
{
    char *err = NULL;
    mnemo *m = handle(s, &err);
    if (!m) {
        json_decref(args);
        enum MHD_Result r = respond_error(c, 503, MNEMO_UNAVAILABLE, err);
        free(err);
        return r;
    }
    char *out = NULL;
    const api_op *op = api_find(opname);
    int rc = api_run(m, op, args, &out, &err);
    if (!rc && op->writes) { /* pages showing memories refresh */
        json_t *reply = json_object_get(args, "id") ? NULL : json_loads(out, 0, NULL);
        json_t *id = reply ? json_object_get(reply, "id") : json_object_get(args, "id");
        publish(s, "memory", json_pack("{s:s,s:O?}", "op", opname, "id", id));
        json_decref(reply);
    }
    json_decref(args);
    if (rc) {
        enum MHD_Result r = respond_error(c, (unsigned)api_http_status(rc), rc, err);
        free(err);
        return r;
    }
    return respond(c, ok_status, with_newline(out), "application/json");
}

static enum MHD_Result serve_mcp(server *s, struct MHD_Connection *c, const request *r)
{
    const char *v = mhd.lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
    if (v && !mcp_version_supported(v))
        return respond_error(c, 400, MNEMO_INVALID, "unsupported MCP-Protocol-Version");
    char *err = NULL;
    mnemo *m = handle(s, &err);
    if (!m) {
        enum MHD_Result res = respond_error(c, 503, MNEMO_UNAVAILABLE, err);
        free(err);
        return res;
    }
    char *out = mcp_handle(m, r->body ? r->body : "", r->len);
    if (!out) /* notifications and responses: accepted, nothing to say */
        return respond(c, MHD_HTTP_ACCEPTED, NULL, NULL);
    return respond(c, MHD_HTTP_OK, out, "application/json");
}

/* ----------------------------------------------------------------------
 * The page: the files of web/, built in (web.h)
 * -------------------------------------------------------------------- */

/* Their ETags, FNV-1a of the bytes: computed before the workers start. */
static char (*etags)[24];

static void web_init(void)
{
    size_t n = 0;
    while (web_files[n].path)
        n++;
    etags = calloc(n ? n : 1, sizeof *etags);
    for (size_t i = 0; etags && i < n; i++) {
        uint64_t h = 14695981039346656037ull;
        for (size_t k = 0; k < web_files[i].len; k++)
            h = (h ^ web_files[i].data[k]) * 1099511628211ull;
        snprintf(etags[i], sizeof etags[i], "\"%016llx\"", (unsigned long long)h);
    }
}

/* The file URL names ("/" is index.html), or -1. */
static int web_find(const char *url)
{
    if (!etags)
        return -1;
    if (strcmp(url, "/") == 0)
        url = "/index.html";
    for (int i = 0; web_files[i].path; i++)
        if (strcmp(web_files[i].path, url) == 0)
            return i;
    return -1;
}

static const char *web_type(const char *path)
{
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"},   {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},     {".svg", "image/svg+xml"},
        {".json", "application/json"},           {".png", "image/png"},
        {".ico", "image/x-icon"},                {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (strcmp(dot, types[i][0]) == 0)
            return types[i][1];
    return "application/octet-stream";
}

/* Whether the If-None-Match header V names ETAG (a list, or "*"). */
static int etag_matches(const char *v, const char *etag)
{
    if (!v)
        return 0;
    if (strcmp(v, "*") == 0)
        return 1;
    size_t n = strlen(etag);
    for (const char *p = strstr(v, etag); p; p = strstr(p + 1, etag))
        if ((p == v || p[-1] == ' ' || p[-1] == ',' || p[-1] == '/') &&
            (p[n] == 0 || p[n] == ',' || p[n] == ' '))
            return 1;
    return 0;
}

/* Answers GET or HEAD of the page's file I. The files hold no data, so no
 * token is asked; every load revalidates (no-cache): 304 when the ETag
 * still matches, so a new binary's page is never mixed with an old one's
 * cached files. */
static enum MHD_Result serve_web(struct MHD_Connection *c, int i)
{
    const web_file *f = &web_files[i];
    int same = etag_matches(
        mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH), etags[i]);
    struct MHD_Response *r = mhd.create_response_from_buffer(same ? 0 : f->len, (void *)f->data,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    if (!same)
        mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, web_type(f->path));
    mhd.add_response_header(r, MHD_HTTP_HEADER_ETAG, etags[i]);
    mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    mhd.add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self'; "
                            "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    mhd.add_response_header(r, "X-Frame-Options", "DENY");
    mhd.add_response_header(r, "Referrer-Policy", "no-referrer");
    mhd.add_response_header(r, "Keep-Alive", keep_alive);
    unsigned status = same ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK;
    last_status = status;
    enum MHD_Result ok = mhd.queue_response(c, status, r);
    mhd.destroy_response(r);
    return ok;
}

/* ----------------------------------------------------------------------
 * Server-sent events: GET /v1/events
 * -------------------------------------------------------------------- */

typedef struct sse_stream {
    server *s;
    struct MHD_Connection *c;
    unsigned long next;  /* the next event to send */
    unsigned long pings; /* keep-alive comments sent */
    int hello;           /* the retry line is out */
    int suspended;
    struct sse_stream *prev, *next_stream;
} sse_stream;

/* Under elock: wakes every stream waiting for something to send. */
static void wake_streams(server *s)
{
    for (sse_stream *t = s->streams; t; t = t->next_stream)
        if (t->suspended) {
            t->suspended = 0;
            mhd.resume_connection(t->c);
        }
}

/* Announces event NAME with DATA (a JSON object, taken) to every stream. */
static void publish(server *s, const char *name, json_t *data)
{
    char *d = api_dump(data);
    json_decref(data);
    size_t n = d ? strlen(d) + strlen(name) + 24 : 0;
    char *ev = d ? malloc(n) : NULL;
    if (ev)
        snprintf(ev, n, "event: %s\ndata: %s\n\n", name, d);
    free(d);
    if (!ev)
        return;
    pthread_mutex_lock(&s->elock);
    free(s->ring[s->nevents % EVENT_RING]);
    s->ring[s->nevents % EVENT_RING] = ev;
    s->nevents++;
    wake_streams(s);
    pthread_mutex_unlock(&s->elock);
}

/* MHD asks for the stream's next bytes: the events it has not had (a
 * stream that fell more than EVENT_RING behind skips to the oldest kept),
 * a keep-alive comment, or nothing yet: then it waits, suspended. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sse_stream *t = cls;
    server *s = t->s;
    ssize_t n = 0;
    pthread_mutex_lock(&s->elock);
    if (s->ending) {
        pthread_mutex_unlock(&s->elock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (!t->hello) {
        static const char hello[] = "retry: 2000\n: mnemo events\n\n";
        memcpy(buf, hello, sizeof hello - 1);
        n = (ssize_t)sizeof hello - 1;
        t->hello = 1;
    }
    if (s->nevents - t->next > EVENT_RING)
        t->next = s->nevents - EVENT_RING;
    while (t->next < s->nevents) {
        const char *ev = s->ring[t->next % EVENT_RING];
        size_t len = strlen(ev);
        if ((size_t)n + len > max)
            break;
        memcpy(buf + n, ev, len);
        n += (ssize_t)len;
        t->next++;
    }
    if (!n && t->pings != s->pings && max >= 8) {
        memcpy(buf, ": ping\n\n", 8);
        n = 8;
        t->pings = s->pings;
    }
    if (!n) {
        t->suspended = 1;
        mhd.suspend_connection(t->c);
    }
    pthread_mutex_unlock(&s->elock);
    return n;
}

static void sse_free(void *cls)
{
    sse_stream *t = cls;
    server *s = t->s;
    pthread_mutex_lock(&s->elock);
    if (t->prev)
        t->prev->next_stream = t->next_stream;
    else
        s->streams = t->next_stream;
    if (t->next_stream)
        t->next_stream->prev = t->prev;
    s->nstreams--;
    pthread_mutex_unlock(&s->elock);
    free(t);
}

static enum MHD_Result serve_events(server *s, struct MHD_Connection *c)
{
    sse_stream *t = calloc(1, sizeof *t);
    if (!t)
        return MHD_NO;
    t->s = s;
    t->c = c;
    pthread_mutex_lock(&s->elock);
    int full = s->nstreams >= MAX_STREAMS || s->ending;
    if (!full) {
        t->next = s->nevents;
        t->pings = s->pings;
        t->next_stream = s->streams;
        if (s->streams)
            s->streams->prev = t;
        s->streams = t;
        s->nstreams++;
    }
    pthread_mutex_unlock(&s->elock);
    if (full) {
        free(t);
        return respond_error(c, 503, MNEMO_BUSY, "too many event streams open");
    }
    struct MHD_Response *r =
        mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, t, sse_free);
    if (!r) {
        sse_free(t);
        return MHD_NO;
    }
    mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    last_status = 200;
    enum MHD_Result ok = mhd.queue_response(c, 200, r);
    mhd.destroy_response(r);
    return ok;
}

/* Every 15 s a comment on each stream: a proxy or client that drops a
 * quiet connection keeps it, and a client gone is noticed (the write fails). */
static void ping_streams(server *s)
{
    pthread_mutex_lock(&s->elock);
    s->pings++;
    wake_streams(s);
    pthread_mutex_unlock(&s->elock);
}

/* The daemon stops: each stream ends (its last read says so). */
static void end_streams(server *s)
{
    pthread_mutex_lock(&s->elock);
    s->ending = 1;
    wake_streams(s);
    pthread_mutex_unlock(&s->elock);
}

/* Routes: /health, /mcp, /openapi.json, and every operation of api.c's
 * table at its "METHOD /path" (the table is also what /openapi.json
 * describes, so the two cannot drift). */
static enum MHD_Result route(server *s, struct MHD_Connection *c, const char *url,
                             const char *method, const request *r)
{
    int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (strcmp(url, "/health") == 0 || strcmp(url, "/openapi.json") == 0) {
        if (!get) {
            allow = "GET";
            return respond_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, MNEMO_INVALID,
                                 "this endpoint takes GET");
        }
        if (url[1] == 'o')
            return respond_json(c, 200, api_openapi());
        return respond_json(c, 200, json_pack("{s:b,s:s,s:s,s:s}", "ok", 1, "version",
                                              mnemo_version(), "service", "mnemo", "workspace",
                                              s->workspace));
    }
    if (strcmp(url, "/v1/events") == 0) {
        if (!get) {
            allow = "GET";
            return respond_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, MNEMO_INVALID,
                                 "this endpoint takes GET");
        }
        return serve_events(s, c);
    }
    if (strcmp(url, "/mcp") == 0 && !post)
        return respond_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, MNEMO_INVALID,
                             "MCP here is request/response: POST JSON-RPC messages to /mcp");
    char id[256];
    static _Thread_local char allowed[64];
    int known = 0;
    const api_op *op = strcmp(url, "/mcp") == 0
                           ? NULL
                           : api_route(method, url, id, sizeof id, &known, allowed,
                                       sizeof allowed);
    if (!op && strcmp(url, "/mcp") != 0) {
        if (known) {
            allow = allowed;
            char msg[300];
            snprintf(msg, sizeof msg, "use %s on %.200s", allowed, url);
            return respond_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, MNEMO_INVALID, msg);
        }
        char msg[300];
        snprintf(msg, sizeof msg, "no such endpoint: %s %.200s (see GET /openapi.json)", method,
                 url);
        return respond_error(c, 404, MNEMO_NOTFOUND, msg);
    }
    int with_body = post || strcmp(method, "PATCH") == 0;
    if (with_body) {
        const char *ct = mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        int json = ct && strncasecmp(ct, "application/json", 16) == 0 &&
                   (ct[16] == 0 || ct[16] == ';' || ct[16] == ' ');
        if ((r->len || ct) && !json)
            return respond_error(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, MNEMO_INVALID,
                                 "the body must be sent as Content-Type: application/json");
    }
    if (!op)
        return serve_mcp(s, c, r);
    char *err = NULL;
    json_t *args = with_body ? parse_body(r, &err) : json_object();
    if (!args) {
        enum MHD_Result res = respond_error(c, 400, MNEMO_INVALID, err);
        free(err);
        return res;
    }
    if (*id) {
        const char *given = json_string_value(json_object_get(args, "id"));
        if (given && strcmp(given, id) != 0) {
            json_decref(args);
            return respond_error(c, 400, MNEMO_INVALID, "the body's id differs from the URL's");
        }
        json_object_set_new(args, "id", json_string(id));
    }
    return run_op(s, c, op->name, args, op->status);
}

/* ----------------------------------------------------------------------
 * Framing: where a request ends
 * -------------------------------------------------------------------- */

/* The headers that say where a request ends, counted over every value,
 * duplicates included (a lookup sees only the first). */
typedef struct framing {
    int hosts, empty_host, lengths, codings, bad_name;
    const char *length, *coding;
} framing;

/* A field name is a token (RFC 9110): "Content-Length " with a space
 * before the colon is another header to us, and Content-Length to a proxy. */
static int token_name(const char *k)
{
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *k)))
            return 0;
    return 1;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    framing *f = cls;
    if (!token_name(key)) {
        f->bad_name = 1;
    } else if (strcasecmp(key, "Host") == 0) {
        f->hosts++;
        f->empty_host |= !value || !*value;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        f->lengths++;
        f->length = value ? value : "";
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->codings++;
        f->coding = value ? value : "";
    }
    return MHD_YES;
}

/* Why the headers of C leave the end of its request in doubt, or NULL.
 * Two parsers that could disagree on it (this one and a proxy in front)
 * would let a second request ride inside the first's body. */
static const char *framing_error(struct MHD_Connection *c, const char *version)
{
    framing f = {0};
    mhd.get_connection_values(c, MHD_HEADER_KIND, count_header, &f);
    int http10 = strcmp(version, "HTTP/1.0") == 0;
    if (f.bad_name)
        return "malformed header name";
    if (f.lengths > 1)
        return "more than one Content-Length header";
    if (f.lengths && (!*f.length || strspn(f.length, "0123456789") != strlen(f.length)))
        return "malformed Content-Length";
    if (f.lengths && f.codings)
        return "Content-Length and Transfer-Encoding together";
    if (f.codings > 1 || (f.codings && strcasecmp(f.coding, "chunked") != 0))
        return "unsupported Transfer-Encoding: only chunked is accepted";
    if (f.codings && http10)
        return "Transfer-Encoding in an HTTP/1.0 request";
    if (f.hosts > 1)
        return "more than one Host header";
    if (f.empty_host)
        return "empty Host header";
    if (!f.hosts && !http10)
        return "an HTTP/1.1 request needs a Host header";
    return NULL;
}

/* ----------------------------------------------------------------------
 * Requests
 * -------------------------------------------------------------------- */

static enum MHD_Result handle_request(server *s, request **state, struct MHD_Connection *c,
                                     const char *url, const char *method, const char *version,
                                     const char *upload, size_t *upload_size);
static void set_phase(server *s, struct MHD_Connection *c, conn_phase phase);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **state)
{
    last_status = 0;
    closing = 0;
    enum MHD_Result res =
        handle_request(cls, (request **)state, c, url, method, version, upload, upload_size);
    if (*state && last_status)
        ((request *)*state)->status = last_status;
    return res;
}

static enum MHD_Result handle_request(server *s, request **state, struct MHD_Connection *c,
                                     const char *url, const char *method, const char *version,
                                     const char *upload, size_t *upload_size)
{
    request *r = *state;
    if (!r) { /* headers are in: check them before reading any body */
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->start = now_ms();
        snprintf(r->line, sizeof r->line, "%s %s", method, url);
        *state = r;
        pthread_mutex_lock(&s->lock);
        s->inflight++;
        pthread_mutex_unlock(&s->lock);
        set_phase(s, c, W_BODY);
        allow = "POST";
        const char *bad = framing_error(c, version);
        if (bad) { /* answered before the body; nothing after it is read */
            closing = 1;
            return respond_error(c, 400, MNEMO_INVALID, bad);
        }
        int page = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ? web_find(url) : -1;
        if (page >= 0) { /* the page's files hold no data: no token */
            if (!host_ok(s, mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
                return respond_error(c, MHD_HTTP_FORBIDDEN, MNEMO_DENIED,
                                     "unknown Host: use 127.0.0.1 or localhost");
            return serve_web(c, page);
        }
        if (s->token &&
            !token_ok(s, mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
            return respond_error(c, MHD_HTTP_UNAUTHORIZED, MNEMO_DENIED,
                                 "missing or wrong bearer token");
        if (!host_ok(s, mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
            return respond_error(c, MHD_HTTP_FORBIDDEN, MNEMO_DENIED,
                                 "unknown Host: use 127.0.0.1 or localhost");
        if (!origin_ok(s, mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Origin")))
            return respond_error(c, MHD_HTTP_FORBIDDEN, MNEMO_DENIED,
                                 "requests from web pages are not allowed");
        const char *cl = mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->max_body)
            r->too_big = 1;
        if (r->too_big)
            return respond_error(c, MHD_HTTP_CONTENT_TOO_LARGE, MNEMO_INVALID,
                                 "request body too large");
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->too_big || r->len + n > s->max_body) {
            r->too_big = 1;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + n + 1)
                cap *= 2;
            if (cap > s->max_body + 1)
                cap = s->max_body + 1;
            char *b = realloc(r->body, cap);
            if (!b)
                return MHD_NO;
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload, n);
        r->len += n;
        r->body[r->len] = 0;
        return MHD_YES;
    }
    set_phase(s, c, W_BUSY);
    if (r->too_big)
        return respond_error(c, MHD_HTTP_CONTENT_TOO_LARGE, MNEMO_INVALID,
                             "request body too large");
    return route(s, c, url, method, r);
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode why)
{
    server *s = cls;
    set_phase(s, c, W_IDLE);
    request *r = *state;
    if (!r)
        return;
    if (s->verbose)
        fprintf(stderr, "mnemo serve: %s %u %.2f ms%s\n", r->line, r->status,
                now_ms() - r->start,
                why == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    free(r->body);
    free(r);
    *state = NULL;
    pthread_mutex_lock(&s->lock);
    s->inflight--;
    pthread_mutex_unlock(&s->lock);
}

/* ----------------------------------------------------------------------
 * Connections: deadlines, room, the cap per address
 * -------------------------------------------------------------------- */

static int is_loopback(const struct sockaddr *sa);

/* The address of SA into IP, for the cap per address: its length, or 0
 * for loopback (every local process shares it, so a cap would let one
 * lock the others out) and for what is not IP. */
static size_t client_ip(const struct sockaddr *sa, unsigned char ip[16])
{
    if (!sa || is_loopback(sa))
        return 0;
    if (sa->sa_family == AF_INET) {
        memcpy(ip, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family != AF_INET6)
        return 0;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) {
        memcpy(ip, a->s6_addr + 12, 4);
        return 4;
    }
    memcpy(ip, a->s6_addr, 16);
    return 16;
}

static conn_watch *watch_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Under wlock. Both directions: the library sees the end and closes it. */
static void shut(server *s, conn_watch *w)
{
    shutdown(w->fd, SHUT_RDWR);
    w->shut = 1;
    s->nshut++;
}

/* Under wlock: closes the connection idle longest, so that a new client
 * is not refused while idle connections hold every place. */
static void make_room(server *s)
{
    conn_watch *oldest = NULL;
    for (conn_watch *w = s->watched; w; w = w->next)
        if (w->phase == W_IDLE && !w->shut && (!oldest || w->since <= oldest->since))
            oldest = w;
    if (oldest)
        shut(s, oldest);
}

/* The accept policy: an address off loopback may hold --max-per-client
 * connections (those being shut down still count until they close). */
static enum MHD_Result admit(void *cls, const struct sockaddr *sa, socklen_t len)
{
    (void)len;
    server *s = cls;
    unsigned char ip[16];
    size_t n = client_ip(sa, ip);
    if (!n)
        return MHD_YES;
    int held = 0;
    pthread_mutex_lock(&s->wlock);
    for (conn_watch *w = s->watched; w; w = w->next)
        held += w->iplen == n && memcmp(w->ip, ip, n) == 0;
    pthread_mutex_unlock(&s->wlock);
    return held < s->per_client ? MHD_YES : MHD_NO;
}

/* Registers connections as they open and forgets them as they close: MHD
 * notifies the close before it closes the socket, so a descriptor in the
 * list is always the connection's own. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    server *s = cls;
    conn_watch *w = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (!fd || !(w = calloc(1, sizeof *w)))
            return;
        w->conn = c;
        w->fd = fd->connect_fd;
        w->worker = pthread_self();
        w->iplen = client_ip(addr ? addr->client_addr : NULL, w->ip);
        w->phase = W_NEW;
        w->since = now_ms();
        pthread_mutex_lock(&s->wlock);
        w->next = s->watched;
        if (w->next)
            w->next->prev = w;
        s->watched = w;
        s->nconns++;
        if (s->nconns - s->nshut >= s->max_conns)
            make_room(s);
        pthread_mutex_unlock(&s->wlock);
        *socket_context = w;
    } else if (w) {
        pthread_mutex_lock(&s->wlock);
        if (w->prev)
            w->prev->next = w->next;
        else
            s->watched = w->next;
        if (w->next)
            w->next->prev = w->prev;
        s->nconns--;
        s->nshut -= w->shut;
        pthread_mutex_unlock(&s->wlock);
        free(w);
        *socket_context = NULL;
    }
}

/* C moves on to PHASE. A keep-alive connection's next request has its
 * deadline from its request line; a new one's first from the opening. */
static void set_phase(server *s, struct MHD_Connection *c, conn_phase phase)
{
    conn_watch *w = watch_of(c);
    if (!w)
        return;
    pthread_mutex_lock(&s->wlock);
    if (phase == W_IDLE || (phase == W_HEAD && w->phase == W_IDLE))
        w->since = now_ms();
    w->phase = phase;
    pthread_mutex_unlock(&s->wlock);
}

/* MHD's URI logger: called once a request line has arrived, before the
 * headers are read. NULL keeps the handler's first call state-less. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)uri;
    set_phase(cls, c, W_HEAD);
    return NULL;
}

static int overdue(const server *s, const conn_watch *w, double now)
{
    switch (w->phase) {
    case W_BUSY:
        return 0; /* a reply the client does not read: MHD's --timeout */
    case W_IDLE:
        return now - w->since > s->keepalive_ms;
    default: /* a client sending a byte a second never goes idle */
        return now - w->since > s->arrival_ms;
    }
}

/* Shuts down the connections past their deadline, every 200 ms; pings the
 * event streams every 15 s. */
static void *watchdog_main(void *arg)
{
    server *s = arg;
    for (unsigned tick = 1; !s->stop_watchdog; tick++) {
        usleep(200 * 1000);
        if (tick % 75 == 0) /* 15 s */
            ping_streams(s);
        double now = now_ms();
        pthread_mutex_lock(&s->wlock);
        for (conn_watch *w = s->watched; w; w = w->next)
            if (!w->shut && overdue(s, w, now))
                shut(s, w);
        pthread_mutex_unlock(&s->wlock);
    }
    return NULL;
}

/* Writes a whole error reply on FD, the write side then shut. */
static void send_error_and_shut(int fd, unsigned int status, const char *reason,
                                const char *msg)
{
    json_t *err = api_error_json(MNEMO_INVALID, msg);
    char *body = with_newline(api_dump(err));
    json_decref(err);
    char date[64], reply[1024];
    time_t t = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&t, &tm));
    int n = snprintf(reply, sizeof reply,
                     "HTTP/1.1 %u %s\r\nDate: %s\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nCache-Control: no-store\r\n"
                     "X-Content-Type-Options: nosniff\r\nContent-Length: %zu\r\n\r\n%s",
                     status, reason, date, body ? strlen(body) : 0, body ? body : "");
    free(body);
    if (n > 0 && (size_t)n < sizeof reply)
        (void)send(fd, reply, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
}

/* libmicrohttpd 0.9.75 answers a malformed Content-Length itself, before
 * any handler call, with an HTML page whose headers it sends twice. Its
 * log line is the only sign, written on the worker that parses the
 * request while that request is the one of this worker with all its
 * headers in, not handed to the handler, and no reply queued. That one
 * gets the daemon's JSON error instead; its write side is then shut, so
 * the library's own reply fails to send and it closes the connection. */
static void answer_bad_length(server *s, unsigned int status, const char *reason,
                              const char *msg)
{
    pthread_t self = pthread_self();
    int fd = -1;
    pthread_mutex_lock(&s->wlock);
    for (conn_watch *w = s->watched; w && fd < 0; w = w->next)
        if (w->phase == W_HEAD && !w->shut && pthread_equal(w->worker, self) &&
            mhd.get_connection_info(w->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE) &&
            !mhd.get_connection_info(w->conn, MHD_CONNECTION_INFO_HTTP_STATUS)) {
            fd = w->fd;
            w->shut = 1;
            s->nshut++;
        }
    pthread_mutex_unlock(&s->wlock);
    if (fd >= 0) /* this thread serves it: nothing else writes or closes it now */
        send_error_and_shut(fd, status, reason, msg);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    static const char bad[] = "Failed to parse `Content-Length'",
                      big[] = "Too large value of 'Content-Length'";
    if (strncmp(fmt, bad, sizeof bad - 1) == 0)
        answer_bad_length(cls, 400, "Bad Request", "malformed Content-Length");
    else if (strncmp(fmt, big, sizeof big - 1) == 0)
        answer_bad_length(cls, MHD_HTTP_CONTENT_TOO_LARGE, "Content Too Large",
                          "request body too large");
    fputs("mnemo serve: ", stderr);
    vfprintf(stderr, fmt, ap);
}

/* ----------------------------------------------------------------------
 * Listening, the token, the pid file
 * -------------------------------------------------------------------- */

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

/* Binds ADDR ("host:port", "[v6]:port" or "port"). */
static int listen_on(const char *addr, int *loopback, int *family, uint16_t *port)
{
    char host[256] = "127.0.0.1", serv[16];
    const char *colon = strrchr(addr, ':');
    if (!colon) {
        snprintf(serv, sizeof serv, "%s", addr);
    } else {
        size_t n = (size_t)(colon - addr);
        if (n && addr[0] == '[' && addr[n - 1] == ']') {
            addr++;
            n -= 2;
        }
        if (n >= sizeof host) {
            cli_error("serve: --listen: host too long");
            return -1;
        }
        if (n) {
            memcpy(host, addr, n);
            host[n] = 0;
        }
        snprintf(serv, sizeof serv, "%s", colon + 1);
    }
    /* getaddrinfo takes 99999 and binds 99999 % 65536: refuse what no port is. */
    char *end;
    errno = 0;
    long pn = strtol(serv, &end, 10);
    if (!serv[0] || *end || errno || pn < 0 || pn > 65535 || serv[0] == '-' || serv[0] == '+') {
        cli_error("serve: --listen %s: the port must be a number from 0 to 65535 (0 picks a free "
                  "one)",
                  addr);
        return -1;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int e = getaddrinfo(host, serv, &hints, &ai);
    if (e) {
        cli_error("serve: --listen %s: %s", addr, gai_strerror(e));
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        cli_error("serve: cannot listen on %s:%s: %s", host, serv, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    *loopback = is_loopback(ai->ai_addr);
    *family = ai->ai_family;
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* The URL that reaches the socket FD: its own address (127.0.0.2 stays
 * 127.0.0.2), the loopback one for a wildcard. BOUND: the address as bound,
 * wildcard and all, with the port the kernel gave ("0.0.0.0:41873"). */
static void bound_url(int fd, char *url, size_t n, char *self, size_t selfn, char *bound,
                      size_t boundn)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[NI_MAXHOST] = "127.0.0.1", serv[NI_MAXSERV] = "0";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    int v6 = ss.ss_family == AF_INET6;
    snprintf(bound, boundn, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", serv);
    if (!strcmp(host, "0.0.0.0"))
        snprintf(host, sizeof host, "127.0.0.1");
    else if (!strcmp(host, "::"))
        snprintf(host, sizeof host, "::1");
    snprintf(url, n, "http://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", serv);
    snprintf(self, selfn, "%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "");
}

/* How many connections at once: WANT, within the descriptors this process
 * may open, its soft limit raised as far as they need (up to the hard
 * one); RESERVE descriptors stay for the index files, the workers' event
 * loops and the rest. */
static int connection_room(int want, int reserve)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)want + (rlim_t)reserve;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return want < 256 ? want : 256;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return want;
    return rl.rlim_cur > (rlim_t)reserve + 64 ? (int)(rl.rlim_cur - (rlim_t)reserve) : 64;
}

/* The token from MNEMO_TOKEN or a file only its owner can read. */
static int load_token(const char *file, char **out)
{
    *out = NULL;
    const char *env = getenv("MNEMO_TOKEN");
    char buf[1024];
    if (file) {
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            cli_error("serve: cannot read the token file %s: %s", file, strerror(errno));
            if (fd >= 0)
                close(fd);
            return EXIT_USAGE;
        }
        if (st.st_mode & 077) {
            cli_error("serve: the token file %s can be read by others (mode %04o): chmod 600 it",
                      file, (unsigned)(st.st_mode & 07777));
            close(fd);
            return EXIT_USAGE;
        }
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n < 0 || n == (ssize_t)sizeof buf - 1) {
            cli_error("serve: cannot read the token file %s: %s", file,
                      n < 0 ? strerror(errno) : "longer than 1 KiB");
            return EXIT_USAGE;
        }
        buf[n] = 0;
        buf[strcspn(buf, "\r\n")] = 0;
        if (!*buf) {
            cli_error("serve: the token file %s is empty", file);
            return EXIT_USAGE;
        }
        env = buf;
    }
    if (!env || !*env)
        return EXIT_OK;
    if (strlen(env) < 16) {
        cli_error("serve: the token must have at least 16 characters");
        return EXIT_USAGE;
    }
    *out = strdup(env);
    return *out ? EXIT_OK : EXIT_ERROR;
}

/* Waits for one of SIGS; returns it, or 0 once process PARENT is gone
 * (checked every second: when PARENT started us, by getppid() changing,
 * which does not suffer from pid reuse; otherwise by kill(PARENT, 0)). */
static int wait_signal_or_orphan(const sigset_t *sigs, pid_t parent) {
    int ours = getppid() == parent;
    for (;;) {
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(sigs, NULL, &tick);
        if (sig > 0)
            return sig;
        if (ours ? getppid() != parent : (kill(parent, 0) != 0 && errno == ESRCH))
            return 0;
    }
}

/* Locks DB.serve.pid for this daemon's life; fails when another holds it. */
static int lock_pidfile(const char *db, char **path_out, int *fd_out)
{
    size_t n = strlen(db) + 16;
    char *path = malloc(n);
    if (!path)
        return EXIT_ERROR;
    snprintf(path, n, "%s.serve.pid", db);
    int fd = -1;
    for (int tries = 0; tries < 10; tries++) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            cli_error("serve: cannot open %s: %s", path, strerror(errno));
            free(path);
            return EXIT_ERROR;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0)
            break;
        /* Locked; but a daemon that was stopping may have removed the
         * file after this open: then lock the file now at the path. */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            *path_out = path;
            *fd_out = fd;
            return EXIT_OK;
        }
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        cli_error("serve: cannot lock %s", path);
        free(path);
        return EXIT_ERROR;
    }
    char info[512] = "";
    ssize_t r = pread(fd, info, sizeof info - 1, 0);
    info[r > 0 ? r : 0] = 0;
    info[strcspn(info, "\n")] = 0;
    cli_error("serve: another mnemo serve already serves this index: %s", info);
    close(fd);
    free(path);
    return EXIT_BUSY;
}

/* ----------------------------------------------------------------------
 * The command
 * -------------------------------------------------------------------- */

static volatile int stop_watch;

typedef struct watching_ctx {
    server *s;
    mnemo *m;
} watching_ctx;

/* After each sync of the watcher: logged, and announced to the event
 * streams when files changed or the sync failed. */
static void on_sync(void *ud, int rc, const mnemo_sync_stats *st)
{
    watching_ctx *w = ud;
    if (rc) {
        fprintf(stderr, "mnemo serve: sync failed: %s\n", mnemo_errmsg(w->m));
        publish(w->s, "sync", json_pack("{s:b,s:s}", "ok", 0, "error", mnemo_errmsg(w->m)));
    } else if (st->files_added + st->files_changed + st->files_removed + st->files_renamed) {
        fprintf(stderr, "mnemo serve: synced: %zu added, %zu changed, %zu removed\n",
                st->files_added, st->files_changed, st->files_removed);
        publish(w->s, "sync",
                json_pack("{s:b,s:I,s:I,s:I,s:I}", "ok", 1, "added", (json_int_t)st->files_added,
                          "changed", (json_int_t)st->files_changed, "removed",
                          (json_int_t)st->files_removed, "renamed",
                          (json_int_t)st->files_renamed));
    }
}

static void *watch_main(void *arg)
{
    watching_ctx *w = arg;
    mnemo_watch(w->m, &stop_watch, on_sync, w);
    return NULL;
}

int cmd_serve(int argc, char **argv)
{
    enum {
        O_LISTEN,
        O_WORKERS,
        O_TOKEN_FILE,
        O_MAX_BODY,
        O_TIMEOUT,
        O_REQUEST_TIMEOUT,
        O_KEEPALIVE_TIMEOUT,
        O_MAX_CONNECTIONS,
        O_PER_CLIENT,
        O_NO_WATCH,
        O_PARENT,
        O_VERBOSE
    };
    static const cli_opt opts[] = {
        [O_LISTEN] = {"listen", 'l', "ADDR", "host:port to listen on (default 127.0.0.1:7373; "
                                             "port 0 picks a free one)"},
        [O_WORKERS] = {"workers", 0, "N", "worker threads (default: 4)"},
        [O_TOKEN_FILE] = {"token-file", 0, "FILE", "bearer token file, mode 0600 (or MNEMO_TOKEN); "
                                                   "required off loopback"},
        [O_MAX_BODY] = {"max-body", 0, "BYTES", "largest request body (default 1048576)"},
        [O_TIMEOUT] = {"timeout", 0, "SECONDS",
                       "close a connection without progress this long, such as a reply not "
                       "read (default 30)"},
        [O_REQUEST_TIMEOUT] = {"request-timeout", 0, "SECONDS",
                               "a request must arrive whole within this, headers and body "
                               "(default 10)"},
        [O_KEEPALIVE_TIMEOUT] = {"keepalive-timeout", 0, "SECONDS",
                                 "close a keep-alive connection idle this long between "
                                 "requests (default 5)"},
        [O_MAX_CONNECTIONS] = {"max-connections", 0, "N",
                               "connections at once (default 4096); when all are taken, the "
                               "one idle longest makes room"},
        [O_PER_CLIENT] = {"max-per-client", 0, "N",
                          "connections one address off loopback may hold (default 64)"},
        [O_NO_WATCH] = {"no-watch", 0, NULL, "do not sync the workspace as it changes"},
        [O_PARENT] = {"parent", 0, "PID", "stop (as on SIGTERM) when process PID is gone"},
        [O_VERBOSE] = {"verbose", 'v', NULL, "log every request to standard error"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "serve",
                         "mnemo [--workspace DIR] serve [--listen HOST:PORT] [--workers N] "
                         "[--token-file FILE]\n"
                         "       [--max-body BYTES] [--timeout SECONDS] [--request-timeout "
                         "SECONDS]\n"
                         "       [--keepalive-timeout SECONDS] [--max-connections N] "
                         "[--max-per-client N]\n"
                         "       [--no-watch] [--parent PID] [--verbose]",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    int workers = 4, max_body = 1 << 20, timeout = 30, arrival = 10, keepalive = 5;
    int max_conns = 4096, per_client = 64, parent = 0;
    if ((a.val[O_PARENT] && (code = cli_int(a.val[O_PARENT], "parent", 1, INT32_MAX, &parent))) ||
        (a.val[O_WORKERS] && (code = cli_int(a.val[O_WORKERS], "workers", 1, MAX_HANDLES - 2, &workers))) ||
        (a.val[O_REQUEST_TIMEOUT] &&
         (code = cli_int(a.val[O_REQUEST_TIMEOUT], "request-timeout", 1, 3600, &arrival))) ||
        (a.val[O_KEEPALIVE_TIMEOUT] &&
         (code = cli_int(a.val[O_KEEPALIVE_TIMEOUT], "keepalive-timeout", 1, 3600, &keepalive))) ||
        (a.val[O_MAX_CONNECTIONS] &&
         (code = cli_int(a.val[O_MAX_CONNECTIONS], "max-connections", 16, 1 << 20, &max_conns))) ||
        (a.val[O_PER_CLIENT] &&
         (code = cli_int(a.val[O_PER_CLIENT], "max-per-client", 1, 65536, &per_client))) ||
        (a.val[O_MAX_BODY] && (code = cli_int(a.val[O_MAX_BODY], "max-body", 1024, 1 << 30, &max_body))) ||
        (a.val[O_TIMEOUT] && (code = cli_int(a.val[O_TIMEOUT], "timeout", 1, 3600, &timeout))))
        return code;

    server s = {0};
    s.max_body = (size_t)max_body;
    s.verbose = a.val[O_VERBOSE] != NULL;
    pthread_mutex_init(&s.lock, NULL);
    pthread_mutex_init(&s.wlock, NULL);
    pthread_mutex_init(&s.elock, NULL);
    s.arrival_ms = arrival * 1000.0;
    s.keepalive_ms = keepalive * 1000.0;
    snprintf(keep_alive, sizeof keep_alive, "timeout=%d", keepalive);
    s.per_client = per_client;
    if ((code = load_token(a.val[O_TOKEN_FILE], &s.token)))
        return code;
    s.token_len = s.token ? strlen(s.token) : 0;
    int loopback = 1, family = AF_INET, have_watchdog = 0;
    pthread_t watchdog;
    const char *addr = a.val[O_LISTEN] ? a.val[O_LISTEN] : "127.0.0.1:7373";
    char *pidpath = NULL;
    int pidfd = -1, lfd = -1;
    mnemo *m = NULL;
    struct MHD_Daemon *d = NULL;
    pthread_t watcher;
    int watching = 0;
    watching_ctx wctx = {&s, NULL};

    if ((code = cli_config(&a, &s.cfg)) || (code = cli_open(&a, &m)))
        goto out;
    wctx.m = m;
    if ((code = lock_pidfile(mnemo_db_path(m), &pidpath, &pidfd)))
        goto out;
    if (!(s.workspace = strdup(mnemo_workspace(m)))) {
        code = EXIT_ERROR;
        goto out;
    }
    if ((lfd = listen_on(addr, &loopback, &family, &s.port)) < 0) {
        code = EXIT_USAGE;
        goto out;
    }
    char url[NI_MAXHOST + NI_MAXSERV + 16], bound[NI_MAXHOST + NI_MAXSERV + 8];
    bound_url(lfd, url, sizeof url, s.self, sizeof s.self, bound, sizeof bound); /* before any request */
    if (!loopback && !s.token) {
        cli_error("serve: %s is not a loopback address: set MNEMO_TOKEN or --token-file so "
                  "requests must carry a bearer token", addr);
        code = EXIT_USAGE;
        goto out;
    }
    if (mhd_load()) {
        code = EXIT_ERROR;
        goto out;
    }
    web_init();

    mnemo_sync_stats st;
    int rc = mnemo_sync(m, NULL, &st);
    if (rc)
        fprintf(stderr, "mnemo serve: the first sync failed (%s); serving the index as it is\n",
                mnemo_errmsg(m));
    else
        fprintf(stderr, "mnemo serve: index of %s: %zu files\n", mnemo_workspace(m),
                st.files_seen);

    /* Signals go to the waiting main thread only. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* A pool of epoll loops: thousands of idle or slow connections cost a
     * descriptor and a little memory each, not a thread. */
    s.max_conns = connection_room(max_conns, 128 + 16 * workers);
    if (s.max_conns < max_conns)
        fprintf(stderr, "mnemo serve: %d connections at most (the descriptor limit)\n",
                s.max_conns);
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_LINUX_ONLY |
                         MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
                         (family == AF_INET6 ? MHD_USE_IPv6 : 0);
    d = mhd.start_daemon(flags, 0, admit, &s, on_request, &s,
                         MHD_OPTION_EXTERNAL_LOGGER, on_log, &s,
                         MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
                         MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)workers,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned int)s.max_conns,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)timeout,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                         MHD_OPTION_URI_LOG_CALLBACK, on_request_line, &s,
                         MHD_OPTION_NOTIFY_COMPLETED, on_done, &s,
                         MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s,
                         MHD_OPTION_END);
    if (!d) {
        cli_error("serve: the HTTP server did not start");
        code = EXIT_ERROR;
        goto out;
    }
    lfd = -1; /* the daemon owns it */
    if (pthread_create(&watchdog, NULL, watchdog_main, &s) == 0)
        have_watchdog = 1;
    else
        fprintf(stderr, "mnemo serve: cannot start the request deadline watchdog\n");
    {
        json_t *info = json_pack("{s:i,s:s,s:s,s:s}", "pid", (int)getpid(), "url", url,
                                 "workspace", mnemo_workspace(m), "db", mnemo_db_path(m));
        char *t = api_dump(info);
        json_decref(info);
        if (ftruncate(pidfd, 0) != 0 || !t || pwrite(pidfd, t, strlen(t), 0) < 0 ||
            pwrite(pidfd, "\n", 1, (off_t)strlen(t)) < 0)
            fprintf(stderr, "mnemo serve: cannot write %s\n", pidpath);
        free(t);
    }
    if (!a.val[O_NO_WATCH]) {
        if (pthread_create(&watcher, NULL, watch_main, &wctx) == 0)
            watching = 1;
        else
            fprintf(stderr, "mnemo serve: cannot start watching; the index will not follow edits\n");
    }
    /* The address as bound; for a wildcard also the URL this host reaches it at. */
    if (strncmp(url + 7, bound, strlen(bound)) != 0)
        fprintf(stderr, "mnemo serve: listening on %s, %s from this host (%d workers, %d "
                        "connections%s)\n",
                bound, url, workers, s.max_conns, s.token ? ", bearer token required" : "");
    else
        fprintf(stderr, "mnemo serve: listening on %s (%d workers, %d connections%s)\n", url,
                workers, s.max_conns, s.token ? ", bearer token required" : "");

    int sig = 0;
    if (parent > 0)
        sig = wait_signal_or_orphan(&sigs, (pid_t)parent);
    else
        sigwait(&sigs, &sig);
    fprintf(stderr, "mnemo serve: %s: finishing requests in flight\n",
            sig == SIGTERM  ? "SIGTERM"
            : sig == SIGINT ? "SIGINT"
            : sig == SIGHUP ? "SIGHUP"
                            : "the parent process is gone");
    /* Stop accepting, then let the requests begun finish and their
     * replies go out (up to 10 s); idle keep-alive connections are closed. */
    MHD_socket ls = mhd.quiesce_daemon(d);
    end_streams(&s);
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&s.lock);
        int busy = s.inflight;
        pthread_mutex_unlock(&s.lock);
        if (!busy)
            break;
        usleep(10000);
    }
    mhd.stop_daemon(d);
    d = NULL;
    if (ls != MHD_INVALID_SOCKET)
        close(ls);
    code = EXIT_OK;

out:
    if (d) {
        end_streams(&s); /* no stream stays suspended */
        mhd.stop_daemon(d); /* waits for the handlers running now */
    }
    if (have_watchdog) {
        s.stop_watchdog = 1;
        pthread_join(watchdog, NULL);
    }
    if (watching) {
        stop_watch = 1;
        pthread_join(watcher, NULL);
    }
    for (int i = 0; i < s.nhandles; i++)
        mnemo_close(s.handles[i]);
    if (lfd >= 0)
        close(lfd);
    mnemo_close(m);
    if (pidpath) {
        unlink(pidpath);
        close(pidfd);
        free(pidpath);
    }
    mnemo_config_free(s.cfg);
    free(s.token);
    free(s.workspace);
    pthread_mutex_destroy(&s.lock);
    pthread_mutex_destroy(&s.wlock);
    pthread_mutex_destroy(&s.elock);
    for (int i = 0; i < EVENT_RING; i++)
        free(s.ring[i]);
    free(etags);
    etags = NULL;
    return code;
}
