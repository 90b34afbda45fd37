/*
 * test_cliux.c - what a command-line user expects around the commands:
 * `config set`/`unset` (validated, atomic, other keys kept), usage errors
 * as JSON under --json, the suggestion for a mistyped command, `doctor` on
 * a healthy and a broken set-up, no command printing the password of a
 * configured URL, and the man page, the completion scripts and `make
 * install` kept in step with cli/main.c's command table.
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "test.h"

/* Runs the shell command CMD; its standard output in *OUT (caller frees).
 * Returns its exit status. */
static int sh(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    ASSERT(p != NULL);
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    ASSERT(b != NULL);
    size_t k;
    while ((k = fread(b + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) {
            cap *= 2;
            b = realloc(b, cap);
            ASSERT(b != NULL);
        }
    }
    b[n] = 0;
    int st = pclose(p);
    if (out)
        *out = b;
    else
        free(b);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The command names of cli/main.c's table ({"name", cmd_...}), so that
 * what is checked here follows the table. NULL-terminated; static. */
static const char **commands(void)
{
    static const char *names[64];
    static char store[64][32];
    char path[1200];
    snprintf(path, sizeof path, "%s/cli/main.c", test_src_dir());
    char *src = test_read(path, NULL);
    ASSERT(src != NULL);
    size_t n = 0;
    for (const char *p = src; (p = strstr(p, "{\"")) != NULL && n < 63; p++) {
        const char *q = strchr(p + 2, '"');
        if (!q || strncmp(q, "\", cmd_", 7) != 0)
            continue;
        snprintf(store[n], sizeof store[n], "%.*s", (int)(q - p - 2), p + 2);
        names[n] = store[n];
        n++;
    }
    names[n] = NULL;
    free(src);
    ASSERT(n >= 15); /* index ... doctor */
    return names;
}

static void workspace(void)
{
    test_write("ws/MEMORY.md", "# Memory\n\n- The gateway listens on port 7373.\n"
                               "- The gateway runs on host alpha.\n");
    test_write("ws/memory/2026-11-02.md", "# Standup\n\nThe gateway was restarted.\n\n"
                                          "## Later\n\nThe gateway config moved.\n");
}

#define WS(out, err, ...)                                                                      \
    test_cli(out, err, NULL, "--workspace", test_path("ws"), "--db", test_path("db.sqlite"),     \
             __VA_ARGS__, NULL)

/* ------------------------------------------------------------------------
 * config set / unset
 * ---------------------------------------------------------------------- */

TEST(cli_config_set_round_trip)
{
    workspace();
    test_write("ws/mnemo.json", "{\n  \"_comment\": \"keep me\",\n  \"maxResults\": 4\n}\n");
    char *out, *err;
    ASSERT_EQ(WS(&out, NULL, "config", "set", "maxResults", "1"), 0);
    ASSERT_CONTAINS(out, "mnemo.json: maxResults = 1");
    free(out);
    ASSERT_EQ(WS(&out, NULL, "config", "set", "minScore", "0.2"), 0);
    free(out);
    char *file = test_read(test_path("ws/mnemo.json"), NULL);
    ASSERT_CONTAINS(file, "\"_comment\": \"keep me\""); /* other keys, in their order */
    ASSERT(strstr(file, "_comment") < strstr(file, "maxResults"));
    ASSERT_CONTAINS(file, "\"maxResults\": 1");
    ASSERT_CONTAINS(file, "\"minScore\": 0.2"); /* typed, and not 0.20000000000000001 */
    /* show reads it back, from that file. */
    ASSERT_EQ(WS(&out, NULL, "config", "show", "--sources"), 0);
    ASSERT_CONTAINS(out, "\"maxResults\": {\n    \"value\": 1,\n    \"source\": \"");
    ASSERT_CONTAINS(out, "ws/mnemo.json\"");
    free(out);
    /* search uses it: one result although several notes match. */
    ASSERT_EQ(WS(&out, NULL, "index", "--quiet"), 0);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "search", "--json", "gateway"), 0);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT_EQ(json_array_size(json_object_get(j, "results")), 1);
    json_decref(j);
    free(out);

    /* A bad value, an unknown key: refused, the file untouched. */
    ASSERT_EQ(WS(&out, &err, "config", "set", "maxResults", "lots"), 2);
    ASSERT_CONTAINS(err, "maxResults: 'lots' is not an integer");
    ASSERT_CONTAINS(err, "left as it was");
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "config", "set", "maxResult", "3"), 2);
    ASSERT_CONTAINS(err, "unknown configuration key 'maxResult'");
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "config", "set", "provider", "opnai"), 2);
    ASSERT_CONTAINS(err, "is not one of");
    free(out);
    free(err);
    char *again = test_read(test_path("ws/mnemo.json"), NULL);
    ASSERT_STR_EQ(again, file);
    free(again);
    /* A file the loader refuses is refused too, and left as it was. */
    test_write("ws/mnemo.json", "{\"maxResults\": 2, \"bogus\": 1}\n");
    ASSERT_EQ(WS(&out, &err, "config", "set", "minScore", "0.5"), 2);
    ASSERT_CONTAINS(err, "mnemo.json: unknown configuration key 'bogus'");
    ASSERT_NOT_CONTAINS(err, ".tmp-");
    free(out);
    free(err);
    again = test_read(test_path("ws/mnemo.json"), NULL);
    ASSERT_STR_EQ(again, "{\"maxResults\": 2, \"bogus\": 1}\n");
    free(again);
    /* unset removes a key, also the one the loader refuses. */
    ASSERT_EQ(WS(&out, NULL, "config", "unset", "bogus"), 0);
    ASSERT_CONTAINS(out, "bogus removed");
    free(out);
    again = test_read(test_path("ws/mnemo.json"), NULL);
    ASSERT_CONTAINS(again, "\"maxResults\": 2");
    ASSERT_NOT_CONTAINS(again, "bogus");
    free(again);
    ASSERT_EQ(WS(&out, &err, "config", "unset", "bogus"), 0);
    ASSERT_CONTAINS(err, "bogus is not set in");
    free(out);
    free(err);
    /* No temporary file left behind. */
    ASSERT(!exists(test_path("ws/mnemo.json.tmp")));
    ASSERT_EQ(sh("ls -a ws | grep -c tmp", &out), 1);
    ASSERT_STR_EQ(out, "0\n");
    free(out);
    free(file);

    /* --global: the user file (and its folder) is made; JSON output. */
    ASSERT_EQ(WS(&out, NULL, "config", "set", "--global", "--json", "userId", "alice"), 0);
    ASSERT_CONTAINS(out, "\"key\":\"userId\",\"value\":\"alice\"");
    ASSERT_CONTAINS(out, "home/.config/mnemo/config.json");
    free(out);
    again = test_read(test_path("home/.config/mnemo/config.json"), NULL);
    ASSERT_CONTAINS(again, "\"userId\": \"alice\"");
    free(again);
    /* Something that takes precedence is named. */
    setenv("MNEMO_USER_ID", "bob", 1);
    ASSERT_EQ(WS(&out, &err, "config", "set", "--global", "userId", "carol"), 0);
    ASSERT_CONTAINS(err, "userId still comes from MNEMO_USER_ID");
    free(out);
    free(err);
    unsetenv("MNEMO_USER_ID");
    ASSERT_EQ(WS(&out, NULL, "config", "path"), 0);
    ASSERT_CONTAINS(out, "ws/mnemo.json");
    free(out);
}

