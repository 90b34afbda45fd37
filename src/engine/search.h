/*
 * search.h - the ranking stage of a search, shared by both storage
 * backends: given the candidates of the keyword and vector legs and the
 * files the file-name legs found, the fusion, path boosts and tiers,
 * recency and importance, threshold, diversity (MMR), snippets and the
 * result set. Where rows live is behind search_io: the SQLite index
 * (lite_search.c) reads them with prepared statements, PostgreSQL (pgsearch.c)
 * from what it fetched in a few batched queries.
 */
#ifndef MNEMO_SEARCH_H
#define MNEMO_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "mnemo.h"
#include "engine/calib.h"
#include "text/query.h"
#include "engine/results.h"
#include "text/tok.h"
#include "util/buf.h"

typedef struct search_cand {
    int64_t chunk_id;
    int64_t file_id;  /* 0 until looked up */
    double raw;       /* BM25, 0 without a keyword match; -1: ask search_io.bm25 */
    double text;      /* 0..1 */
    double cosine;    /* of its best part */
    double vec;       /* 0..1 (its best part's), -1 without a vector */
    double gate;      /* vec as the threshold counts it in a large index (search.c) */
    double score;     /* 0..1, fused */
    double fused;     /* the fusion of text and vec, before path boost and factors */
    double boost;     /* share of the remaining score its path adds */
    int tier;         /* 3 path, 2 base name, 1 stem, 0 content */
    int path_hit;     /* query words in its path */
    double recency, importance; /* ranking factors applied */
    int rank_before;  /* 1-based, before diversity */
} search_cand;

typedef struct search_path_hit {
    int64_t file_id;
    double frac; /* share of the query terms found in the path */
    int tier;
    int64_t first_chunk, first_seq; /* its first chunk, 0 if none */
} search_path_hit;

typedef struct search_file_chunk {
    int64_t chunk_id, file_id;
} search_file_chunk;

/* The file-name legs' files, and their chunks (to find the candidates in
 * those files without a lookup per candidate). */
typedef struct search_file_hits {
    search_path_hit *v;
    size_t n, cap;
    search_file_chunk *chunks;
    size_t nchunks, cap_chunks;
} search_file_hits;

/* Adds file FILE_ID (with its chunk CHUNK_ID at SEQ, CHUNK_ID 0 for none)
 * found with FRAC and TIER. A file's rows should come together. */
int search_file_hit_add(search_file_hits *f, int64_t file_id, int64_t chunk_id, int64_t seq,
                        double frac, int tier);

/* Sorts and merges what search_file_hit_add gathered. */
void search_file_hits_finish(search_file_hits *f);
void search_file_hits_cleanup(search_file_hits *f);

/* A chunk's row for its result. Pointers borrowed until the next call. */
typedef struct search_row {
    const char *text;
    size_t len;
    int first_line;
    const char *path;
    const uint32_t *map; /* transcripts: JSONL line of each text line, else NULL */
    size_t nmap;
    const char *source;  /* "memory" or "sessions" */
    /* The next chunk of the same file when it shares lines with this one
     * (passages may run on into it), else NULL. */
    const char *next;
    size_t next_len;
    int next_first_line;
} search_row;

/* The keyword leg's BM25 statistics: passages are scored as chunks are. */
typedef struct search_bm25 {
    double idf[BM25_MAX_PHRASES]; /* of each phrase */
    double sum_idf;              /* of the positive phrases: scales BM25 to 0..1 */
    double avgdl, k1, b;
} search_bm25;

/* How the ranking stage reads the backend's rows. */
typedef struct search_io {
    void *ud;
    /* BM25 of a candidate the keyword leg did not score (raw < 0). */
    double (*bm25)(void *ud, int64_t chunk_id);
    /* The cosines of the chunk's vectors (one for each of its parts,
     * chunk_parts, in order) with the query's, at most MAX into CS: how
     * many, 0 without a vector. Called only when the vector leg ran. */
    int (*cosines)(void *ud, int64_t chunk_id, float *cs, int max);
    /* The date and importance of a chunk: 1, 0 when it is gone, or minus
     * a MNEMO_* status when it cannot be read (its message on the handle;
     * the search ends). */
    int (*factors)(void *ud, int64_t chunk_id, double *when, int *importance);
    /* Optional: the ids the next calls of KIND ('f' factors, 'r' rows)
     * will ask about, to read them in one go. An error ends the search. */
    int (*prefetch)(void *ud, int kind, const int64_t *ids, size_t n);
    /* The chunk's row: MNEMO_OK, MNEMO_NOTFOUND when gone, or an error. */
    int (*row)(void *ud, int64_t chunk_id, search_row *out);
} search_io;

/* What the vector leg tells the fusion: whether it ran, and the query's
 * cosines with every vector searched and with the fixed texts (calib.h). */
typedef struct search_vstats {
    int ran;
    calib_null null;
} search_vstats;

/* Cleans the query TEXT for searching (invalid UTF-8 repaired, runtime
 * envelopes removed) into OUT. MNEMO_INVALID for an empty or too long
 * query (message on M). */
int search_clean_query(mnemo *m, const char *text, buf *out);

/* The ranking stage. ALL[0..N) are the legs' candidates, one per chunk,
 * with room for FH->n more (path hits without a candidate are added).
 * BM from the keyword leg (sum_idf 1 and no IDF without one). Fills RES
 * (mode, provider and model are the caller's) with at most MAX results
 * scoring MIN_SCORE or more. */
int search_rank(mnemo *m, tok *t, const query *q, const search_io *io, search_cand *all,
                size_t n, const search_file_hits *fh, const search_bm25 *bm,
                const search_vstats *vs, const mnemo_search_opts *opts, mnemo_results *res,
                double *tm);

/* The results asked for and the threshold, from OPTS or the config. */
int search_max_results(mnemo *m, const mnemo_search_opts *opts);

/* How many candidates each leg brings to the fusion: four times the
 * results asked for, 200 at least. Both backends use it, so their pools
 * (and results) agree. */
size_t search_pool_size(mnemo *m, const mnemo_search_opts *opts);

/* Milliseconds since *T, which moves to now. */
double search_lap(double *t);

/* The union of the legs' candidates ALL[0..N): sorted by chunk id, one
 * entry per chunk, a keyword score (raw >= 0) kept over a missing one (-1).
 * Returns the new count. */
size_t search_cands_union(search_cand *all, size_t n);

#endif
