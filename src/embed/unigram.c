/*
 * unigram.c - the SentencePiece Unigram tokenizer (see unigram.h).
 *
 * The tokenizer's settings live in one header struct, which is also the
 * head of its blob; the vocabulary (vocab.h), the piece scores and the
 * precompiled character map follow it.
 */
#include "embed/unigram.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "embed/vocab.h"
#include "mnemo.h"
#include "util/utf8.h"

#define MAX_STEPS 8
#define STR_MAX 32
#define MAX_SPECIAL 4
#define UNK_PENALTY 10.0 /* an unknown character scores this below the lowest piece */
#define MAX_CHARSMAP (64u << 20)

enum {
    N_PRECOMPILED = 1,
    N_NFC,
    N_NFD,
    N_NFKC,
    N_NFKD,
    N_LOWER,
    N_STRIP,    /* A: strip left, B: strip right */
    N_REPLACE,  /* every FROM by TO */
    N_COLLAPSE, /* the regex " {2,}" by TO */
};

enum { PREPEND_NEVER, PREPEND_ALWAYS, PREPEND_FIRST };

#define F_BYTE_FALLBACK 1u
#define F_WS_SPLIT 2u  /* WhitespaceSplit before the Metaspace */
#define F_METASPACE 4u
#define F_MS_SPLIT 8u  /* split before each replacement character */

typedef struct step {
    uint32_t kind, a, b;
    char from[STR_MAX], to[STR_MAX];
} step;

#define MAX_ADDED 8  /* added tokens matched in the text */
#define ADDED_MAX 24 /* bytes of one, NUL included */
#define A_LSTRIP 1u  /* takes the whitespace before it */
#define A_RSTRIP 2u  /* ... and after it */

typedef struct added {
    int32_t id;
    uint32_t flags, len;
    char s[ADDED_MAX];
} added;

typedef struct ug_hdr {
    char magic[8];
    uint32_t n, nslots, pool_bytes, cmap_bytes;
    int32_t unk;
    uint32_t max_bytes; /* the longest piece */
    double min_score;
    uint32_t flags, prepend, nsteps, npre, nsuf, reserved;
    int32_t pre[MAX_SPECIAL], suf[MAX_SPECIAL];
    char repl[8]; /* the Metaspace replacement, NUL-terminated */
    step steps[MAX_STEPS];
    uint32_t nadded, reserved2;
    added add[MAX_ADDED]; /* longest first */
} ug_hdr;

#define UG_MAGIC "MNEMOUG2"

struct unigram {
    ug_hdr h;
    vocab v;
    const double *score;
    const unsigned char *cmap; /* the precompiled map: u32 trie bytes, trie, strings */
    size_t trie_units;
    double *own_score;
    unsigned char *own_cmap;
};

void ug_free(unigram *u)
{
    if (!u)
        return;
    vocab_cleanup(&u->v);
    free(u->own_score);
    free(u->own_cmap);
    free(u);
}

size_t ug_vocab_size(const unigram *u) { return u->v.n; }

/* ----------------------------------------------------------------------
 * The precompiled character map: a darts-clone double array whose keys
 * are byte strings and whose values are offsets of NUL-terminated
 * replacements in the string pool after it.
 * -------------------------------------------------------------------- */

static uint32_t unit_at(const unigram *u, size_t i)
{
    uint32_t x;
    memcpy(&x, u->cmap + 4 + 4 * i, 4);
    return x;
}

static size_t unit_offset(uint32_t x) { return (size_t)(x >> 10) << ((x & (1u << 9)) >> 6); }

/* The replacement of the shortest key that is a prefix of S (N bytes):
 * tokenizers takes the first match, not the longest, and replaces the
 * whole of S with it. NULL when no key is a prefix. */
static const char *transform(const unigram *u, const char *s, size_t n, size_t *rlen)
{
    if (!u->trie_units)
        return NULL;
    size_t pos = unit_offset(unit_at(u, 0));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0)
            break;
        pos ^= c;
        if (pos >= u->trie_units)
            return NULL;
        uint32_t x = unit_at(u, pos);
        if ((x & (0x80000000u | 0xffu)) != c)
            return NULL;
        pos ^= unit_offset(x);
        if ((x >> 8) & 1) {
            if (pos >= u->trie_units)
                return NULL;
            size_t v = unit_at(u, pos) & 0x7fffffffu;
            size_t pool = u->h.cmap_bytes - 4 - 4 * u->trie_units;
            const char *str = (const char *)u->cmap + 4 + 4 * u->trie_units;
            const char *end = v < pool ? memchr(str + v, 0, pool - v) : NULL;
            if (!end)
                return NULL;
            *rlen = (size_t)(end - (str + v));
            return str + v;
        }
    }
    return NULL;
}

