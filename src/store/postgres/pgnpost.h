/*
 * pgnpost.h - the notes' chunks in the inverted index (pgpost.h): per
 * tenant, source and lexeme, posting lists in compressed segments, merged
 * by the sync, read only for a query's terms and ranked here with exact
 * BM25 (see pgnpost.c).
 *
 * Tables (migration 6): mnemo_postings (tenant, source, lexeme, gen, n,
 * data) holds the segments; mnemo_post_state (tenant, merged) says that
 * every chunk of the tenant with an id up to `merged` is in them, except the
 * ids in mnemo_post_dead (chunks deleted since their segments were written).
 * Chunks above `merged` (a batch not merged yet, or a sync that was killed)
 * are read from their tsvectors at search time and merged by the next sync.
 */
#ifndef MNEMO_PGNPOST_H
#define MNEMO_PGNPOST_H

#include <stdint.h>

#include "store/postgres/pgstore_int.h"

/* The statement part recording chunks deleted by a CTE "d" (returning
 * their id) as dead when their segments hold them; $1 is the tenant. */
#define PGNPOST_DEAD                                                                              \
    "pd AS (INSERT INTO mnemo_post_dead(tenant, id) SELECT $1, d.id FROM d WHERE d.id <= "        \
    "coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1) "                    \
    "ON CONFLICT DO NOTHING) "

typedef struct pgnpost pgnpost;

/* Starts a sync's postings for TENANT (under its sync lock, outside a
 * transaction): chunks above the merged mark left by an earlier sync are
 * merged first. */
int pgnpost_open(mnemo *m, const char *tenant, pgnpost **out);
void pgnpost_free(pgnpost *p);

/* Chunk ID of SOURCE, NTOK long, whose tsvector text is TSV, to be merged. */
int pgnpost_add(pgnpost *p, int64_t id, const char *source, int ntok, const char *tsv);
/* The same from the binary tsvector T[0..N) (pgstore_tsvector_bin). */
int pgnpost_add_bin(pgnpost *p, int64_t id, const char *source, int ntok, const unsigned char *t,
                    size_t n);

/* Writes what was added as new segments, and moves the merged mark, inside
 * the caller's transaction: always with FINAL, else once enough postings
 * wait. Folds the lexemes with too many segments, and every lexeme when
 * many chunks are dead. */
int pgnpost_flush(pgnpost *p, int final);

/* 1 when enough postings wait for pgnpost_flush to write them now. */
int pgnpost_due(const pgnpost *p);
/* Whether postings wait to be written. */
int pgnpost_pending(const pgnpost *p);

/* Drops TENANT's postings (a rebuild), inside the caller's transaction. */
int pgnpost_reset(mnemo *m, const char *tenant);

/* The keyword leg from the postings (pgkeyword.c's contract), for queries
 * of whole words without excluded phrases. MNEMO_NOTFOUND when the tenant
 * has no postings yet (never synced since migration 6): use another leg. */
int pgnpost_leg(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
                const int64_t *extra, size_t nextra, double *sum_idf);

/* pgnpost_leg in two steps, so that other work can run between them:
 * pgnpost_read reads the query's posting lists (the statistics into S and
 * *SUM_IDF; MNEMO_NOTFOUND as pgnpost_leg's), pgnpost_walk ranks them with
 * the EXTRA ids known by then into s->hits (again, replacing them, when
 * called again: the best POOL are the same whatever the extra ids). */
typedef struct pgnpost_lists pgnpost_lists;
int pgnpost_read(pgsearch *s, const pgquery *pq, const char *source, pgnpost_lists **out,
                 double *sum_idf);
int pgnpost_walk(pgsearch *s, const pgquery *pq, pgnpost_lists *l, size_t pool,
                 const int64_t *extra, size_t nextra);
void pgnpost_lists_free(pgnpost_lists *l);

/* For any query (phrases, prefixes, excluded phrases): the ids, sorted, of
 * the chunks that may match one of PQ's phrases K0..K1-1 (the positive ones
 * are 0..npos-1, the excluded ones npos..np-1): those holding all the
 * lexemes of one, or a lexeme starting with a prefix; deleted ones too.
 * *MARK: the mark they were read at (every chunk above it may match as
 * well), -1 when the tenant has no postings yet; MNEMO_NOTFOUND when the
 * query is too long to be looked up this way. The caller frees *IDS. */
int pgnpost_candidates(pgsearch *s, const pgquery *pq, int k0, int k1, const char *source,
                       int64_t **ids, size_t *nids, int64_t *mark);

#endif
