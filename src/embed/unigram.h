/*
 * unigram.h - the SentencePiece Unigram tokenizer as Hugging Face's
 * tokenizers library runs it from a tokenizer.json (XLM-RoBERTa and the
 * models made from it: multilingual-e5, paraphrase-multilingual, BGE-M3):
 *
 *   normalizer     Precompiled (SentencePiece's compiled character map: a
 *                  double-array trie of byte strings and their
 *                  replacements, applied per grapheme as tokenizers does),
 *                  NFC/NFD/NFKC/NFKD, Lowercase, Strip, Replace (a string,
 *                  or the regex " {2,}"), in a Sequence;
 *   pre-tokenizer  WhitespaceSplit and Metaspace (spaces to U+2581, the
 *                  prefix "always", "first" or "never", split before each
 *                  U+2581), in a Sequence;
 *   model          Unigram: the segmentation of each word with the highest
 *                  sum of piece scores (Viterbi), a character no piece
 *                  covers as the unknown piece scored 10 below the lowest
 *                  score, runs of unknowns fused into one, byte fallback
 *                  (<0xAB> pieces) when the model says so;
 *   post-processor TemplateProcessing or RobertaProcessing: the special
 *                  tokens before and after the text (<s> ... </s>).
 *
 * Known differences: graphemes are utf8proc's (Unicode's extended
 * grapheme clusters, as the unicode-segmentation crate, but of the
 * Unicode version utf8proc carries). Added tokens written in the text
 * ("<s>", "<mask>": those with normalized false) are their ids, found on
 * the raw text as the library finds them (leftmost, longest; lstrip and
 * rstrip take the whitespace beside them), and the text between them is
 * tokenized piece by piece; at most eight, of up to 23 bytes, and not the
 * single_word ones (those stay text).
 */
#ifndef MNEMO_UNIGRAM_H
#define MNEMO_UNIGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct unigram unigram;

/* Loads the tokenizer.json at PATH. MNEMO_NOTFOUND when it is not a
 * Unigram tokenizer (or absent), MNEMO_INVALID for a Unigram tokenizer
 * with parts this file does not run (message in ERR). */
int ug_load(const char *path, unigram **out, buf *err);
void ug_free(unigram *u);

size_t ug_vocab_size(const unigram *u);

/* As one blob (appended to OUT), and back: ug_from_blob uses P (N bytes,
 * 8-aligned, kept alive by the caller) in place. MNEMO_CORRUPT for a blob
 * that does not hold together. */
int ug_to_blob(const unigram *u, buf *out);
int ug_from_blob(const void *p, size_t n, unigram **out);

/* The ids of TEXT (LEN bytes of UTF-8; invalid bytes are dropped) into
 * IDS: the template's leading special tokens, the text's tokens (as many
 * as fit in MAX), the trailing ones. Returns the count. */
int ug_encode(const unigram *u, const char *text, size_t len, int32_t *ids, int max);

#endif
