/*
 * pgpost.h - the inverted index on PostgreSQL, one module for the notes'
 * chunks (pgnpost.c) and the memories (pgmpost.c): posting lists per
 * tenant, scope and lexeme in compressed segments, the table of postings
 * being written, writing and folding segments, and reading a query's
 * lists document at a time (see pgpost.c).
 *
 * An index says which tables it writes and what its entries hold in a
 * pgpost_table; when it merges, what a scope is, and how a search reads
 * its lists stay with it.
 */
#ifndef MNEMO_PGPOST_H
#define MNEMO_PGPOST_H

#include <stdint.h>

#include "engine/core.h"
#include "store/postgres/pg.h"
#include "store/postgres/pgtext.h"
#include "util/buf.h"

#define PGPOST_MAX_KEY 5 /* key columns of a segment: the scope's, then the lexeme */
#define PGPOST_ROWS 2000 /* documents a page of pgpost_pages holds (its statement's LIMIT) */

/* ----------------------------------------------------------------------
 * Encoding
 * -------------------------------------------------------------------- */

/* One posting: a document (chunk id or memory seq), its length in tokens
 * and the lexeme's frequency in it. */
typedef struct pgposting {
    int64_t id;
    int ntok;
    int tf;
} pgposting;

/* V as a little-endian base-128 varint appended to B; the next varint of
 * *P (before END) into *V, moving *P: 0 when it is cut short. */
void pgpost_put_varint(buf *b, uint64_t v);
int pgpost_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v);

/* One posting into B after the one of id *LAST (0 before the first). */
void pgpost_put(buf *b, int64_t *last, int64_t id, int tf, int ntok);

/* Moves *P past a posting's bytes after its id (pgpost_table.tail): 0
 * when they are cut short. */
int pgpost_tail(const unsigned char **p, const unsigned char *end);

/* Whether ID is one of the sorted DEAD[0..NDEAD), *AT moving on: the ids
 * asked come in order. */
static inline int pgpost_is_dead(const int64_t *dead, size_t ndead, size_t *at, int64_t id)
{
    while (*at < ndead && dead[*at] < id)
        (*at)++;
    return *at < ndead && dead[*at] == id;
}

/* Appends the postings of segment P[0..N) to *V (growing *CAP), those of
 * the sorted DEAD[0..NDEAD) left out: 1, 0 when the segment is damaged,
 * -1 out of memory. */
int pgpost_decode(const unsigned char *p, size_t n, const int64_t *dead, size_t ndead,
                  pgposting **v, size_t *nv, size_t *cap);

/* A bytea's hex text ("\x0a1b...") decoded into OUT (0: not hex). */
int pgpost_unhex(const char *s, buf *out);

/* Calls FN for each lexeme of tsvector text T ('lex':1,5 'b''c':2) with its
 * unescaped bytes and its number of positions (W is scratch). */
int pgpost_tsv_each(const char *t, buf *w,
                    int (*fn)(void *ud, const char *lex, size_t n, int npos), void *ud);

/* ----------------------------------------------------------------------
 * Postings being written
 * -------------------------------------------------------------------- */

/* Postings being written, by key: the key's columns one after the other,
 * each NUL-terminated (bytes, compared whole). */
typedef struct pgterm {
    char *key; /* NULL: an empty slot */
    size_t klen;
    uint32_t hash;
    long long n;  /* postings in data */
    int64_t last; /* the last id put (pgpost_put) */
    buf data;
} pgterm;

typedef struct pgterms {
    pgterm *t;
    size_t cap, used;
    size_t posts; /* postings put by pgpost_terms_post since the last cleanup */
} pgterms;

/* The entry of KEY[0..N), made if new; NULL out of memory. */
pgterm *pgpost_terms_get(pgterms *p, const char *key, size_t n);
void pgpost_terms_cleanup(pgterms *p);

/* Puts the posting of document ID (NTOK long, NPOS positions of the
 * lexeme) under the key of the scope in KEY[0..SCOPE) and lexeme
 * LEX[0..N) (KEY is scratch past SCOPE): MNEMO_NOMEM or MNEMO_OK. */
int pgpost_terms_post(pgterms *p, buf *key, size_t scope, const char *lex, size_t n, int64_t id,
                      int npos, int ntok);

/* The first N columns of KEY. */
void pgpost_key_parts(const char *key, int n, const char **part);

/* ----------------------------------------------------------------------
 * Segments
 * -------------------------------------------------------------------- */

