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

/* Opens the model of G (taken over: closed with the model, or on
 * failure). THREADS <= 0: one per core. MNEMO_INVALID for a file with
 * parts this does not run, MNEMO_CORRUPT for missing or misshapen
 * tensors (message in ERR). */
int gemma_open(gguf *g, int threads, gemma **out, buf *err);
void gemma_close(gemma *m);

/* Makes the layers' weights int8 (gemm_quantize). MNEMO_NOMEM. */
int gemma_quantize(gemma *m);
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
