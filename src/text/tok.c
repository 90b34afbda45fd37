/*
 * tok.c - the tokenizer (see tok.h for what it emits).
 *
 * The scanner walks the text once. ASCII goes through a class table; other
 * code points through utf8proc's general category and the CJK range test.
 * Normalisation (utf8proc NFKC + case fold + accent strip) only runs for
 * tokens with non-ASCII bytes; stemming goes through a small direct-mapped
 * cache because word frequencies are Zipfian and libstemmer is the hot spot
 * of indexing.
 */
#include "text/tok.h"

#include <libstemmer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "mnemo.h"
#include "util/hash.h"
#include "util/utf8.h"

/* ----------------------------------------------------------------------
 * Character classes
 * -------------------------------------------------------------------- */

enum { C_SEP = 0, C_ALNUM, C_CONN, C_HASH, C_APOS, C_CJK };

#define MAX_WORD_BYTES 256 /* longer words are emitted whole only, truncated */
#define MAX_PARTS 32
#define MAX_CONN_RUN 3     /* "://" joins, "----" does not */
#define CJK_MAX_RUN 256    /* longer runs are processed in pieces */

/* The class of each ASCII byte: separators unless listed. */
#define R4(k, a) [a] = k, [a + 1] = k, [a + 2] = k, [a + 3] = k
#define R10(k, a) R4(k, a), R4(k, a + 4), [a + 8] = k, [a + 9] = k
#define R26(k, a) R10(k, a), R10(k, a + 10), R4(k, a + 20), [a + 24] = k, [a + 25] = k
static const unsigned char ascii_class[128] = {
    R10(C_ALNUM, '0'), R26(C_ALNUM, 'A'), R26(C_ALNUM, 'a'),
    ['_'] = C_CONN,    ['.'] = C_CONN,    ['/'] = C_CONN,    ['-'] = C_CONN,
    [':'] = C_CONN,    ['@'] = C_CONN,    ['\\'] = C_CONN, ['#'] = C_HASH,
    ['\''] = C_APOS,
};
#undef R4
#undef R10
#undef R26

static int classify(int32_t cp)
{
    if (cp < 128)
        return cp < 0 ? C_SEP : ascii_class[cp];
    if (cp == 0x2019)
        return C_APOS;
    if (utf8_is_cjk(cp))
        return C_CJK;
    utf8proc_category_t cat = utf8proc_category(cp);
    if (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_NO)
        return C_ALNUM;
    return C_SEP;
}

/* Decodes at S[i] and classifies; *len gets the byte length. */
static inline int class_at(const char *s, size_t n, size_t i, int *len, int32_t *cpo)
{
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80) {
        *len = 1;
        if (cpo)
            *cpo = c;
        return ascii_class[c];
    }
    int32_t cp;
    *len = utf8_decode(s + i, n - i, &cp);
    if (cpo)
        *cpo = cp;
    return classify(cp);
}

/* ----------------------------------------------------------------------
 * Stop words (English), sorted for bsearch
 * -------------------------------------------------------------------- */

static const char *const stop_list[] = {
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
    "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves"};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int is_stop(const char *w, int len)
{
    if (len <= 0 || len > 12)
        return 0;
    char key[16];
    memcpy(key, w, (size_t)len);
    key[len] = 0;
    const char *k = key;
    return bsearch(&k, stop_list, sizeof stop_list / sizeof *stop_list, sizeof *stop_list,
                   cmp_str) != NULL;
}

/* ----------------------------------------------------------------------
 * The tokenizer object and its stem cache
 * -------------------------------------------------------------------- */

/* 16k slots of 32 bytes: 512 KiB, small enough to stay mostly in cache;
 * words longer than STEM_KEY bytes go to the stemmer directly. */
#define STEM_SLOTS 16384
#define STEM_KEY 15

typedef struct stem_slot {
    unsigned char klen, vlen;
    char key[STEM_KEY];
    char val[STEM_KEY];
} stem_slot;

struct tok {
    struct sb_stemmer *stemmer; /* NULL: language none */
    int stop_words;
    stem_slot *cache;           /* allocated on first use */
    int32_t cps[1024];          /* scratch for utf8proc */
};

