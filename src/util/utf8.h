/*
 * utf8.h - small UTF-8 helpers: decoding with validation, repair of invalid
 * sequences, code-point counting and the CJK script test the tokenizer and
 * chunker share.
 */
#ifndef MNEMO_UTF8_H
#define MNEMO_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Decodes the code point at S (N bytes available). Returns its length in
 * bytes (1..4) and stores it in *cp; an invalid or truncated sequence yields
 * length 1 and *cp = -1. N must be > 0. */
int utf8_decode(const char *s, size_t n, int32_t *cp);

/* Encodes CP into OUT (at least 4 bytes); returns the length. */
int utf8_put(int32_t cp, char *out);

/* Returns 1 when S is valid UTF-8 without overlongs or surrogates. */
int utf8_valid(const char *s, size_t n);

/* Appends S to OUT with every invalid sequence replaced by U+FFFD. */
int utf8_repair(buf *out, const char *s, size_t n);

/* Number of code points in S (invalid bytes count one each). */
size_t utf8_count(const char *s, size_t n);

/* Byte length of the longest prefix of S holding at most MAXCP code points,
 * never splitting a sequence. */
size_t utf8_prefix(const char *s, size_t n, size_t maxcp);

/* Han, Hiragana, Katakana or Hangul: the scripts written without spaces,
 * which the tokenizer splits into character bigrams. */
int utf8_is_cjk(int32_t cp);

/* Unicode's White_Space property (what Rust's char::is_whitespace and so
 * the tokenizers of embedding models test). */
int utf8_is_space(int32_t cp);

#endif
