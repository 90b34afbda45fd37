/*
 * search.h - note search, run once by the engine for both storage
 * backends: search_notes cleans and parses the query, asks the store's
 * legs (search_store) for their candidates, keeps the keyword pool's best
 * (topk.h), unites the legs' candidates and ranks them: the fusion, path
 * boosts and tiers, recency and importance, threshold, diversity (MMR),
 * snippets and the result set. Where rows live is the store's: its legs
 * step reads the candidates, search_io the rows the ranking asks for; the
 * SQLite index (lite_search.c) with prepared statements, PostgreSQL
 * (pgsearch.c) in a few batched queries.
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

/* The file-name legs' files, and chunks of theirs (to find the candidates
 * in those files): all of them, or at least every candidate's. */
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

/* Adds file FILE_ID found with FRAC and TIER and its first chunk CHUNK_ID
 * (0 for none) alone, for a store that then adds the candidates among its
 * chunks with search_file_hits_chunk. */
int search_file_hit_first(search_file_hits *f, int64_t file_id, int64_t chunk_id, double frac,
                          int tier);

/* Sorts and merges what search_file_hit_add gathered, and again after
 * search_file_hits_chunk. */
void search_file_hits_finish(search_file_hits *f);

/* Adds CHUNK_ID, of file FILE_ID, to F's chunks when that file is one of
 * F's (F finished), so that the ranking finds the file of that candidate
 * (then search_file_hits_finish again). */
int search_file_hits_chunk(search_file_hits *f, int64_t chunk_id, int64_t file_id);
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
    const char *mime;    /* an image or audio file's MIME type, else NULL */
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

/* ----------------------------------------------------------------------
 * The operation and the store's steps
 * -------------------------------------------------------------------- */

/* One search's legs: what the engine gives them, what they give back, and
 * what the engine makes of it for the ranking stage. */
typedef struct search_legs {
    /* Given. */
    tok *t;             /* the query tokenizer (backend_ops.qtok) */
    const query *q;     /* the parsed query; q->match NULL: no keyword leg */
    const char *text;   /* the cleaned query, to embed */
    const char *corpus; /* mnemo_search_opts.corpus: NULL (memory), "sessions", "all" */
    int media;          /* mnemo_search_opts.media: 0 with the notes, 1 only, -1 none */
    size_t pool;        /* candidates each leg brings (search_pool_size) */
    mnemo_results *res; /* the legs set mode, provider, model and fallback */
    double *lap;        /* the search's clock: timing.keyword_ms and vector_ms are
                           laps of it (search_lap), the legs' to take */
    /* Given back by the legs step. */
    void *ud;           /* the store's state, for its io and end steps */
    search_cand *kw;    /* keyword candidates (chunk_id, BM25 in raw, vec -1), any
                           number: the engine keeps the best pool (topk.h) */
    size_t nkw;
    const int64_t *vids; /* the vector leg's candidates */
    size_t nvids;
    search_file_hits fh; /* the file-name legs' files, finished; freed by the engine */
    search_bm25 bm;      /* sum_idf and avgdl 1 until the keyword leg sets them */
    search_vstats vs;
    /* Images and audio (multimodal): chunk ids from MEDIA_LO up are media
     * (0: the store keeps none), whose vector scores are measured by their
     * own leg's cosines (MVS): text and media vectors sit apart. */
    int64_t media_lo;
    search_vstats mvs;
    /* The engine's: the union of the candidates, one per chunk, with room
     * for fh.n more (path hits without a candidate are added), and how the
     * ranking reads their rows (the io step's). */
    search_cand *all;
    size_t n;
    search_io io;
} search_legs;

/* A store's steps of note search (backend_ops.notes), as memory.h's
 * mem_searcher is memory search's. Each reports its errors on the handle;
 * kw and vids stay the store's until end. */
typedef struct search_store {
    /* Runs the legs for L's given fields and fills what they give back
     * (l->ud: the store's state). An error ends the search; end runs all
     * the same. */
    int (*legs)(mnemo *m, search_legs *l);
    /* Fills l->io for the candidates l->all[0..l->n) and the file hits'
     * first chunks (a store may read their rows in one go here). */
    int (*io)(mnemo *m, search_legs *l);
    /* After the ranking or an error, once legs ran: ends what legs began
     * and frees l->ud. */
    void (*end)(mnemo *m, search_legs *l);
} search_store;

/* The note search of M's backend (backend_ops.search of both stores):
 * mnemo_search's contract, over the steps m->be->notes. */
int search_notes(mnemo *m, const char *text, const mnemo_search_opts *opts, mnemo_results **out);

/* The ranking stage over L's union (l->all, l->n, l->io) and its legs'
 * file hits, BM25 statistics and vector stats: fills l->res (mode,
 * provider and model are the legs') with at most the results asked for
 * that score the threshold or more, its timings laps of l->lap. */
int search_rank(mnemo *m, search_legs *l, const mnemo_search_opts *opts);

/* A vector leg whose provider failed with RC (the message in ERR): the
 * search's error ("memory search unavailable: ...") when the provider or
 * model was asked for by name (EXPLICIT_), else the results' fallback
 * (keyword only, and why). Returns what the leg returns. */
int search_vector_failed(mnemo *m, mnemo_results *res, const char *provider, int explicit_,
                         int rc, const buf *err);

/* The results asked for and the threshold, from OPTS or the config. */
int search_max_results(mnemo *m, const mnemo_search_opts *opts);

/* How many candidates each leg brings to the fusion: four times the
 * results asked for, 200 at least. Both backends use it, so their pools
 * (and results) agree. */
size_t search_pool_size(mnemo *m, const mnemo_search_opts *opts);

/* Milliseconds since *T, which moves to now. */
double search_lap(double *t);

#endif