int tok_language_valid(const char *language)
{
    if (!language || !*language)
        return 0;
    if (strcmp(language, "none") == 0)
        return 1;
    for (const char **l = sb_stemmer_list(); *l; l++)
        if (strcmp(*l, language) == 0)
            return 1;
    return 0;
}

void tok_language_list(char *out, size_t n)
{
    size_t used = 0;
    out[0] = 0;
    for (const char **l = sb_stemmer_list(); *l && used + 1 < n; l++) {
        size_t len = strlen(*l);
        if (used + len + 3 >= n)
            break;
        if (used) {
            memcpy(out + used, ", ", 2);
            used += 2;
        }
        memcpy(out + used, *l, len);
        used += len;
        out[used] = 0;
    }
}

int tok_new(const char *language, int stop_words, tok **out)
{
    *out = NULL;
    if (!tok_language_valid(language))
        return MNEMO_INVALID;
    tok *t = calloc(1, sizeof *t);
    if (!t)
        return MNEMO_NOMEM;
    if (strcmp(language, "none") != 0) {
        t->stemmer = sb_stemmer_new(language, "UTF_8");
        if (!t->stemmer) {
            free(t);
            return MNEMO_NOMEM;
        }
    }
    t->stop_words = stop_words && strcmp(language, "english") == 0;
    *out = t;
    return MNEMO_OK;
}

void tok_free(tok *t)
{
    if (!t)
        return;
    if (t->stemmer)
        sb_stemmer_delete(t->stemmer);
    free(t->cache);
    free(t);
}

