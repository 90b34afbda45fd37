/*
 * memory.h - structured memories inside the library, whatever stores them:
 * the record codec, validation, scopes and options (memory.c), the search's
 * fusion and factors (msearch.c) and the recalled-memories block
 * (mrecall.c), shared by the SQLite store (memlite.c, lite_msearch.c) and
 * PostgreSQL (pgmem.c, pgmwrite.c, pgmsearch.c).
 */
#ifndef MNEMO_MEMORY_H
#define MNEMO_MEMORY_H

#include <jansson.h>

#include "engine/calib.h"
#include "engine/core.h"
#include "text/bm25.h"
#include "text/mfilter.h"
#include "text/query.h"
#include "util/hash.h"

/* A memory's values as a backend reads them (strings borrowed; times in
 * Unix seconds, NAN for NULL; metadata JSON text, triggers "a, b"). */
typedef struct mem_row {
    const char *id, *text, *category, *type, *subject, *user, *agent, *run, *metadata, *triggers;
    double importance, created, updated, expires, confirmed, deleted;
    long long confirmations;
} mem_row;

/* The limits of a stored memory (docs/memories.md): mem_fields_parse
 * checks them on every write (add, update, import, on every backend), and
 * a row read back that breaks the metadata limits is not returned
 * (mem_row_json). */
#define MEM_MAX_TEXT (16 << 10)     /* bytes of text */
#define MEM_MAX_METADATA (64 << 10) /* bytes of metadata, as compact JSON */
#define MEM_MAX_DEPTH 32            /* levels of metadata: {} is 1, {"a":[1]} 2 */
#define MEM_MAX_FIELD 256           /* bytes of an id, subject, user, agent or run */
#define MEM_MAX_CATEGORY 32         /* characters of a category */
#define MEM_MAX_TRIGGERS (4 << 10)  /* bytes of the triggers, joined "a, b" */

/* A JSON string of text read back from storage: never NULL, invalid UTF-8
 * repaired (U+FFFD). */
json_t *mem_jstr(const char *s);

/* The record R as the JSON every backend returns. Stored metadata that is
 * not a JSON object within the limits (left by an older mnemo or another
 * tool: nested 2,000 levels deep, not JSON) cannot be returned: the record
 * then has metadata {} and "unreadable": why, and every reader leaves it
 * out (mem_skip) or refuses it (mem_readable), so it never leaves the
 * library; the writes that need its old values (update with new metadata,
 * delete) still reach it. NULL when out of memory. */
json_t *mem_row_json(const mem_row *r);

/* MNEMO_OK for a readable record REC, else MNEMO_CORRUPT with a message
 * that names the memory, why it cannot be read and how to repair it. */
int mem_readable(mnemo *m, json_t *rec);

/* The records a read leaves out because they cannot be read: a list,
 * search, recall or export returns the others and says how many it left
 * out and which, never a partial result as a complete one. */
typedef struct mem_skips {
    json_t *left; /* [{"id","why"}], NULL until one is left out */
} mem_skips;

/* Whether REC cannot be read; if so it is counted in S (once per id). */
int mem_skip(mem_skips *s, json_t *rec);

/* Nothing when nothing was left out; else the warning on M (mnemo_warning)
 * and, when J is given, J's "unreadable" (the ids and why) and "warnings". */
int mem_skips_report(mnemo *m, const mem_skips *s, json_t *j);
void mem_skips_cleanup(mem_skips *s);

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

/* The arguments of an update: ID must be given, CHANGES a JSON object of
 * fields with at least one. On success *O (to be freed with json_decref)
 * and F (mem_fields_cleanup) are the caller's; on failure nothing is left. */
int mem_update_parse(mnemo *m, const char *id, const char *changes, json_t **o, mem_fields *f);
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

/* The types a memory may have. */
#define MEM_NTYPES 5
extern const char *const mem_types[MEM_NTYPES];

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
    json_t *root;                   /* owns the categories */
} mem_opts;

/* Options from their typed form T (mnemo.h; NULL: the defaults) for list
 * (SEARCH 0) or search (1): search defaults type to "fact" and limit to
 * 10 (at most 50). O borrows T's strings. MNEMO_INVALID with the message
 * on the handle; O is to be cleaned up either way. (JSON options:
 * mem_opts_parse, memjson.h.) */