static int cmap_check(unigram *u)
{
    uint32_t trie;
    if (u->h.cmap_bytes == 0) {
        u->trie_units = 0;
        return MNEMO_OK;
    }
    if (u->h.cmap_bytes < 4)
        return MNEMO_CORRUPT;
    memcpy(&trie, u->cmap, 4);
    if (trie % 4 || trie > u->h.cmap_bytes - 4)
        return MNEMO_CORRUPT;
    u->trie_units = trie / 4;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Loading
 * -------------------------------------------------------------------- */

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes base64 S into a new array (*N bytes); NULL when S is not
 * base64. */
static unsigned char *b64decode(const char *s, size_t *n)
{
    size_t len = strlen(s);
    unsigned char *out = malloc(len / 4 * 3 + 3);
    if (!out)
        return NULL;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '=')
            break;
        int v = b64val((unsigned char)s[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        if ((bits += 6) >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    *n = o;
    return out;
}

static int set_str(char *dst, const char *src, const char *what, buf *err)
{
    if (!src || strlen(src) >= STR_MAX) {
        buf_printf(err, "%s: missing or longer than %d bytes", what, STR_MAX - 1);
        return MNEMO_INVALID;
    }
    memcpy(dst, src, strlen(src) + 1);
    return MNEMO_OK;
}

static int add_normalizer(unigram *u, json_t *n, buf *err)
{
    if (json_is_null(n) || !n)
        return MNEMO_OK;
    const char *type = json_string_value(json_object_get(n, "type"));
    if (type && !strcmp(type, "Sequence")) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(n, "normalizers"), i, e)
        {
            int rc = add_normalizer(u, e, err);
            if (rc)
                return rc;
        }
        return MNEMO_OK;
    }
    if (u->h.nsteps == MAX_STEPS) {
        buf_printf(err, "more than %d normalizers", MAX_STEPS);
        return MNEMO_INVALID;
    }
    step *s = &u->h.steps[u->h.nsteps];
    memset(s, 0, sizeof *s);
    static const struct {
        const char *name;
        uint32_t kind;
    } plain[] = {{"NFC", N_NFC}, {"NFD", N_NFD}, {"NFKC", N_NFKC}, {"NFKD", N_NFKD},
                 {"Lowercase", N_LOWER}};
    for (size_t i = 0; type && i < sizeof plain / sizeof plain[0]; i++)
        if (!strcmp(type, plain[i].name))
            s->kind = plain[i].kind;
    if (s->kind) {
        /* a plain one */
    } else if (type && !strcmp(type, "Precompiled")) {
        const char *b64 = json_string_value(json_object_get(n, "precompiled_charsmap"));
        if (!b64 || !*b64)
            return MNEMO_OK; /* an empty map changes nothing */
        if (u->own_cmap) {
            buf_printf(err, "normalizer: two Precompiled maps");
            return MNEMO_INVALID;
        }
        size_t len = 0;
        if (!(u->own_cmap = b64decode(b64, &len)) || len > MAX_CHARSMAP) {
            buf_printf(err, "normalizer: precompiled_charsmap is not base64 of a map");
            return MNEMO_INVALID;
        }
        u->cmap = u->own_cmap;
        u->h.cmap_bytes = (uint32_t)len;
        if (cmap_check(u)) {
            buf_printf(err, "normalizer: precompiled_charsmap does not hold together");
            return MNEMO_INVALID;
        }
        s->kind = N_PRECOMPILED;
    } else if (type && !strcmp(type, "Strip")) {
        s->kind = N_STRIP;
        s->a = json_is_true(json_object_get(n, "strip_left"));
        s->b = json_is_true(json_object_get(n, "strip_right"));
    } else if (type && !strcmp(type, "Replace")) {
        json_t *pat = json_object_get(n, "pattern");
        const char *str = json_string_value(json_object_get(pat, "String"));
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        int rc = set_str(s->to, json_string_value(json_object_get(n, "content")),
                         "Replace content", err);
        if (rc)
            return rc;
        if (str && *str) {
            s->kind = N_REPLACE;
            if ((rc = set_str(s->from, str, "Replace pattern", err)))
                return rc;
        } else if (re && !strcmp(re, " {2,}")) {
            s->kind = N_COLLAPSE;
        } else {
            buf_printf(err, "normalizer Replace with pattern %s is not supported",
                       re ? re : "(empty)");
            return MNEMO_INVALID;
        }
    } else {
        buf_printf(err, "normalizer %s is not supported", type ? type : "(no type)");
        return MNEMO_INVALID;
    }
    u->h.nsteps++;
    return MNEMO_OK;
}

static int add_pretokenizer(unigram *u, json_t *p, buf *err)
{
    if (json_is_null(p) || !p)
        return MNEMO_OK;
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "Sequence")) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(p, "pretokenizers"), i, e)
        {
            int rc = add_pretokenizer(u, e, err);
            if (rc)
                return rc;
        }
        return MNEMO_OK;
    }
    if (type && !strcmp(type, "WhitespaceSplit") && !(u->h.flags & F_METASPACE)) {
        u->h.flags |= F_WS_SPLIT;
        return MNEMO_OK;
    }
    if (type && !strcmp(type, "Metaspace") && !(u->h.flags & F_METASPACE)) {
        const char *r = json_string_value(json_object_get(p, "replacement"));
        const char *scheme = json_string_value(json_object_get(p, "prepend_scheme"));
        json_t *split = json_object_get(p, "split");
        if (!r)
            r = "\xe2\x96\x81";
        if (utf8_count(r, strlen(r)) != 1 || strlen(r) >= sizeof u->h.repl) {
            buf_printf(err, "Metaspace replacement must be one character");
            return MNEMO_INVALID;
        }
        memcpy(u->h.repl, r, strlen(r) + 1);
        u->h.flags |= F_METASPACE | (json_is_false(split) ? 0 : F_MS_SPLIT);
        if (scheme)
            u->h.prepend = !strcmp(scheme, "always") ? PREPEND_ALWAYS
                           : !strcmp(scheme, "first") ? PREPEND_FIRST
                                                      : PREPEND_NEVER;
        else
            u->h.prepend = json_is_false(json_object_get(p, "add_prefix_space")) ? PREPEND_NEVER
                                                                                 : PREPEND_ALWAYS;
        return MNEMO_OK;
    }
    buf_printf(err, "pre-tokenizer %s is not supported", type ? type : "(no type)");
    return MNEMO_INVALID;
}