/* The case: provider and model set once, then every command uses
 * the vectors without --set. */
TEST(cli_config_set_provider_sticks)
{
    static const char *const keys[] = {"OPENAI_API_KEY", "GEMINI_API_KEY", "VOYAGE_API_KEY",
                                       "MISTRAL_API_KEY"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        unsetenv(keys[i]);
    test_tiny_table();
    test_write("ws/memory/a.md", "My automobile is red.\n");
    test_write("ws/memory/b.md", "The kitten sleeps.\n");
    char *out;
    ASSERT_EQ(WS(&out, NULL, "config", "set", "provider", "static"), 0);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "config", "set", "model", "tiny"), 0);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "index", "--quiet"), 0);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "search", "--json", "car"), 0);
    ASSERT_CONTAINS(out, "\"mode\":\"hybrid\"");
    ASSERT_CONTAINS(out, "memory/a.md");
    free(out);
    /* Without the model, the vectors are there but unused: said so. */
    ASSERT_EQ(WS(&out, NULL, "config", "unset", "model"), 0);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "config", "unset", "provider"), 0);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "search", "--json", "kitten"), 0);
    ASSERT_CONTAINS(out, "\"mode\":\"keyword\"");
    ASSERT_CONTAINS(out, "vectors present but unused");
    free(out);
}

/* ------------------------------------------------------------------------
 * Usage errors and typos
 * ---------------------------------------------------------------------- */

/* OUT is exactly one JSON line {"error":{"code":CODE,"message":...}}
 * whose message contains WANT. */
static void assert_json_error(const char *out, const char *code, const char *want)
{
    ASSERT(strchr(out, '\n') == out + strlen(out) - 1);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    if (!j)
        test_fail(__FILE__, __LINE__, "not JSON (%s): %s", je.text, out);
    json_t *e = json_object_get(j, "error");
    ASSERT_STR_EQ(json_string_value(json_object_get(e, "code")), code);
    ASSERT_CONTAINS(json_string_value(json_object_get(e, "message")), want);
    json_decref(j);
}

TEST(cli_usage_errors_are_json_under_json)
{
    workspace();
    char *out, *err;
    ASSERT_EQ(WS(&out, &err, "search", "--json"), 2);
    assert_json_error(out, "usage", "no query given");
    ASSERT_CONTAINS(err, "no query given"); /* still on stderr too */
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, NULL, "search", "-j", "--bogus", "x"), 2);
    assert_json_error(out, "usage", "unknown option --bogus");
    free(out);
    ASSERT_EQ(WS(&out, NULL, "get", "--json"), 2);
    assert_json_error(out, "usage", "expected one PATH");
    free(out);
    ASSERT_EQ(WS(&out, NULL, "--set", "maxResults=0", "status", "--json"), 2);
    assert_json_error(out, "usage", "maxResults");
    free(out);
    ASSERT_EQ(WS(&out, NULL, "config", "set", "--json", "maxResults", "x"), 2);
    assert_json_error(out, "usage", "not an integer");
    free(out);
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--json", "serach", "x", NULL), 2);
    assert_json_error(out, "usage", "did you mean 'search'?");
    free(out);
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--json", NULL), 2);
    assert_json_error(out, "usage", "no command given");
    free(out);
    /* Other errors keep their own code, printed once. */
    ASSERT_EQ(WS(&out, NULL, "get", "--json", "../../Makefile"), 4);
    assert_json_error(out, "denied", "outside the memory roots");
    free(out);
    /* Without --json, nothing on standard output. */
    ASSERT_EQ(WS(&out, NULL, "search"), 2);
    ASSERT_STR_EQ(out, "");
    free(out);
}

TEST(cli_typo_suggests_the_command)
{
    static const struct {
        const char *typed, *meant;
    } cases[] = {{"serach", "search"}, {"stauts", "status"}, {"docter", "doctor"},
                 {"idnex", "index"},   {"memroy", "memory"}, {"stat", "status"},
                 {"gt", "get"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *err;
        ASSERT_EQ(test_cli(NULL, &err, NULL, cases[i].typed, NULL), 2);
        char want[128];
        snprintf(want, sizeof want, "unknown command '%s'; did you mean '%s'?", cases[i].typed,
                 cases[i].meant);
        ASSERT_CONTAINS(err, want);
        free(err);
    }
    char *err;
    ASSERT_EQ(test_cli(NULL, &err, NULL, "frobnicate", NULL), 2);
    ASSERT_CONTAINS(err, "unknown command 'frobnicate' (mnemo --help lists the commands)");
    ASSERT_NOT_CONTAINS(err, "did you mean");
    free(err);
    ASSERT_EQ(test_cli(NULL, &err, NULL, "config", "shwo", NULL), 2);
    ASSERT_CONTAINS(err, "unknown subcommand 'shwo'; did you mean 'show'?");
    free(err);
}

/* ------------------------------------------------------------------------
 * doctor
 * ---------------------------------------------------------------------- */

/* The check NAME of a doctor --json report (borrowed from J). */
static json_t *check(json_t *j, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "checks"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "name")), name))
            return c;
    test_fail(__FILE__, __LINE__, "no check %s", name);
    return NULL;
}

