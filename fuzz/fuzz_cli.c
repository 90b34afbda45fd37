/*
 * fuzz_cli.c - libFuzzer harness for what clients send the command's own
 * parsers, on a real index and memory store (a workspace in /dev/shm, or
 * TMPDIR, made once per process). The first byte picks one:
 *
 *   0  an API call (the bodies of mnemo serve's /v1/ routes): the second
 *      byte picks the operation, the rest is its JSON arguments.
 *   1  an MCP message (mnemo mcp, /mcp): JSON-RPC, single or batch.
 *   2  SKILL_ARGS for mnemo skill, then the skill's search and answer.
 *   3  the Claude Code hook's standard input; the second byte picks the
 *      settings, and a "_patterns" string in the input, when present, is
 *      the MNEMO_NUDGE_PATTERNS set.
 *
 * Each must answer or refuse with a message, never crash, and every answer
 * that is meant to be JSON must be JSON.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "hook.h"
#include "mcp.h"
#include "mnemo.h"
#include "nudge.h"
#include "skill.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mnemo *m;
static size_t nops;
static char ws[256];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The workspace goes when the process ends normally. */
static void cleanup(void)
{
    mnemo_close(m);
    m = NULL;
    nftw(ws, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

/* Workspaces of harness processes that are gone (libFuzzer ends without
 * running atexit handlers) are removed. */
static void remove_stale(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        long pid;
        char dir[512];
        if (sscanf(de->d_name, "mnemo-fuzz-cli-%ld", &pid) == 1 && pid > 0 &&
            kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            snprintf(dir, sizeof dir, "%s/%s", base, de->d_name);
            nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        }
    }
    if (d)
        closedir(d);
}

static void setup(void)
{
    if (m)
        return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    char mem[300], db[300];
    remove_stale(base ? base : "/tmp");
    snprintf(ws, sizeof ws, "%s/mnemo-fuzz-cli-%ld", base ? base : "/tmp", (long)getpid());
    snprintf(mem, sizeof mem, "%s/memory", ws);
    snprintf(db, sizeof db, "%s/index.sqlite", ws);
    mkdir(ws, 0700);
    mkdir(mem, 0700);
    put(ws, "MEMORY.md",
        "# Memory\n\n- The user prefers dark mode and Helix.\n- Deploys go through "
        "ListOrdersByCustomer on acme/shop.\n");
    put(mem, "2026-01-02.md",
        "# 2 January\n\n- Met Alice about issue #42 in Berlin.\n- 東京の会議はカタカナで。\n");
    mnemo_config *cfg;
    if (mnemo_config_new(&cfg) || mnemo_config_set(cfg, "workspace", ws, "fuzz", NULL) ||
        mnemo_config_set(cfg, "db", db, "fuzz", NULL) || mnemo_open(cfg, &m) ||
        mnemo_sync(m, NULL, NULL))
        abort();
    mnemo_config_free(cfg);
    char *added = NULL;
    if (mnemo_memory_add(m, "{\"text\":\"User prefers tea over coffee\",\"category\":\"preference\"}",
                         &added))
        abort();
    mnemo_free(added);
    while (api_ops()[nops].name)
        nops++;
    atexit(cleanup);
}

/* Aborts unless S is one JSON text. */
static void must_be_json(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &je);
    if (!j)
        abort();
    json_decref(j);
}

/* Aborts unless S is a non-empty message that can go into JSON. */
static void must_be_message(const char *s)
{
    if (!s || !*s)
        abort();
    json_t *j = json_string(s); /* NULL for invalid UTF-8 */
    if (!j)
        abort();
    json_decref(j);
}

