/*
 * test_mcp.c - mnemo mcp (MCP over stdio): the protocol by hand, message
 * by message, and the official MCP TypeScript SDK client from npm against
 * both transports (stdio and mnemo serve's /mcp).
 */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "backend.h"
#include "test.h"

static void workspace(void)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- The billing service runs on host zephyr-7.\n"
                               "- Deploys go through the acme/billing pipeline.\n");
    /* An older note that a stored fact will replace (sdk_client.mjs). */
    test_write("ws/USER.md", "# User\n\n- Favourite editor: Neovim, with a Gruvbox theme.\n");
    struct utimbuf old = {1735689600, 1735689600}; /* 2025-01-01 */
    utime(test_path("ws/USER.md"), &old);
}

/* Runs mnemo mcp on the lines of INPUT; returns the response lines parsed. */
static json_t *mcp_session(const char *input)
{
    char *out = NULL, *err = NULL;
    int rc = test_cli(&out, &err, input, "--workspace", test_path("ws"), "--db",
                      test_path("db.sqlite"), "mcp", NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "mnemo mcp exited %d: %s", rc, err);
    json_t *lines = json_array();
    for (char *p = out, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            test_fail(__FILE__, __LINE__, "unterminated line: %s", p);
        *nl = 0;
        json_t *j = json_loads(p, 0, NULL);
        if (!j)
            test_fail(__FILE__, __LINE__, "stdout carries a non-JSON line: %s", p);
        json_array_append_new(lines, j);
    }
    free(out);
    free(err);
    return lines;
}

static json_t *by_id(json_t *lines, int id)
{
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l) if (json_integer_value(json_object_get(l, "id")) == id) return l;
    return NULL;
}

#define INIT(v)                                                                                \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":" \
    "\"" v "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"     \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"

TEST(mcp_stdio_tools)
{
    workspace();
    json_t *s = mcp_session(
        INIT("2025-06-18")
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"memory_search\",\"arguments\":{\"query\":\"zephyr\",\"maxResults\":2}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"memory_add\",\"arguments\":{\"text\":\"User prefers dark mode\","
        "\"category\":\"preference\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"memory_list\",\"arguments\":{}}}\n");
    /* The notification got no answer: five responses. */
    ASSERT_EQ(json_array_size(s), 5);
    json_t *init = json_object_get(by_id(s, 1), "result");
    ASSERT_STR_EQ(json_string_value(json_object_get(init, "protocolVersion")), "2025-06-18");
    ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(init, "serverInfo"), "name")),
                  "mnemo");

    json_t *tools = json_object_get(json_object_get(by_id(s, 2), "result"), "tools");
    ASSERT_EQ(json_array_size(tools), 9);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *schema = json_object_get(t, "inputSchema");
        ASSERT(json_is_false(json_object_get(schema, "additionalProperties")));
        ASSERT_STR_EQ(json_string_value(json_object_get(schema, "type")), "object");
    }

    /* structuredContent is the CLI's --json output. */
    char *cli = NULL;
    ASSERT_EQ(test_cli(&cli, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("db.sqlite"), "search", "--json", "-n", "2", "zephyr", NULL),
              0);
    json_t *want = json_loads(cli, 0, NULL);
    free(cli);
    json_t *r3 = json_object_get(by_id(s, 3), "result");
    ASSERT(json_equal(json_object_get(r3, "structuredContent"), want));
    json_decref(want);
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(r3, "content"), 0), "text"));
    ASSERT_CONTAINS(text, "MEMORY.md#L3-L3");

    json_t *r4 = json_object_get(json_object_get(by_id(s, 4), "result"), "structuredContent");
    ASSERT_STR_EQ(json_string_value(json_object_get(r4, "category")), "preference");
    json_t *r5 = json_object_get(json_object_get(by_id(s, 5), "result"), "structuredContent");
    ASSERT_EQ(json_integer_value(json_object_get(r5, "total")), 1);
    json_decref(s);
}