static const char *status_of(json_t *j, const char *name)
{
    return json_string_value(json_object_get(check(j, name), "status"));
}

static void claude_settings(const char *command)
{
    json_t *o = json_pack("{s:{s:[{s:[{s:s,s:s}]}]}}", "hooks", "UserPromptSubmit", "hooks",
                          "type", "command", "command", command);
    char *s = json_dumps(o, 0);
    test_write("home/.claude/settings.json", s);
    free(s);
    json_decref(o);
}

TEST(cli_doctor_healthy)
{
    workspace();
    unsetenv("MNEMO_URL");
    char *out;
    ASSERT_EQ(WS(&out, NULL, "index", "--quiet"), 0);
    free(out);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s hook claude-code", test_bin());
    claude_settings(cmd);
    test_write("home/.claude.json",
               "{\"mcpServers\":{\"memory\":{\"command\":\"mnemo\",\"args\":[\"mcp\"]}}}");
    ASSERT_EQ(WS(&out, NULL, "--set", "provider=none", "doctor", "--json"), 0);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(j != NULL);
    ASSERT(json_is_true(json_object_get(j, "ok")));
    ASSERT_STR_EQ(status_of(j, "config"), "ok");
    ASSERT_STR_EQ(status_of(j, "workspace"), "ok");
    ASSERT_STR_EQ(status_of(j, "index"), "ok");
    ASSERT_STR_EQ(status_of(j, "embedding"), "ok");
    ASSERT_STR_EQ(status_of(j, "claude-code"), "ok");
    ASSERT_STR_EQ(status_of(j, "claude-code-mcp"), "ok");
    ASSERT_STR_EQ(status_of(j, "openclaw"), "skip"); /* not set up in this HOME */
    ASSERT_CONTAINS(json_string_value(json_object_get(check(j, "index"), "detail")),
                    "2 files");
    json_decref(j);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "--set", "provider=none", "doctor"), 0);
    ASSERT_CONTAINS(out, "ok    index");
    ASSERT_CONTAINS(out, "No problems found.");
    free(out);
}

TEST(cli_doctor_broken)
{
    workspace();
    /* No index yet, a hook that runs a missing program, OpenClaw with the
     * memory slot on mnemo but no plugin, a daemon that does not answer. */
    claude_settings("/nonexistent/bin/mnemo hook claude-code");
    test_write("home/.openclaw/openclaw.json",
               "{\"plugins\":{\"slots\":{\"memory\":\"mnemo\"},\"entries\":{\"mnemo\":"
               "{\"enabled\":true}}}}");
    setenv("MNEMO_URL", "http://127.0.0.1:1", 1);
    char *out, *err;
    ASSERT_EQ(WS(&out, NULL, "--set", "provider=none", "doctor", "--json"), 1);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(j != NULL);
    ASSERT(json_is_false(json_object_get(j, "ok")));
    ASSERT_STR_EQ(status_of(j, "index"), "fail");
    ASSERT_STR_EQ(json_string_value(json_object_get(check(j, "index"), "fix")), "mnemo index");
    ASSERT_STR_EQ(status_of(j, "claude-code"), "fail");
    ASSERT_STR_EQ(status_of(j, "claude-code-mcp"), "warn");
    ASSERT_STR_EQ(status_of(j, "openclaw"), "fail");
    ASSERT_CONTAINS(json_string_value(json_object_get(check(j, "openclaw"), "fix")),
                    "install.sh");
    ASSERT_STR_EQ(status_of(j, "daemon"), "warn");
    ASSERT_CONTAINS(json_string_value(json_object_get(check(j, "daemon"), "detail")),
                    "MNEMO_URL");
    json_decref(j);
    free(out);
    /* The doctor never builds the index. */
    ASSERT(!exists(test_path("db.sqlite")));
    /* A configuration that does not load: named, with the fix. */
    test_write("ws/mnemo.json", "{\"maxResults\": \"six\"}");
    ASSERT_EQ(WS(&out, &err, "doctor"), 1);
    ASSERT_CONTAINS(out, "fail  config");
    ASSERT_CONTAINS(out, "fix: fix the file or key the message names");
    ASSERT_CONTAINS(out, "skip  index");
    ASSERT_CONTAINS(out, "Something is wrong");
    ASSERT_CONTAINS(err, "mnemo.json: maxResults: 'six' is not an integer");
    free(out);
    free(err);
}

/* The fix doctor gives for the index at DB (in a folder with a space). */
static char *doctor_index_fix(const char *db)
{
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "--db", db, "--set",
                       "provider=none", "doctor", "--json", NULL),
              1);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(j != NULL);
    ASSERT_STR_EQ(status_of(j, "index"), "fail");
    char *fix = strdup(json_string_value(json_object_get(check(j, "index"), "fix")));
    json_decref(j);
    free(out);
    return fix;
}

