/*
 * browse.h - operations for browsing the memory (api.c's table: files,
 * timeline), JSON in and out as api.h's.
 *
 *   files      -                      {"workspace","count","files":[{"path","size",
 *                                     "mtime","date"?}]}: MEMORY.md, USER.md and
 *                                     memory/ (every .md) on disk, sorted by path
 *   timeline   user_id, agent_id      {"facts":N,"weeks":[{"week":"YYYY-MM-DD",
 *                                     "notes":{folder:n},"facts":{category:n}}]}
 */
#ifndef MNEMO_CLI_BROWSE_H
#define MNEMO_CLI_BROWSE_H

#include "api.h"

int browse_files(mnemo *m, json_t *args, char **out, char **err);
int browse_timeline(mnemo *m, json_t *args, char **out, char **err);

#endif
