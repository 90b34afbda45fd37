/*
 * skill.h - the arguments of `mnemo skill` (cmd_skill.c), apart from the
 * environment, so that fuzz/fuzz_cli.c can drive them.
 */
#ifndef MNEMO_CLI_SKILL_H
#define MNEMO_CLI_SKILL_H

/* Checks SKILL_ARGS text RAW (NULL when unset): {"query", "type",
 * "subject", "limit"}. MNEMO_OK with *query and *opts (memory search
 * options as JSON text), both to free; else a MNEMO_* code and *err a
 * message to free (NULL on out-of-memory) that never repeats a value
 * looking like a credential. */
int skill_args_parse(const char *raw, char **query, char **opts, char **err);

#endif
