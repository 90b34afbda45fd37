/*
 * gemma.h - EmbeddingGemma (embeddinggemma-300m) in process, from a GGUF
 * file of llama.cpp's "gemma-embedding" architecture (float32, float16,
 * bfloat16 or Q8_0 weights): the Gemma 3 encoder run bidirectionally,
 * mean-pooled, through the sentence-transformers Dense layers when the
 * file carries them (dense_2, dense_3), L2-normalised. The tokenizer is
 * the file's SentencePiece vocabulary (spm.h). bert.h opens these files
 * and hands them here; the thread pool and the kernels are tpool.h's and
 * gemm.h's.
 */
#ifndef MNEMO_GEMMA_H
#define MNEMO_GEMMA_H

#include <stddef.h>
#include <stdint.h>

#include "embed/gguf.h"
#include "util/buf.h"

typedef struct gemma gemma;

/* Whether G's architecture is gemma-embedding. */
int gemma_is(const gguf *g);

/* Opens the model of G, the file PATH (taken over: closed with the model,
 * or on failure). THREADS <= 0: one per core. MNEMO_INVALID for a file
 * with parts this does not run, MNEMO_CORRUPT for missing or misshapen
 * tensors (message in ERR). A PATH named model.gguf (an imported model
 * folder's) opens with the folder's prepared file when one matches it. */
int gemma_open(gguf *g, const char *path, int threads, gemma **out, buf *err);
void gemma_close(gemma *m);

/* Makes the layers' weights int8 (gemm_quantize). MNEMO_NOMEM. */
int gemma_quantize(gemma *m);
/* The prepared file (GEMMA_PREPARED in the folder DIR holding M's
 * model.gguf): every matrix as the kernels' panels, written beside and
 * renamed, so that an open maps them instead of widening and packing the
 * weights (half a second and 800 MB for embeddinggemma-300m). It names the
 * size and modification time of the GGUF file; one that does not match it,
 * or does not hold together, is ignored. */
#define GEMMA_PREPARED "mnemo-gemma.bin"
int gemma_prepare_write(const gemma *m, const char *dir, buf *err);
/* Whether M's matrices come from its prepared file. */
int gemma_prepared(const gemma *m);
int gemma_dims(const gemma *m);
int gemma_layers(const gemma *m);
int gemma_max_tokens(const gemma *m);
const char *gemma_fingerprint(const gemma *m);
/* EmbeddingGemma's prompts for retrieval (the GGUF carries none). */
const char *gemma_query_prompt(const gemma *m);
const char *gemma_document_prompt(const gemma *m);

/* As bert_tokenize and bert_embed. */
int gemma_tokenize(const gemma *m, const char *text, size_t len, int32_t *ids);
int gemma_embed(gemma *m, const char *const *texts, const size_t *lens, size_t n, float *out);
int gemma_threads_for(const gemma *m, size_t bytes);

#endif
