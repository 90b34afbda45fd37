/*
 * test_ui.c - the page mnemo serve answers at /, in a real headless
 * Chromium (Debian's chromium, driven by playwright-core from npm through
 * tests/ui/ui.mjs) against a real daemon on a loopback port over a
 * workspace and store made here; and the page's files over plain HTTP
 * (types, ETag and 304, the Content-Security-Policy). playwright-core is
 * installed once, outside the repository, by tests/ui/setup.sh into
 * MNEMO_TEST_JS_CACHE (default ~/.cache/mnemo-test of the real home); CI
 * installs chromium (scripts/install-deps) and runs setup.sh first.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pg_server.h"
#include "test.h"

#define UI_TOKEN "ui-test-token-0123456789abcdef"


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *store = "sqlite"; /* or a PostgreSQL server's URL */
static const char *extra_paths = NULL; /* the daemon's extraPaths, when set */

/* The workspace "ws" (a copy of the fixture's notes) and one stored fact. */
static void make_workspace(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp -r '%s/tests/fixtures/ws/.' '%s'", test_src_dir(),
             test_path("ws"));
    ASSERT_EQ(system(cmd), 0);
    char *out = NULL, *err = NULL;
    int rc = test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                      test_path("db.sqlite"), "--store", store, "memory", "add",
                      "User prefers green tea", NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "memory add: %s", err ? err : "");
    free(out);
    free(err);
}

/* Starts mnemo serve on LISTEN ("127.0.0.1:0" picks a port), with the
 * token when TOKEN; returns its pid and sets *PORT. */
static pid_t start_daemon(const char *listen, int token, int *port)
{
    unlink(test_path("db.sqlite.serve.pid"));
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no daemon outlives a failed test */
        int fe = open(test_path("serve.log"), O_WRONLY | O_CREAT | O_APPEND, 0600);
        int fi = open("/dev/null", O_RDONLY);
        dup2(fi, 0);
        dup2(fe, 1);
        dup2(fe, 2);
        if (token)
            setenv("MNEMO_TOKEN", UI_TOKEN, 1);
        else
            unsetenv("MNEMO_TOKEN");
        char extra[256];
        snprintf(extra, sizeof extra, "extraPaths=%s", extra_paths ? extra_paths : "");
        execl(test_bin(), test_bin(), "--workspace", test_path("ws"), "--db",
              test_path("db.sqlite"), "--store", store, "--set", "watchDebounceMs=100", "--set",
              extra, "serve", "--listen", listen, (char *)NULL);
        _exit(127);
    }
    double t0 = now_s();
    while (now_s() - t0 < 15) {
        char *s = test_read(test_path("db.sqlite.serve.pid"), NULL);
        json_t *j = s ? json_loads(s, 0, NULL) : NULL;
        free(s);
        const char *url = json_string_value(json_object_get(j, "url"));
        const char *colon = url ? strrchr(url, ':') : NULL;
        if (colon) {
            *port = (int)strtol(colon + 1, NULL, 10);
            json_decref(j);
            return pid;
        }
        json_decref(j);
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            test_fail(__FILE__, __LINE__, "mnemo serve exited: %s",
                      test_read(test_path("serve.log"), NULL));
        usleep(20000);
    }
    test_fail(__FILE__, __LINE__, "mnemo serve did not start");
    return -1;
}

static int stop_daemon(pid_t pid)
{
    int st = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* tests/ui/setup.sh: playwright-core in the cache; its folder into DIR. */
static void setup_js(char *dir, size_t n)
{
    setenv("MNEMO_JS_CACHE", test_js_cache(), 1);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/ui/setup.sh' >'%s' 2>&1", test_src_dir(),
             test_path("setup.out"));
    if (system(cmd) != 0)
        test_fail(__FILE__, __LINE__, "tests/ui/setup.sh failed:\n%s",
                  test_read(test_path("setup.out"), NULL));
    char *out = test_read(test_path("setup.out"), NULL);
    ASSERT(out != NULL);
    char *nl = strrchr(out, '\n');
    if (nl && !nl[1]) {
        *nl = 0;
        nl = strrchr(out, '\n');
    }
    snprintf(dir, n, "%s", nl ? nl + 1 : out);
    free(out);
}

/* Starts tests/ui/ui.mjs SCENARIO against PORT; its output goes to
 * ui-SCENARIO.out. Returns its pid. */