TEST(cli_doctor_fixes_work_and_warnings_count)
{
    workspace();
    unsetenv("MNEMO_URL");
    test_mkdir("my dbs");
    char db[1200], cmd[4096];
    snprintf(db, sizeof db, "%s", test_path("my dbs/db.sqlite"));
    /* A file that is not a mnemo index: index --force refuses it, so the
     * fix is moving it away, quoted for the shell. */
    test_write("my dbs/db.sqlite", "not a database, just text\n");
    char *fix = doctor_index_fix(db);
    ASSERT_NOT_CONTAINS(fix, "index --force");
    ASSERT_CONTAINS(fix, "mv '");
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db", db, "index",
                       "--force", NULL),
              5);
    /* The fix as given works: afterwards the index builds. */
    char *semi = strchr(fix, ',');
    ASSERT(semi != NULL);
    *semi = 0;
    ASSERT_EQ(sh(fix, NULL), 0);
    free(fix);
    ASSERT_EQ(test_cli(NULL, NULL, NULL, "--workspace", test_path("ws"), "--db", db, "index",
                       "--quiet", NULL),
              0);
    /* An index from a newer mnemo: index --force rebuilds it, and the fix
     * is that command, which works as given. */
    sqlite3 *h;
    ASSERT_EQ(sqlite3_open(db, &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", NULL,
                           NULL, NULL),
              SQLITE_OK);
    sqlite3_close(h);
    fix = doctor_index_fix(db);
    ASSERT(strncmp(fix, "mnemo ", 6) == 0);
    ASSERT_CONTAINS(fix, " index --force");
    ASSERT_CONTAINS(fix, "--db '");
    snprintf(cmd, sizeof cmd, "PATH=\"$(dirname '%s'):$PATH\" %s >/dev/null 2>&1", test_bin(),
             fix);
    ASSERT_EQ(sh(cmd, NULL), 0);
    free(fix);
    /* Warnings only (Claude Code without the hook): the summary counts
     * them, not "No problems found". */
    test_write("home/.claude/settings.json", "{}");
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "--db", db, "--set",
                       "provider=none", "doctor", NULL),
              0);
    ASSERT_CONTAINS(out, "warn ");
    ASSERT_NOT_CONTAINS(out, "No problems found");
    ASSERT_CONTAINS(out, "No check failed; ");
    ASSERT_CONTAINS(out, " warning");
    free(out);
}

/* ------------------------------------------------------------------------
 * Credentials in configured URLs
 * ---------------------------------------------------------------------- */

#define SECRET_URL "http://bob:SECRET@127.0.0.1:1/v1?api_key=QSECRET&x=1"
#define SHOWN_URL "http://bob:***@127.0.0.1:1/v1?api_key=***&x=1"

/* Neither output of a command holds the password or the key. */
static void masked(const char *out, const char *err)
{
    ASSERT_NOT_CONTAINS(out, "SECRET");
    ASSERT_NOT_CONTAINS(err, "SECRET");
}

/* A provider whose baseUrl carries a password and a key, at a port nobody
 * listens on: every command that names the URL masks both. */
TEST(cli_configured_urls_never_show_their_password)
{
    workspace();
    unsetenv("MNEMO_URL");
    char *out, *err;
    ASSERT_EQ(WS(&out, &err, "config", "set", "provider", "openai-compatible"), 0);
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "config", "set", "baseUrl", SECRET_URL), 0);
    ASSERT_CONTAINS(out, "baseUrl = \"" SHOWN_URL "\"");
    masked(out, err);
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "config", "set", "--json", "embedQueryTimeoutMs", "300"), 0);
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "config", "set", "--json", "baseUrl", SECRET_URL), 0);
    ASSERT_CONTAINS(out, "\"value\":\"" SHOWN_URL "\"");
    masked(out, err);
    free(out);
    free(err);
    /* The file keeps what was set: only what is printed is masked. */
    char *file = test_read(test_path("ws/mnemo.json"), NULL);
    ASSERT_CONTAINS(file, SECRET_URL);
    free(file);
    static const char *const shows[][2] = {{"show", NULL}, {"show", "--json"},
                                          {"show", "--sources"}};
    for (size_t i = 0; i < sizeof shows / sizeof *shows; i++) {
        ASSERT_EQ(WS(&out, &err, "config", shows[i][0], shows[i][1]), 0);
        ASSERT_CONTAINS(out, SHOWN_URL);
        masked(out, err);
        free(out);
        free(err);
    }
    /* Errors of the provider name the address it could not reach. */
    ASSERT(WS(&out, &err, "index") != 0);
    ASSERT_CONTAINS(err, "cannot reach " SHOWN_URL);
    masked(out, err);
    free(out);
    free(err);
    /* status: the last sync's error; --deep: the probe's. */
    static const char *const statuses[][2] = {
        {NULL, NULL}, {"--json", NULL}, {"--deep", NULL}, {"--deep", "--json"}};
    for (size_t i = 0; i < sizeof statuses / sizeof *statuses; i++) {
        ASSERT_EQ(WS(&out, &err, "status", statuses[i][0], statuses[i][1]), 0);
        ASSERT_CONTAINS(out, "cannot reach " SHOWN_URL);
        masked(out, err);
        free(out);
        free(err);
    }
    ASSERT_EQ(WS(&out, &err, "doctor", "--json"), 1);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT_STR_EQ(status_of(j, "embedding"), "fail");
    ASSERT_CONTAINS(json_string_value(json_object_get(check(j, "embedding"), "detail")),
                    "cannot reach " SHOWN_URL);
    json_decref(j);
    masked(out, err);
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "doctor"), 1);
    ASSERT_CONTAINS(out, "cannot reach " SHOWN_URL);
    masked(out, err);
    free(out);
    free(err);
    ASSERT(WS(&out, &err, "search", "--explain", "gateway") != 0);
    ASSERT_CONTAINS(err, SHOWN_URL);
    masked(out, err);
    free(out);
    free(err);
    ASSERT(WS(&out, &err, "search", "--explain", "--json", "gateway") != 0);
    ASSERT_CONTAINS(out, SHOWN_URL);
    masked(out, err);
    free(out);
    free(err);
    /* The daemon's address, as the doctor reports it. */
    setenv("MNEMO_URL", "http://agent:SECRET@127.0.0.1:1", 1);
    ASSERT_EQ(WS(&out, &err, "--set", "provider=none", "doctor", "--json"), 0);
    j = json_loads(out, 0, NULL);
    ASSERT_STR_EQ(status_of(j, "daemon"), "warn");
    ASSERT_CONTAINS(json_string_value(json_object_get(check(j, "daemon"), "detail")),
                    "http://agent:***@127.0.0.1:1 (from MNEMO_URL) does not answer");
    json_decref(j);
    masked(out, err);
    free(out);
    free(err);
}

/* ------------------------------------------------------------------------
 * Man page, completion, install
 * ---------------------------------------------------------------------- */

/* The long options a command's --help lists ("--max-results", ...). */
static size_t help_options(const char *cmd, char opts[][40], size_t max)
{
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, NULL, cmd, "--help", NULL), 0);
    size_t n = 0;
    const char *p = strstr(out, "options:");
    while (p && (p = strstr(p, "--")) != NULL && n < max) {
        size_t l = 2;
        while (p[l] && (p[l] == '-' || (p[l] >= 'a' && p[l] <= 'z')))
            l++;
        if (l > 3 && l < 40 && (p == out || p[-1] == ' '))
            snprintf(opts[n++], 40, "%.*s", (int)l, p);
        p += l;
    }
    free(out);
    return n;
}

