/*
 * pgstore_int.h - what the files of PostgreSQL's files-and-chunks side
 * share: pgstore.c (schema, helpers, status), pgsync.c (sync),
 * pgsearch.c (the search and its rows), pgkeyword.c (the keyword leg).
 * Not for use outside them.
 */
#ifndef MNEMO_PGSTORE_INT_H
#define MNEMO_PGSTORE_INT_H

#include <stdint.h>

#include "engine/core.h"
#include "store/postgres/pg.h"
#include "text/bm25.h"
#include "text/chunk.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"

#define BATCH_FILES 200     /* files per commit */
#define BATCH_CHUNKS 4000   /* chunks per commit */
#define EMBED_ROWS 256      /* chunks per embedding round */
#define MAX_POSITIONS 255   /* per lexeme; BM25's tf saturates there too */
#define TSV_MAX_POS 16383   /* PostgreSQL's largest tsvector position */
#define PATH_ROWS_MAX 2000
#define SYNC_LOCK "7170532" /* first key of the tenant's sync lock */

/* A chunk's ranking factors, kept by the handle across searches
 * (pgsearch.c): valid while the index's stamp has not moved. */
typedef struct pgfactor {
    int64_t id; /* 0: empty slot */
    double when;
    int importance;
    uint32_t vec; /* 1 + the index of its first part's unit vector in vc, 0: not kept */
    int nvec;     /* its parts' vectors there, one after the other */
} pgfactor;

struct pgstore {
    tok *qtok, *dtok; /* query and document tokenizers */
    char lang[64];
    int stop_words;
    int64_t post_mark; /* the postings' merged mark last seen (pgnpost.c) */
    int post_seen;
    char *live;        /* the live generation's key (pgstore_live) */
    /* Factors cache: the generation key and stamp it belongs to, and an
     * open-addressing table of fc_cap (a power of two) slots. */
    char *fc_key;
    pgfactor *fc;
    size_t fc_n, fc_cap;
    int fc_warm;       /* the key was searched before */
    /* The candidates' unit vectors kept with their factors: vc_n of
     * vc_dims, room for vc_cap. */
    float *vc;
    size_t vc_n, vc_cap;
    int vc_dims;
    /* The factors statement of each vector table, kept at one address for
     * the connection's prepared statements (pgsearch.c). */
    char *fsql[8];
    int nfsql;
    /* The vector calibration's sample (pgsearch.c): cal_n unit vectors of
     * cal_dims for the key cal_key (generation, corpus version, vector
     * setup); cal_seen: the key the last search saw, fetched on its
     * second search. */
    char *cal_key, *cal_seen;
    float *cal;
    size_t cal_n;
    int cal_dims;
};

/* The handle's chunk-side state, made on first use; NULL out of memory. */
struct pgstore *pgstore_state(mnemo *m);

/* The key of TENANT's live generation of files and chunks (mnemo_live,
 * pgstore.c: the tenant itself unless a rebuild switched it), owned by the
 * handle until the next call; NULL on an error (set on M). */
const char *pgstore_live(mnemo *m, const char *tenant);

/* The query and document tokenizers for the configured language. */
int pgstore_tokenizers(mnemo *m, tok **qt, tok **dt);

/* Appends one element to an array literal being built in B ("{" first):
 * S (N bytes) as text, or V. */
void pgstore_arr_add(buf *b, const char *s, size_t n);
void pgstore_arr_int(buf *b, long long v);

/* B reset to the bigint[] literal of IDS[0..N). */
void pgstore_ids_literal(buf *b, const int64_t *ids, size_t n);

/* The tsvector text of pre-tokenized data TOKS[0..N): positions as FTS5
 * counts them (colocated tokens share one); *NTOK: the length in
 * positions. Or of TEXT, tokenized by T. */
int pgstore_tsvector_of(const char *toks, size_t n, buf *out, int *ntok);
/* The same in binary form (tsvectorrecv's input; pgnpost_add_bin reads it). */
int pgstore_tsvector_bin(const char *toks, size_t n, buf *out, int *ntok);
int pgstore_tsvector_text(tok *t, const char *text, buf *out);

/* Lowercase (ASCII, as SQLite's lower()) of S[0..N) into OUT. */
void pgstore_ascii_lower(buf *out, const char *s, size_t n);