static pid_t start_ui(const char *dir, const char *scenario, int port)
{
    char script[1200], url[64], out[64];
    snprintf(script, sizeof script, "%s/ui.mjs", dir);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    snprintf(out, sizeof out, "ui-%s.out", scenario);
    test_mkdir("sync");
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fo = open(test_path(out), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fo, 1);
        dup2(fo, 2);
        setenv("MNEMO_UI_WS", test_path("ws"), 1);
        setenv("MNEMO_UI_SYNC", test_path("sync"), 1);
        setenv("MNEMO_UI_TOKEN", UI_TOKEN, 1);
        setenv("HOME", test_dir(), 1);
        execlp("node", "node", script, scenario, url, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits for the script (at most SECONDS); its output, which must end with
 * "ui SCENARIO: ok". */
static char *wait_ui(pid_t pid, const char *scenario, int seconds)
{
    char out[64];
    snprintf(out, sizeof out, "ui-%s.out", scenario);
    int st = 0;
    double t0 = now_s();
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (now_s() - t0 > seconds) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            test_fail(__FILE__, __LINE__, "ui.mjs %s took more than %d s:\n%s", scenario, seconds,
                      test_read(test_path(out), NULL));
        }
        usleep(50000);
    }
    char *text = test_read(test_path(out), NULL);
    char want[64];
    snprintf(want, sizeof want, "ui %s: ok", scenario);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !text || !strstr(text, want))
        test_fail(__FILE__, __LINE__, "ui.mjs %s failed:\n%s", scenario, text ? text : "");
    ASSERT_NOT_CONTAINS(text, "FAIL");
    return text;
}

/* Waits for the script's NAME.ready. */
static void await_ready(const char *name)
{
    char rel[64];
    snprintf(rel, sizeof rel, "sync/%s.ready", name);
    double t0 = now_s();
    while (access(test_path(rel), F_OK) != 0) {
        if (now_s() - t0 > 60)
            test_fail(__FILE__, __LINE__, "ui.mjs never reached %s", name);
        usleep(50000);
    }
}

static void go(const char *name)
{
    char rel[64];
    snprintf(rel, sizeof rel, "sync/%s.go", name);
    test_write(rel, "");
}

/* Runs SCENARIO against a fresh daemon over a fresh workspace. */
static char *run_scenario(const char *scenario, int token)
{
    alarm(240);
    char dir[1024];
    setup_js(dir, sizeof dir);
    make_workspace();
    int port = 0;
    pid_t d = start_daemon("127.0.0.1:0", token, &port);
    char *out = wait_ui(start_ui(dir, scenario, port), scenario, 120);
    ASSERT_EQ(stop_daemon(d), 0);
    return out;
}

TEST(ui_load)
{
    char *out = run_scenario("load", 0);
    ASSERT_CONTAINS(out, "ok: the event stream is live");
    ASSERT_CONTAINS(out, "ok: the overview shows the indexed files: 7");
    ASSERT_CONTAINS(out, "ok: no console errors");
    free(out);
}

TEST(ui_search_marks_words)
{
    char *out = run_scenario("search", 0);
    ASSERT_CONTAINS(out, "ok: matched words marked: ");
    ASSERT_CONTAINS(out, "database");
    ASSERT_CONTAINS(out, "ok: the explain panel draws the score breakdown");
    ASSERT_CONTAINS(out, "ok: a search without results says so");
    free(out);
}

TEST(ui_open_result_at_cited_lines)
{
    char *out = run_scenario("open", 0);
    ASSERT_CONTAINS(out, "ok: the result opens its note at its lines: #/note/MEMORY.md?L=");
    ASSERT_CONTAINS(out, "ok: the cited lines are highlighted");
    ASSERT_CONTAINS(out, "ok: a deep link highlights its lines");
    free(out);
}

/* A note under an extra path, outside memory/, is in the tree and opens. */
TEST(ui_tree_shows_extra_paths)
{
    test_write("ws/projects/roadmap.md", "# Roadmap\n- The zebra launch is in March.\n");
    extra_paths = "projects";
    char *out = run_scenario("tree", 0);
    extra_paths = NULL;
    ASSERT_CONTAINS(out, "ok: the tree groups the files: Workspace,Daily notes,Other notes,Extra paths");
    ASSERT_CONTAINS(out, "ok: the extra note opens with its text");
    ASSERT_CONTAINS(out, "ok: the tree marks the open extra note");
    ASSERT_CONTAINS(out, "ok: the tree says how many files the index holds: 8 indexed files in ");
    free(out);
}

