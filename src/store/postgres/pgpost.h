/*
 * pgpost.h - the chunks' inverted index on PostgreSQL: per tenant, source
 * and lexeme, posting lists in compressed segments, read only for a
 * query's terms and ranked here with exact BM25 (see pgpost.c).
 *
 * Tables (migration 6): mnemo_postings (tenant, source, lexeme, gen, n,
 * data) holds the segments; mnemo_post_state (tenant, merged) says that
 * every chunk of the tenant with an id up to `merged` is in them, except the
 * ids in mnemo_post_dead (chunks deleted since their segments were written).
 * Chunks above `merged` (a batch not merged yet, or a sync that was killed)
 * are read from their tsvectors at search time and merged by the next sync.
 */
#ifndef MNEMO_PGPOST_H
#define MNEMO_PGPOST_H

#include <stdint.h>

#include "store/postgres/pgstore_int.h"

/* The statement part recording chunks deleted by a CTE "d" (returning
 * their id) as dead when their segments hold them; $1 is the tenant. */
#define PGPOST_DEAD                                                                               \
    "pd AS (INSERT INTO mnemo_post_dead(tenant, id) SELECT $1, d.id FROM d WHERE d.id <= "        \
    "coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1) "                    \
    "ON CONFLICT DO NOTHING) "

typedef struct pgpost pgpost;

/* The encoding, shared with the memories' postings (pgmpost.c). */
typedef struct pgposting {
    int64_t id;
    int ntok;
    int tf;
} pgposting;

/* One posting into B after the one of id *LAST (0 before the first). */
/* V as a little-endian base-128 varint appended to B; the next varint of
 * *P (before END) into *V, moving *P: 0 when it is cut short. */
void pgpost_put_varint(buf *b, uint64_t v);
int pgpost_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v);

void pgpost_put(buf *b, int64_t *last, int64_t id, int tf, int ntok);

/* Postings being written, by key (bytes, NULs allowed): a table both
 * inverted indexes fill before writing their segments. */
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
} pgterms;

/* The entry of KEY[0..N), made if new; NULL out of memory. */
pgterm *pgterms_get(pgterms *p, const char *key, size_t n);
void pgterms_cleanup(pgterms *p);

/* Appends the postings of segment P[0..N) to *V (growing *CAP), those of
 * the sorted DEAD[0..NDEAD) left out: 1, 0 when the segment is damaged,
 * -1 out of memory. */
int pgpost_decode(const unsigned char *p, size_t n, const int64_t *dead, size_t ndead,
                  pgposting **v, size_t *nv, size_t *cap);

/* A bytea's hex text ("\x0a1b...") decoded into OUT (0: not hex); the
 * reverse appended to B. */
int pgpost_unhex(const char *s, buf *out);
void pgpost_hex(buf *b, const char *s, size_t n);

/* Calls FN for each lexeme of tsvector text T ('lex':1,5 'b''c':2) with its
 * unescaped bytes and its number of positions (W is scratch). */
int pgpost_tsv_each(const char *t, buf *w,
                    int (*fn)(void *ud, const char *lex, size_t n, int npos), void *ud);

/* Starts a sync's postings for TENANT (under its sync lock, outside a
 * transaction): chunks above the merged mark left by an earlier sync are
 * merged first. */
int pgpost_open(mnemo *m, const char *tenant, pgpost **out);
void pgpost_free(pgpost *p);

/* Chunk ID of SOURCE, NTOK long, whose tsvector text is TSV, to be merged. */
int pgpost_add(pgpost *p, int64_t id, const char *source, int ntok, const char *tsv);
/* The same from the binary tsvector T[0..N) (ps_tsvector_bin). */
int pgpost_add_bin(pgpost *p, int64_t id, const char *source, int ntok, const unsigned char *t,
                   size_t n);

/* Writes what was added as new segments, and moves the merged mark, inside
 * the caller's transaction: always with FINAL, else once enough postings
 * wait. Folds the lexemes with too many segments, and every lexeme when
 * many chunks are dead. */
int pgpost_flush(pgpost *p, int final);

/* 1 when enough postings wait for pgpost_flush to write them now. */
int pgpost_due(const pgpost *p);
/* Whether postings wait to be written. */
int pgpost_pending(const pgpost *p);

/* Drops TENANT's postings (a rebuild), inside the caller's transaction. */
int pgpost_reset(mnemo *m, const char *tenant);

/* The keyword leg from the postings (pgkeyword.c's contract), for queries
 * of whole words without excluded phrases. MNEMO_NOTFOUND when the tenant
 * has no postings yet (never synced since migration 6): use another leg. */
int pgpost_leg(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
               const int64_t *extra, size_t nextra, double *sum_idf);

/* pgpost_leg in two steps, so that other work can run between them:
 * pgpost_read reads the query's posting lists (the statistics into S and
 * *SUM_IDF; MNEMO_NOTFOUND as pgpost_leg's), pgpost_walk ranks them with
 * the EXTRA ids known by then into s->hits (again, replacing them, when
 * called again: the best POOL are the same whatever the extra ids). */
typedef struct pgpost_lists pgpost_lists;
int pgpost_read(pgsearch *s, const pgquery *pq, const char *source, pgpost_lists **out,
                double *sum_idf);
int pgpost_walk(pgsearch *s, const pgquery *pq, pgpost_lists *l, size_t pool,
                const int64_t *extra, size_t nextra);
void pgpost_lists_free(pgpost_lists *l);

/* For any query (phrases, prefixes, excluded phrases): the ids, sorted, of
 * the chunks that may match one of PQ's phrases K0..K1-1 (the positive ones
 * are 0..npos-1, the excluded ones npos..np-1): those holding all the
 * lexemes of one, or a lexeme starting with a prefix; deleted ones too.
 * *MARK: the mark they were read at (every chunk above it may match as
 * well), -1 when the tenant has no postings yet; MNEMO_NOTFOUND when the
 * query is too long to be looked up this way. The caller frees *IDS. */
int pgpost_candidates(pgsearch *s, const pgquery *pq, int k0, int k1, const char *source,
                      int64_t **ids, size_t *nids, int64_t *mark);

#endif