/* One statement on the backend's connection (pgquery_q); pgstore_qp for one a
 * search runs every time (prepared on the connection: SQL must be a string
 * literal or otherwise stay at its address). */
int pgstore_q(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
              pg_rows **out);
int pgstore_qp(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
               pg_rows **out);
/* pgquery_send and pgquery_collect on the backend's connection. */
int pgstore_send(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
                 const int *lens, const int *formats);
int pgstore_collect(mnemo *m, const char *what, pg_rows **out);

/* Column COL of row ROW as an integer; an int array literal {1,2,3}
 * parsed into V (at most CAP), the count. */
long long pgstore_ll(const pg_rows *r, size_t row, int col);
size_t pgstore_int_array(const char *s, long long *v, size_t cap);

/* The query as PostgreSQL sees it: per phrase its lexemes (space
 * separated) and prefix flag, the tsquery of the whole query and of each
 * positive phrase, and of the excluded phrases. When every positive
 * phrase is one lexeme matched whole (or none), `simple` is set and
 * `words` holds each one's lexeme at woff[k] (NUL-terminated, "" for
 * none), `lexs` the non-empty ones as an array literal. For every query,
 * `toks` holds each phrase's lexemes (the excluded ones from npos on) at
 * toff[k] (space separated, NUL-terminated) and pfx[k] says whether it is
 * one lexeme as a prefix. */
typedef struct pgquery {
    buf phrases, prefix, tsq, ptsq, one, req, neg, words, lexs, toks;
    size_t woff[BM25_MAX_PHRASES], toff[BM25_MAX_PHRASES];
    unsigned char pfx[BM25_MAX_PHRASES];
    int np, npos, simple;
    int negmulti; /* an excluded phrase is not one whole lexeme */
} pgquery;

typedef struct hitrow {
    int64_t id;
    int ntok;
    uint8_t tf[BM25_MAX_PHRASES];
} hitrow;

typedef struct prow {
    int64_t id;
    int have_f, have_r, have_cos;
    double when;
    int importance;
    float cos[CHUNK_MAX_PARTS]; /* of each of its parts, ncos of them */
    int ncos;
    int fetching; /* its parts' cosines are coming in a fetch */
    char *text, *path, *source, *next;
    int first_line, next_first_line;
    uint32_t *map;
    size_t nmap;
} prow;

typedef struct pgsearch {
    mnemo *m;
    const char *tenant;
    const query *qy;
    /* keyword leg */
    hitrow *hits;
    size_t nhits;
    double idf[BM25_MAX_PHRASES], avgdl, k1, b;
    int np;
    /* The index's stamp when the postings were read (pgnpost.c): it moves
     * with every sync commit. Empty: not known, the factors cache is not
     * used. */
    char stamp[32];
    /* vector leg */
    int vec;
    char table[64], ident[1024];
    buf qvec;
    float *qunit; /* the query vector, unit length */
    int dims;
    /* The vector leg's statement from vector_start to vector_end: its SQL
     * (vq: the stable copy, or vsql), parameters, and the side connection
     * it was sent on (NULL: it runs on the handle's at vector_end). */
    int vstate, vown, vnp;
    const char *vq, *vp[7], *vprov, *vmodel;
    char vsql[3072], vlim[32], vcal[32], vname[32];
    /* The fixed texts' vectors (engine/calib.h): their setup, and whether
     * their table is there. */
    char cident[1200];
    int ccal;
    struct pg_conn *vside;
    /* rows fetched, sorted by id */
    prow *rows;
    size_t nrows, cap;
} pgsearch;

/* BM25 of hit H, as bm25_score() computes it (every weight 1). */
double pgstore_hit_bm25(const pgsearch *s, const hitrow *h);

/* The keyword leg (pgkeyword.c): the POOL best rows of SOURCE ("" for all)
 * by BM25 into s->hits, and the rows of EXTRA (vector candidates) that
 * match, with their frequencies; *SUM_IDF scales BM25 to 0..1. The postings
 * when every positive phrase is one word matched whole, else every
 * matching row is read and scored. */
int pgkeyword_leg(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
                  const int64_t *extra, size_t nextra, double *sum_idf);

#endif