/* The special tokens before and after the text. */
static int add_template(unigram *u, json_t *pp, buf *err)
{
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!pp || json_is_null(pp))
        return MNEMO_OK;
    if (type && (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing"))) {
        json_t *c = json_array_get(json_object_get(pp, "cls"), 1);
        json_t *s = json_array_get(json_object_get(pp, "sep"), 1);
        if (!json_is_integer(c) || !json_is_integer(s)) {
            buf_printf(err, "post_processor %s without cls and sep ids", type);
            return MNEMO_INVALID;
        }
        u->h.pre[u->h.npre++] = (int32_t)json_integer_value(c);
        u->h.suf[u->h.nsuf++] = (int32_t)json_integer_value(s);
        return MNEMO_OK;
    }
    if (!type || strcmp(type, "TemplateProcessing")) {
        buf_printf(err, "post_processor %s is not supported", type ? type : "(no type)");
        return MNEMO_INVALID;
    }
    json_t *sp = json_object_get(pp, "special_tokens"), *e;
    int after = 0;
    size_t i, k;
    json_array_foreach(json_object_get(pp, "single"), i, e)
    {
        if (json_object_get(e, "Sequence")) {
            after = 1;
            continue;
        }
        const char *id = json_string_value(json_object_get(json_object_get(e, "SpecialToken"), "id"));
        json_t *ids = json_object_get(json_object_get(sp, id ? id : ""), "ids"), *x;
        json_array_foreach(ids, k, x)
        {
            uint32_t *cnt = after ? &u->h.nsuf : &u->h.npre;
            if (!json_is_integer(x) || *cnt == MAX_SPECIAL) {
                buf_printf(err, "post_processor: special token %s unusable", id ? id : "?");
                return MNEMO_INVALID;
            }
            (after ? u->h.suf : u->h.pre)[(*cnt)++] = (int32_t)json_integer_value(x);
        }
    }
    return MNEMO_OK;
}

/* The added tokens the tokenizers library matches on the raw text
 * (normalized: false): "<s>", "<mask>" ... written in a text are their
 * ids. Those that do not fit (more than MAX_ADDED, longer than
 * ADDED_MAX - 1 bytes, single_word) stay text. */
