/*
 * model.h - static embedding tables: importing GloVe / word2vec text,
 * word2vec binary and model2vec folders into one compact file (.mnv) that
 * is memory-mapped at open, and turning text into a sentence vector.
 *
 * Sentence vector: the weighted mean of the vectors of the text's known
 * tokens, L2-normalised. Word tables use SIF weights a / (a + p(w)) with
 * p(w) estimated from the word's frequency rank (tables are stored most
 * frequent first; Zipf: p(rank) = 1 / (rank * H(N))); model2vec tables
 * carry their own weighting in the vectors and use a plain mean over their
 * WordPiece tokens.
 */
#ifndef MNEMO_MODEL_H
#define MNEMO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "text/tok.h"
#include "util/buf.h"

typedef struct model model;

/* Converts the table at SRC (a GloVe or word2vec text file, optionally
 * .gz; a word2vec .bin file; or a model2vec folder holding
 * model.safetensors and tokenizer.json) into DST. MAX_WORDS > 0 keeps only
 * the most frequent words. Errors get a message in ERR. */
int model_import(const char *src, const char *dst, size_t max_words, buf *err, size_t *words,
                 int *dims);

/* Maps an imported table. MNEMO_NOTFOUND, or MNEMO_CORRUPT for a file
 * that is not a valid table (message in ERR). */
int model_open(const char *path, model **out, buf *err);
void model_close(model *m);

int model_dims(const model *m);
size_t model_words(const model *m);

/* Embeds TEXT into OUT (dims floats, unit length, or all zero when no token
 * is known). Returns the number of known tokens used. T is a tokenizer with
 * language none (scratch; not shared between threads). */
int model_embed(const model *m, tok *t, const char *text, size_t len, float *out);

#endif
