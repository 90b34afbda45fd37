/*
 * tok.h - the tokenizer: one implementation for documents and queries.
 *
 * Text is split into words, identifiers and CJK runs. Words are Unicode
 * normalised (NFKC), case folded, stripped of accents and stemmed (Snowball).
 * Identifiers (snake_case, dotted.keys, paths, owner/repo, #123, v1.2.3,
 * CamelCase) are emitted whole, unstemmed, followed by their stemmed parts at
 * the same position. Runs of Han, Hiragana, Katakana and Hangul become
 * overlapping character bigrams (a lone character stays itself).
 *
 * tok_run() reports every token with flags; callers decide what to keep (the
 * FTS5 wrapper drops identifier parts from queries, the query parser drops
 * stop words).
 */
#ifndef MNEMO_TOK_H
#define MNEMO_TOK_H

#include <stddef.h>

#include "util/buf.h"

#define TOK_MAX_BYTES 64 /* longer tokens are cut at a code-point boundary */

enum {
    TOKF_COLOCATED = 1, /* same position as the previous token */
    TOKF_PART = 2,      /* a part of the preceding identifier (colocated) */
    TOKF_WHOLE = 4,     /* an identifier kept whole; its parts follow */
    TOKF_CJK = 8,       /* a CJK bigram or lone CJK character */
    TOKF_STOP = 16,     /* a stop word (only set when asked for) */
    TOKF_PREFIXABLE = 32 /* a lone CJK character: match as a prefix in queries */
};

typedef struct tok tok;

/* Called for each token. TOKEN is not NUL-terminated and only valid during
 * the call. START and END are byte offsets of the source text it came from.
 * A non-zero return stops tok_run(), which returns that value. */
typedef int (*tok_fn)(void *ud, int flags, const char *token, int len, int start, int end);

/* LANGUAGE: a Snowball algorithm name ("english", "german", ...) or "none".
 * STOP_WORDS: mark stop words (English list; only when language is english).
 * MNEMO_INVALID for an unknown language. */
int tok_new(const char *language, int stop_words, tok **out);
void tok_free(tok *t);

/* Returns 1 when LANGUAGE is "none" or a stemmer libstemmer knows. */
int tok_language_valid(const char *language);

/* Writes the known stemmer names, comma separated, into OUT (size N). */
void tok_language_list(char *out, size_t n);

/* Tokenizes TEXT. With MARK_STOP, stop words carry TOKF_STOP.
 * Returns 0, MNEMO_NOMEM, or the callback's non-zero value. */
int tok_run(tok *t, const char *text, size_t len, int mark_stop, tok_fn fn, void *ud);

/* Normalises and stems one word the way tok_run would, into OUT (at least
 * TOK_MAX_BYTES + 1 bytes). Returns the length. For tests and snippets. */
int tok_word(tok *t, const char *word, size_t len, char *out);

/* The pre-tokenized form of a text: its document-mode tokens, computed once
 * (on the sync's worker thread) and read back by whoever indexes them (the
 * FTS5 tokenizer replaying them, the PostgreSQL tsvector). Per token a
 * header {u8 flags, u8 length, i32 start, i32 end} and the token's bytes. */
typedef struct tok_pre {
    const char *token; /* not NUL-terminated */
    int len, start, end;
    int colocated; /* shares the previous token's position */
} tok_pre;

/* Appends the pre-tokenized form of TEXT to OUT. 0 or MNEMO_NOMEM. */
int tok_pretokenize(tok *t, const char *text, size_t len, buf *out);

/* Reads the token at *P (before END) into OUT and moves *P past it.
 * Returns 0 at the end. */
int tok_pre_next(const char **p, const char *end, tok_pre *out);

#endif