static void add_added(unigram *u, json_t *list)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *c = json_string_value(json_object_get(e, "content"));
        json_t *id = json_object_get(e, "id");
        size_t n = c ? strlen(c) : 0;
        if (!n || n >= ADDED_MAX || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= (json_int_t)u->h.n ||
            !json_is_false(json_object_get(e, "normalized")) ||
            json_is_true(json_object_get(e, "single_word")) || u->h.nadded == MAX_ADDED)
            continue;
        added a;
        memset(&a, 0, sizeof a);
        a.id = (int32_t)json_integer_value(id);
        a.len = (uint32_t)n;
        memcpy(a.s, c, n);
        a.flags = (json_is_true(json_object_get(e, "lstrip")) ? A_LSTRIP : 0) |
                  (json_is_true(json_object_get(e, "rstrip")) ? A_RSTRIP : 0);
        /* Longest first: the longest match at a place wins. */
        uint32_t k = u->h.nadded++;
        while (k > 0 && u->h.add[k - 1].len < a.len) {
            u->h.add[k] = u->h.add[k - 1];
            k--;
        }
        u->h.add[k] = a;
    }
}

static int load_model(unigram *u, json_t *model, buf *err)
{
    json_t *jv = json_object_get(model, "vocab"), *e;
    size_t n = json_array_size(jv), i;
    if (n == 0 || n > (1u << 24)) {
        buf_printf(err, "empty or oversized vocabulary");
        return MNEMO_INVALID;
    }
    const char **toks = calloc(n, sizeof *toks);
    u->own_score = malloc(n * sizeof *u->own_score);
    if (!toks || !u->own_score) {
        free(toks);
        return MNEMO_NOMEM;
    }
    u->score = u->own_score;
    u->h.min_score = 0;
    json_array_foreach(jv, i, e)
    {
        const char *piece = json_string_value(json_array_get(e, 0));
        json_t *sc = json_array_get(e, 1);
        if (!piece || !json_is_number(sc)) {
            free(toks);
            buf_printf(err, "vocabulary entry %zu is not [piece, score]", i);
            return MNEMO_INVALID;
        }
        toks[i] = *piece ? piece : NULL;
        u->own_score[i] = json_number_value(sc);
        if (i == 0 || u->own_score[i] < u->h.min_score)
            u->h.min_score = u->own_score[i];
        size_t l = strlen(piece);
        if (l > u->h.max_bytes)
            u->h.max_bytes = (uint32_t)l;
    }
    int rc = vocab_build(&u->v, toks, n);
    free(toks);
    if (rc)
        return rc;
    json_t *unk = json_object_get(model, "unk_id");
    if (!json_is_integer(unk) || json_integer_value(unk) < 0 ||
        (size_t)json_integer_value(unk) >= n) {
        buf_printf(err, "Unigram model without a valid unk_id");
        return MNEMO_INVALID;
    }
    u->h.unk = (int32_t)json_integer_value(unk);
    if (json_is_true(json_object_get(model, "byte_fallback")))
        u->h.flags |= F_BYTE_FALLBACK;
    u->h.n = (uint32_t)u->v.n;
    u->h.nslots = (uint32_t)u->v.nslots;
    u->h.pool_bytes = (uint32_t)u->v.pool_bytes;
    return MNEMO_OK;
}

int ug_load(const char *path, unigram **out, buf *err)
{
    *out = NULL;
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return MNEMO_NOTFOUND;
    json_t *model = json_object_get(j, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "Unigram")) {
        json_decref(j);
        return MNEMO_NOTFOUND;
    }
    unigram *u = calloc(1, sizeof *u);
    if (!u) {
        json_decref(j);
        return MNEMO_NOMEM;
    }
    memcpy(u->h.magic, UG_MAGIC, 8);
    buf why;
    buf_init(&why, 0);
    int rc = load_model(u, model, &why);
    if (!rc)
        rc = add_normalizer(u, json_object_get(j, "normalizer"), &why);
    if (!rc)
        rc = add_pretokenizer(u, json_object_get(j, "pre_tokenizer"), &why);
    if (!rc)
        rc = add_template(u, json_object_get(j, "post_processor"), &why);
    if (!rc)
        add_added(u, json_object_get(j, "added_tokens"));
    for (uint32_t k = 0; !rc && k < u->h.npre + u->h.nsuf; k++) {
        int32_t id = k < u->h.npre ? u->h.pre[k] : u->h.suf[k - u->h.npre];
        if (id < 0 || (uint32_t)id >= u->h.n) {
            buf_printf(&why, "special token id %d outside the vocabulary", (int)id);
            rc = MNEMO_INVALID;
        }
    }
    json_decref(j);
    if (rc) {
        buf_printf(err, "%s: %s", path, why.data ? why.data : "cannot load");
        buf_cleanup(&why);
        ug_free(u);
        return rc;
    }
    buf_cleanup(&why);
    *out = u;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * As a blob: the header, the vocabulary's body, the scores, the map.
 * -------------------------------------------------------------------- */