TEST(ui_fact_edit_delete_restore_history)
{
    char *out = run_scenario("facts", 0);
    ASSERT_CONTAINS(out, "ok: the history: ADD,UPDATE,DELETE,RESTORE");
    ASSERT_CONTAINS(out, "ok: the update shows the old and new text");
    /* the page shows the message the CLI gives for a secret */
    char *cout = NULL, *cerr = NULL;
    int rc = test_cli(&cout, &cerr, NULL, "--workspace", test_path("ws"), "--db",
                      test_path("db.sqlite"), "memory", "add",
                      "the deploy key is ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", NULL);
    ASSERT(rc != 0);
    const char *why = strstr(cerr, "refusing to store");
    ASSERT(why != NULL);
    char line[512];
    snprintf(line, sizeof line, "refused: %.*s", (int)strcspn(why, "\n"), why);
    ASSERT_CONTAINS(out, line);
    /* and the store holds the restored, edited fact */
    char *list = NULL, *lerr = NULL;
    ASSERT_EQ(test_cli(&list, &lerr, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "memory", "list", "--json", NULL),
              0);
    ASSERT_CONTAINS(list, "User prefers jasmine tea in the morning");
    ASSERT_NOT_CONTAINS(list, "ghp_");
    free(out);
    free(cout);
    free(cerr);
    free(list);
    free(lerr);
}

TEST(ui_note_changed_on_disk_shows_up)
{
    char *out = run_scenario("live", 0);
    ASSERT_CONTAINS(out, "ok: the note changed on disk shows up without a reload");
    ASSERT_CONTAINS(out, "Index updated: 0 added, 1 changed, 0 removed");
    ASSERT_CONTAINS(out, "ok: the new line is found");
    ASSERT_CONTAINS(out, "ok: a query being typed survives the update");
    free(out);
}

TEST(ui_token_asked_once)
{
    char *out = run_scenario("token", 1);
    ASSERT_CONTAINS(out, "ok: the page asks for the token");
    ASSERT_CONTAINS(out, "ok: a wrong token is refused");
    ASSERT_CONTAINS(out, "ok: with the token the search works");
    ASSERT_CONTAINS(out, "ok: the token is in no URL");
    free(out);
}

TEST(ui_daemon_gone_and_back)
{
    alarm(240);
    char dir[1024];
    setup_js(dir, sizeof dir);
    make_workspace();
    int port = 0, again = 0;
    pid_t d = start_daemon("127.0.0.1:0", 0, &port);
    pid_t ui = start_ui(dir, "restart", port);
    await_ready("stop");
    ASSERT_EQ(stop_daemon(d), 0);
    go("stop");
    await_ready("start");
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    d = start_daemon(listen, 0, &again);
    ASSERT_EQ(again, port);
    go("start");
    char *out = wait_ui(ui, "restart", 120);
    ASSERT_EQ(stop_daemon(d), 0);
    ASSERT_CONTAINS(out, "ok: the page says the daemon is unavailable");
    ASSERT_CONTAINS(out, "ok: a failed search shows the error, not \"nothing found\"");
    ASSERT_CONTAINS(out, "ok: the event stream is live again");
    free(out);
}

/* The search view on the PostgreSQL backend (Debian's PostgreSQL 15): the
 * page only uses /v1, which both backends serve; then the database goes
 * away under the daemon and comes back. */
TEST(ui_search_on_postgres)
{
    alarm(240);
    pg_server s;
    pg_debian_start(&s);
    static char url[256];
    snprintf(url, sizeof url, "%s", pg_url(&s));
    store = url;
    char *out = run_scenario("search", 0);
    ASSERT_CONTAINS(out, "ok: matched words marked: ");
    ASSERT_CONTAINS(out, "ok: the explain panel draws the score breakdown");
    free(out);
    char dir[1024];
    setup_js(dir, sizeof dir);
    int port = 0;
    pid_t d = start_daemon("127.0.0.1:0", 0, &port);
    pid_t ui = start_ui(dir, "dbdown", port);
    await_ready("stop");
    pg_debian_kill(&s);
    go("stop");
    await_ready("start");
    pg_debian_resume(&s);
    go("start");
    out = wait_ui(ui, "dbdown", 120);
    ASSERT_EQ(stop_daemon(d), 0);
    ASSERT_CONTAINS(out, "ok: with the database gone the search shows the daemon's error: ");
    ASSERT_CONTAINS(out, "ok: the banner says the backend is unavailable");
    ASSERT_CONTAINS(out, "ok: the banner goes once the backend answers again");
    ASSERT_CONTAINS(out, "ok: the search works again once the database is back");
    free(out);
    pg_stop(&s);
    store = "sqlite";
}

/* ---- the page's files over plain HTTP ---- */

