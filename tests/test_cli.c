/*
 * test_cli.c - the mnemo binary: golden JSON and text outputs on the
 * fixture workspace (tests/fixtures/ws), exit codes, help, first-run
 * behaviour, and the status codes' names, texts and documentation.
 * MNEMO_TEST_UPDATE_GOLDEN=1 rewrites the golden files.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "cli.h"
#include "test.h"

static char ws[1024];

static void fixture(void)
{
    snprintf(ws, sizeof ws, "%s/tests/fixtures/ws", test_src_dir());
    /* Recency depends on the clock: fix it for reproducible scores. */
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
}

static void golden(const char *name, const char *got)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/golden/%s", test_src_dir(), name);
    if (getenv("MNEMO_TEST_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        ASSERT(f != NULL);
        fputs(got, f);
        fclose(f);
        return;
    }
    char *want = test_read(path, NULL);
    if (!want)
        test_fail(__FILE__, __LINE__, "missing golden file %s", path);
    if (strcmp(want, got) != 0)
        test_fail(__FILE__, __LINE__, "%s differs:\n--- want\n%s\n--- got\n%s", name, want, got);
    free(want);
}

#define CLI(out, err, ...) test_cli(out, err, NULL, "--workspace", ws, "--db", test_path("db.sqlite"), __VA_ARGS__, NULL)

TEST(cli_golden_search_json)
{
    fixture();
    char *out, *err;
    ASSERT_EQ(CLI(&out, &err, "index", "--quiet"), 0);
    ASSERT_STR_EQ(out, "");
    ASSERT_STR_EQ(err, ""); /* no progress bar when not on a terminal */
    free(out);
    free(err);
    static const struct {
        const char *file, *query, *max;
    } cases[] = {
        {"search-postgres.json", "postgres migration", "6"},
        {"search-chinese.json", "数据库迁移", "3"},
        {"search-japanese.json", "東京 打ち合わせ", "3"},
        {"search-identifier.json", "gateway.bind.port", "3"},
        {"search-filename.json", "gateway-rewrite", "2"},
        {"search-phrase-exclude.json", "\"logical replication\" -priya", "3"},
        {"search-nothing.json", "zanzibar", "3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ASSERT_EQ(CLI(&out, NULL, "search", "--json", "--max-results", cases[i].max, "--",
                      cases[i].query),
                  0);
        golden(cases[i].file, out);
        free(out);
    }
}

TEST(cli_golden_text_and_get)
{
    fixture();
    char *out;
    ASSERT_EQ(CLI(&out, NULL, "index", "--quiet"), 0);
    free(out);
    ASSERT_EQ(CLI(&out, NULL, "search", "-n", "2", "dark", "mode"), 0);
    golden("search-text.txt", out);
    free(out);
    ASSERT_EQ(CLI(&out, NULL, "get", "MEMORY.md", "--from", "4", "--lines", "2", "--json"), 0);
    golden("get.json", out);
    free(out);
    char *err;
    ASSERT_EQ(CLI(&out, &err, "get", "memory/2026-11-02.md", "--lines", "3"), 0);
    ASSERT_STR_EQ(out, "# 2026-11-02\n\nPlanned the Postgres migration with Priya.\n");
    ASSERT_CONTAINS(err, "continue with: mnemo get memory/2026-11-02.md --from 4");
    free(out);
    free(err);
}

TEST(cli_first_search_builds_the_index)
{
    fixture();
    char *out, *err;
    ASSERT_EQ(CLI(&out, &err, "search", "--json", "pgbouncer"), 0);
    ASSERT_CONTAINS(err, "no index yet");
    ASSERT_CONTAINS(out, "memory/2026-11-10.md");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "status", "--json"), 0);
    ASSERT_CONTAINS(out, "\"files\": 7");
    ASSERT_CONTAINS(out, "\"indexed\": true");
    free(out);
    free(err);
}

