/*
 * browse.h - operations for browsing the memory (api.c's table: files,
 * timeline), JSON in and out as api.h's.
 *
 *   files      -                      mnemo_files' answer with "workspace", and a
 *                                     memory note named by a day its "date":
 *                                     {"workspace","indexed","count","truncated",
 *                                     "files":[{"path","kind","size","mtime",
 *                                     "chunks","date"?}]}, sorted by path
 *   timeline   user_id, agent_id      {"facts":N,"weeks":[{"week":"YYYY-MM-DD",
 *                                     "notes":{folder:n},"facts":{category:n}}]}
 */
#ifndef MNEMO_CLI_BROWSE_H
#define MNEMO_CLI_BROWSE_H

#include "api.h"

int browse_files(mnemo *m, json_t *args, char **out, char **err);
int browse_timeline(mnemo *m, json_t *args, char **out, char **err);

#endif