int mem_opts_from(mnemo *m, const mnemo_memory_opts *t, int search, mem_opts *o);
/* T's defaults: what mnemo_memory_opts_init fills. */
void mem_opts_defaults(mnemo_memory_opts *t);
void mem_opts_cleanup(mem_opts *o);

/* The WHERE condition (over alias m) selecting O's memories that are live
 * (not deleted unless asked, not expired), into W, with its parameters
 * in ARGS (bind them, then O->filter's). */
int mem_where(const mem_opts *o, double now, buf *w, mfilter *args);

/* The same for PostgreSQL: placeholders from $FIRST, the filter included,
 * every argument (scope and filter) in ARGS in placeholder order. */
int mem_where_pg(const mem_opts *o, double now, int first, buf *w, mfilter *args);

/* The part of mem_where_pg's condition on user, agent, run and type, into
 * W: the same text and placeholders (the same FIRST) as its start, so it
 * binds the same arguments. *ONLY: whether the rest of the condition is
 * liveness alone (no subject, categories, filter or deleted memories). */
int mem_where_scope_pg(const mem_opts *o, int first, buf *w, int *only);

/* ----------------------------------------------------------------------
 * Writes and reads, shared by the stores (memory.c): add, update, delete,
 * confirm and purge, and the reads get, history and list, run here with
 * their order of steps, checks and messages; a store supplies the steps
 * that read and write its rows, in a table of its own (mem_store), as it
 * supplies a search's (mem_searcher).
 * -------------------------------------------------------------------- */

/* The steps of one write, which mem_store.write runs (again from the
 * start when the store tries the write again). */
typedef int (*mem_write_fn)(mnemo *m, void *ud);

/* What count_spans hands each span and category with memories to
 * (below): START the span's start (Unix seconds), N its memories of
 * CATEGORY (borrowed). */
typedef int (*mem_span_fn)(mnemo *m, void *ud, long long start, const char *category,
                           long long n);

/* What export_rows hands each memory to (below). */
typedef int (*mem_export_fn)(mnemo *m, void *ud, json_t *rec, json_t *hist);

/* A store's steps. Each reads or writes the store and reports its errors
 * on the handle. MID is a memory's row as the store numbers it (SQLite's
 * rowid, PostgreSQL's seq), as load or insert gave it; a store whose steps
 * go by ID leaves it 0. The steps marked "in a write" run inside
 * mem_store.write. */