TEST(cli_exit_codes)
{
    fixture();
    char *out, *err;
    ASSERT_EQ(test_cli(&out, &err, NULL, "frobnicate", NULL), 2);
    ASSERT_CONTAINS(err, "unknown command");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "search", "--bogus", "x"), 2);
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "search", "--max-results", "lots", "x"), 2);
    ASSERT_CONTAINS(err, "--max-results");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "search"), 2);
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "get", "memory/nope.md"), 3);
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "get", "--json", "../../Makefile"), 4);
    ASSERT_CONTAINS(out, "{\"error\":{\"code\":\"denied\"");
    ASSERT_CONTAINS(err, "outside the memory roots");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "status"), 0);
    ASSERT_CONTAINS(out, "not built");
    free(out);
    free(err);
    test_write("db.sqlite", "garbage garbage garbage garbage garbage garbage garbage");
    ASSERT_EQ(CLI(&out, &err, "search", "--json", "x"), 5);
    ASSERT_CONTAINS(out, "\"code\":\"corrupt\"");
    ASSERT_CONTAINS(err, "not a SQLite database");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "--set", "maxResults=0", "search", "x"), 2);
    ASSERT_CONTAINS(err, "maxResults");
    free(out);
    free(err);
    test_write("cfg.json", "{\"maxResults\": \"six\"}");
    ASSERT_EQ(CLI(&out, &err, "--config", test_path("cfg.json"), "search", "x"), 2);
    ASSERT_CONTAINS(err, "cfg.json");
    free(out);
    free(err);
}

TEST(cli_help_everywhere)
{
    const char *cmds[] = {"index", "search", "get", "status", "config", "tokenize", "embed"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char *out;
        ASSERT_EQ(test_cli(&out, NULL, NULL, cmds[i], "--help", NULL), 0);
        ASSERT_CONTAINS(out, "usage: mnemo");
        ASSERT_CONTAINS(out, "--workspace");
        free(out);
    }
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--help", NULL), 0);
    ASSERT_CONTAINS(out, "commands:");
    free(out);
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--version", NULL), 0);
    ASSERT_CONTAINS(out, MNEMO_VERSION);
    free(out);
}

TEST(cli_config_show_layers)
{
    test_mkdir("ws");
    test_write("ws/mnemo.json", "{\"maxResults\": 9}");
    setenv("MNEMO_MIN_SCORE", "0.2", 1);
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "config", "show",
                       "--sources", "--set", "chunkTokens=300", NULL),
              0);
    ASSERT_CONTAINS(out, "\"value\": 9");
    ASSERT_CONTAINS(out, "mnemo.json");
    ASSERT_CONTAINS(out, "\"source\": \"MNEMO_MIN_SCORE\"");
    ASSERT_CONTAINS(out, "\"value\": 300");
    free(out);
    ASSERT_EQ(test_cli(&out, NULL, NULL, "config", "keys", NULL), 0);
    ASSERT_CONTAINS(out, "MNEMO_CHUNK_TOKENS");
    free(out);
}

TEST(cli_tokenize)
{
    test_mkdir("ws");
    char *out;
    ASSERT_EQ(test_cli(&out, NULL, NULL, "--workspace", test_path("ws"), "tokenize", "--query",
                       "The gateway.port", NULL),
              0);
    ASSERT_CONTAINS(out, "{\"token\":\"the\",\"start\":0,\"end\":3,\"flags\":[\"stop\"]}");
    ASSERT_CONTAINS(out, "\"token\":\"gateway.port\"");
    free(out);
}

TEST(cli_empty_workspace_hint)
{
    test_mkdir("empty");
    char *out, *err;
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("empty"), "--db",
                       test_path("db.sqlite"), "search", "hello", NULL),
              0);
    ASSERT_CONTAINS(out, "No results for: hello");
    ASSERT_CONTAINS(err, "holds no files");
    free(out);
    free(err);
}

