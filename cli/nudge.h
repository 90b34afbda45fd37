/*
 * nudge.h - proper-noun candidates in a prompt, for the recall nudge
 * (mnemo hook claude-code, docs/recall.md).
 *
 * A pattern set names the detectors to run, best first: built-in ones
 * (repo slugs, issue references, CamelCase, ALL-CAPS, capitalised words
 * inside a sentence, katakana runs, Han-script names, a name that starts a
 * sentence) and POSIX extended regular expressions.
 * nudge_candidates() returns what they find, ranked by pattern (earlier in
 * the set first), then by position in the prompt, without duplicates or
 * overlaps. Pure functions: no I/O, no global state.
 */
#ifndef MNEMO_NUDGE_H
#define MNEMO_NUDGE_H

#include <stddef.h>

/* The default pattern set, as nudge_patterns_parse() reads it. */
#define NUDGE_DEFAULT_PATTERNS "repo,issue,camel,caps,capital,katakana,han,start"

typedef struct nudge_patterns nudge_patterns;

/* Parses a pattern set: a comma-separated list of built-in names (repo,
 * issue, camel, caps, capital, katakana, han, start; "default" for all of them in the
 * default order) and expressions "re:EXPR" (POSIX ERE; a comma inside EXPR is
 * written "\,"; with a group, the first group is the term). Names are
 * case-insensitive, blanks around items are ignored, repeated items count
 * once. NULL or blank SPEC gives the default set. MNEMO_INVALID for an
 * unknown name, a bad expression, an empty set or more than 16 patterns, with
 * *err (if ERR is not NULL) a message to free with free(). *out is NULL on
 * error. */
int nudge_patterns_parse(const char *spec, nudge_patterns **out, char **err);

/* Frees a pattern set. Accepts NULL. */
void nudge_patterns_free(nudge_patterns *p);

/* Number of patterns in P, and the name of pattern I ("repo", "re:EXPR"). */
size_t nudge_patterns_count(const nudge_patterns *p);
const char *nudge_patterns_name(const nudge_patterns *p, size_t i);

typedef struct nudge_candidate {
    char *term;          /* the text as written in the prompt (owned by the array) */
    const char *pattern; /* name of the pattern that found it, borrowed from the set */
    size_t offset;       /* byte offset of the term in the prompt */
    int weak;            /* a guess (start, han): worth saying only when memory has it */
} nudge_candidate;

/* Finds up to MAX candidates in PROMPT (NUL-terminated UTF-8; invalid bytes
 * never match a built-in pattern). Ranked by the pattern's place in P, then
 * by position; a candidate equal (ASCII case-insensitive) to a better one or
 * overlapping it is dropped. Terms are at most 200 bytes (cut at a code-point
 * boundary). *out (free with nudge_candidates_free) and *n receive the
 * result; *out is NULL when *n is 0. MNEMO_NOMEM on allocation failure. */
int nudge_candidates(const char *prompt, const nudge_patterns *p, size_t max,
                     nudge_candidate **out, size_t *n);

/* Frees an array of N candidates. Accepts NULL. */
void nudge_candidates_free(nudge_candidate *c, size_t n);

/* TEXT on one line for a short quote: runs of white space become one space,
 * the ends are trimmed, and text beyond MAXCP code points is cut at a
 * code-point boundary and ends in "…". Returns a string to free with free(),
 * or NULL on out-of-memory. */
char *nudge_shorten(const char *text, size_t maxcp);

/* A quote of TEXT that shows byte offset AT (a match): from the start of
 * AT's line, or, when AT lies more than MAXCP/4 code points into it, from
 * a word about that far before AT, marked with a leading "…"; then as
 * nudge_shorten, MAXCP code points in all. Caller frees; NULL on OOM. */
char *nudge_quote(const char *text, size_t at, size_t maxcp);

#endif