TEST(cli_man_page_covers_every_command_and_option)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/man/mnemo.1", test_src_dir());
    char *man = test_read(path, NULL);
    ASSERT(man != NULL);
    ASSERT_CONTAINS(man, ".TH MNEMO 1");
    const char **cmds = commands();
    for (size_t i = 0; cmds[i]; i++) {
        char want[64];
        snprintf(want, sizeof want, ".SS \"mnemo %s", cmds[i]);
        if (!strstr(man, want))
            test_fail(__FILE__, __LINE__, "man/mnemo.1 has no section %s\"", want);
        /* Each option of its --help, written as roff writes hyphens. */
        char opts[64][40];
        size_t n = help_options(cmds[i], opts, 64);
        for (size_t k = 0; k < n; k++) {
            char roff[96];
            size_t r = 0;
            for (const char *o = opts[k]; *o && r + 3 < sizeof roff; o++) {
                if (*o == '-')
                    roff[r++] = '\\';
                roff[r++] = *o;
            }
            roff[r] = 0;
            if (!strstr(man, roff))
                test_fail(__FILE__, __LINE__, "man/mnemo.1 does not mention %s of mnemo %s",
                          opts[k], cmds[i]);
        }
    }
    free(man);
    /* It renders without warnings, where a formatter is at hand. */
    char *out;
    if (sh("command -v groff >/dev/null", NULL) == 0) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "groff -man -ww -z '%s' 2>&1", path);
        ASSERT_EQ(sh(cmd, &out), 0);
        ASSERT_STR_EQ(out, "");
        free(out);
    }
}

TEST(cli_completion_lists_every_command)
{
    char bash[1200], zsh[1200];
    snprintf(bash, sizeof bash, "%s/completions/mnemo.bash", test_src_dir());
    snprintf(zsh, sizeof zsh, "%s/completions/_mnemo", test_src_dir());
    char *zs = test_read(zsh, NULL);
    ASSERT(zs != NULL);
    ASSERT(strncmp(zs, "#compdef mnemo\n", 15) == 0);
    /* bash: what the function offers after "mnemo ". */
    char cmd[1600], *out;
    snprintf(cmd, sizeof cmd,
             "bash -c 'source \"%s\"; COMP_WORDS=(mnemo \"\"); COMP_CWORD=1; _mnemo; "
             "printf \"%%s\\n\" \"${COMPREPLY[@]}\"'",
             bash);
    ASSERT_EQ(sh(cmd, &out), 0);
    size_t ol = strlen(out);
    char *lines = malloc(ol + 2); /* "\n" + out: every name as "\nNAME\n" */
    ASSERT(lines != NULL);
    lines[0] = '\n';
    memcpy(lines + 1, out, ol + 1);
    const char **cmds = commands();
    for (size_t i = 0; cmds[i]; i++) {
        char line[64], entry[64];
        snprintf(line, sizeof line, "\n%s\n", cmds[i]);
        if (!strstr(lines, line))
            test_fail(__FILE__, __LINE__, "bash completion does not offer %s:\n%s", cmds[i],
                      out);
        snprintf(entry, sizeof entry, "'%s:", cmds[i]);
        if (!strstr(zs, entry))
            test_fail(__FILE__, __LINE__, "zsh completion does not list %s", cmds[i]);
    }
    free(lines);
    free(out);
    /* And completes a command's options and config keys. */
    snprintf(cmd, sizeof cmd,
             "PATH=\"$(dirname '%s'):$PATH\" bash -c 'source \"%s\"; "
             "COMP_WORDS=(mnemo config set maxR); COMP_CWORD=3; _mnemo; echo \"${COMPREPLY[@]}\"; "
             "COMP_WORDS=(mnemo search --exp); COMP_CWORD=2; _mnemo; echo \"${COMPREPLY[@]}\"'",
             test_bin(), bash);
    ASSERT_EQ(sh(cmd, &out), 0);
    ASSERT_STR_EQ(out, "maxResults\n--explain\n");
    free(out);
    if (sh("command -v zsh >/dev/null", NULL) == 0) {
        snprintf(cmd, sizeof cmd, "zsh -n '%s'", zsh);
        ASSERT_EQ(sh(cmd, NULL), 0);
    }
    free(zs);
}

TEST(cli_make_install_puts_the_files_in_place)
{
    if (sh("command -v make >/dev/null", NULL) != 0)
        return;
    char bindir[1024], cmd[4096], *out;
    snprintf(bindir, sizeof bindir, "%s", test_bin());
    *strrchr(bindir, '/') = 0;
    /* The build this test runs from, already up to date: nothing compiles. */
    snprintf(cmd, sizeof cmd,
             "make -s -C '%s' BUILD='%s' PREFIX=/usr DESTDIR='%s' install 2>&1 >/dev/null",
             test_src_dir(), bindir, test_path("dest"));
    ASSERT_EQ(sh(cmd, &out), 0);
    free(out);
    static const char *const files[] = {
        "bin/mnemo",
        "include/mnemo.h",
        "lib/pkgconfig/mnemo.pc",
        "share/man/man1/mnemo.1",
        "share/bash-completion/completions/mnemo",
        "share/zsh/site-functions/_mnemo",
        "share/mnemo/openclaw/index.ts",
        "share/mnemo/openclaw/openclaw.plugin.json",
        "share/mnemo/openclaw/package.json",
        "share/mnemo/openclaw/install.sh",
        "share/mnemo/openclaw/hooks/memory-recall/HOOK.md",
        "share/mnemo/openclaw/hooks/memory-recall/handler.ts",
        "share/mnemo/skills/memory-search/SKILL.md",
    };
    char p[2048];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/usr/%s", test_path("dest"), files[i]);
        if (!exists(p))
            test_fail(__FILE__, __LINE__, "make install did not install %s", files[i]);
    }
    snprintf(p, sizeof p, "%s/usr/share/mnemo/openclaw/install.sh", test_path("dest"));
    ASSERT_EQ(access(p, X_OK), 0);
    /* The installed plugin installs into OpenClaw from there. */
    snprintf(cmd, sizeof cmd, "sh '%s' --state-dir '%s' >/dev/null", p, test_path("oc"));
    ASSERT_EQ(sh(cmd, NULL), 0);
    snprintf(p, sizeof p, "%s/extensions/mnemo/openclaw.plugin.json", test_path("oc"));
    ASSERT(exists(p));
    /* uninstall takes it all away again. */
    snprintf(cmd, sizeof cmd,
             "make -s -C '%s' BUILD='%s' PREFIX=/usr DESTDIR='%s' uninstall 2>&1 >/dev/null",
             test_src_dir(), bindir, test_path("dest"));
    ASSERT_EQ(sh(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd, "find '%s' -type f | wc -l", test_path("dest"));
    ASSERT_EQ(sh(cmd, &out), 0);
    ASSERT_STR_EQ(out, "0\n");
    free(out);
}

