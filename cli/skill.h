/*
 * skill.h - the arguments of `mnemo skill` (cmd_skill.c), apart from the
 * environment, so that fuzz/fuzz_cli.c can drive them.
 */
#ifndef MNEMO_CLI_SKILL_H
#define MNEMO_CLI_SKILL_H

/* Checks SKILL_ARGS text RAW (NULL when unset): {"query", "type",
 * "subject", "limit"} and the other arguments of memory_search. MNEMO_OK with *query and *opts (memory search
 * options as JSON text), both to free; else a MNEMO_* code and *err a
 * message to free (NULL on out-of-memory) that never repeats a value
 * looking like a credential. */
int skill_args_parse(const char *raw, char **query, char **opts, char **err);

/* The skill's text of a mnemo_search_all answer JSON: "Found N
 * memories:" and one block per result. *TEXT to free. */
int skill_format(const char *json, char **text);

#endif