typedef struct mem_store {
    /* Makes the store ready to be read outside a write (SQLite: opens the
     * memory store, building the index first); NULL: nothing to do. */
    int (*open)(mnemo *m);
    /* Runs FN(M, UD) as one write: under the store's lock, in one
     * transaction, committed when FN returns MNEMO_OK and rolled back
     * otherwise (FN may run again from the start after a conflict the
     * store can tell). ONE_INSERT: FN's only change is an insert (an add),
     * which a store that makes it one statement may run as a transaction
     * of its own. */
    int (*write)(mnemo *m, int one_insert, mem_write_fn fn, void *ud);
    /* Memory ID, deleted or not, as JSON (mem_row_json) in *OUT and its row
     * in *MID (MID may be NULL); MNEMO_NOTFOUND "no memory with id ID".
     * LOCK (in a write): the memory is about to change: the store holds it
     * until the write ends. */
    int (*load)(mnemo *m, const char *id, int lock, json_t **out, int64_t *mid);
    /* In a write: the live memory of scope USER, AGENT, RUN whose text has
     * the duplicate key HASH: its id into ID, "" for none. */
    int (*find_duplicate)(mnemo *m, const char *hash, const char *user, const char *agent,
                          const char *run, char id[64]);
    /* In a write: stores F as a new memory with id ID (mem_fields_row at
     * NOW) and the ADD entry of its history, unless a live memory of its
     * scope holds the same text: then *DUP is set and ID becomes that
     * memory's. A store that finds ID taken makes another (mem_uuid).
     * *MID: the memory's row; *REC: the memory as JSON when the store read
     * it back with the write, else NULL. */
    int (*insert)(mnemo *m, const mem_fields *f, double now, char id[64], int64_t *mid,
                  int *dup, json_t **rec);
    /* In a write: appends an entry to memory ID's history. */
    int (*history)(mnemo *m, const char *id, const char *event, const char *old_text,
                   const char *new_text, double at, const char *detail);
    /* In a write: sets the fields F gives on memory ID, updated at NOW:
     * IMPORTANCE when not negative, the expiry F->expires (NAN: none) when
     * SET_EXPIRES; OLD_TEXT is the text F->text replaces, NULL when the
     * text stays. */
    int (*update_row)(mnemo *m, const char *id, int64_t mid, const mem_fields *f,
                      double importance, int set_expires, const char *old_text, double now);
    /* In a write: marks memory ID, of text TEXT, deleted at NOW (out of
     * searches and lists, in the store until purged). */
    int (*mark_deleted)(mnemo *m, const char *id, int64_t mid, const char *text, double now);
    /* In a write: memory ID, of text TEXT, deleted, is back in searches and
     * lists (restored at NOW). */
    int (*mark_restored)(mnemo *m, const char *id, int64_t mid, const char *text, double now);
    /* In a write: counts a confirmation of memory ID at NOW. */
    int (*mark_confirmed)(mnemo *m, const char *id, int64_t mid, double now);
    /* In a write: drops memory ID's vector (its text changed). */
    int (*drop_vector)(mnemo *m, const char *id, int64_t mid);
    /* After a write: embeds TEXT as memory ID's vector when a provider is
     * configured; best effort (a failure leaves it without one, for
     * later). */
    void (*embed)(mnemo *m, const char *id, int64_t mid, const char *text);
    /* After an add committed memory MID (and embed): brings up to it a
     * keyword index the store keeps apart from its rows (PostgreSQL's
     * memories' index, merged now or on a thread); NULL where the writes
     * keep the index (SQLite's FTS5). */
    void (*catch_up)(mnemo *m, int64_t mid);
    /* In a write: how many memories a purge of ID would remove: the
     * deleted memories, or ID alone (ID NULL: all of them). */
    int (*count_deleted)(mnemo *m, const char *id, size_t *n);
    /* In a write: removes them for good, with their history and vectors,
     * from the store and from what it keeps of them (SQLite's backups). */
    int (*purge)(mnemo *m, const char *id);
    /* Memory ID's history, oldest first (mem_history_entry), as a JSON
     * array in *OUT; MNEMO_NOTFOUND "no memory with id ID". */
    int (*read_history)(mnemo *m, const char *id, json_t **out);
    /* The memories O selects at NOW (mem_where), newest first (by
     * created_at, then by row), O->limit of them from O->offset: each
     * appended to LIST as JSON (mem_row_json). */
    int (*list)(mnemo *m, const mem_opts *o, double now, json_t *list);
    /* How many memories O selects at NOW, into *N; at most MAX of them
     * (MAX 0: all), so that a count past a limit reads no more. */
    int (*count)(mnemo *m, const mem_opts *o, double now, long long max, long long *n);
    /* The memories O selects at NOW created at FROM or later (NAN: any
     * time) counted by category in spans of WIDTH seconds, the span of a
     * time T starting at ORIGIN + floor((T - ORIGIN) / WIDTH) * WIDTH:
     * FN(M, UD, START, CATEGORY, N) for each span and category that has
     * some, in no particular order. Reads the index, not the rows. */
    int (*count_spans)(mnemo *m, const mem_opts *o, double now, double from, long long width,
                       long long origin, mem_span_fn fn, void *ud);
    /* Every memory, deleted ones too, from one snapshot, in the order they
     * were stored: FN(M, UD, REC, HIST) for each, REC its JSON (mem_row_json)
     * and HIST its history (a JSON array, NULL for none), both handed over;
     * FN(M, UD, NULL, NULL) first, and again whenever the store starts over
     * (a read tried again). Stops at FN's first error. */
    int (*export_rows)(mnemo *m, mem_export_fn fn, void *ud);
    /* Imports the JSON lines JSONL[0..LEN) (mem_import_each) as one write,
     * all or nothing: memories whose id is stored, or (live) whose text is
     * in their scope, are skipped. Counts into *NIN and *NSKIP. */
    int (*import)(mnemo *m, const char *jsonl, size_t len, size_t *nin, size_t *nskip);
    /* After an import stored memories: their vectors and a keyword index
     * kept apart from the rows brought up to date; best effort. */
    void (*imported)(mnemo *m);
} mem_store;

/* "a, b" (or "a,b") as a JSON array of the names, spaces trimmed. */
json_t *mem_names(const char *s);

/* The add of the record O (a JSON object of fields with a text; borrowed)
 * over store ST: *REC the stored memory (mem_row_json), with
 * "duplicate":true when its text was stored already. */
int mem_add_obj(mnemo *m, json_t *o, const mem_store *st, json_t **rec);

