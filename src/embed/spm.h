/*
 * spm.h - the SentencePiece BPE tokenizer as llama.cpp runs it from a
 * GGUF vocabulary of type "llama" (tokenizer.ggml.tokens, .scores,
 * .token_type): Gemma's, EmbeddingGemma's.
 *
 *   special tokens  the text is first split at every user-defined token
 *                   written in it (longest token first, leftmost
 *                   occurrences), which becomes its id; control and
 *                   unknown tokens written in the text stay text (as
 *                   llama.cpp with parse_special off);
 *   each piece      a space before it when add_space_prefix says so and
 *                   it starts the text or follows a special token; spaces
 *                   to U+2581; split into UTF-8 characters, then the
 *                   adjacent pair whose concatenation is the token of
 *                   highest score merged (ties: the leftmost), again and
 *                   again; a symbol that is no token is spelled in byte
 *                   tokens <0xAB> (or the byte itself as a token, else
 *                   the unknown token);
 *   specials        BOS before, EOS after, as add_bos_token and
 *                   add_eos_token say (defaults: BOS only).
 *
 * Known difference: a token string held twice keeps its first id
 * (llama.cpp keeps the last).
 */
#ifndef MNEMO_SPM_H
#define MNEMO_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct spm spm;

/* llama.cpp's token types. */
enum { SPM_NORMAL = 1, SPM_UNKNOWN = 2, SPM_CONTROL = 3, SPM_USER_DEFINED = 4, SPM_UNUSED = 5,
       SPM_BYTE = 6 };

typedef struct spm_cfg {
    int32_t bos, eos, unk; /* ids, -1 for none */
    int add_bos, add_eos, add_space_prefix;
} spm_cfg;

/* A tokenizer of the N tokens TOKS (LENS bytes each, not NUL-terminated),
 * SCORES and TYPES (either NULL: all 0 / all normal). MNEMO_INVALID when
 * BOS or EOS is to be added but out of range (message in ERR). */
int spm_new(const char *const *toks, const size_t *lens, const float *scores,
            const int32_t *types, size_t n, const spm_cfg *cfg, spm **out, buf *err);
void spm_free(spm *s);

size_t spm_vocab_size(const spm *s);

/* As one blob (appended to OUT), and back: spm_from_blob uses P (N bytes,
 * 8-aligned, kept alive by the caller) in place. MNEMO_CORRUPT for a blob
 * that does not hold together. */
int spm_to_blob(const spm *s, buf *out);
int spm_from_blob(const void *p, size_t n, spm **out);

/* The ids of TEXT (LEN bytes of UTF-8) into IDS: BOS, the text's tokens
 * (as many as fit in MAX with the specials), EOS. Returns the count, -1
 * when out of memory. */
int spm_encode(const spm *s, const char *text, size_t len, int32_t *ids, int max);

#endif