/* METHOD PATH with the extra header lines EXTRA and BODY (JSON, or NULL);
 * the whole reply. */
static char *http_req(int port, const char *method, const char *path, const char *extra,
                      const char *body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s"
                     "%s%zu\r\n\r\n%s",
                     method, path, port, extra ? extra : "",
                     body ? "Content-Type: application/json\r\nContent-Length: "
                          : "Content-Length: ",
                     body ? strlen(body) : 0, body ? body : "");
    ASSERT(send(fd, req, (size_t)n, MSG_NOSIGNAL) == n);
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = recv(fd, buf + len, cap - len - 1, 0)) > 0) {
        len += (size_t)r;
        if (len + 1 >= cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    close(fd);
    return buf;
}

static char *http_get(int port, const char *path, const char *extra)
{
    return http_req(port, "GET", path, extra, NULL);
}

/* The value of header NAME in REPLY, into OUT. */
static int header(const char *reply, const char *name, char *out, size_t n)
{
    char want[128];
    snprintf(want, sizeof want, "\r\n%s: ", name);
    const char *p = strcasestr(reply, want);
    if (!p)
        return 0;
    p += strlen(want);
    snprintf(out, n, "%.*s", (int)strcspn(p, "\r\n"), p);
    return 1;
}

TEST(ui_assets_headers_and_304)
{
    make_workspace();
    int port = 0;
    pid_t d = start_daemon("127.0.0.1:0", 1, &port);
    char *r = http_get(port, "/", NULL);
    char v[1024], etag[128];
    ASSERT(strncmp(r, "HTTP/1.1 200", 12) == 0); /* no token needed for the page */
    ASSERT(header(r, "Content-Type", v, sizeof v));
    ASSERT_STR_EQ(v, "text/html; charset=utf-8");
    ASSERT(header(r, "Content-Security-Policy", v, sizeof v));
    ASSERT_CONTAINS(v, "default-src 'self'");
    ASSERT_CONTAINS(v, "frame-ancestors 'none'");
    ASSERT_NOT_CONTAINS(v, "unsafe-inline");
    ASSERT(header(r, "X-Content-Type-Options", v, sizeof v));
    ASSERT_STR_EQ(v, "nosniff");
    ASSERT(header(r, "Cache-Control", v, sizeof v));
    ASSERT_STR_EQ(v, "no-cache");
    ASSERT(header(r, "ETag", etag, sizeof etag));
    ASSERT(etag[0] == '"' && strlen(etag) > 4);
    ASSERT_CONTAINS(r, "<script type=\"module\" src=\"app.js\"></script>");
    ASSERT_NOT_CONTAINS(r, "<script>"); /* no inline script: the CSP would block it */
    ASSERT_NOT_CONTAINS(r, "style=");
    free(r);
    /* the same ETag: 304 without a body */
    char inm[256];
    snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", etag);
    r = http_get(port, "/index.html", inm);
    ASSERT(strncmp(r, "HTTP/1.1 304", 12) == 0);
    ASSERT(header(r, "ETag", v, sizeof v));
    ASSERT_STR_EQ(v, etag);
    ASSERT(strstr(r, "\r\n\r\n") && strstr(r, "\r\n\r\n")[4] == 0);
    free(r);
    r = http_get(port, "/index.html", "If-None-Match: \"0000000000000000\"\r\n");
    ASSERT(strncmp(r, "HTTP/1.1 200", 12) == 0);
    free(r);
    static const char *const types[][2] = {{"/app.js", "text/javascript; charset=utf-8"},
                                           {"/app.css", "text/css; charset=utf-8"},
                                           {"/icon.svg", "image/svg+xml"}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        r = http_get(port, types[i][0], NULL);
        ASSERT(strncmp(r, "HTTP/1.1 200", 12) == 0);
        ASSERT(header(r, "Content-Type", v, sizeof v));
        ASSERT_STR_EQ(v, types[i][1]);
        free(r);
    }
    /* the data still needs the token; a file that is not the page's is 404 */
    r = http_get(port, "/v1/files", NULL);
    ASSERT(strncmp(r, "HTTP/1.1 401", 12) == 0);
    free(r);
    r = http_get(port, "/v1/files", "Authorization: Bearer " UI_TOKEN "\r\n");
    ASSERT(strncmp(r, "HTTP/1.1 200", 12) == 0);
    ASSERT_CONTAINS(r, "\"path\":\"memory/2026-11-02.md\"");
    free(r);
    r = http_get(port, "/secret.txt", "Authorization: Bearer " UI_TOKEN "\r\n");
    ASSERT(strncmp(r, "HTTP/1.1 404", 12) == 0);
    free(r);
    ASSERT_EQ(stop_daemon(d), 0);
}

/* /v1/events: a stream that does not hold up other requests, announces a
 * write, and ends when the daemon stops. */
TEST(ui_events_stream)
{
    make_workspace();
    int port = 0;
    pid_t d = start_daemon("127.0.0.1:0", 0, &port);
    int fds[8];
    for (int i = 0; i < 8; i++) { /* more streams than the daemon has workers */
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {0};
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ASSERT(connect(fds[i], (struct sockaddr *)&sa, sizeof sa) == 0);
        char req[256];
        int n = snprintf(req, sizeof req, "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                         port);
        ASSERT(send(fds[i], req, (size_t)n, MSG_NOSIGNAL) == n);
    }
    double t0 = now_s();
    char *r = http_get(port, "/health", NULL);
    ASSERT(now_s() - t0 < 5);
    ASSERT_CONTAINS(r, "\"ok\":true");
    free(r);
    r = http_req(port, "POST", "/v1/memories", NULL, "{\"text\":\"User drinks oolong\"}");
    ASSERT(strncmp(r, "HTTP/1.1 201", 12) == 0);
    free(r);
    /* the first stream sees the write */
    char buf[4096] = "";
    size_t len = 0;
    struct timeval tv = {5, 0};
    setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (len < sizeof buf - 1 && !strstr(buf, "event: memory")) {
        ssize_t n = recv(fds[0], buf + len, sizeof buf - 1 - len, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = 0;
    }
    ASSERT_CONTAINS(buf, "Content-Type: text/event-stream");
    ASSERT_CONTAINS(buf, "event: memory");
    ASSERT_CONTAINS(buf, "\"op\":\"memory_add\"");
    /* SIGTERM ends the streams: the daemon exits promptly and cleanly */
    t0 = now_s();
    ASSERT_EQ(stop_daemon(d), 0);
    ASSERT(now_s() - t0 < 5);
    for (int i = 0; i < 8; i++)
        close(fds[i]);
}

/* A free loopback port (bound, then let go). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    ASSERT(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    ASSERT(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* mnemo ui starts a daemon, says when no browser opens, prints the URL;
 * a second run reuses the daemon and hands the URL to $BROWSER. */
TEST(ui_command_starts_then_reuses_the_daemon)
{
    make_workspace();
    int port = free_port();
    char listen[64], url[96];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/\n", port);
    setenv("BROWSER", "/nonexistent/browser", 1);
    setenv("TMPDIR", test_dir(), 1);
    char *out = NULL, *err = NULL;
    int rc = test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                      test_path("db.sqlite"), "ui", "--listen", listen, NULL);
    const char *p = err ? strstr(err, "started the daemon (pid ") : NULL;
    pid_t pid = p ? (pid_t)strtol(p + strlen("started the daemon (pid "), NULL, 10) : 0;
    /* the browser: a script that writes down what it was given */
    char script[2048];
    snprintf(script, sizeof script, "#!/bin/sh\necho \"$1\" > '%s'\n", test_path("opened"));
    test_write("browser.sh", script);
    chmod(test_path("browser.sh"), 0700);
    setenv("BROWSER", test_path("browser.sh"), 1);
    char *out2 = NULL, *err2 = NULL;
    int rc2 = test_cli(&out2, &err2, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "ui", "--listen", listen, NULL);
    for (int i = 0; i < 100 && access(test_path("opened"), F_OK) != 0; i++)
        usleep(20000);
    char *opened = test_read(test_path("opened"), NULL);
    if (pid > 0) { /* not our child: stopped, then gone once its pid file is */
        kill(pid, SIGTERM);
        for (int i = 0; i < 500 && access(test_path("db.sqlite.serve.pid"), F_OK) == 0; i++)
            usleep(20000);
    }
    ASSERT_EQ(rc, 0);
    ASSERT(pid > 0);
    ASSERT_STR_EQ(out, url);
    ASSERT_CONTAINS(err, "no browser could be opened (set $BROWSER)");
    ASSERT_EQ(rc2, 0);
    ASSERT_STR_EQ(out2, url);
    ASSERT_CONTAINS(err2, "reusing the daemon that answers at");
    ASSERT_NOT_CONTAINS(err2, "no browser");
    ASSERT(opened != NULL);
    ASSERT_STR_EQ(opened, url);
    ASSERT(access(test_path("db.sqlite.serve.pid"), F_OK) != 0);
    free(out);
    free(err);
    free(out2);
    free(err2);
    free(opened);
}