static size_t up8(size_t x) { return (x + 7) & ~(size_t)7; }

int ug_to_blob(const unigram *u, buf *out)
{
    static const char zero[8] = {0};
    size_t base = out->len;
    buf_append(out, &u->h, sizeof u->h);
    int rc = vocab_to_blob(&u->v, out);
    if (rc)
        return rc;
    buf_append(out, zero, up8(out->len - base) - (out->len - base));
    buf_append(out, u->score, u->h.n * sizeof *u->score);
    if (u->h.cmap_bytes)
        buf_append(out, u->cmap, u->h.cmap_bytes);
    return buf_err(out) ? MNEMO_NOMEM : MNEMO_OK;
}

int ug_from_blob(const void *p, size_t n, unigram **out)
{
    *out = NULL;
    unigram *u = calloc(1, sizeof *u);
    if (!u)
        return MNEMO_NOMEM;
    if (n < sizeof u->h)
        goto bad;
    memcpy(&u->h, p, sizeof u->h);
    const ug_hdr *h = &u->h;
    size_t body = vocab_blob_bytes(h->n, h->nslots, h->pool_bytes);
    size_t at = up8(sizeof *h + body);
    if (memcmp(h->magic, UG_MAGIC, 8) || h->n == 0 || body > n - sizeof *h ||
        at > n || (size_t)h->n > (n - at) / sizeof(double) ||
        h->cmap_bytes > n - at - (size_t)h->n * sizeof(double) || h->nsteps > MAX_STEPS ||
        h->npre > MAX_SPECIAL || h->nsuf > MAX_SPECIAL || h->unk < 0 || (uint32_t)h->unk >= h->n ||
        h->repl[sizeof h->repl - 1] != 0)
        goto bad;
    for (uint32_t k = 0; k < h->npre + h->nsuf; k++) {
        int32_t id = k < h->npre ? h->pre[k] : h->suf[k - h->npre];
        if (id < 0 || (uint32_t)id >= h->n)
            goto bad;
    }
    for (uint32_t k = 0; k < h->nsteps; k++)
        if (h->steps[k].from[STR_MAX - 1] || h->steps[k].to[STR_MAX - 1])
            goto bad;
    if (h->nadded > MAX_ADDED)
        goto bad;
    for (uint32_t k = 0; k < h->nadded; k++)
        if (h->add[k].id < 0 || (uint32_t)h->add[k].id >= h->n || !h->add[k].len ||
            h->add[k].len >= ADDED_MAX || h->add[k].s[h->add[k].len] ||
            (k && h->add[k].len > h->add[k - 1].len))
            goto bad;
    if (vocab_from_blob(&u->v, (const char *)p + sizeof *h, body, h->n, h->nslots,
                        h->pool_bytes))
        goto bad;
    u->score = (const double *)(const void *)((const char *)p + at);
    u->cmap = (const unsigned char *)p + at + (size_t)h->n * sizeof(double);
    if (cmap_check(u))
        goto bad;
    *out = u;
    return MNEMO_OK;
bad:
    u->v.mapped = 1; /* nothing of it is owned */
    ug_free(u);
    return MNEMO_CORRUPT;
}

/* ----------------------------------------------------------------------
 * Normalizing
 * -------------------------------------------------------------------- */

static void precompiled(const unigram *u, const char *s, size_t n, buf *out)
{
    utf8proc_int32_t state = 0, prev = -1;
    size_t g = 0; /* the grapheme's start */
    for (size_t i = 0; i <= n;) {
        utf8proc_int32_t c = -1;
        utf8proc_ssize_t l = 0;
        if (i < n)
            l = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
        if (i == n || (prev >= 0 && utf8proc_grapheme_break_stateful(prev, c, &state))) {
            size_t rl, glen = i - g;
            const char *r = glen < 6 ? transform(u, s + g, glen, &rl) : NULL;
            if (r) {
                buf_append(out, r, rl);
            } else {
                for (size_t k = g; k < i;) {
                    int32_t cp;
                    size_t cl = (size_t)utf8_decode(s + k, i - k, &cp);
                    if ((r = transform(u, s + k, cl, &rl)))
                        buf_append(out, r, rl);
                    else
                        buf_append(out, s + k, cl);
                    k += cl;
                }
            }
            g = i;
            if (i == n)
                break;
        }
        prev = c;
        i += (size_t)l;
    }
}