/* ------------------------------------------------------------------------
 * getopt-style options, help, usage lines, completion
 * ---------------------------------------------------------------------- */

TEST(cli_options_parse_as_getopt_does)
{
    workspace();
    char *want, *out;
    ASSERT_EQ(WS(&want, NULL, "search", "--max-results", "1", "--json", "gateway"), 0);
    ASSERT_EQ(WS(&out, NULL, "search", "--max-results", "2", "--json", "gateway"), 0);
    ASSERT(strcmp(out, want) != 0); /* the count does show */
    free(out);
    ASSERT_CONTAINS(want, "\"results\"");
    /* -n1, -n 1, --max-results=1 and bundled -jn1 all give the same. */
    char *got[5];
    ASSERT_EQ(WS(&got[0], NULL, "search", "-n1", "-j", "gateway"), 0);
    ASSERT_EQ(WS(&got[1], NULL, "search", "-n", "1", "-j", "gateway"), 0);
    ASSERT_EQ(WS(&got[2], NULL, "search", "--max-results=1", "--json", "gateway"), 0);
    ASSERT_EQ(WS(&got[3], NULL, "search", "-jn1", "gateway"), 0);
    ASSERT_EQ(WS(&got[4], NULL, "search", "-jn", "1", "gateway"), 0);
    for (size_t i = 0; i < 5; i++) {
        ASSERT_STR_EQ(got[i], want);
        free(got[i]);
    }
    free(want);
    /* get -n5 and --lines 5 read the same lines. */
    ASSERT_EQ(WS(&want, NULL, "get", "MEMORY.md", "--lines", "2"), 0);
    ASSERT_EQ(WS(&out, NULL, "get", "MEMORY.md", "-n2"), 0);
    ASSERT_STR_EQ(out, want);
    free(out);
    ASSERT_EQ(WS(&out, NULL, "get", "-n", "2", "MEMORY.md"), 0);
    ASSERT_STR_EQ(out, want);
    free(out);
    free(want);
    /* A flag given a value, a value missing, a letter that is no option. */
    char *err;
    ASSERT_EQ(WS(NULL, &err, "search", "--json=1", "x"), 2);
    ASSERT_CONTAINS(err, "option --json takes no value");
    free(err);
    ASSERT_EQ(WS(NULL, &err, "search", "x", "-n"), 2);
    ASSERT_CONTAINS(err, "option -n (--max-results) needs N");
    free(err);
    ASSERT_EQ(WS(NULL, &err, "search", "-jz", "x"), 2);
    ASSERT_CONTAINS(err, "unknown option -z");
    free(err);
    /* "--" still ends the options: -n1 after it is a word of the query. */
    ASSERT_EQ(WS(&out, NULL, "search", "-j", "--", "gateway", "-n1"), 0);
    ASSERT_CONTAINS(out, "\"results\"");
    free(out);
}

TEST(cli_dash_word_gets_the_dashdash_hint)
{
    workspace();
    char *out, *err;
    ASSERT_EQ(WS(&out, &err, "search", "gateway", "-priya"), 2);
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "unknown option -priya");
    ASSERT_CONTAINS(err, "to search for a word that starts with -, put -- before the query: "
                         "mnemo search");
    ASSERT_CONTAINS(err, " -- gateway -priya\n");
    ASSERT_CONTAINS(err, "or quote the query as one argument: mnemo search");
    ASSERT_CONTAINS(err, " 'gateway -priya'\n");
    ASSERT_NOT_CONTAINS(err, "options are --long");
    free(out);
    free(err);
    /* The hint works as given: options stay before "--". */
    ASSERT_EQ(WS(&out, NULL, "search", "-n", "1", "--", "gateway", "-priya"), 0);
    ASSERT_CONTAINS(out, "MEMORY.md");
    free(out);
    /* A word first: quotes would not help, and the hint says so. */
    ASSERT_EQ(WS(NULL, &err, "search", "-priya", "gateway"), 2);
    ASSERT_CONTAINS(err, " -- -priya gateway\n");
    ASSERT_CONTAINS(err, "quotes alone do not help");
    free(err);
    /* A mistyped option is named, not taken for a word. */
    ASSERT_EQ(WS(NULL, &err, "search", "--max-reslts", "3", "x"), 2);
    ASSERT_CONTAINS(err, "did you mean --max-results?");
    ASSERT_NOT_CONTAINS(err, "put --");
    free(err);
}

TEST(cli_recall_never_fails_on_a_bad_option)
{
    workspace();
    char *out, *err;
    ASSERT_EQ(WS(&out, &err, "recall", "--bogus", "hello"), 0);
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "unknown option --bogus");
    free(out);
    free(err);
    ASSERT_EQ(WS(&out, &err, "recall", "--json", "--user"), 0); /* a value missing */
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "needs U");
    free(out);
    free(err);
}

/* The golden file of CMD's --help; NULL when there is none. */
static char *golden_help(const char *cmd)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/tests/golden/help/%s.txt", test_src_dir(), cmd);
    return test_read(path, NULL);
}