TEST(mcp_stdio_errors)
{
    workspace();
    json_t *s = mcp_session(
        INIT("1999-01-01")
        "this is not json\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"memory_search\",\"arguments\":{\"query\":\"x\",\"maxResults\":1000}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"memory_add\",\"arguments\":{\"text\":\"password: hunter2hunter2\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":\"x\"}\n"
        "{\"id\":7,\"method\":\"ping\"}\n"
        "[{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"},"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}]\n"
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"memory_search\",\"arguments\":{\"query\":\"zephyr\"}}}\n"
        "[]\n"
        "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9\xc3\xa9\"}\n");
    /* An unknown version is answered with the newest this server speaks. */
    ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(by_id(s, 1), "result"),
                                                    "protocolVersion")),
                  "2025-11-25");
    /* The parse error has id null. */
    json_t *pe = json_array_get(s, 1);
    ASSERT(json_is_null(json_object_get(pe, "id")));
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(pe, "error"), "code")), -32700);
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(by_id(s, 2), "error"), "code")),
              -32602);
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(by_id(s, 3), "error"), "code")),
              -32601);
    /* Bad arguments and refused writes are tool errors, not protocol errors. */
    json_t *r4 = json_object_get(by_id(s, 4), "result");
    ASSERT(json_is_true(json_object_get(r4, "isError")));
    ASSERT_CONTAINS(json_string_value(json_object_get(
                        json_array_get(json_object_get(r4, "content"), 0), "text")),
                    "maxResults");
    ASSERT(json_is_true(json_object_get(json_object_get(by_id(s, 5), "result"), "isError")));
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(by_id(s, 6), "error"), "code")),
              -32602);
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(by_id(s, 7), "error"), "code")),
              -32600);
    /* A batch gets an array of the responses due. */
    json_t *batch = json_array_get(s, 8);
    ASSERT(json_is_array(batch));
    ASSERT_EQ(json_array_size(batch), 1);
    /* And the server is still there. */
    json_t *r9 = json_object_get(by_id(s, 9), "result");
    ASSERT(!json_object_get(r9, "isError"));
    /* An empty batch gets one error object; a name cut inside a character
     * still gets its answer. */
    json_t *eb = json_array_get(s, 10);
    ASSERT(json_is_object(eb));
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(eb, "error"), "code")), -32600);
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(by_id(s, 10), "error"), "code")),
              -32601);
    ASSERT_EQ(json_array_size(s), 12);
    json_decref(s);
}

/* ---- the official SDK client ---- */