TEST(cli_recall_strict_explain_corpus)
{
    fixture();
    char *out, *err;
    ASSERT_EQ(CLI(&out, NULL, "index", "--quiet"), 0);
    free(out);
    /* Trigger recall: a compact entry with its source, or nothing at all. */
    ASSERT_EQ(CLI(&out, &err, "recall", "--triggers", "which", "box", "is", "the", "gateway",
                  "host?"),
              0);
    ASSERT(strncmp(out, "- The machine running the gateway is `atlas`", 44) == 0);
    ASSERT_CONTAINS(out, "(Source: MEMORY.md#L4)\n");
    ASSERT_STR_EQ(err, "");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, &err, "recall", "--triggers", "what should we cook tonight"), 0);
    ASSERT_STR_EQ(out, "");
    ASSERT_STR_EQ(err, "");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, NULL, "[Slack #ops] who owns atlas these days", "--workspace", ws,
                       "--db", test_path("db.sqlite"), "recall", "--triggers", "-", NULL),
              0);
    ASSERT_CONTAINS(out, "atlas");
    free(out);
    ASSERT_EQ(CLI(&out, NULL, "recall", "--triggers"), 2);
    free(out);
    /* Strict abstains on an unrelated query; default mode does not. */
    ASSERT_EQ(CLI(&out, NULL, "search", "--json", "--strict", "--min-score", "0.9", "postgres",
                  "tomato"),
              0);
    ASSERT_STR_EQ(out, "{\"results\":[],\"mode\":\"keyword\",\"kinds\":[\"note\",\"fact\"]}\n");
    free(out);
    ASSERT_EQ(CLI(&out, NULL, "search", "--json", "--min-score", "0.9", "postgres", "tomato"), 0);
    ASSERT_CONTAINS(out, "\"path\":");
    free(out);
    /* Explain: every factor on every result. */
    ASSERT_EQ(CLI(&out, NULL, "search", "--json", "--explain", "postgres", "migration"), 0);
    static const char *const fields[] = {"\"textScore\":", "\"tier\":",  "\"recency\":",
                                         "\"importance\":", "\"rankBefore\":", "\"rankAfter\":",
                                         "\"explain\":{"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        ASSERT_CONTAINS(out, fields[i]);
    free(out);
    ASSERT_EQ(CLI(&out, NULL, "search", "--explain", "postgres", "migration"), 0);
    ASSERT_CONTAINS(out, "recency");
    free(out);
    ASSERT_EQ(CLI(&out, &err, "search", "--corpus", "chats", "postgres"), 2);
    ASSERT_CONTAINS(err, "memory, sessions or all");
    free(out);
    free(err);
    ASSERT_EQ(CLI(&out, NULL, "search", "--json", "--corpus", "sessions", "postgres"), 0);
    ASSERT_STR_EQ(out, "{\"results\":[],\"mode\":\"keyword\",\"kinds\":[\"note\",\"fact\"]}\n");
    free(out);
}

#define MCLI(out, err, ...)                                                                    \
    test_cli(out, err, NULL, "--workspace", test_path("mws"), "--db", test_path("m.sqlite"),   \
             __VA_ARGS__, NULL)