TEST(cli_help_matches_the_golden_files)
{
    const char **cmds = commands();
    for (size_t i = 0; cmds[i]; i++) {
        char *out, *via_help, *golden = golden_help(cmds[i]);
        ASSERT_EQ(test_cli(&out, NULL, NULL, cmds[i], "--help", NULL), 0);
        if (!golden || strcmp(out, golden) != 0)
            test_fail(__FILE__, __LINE__,
                      "mnemo %s --help differs from tests/golden/help/%s.txt; if the change "
                      "is meant, run: make golden-help\n--- got:\n%s",
                      cmds[i], cmds[i], out);
        /* mnemo help CMD is mnemo CMD --help. */
        ASSERT_EQ(test_cli(&via_help, NULL, NULL, "help", cmds[i], NULL), 0);
        if (strcmp(via_help, out) != 0)
            test_fail(__FILE__, __LINE__, "mnemo help %s is not mnemo %s --help:\n%s", cmds[i],
                      cmds[i], via_help);
        /* Every option of the table is in the usage line. */
        const char *opts = strstr(out, "\n\noptions:\n");
        ASSERT(opts != NULL);
        const char *globals = strstr(opts, "--workspace DIR");
        for (const char *p = opts; (p = strstr(p, "  --")) != NULL && p < globals; p++) {
            char name[48];
            size_t l = 2;
            while (p[2 + l] == '-' || (p[2 + l] >= 'a' && p[2 + l] <= 'z'))
                l++;
            snprintf(name, sizeof name, "%.*s", (int)l, p + 2);
            const char *u = strstr(out, name);
            if (!u || u > opts)
                test_fail(__FILE__, __LINE__, "the usage of mnemo %s does not list %s", cmds[i],
                          name);
        }
        free(via_help);
        free(golden);
        free(out);
    }
    /* Subcommands too. */
    char *a, *b;
    ASSERT_EQ(test_cli(&a, NULL, NULL, "help", "memory", "add", NULL), 0);
    ASSERT_EQ(test_cli(&b, NULL, NULL, "memory", "add", "--help", NULL), 0);
    ASSERT_STR_EQ(a, b);
    ASSERT_CONTAINS(a, "usage: mnemo memory add");
    free(a);
    free(b);
    /* help alone is the overview, which describes model as it is. */
    ASSERT_EQ(test_cli(&a, NULL, NULL, "help", NULL), 0);
    ASSERT_CONTAINS(a, "commands:");
    ASSERT_CONTAINS(a, "pull one from the Hugging Face hub");
    ASSERT_NOT_CONTAINS(a, "import a static embedding table (");
    free(a);
}

/* What the bash completion offers after the words WORDS (cur last). */
static char *bash_complete(const char *words, int cword)
{
    char cmd[2400], *out;
    snprintf(cmd, sizeof cmd,
             "PATH=\"$(dirname '%s'):$PATH\" bash -c 'source \"%s/completions/mnemo.bash\"; "
             "COMP_WORDS=(%s); COMP_CWORD=%d; _mnemo; echo \"${COMPREPLY[*]}\"'",
             test_bin(), test_src_dir(), words, cword);
    ASSERT_EQ(sh(cmd, &out), 0);
    return out;
}