static void replace(const char *s, size_t n, const char *from, const char *to, buf *out)
{
    size_t fl = strlen(from), tl = strlen(to), i = 0;
    while (i < n) {
        if (i + fl <= n && !memcmp(s + i, from, fl)) {
            buf_append(out, to, tl);
            i += fl;
        } else {
            buf_append(out, s + i, 1);
            i++;
        }
    }
}

static void collapse(const char *s, size_t n, const char *to, buf *out)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] == ' ')
            j++;
        if (j - i >= 2) {
            buf_puts(out, to);
            i = j;
        } else {
            buf_append(out, s + i, 1);
            i++;
        }
    }
}

static void strip(const char *s, size_t n, int left, int right, buf *out)
{
    size_t a = 0, b = n;
    int32_t c;
    while (left && a < b) {
        int l = utf8_decode(s + a, b - a, &c);
        if (!utf8_is_space(c))
            break;
        a += (size_t)l;
    }
    while (right && b > a) {
        size_t k = b - 1;
        while (k > a && ((unsigned char)s[k] & 0xc0) == 0x80)
            k--;
        utf8_decode(s + k, b - k, &c);
        if (!utf8_is_space(c))
            break;
        b = k;
    }
    buf_append(out, s + a, b - a);
}

static void lower(const char *s, size_t n, buf *out)
{
    for (size_t i = 0; i < n;) {
        int32_t c;
        int l = utf8_decode(s + i, n - i, &c);
        char e[4];
        buf_append(out, e, (size_t)utf8_put(utf8proc_tolower(c), e));
        i += (size_t)l;
    }
}

static void unicode_form(const char *s, size_t n, uint32_t kind, buf *out)
{
    int opt = UTF8PROC_STABLE | (kind == N_NFC || kind == N_NFKC ? UTF8PROC_COMPOSE
                                                                 : UTF8PROC_DECOMPOSE) |
              (kind == N_NFKC || kind == N_NFKD ? UTF8PROC_COMPAT : 0);
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t l = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)opt);
    if (l < 0)
        buf_append(out, s, n);
    else
        buf_append(out, dst, (size_t)l);
    free(dst);
}

/* TEXT, valid UTF-8, through the normalizers into A (B: scratch). */
static void normalize(const unigram *u, buf *a, buf *b)
{
    for (uint32_t k = 0; k < u->h.nsteps; k++) {
        const step *s = &u->h.steps[k];
        b->len = 0;
        switch (s->kind) {
        case N_PRECOMPILED: precompiled(u, a->data, a->len, b); break;
        case N_NFC:
        case N_NFD:
        case N_NFKC:
        case N_NFKD: unicode_form(a->data, a->len, s->kind, b); break;
        case N_LOWER: lower(a->data, a->len, b); break;
        case N_STRIP: strip(a->data, a->len, (int)s->a, (int)s->b, b); break;
        case N_REPLACE: replace(a->data, a->len, s->from, s->to, b); break;
        case N_COLLAPSE: collapse(a->data, a->len, s->to, b); break;
        default: buf_append(b, a->data, a->len); break;
        }
        buf t = *a;
        *a = *b;
        *b = t;
    }
}

/* ----------------------------------------------------------------------
 * Segmenting
 * -------------------------------------------------------------------- */

typedef struct node {
    double score;
    int32_t start, id; /* START -1: not reached */
} node;

typedef struct enc {
    const unigram *u;
    int32_t *ids;
    int n, max;
    node *best;
    size_t cap;
} enc;

static void emit(enc *e, int32_t id)
{
    if (e->n < e->max)
        e->ids[e->n++] = id;
}

/* An unknown piece S (N bytes): its bytes as <0xAB> pieces when the model
 * falls back to bytes and has them all, else the unknown id. */
static void emit_unknown(enc *e, const char *s, size_t n)
{
    const unigram *u = e->u;
    int all = (u->h.flags & F_BYTE_FALLBACK) != 0;
    for (int pass = 0; pass < 2 && all; pass++)
        for (size_t k = 0; k < n && all; k++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", (unsigned char)s[k]);
            int32_t id = vocab_find(&u->v, name, 6);
            if (id < 0)
                all = 0;
            else if (pass == 1)
                emit(e, id);
        }
    if (!all)
        emit(e, u->h.unk);
}

