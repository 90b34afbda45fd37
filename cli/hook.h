/*
 * hook.h - the parts of `mnemo hook claude-code` (cmd_hook.c) that read
 * what arrives and build the answer, apart from standard input, the
 * deadline and the environment, so that fuzz/fuzz_cli.c can drive them.
 */
#ifndef MNEMO_CLI_HOOK_H
#define MNEMO_CLI_HOOK_H

#include <jansson.h>
#include <stddef.h>

#include "mnemo.h"
#include "nudge.h"

typedef struct hook_settings {
    int timeout_ms, max_terms, max_hits;
    int triggers, recall;
    const char *patterns;
    int debug;
} hook_settings;

/* The hook's JSON INPUT (LEN bytes, not NUL-terminated): 0 with *root (to
 * json_decref) holding *prompt and *cwd (NULL when absent); else -1 and
 * *why (static) says why the input is ignored. */
int hook_parse_input(const char *input, size_t len, json_t **root, const char **prompt,
                     const char **cwd, const char **why);

/* The answer for PROMPT and its NCAND candidates, searched in M: the hook's
 * JSON line (caller frees), or NULL when there is nothing to say. */
char *hook_reply(mnemo *m, const char *prompt, const nudge_candidate *cand, size_t ncand,
                 const hook_settings *s);

#endif
