/*
 * cmd_doctor.c - `mnemo doctor`: checks what a working set-up needs (the
 * configuration, the workspace, the index, the embedding provider, the
 * daemon if one is configured, and the OpenClaw and Claude Code wiring)
 * and says what to fix.
 *
 * Each check ends "ok", "warn" (works, but something is off), "fail"
 * (broken: the exit code is 1) or "skip" (not set up, or not checkable
 * because an earlier check failed); a warning or failure carries the fix.
 * It reads only: it never builds an index or edits a file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define DAEMON_TIMEOUT_MS 1000
#define DEFAULT_URL "http://127.0.0.1:7373"

typedef struct report {
    json_t *checks; /* [{"name","status","detail","fix"}] */
    int failed;
    int warned; /* checks that warn */
} report;

/* Adds a check to R. FIX may be NULL; DETAIL is printf-style. */
static void add(report *r, const char *name, const char *status, const char *fix,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void add(report *r, const char *name, const char *status, const char *fix,
                const char *fmt, ...)
{
    char detail[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    json_t *c = json_pack("{s:s,s:s,s:s}", "name", name, "status", status, "detail", detail);
    if (c && fix)
        json_object_set_new(c, "fix", json_string(fix));
    json_array_append_new(r->checks, c);
    r->failed |= strcmp(status, "fail") == 0;
    r->warned += strcmp(status, "warn") == 0;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* DIR/NAME into OUT ("" when too long: no such file). */
static const char *join(char *out, size_t n, const char *dir, const char *name)
{
    if ((size_t)snprintf(out, n, "%s/%s", dir, name) >= n)
        out[0] = 0;
    return out;
}

/* Is the program a command line starts with (up to the first space) an
 * executable: a path, or a name found on PATH? An empty command is not. */
static int runnable(const char *cmdline)
{
    char prog[PATH_MAX];
    size_t n = strcspn(cmdline, " \t");
    if (n == 0 || n >= sizeof prog)
        return 0;
    memcpy(prog, cmdline, n);
    prog[n] = 0;
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t l = strcspn(path, ":");
        char cand[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof cand, "%.*s/%s", (int)l, path, prog) < sizeof cand &&
            access(cand, X_OK) == 0 && is_file(cand))
            return 1;
        path += l + (path[l] == ':');
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * The daemon: GET /health over plain HTTP
 * ---------------------------------------------------------------------- */

/* Sends GET /health to URL (http://host[:port][/]). 0 with the reply's
 * body in BODY, else -1 with the reason in WHY. */
int cli_health(const char *url, char *body, size_t bodylen, char *why, size_t whylen)
{
    char host[256] = "", port[16] = "80";
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0) {
        snprintf(why, whylen, "only http:// addresses can be checked");
        return -1;
    }
    p += 7;
    const char *at = strchr(p, '@');
    if (at && at < p + strcspn(p, "/?#"))
        p = at + 1; /* user:password@ is not the host; the daemon takes a bearer token */
    size_t hl = strcspn(p, ":/");
    if (hl == 0 || hl >= sizeof host) {
        snprintf(why, whylen, "no host in the address");
        return -1;
    }
    memcpy(host, p, hl);
    host[hl] = 0;
    p += hl;
    if (*p == ':') {
        size_t pl = strcspn(p + 1, "/");
        if (pl == 0 || pl >= sizeof port) {
            snprintf(why, whylen, "bad port in the address");
            return -1;
        }
        memcpy(port, p + 1, pl);
        port[pl] = 0;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g) {
        snprintf(why, whylen, "%s: %s", host, gai_strerror(g));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = -1;
    if (fd < 0) {
        snprintf(why, whylen, "socket: %s", strerror(errno));
        goto done;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
        snprintf(why, whylen, "connect: %s", strerror(errno));
        goto done;
    }
    struct pollfd pf = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t el = sizeof err;
    if (poll(&pf, 1, DAEMON_TIMEOUT_MS) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
        snprintf(why, whylen, "connect: %s", err ? strerror(err) : "timed out");
        goto done;
    }
    char req[512];
    int rl = snprintf(req, sizeof req,
                      "GET /health HTTP/1.0\r\nHost: %s:%s\r\nConnection: close\r\n\r\n", host,
                      port);
    if (send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl) {
        snprintf(why, whylen, "send: %s", strerror(errno));
        goto done;
    }
    char resp[8192];
    size_t got = 0;
    for (;;) {
        pf.events = POLLIN;
        if (poll(&pf, 1, DAEMON_TIMEOUT_MS) != 1)
            break;
        ssize_t k = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (k <= 0)
            break;
        got += (size_t)k;
        if (got == sizeof resp - 1)
            break;
    }
    resp[got] = 0;
    if (strncmp(resp, "HTTP/1.", 7) != 0 || strncmp(resp + 8, " 200", 4) != 0) {
        snprintf(why, whylen, "%s", got ? "it answered, but not 200 OK to GET /health"
                                        : "no answer within 1 s");
        goto done;
    }
    const char *b = strstr(resp, "\r\n\r\n");
    snprintf(body, bodylen, "%s", b ? b + 4 : "");
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return rc;
}

/* ------------------------------------------------------------------------
 * The checks
 * ---------------------------------------------------------------------- */

/* The configuration: loads as every command loads it. */
static mnemo_config *check_config(report *r, const cli_args *a)
{
    mnemo_config *cfg = NULL;
    /* cli_config prints its error on stderr; the report says it too. */
    if (cli_config(a, &cfg) != EXIT_OK) {
        add(r, "config", "fail",
            "fix the file or key the message names (mnemo config unset KEY removes a key; "
            "mnemo config keys lists them)",
            "the configuration does not load (see the message above)");
        return NULL;
    }
    char *s = mnemo_config_json(cfg, 1);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    mnemo_free(s);
    /* The files that set something, in the order they apply. */
    char files[2048] = "";
    size_t used = 0;
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
        const char *src = json_string_value(json_object_get(v, "source"));
        if (!src || (src[0] != '/' && src[0] != '.') || strstr(files, src))
            continue;
        int w = snprintf(files + used, sizeof files - used, "%s%s", used ? ", " : "", src);
        if (w > 0 && (size_t)w < sizeof files - used)
            used += (size_t)w;
    }
    json_decref(j);
    add(r, "config", "ok", NULL, "%s", used ? files : "defaults (no configuration file)");
    return cfg;
}

static void check_workspace(report *r, const char *ws)
{
    static const char *const names[] = {"MEMORY.md", "memory.md", "USER.md", "user.md",
                                        "memory"};
    char p[PATH_MAX], found[256] = "";
    if (!is_dir(ws)) {
        add(r, "workspace", "fail", "give the folder with --workspace, MNEMO_WORKSPACE or "
                                    "mnemo config set --global workspace DIR",
            "%s is not a folder", ws);
        return;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        join(p, sizeof p, ws, names[i]);
        if (i < 4 ? is_file(p) : is_dir(p)) {
            size_t l = strlen(found);
            snprintf(found + l, sizeof found - l, "%s%s", l ? ", " : "", names[i]);
        }
    }
    if (!*found)
        add(r, "workspace", "warn",
            "create MEMORY.md or memory/ there, or point --workspace at the agent's folder",
            "%s holds no MEMORY.md, USER.md or memory/ (only extraPaths are indexed)", ws);
    else
        add(r, "workspace", "ok", NULL, "%s (%s)", ws, found);
}

/* The fix for an index that cannot be opened, with the message ERR: the
 * rebuild command where mnemo index --force does rebuild it (the message
 * says so), else moving the file away, which --force refuses to replace
 * (a file that is not a mnemo index, or damaged beyond telling). */
static const char *index_fix(const cli_args *a, const char *path, const char *err, char *out,
                             size_t n)
{
    char ws[2048] = "", db[2048] = "", w1[1024], w2[1024];
    if (a->workspace)
        snprintf(ws, sizeof ws, " --workspace %s", cli_shell_word(a->workspace, w1, sizeof w1));
    if (a->db)
        snprintf(db, sizeof db, " --db %s", cli_shell_word(a->db, w2, sizeof w2));
    if (err && strstr(err, "mnemo index --force"))
        snprintf(out, n, "mnemo%s%s index --force", ws, db);
    else if (err && strstr(err, "memory store"))
        snprintf(out, n, "move the memory store away as the message says; mnemo memory recover "
                         "MOVED-FILE salvages its memories");
    else {
        char moved[1100];
        snprintf(moved, sizeof moved, "%s.bad", path);
        snprintf(out, n,
                 "mv %s %s, or choose another index path with --db (a rebuild does not "
                 "replace a file that is not a mnemo index)",
                 cli_shell_word(path, w1, sizeof w1), cli_shell_word(moved, w2, sizeof w2));
    }
    return out;
}

/* The provider's credentials, as the status report found them without a
 * request: where they come from, or what is missing and the fix. */
static void check_credentials(report *r, json_t *e)
{
    json_t *c = json_object_get(e, "credentials");
    const char *st = json_string_value(json_object_get(c, "status"));
    const char *detail = json_string_value(json_object_get(c, "detail"));
    if (!st)
        return;
    if (!strcmp(st, "ok"))
        add(r, "credentials", "ok", NULL, "%s", detail ? detail : "found");
    else if (!strcmp(st, "missing"))
        add(r, "credentials", "fail", json_string_value(json_object_get(c, "fix")), "%s",
            detail ? detail : "missing");
    else
        add(r, "credentials", "skip", NULL, "%s", detail ? detail : "none needed");
}

/* The index and the provider, from the status report (with a probe of
 * the provider unless --no-probe). */
static void check_index(report *r, mnemo *m, const cli_args *a)
{
    char *s = NULL;
    int rc = mnemo_status_json(m, a->val[1] ? 1 | MNEMO_STATUS_NO_PROBE : 1, &s);
    json_t *j = rc == MNEMO_OK ? json_loads(s, 0, NULL) : NULL;
    mnemo_free(s);
    if (!j) {
        add(r, "index", "fail", NULL, "cannot read the index status: %s", mnemo_errmsg(m));
        add(r, "embedding", "skip", NULL, "needs the index status");
        return;
    }
    const char *path = json_string_value(json_object_get(json_object_get(j, "db"), "path"));
    if (!path)
        path = json_string_value(json_object_get(j, "backend"));
    json_int_t es = json_integer_value(json_object_get(j, "errorStatus"));
    if (es) {
        const char *err = json_string_value(json_object_get(j, "error"));
        int unreachable = json_is_false(
            json_object_get(json_object_get(j, "server"), "reachable"));
        char fix[8192];
        add(r, "index", "fail",
            es == MNEMO_BUSY ? "wait for the other writer, or stop it"
            : unreachable    ? "start the PostgreSQL server, or check the store setting "
                               "(mnemo config show)"
                             : index_fix(a, path ? path : "index", err, fix, sizeof fix),
            "%s: %s", path ? path : "index", err ? err : "cannot be opened");
    } else if (!json_is_true(json_object_get(j, "indexed"))) {
        add(r, "index", "fail", "mnemo index", "no index yet at %s (search builds one; the "
                                               "Claude Code hook never does)",
            path ? path : "-");
    } else {
        json_t *last = json_object_get(j, "lastSync");
        add(r, "index", "ok", NULL, "%s: %lld files, %lld chunks, last sync %s",
            path ? path : "-", (long long)json_integer_value(json_object_get(j, "files")),
            (long long)json_integer_value(json_object_get(j, "chunks")),
            json_string_value(json_object_get(last, "at")) ? json_string_value(
                                                                 json_object_get(last, "at"))
                                                           : "-");
        json_t *sk = json_object_get(j, "skipped");
        if (json_array_size(sk))
            add(r, "files", "warn", "see mnemo status for each file and why",
                "%zu file%s skipped (too large, binary, symlinks, unreadable, or images and "
                "audio without a model that embeds them)",
                json_array_size(sk), json_array_size(sk) == 1 ? "" : "s");
    }
    json_t *e = json_object_get(j, "embedding");
    const char *prov = json_string_value(json_object_get(e, "provider"));
    const char *err = json_string_value(json_object_get(e, "error"));
    json_t *probe = json_object_get(e, "probe");
    check_credentials(r, e);
    if (!prov) {
        add(r, "embedding", "skip", NULL, "not reported by this backend");
    } else if (json_object_get(e, "unused")) {
        add(r, "embedding", "warn", "the mnemo config set commands the detail names", "%s",
            json_string_value(json_object_get(e, "unused")));
    } else if (!strcmp(prov, "none")) {
        add(r, "embedding", "ok", NULL, "none: keyword search (%s)",
            json_string_value(json_object_get(e, "reason")) ? json_string_value(
                                                                  json_object_get(e, "reason"))
                                                            : "keyword only");
    } else if (err) {
        /* The error names its provider first already ("local: ..."). */
        size_t pl = strlen(prov);
        int named = !strncmp(err, prov, pl) && err[pl] == ':';
        add(r, "embedding", "fail", "check provider, model and the API key variable "
                                    "(docs/semantic.md)",
            "%s%s%s", named ? "" : prov, named ? "" : ": ", err);
    } else if (probe && !json_is_true(json_object_get(probe, "ok"))) {
        const char *pe = json_string_value(json_object_get(probe, "error"));
        add(r, "embedding", "fail",
            "check the provider's address, key and model; searches fall back to keywords "
            "only under provider auto",
            "%s %s does not answer a test query: %s", prov,
            json_string_value(json_object_get(e, "model")) ? json_string_value(
                                                                 json_object_get(e, "model"))
                                                           : "",
            pe ? pe : "failed");
    } else if (json_is_true(json_object_get(e, "stale"))) {
        add(r, "embedding", "warn", "mnemo index",
            "%s works, but the vectors are missing or from another embedding setup", prov);
    } else {
        add(r, "embedding", "ok", NULL, "%s %s, %lld dims, %lld vectors%s", prov,
            json_string_value(json_object_get(e, "model")) ? json_string_value(
                                                                 json_object_get(e, "model"))
                                                           : "",
            (long long)json_integer_value(json_object_get(e, "dims")),
            (long long)json_integer_value(json_object_get(e, "vectors")),
            probe ? ", answers a test query" : a->val[1] ? " (not probed: --no-probe)" : "");
    }
    const char *le = json_string_value(json_object_get(e, "lastError"));
    if (le && !err && !(probe && !json_is_true(json_object_get(probe, "ok"))))
        add(r, "embedding", "warn", "mnemo index (again, once the provider works)",
            "the last embedding during a sync failed: %s", le);
    json_decref(j);
}

/* OpenClaw's state folder, as OpenClaw and install.sh find it. */
static void openclaw_state(char *out, size_t n)
{
    const char *sd = getenv("OPENCLAW_STATE_DIR"), *oh = getenv("OPENCLAW_HOME"),
               *home = getenv("HOME");
    if (sd && *sd)
        snprintf(out, n, "%s", sd);
    else
        snprintf(out, n, "%s/.openclaw", oh && *oh ? oh : home ? home : "");
}

/* The OpenClaw wiring. Sets *URL (static buffer) to the daemon address its
 * mnemo plugin names, if any. */
static void check_openclaw(report *r, char *url, size_t urllen)
{
    char state[PATH_MAX], cfgp[PATH_MAX], plug[PATH_MAX];
    openclaw_state(state, sizeof state);
    const char *cp = getenv("OPENCLAW_CONFIG_PATH");
    snprintf(cfgp, sizeof cfgp, "%s", cp && *cp ? cp : join(plug, sizeof plug, state,
                                                              "openclaw.json"));
    if (!is_dir(state) && !is_file(cfgp)) {
        add(r, "openclaw", "skip", NULL, "OpenClaw is not set up here (no %s)", state);
        return;
    }
    join(plug, sizeof plug, state, "extensions/mnemo/openclaw.plugin.json");
    int installed = is_file(plug);
    json_error_t je;
    json_t *c = is_file(cfgp) ? json_load_file(cfgp, 0, &je) : NULL;
    json_t *plugins = json_object_get(c, "plugins");
    json_t *entry = json_object_get(json_object_get(plugins, "entries"), "mnemo");
    const char *slot = json_string_value(json_object_get(json_object_get(plugins, "slots"),
                                                         "memory"));
    int enabled = entry && !json_is_false(json_object_get(entry, "enabled"));
    json_t *core = json_object_get(json_object_get(plugins, "entries"), "memory-core");
    int core_on = !json_is_false(json_object_get(core, "enabled"));
    const char *u = json_string_value(json_object_get(json_object_get(entry, "config"), "url"));
    if (u)
        snprintf(url, urllen, "%s", u);
    const char *bin = json_string_value(json_object_get(json_object_get(entry, "config"), "bin"));
    if (!installed) {
        add(r, "openclaw", enabled || (slot && !strcmp(slot, "mnemo")) ? "fail" : "warn",
            "integrations/openclaw/install.sh (installed copy: share/mnemo/openclaw/install.sh)",
            "the mnemo plugin is not installed in %s/extensions/mnemo", state);
    } else if (is_file(cfgp) && !c) {
        add(r, "openclaw", "warn", "check plugins.slots.memory and plugins.entries.mnemo by hand",
            "plugin installed; %s is not plain JSON (%s), so its settings were not checked", cfgp,
            je.text);
    } else if (!slot || strcmp(slot, "mnemo") != 0 || !enabled) {
        add(r, "openclaw", "warn",
            "openclaw config set plugins.slots.memory mnemo; openclaw config set "
            "plugins.entries.mnemo.enabled true",
            "plugin installed, but %s", !enabled ? "not enabled in openclaw.json"
                                                 : "the memory slot is not mnemo");
    } else if (core_on) {
        add(r, "openclaw", "warn", "openclaw config set plugins.entries.memory-core.enabled false",
            "mnemo holds the memory slot, but memory-core is still enabled and keeps the names "
            "memory_search and memory_get");
    } else if (bin && !runnable(bin)) {
        add(r, "openclaw", "fail", "set plugins.entries.mnemo.config.bin to mnemo's full path",
            "the plugin's bin %s is not an executable", bin);
    } else if (!bin && !runnable("mnemo")) {
        add(r, "openclaw", "fail",
            "make install (mnemo on PATH), or set plugins.entries.mnemo.config.bin",
            "the plugin runs mnemo, which is not on PATH");
    } else {
        add(r, "openclaw", "ok", NULL, "plugin installed and in the memory slot (%s)", cfgp);
    }
    json_decref(c);
}

/* Does any UserPromptSubmit hook in settings file PATH run `mnemo hook
 * claude-code`? 1 with its command in CMD, 0 if not, -1 if unreadable. */
static int find_hook(const char *path, char *cmd, size_t n)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return -1;
    int found = 0;
    size_t i, k;
    json_t *g, *h;
    json_array_foreach(json_object_get(json_object_get(j, "hooks"), "UserPromptSubmit"), i, g) {
        json_array_foreach(json_object_get(g, "hooks"), k, h) {
            const char *c = json_string_value(json_object_get(h, "command"));
            if (!found && c && strstr(c, "hook claude-code")) {
                snprintf(cmd, n, "%s", c);
                found = 1;
            }
        }
    }
    json_decref(j);
    return found;
}

/* Does an mcpServers object name a server that runs `mnemo ... mcp`? */
static int has_mcp(json_t *servers)
{
    const char *k;
    json_t *s;
    json_object_foreach(servers, k, s) {
        const char *c = json_string_value(json_object_get(s, "command"));
        json_t *args = json_object_get(s, "args");
        size_t n = json_array_size(args);
        const char *last = n ? json_string_value(json_array_get(args, n - 1)) : NULL;
        if (c && strstr(c, "mnemo") && last && !strcmp(last, "mcp"))
            return 1;
    }
    return 0;
}

/* The Claude Code wiring: the recall hook in a settings file, and the MCP
 * server in ~/.claude.json or the workspace's .mcp.json. */
static void check_claude(report *r, const char *ws)
{
    const char *home = getenv("HOME");
    char dir[PATH_MAX], files[3][PATH_MAX], cj[PATH_MAX], mcpj[PATH_MAX], cmd[1024] = "";
    snprintf(dir, sizeof dir, "%s/.claude", home ? home : "");
    snprintf(cj, sizeof cj, "%s/.claude.json", home ? home : "");
    if (!is_dir(dir) && !is_file(cj)) {
        add(r, "claude-code", "skip", NULL, "Claude Code is not set up here (no %s)", dir);
        return;
    }
    join(files[0], sizeof files[0], dir, "settings.json");
    join(files[1], sizeof files[1], ws, ".claude/settings.json");
    join(files[2], sizeof files[2], ws, ".claude/settings.local.json");
    const char *where = NULL;
    for (int i = 0; i < 3 && !where; i++) {
        int f = is_file(files[i]) ? find_hook(files[i], cmd, sizeof cmd) : 0;
        if (f < 0)
            add(r, "claude-code", "warn", "fix its JSON", "%s is not valid JSON", files[i]);
        if (f > 0)
            where = files[i];
    }
    if (!where)
        add(r, "claude-code", "warn",
            "add the UserPromptSubmit hook of examples/claude-code/settings.json to "
            "~/.claude/settings.json (docs/recall.md)",
            "no UserPromptSubmit hook runs mnemo hook claude-code (the recall nudge is off)");
    else if (!runnable(cmd))
        add(r, "claude-code", "fail",
            "make install (mnemo on PATH), or write mnemo's full path in the hook's command",
            "the hook in %s runs '%s', which is not an executable", where, cmd);
    else
        add(r, "claude-code", "ok", NULL, "recall hook in %s", where);
    /* MCP: claude mcp add writes ~/.claude.json (user or project scope);
     * a project may carry .mcp.json. */
    int mcp = 0;
    json_t *j = is_file(cj) ? json_load_file(cj, 0, NULL) : NULL;
    mcp = has_mcp(json_object_get(j, "mcpServers"));
    const char *pk;
    json_t *pv;
    json_object_foreach(json_object_get(j, "projects"), pk, pv) mcp |=
        has_mcp(json_object_get(pv, "mcpServers"));
    json_decref(j);
    join(mcpj, sizeof mcpj, ws, ".mcp.json");
    j = is_file(mcpj) ? json_load_file(mcpj, 0, NULL) : NULL;
    mcp |= has_mcp(json_object_get(j, "mcpServers"));
    json_decref(j);
    if (mcp)
        add(r, "claude-code-mcp", "ok", NULL, "an MCP server runs mnemo mcp");
    else
        add(r, "claude-code-mcp", "warn", "claude mcp add memory -- mnemo --workspace DIR mcp",
            "no MCP server runs mnemo mcp (the memory_* tools are not offered)");
}

/* The daemon, when one is configured (MNEMO_URL, the OpenClaw plugin's
 * url), else whether one answers at the default address. */
static void check_daemon(report *r, const char *plugin_url, const char *ws)
{
    const char *env = getenv("MNEMO_URL");
    const char *addr = env && *env ? env : *plugin_url ? plugin_url : NULL;
    int configured = addr != NULL;
    if (!addr)
        addr = DEFAULT_URL;
    /* The report names the address with its credentials masked. */
    char *shown = mnemo_redact(addr);
    const char *url = shown ? shown : "(the address)";
    char body[4096], why[512];
    if (cli_health(addr, body, sizeof body, why, sizeof why) != 0) {
        if (!configured)
            add(r, "daemon", "skip", NULL, "none configured, none at %s", url);
        else
            add(r, "daemon", "warn",
                "mnemo serve (or let the OpenClaw plugin start it); clients use the slower "
                "command meanwhile",
                "%s (from %s) does not answer: %s", url, env && *env ? "MNEMO_URL" : "the "
                                                                                     "OpenClaw "
                                                                                     "plugin",
                why);
        mnemo_free(shown);
        return;
    }
    json_t *j = json_loads(body, 0, NULL);
    const char *svc = json_string_value(json_object_get(j, "service"));
    const char *dws = json_string_value(json_object_get(j, "workspace"));
    char r1[PATH_MAX], r2[PATH_MAX];
    if (!svc || strcmp(svc, "mnemo") != 0)
        add(r, "daemon", configured ? "fail" : "warn", "point MNEMO_URL at mnemo serve",
            "%s answers, but is not mnemo", url);
    else if (dws && realpath(dws, r1) && realpath(ws, r2) && strcmp(r1, r2) != 0)
        add(r, "daemon", "warn", "run mnemo serve in this workspace, on another --listen port",
            "the daemon at %s serves %s, not this workspace", url, dws);
    else
        add(r, "daemon", "ok", NULL, "mnemo %s answers at %s",
            json_string_value(json_object_get(j, "version")) ? json_string_value(
                                                                   json_object_get(j, "version"))
                                                             : "?",
            url);
    json_decref(j);
    mnemo_free(shown);
}

static void print_text(const report *r)
{
    size_t i;
    json_t *c;
    json_array_foreach(r->checks, i, c) {
        const char *st = json_string_value(json_object_get(c, "status"));
        const char *d = json_string_value(json_object_get(c, "detail"));
        printf("%-5s %-16s ", st, json_string_value(json_object_get(c, "name")));
        cli_print_safe(stdout, d, strlen(d));
        putchar('\n');
        const char *fix = json_string_value(json_object_get(c, "fix"));
        if (fix && strcmp(st, "ok") != 0)
            printf("      %-16s fix: %s\n", "", fix);
    }
    /* A warning is a problem too, if not a failing one. */
    if (r->failed)
        printf("Something is wrong: see the fixes above.\n");
    else if (r->warned)
        printf("No check failed; %d warning%s: see the fixes above.\n", r->warned,
               r->warned == 1 ? "" : "s");
    else
        printf("No problems found.\n");
}

int cmd_doctor(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"json", 'j', NULL, "print {\"ok\",\"checks\":[{\"name\",\"status\",\"detail\",\"fix\"}]}"},
        {"no-probe", 0, NULL, "check the provider's credentials without sending it a test query"},
        {NULL, 0, NULL, NULL},
    };
    cli_args a;
    int code = cli_parse(argc, argv, "doctor",
                         "mnemo doctor [--json] [--no-probe]\n\nChecks the configuration, the "
                         "workspace, the index, the embedding provider (its\ncredentials, and one "
                         "test query unless --no-probe), the daemon if one is\nconfigured, and "
                         "the OpenClaw and Claude Code wiring, and says what to fix.\nExit code 1 "
                         "when a check fails.",
                         opts, &a);
    if (code)
        return code < 0 ? EXIT_OK : code;
    if (a.npos) {
        cli_error("doctor: unexpected argument '%s'", cli_shown(a.pos[0]));
        return EXIT_USAGE;
    }
    report r = {json_array(), 0, 0};
    if (!r.checks) {
        cli_error("out of memory");
        return EXIT_ERROR;
    }
    char ws[PATH_MAX] = ".", url[1024] = "";
    mnemo_config *cfg = check_config(&r, &a);
    mnemo *m = NULL;
    if (cfg) {
        int rc = mnemo_open(cfg, &m);
        if (rc) {
            add(&r, "index", "fail", NULL, "%s", mnemo_errmsg(m));
            mnemo_close(m);
            m = NULL;
        } else {
            snprintf(ws, sizeof ws, "%s", mnemo_workspace(m));
            check_workspace(&r, ws);
            check_index(&r, m, &a);
        }
    } else {
        add(&r, "index", "skip", NULL, "needs a configuration that loads");
        add(&r, "embedding", "skip", NULL, "needs a configuration that loads");
        if (a.workspace)
            snprintf(ws, sizeof ws, "%s", a.workspace);
    }
    check_openclaw(&r, url, sizeof url);
    check_claude(&r, ws);
    check_daemon(&r, url, ws);
    if (a.val[0]) {
        json_t *o = json_pack("{s:b,s:O}", "ok", !r.failed, "checks", r.checks);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else {
        print_text(&r);
    }
    mnemo_close(m);
    mnemo_config_free(cfg);
    json_decref(r.checks);
    return r.failed ? EXIT_ERROR : EXIT_OK;
}