/* The best segmentation of the word S (N bytes), emitted. */
static int segment(enc *e, const char *s, size_t n)
{
    const unigram *u = e->u;
    if (n + 1 > e->cap) {
        size_t cap = (n + 1) * 2;
        node *b = realloc(e->best, cap * sizeof *b);
        if (!b)
            return MNEMO_NOMEM;
        e->best = b;
        e->cap = cap;
    }
    node *best = e->best;
    for (size_t i = 0; i <= n; i++)
        best[i].start = -1;
    best[0].start = 0;
    best[0].score = 0;
    double unk_score = u->h.min_score - UNK_PENALTY;
    for (size_t at = 0; at < n;) {
        int32_t cp;
        size_t cl = (size_t)utf8_decode(s + at, n - at, &cp), lim = n - at;
        double here = best[at].score;
        int single = 0;
        if (lim > u->h.max_bytes)
            lim = u->h.max_bytes;
        for (size_t l = cl; l <= lim; l++) {
            if (at + l < n && ((unsigned char)s[at + l] & 0xc0) == 0x80)
                continue; /* inside a character */
            int32_t id = vocab_find(&u->v, s + at, l);
            if (id < 0)
                continue;
            double sc = here + u->score[id];
            node *t = &best[at + l];
            if (t->start < 0 || sc > t->score) {
                t->score = sc;
                t->start = (int32_t)at;
                t->id = id;
            }
            if (l == cl)
                single = 1;
        }
        if (!single) {
            node *t = &best[at + cl];
            double sc = here + unk_score;
            if (t->start < 0 || sc > t->score) {
                t->score = sc;
                t->start = (int32_t)at;
                t->id = u->h.unk;
            }
        }
        at += cl;
    }
    /* Back from the end: the pieces in reverse, runs of unknowns fused.
     * They are written at the end of IDS's free room, then moved. */
    size_t count = 0;
    for (size_t end = n; end > 0; end = (size_t)best[end].start)
        count++;
    int32_t *tmp = malloc((count ? count : 1) * 2 * sizeof *tmp);
    if (!tmp)
        return MNEMO_NOMEM;
    size_t k = 0;
    for (size_t end = n; end > 0;) {
        size_t st = (size_t)best[end].start;
        int32_t id = best[end].id;
        if (id == u->h.unk) {
            while (st > 0 && best[st].id == u->h.unk)
                st = (size_t)best[st].start;
            tmp[2 * k] = -1 - (int32_t)st; /* an unknown run st..end */
            tmp[2 * k + 1] = (int32_t)end;
        } else {
            tmp[2 * k] = id;
            tmp[2 * k + 1] = 0;
        }
        k++;
        end = st;
    }
    for (size_t i = k; i-- > 0 && e->n < e->max;) {
        if (tmp[2 * i] >= 0)
            emit(e, tmp[2 * i]);
        else
            emit_unknown(e, s + (-1 - tmp[2 * i]),
                         (size_t)tmp[2 * i + 1] - (size_t)(-1 - tmp[2 * i]));
    }
    free(tmp);
    return MNEMO_OK;
}

/* One pre-token (a whitespace-split word, or the whole text): the
 * Metaspace, then each piece segmented. */
static int word(enc *e, const char *s, size_t n, int first, buf *scratch)
{
    const unigram *u = e->u;
    if (!(u->h.flags & F_METASPACE))
        return n ? segment(e, s, n) : MNEMO_OK;
    const char *r = u->h.repl;
    size_t rl = strlen(r);
    scratch->len = 0;
    if (!n)
        return MNEMO_OK;
    /* Spaces become the replacement, which also goes in front when the
     * scheme says so and the text does not start with one already. */
    if ((u->h.prepend == PREPEND_ALWAYS || (u->h.prepend == PREPEND_FIRST && first)) &&
        s[0] != ' ' && !(n >= rl && !memcmp(s, r, rl)))
        buf_append(scratch, r, rl);
    replace(s, n, " ", r, scratch);
    if (buf_err(scratch))
        return MNEMO_NOMEM;
    const char *t = scratch->data;
    size_t tn = scratch->len;
    if (!(u->h.flags & F_MS_SPLIT))
        return tn ? segment(e, t, tn) : MNEMO_OK;
    for (size_t a = 0; a < tn && e->n < e->max;) {
        size_t b = a + (tn - a >= rl && !memcmp(t + a, r, rl) ? rl : 1);
        while (b < tn && !(tn - b >= rl && !memcmp(t + b, r, rl)))
            b++;
        int rc = segment(e, t + a, b - a);
        if (rc)
            return rc;
        a = b;
    }
    return MNEMO_OK;
}

