/*
 * fts.h - mnemo's glue to SQLite FTS5: the "mnemo" tokenizer (tok.c behind
 * FTS5's tokenizer interface) and the "mnemo_bm25" ranking function, whose
 * parameters and per-phrase weights come from an fts_rank owned by the
 * caller, so that k1/b are tunable and required or excluded phrases can be
 * handled outside SQL.
 */
#ifndef MNEMO_FTS_H
#define MNEMO_FTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "tok.h"
#include "util/buf.h"

#define FTS_MAX_PHRASES 64

typedef struct fts_rank {
    double k1, b;
    int nphrase;                       /* phrases the query builder made */
    double weight[FTS_MAX_PHRASES];    /* 0 for excluded phrases */
    /* Filled by the ranking function: */
    int idf_ready;                     /* reset to 0 before each query */
    double idf[FTS_MAX_PHRASES];
    double avgdl;
    int64_t ndocs;
    uint64_t last_mask;                /* phrases matched by the last row */
} fts_rank;

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

/* Appends the document-mode tokens of TEXT to OUT in fts_feed form. */
int fts_pretokenize(tok *t, const char *text, size_t len, buf *out);

#endif
