/*
 * bert.h - sentence encoders of the BERT family (BERT, MiniLM, BGE, E5,
 * GTE, and XLM-RoBERTa: multilingual-e5), in process, from a Hugging Face
 * model folder: config.json, the tokenizer (wordpiece.h, or unigram.h
 * for XLM-RoBERTa), model.safetensors (float32 mapped in place;
 * float16 and bfloat16 widened once), and the sentence-transformers files
 * that say how to pool (1_Pooling/config.json: mean or CLS), how long a
 * text may be (sentence_bert_config.json) and which prompts go in front of
 * queries and documents (config_sentence_transformers.json). Vectors are
 * L2-normalised. A GGUF file of llama.cpp's "bert" layout is read as such; one
 * of its "gemma-embedding" layout (EmbeddingGemma) is handed to gemma.h,
 * behind the same functions.
 *
 * The forward pass runs every text of a call as one sequence of tokens
 * (no padding): the linear layers see all tokens at once (gemm.h), the
 * attention each text alone. Work is split over a pool of threads, made
 * at the first call.
 */
#ifndef MNEMO_BERT_H
#define MNEMO_BERT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct bert bert;

/* Whether DIR looks like a transformer model folder of this file's kind
 * (config.json with model_type bert or xlm-roberta). */
int bert_is_model(const char *dir);

/* Copies the model folder SRC into DST (a new folder: written beside it
 * and renamed into place, so a failed copy leaves nothing behind), after
 * checking that it opens. Files are hard-linked when the two share a file
 * system. *DIMS receives the model's dimensions. */
int bert_install(const char *src, const char *dst, int *dims, buf *err);

/* The files of a model folder the encoder reads (NULL-terminated; some
 * optional): what bert_install copies and a download fetches. */
const char *const *bert_model_files(void);

/* Opens the model folder DIR. THREADS <= 0: one per core. MNEMO_NOTFOUND
 * when DIR holds no model, MNEMO_INVALID or MNEMO_CORRUPT for one that
 * cannot be used (message in ERR). */
int bert_open(const char *dir, int threads, bert **out, buf *err);
void bert_close(bert *b);

/* Makes the layers' weights int8 (gemm_quantize: a fourth of the memory a
 * product reads; each weight off by at most half of its row's step). The
 * embeddings, norms and biases stay float. MNEMO_NOMEM. */
int bert_quantize(bert *b);

int bert_dims(const bert *b);
/* A fingerprint of the weights (st_fingerprint), 16 hex digits. */
const char *bert_fingerprint(const bert *b);
/* Whether B runs from its folder's prepared file (bert_install made it:
 * nothing parsed or packed at open): 0 no, 1 yes, 2 with int8 panels too
 * (bert_quantize then copies nothing). */
int bert_prepared(const bert *b);
int bert_max_tokens(const bert *b);
int bert_layers(const bert *b);

/* The prompts the model's configuration puts before queries and
 * documents ("" for none). */
const char *bert_query_prompt(const bert *b);
const char *bert_document_prompt(const bert *b);

/* The token ids of TEXT as the model sees it ([CLS] ... [SEP], truncated
 * to its maximum length) into IDS (room for bert_max_tokens()); returns
 * their count (-1: out of memory, EmbeddingGemma's tokenizer only). */
int bert_tokenize(const bert *b, const char *text, size_t len, int32_t *ids);

/* Embeds TEXTS[0..N) (LENS[i] bytes) into OUT, N x dims floats. */
int bert_embed(bert *b, const char *const *texts, const size_t *lens, size_t n, float *out);
/* The threads a call embedding one text of BYTES would run on (the first
 * short call of a process runs on the caller alone, see tpool.h). */
int bert_threads_for(const bert *b, size_t bytes);

#endif
