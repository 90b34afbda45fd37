/*
 * vocab.h - a tokenizer's vocabulary: token id <-> string, looked up by
 * hash (open addressing). The tokenizers (wordpiece.h, unigram.h) hold
 * one; it can be written out as a blob and used in place from a mapped
 * file.
 */
#ifndef MNEMO_VOCAB_H
#define MNEMO_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct vocab {
    char *pool;      /* the tokens, NUL-terminated */
    uint32_t *off;   /* id -> offset in POOL, UINT32_MAX for a hole */
    uint32_t *slots; /* id + 1, 0 = empty */
    size_t n, nslots, pool_bytes;
    int mapped;      /* the arrays point into a blob */
} vocab;

/* Builds V from TOKS[0..N) (id i; NULL for a hole; a duplicate keeps its
 * first id). */
int vocab_build(vocab *v, const char *const *toks, size_t n);
void vocab_cleanup(vocab *v);

/* The id of S (N bytes), or -1. */
int32_t vocab_find(const vocab *v, const char *s, size_t n);
/* The string of ID, or NULL. */
const char *vocab_str(const vocab *v, int32_t id);

/* The blob body: POOL, OFF and SLOTS, each 8-aligned (the sizes are the
 * caller's to store). vocab_blob_bytes is the body's size for sizes
 * N, NSLOTS, POOL_BYTES. vocab_from_blob points V into P (N bytes) after
 * checking that every lookup stays in bounds: MNEMO_CORRUPT if not. */
int vocab_to_blob(const vocab *v, buf *out);
size_t vocab_blob_bytes(size_t n, size_t nslots, size_t pool_bytes);
int vocab_from_blob(vocab *v, const void *p, size_t bytes, size_t n, size_t nslots,
                    size_t pool_bytes);

#endif
