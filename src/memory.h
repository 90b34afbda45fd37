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
#include "util/hash.h"

/* The columns of a memory row, table alias m, in the order mem_json reads. */
#define MEM_COLS                                                                               \
    "m.mid, m.id, m.text, m.category, m.importance, m.type, m.subject, m.user_id, "          \
    "m.agent_id, m.run_id, m.metadata, m.triggers, m.created_at, m.updated_at, "              \
    "m.expires_at, m.confirmations, m.last_confirmed_at, m.deleted_at"
#define MEM_NCOLS 18

/* The record at columns FIRST.. of ST (selected with MEM_COLS) as JSON. */
json_t *mem_json(sqlite3_stmt *st, int first);

/* A memory's values as a backend reads them (strings borrowed; times in
 * Unix seconds, NAN for NULL; metadata JSON text, triggers "a, b"). */
typedef struct mem_row {
    const char *id, *text, *category, *type, *subject, *user, *agent, *run, *metadata, *triggers;
    double importance, created, updated, expires, confirmed, deleted;
    long long confirmations;
} mem_row;

/* The record R as the JSON every backend returns. */
json_t *mem_row_json(const mem_row *r);

/* One history entry as JSON ({"event","old_text","new_text","at","detail"}). */
json_t *mem_history_entry(const char *event, const char *old_text, const char *new_text,
                          double at, const char *detail);

/* *OUT = J as compact JSON (keys in order); J is released. */
int mem_dump(json_t *j, char **out);

/* A random (version 4) UUID. */
void mem_uuid(char out[37]);

/* Now, whole Unix seconds (MNEMO_NOW in tests). */
double mem_now(void);

/* A record's fields, validated. Strings are borrowed from the JSON. */
typedef struct mem_fields {
    const char *text, *category, *type, *subject, *user, *agent, *run, *id;
    char *metadata;     /* JSON text (keys sorted), owned */
    char *triggers;     /* "a, b", owned */
    double importance;  /* < 0: not given */
    double created, updated, expires, confirmed, deleted; /* NAN: not given / null */
    long long confirmations;
    char hash[HASH_HEX_LEN + 1]; /* the duplicate key of the text */
    char catbuf[40];    /* the category, lowercased */
} mem_fields;

/* Reads and checks every field present in O into F (UPDATE: no defaults,
 * no id or times from the caller unless IMPORTING). MNEMO_INVALID with the
 * message on the handle. */
int mem_fields_parse(mnemo *m, json_t *o, int importing, mem_fields *f);
void mem_fields_cleanup(mem_fields *f);

/* The row a new record F becomes (defaults filled in) with id ID at NOW. */
void mem_fields_row(mnemo *m, const mem_fields *f, const char *id, double now, mem_row *r);

/* Import: calls FN for each line of JSONL with the parsed object and its
 * validated fields (a bad line fails the whole import, naming its line). */
typedef int (*mem_import_fn)(mnemo *m, void *ud, json_t *o, mem_fields *f, size_t line);
int mem_import_each(mnemo *m, const char *jsonl, size_t len, mem_import_fn fn, void *ud);

/* Calls FN for each entry of an imported history array H (may be NULL). */
typedef int (*mem_history_fn)(mnemo *m, void *ud, const char *event, const char *old_text,
                              const char *new_text, double at, const char *detail);
int mem_import_history(mnemo *m, json_t *h, size_t line, mem_history_fn fn, void *ud);

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
    char *filters;                  /* the filter JSON text, or NULL (owned) */
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

/* The same for PostgreSQL: placeholders from $FIRST, the filter included,
 * every argument (scope and filter) in ARGS in placeholder order. */
int mem_where_pg(const mem_opts *o, double now, int first, buf *w, mfilter *args);

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