/* A stretch of text between added tokens: normalized, split, segmented.
 * FIRST: it starts the text (the Metaspace's "first" scheme prefixes only
 * that one). */
static void stretch(enc *e, const char *s, size_t n, int first, buf *a, buf *b, buf *w)
{
    const unigram *u = e->u;
    a->len = 0;
    buf_append(a, s, n);
    if (!a->len || buf_err(a))
        return;
    normalize(u, a, b);
    if (u->h.flags & F_WS_SPLIT) {
        for (size_t i = 0; i < a->len && e->n < e->max;) {
            int32_t cp;
            int l = utf8_decode(a->data + i, a->len - i, &cp);
            if (utf8_is_space(cp)) {
                i += (size_t)l;
                continue;
            }
            size_t j = i;
            while (j < a->len) {
                l = utf8_decode(a->data + j, a->len - j, &cp);
                if (utf8_is_space(cp))
                    break;
                j += (size_t)l;
            }
            if (word(e, a->data + i, j - i, first, w))
                break;
            first = 0;
            i = j;
        }
    } else if (a->len) {
        word(e, a->data, a->len, first, w);
    }
}

/* The added token written at S (N bytes left), or NULL. */
static const added *added_at(const unigram *u, const char *s, size_t n)
{
    for (uint32_t k = 0; k < u->h.nadded; k++)
        if (u->h.add[k].len <= n && !memcmp(s, u->h.add[k].s, u->h.add[k].len))
            return &u->h.add[k];
    return NULL;
}

/* The whitespace code point ending at S + AT (after FROM), its length or 0. */
static size_t space_before(const char *s, size_t from, size_t at)
{
    size_t k = at;
    while (k > from && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
        k--;
    if (k == from)
        return 0;
    k--;
    int32_t cp;
    int l = utf8_decode(s + k, at - k, &cp);
    return (size_t)l == at - k && utf8_is_space(cp) ? at - k : 0;
}

int ug_encode(const unigram *u, const char *text, size_t len, int32_t *ids, int max)
{
    int npre = (int)u->h.npre, nsuf = (int)u->h.nsuf;
    for (int i = 0; i < npre && i < max; i++)
        ids[i] = u->h.pre[i];
    enc e = {u, ids + npre, 0, max - npre - nsuf, NULL, 0};
    if (e.max < 0)
        e.max = 0;
    buf c, a, b, w;
    buf_init(&c, 0);
    buf_init(&a, 0);
    buf_init(&b, 0);
    buf_init(&w, 0);
    /* Valid UTF-8 only: an invalid byte is dropped. */
    for (size_t i = 0; i < len;) {
        int32_t cp;
        int l = utf8_decode(text + i, len - i, &cp);
        if (cp >= 0)
            buf_append(&c, text + i, (size_t)l);
        i += (size_t)l;
    }
    /* Added tokens written in the text are found on the raw text, the
     * leftmost first and the longest at a place; the stretches between
     * them are tokenized each on its own. */
    size_t seg = 0;
    for (size_t i = 0; i < c.len && e.n < e.max;) {
        const added *m = added_at(u, c.data + i, c.len - i);
        if (!m) {
            i++;
            continue;
        }
        size_t s0 = i, s1 = i + m->len, k;
        if (m->flags & A_LSTRIP)
            while ((k = space_before(c.data, seg, s0)))
                s0 -= k;
        if (m->flags & A_RSTRIP)
            while (s1 < c.len) {
                int32_t cp;
                int l = utf8_decode(c.data + s1, c.len - s1, &cp);
                if (!utf8_is_space(cp))
                    break;
                s1 += (size_t)l;
            }
        stretch(&e, c.data + seg, s0 - seg, seg == 0, &a, &b, &w);
        emit(&e, m->id);
        seg = i = s1;
    }
    if (e.n < e.max)
        stretch(&e, c.data + seg, c.len - seg, seg == 0, &a, &b, &w);
    free(e.best);
    buf_cleanup(&c);
    buf_cleanup(&a);
    buf_cleanup(&b);
    buf_cleanup(&w);
    int n = npre + e.n;
    for (int i = 0; i < nsuf && n < max; i++)
        ids[n++] = u->h.suf[i];
    return n;
}