/* Memory ID as *REC (readable: else MNEMO_CORRUPT, mem_readable). */
int mem_get_rec(mnemo *m, const char *id, const mem_store *st, json_t **rec);

/* The page of memories O selects, as *LIST (a JSON array of records);
 * *TOTAL those O selects past the page too (when O->count), counted up
 * to memoryCountLimit past the page: *CAPPED (when not NULL) is 1 when
 * more than *TOTAL match. The records that cannot be read are left out
 * into SK, which the caller reports. */
int mem_list_run(mnemo *m, const mem_opts *o, const mem_store *st, json_t **list,
                 long long *total, int *capped, mem_skips *sk);

/* mnemo_memory_update, _delete, _confirm, _purge and _history over store
 * ST (add, get and list in JSON: memjson.h). */
int mem_update(mnemo *m, const char *id, const char *changes, const mem_store *st,
               char **out);
int mem_delete(mnemo *m, const char *id, const mem_store *st);
int mem_restore(mnemo *m, const char *id, const mem_store *st, char **out);
int mem_confirm(mnemo *m, const char *id, const mem_store *st, char **out);
int mem_purge(mnemo *m, const char *id, const mem_store *st, size_t *purged);
int mem_history(mnemo *m, const char *id, const mem_store *st, char **out);

/* mnemo_memory_export and mnemo_memory_import over store ST (mport.c). */
int mem_export(mnemo *m, const mem_store *st, mnemo_write_fn write, void *ud, size_t *count);
int mem_import(mnemo *m, const mem_store *st, const char *jsonl, size_t len, size_t *imported,
               size_t *skipped);

/* ----------------------------------------------------------------------
 * Search, shared by the backends (msearch.c): each backend finds candidates
 * (keyword BM25, vectors) in its own storage; relevance fusion, score
 * factors, result JSON and the recalled-memories block are common.
 * -------------------------------------------------------------------- */

/* A search candidate. */
typedef struct mcand {
    int64_t mid;          /* SQLite rowid / PostgreSQL seq: insertion order, the tie-break */
    double text, vec, rel, score; /* vec < 0: no vector */
    double vrank;         /* the vector score ranking counts (mem_vec_set) */
    double clear;         /* relevance from clear evidence only: what thresholds see */
    /* The score factors' inputs (has_factors: set). */
    double importance, created, confirmed, confirmations;
    int about_user, has_factors;
    json_t *rec;          /* the record, once loaded */
} mcand;

typedef struct mset {
    mcand *v;
    size_t n, cap;
} mset;

/* A new candidate MID (vec -1, nothing else set), NULL when out of memory. */
mcand *mset_push(mset *s, int64_t mid);
void mset_sort_mid(mset *s, size_t n);
/* The candidate MID among the first N (sorted by mid), or NULL. */
mcand *mset_find(mset *s, size_t n, int64_t mid);
void mset_cleanup(mset *s);

/* A backend's search: RUN fills S with scored candidates, best first, at
 * least the NEED best (through mem_rank), *MODE "keyword" or "hybrid";
 * LOAD sets c->rec (MNEMO_NOTFOUND: the memory is gone). */
typedef struct mem_searcher {
    int (*run)(mnemo *m, const char *text, mem_opts *o, size_t need, mset *s, const char **mode);
    int (*load)(mnemo *m, mcand *c);
} mem_searcher;

/* The search for TEXT with options O over BE: *RES the results as a JSON
 * array of records, each with "score" and "relevance" (rounded to 4
 * places), best first; *MODE "keyword" or "hybrid". The records that
 * cannot be read are left out into SK, which the caller reports. */
int mem_search_run(mnemo *m, const char *text, mem_opts *o, const mem_searcher *be,
                   json_t **res, const char **mode, mem_skips *sk);

/* mnemo_memory_recall over BE. */
int mem_recall(mnemo *m, const char *options, const mem_searcher *be, char **out);

/* The query text as searched: UTF-8 repaired, runtime envelopes removed. */
int mem_query_text(mnemo *m, const char *text, buf *out);

/* BM25 over the collected hits of R for query Q, normalised to 0..1 as for
 * notes (1 - e^(-2x/sum of idf)). */
