/*
 * wordpiece.h - the BERT tokenizer as Hugging Face's tokenizers library
 * runs it from a tokenizer.json (or a bare vocab.txt): BertNormalizer
 * (control characters dropped, whitespace to spaces, CJK ideographs set
 * apart, accents stripped, lowercase), BertPreTokenizer (split on
 * whitespace, each punctuation character alone), WordPiece (greedy longest
 * match, "##" continuations, a word with an unknown piece or over 100
 * characters becomes [UNK]) and the [CLS] ... [SEP] template.
 *
 * Known differences: lowercasing maps one code point to one (Rust's
 * to_lowercase may give two, for U+0130 alone among common letters);
 * added tokens written literally in the text ("[MASK]") are tokenized as
 * text.
 */
#ifndef MNEMO_WORDPIECE_H
#define MNEMO_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct wordpiece wordpiece;

/* Loads DIR/tokenizer.json, else DIR/vocab.txt (lowercasing as
 * DIR/tokenizer_config.json says, on by default). MNEMO_NOTFOUND when
 * neither exists, MNEMO_INVALID for another tokenizer type (message in
 * ERR). */
int wp_load(const char *dir, wordpiece **out, buf *err);
void wp_free(wordpiece *w);

/* A WordPiece tokenizer from the token list TOKS[0..N) (id i; "##"
 * continuations), with the BERT normalizer (LOWER: lowercase and strip
 * accents) and the ids of [UNK], [CLS] and [SEP] (-1: looked up by
 * name). MNEMO_INVALID when they are missing. */
int wp_from_list(const char *const *toks, size_t n, int lower, int32_t unk, int32_t cls,
                 int32_t sep, wordpiece **out);

size_t wp_vocab_size(const wordpiece *w);

/* The tokenizer as one blob (appended to OUT), and back: wp_from_blob
 * uses P (N bytes, 8-aligned, kept alive by the caller) in place.
 * MNEMO_CORRUPT for a blob that does not hold together. */
int wp_to_blob(const wordpiece *w, buf *out);
int wp_from_blob(const void *p, size_t n, wordpiece **out);

/* The ids of TEXT (LEN bytes of UTF-8) into IDS: [CLS], the text's tokens
 * (the first MAX - 2), [SEP]. Returns the count (at least 2, MAX >= 2). */
int wp_encode(const wordpiece *w, const char *text, size_t len, int32_t *ids, int max);

#endif