TEST(cli_memory_commands)
{
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    test_mkdir("mws");
    char *out, *err;
    ASSERT_EQ(MCLI(&out, &err, "memory", "add", "User", "rule:", "never", "deploy", "on",
                   "Fridays", "--category", "rule", "--user", "alice"),
              0);
    ASSERT(strncmp(out, "Stored memory ", 14) == 0);
    ASSERT_CONTAINS(out, "[rule] (90%)");
    char id[37];
    memcpy(id, out + 14, 36);
    id[36] = 0;
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "add", "User rule: never deploy on Fridays", "--user",
                   "alice"),
              0);
    ASSERT_CONTAINS(out, "Already stored as ");
    ASSERT_CONTAINS(out, id);
    free(out);
    ASSERT_EQ(MCLI(&out, &err, "memory", "add", "api key sk-abcdefghijklmnopqrstuvwxyz0123"), 2);
    ASSERT_CONTAINS(err, "credential");
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "search", "deploy", "friday", "--user", "alice"), 0);
    ASSERT(strncmp(out, "Found 1 memory:\n\n1. User rule: never deploy on Fridays (score: ",
                   62) == 0);
    ASSERT_CONTAINS(out, id);
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "search", "tomatoes", "--user", "alice"), 0);
    ASSERT_STR_EQ(out, "No relevant memories found.\n");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "search", "deploy", "--user", "alice", "--json"), 0);
    ASSERT_CONTAINS(out, "\"score\":");
    ASSERT_CONTAINS(out, "\"mode\":\"keyword\"");
    free(out);
    ASSERT_EQ(MCLI(&out, &err, "memory", "search", "deploy", "--filters", "{\"created_at\":{"),
              2);
    ASSERT_CONTAINS(err, "--filters");
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, &err, "memory", "list", "--filters", "{\"created_at\":{\"gtx\":1}}"),
              2);
    ASSERT_CONTAINS(err, "gtx");
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "confirm", id), 0);
    ASSERT_CONTAINS(out, "confirmed 1 time");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "update", id, "--text", "Never deploy on Fridays or "
                                                                 "weekends"),
              0);
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "history", id), 0);
    ASSERT_CONTAINS(out, "ADD");
    ASSERT_CONTAINS(out, "CONFIRM");
    ASSERT_CONTAINS(out, "\"User rule: never deploy on Fridays\" -> \"Never deploy on Fridays "
                         "or weekends\"");
    free(out);
    /* Export, delete, import back. */
    ASSERT_EQ(MCLI(&out, &err, "memory", "export", test_path("dump.jsonl")), 0);
    ASSERT_CONTAINS(err, "exported 1 memories");
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "delete", "--query", "weekends", "--user", "alice"), 0);
    ASSERT_CONTAINS(out, "Deleted memory ");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "purge"), 0);
    ASSERT_STR_EQ(out, "Purged 1 deleted memory\n");
    free(out);
    ASSERT_EQ(MCLI(&out, &err, "memory", "get", id), 3);
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "import", test_path("dump.jsonl")), 0);
    ASSERT_STR_EQ(out, "Imported 1 memories (0 already stored)\n");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "get", id, "--json"), 0);
    ASSERT_CONTAINS(out, "\"confirmations\":1");
    free(out);
    /* Two close candidates: nothing deleted, both listed. */
    ASSERT_EQ(MCLI(&out, NULL, "memory", "add", "Likes green tea in the morning"), 0);
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "add", "Likes green tea in the evening"), 0);
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "delete", "--query", "green tea"), 0);
    ASSERT_CONTAINS(out, "2 memories match");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "list", "--json"), 0);
    ASSERT_CONTAINS(out, "\"total\":2");
    free(out);
    ASSERT_EQ(MCLI(&out, &err, "memory", "frobnicate"), 2);
    free(out);
    free(err);
}