/* Installs the SDK (tests/mcp/setup.sh) and returns its folder. */
static char *sdk_dir(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/tests/mcp/setup.sh", test_src_dir());
    char *out = NULL, *err = NULL;
    pid_t pid;
    int p[2], e[2];
    if (pipe(p) || pipe(e))
        return NULL;
    if ((pid = fork()) == 0) {
        dup2(p[1], 1);
        dup2(e[1], 2);
        close(p[0]);
        close(e[0]);
        /* The cache lives outside the test's temporary HOME. */
        execl("/bin/sh", "sh", cmd, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    close(e[1]);
    char buf[4096];
    size_t n = 0;
    ssize_t r;
    while ((r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(p[0]);
    char ebuf[4096];
    n = 0;
    while ((r = read(e[0], ebuf + n, sizeof ebuf - 1 - n)) > 0)
        n += (size_t)r;
    ebuf[n] = 0;
    close(e[0]);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        test_fail(__FILE__, __LINE__, "tests/mcp/setup.sh failed: %s", ebuf);
    buf[strcspn(buf, "\n")] = 0;
    out = strdup(buf);
    (void)err;
    return out;
}

static int run_node(const char *dir, char **out, const char *a1, const char *a2, const char *a3,
                    const char *a4, const char *a5)
{
    char script[1024], outp[1024];
    snprintf(script, sizeof script, "%s/sdk_client.mjs", dir);
    snprintf(outp, sizeof outp, "%s/.node-out", test_dir());
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fo, 1);
        dup2(fo, 2);
        execlp("node", "node", script, a1, a2, a3, a4, a5, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    *out = test_read(outp, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The npm packages are installed once under build/js (the runner gives each
 * test a fresh HOME, so a cache there would not last). */
static const char *js_cache(void)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/build/js", test_src_dir());
    return buf;
}

TEST(mcp_sdk_client_stdio)
{
    workspace();
    setenv("MNEMO_JS_CACHE", js_cache(), 1);
    char *dir = sdk_dir();
    ASSERT(dir && *dir);
    char *out = NULL;
    int rc = run_node(dir, &out, "stdio", test_bin(), test_path("ws"), test_path("db.sqlite"),
                      NULL);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "SDK client over stdio failed (%d):\n%s", rc, out);
    ASSERT_CONTAINS(out, "checks passed");
    ASSERT_CONTAINS(out, "ok unknown tool is a protocol error");
    free(out);
    free(dir);
}

TEST(mcp_sdk_client_http)
{
    workspace();
    setenv("MNEMO_JS_CACHE", js_cache(), 1);
    char *dir = sdk_dir();
    ASSERT(dir && *dir);
    pid_t d = fork();
    if (d == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no daemon outlives a failed test */
        int fe = open(test_path("serve.log"), O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fe, 2);
        execl(test_bin(), test_bin(), "--workspace", test_path("ws"), "--db",
              test_path("db.sqlite"), "serve", "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    char url[256] = "";
    for (int i = 0; i < 500 && !*url; i++) {
        usleep(10000);
        char *pid = test_read(test_path("db.sqlite.serve.pid"), NULL);
        json_t *j = pid ? json_loads(pid, 0, NULL) : NULL;
        if (json_string_value(json_object_get(j, "url")))
            snprintf(url, sizeof url, "%s", json_string_value(json_object_get(j, "url")));
        json_decref(j);
        free(pid);
    }
    ASSERT(*url);
    char *out = NULL;
    int rc = run_node(dir, &out, "http", url, NULL, NULL, NULL);
    kill(d, SIGTERM);
    int st;
    waitpid(d, &st, 0);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "SDK client over HTTP failed (%d):\n%s", rc, out);
    ASSERT_CONTAINS(out, "checks passed");
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(out);
    free(dir);
}

/* A mnemo mcp process spoken to one message at a time. */
typedef struct mcp_proc {
    pid_t pid;
    FILE *in, *out;
} mcp_proc;

static void mcp_start(mcp_proc *p, const char *store)
{
    int to[2], from[2];
    ASSERT(pipe(to) == 0 && pipe(from) == 0);
    p->pid = fork();
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(to[0], 0);
        dup2(from[1], 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2); /* its notes of each sync */
        close(to[1]);
        close(from[0]);
        execl(test_bin(), "mnemo", "--workspace", test_path("ws"), "--db",
              test_path("db.sqlite"), "--store", store, "mcp", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->in = fdopen(to[1], "w");
    p->out = fdopen(from[0], "r");
}

/* Sends LINE and returns the response to it, parsed. */
static json_t *mcp_ask(mcp_proc *p, const char *line)
{
    fputs(line, p->in);
    fflush(p->in);
    char *resp = NULL;
    size_t cap = 0;
    if (getline(&resp, &cap, p->out) <= 0)
        test_fail(__FILE__, __LINE__, "mnemo mcp closed its output");
    json_t *j = json_loads(resp, 0, NULL);
    if (!j)
        test_fail(__FILE__, __LINE__, "not JSON: %s", resp);
    free(resp);
    return j;
}

static void mcp_stop(mcp_proc *p)
{
    fclose(p->in);
    fclose(p->out);
    int status;
    waitpid(p->pid, &status, 0);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The paths memory_search answered with, one per line. */
static char *search_paths(mcp_proc *p, int id, const char *query)
{
    char line[512];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"memory_search\",\"arguments\":{\"query\":\"%s\"}}}\n",
             id, query);
    json_t *r = mcp_ask(p, line);
    json_t *res = json_object_get(json_object_get(json_object_get(r, "result"),
                                                  "structuredContent"),
                                  "results");
    ASSERT(json_is_array(res));
    char *out = calloc(1, 4096);
    size_t i;
    json_t *x;
    json_array_foreach(res, i, x)
    {
        strncat(out, json_string_value(json_object_get(x, "path")), 4000 - strlen(out));
        strcat(out, "\n");
    }
    json_decref(r);
    return out;
}

/* mnemo mcp has no watcher: before a search it syncs what changed since
 * the last one, so a note written while it runs is found at once, and one
 * deleted is gone; an index that was never built is built. */
BACKEND_TEST(mcp_stdio_index_follows_edits)
{
    workspace();
    mcp_proc p;
    mcp_start(&p, be_store());
    json_t *r = mcp_ask(&p, INIT("2025-06-18"));
    json_decref(r);
    char *hits = search_paths(&p, 2, "zephyr"); /* no index yet: built now */
    ASSERT_CONTAINS(hits, "MEMORY.md");
    free(hits);
    hits = search_paths(&p, 3, "koala");
    ASSERT_STR_EQ(hits, "");
    free(hits);
    test_mkdir("ws/memory");
    test_write("ws/memory/2026-12-01.md", "# 2026-12-01\n\n- The koala enclosure opens on Friday.\n");
    hits = search_paths(&p, 4, "koala");
    ASSERT_STR_EQ(hits, "memory/2026-12-01.md\n");
    free(hits);
    test_write("ws/memory/2026-12-01.md", "# 2026-12-01\n\n- The wombat enclosure opens on Friday.\n");
    hits = search_paths(&p, 5, "koala");
    ASSERT_STR_EQ(hits, "");
    free(hits);
    hits = search_paths(&p, 6, "wombat");
    ASSERT_STR_EQ(hits, "memory/2026-12-01.md\n");
    free(hits);
    ASSERT(unlink(test_path("ws/memory/2026-12-01.md")) == 0);
    hits = search_paths(&p, 7, "wombat");
    ASSERT_STR_EQ(hits, "");
    free(hits);
    mcp_stop(&p);
}
