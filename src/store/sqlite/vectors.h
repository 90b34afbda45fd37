/*
 * vectors.h - the vector side of the index: which provider to use (the
 * provider policy), embedding the chunks that have no vector, the flat
 * matrix file scanned by searches, and the vector leg of a search.
 */
#ifndef MNEMO_VECTORS_H
#define MNEMO_VECTORS_H

#include <stdint.h>

#include "embed/embed.h"
#include "engine/calib.h"
#include "engine/provider.h"
#include "mnemo.h"
#include "store/sqlite/store.h"
#include "embed/vec.h"

typedef struct mnemo mnemo;

/* Embeds every chunk of ST without a vector (after reusing the embedding
 * cache), committing batch by batch, and rewrites the matrix file. STATS
 * gets the counts. Errors with a message in ERR. */
int vectors_sync(mnemo *m, store *st, const char *db_path, embedder *e,
                 const mnemo_sync_opts *opts, mnemo_sync_stats *stats, buf *err);

/* The fixed texts' vectors (engine/calib.h) of one embedding setup, read
 * from the index once and kept by the handle (LITE(m)->calib). */
typedef struct vec_calib vec_calib;
void vectors_calib_free(vec_calib *c);

/* The mean and spread of query vector Q's cosines with the fixed texts of
 * E's setup into NL's ref fields (ref_n 0 when the index has none: not
 * synced since), through the handle's *CACHE. */
int vectors_calib(mnemo *m, store *st, vec_calib **cache, embedder *e, const float *q,
                  calib_null *nl);

/* The media's baseline for the vector leg of images and audio
 * (multimodal): their cosines with the fixed texts (unrelated text against
 * media, which sit apart from text: a query's cosine with a matching image
 * is far below one with a matching note) into NL's ref fields, kept in
 * *CACHE for F's vectors. Q is the query's vector (as vectors_calib). */
typedef struct vec_file vec_file;
int vectors_media_calib(mnemo *m, store *st, vec_calib **cache, embedder *e, const float *q,
                        const vec_file *f, calib_null *nl);

/* Copies the embedding cache of the database at OLD_PATH into ST (a
 * fresh build keeps what was paid for). Best effort. */
void vectors_carry_cache(store *st, const char *old_path);

/* The memory-mapped matrix of an index. */

/* Opens DB_PATH.vec if it matches the index (same stamp); otherwise
 * rebuilds it from the database first. MNEMO_NOTFOUND when the index has
 * no vectors. */
int vecfile_open(store *st, const char *db_path, int quantize, vec_file **out, buf *err);
void vecfile_close(vec_file *f);

/* vecfile_open() through a mapping kept in *CACHE: reused while it was
 * built for the index's current vectors (their stamp) and quantization,
 * replaced otherwise. The caller closes *CACHE when done with the index. */
int vecfile_get(store *st, const char *db_path, int quantize, vec_file **cache, buf *err);
size_t vecfile_count(const vec_file *f);
/* The rows of images and audio (chunk ids from STORE_MEDIA_ID_BASE up). */
size_t vecfile_media_count(const vec_file *f);
int vecfile_dims(const vec_file *f);

/* The vector leg: the best K vectors (a chunk's parts may come more than
 * once) of chunks with ids in [LO, HI) for query vector Q
 * (cosine), and the mean and spread of the cosines over those chunks (for
 * calibration). */
typedef struct vec_match {
    int64_t chunk_id;
    float cosine;
} vec_match;
size_t vecfile_search(const vec_file *f, const float *q, int64_t lo, int64_t hi, size_t k,
                      int quantize, vec_match *out, double *mean, double *sd);

/* The cosines of the parts of chunk CHUNK_ID (chunk_parts) with Q, at
 * most MAX of them, in order, into CS; returns how many (0: no vector). */
int vecfile_cosines(const vec_file *f, int64_t chunk_id, const float *q, float *cs, int max);

#endif