static void api_call(const char *s, size_t n)
{
    if (n < 1)
        return;
    const api_op *op = &api_ops()[(unsigned char)s[0] % nops];
    json_error_t je;
    json_t *args = json_loadb(s + 1, n - 1, 0, &je);
    if (!json_is_object(args)) { /* the daemon answers 400 before any call */
        json_decref(args);
        return;
    }
    char *out = NULL, *err = NULL;
    int rc = api_run(m, op, args, &out, &err);
    json_decref(args);
    if (rc == MNEMO_OK) {
        if (!out)
            abort();
        must_be_json(out);
    } else {
        if (rc != MNEMO_NOMEM)
            must_be_message(err);
        int st = api_http_status(rc);
        if (st < 400 || st > 599)
            abort();
    }
    free(out);
    free(err);
}

static void mcp_call(const char *s, size_t n)
{
    char *out = mcp_handle(m, s, n);
    json_error_t je;
    json_t *in = json_loadb(s, n, 0, &je);
    /* A request (method and id) is always answered. */
    if (json_is_object(in) && json_is_string(json_object_get(in, "method")) &&
        json_object_get(in, "id") && !out)
        abort();
    json_decref(in);
    if (out)
        must_be_json(out);
    free(out);
}

static void skill_call(const char *s)
{
    char *query, *opts, *err;
    int rc = skill_args_parse(s, &query, &opts, &err);
    if (rc != MNEMO_OK) {
        if (rc != MNEMO_NOMEM)
            must_be_message(err);
        free(err);
        return;
    }
    if (!*query)
        abort();
    must_be_json(opts);
    char *out = NULL, *text = NULL;
    rc = mnemo_search_all(m, query, opts, &out);
    if (!rc)
        rc = skill_format(out, &text);
    if (rc && rc != MNEMO_NOMEM)
        must_be_message(mnemo_errmsg(m));
    if (!rc && !text)
        abort();
    free(text);
    mnemo_free(out);
    free(query);
    free(opts);
}

static void hook_call(const char *s, size_t n)
{
    if (n < 1)
        return;
    unsigned b = (unsigned char)s[0];
    hook_settings hs = {0};
    hs.max_terms = 1 + (int)(b % 20);
    hs.max_hits = 1 + (int)(b / 20 % 8);
    hs.triggers = (b & 0x40) != 0;
    hs.recall = (b & 0x80) != 0;
    json_t *root;
    const char *prompt, *cwd, *why;
    if (hook_parse_input(s + 1, n - 1, &root, &prompt, &cwd, &why)) {
        if (!why || !*why)
            abort();
        return;
    }
    nudge_patterns *pats = NULL;
    char *perr = NULL;
    const char *spec = json_string_value(json_object_get(root, "_patterns"));
    if (nudge_patterns_parse(spec, &pats, &perr)) {
        if (!perr || !*perr)
            abort();
        free(perr);
        if (nudge_patterns_parse(NULL, &pats, NULL))
            abort();
    }
    nudge_candidate *cand = NULL;
    size_t nc = 0;
    if (nudge_candidates(prompt, pats, (size_t)hs.max_terms, &cand, &nc) == MNEMO_OK) {
        size_t pl = strlen(prompt);
        if (nc > (size_t)hs.max_terms)
            abort();
        for (size_t i = 0; i < nc; i++) {
            size_t tl = strlen(cand[i].term);
            /* Each term is the prompt's own text, at most 200 bytes. */
            if (tl == 0 || tl > 200 || cand[i].offset + tl > pl ||
                memcmp(prompt + cand[i].offset, cand[i].term, tl) != 0)
                abort();
        }
        char *out = hook_reply(m, prompt, cand, nc, &hs);
        if (out) {
            size_t ol = strlen(out);
            if (ol < 2 || out[ol - 1] != '\n')
                abort();
            must_be_json(out);
        }
        free(out);
    }
    nudge_candidates_free(cand, nc);
    nudge_patterns_free(pats);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    setup();
    int which = data[0] % 4;
    size_t n = size - 1;
    char *s = malloc(n + 1);
    if (!s)
        return 0;
    memcpy(s, data + 1, n);
    s[n] = 0;
    if (which == 0)
        api_call(s, n);
    else if (which == 1)
        mcp_call(s, n);
    else if (which == 2)
        skill_call(s);
    else
        hook_call(s, n);
    free(s);
    return 0;
}