TEST(cli_recall_block_and_skill)
{
    setenv("MNEMO_NOW", "2026-11-29T12:00:00Z", 1);
    test_mkdir("mws");
    char *out, *err;
    ASSERT_EQ(MCLI(&out, NULL, "memory", "add", "User is Chris, platform engineer", "--category",
                   "identity", "--user", "alice"),
              0);
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "memory", "add", "Never deploy on Fridays", "--category", "rule",
                   "--user", "alice"),
              0);
    free(out);
    ASSERT_EQ(MCLI(&out, &err, "recall", "--user", "alice", "--message",
                   "[Slack #ops] can we deploy on friday?"),
              0);
    ASSERT(strncmp(out, "<recalled-memories>\nStored memories for \"alice\" (2 total, ranked by "
                        "importance):\n\nIdentity:\n- User is Chris, platform engineer [identity] "
                        "(95%)\n\nRule:\n- Never deploy on Fridays [rule] (90%)\n",
                   180) == 0);
    ASSERT_STR_EQ(err, "");
    free(out);
    free(err);
    ASSERT_EQ(test_cli(&out, NULL, "what about friday deploys", "--workspace", test_path("mws"),
                       "--db", test_path("m.sqlite"), "recall", "--user", "alice", "--message",
                       "-", NULL),
              0);
    ASSERT_CONTAINS(out, "Never deploy on Fridays");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "recall", "--user", "nobody"), 0);
    ASSERT_STR_EQ(out, "No stored memories found for \"nobody\".\n");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "recall", "--user", "alice", "--strategy", "manual"), 0);
    ASSERT_STR_EQ(out, "");
    free(out);
    /* Any failure: nothing on stdout, a warning, exit 0. */
    test_write("broken.sqlite", "this is not a database, just some text padding it out......");
    ASSERT_EQ(test_cli(&out, &err, NULL, "--workspace", test_path("mws"), "--db",
                       test_path("broken.sqlite"), "recall", "--user", "alice", NULL),
              0);
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "mnemo:");
    free(out);
    free(err);
    ASSERT_EQ(MCLI(&out, &err, "recall", "--strategy", "sometimes"), 0);
    ASSERT_STR_EQ(out, "");
    ASSERT_CONTAINS(err, "strategy");
    free(out);
    free(err);

    /* The skill: arguments in SKILL_ARGS, one JSON answer. */
    setenv("SKILL_ARGS", "{\"query\":\"deploy friday\",\"type\":\"fact\",\"limit\":3}", 1);
    setenv("MNEMO_USER_ID", "alice", 1);
    ASSERT_EQ(MCLI(&out, NULL, "skill"), 0);
    json_t *j = json_loads(out, 0, NULL);
    ASSERT(json_is_true(json_object_get(j, "success")));
    ASSERT_EQ(json_integer_value(json_object_get(j, "exitCode")), 0);
    const char *o = json_string_value(json_object_get(j, "output"));
    ASSERT(strncmp(o, "Found 1 memory:\n\n--- Result 1 (score: ", 38) == 0);
    ASSERT_CONTAINS(o, "Content: Never deploy on Fridays\n");
    ASSERT_CONTAINS(o, "Category: rule");
    json_decref(j);
    free(out);
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {"{\"query\":\"\"}", "query is required"},
        {"{\"limit\":3}", "query is required"},
        {"{\"query\":\"x\",\"limit\":0}", "limit"},
        {"{\"query\":\"x\",\"limit\":\"5\"}", "limit"},
        {"{\"query\":\"x\",\"type\":\"opinion\"}", "opinion"},
        {"{\"query\":\"x\",\"colour\":1}", "colour"},
        {"{\"query\":", "not a JSON object"},
        {"[1,2]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("SKILL_ARGS", bad[i].args, 1);
        ASSERT_EQ(MCLI(&out, NULL, "skill"), 1);
        j = json_loads(out, 0, NULL);
        ASSERT(json_is_false(json_object_get(j, "success")));
        ASSERT_EQ(json_integer_value(json_object_get(j, "exitCode")), 1);
        ASSERT_CONTAINS(json_string_value(json_object_get(j, "error")), bad[i].msg);
        json_decref(j);
        free(out);
    }
    unsetenv("SKILL_ARGS");
    ASSERT_EQ(MCLI(&out, NULL, "skill"), 1);
    ASSERT_CONTAINS(out, "SKILL_ARGS is not set");
    free(out);
    unsetenv("MNEMO_USER_ID");
}

/* libmnemo.so exports exactly the functions mnemo.h declares MNEMO_API:
 * no internal symbol (buf_init, store_open, ...) leaks into its users. */
