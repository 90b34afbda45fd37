/*
 * memory.h - structured memories inside the library: the record codec,
 * scopes and options, and the write discipline shared by memory.c (records)
 * and msearch.c (search, formatting, the recalled-memories block).
 */
#ifndef MNEMO_MEMORY_H
#define MNEMO_MEMORY_H

#include <jansson.h>

#include "core.h"
#include "mfilter.h"

/* The columns of a memory row, table alias m, in the order mem_json reads. */
#define MEM_COLS                                                                               \
    "m.mid, m.id, m.text, m.category, m.importance, m.type, m.subject, m.user_id, "          \
    "m.agent_id, m.run_id, m.metadata, m.triggers, m.created_at, m.updated_at, "              \
    "m.expires_at, m.confirmations, m.last_confirmed_at, m.deleted_at"
#define MEM_NCOLS 18

/* The record at columns FIRST.. of ST (selected with MEM_COLS) as JSON. */
json_t *mem_json(sqlite3_stmt *st, int first);

enum { MEM_LONG_TERM, MEM_SESSION, MEM_ALL };

/* Options of list, search and recall, parsed. */
typedef struct mem_opts {
    const char *user, *agent, *run; /* borrowed from the options JSON or config */
    int scope;
    const char *type;               /* NULL: any */
    const char *subject;            /* NULL: any */
    json_t *categories;             /* array of strings, or NULL */
    mfilter filter;
    int limit, offset, deleted;
    int count;                      /* list: count the total (option "count", default true) */
    double min_score;               /* < 0: config */
    json_t *root;                   /* the parsed options (owns the strings) */
} mem_opts;

/* Parses OPTIONS (JSON, may be NULL) for list (SEARCH 0) or search (1):
 * search defaults type to "fact" and limit to 10 (at most 50). */
int mem_opts_parse(mnemo *m, const char *options, int search, mem_opts *o);
void mem_opts_cleanup(mem_opts *o);

/* The WHERE condition (over alias m) selecting O's memories that are live
 * (not deleted unless asked, not expired), into W, with its parameters
 * in ARGS (bind with mfilter_bind, then O->filter's). */
int mem_where(const mem_opts *o, double now, buf *w, mfilter *args);

/* Opens the database for memories, building the index first if there is
 * none yet. */
int mem_store(mnemo *m);

/* Importance of a category when none is given: identity and configuration
 * 0.95, rule 0.9, preference 0.85, decision and technical 0.8, relationship
 * and project 0.75, operational 0.6, anything else 0.5. */
double mem_default_importance(const char *category);

/* Embeds TEXT for memory MID when a provider is configured (best effort:
 * a failure leaves the memory without a vector, for the next sync). */
void mem_embed(mnemo *m, int64_t mid, const char *text);

/* Embeds the memories of ST that have no vector with E (during a sync). */
int mem_embed_missing(mnemo *m, store *st, embedder *e, buf *err);

/* Copies the memories (with history and vectors) of the index at OLD_PATH
 * into the fresh index ST, waiting up to BUSY_MS for locks. MNEMO_CORRUPT
 * when OLD_PATH is damaged; other errors as they come. */
int mem_carry(store *st, const char *old_path, int busy_ms, buf *err);

/* The same with the configured provider, best effort (after an import). */
void mem_embed_pending(mnemo *m);

#endif