/* Cuts a token to TOK_MAX_BYTES at a code-point boundary. */
static int cap_len(const char *s, int len)
{
    if (len <= TOK_MAX_BYTES)
        return len;
    int n = TOK_MAX_BYTES;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

/* Normalises S into OUT (TOK_MAX_BYTES + 1): case fold, NFKC, and for
 * non-CJK text accent stripping; U+2019 becomes an apostrophe. */
static int normalize(tok *t, const char *s, size_t n, char *out, int strip_marks)
{
    int ascii = 1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) {
            ascii = 0;
            break;
        }
    if (ascii) {
        int len = (int)(n > TOK_MAX_BYTES ? TOK_MAX_BYTES : n);
        for (int i = 0; i < len; i++) {
            char c = s[i];
            out[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
        out[len] = 0;
        return len;
    }
    if (n > MAX_WORD_BYTES)
        n = utf8_prefix(s, MAX_WORD_BYTES, MAX_WORD_BYTES);
    utf8proc_option_t opts = UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD |
                             UTF8PROC_COMPOSE | UTF8PROC_IGNORE;
    if (strip_marks)
        opts |= UTF8PROC_STRIPMARK;
    utf8proc_ssize_t k = utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
                                            t->cps, 1023, opts);
    if (k < 0 || k > 1023) {
        /* Invalid input or absurd expansion: keep the raw bytes. */
        int len = cap_len(s, (int)n);
        memcpy(out, s, (size_t)len);
        out[len] = 0;
        return len;
    }
    for (utf8proc_ssize_t i = 0; i < k; i++)
        if (t->cps[i] == 0x2019)
            t->cps[i] = '\'';
    k = utf8proc_reencode(t->cps, k, opts);
    if (k < 0)
        k = 0;
    const char *bytes = (const char *)t->cps;
    int len = cap_len(bytes, (int)k);
    memcpy(out, bytes, (size_t)len);
    out[len] = 0;
    return len;
}

static int has_digit(const char *s, int len)
{
    for (int i = 0; i < len; i++)
        if (s[i] >= '0' && s[i] <= '9')
            return 1;
    return 0;
}

/* Stems W (normalised, NUL-terminated, length LEN) in place. */
static int stem(tok *t, char *w, int len)
{
    if (!t->stemmer || len < 3 || has_digit(w, len))
        return len;
    stem_slot *slot = NULL;
    if (len <= STEM_KEY) {
        if (!t->cache)
            t->cache = calloc(STEM_SLOTS, sizeof *t->cache);
        if (t->cache) {
            slot = &t->cache[hash64(w, (size_t)len) & (STEM_SLOTS - 1)];
            if (slot->klen == len && memcmp(slot->key, w, (size_t)len) == 0) {
                memcpy(w, slot->val, slot->vlen);
                w[slot->vlen] = 0;
                return slot->vlen;
            }
        }
    }
    const sb_symbol *r = sb_stemmer_stem(t->stemmer, (const sb_symbol *)w, len);
    if (!r)
        return len; /* out of memory inside libstemmer: keep the word */
    int rlen = sb_stemmer_length(t->stemmer);
    if (rlen <= 0 || rlen > len)
        return len;
    if (slot) {
        slot->klen = (unsigned char)len;
        memcpy(slot->key, w, (size_t)len);
        slot->vlen = (unsigned char)rlen;
        memcpy(slot->val, r, (size_t)rlen);
    }
    memcpy(w, r, (size_t)rlen);
    w[rlen] = 0;
    return rlen;
}

int tok_word(tok *t, const char *word, size_t len, char *out)
{
    int n = normalize(t, word, len, out, 1);
    return stem(t, out, n);
}

/* ----------------------------------------------------------------------
 * Emitters
 * -------------------------------------------------------------------- */

typedef struct run_ctx {
    tok *t;
    tok_fn fn;
    void *ud;
    int mark_stop;
} run_ctx;

static int emit_plain(run_ctx *c, const char *s, size_t n, int start, int end, int flags)
{
    char w[TOK_MAX_BYTES + 1];
    int len = normalize(c->t, s, n, w, 1);
    if (len <= 0)
        return 0;
    if (c->mark_stop && c->t->stop_words && is_stop(w, len))
        flags |= TOKF_STOP;
    len = stem(c->t, w, len);
    return c->fn(c->ud, flags, w, len, start, end);
}

typedef struct span {
    int start, end;
} span;

#define CAMEL_MIN_PART 3

/* Appends the run [start,end) to PARTS, split at ASCII CamelCase humps
 * ("HTTPServer" -> HTTP, Server; "getUserName" -> get, User, Name). A run
 * whose humps would leave a piece shorter than three characters ("iPhone",
 * "miRNAs", "clpC") stays whole: such pieces only add noise. */
static int camel_split(const char *s, int start, int end, span *parts, int np, int max)
{
    int ascii = 1, upper = 0;
    for (int i = start; i < end; i++) {
        unsigned char ch = (unsigned char)s[i];
        ascii &= ch < 0x80;
        upper |= ch >= 'A' && ch <= 'Z';
    }
    /* Every cut is before a capital: a word without one is one part. */
    if (!ascii || !upper) {
        if (np < max) {
            parts[np].start = start;
            parts[np].end = end;
            np++;
        }
        return np;
    }
    int cuts[MAX_PARTS] = {0}, ncut = 0;
    for (int i = start + 1; i < end && ncut < MAX_PARTS - 1; i++) {
        char a = s[i - 1], b = s[i];
        int lower_upper = (a >= 'a' && a <= 'z') && (b >= 'A' && b <= 'Z');
        int acronym_end = (a >= 'A' && a <= 'Z') && (b >= 'A' && b <= 'Z') && i + 1 < end &&
                          s[i + 1] >= 'a' && s[i + 1] <= 'z';
        if (lower_upper || acronym_end)
            cuts[ncut++] = i;
    }
    int from = start;
    for (int k = 0; k <= ncut; k++) {
        int to = k < ncut ? cuts[k] : end;
        if (to - from < CAMEL_MIN_PART)
            ncut = 0; /* a short piece: keep the run whole */
        from = to;
    }
    from = start;
    for (int k = 0; k <= ncut && np < max; k++) {
        int to = k < ncut ? cuts[k] : end;
        parts[np].start = from;
        parts[np].end = to;
        np++;
        from = to;
    }
    return np;
}

/* A word of alphanumeric runs joined by connectors, maybe with a leading #. */
static int emit_word(run_ctx *c, const char *s, int start, int end, const span *runs, int nruns,
                     int hashed)
{
    span parts[MAX_PARTS];
    int np = 0;
    if (end - start <= MAX_WORD_BYTES) {
        for (int i = 0; i < nruns && np < MAX_PARTS; i++)
            np = camel_split(s, runs[i].start, runs[i].end, parts, np, MAX_PARTS);
    }
    if (np <= 1 && !hashed)
        return emit_plain(c, s + start, (size_t)(end - start), start, end, 0);

    char whole[TOK_MAX_BYTES + 1];
    int wlen = normalize(c->t, s + start, (size_t)(end - start), whole, 1);
    int rc = c->fn(c->ud, TOKF_WHOLE, whole, wlen, start, end);
    if (rc)
        return rc;
    char prev[TOK_MAX_BYTES + 1];
    int plen = -1;
    for (int i = 0; i < np; i++) {
        char w[TOK_MAX_BYTES + 1];
        int len = normalize(c->t, s + parts[i].start, (size_t)(parts[i].end - parts[i].start), w,
                            1);
        len = stem(c->t, w, len);
        if (len <= 0 || (len == wlen && memcmp(w, whole, (size_t)len) == 0))
            continue;
        if (len == plen && memcmp(w, prev, (size_t)len) == 0)
            continue;
        rc = c->fn(c->ud, TOKF_PART | TOKF_COLOCATED, w, len, parts[i].start, parts[i].end);
        if (rc)
            return rc;
        memcpy(prev, w, (size_t)len + 1);
        plen = len;
    }
    return 0;
}

static int is_stable_cjk(int32_t cp)
{
    return (cp >= 0x3041 && cp <= 0x30ff) || (cp >= 0x4e00 && cp <= 0x9fff) ||
           (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0x3400 && cp <= 0x4dbf);
}

/* A run of CJK characters [start,end) holding NCP code points. */
static int emit_cjk(run_ctx *c, const char *s, int start, int end)
{
    int32_t cps[CJK_MAX_RUN];
    int offs[CJK_MAX_RUN + 1];
    int n = 0, stable = 1;
    for (int i = start; i < end && n < CJK_MAX_RUN;) {
        int32_t cp;
        int len = utf8_decode(s + i, (size_t)(end - i), &cp);
        offs[n] = i;
        cps[n++] = cp;
        if (!is_stable_cjk(cp))
            stable = 0;
        i += len;
    }
    offs[n] = end;
    if (!stable) {
        /* Halfwidth kana, compatibility ideographs, radicals: NFKC the run. */
        utf8proc_ssize_t k = utf8proc_decompose((const utf8proc_uint8_t *)s + start, end - start,
                                                c->t->cps, 1023,
                                                UTF8PROC_STABLE | UTF8PROC_COMPAT |
                                                    UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD);
        if (k > 0 && k <= 1023) {
            k = utf8proc_normalize_utf32(c->t->cps, k, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (k > 0) {
                int same = (k == n);
                n = (int)(k > CJK_MAX_RUN ? CJK_MAX_RUN : k);
                memcpy(cps, c->t->cps, (size_t)n * sizeof *cps);
                if (!same)
                    for (int i = 0; i <= n; i++)
                        offs[i] = i < n ? start : end;
            }
        }
    }
    char w[16];
    if (n == 1) {
        int len = utf8_put(cps[0], w);
        return c->fn(c->ud, TOKF_CJK | TOKF_PREFIXABLE, w, len, offs[0], offs[1]);
    }
    for (int i = 0; i + 1 < n; i++) {
        int len = utf8_put(cps[i], w);
        len += utf8_put(cps[i + 1], w + len);
        int tstart = offs[i], tend = offs[i + 2] > offs[i] ? offs[i + 2] : end;
        int rc = c->fn(c->ud, TOKF_CJK, w, len, tstart, tend);
        if (rc)
            return rc;
    }
    return 0;
}

/* ----------------------------------------------------------------------
 * The scanner
 * -------------------------------------------------------------------- */

int tok_run(tok *t, const char *text, size_t n, int mark_stop, tok_fn fn, void *ud)
{
    run_ctx c = {t, fn, ud, mark_stop};
    if (n > INT32_MAX)
        return MNEMO_INVALID;
    size_t i = 0;
    int prev_alnum = 0; /* previous code point was alphanumeric */
    while (i < n) {
        int len;
        int cls = class_at(text, n, i, &len, NULL);
        if (cls == C_CJK) {
            size_t start = i;
            int count = 0;
            while (i < n && count < CJK_MAX_RUN) {
                int l2;
                if (class_at(text, n, i, &l2, NULL) != C_CJK)
                    break;
                i += (size_t)l2;
                count++;
            }
            int rc = emit_cjk(&c, text, (int)start, (int)i);
            if (rc)
                return rc;
            prev_alnum = 0;
            continue;
        }
        int hashed = 0;
        if (cls == C_HASH && !prev_alnum && i + 1 < n) {
            int l2;
            if (class_at(text, n, i + 1, &l2, NULL) == C_ALNUM)
                hashed = 1;
        }
        if (cls != C_ALNUM && !hashed) {
            prev_alnum = 0;
            i += (size_t)len;
            continue;
        }
        /* A word: alphanumeric runs joined by short connector runs. */
        size_t start = i;
        if (hashed)
            i += 1;
        span runs[MAX_PARTS];
        int nruns = 0;
        for (;;) {
            size_t rstart = i;
            while (i < n) {
                int l2;
                int k = class_at(text, n, i, &l2, NULL);
                if (k == C_ALNUM) {
                    i += (size_t)l2;
                } else if (k == C_APOS && i > rstart && i + (size_t)l2 < n) {
                    int l3;
                    if (class_at(text, n, i + (size_t)l2, &l3, NULL) != C_ALNUM)
                        break;
                    i += (size_t)l2; /* don't, user's: the stemmer handles these */
                } else {
                    break;
                }
            }
            if (nruns < MAX_PARTS) {
                runs[nruns].start = (int)rstart;
                runs[nruns].end = (int)i;
                nruns++;
            }
            size_t j = i;
            int conns = 0;
            while (j < n && conns < MAX_CONN_RUN && (unsigned char)text[j] < 0x80 &&
                   ascii_class[(unsigned char)text[j]] == C_CONN) {
                j++;
                conns++;
            }
            int l2;
            if (conns > 0 && j < n && class_at(text, n, j, &l2, NULL) == C_ALNUM) {
                i = j;
                continue;
            }
            break;
        }
        int rc = emit_word(&c, text, (int)start, (int)i, runs, nruns, hashed);
        if (rc)
            return rc;
        prev_alnum = 1;
    }
    return 0;
}

/* ----------------------------------------------------------------------
 * The pre-tokenized form
 * -------------------------------------------------------------------- */

#define PRE_HEADER 10
#define PRE_COLOCATED 0x01

static int pre_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    buf *b = ud;
    /* Header and token written in place: one call per token of a build. */
    if (buf_reserve(b, PRE_HEADER + (size_t)len))
        return b->err;
    unsigned char *h = (unsigned char *)b->data + b->len;
    int32_t s32 = start, e32 = end;
    h[0] = (flags & TOKF_COLOCATED) ? PRE_COLOCATED : 0;
    h[1] = (unsigned char)len;
    memcpy(h + 2, &s32, 4);
    memcpy(h + 6, &e32, 4);
    memcpy(h + PRE_HEADER, token, (size_t)len);
    b->len += PRE_HEADER + (size_t)len;
    b->data[b->len] = 0;
    return MNEMO_OK;
}

int tok_pretokenize(tok *t, const char *text, size_t len, buf *out)
{
    int rc = tok_run(t, text, len, 0, pre_fn, out);
    return rc ? rc : buf_err(out);
}

int tok_pre_next(const char **p, const char *end, tok_pre *out)
{
    const unsigned char *q = (const unsigned char *)*p;
    if (!q || q + PRE_HEADER > (const unsigned char *)end)
        return 0;
    int32_t s32, e32;
    memcpy(&s32, q + 2, 4);
    memcpy(&e32, q + 6, 4);
    out->len = q[1];
    out->start = s32;
    out->end = e32;
    out->colocated = (q[0] & PRE_COLOCATED) != 0;
    out->token = (const char *)q + PRE_HEADER;
    *p = (const char *)q + PRE_HEADER + q[1];
    return 1;
}