TEST(abi_exports_only_the_public_api)
{
    char cmd[2048], want[8192] = " ", *hdr;
    snprintf(cmd, sizeof cmd, "%s/include/mnemo.h", test_src_dir());
    ASSERT((hdr = test_read(cmd, NULL)) != NULL);
    int declared = 0;
    for (const char *p = hdr; (p = strstr(p, "\nMNEMO_API ")) != NULL; p++) {
        const char *paren = strchr(p, '('), *name = paren;
        ASSERT(paren != NULL);
        while (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z')))
            name--; /* the identifier before the parenthesis */
        ASSERT(strncmp(name, "mnemo_", 6) == 0);
        strncat(want, name, (size_t)(paren - name));
        strncat(want, " ", sizeof want - strlen(want) - 1);
        declared++;
    }
    free(hdr);
    ASSERT(declared >= 40);
    /* test_bin() is .../build/mnemo: the library sits beside it */
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%.*s/libmnemo.so' 2>&1",
             (int)(strrchr(test_bin(), '/') - test_bin()), test_bin());
    FILE *f = popen(cmd, "r");
    ASSERT(f != NULL);
    char line[512];
    int exported = 0;
    while (fgets(line, sizeof line, f)) {
        char addr[64], type[8], sym[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, sym) != 3)
            test_fail(__FILE__, __LINE__, "unexpected nm line: %s", line);
        if (strcmp(type, "T") != 0 && strcmp(type, "D") != 0 && strcmp(type, "B") != 0 &&
            strcmp(type, "R") != 0)
            continue; /* weak or absolute markers of the toolchain */
        char key[260];
        snprintf(key, sizeof key, " %s ", sym);
        if (!strstr(want, key))
            test_fail(__FILE__, __LINE__, "libmnemo.so exports %s, not declared in mnemo.h", sym);
        exported++;
    }
    ASSERT_EQ(pclose(f), 0);
    ASSERT_EQ(exported, declared); /* and every declared function is there */
}

/* ---- status codes: the one list (MNEMO_STATUS_MAP) and what is made of it ---- */

typedef struct status_entry {
    int code, value;
    const char *name, *text, *api;
} status_entry;

#define STATUS_ENTRY(name, value, text, api) {MNEMO_##name, value, "MNEMO_" #name, text, api},
static const status_entry statuses[] = {MNEMO_STATUS_MAP(STATUS_ENTRY)};
#undef STATUS_ENTRY
enum { NSTATUSES = (int)(sizeof statuses / sizeof *statuses) };

/* Every code has its number, a text mnemo_strerror gives and a name the
 * command, the daemon and MCP give; no two share a text or a name. */
TEST(errcode_every_code_has_a_text_and_a_name)
{
    /* The numbers released so far never change (the list is only appended to). */
    static const int released[][2] = {
        {MNEMO_OK, 0},          {MNEMO_NOMEM, 1},   {MNEMO_IO, 2},        {MNEMO_DB, 3},
        {MNEMO_HTTP, 4},        {MNEMO_TIMEOUT, 5}, {MNEMO_NOTFOUND, 6},  {MNEMO_INVALID, 7},
        {MNEMO_UNAVAILABLE, 8}, {MNEMO_MISUSE, 9},  {MNEMO_CORRUPT, 10},  {MNEMO_BUSY, 11},
        {MNEMO_DENIED, 12},
    };
    size_t nreleased = sizeof released / sizeof *released;
    for (size_t i = 0; i < nreleased; i++)
        ASSERT_EQ(released[i][0], released[i][1]);
    ASSERT(NSTATUSES >= (int)nreleased);
    ASSERT_EQ(API_NCODES, NSTATUSES);
    for (int i = 0; i < NSTATUSES; i++) {
        const status_entry *s = &statuses[i];
        /* In order from 0, so that the tables indexed by code have no holes. */
        ASSERT_EQ(s->code, i);
        ASSERT_EQ(s->value, i);
        ASSERT(s->text[0] != 0);
        ASSERT_STR_EQ(mnemo_strerror(s->code), s->text);
        ASSERT(strcmp(s->text, "unknown error") != 0);
        /* A name is a lowercase identifier, as JSON clients match it. */
        ASSERT(s->api[0] != 0);
        ASSERT_EQ(strspn(s->api, "abcdefghijklmnopqrstuvwxyz_"), strlen(s->api));
        ASSERT_STR_EQ(api_code_name(s->code), s->api);
        for (int j = 0; j < i; j++) {
            if (strcmp(statuses[j].api, s->api) == 0 || strcmp(statuses[j].text, s->text) == 0)
                test_fail(__FILE__, __LINE__, "%s and %s share a name or a text",
                          statuses[j].name, s->name);
        }
    }
    ASSERT_STR_EQ(mnemo_strerror(NSTATUSES), "unknown error");
    ASSERT_STR_EQ(mnemo_strerror(-1), "unknown error");
    ASSERT_STR_EQ(api_code_name(NSTATUSES), "error");
    ASSERT_EQ(api_http_status(NSTATUSES), 500);
    ASSERT_EQ(cli_exit_code(NSTATUSES), EXIT_ERROR);
}