typedef struct mem_bm25 {
    double w[BM25_MAX_PHRASES], idf[BM25_MAX_PHRASES];
    double k1, b, sum;
} mem_bm25;
void mem_bm25_init(mnemo *m, const query *q, const bm25_hits *h, mem_bm25 *k);
int mem_bm25_hit_ok(const query *q, const bm25_hits *h, size_t i); /* required phrases there */
double mem_bm25_norm(const mem_bm25 *k, const bm25_hits *h, size_t i);

/* Episodes: the turns of a conversation stored as memories (texts that
 * start with a speaker's label, "Name: ...") one after another in one
 * scope (same user, agent and run, each within MEM_EPISODE_GAP seconds of
 * the one before) are read together: a turn's text evidence blends its own
 * with its episode's (the turns up to two places away, each query term
 * counted at its strongest, a turn two away at half weight), so the reply
 * that holds an answer is found through the question just before it.
 * Facts stand alone: memories that are not turns are never blended, so
 * unrelated facts stored in one go do not lift each other. memoryContext
 * (0.7) is the episode's share; 0 turns it off. A backend reads the
 * episodes of the best keyword candidates: */
#define MEM_EPISODE_GAP (30 * 60.0)
#define MEM_EPISODE_SPAN 2

typedef struct mem_member {
    int64_t of;  /* the candidate whose episode this is */
    int64_t mid;
    int pos;     /* place relative to OF: -2 .. 2, 0 for OF itself */
    char *text;  /* owned */
} mem_member;

typedef struct mem_members {
    mem_member *v;
    size_t n, cap;
} mem_members;

/* Adds a member (TEXT copied); MNEMO_NOMEM. */
int mem_members_add(mem_members *l, int64_t of, int64_t mid, int pos, const char *text);
void mem_members_cleanup(mem_members *l);

/* Does TEXT start with a speaker's label: up to four words, then ": "? */
int mem_is_turn(const char *text);

/* A backend's reader: the episode members of MIDS[0..N) (themselves
 * included, at place 0) into L, whatever the search's filters: an episode
 * is what was stored, a filter only decides what is returned. */
#define MEM_EPISODE_EXPAND 50 /* keyword candidates whose episodes are read, besides the limit */

typedef int (*mem_episode_fn)(mnemo *m, void *ud, const int64_t *mids, size_t n,
                              mem_members *l);

/* Blends episode evidence into the candidates S->v[0..NK) (text; after
 * both legs, so that vector candidates are read in their episodes too)
 * for query Q: R holds the keyword hits (their term frequencies and
 * lengths), HIT_MIDS[i] the memory of hit i (NULL: R's ids), K the BM25
 * weights. Only candidates count as evidence: a turn that matches no
 * keyword adds nothing, and nothing is added to S. NEED: the results asked
 * for. S is left sorted by mid. */
int mem_episodes(mnemo *m, const query *q, const mem_bm25 *k, const bm25_hits *h,
                 const int64_t *hit_mids, size_t need, mset *s, size_t nk, mem_episode_fn fn,
                 void *ud);

/* Sets C's vector scores for cosine COS, measured against NL (the query's
 * cosines with the vectors in scope and with the fixed texts, calib.h):
 * c->vec, how clearly it stands out (thresholds), and c->vrank, the weaker
 * evidence ranking counts among keyword matches (msearch.c). */
void mem_vec_set(mcand *c, double cos, const calib_null *nl);

/* Does query Q (with options O) ask about the user? */
int mem_about_user(const char *q, const mem_opts *o);
/* The score factors of candidate C (its factor inputs set): recency,
 * confirmations, importance, the user boost when USER_QUERY; and the
 * largest value they can take. A candidate's score is its relevance times
 * its factors. */
double mem_factors(mnemo *m, const mcand *c, int user_query, double now);
double mem_max_factor(mnemo *m, int user_query);

/* Fills C's factor inputs (has_factors); MNEMO_NOTFOUND: gone. */
typedef int (*mem_factor_fn)(mnemo *m, void *ud, mcand *c);

/* Fuses relevance (RAN: the vector leg ran), applies the score factors
 * (FN for candidates without them) and sorts S best first, dropping those
 * that cannot reach the NEED best. Q: the query text (about the user?). */
int mem_rank(mnemo *m, const char *q, const mem_opts *o, int ran, size_t need, double now,
             mset *s, mem_factor_fn fn, void *ud);

/* Importance of a category when none is given: identity and configuration
 * 0.95, rule 0.9, preference 0.85, decision and technical 0.8, relationship
 * and project 0.75, operational 0.6, anything else 0.5. */
double mem_default_importance(const char *category);

#endif
