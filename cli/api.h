/*
 * api.h - mnemo's operations as JSON in, JSON out: one table shared by the
 * HTTP daemon (mnemo serve: /v1/...), the MCP tools (stdio and /mcp) and
 * the CLI's --json output, so all of them speak the same shapes.
 *
 *   op              arguments (JSON object)                       reply
 *   search          query, kinds, maxResults/limit, minScore,      mnemo_search_all: notes
 *                   corpus, strict, explain, user_id/userId,       and facts together
 *                   agent_id, run_id, scope, categories, type,
 *                   subject, filters
 *   get             path (or memory://id), from, lines             mnemo get --json
 *   recall          message, user_id, agent_id, run_id, strategy,  {"recalled","triggers"}
 *                   triggers (bool)
 *   memory_add      a memory record (text, category, ...)          the stored memory
 *   memory_update   id + the fields to change                      the changed memory
 *   memory_delete   id                                             {"deleted":"<id>"}
 *   memory_get      id                                             the memory
 *   memory_search   query + list options, min_score                {"results","total","mode"}
 *   memory_list     list options                                   {"memories","total"}
 *   status          deep (bool)                                    mnemo status --json
 *   memory_history  id                                             {"id","history":[...]}
 *   memory_confirm  id                                             the memory
 *   memory_purge    id (optional)                                  {"purged":N}
 *   memory_export   -                                              {"count","memories"}
 *   memory_import   memories (array) or jsonl                      {"imported","skipped"}
 *
 * Unknown argument keys are errors (MNEMO_INVALID), so a typo never turns
 * into a silently ignored option.
 */
#ifndef MNEMO_CLI_API_H
#define MNEMO_CLI_API_H

#include <jansson.h>

#include "mnemo.h"

typedef struct api_op {
    const char *name;
    int (*fn)(mnemo *m, json_t *args, char **out, char **err);
    const char *schema; /* JSON Schema of the arguments (additionalProperties: false) */
    const char *output; /* JSON Schema of the reply (MCP outputSchema, OpenAPI) */
    const char *title;  /* the description for tools/list and OpenAPI */
    int writes;         /* changes stored memories */
    const char *http;   /* its HTTP route, "METHOD /path" ({id}: a memory id) */
    unsigned status;    /* the HTTP status of success */
} api_op;

/* The operation serving METHOD PATH, with the {id} of its path copied
 * into ID (N bytes; "" when none). NULL when no operation has that path
 * (*PATH_KNOWN 0) or none that method (*PATH_KNOWN 1; ALLOW, N bytes,
 * gets the methods it has). */
const api_op *api_route(const char *method, const char *path, char *id, size_t n,
                        int *path_known, char *allow, size_t an);

/* The OpenAPI 3.1 description of the HTTP API, made from the operation
 * table (plus /health and /mcp). */
json_t *api_openapi(void);

/* The operation NAME, or NULL. */
const api_op *api_find(const char *name);

/* The operations, NULL-terminated by name. */
const api_op *api_ops(void);

/* Runs OP with ARGS (an object, or NULL for none). On success *out is the
 * reply as compact JSON text and 0 is returned; on failure a MNEMO_* code and *err a message
 * (caller frees both). */
int api_run(mnemo *m, const api_op *op, json_t *args, char **out, char **err);

/* How many MNEMO_* codes there are: the entries of MNEMO_STATUS_MAP. The
 * command's tables indexed by code have this many. */
#define API_COUNT_CODE(name, value, text, api) +1
enum { API_NCODES = 0 MNEMO_STATUS_MAP(API_COUNT_CODE) };
#undef API_COUNT_CODE

/* The HTTP status for a MNEMO_* code. */
int api_http_status(int rc);

/* The {"error":{"code","message"}} object. */
json_t *api_error_json(int rc, const char *message);

/* The stable name of a MNEMO_* code ("invalid", "not_found", ...: the api
 * column of MNEMO_STATUS_MAP); "error" for a number that is no code. */
const char *api_code_name(int rc);

/* The excerpt as mnemo get --json prints it. */
json_t *api_excerpt_json(const mnemo_excerpt *e);

/* A copy of S with every byte that starts no valid UTF-8 sequence replaced
 * by U+FFFD, so it can go into JSON. NULL on OOM. */
char *api_utf8_clean(const char *s);

/* Compact JSON text of J, ending without a newline; NULL on OOM. */
char *api_dump(const json_t *j);

#endif