/* docs/serve.md's table of error codes has a row for every code but
 * MNEMO_OK, in the list's order: its name, its constant and the HTTP status
 * the daemon answers it with. */
TEST(errcode_docs_table_matches_the_list)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/docs/serve.md", test_src_dir());
    char *doc = test_read(path, NULL);
    ASSERT(doc != NULL);
    const char *p = strstr(doc, "\n| code | status | HTTP |\n|---|---|---|\n");
    ASSERT(p != NULL);
    p = strstr(p, "|---|---|---|\n") + 14; /* the first row */
    int rows = 0;
    for (; strncmp(p, "| `", 3) == 0; p = strchr(p, '\n') + 1, rows++) {
        char api[64], name[64];
        int http;
        if (sscanf(p, "| `%63[a-z_]` | `%63[A-Z_]` | %d", api, name, &http) != 3)
            test_fail(__FILE__, __LINE__, "unreadable row: %.60s", p);
        if (rows + 1 >= NSTATUSES)
            test_fail(__FILE__, __LINE__, "a row for no code: %s", api);
        const status_entry *s = &statuses[rows + 1];
        ASSERT_STR_EQ(api, s->api);
        ASSERT_STR_EQ(name, s->name);
        ASSERT_EQ(http, api_http_status(s->code));
    }
    ASSERT_EQ(rows, NSTATUSES - 1);
    free(doc);
}

/* mnemo search finds notes and stored facts together; --kinds and the fact
 * switches restrict it; mnemo get reads a fact's memory://id. */
TEST(cli_search_notes_and_facts_together)
{
    test_mkdir("mws");
    test_write("mws/MEMORY.md", "# Memory\n\n- The staging cluster is called ember.\n");
    char *out = NULL, *err = NULL;
    ASSERT_EQ(MCLI(&out, NULL, "memory", "add", "The staging cluster moved to the Frankfurt region",
                   "--category", "operational", "--json"),
              0);
    json_t *j = json_loads(out, 0, NULL);
    char id[64];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "id")));
    json_decref(j);
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "search", "staging cluster"), 0);
    ASSERT_CONTAINS(out, "MEMORY.md#L3-L3");
    char cite[96];
    snprintf(cite, sizeof cite, "memory://%s  (score ", id);
    ASSERT_CONTAINS(out, cite);
    ASSERT_CONTAINS(out, "fact, operational, importance");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "search", "staging cluster", "--kinds", "note", "--json"), 0);
    ASSERT_NOT_CONTAINS(out, "memory://");
    ASSERT_CONTAINS(out, "\"kinds\":[\"note\"]");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "search", "staging cluster", "--kinds", "fact", "--categories",
                   "rule,decision", "--json"),
              0);
    ASSERT_CONTAINS(out, "\"results\":[]");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "search", "staging cluster", "--kinds", "fact", "--categories",
                   "operational", "--scope", "long-term", "--json"),
              0);
    ASSERT_CONTAINS(out, "\"kind\":\"fact\"");
    ASSERT_CONTAINS(out, "\"scope\":\"long-term\"");
    free(out);
    ASSERT_EQ(MCLI(&out, &err, "search", "staging", "--kinds", "facts,opinions"), 2);
    ASSERT_CONTAINS(err, "opinions");
    free(out);
    free(err);
    snprintf(cite, sizeof cite, "memory://%s", id);
    ASSERT_EQ(MCLI(&out, NULL, "get", cite), 0);
    ASSERT_STR_EQ(out, "The staging cluster moved to the Frankfurt region\n");
    free(out);
    ASSERT_EQ(MCLI(&out, NULL, "get", "memory://00000000-0000-4000-8000-000000000000"), 3);
    free(out);
}