/* A table of segments: rows (tenant, key columns, gen, n, data). */
typedef struct pgpost_table {
    int nkey;            /* key columns (at most PGPOST_MAX_KEY) */
    /* The INSERT of a batch: $1 the tenant, then a text[] per key column,
     * and the gens (bigint[]), counts (int[]) and data (bytea[]). */
    const char *insert;
    const char *write;   /* what writing is called in errors */
    const char *damaged; /* the error of a damaged segment */
    /* Moves *P past an entry's bytes after its id: 0 when cut short. */
    int (*tail)(const unsigned char **p, const unsigned char *end);
} pgpost_table;

/* A batch of segments for one INSERT, as binary arrays (pgtext_barr), which
 * the server reads without parsing text. */
typedef struct pgpost_segs {
    const pgpost_table *t;
    const char *tenant;
    pgtext_barr a[PGPOST_MAX_KEY + 3];
} pgpost_segs;

void pgpost_segs_init(pgpost_segs *g, const pgpost_table *t, const char *tenant);
void pgpost_segs_cleanup(pgpost_segs *g);

/* Adds the segment DATA[0..LEN) of N entries of the key in columns PART
 * at GEN, and writes the batch once large. */
int pgpost_segs_add(mnemo *m, pgpost_segs *g, const char *const *part, long long gen,
                    long long n, const char *data, size_t len);

/* Inserts what waits in G, and starts it again. */
int pgpost_segs_write(mnemo *m, pgpost_segs *g);

/* Each key of TERMS as a segment at GEN, all written. */
int pgpost_segs_terms(mnemo *m, pgpost_segs *g, const pgterms *terms, long long gen);

/* Reads the documents above *AFTER a page at a time: SQL with N
 * parameters PRM, $2 the id to read above (set here), its rows in id
 * order with the id first, at most PGPOST_ROWS of them, until a page
 * comes short. Each page goes to FN, MORE set when another may follow;
 * *AFTER moves to the last id read. */
int pgpost_pages(mnemo *m, const char *what, const char *sql, int n, const char **prm,
                 int64_t *after, int (*fn)(void *ud, const pg_rows *r, int more), void *ud);

/* The ids one statement gives in its first column (SQL with $1 the
 * tenant, in order) into *V, which the caller frees. */
int pgpost_ids(mnemo *m, const char *what, const char *sql, const char *tenant, int64_t **v,
               size_t *n);

/* Folds the segments R holds (rows of the key's columns, then gen and
 * data::text from column GEN on: what a DELETE ... RETURNING gave back)
 * into one per key at its largest gen, the sorted DEAD[0..NDEAD) left out,
 * written into table T again. */
int pgpost_fold(mnemo *m, const pgpost_table *t, const char *tenant, const pg_rows *r, int gen,
                const int64_t *dead, size_t ndead);

/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

/* A query term's postings as they are read: segments and rows in any
 * order (sorted by pgpost_list_sort), then walked (at). */
typedef struct pgpost_list {
    pgposting *v;
    size_t n, cap, at;
    int unsorted;
} pgpost_list;

/* Appends a posting. */
int pgpost_list_push(pgpost_list *l, int64_t id, int ntok, int tf);

/* Segment HEX (a bytea's text; RAW is scratch) into the lists L[k] whose
 * term LEX[k] is LEXEME, the sorted DEAD left out: MNEMO_CORRUPT when it
 * is damaged. */
int pgpost_lists_segment(pgpost_list *l, const char *const *lex, int nlex, const char *lexeme,
                         const char *hex, buf *raw, const int64_t *dead, size_t ndead);

/* A document's postings, from its tsvector text T, into the lists L[k]
 * whose term LEX[k] it holds (W is scratch). */
int pgpost_lists_tsv(pgpost_list *l, const char *const *lex, int nlex, int64_t id, int ntok,
                     const char *t, buf *w);

/* Sorts a list that came out of order; every list starts its walk. */
void pgpost_lists_sort(pgpost_list *l, int n);

/* Document at a time: the smallest id at the heads of L[0..N) (INT64_MAX
 * once none is left); the lists holding it move past it, each one's
 * frequency into TF[k] (0 for the others), the length into *NTOK and
 * which lists into *MASK. */
int64_t pgpost_next(pgpost_list *l, int n, uint8_t *tf, int *ntok, uint64_t *mask);

void pgpost_lists_free(pgpost_list *l, int n);

#endif