TEST(cli_completion_follows_the_option_tables)
{
    /* The files are what mnemo completion writes. */
    static const char *const shells[][2] = {{"bash", "mnemo.bash"}, {"zsh", "_mnemo"}};
    for (size_t s = 0; s < 2; s++) {
        char path[1400], *out;
        snprintf(path, sizeof path, "%s/completions/%s", test_src_dir(), shells[s][1]);
        char *file = test_read(path, NULL);
        ASSERT(file != NULL);
        ASSERT_EQ(test_cli(&out, NULL, NULL, "completion", shells[s][0], NULL), 0);
        if (strcmp(out, file) != 0)
            test_fail(__FILE__, __LINE__,
                      "completions/%s is not what mnemo completion %s prints: run make "
                      "completions",
                      shells[s][1], shells[s][0]);
        free(out);
        free(file);
    }
    /* For each command, bash offers exactly the long options of its --help. */
    const char **cmds = commands();
    for (size_t i = 0; cmds[i]; i++) {
        char opts[64][40], words[128];
        size_t n = help_options(cmds[i], opts, 64), distinct = 0;
        for (size_t k = 0; k < n; k++) {
            size_t j = 0;
            while (j < k && strcmp(opts[j], opts[k]) != 0)
                j++;
            distinct += j == k;
        }
        snprintf(words, sizeof words, "mnemo %s --", cmds[i]);
        char *got = bash_complete(words, 2);
        size_t offered = 0;
        for (const char *p = got; (p = strstr(p, "--")) != NULL; p += 2)
            offered += p == got || p[-1] == ' ';
        for (size_t k = 0; k < n; k++) {
            char *line = malloc(strlen(got) + 3);
            ASSERT(line != NULL);
            sprintf(line, " %s", got);
            line[strlen(line) - 1] = ' '; /* the newline */
            char needle[48];
            snprintf(needle, sizeof needle, " %.40s ", opts[k]);
            if (!strstr(line, needle))
                test_fail(__FILE__, __LINE__, "bash completion of mnemo %s lacks %s: %s",
                          cmds[i], opts[k], got);
            free(line);
        }
        if (offered != distinct)
            test_fail(__FILE__, __LINE__, "bash offers %zu options for mnemo %s, --help lists %zu",
                      offered, cmds[i], distinct);
        free(got);
    }
    /* Values: the enumerations, the memory categories; none after a flag. */
    static const struct {
        const char *words;
        int cword;
        const char *want;
    } cases[] = {
        {"mnemo search --kinds \"\"", 3, "note fact media all\n"},
        {"mnemo search --corpus \"\"", 3, "memory sessions all\n"},
        {"mnemo memory add --category \"\"", 4,
         "identity configuration rule preference decision technical relationship project "
         "operational\n"},
        {"mnemo memory list --categories p", 4, "preference project\n"},
        {"mnemo recall --strategy \"\"", 3, "smart always manual\n"},
        {"mnemo search --us", 2, "--user\n"},
        {"mnemo search --fil", 2, "--filters\n"},
        {"mnemo index -q \"\"", 3, "\n"},                 /* -q is a flag, no value */
        {"mnemo recall --triggers \"\"", 3, "\n"},        /* a flag here too */
        {"mnemo memory --triggers x \"\"", 4,             /* a value there */
         "add update delete purge get list history confirm search export import recover\n"},
        {"mnemo -w /tmp memory a", 4, "add\n"},
        {"mnemo help me", 2, "memory\n"},
        {"mnemo completion \"\"", 2, "bash zsh\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = bash_complete(cases[i].words, cases[i].cword);
        if (strcmp(got, cases[i].want) != 0)
            test_fail(__FILE__, __LINE__, "completing %s: got '%s', want '%s'", cases[i].words,
                      got, cases[i].want);
        free(got);
    }
    /* The categories offered are the library's: each gets an importance of
     * its own, not the 0.5 of a category it does not know. */
    char *out;
    test_mkdir("ws");
    static const char *const cats[] = {"identity", "configuration", "rule",
                                       "preference", "decision", "technical",
                                       "relationship", "project", "operational"};
    for (size_t i = 0; i < sizeof cats / sizeof *cats; i++) {
        char text[64];
        snprintf(text, sizeof text, "the %s fact number %zu", cats[i], i);
        ASSERT_EQ(WS(&out, NULL, "memory", "add", "--json", "--category", cats[i], text), 0);
        json_t *j = json_loads(out, 0, NULL);
        json_t *mem = json_object_get(j, "memory") ? json_object_get(j, "memory") : j;
        double imp = json_number_value(json_object_get(mem, "importance"));
        if (imp == 0.5 || imp == 0)
            test_fail(__FILE__, __LINE__, "category %s has no importance of its own: %s",
                      cats[i], out);
        json_decref(j);
        free(out);
    }
}

/* The exit code of each class in README.md's table, read from the table
 * itself ("| 3 | not found: ..."), so that the test follows the document. */
static int documented_exit(const char *readme, const char *klass)
{
    const char *t = strstr(readme, "## Exit codes");
    ASSERT(t != NULL);
    const char *end = strstr(t + 1, "\n## ");
    for (const char *p = t; (p = strstr(p, "\n| ")) != NULL && (!end || p < end); p++) {
        int code;
        char rest[64];
        if (sscanf(p, "\n| %d | %63[^\n]", &code, rest) == 2 &&
            !strncmp(rest, klass, strlen(klass)))
            return code;
    }
    test_fail(__FILE__, __LINE__, "README.md's exit code table has no row '%s'", klass);
    return -1;
}

TEST(cli_exit_codes_follow_the_documented_table)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/README.md", test_src_dir());
    char *readme = test_read(path, NULL);
    ASSERT(readme != NULL);
    workspace();
    test_write("ws/memory/blob.md", "text\0with a NUL byte\n");
    test_write_n("ws/memory/blob.md", "text\0with a NUL byte\n", 21);
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    test_write("ws/memory/big.md", big);
    ASSERT_EQ(mkfifo(test_path("ws/memory/pipe.md"), 0600), 0);
    test_write("garbage.sqlite", "this is not a database at all, just some text\n");
    char *out, *err;
    ASSERT_EQ(WS(NULL, NULL, "index", "-q"), 0);
    static const struct {
        const char *klass; /* the start of the table row's meaning */
        const char *args[8];
        const char *says;
    } cases[] = {
        {"success", {"status", NULL}, ""},
        {"runtime failure", {"memory", "export", "/nonexistent-dir/out.jsonl", NULL},
         "cannot write"},
        {"usage", {"search", "--bogus", "x", NULL}, "unknown option --bogus"},
        {"usage", {"get", "-n", "0", "MEMORY.md", NULL}, "--lines"},
        {"not found", {"get", "memory/nope.md", NULL}, "no such memory file"},
        {"not found", {"-w", "/nonexistent-mnemo-ws", "status", NULL}, "/nonexistent-mnemo-ws"},
        {"denied", {"get", "../../Makefile", NULL}, "outside the memory roots"},
        {"index or memory store damaged",
         {"--db", "GARBAGE", "search", "gateway", NULL},
         "not a SQLite database"},
        {"invalid input", {"get", "memory/blob.md", NULL}, "binary"},
        {"invalid input", {"--set", "maxFileBytes=1024", "get", "memory/big.md", NULL},
         "too large"},
        {"invalid input", {"get", "memory/pipe.md", NULL}, "not a regular file"},
        {"success", {"recall", "--bogus", "x", NULL}, "unknown option --bogus"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *const *v = cases[i].args;
        const char *args[8];
        for (size_t k = 0; k < 8; k++)
            args[k] = v[k] && !strcmp(v[k], "GARBAGE") ? test_path("garbage.sqlite") : v[k];
        int want = documented_exit(readme, cases[i].klass);
        int got = test_cli(&out, &err, NULL, "--workspace", test_path("ws"), "--db",
                           test_path("db.sqlite"), args[0], args[1], args[2], args[3], args[4],
                           args[5], args[6], args[7]);
        if (got != want || !strstr(err, cases[i].says))
            test_fail(__FILE__, __LINE__, "mnemo %s %s %s: exit %d, the table says %d (%s)\n%s",
                      args[0], args[1] ? args[1] : "", args[2] ? args[2] : "", got, want,
                      cases[i].klass, err);
        free(out);
        free(err);
    }
    /* Busy: the index held by another writer past busyTimeoutMs. */
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(test_path("db.sqlite"), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE", NULL, NULL, NULL),
              SQLITE_OK);
    int got = WS(&out, &err, "--set", "busyTimeoutMs=100", "search", "gateway");
    sqlite3_close(db);
    if (got != documented_exit(readme, "busy"))
        test_fail(__FILE__, __LINE__, "search on a locked index: exit %d\n%s", got, err);
    free(out);
    free(err);
    /* status reports a damaged index once, and exits with its class. */
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "--db",
                       test_path("garbage.sqlite"), "status", NULL),
              documented_exit(readme, "index or memory store damaged"));
    const char *first = strstr(out, "not a SQLite database");
    ASSERT(first != NULL);
    if (strstr(first + 1, "not a SQLite database"))
        test_fail(__FILE__, __LINE__, "status prints the error twice:\n%s", out);
    free(out);
    free(readme);
}
