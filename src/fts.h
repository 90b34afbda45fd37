/*
 * fts.h - mnemo's glue to SQLite FTS5: the "mnemo" tokenizer (tok.c behind
 * FTS5's tokenizer interface), and two auxiliary functions: mnemo_collect()
 * gathers term frequencies and lengths of matching rows so that BM25 (with
 * tunable k1 and b) is computed in C, and mnemo_mask() tells which phrases
 * a row matched.
 */
#ifndef MNEMO_FTS_H
#define MNEMO_FTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "tok.h"
#include "util/buf.h"

#define FTS_MAX_PHRASES 64
#define FTS_DL_BLOCK 512

/* What mnemo_collect() gathers about the rows matching a query: per row
 * its id, length and term frequency of each phrase; per phrase the number
 * of matching rows (its document frequency). */
typedef struct fts_hits {
    int64_t *id;
    int *dl;
    uint8_t *tf;     /* n x np, saturating at 255 */
    uint64_t *mask;  /* phrases present in the row */
    size_t n, cap;
    int np;
    int64_t df[FTS_MAX_PHRASES];
    int64_t ndocs;   /* rows in the table */
    double avgdl;
    int stats;       /* ndocs and avgdl are set */
    int nomem;
} fts_hits;

typedef struct fts_rank {
    fts_hits hits;
    /* Document lengths of chunks_fts, read in blocks (see fts.c). */
    sqlite3 *db;
    const char *docsize_table; /* FTS5's length table; NULL: chunks_fts_docsize */
    sqlite3_stmt *docsize;
    int64_t dl_id[FTS_DL_BLOCK];
    int dl_len[FTS_DL_BLOCK];
    int dl_n, dl_cur;
} fts_rank;

/* Prepares for a query with NPHRASE phrases. */
void fts_rank_reset(fts_rank *r, int nphrase);

/* Releases what the state holds. */
void fts_rank_cleanup(fts_rank *r);

/* BM25 of collected row I: sum over phrases of WEIGHT * IDF * saturated tf,
 * IDF = ln(1 + (N - df + 0.5) / (df + 0.5)), written to IDF[] by fts_idf. */
void fts_idf(const fts_rank *r, double *idf);
double fts_bm25(const fts_rank *r, size_t i, const double *weight, const double *idf, double k1,
                double b);

/* Tokens computed ahead of an insert (on another thread): when FTS5 asks
 * to tokenize a document equal to TEXT, the tokenizer replays TOKS instead
 * of tokenizing again. */
typedef struct fts_feed {
    const char *text;
    size_t len;
    const char *toks;
    size_t toks_len;
} fts_feed;

/* Registers the tokenizer and ranking function on DB. RANK and FEED (may be
 * NULL) must outlive DB. Returns an SQLite result code. */
int fts_register(sqlite3 *db, fts_rank *rank, fts_feed *feed);

/* Registers another collecting function NAME (like mnemo_collect) with its
 * own state RANK, for a second FTS table. */
int fts_register_collect(sqlite3 *db, const char *name, fts_rank *rank);

/* Appends the document-mode tokens of TEXT to OUT in fts_feed form. */
int fts_pretokenize(tok *t, const char *text, size_t len, buf *out);

#endif
