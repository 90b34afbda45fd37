/*
 * spm.c - the SentencePiece BPE tokenizer of GGUF "llama" vocabularies
 * (see spm.h), after llama.cpp's llm_tokenizer_spm_session: symbols in a
 * linked list over the text, a max-heap of candidate merges keyed by the
 * merged token's score, stale entries skipped when popped.
 */
#include "embed/spm.h"

#include <stdlib.h>
#include <string.h>

#include "embed/vocab.h"
#include "mnemo.h"

struct spm {
    vocab v;
    float *scores;
    int32_t *special; /* user-defined tokens, longest first */
    size_t nspecial;
    int32_t bytes[256]; /* the token of each byte, -1 none */
    spm_cfg cfg;
    int mapped; /* scores and special point into a blob */
};

typedef struct byname {
    size_t len;
    int32_t id;
} byname;

static int longer_first(const void *a, const void *b)
{
    const byname *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void spm_free(spm *s)
{
    if (!s)
        return;
    vocab_cleanup(&s->v);
    if (!s->mapped) {
        free(s->scores);
        free(s->special);
    }
    free(s);
}

size_t spm_vocab_size(const spm *s) { return s->v.n; }

int spm_new(const char *const *toks, const size_t *lens, const float *scores,
            const int32_t *types, size_t n, const spm_cfg *cfg, spm **out, buf *err)
{
    *out = NULL;
    spm *s = calloc(1, sizeof *s);
    char **copy = calloc(n ? n : 1, sizeof *copy);
    int rc = s && copy ? MNEMO_OK : MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        if (!(copy[i] = malloc(lens[i] + 1))) {
            rc = MNEMO_NOMEM;
            break;
        }
        memcpy(copy[i], toks[i], lens[i]);
        copy[i][lens[i]] = 0;
    }
    if (!rc)
        rc = vocab_build(&s->v, (const char *const *)copy, n);
    for (size_t i = 0; copy && i < n; i++)
        free(copy[i]);
    free(copy);
    if (!rc && (!(s->scores = calloc(n ? n : 1, sizeof *s->scores)) ||
                !(s->special = malloc((n ? n : 1) * sizeof *s->special))))
        rc = MNEMO_NOMEM;
    if (rc) {
        spm_free(s);
        return rc;
    }
    s->cfg = *cfg;
    if ((cfg->add_bos && (cfg->bos < 0 || (size_t)cfg->bos >= n)) ||
        (cfg->add_eos && (cfg->eos < 0 || (size_t)cfg->eos >= n))) {
        buf_printf(err, "the vocabulary's BOS or EOS token id is missing or out of range");
        spm_free(s);
        return MNEMO_INVALID;
    }
    byname *sp = malloc((n ? n : 1) * sizeof *sp);
    if (!sp) {
        spm_free(s);
        return MNEMO_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (scores)
            s->scores[i] = scores[i];
        if (types && types[i] == SPM_USER_DEFINED && lens[i] > 0 &&
            vocab_find(&s->v, toks[i], lens[i]) == (int32_t)i)
            sp[s->nspecial++] = (byname){lens[i], (int32_t)i};
    }
    qsort(sp, s->nspecial, sizeof *sp, longer_first);
    for (size_t i = 0; i < s->nspecial; i++)
        s->special[i] = sp[i].id;
    free(sp);
    static const char hex[] = "0123456789ABCDEF";
    for (int c = 0; c < 256; c++) {
        char name[7] = {'<', '0', 'x', hex[c >> 4], hex[c & 15], '>', 0}, one = (char)c;
        s->bytes[c] = vocab_find(&s->v, name, 6);
        if (s->bytes[c] < 0 && c)
            s->bytes[c] = vocab_find(&s->v, &one, 1);
        if (s->bytes[c] < 0)
            s->bytes[c] = cfg->unk;
    }
    *out = s;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * The blob: a header, the vocabulary's blob body, the scores, the
 * user-defined tokens (each part 8-aligned).
 * -------------------------------------------------------------------- */

#define SPM_MAGIC "MNEMOSPM"

typedef struct spm_hdr {
    char magic[8];
    uint64_t n, nslots, pool_bytes, nspecial;
    int32_t bos, eos, unk, add_bos, add_eos, add_space_prefix;
    int32_t bytes[256];
} spm_hdr;

static size_t up8(size_t x) { return (x + 7) & ~(size_t)7; }

int spm_to_blob(const spm *s, buf *out)
{
    static const char zero[8] = {0};
    spm_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SPM_MAGIC, 8);
    h.n = s->v.n;
    h.nslots = s->v.nslots;
    h.pool_bytes = s->v.pool_bytes;
    h.nspecial = s->nspecial;
    h.bos = s->cfg.bos;
    h.eos = s->cfg.eos;
    h.unk = s->cfg.unk;
    h.add_bos = s->cfg.add_bos;
    h.add_eos = s->cfg.add_eos;
    h.add_space_prefix = s->cfg.add_space_prefix;
    memcpy(h.bytes, s->bytes, sizeof h.bytes);
    size_t base = out->len;
    buf_append(out, &h, sizeof h);
    int rc = vocab_to_blob(&s->v, out);
    if (rc)
        return rc;
    buf_append(out, zero, up8(out->len - base) - (out->len - base));
    buf_append(out, s->scores, s->v.n * sizeof *s->scores);
    buf_append(out, zero, up8(out->len - base) - (out->len - base));
    buf_append(out, s->special, s->nspecial * sizeof *s->special);
    return buf_err(out) ? MNEMO_NOMEM : MNEMO_OK;
}

int spm_from_blob(const void *p, size_t n, spm **out)
{
    *out = NULL;
    spm_hdr h;
    if (n < sizeof h)
        return MNEMO_CORRUPT;
    memcpy(&h, p, sizeof h);
    if (memcmp(h.magic, SPM_MAGIC, 8) || h.n == 0 || h.n > INT32_MAX || h.nspecial > h.n ||
        h.nslots > SIZE_MAX / 8 || h.pool_bytes > SIZE_MAX / 2)
        return MNEMO_CORRUPT;
    size_t body = vocab_blob_bytes((size_t)h.n, (size_t)h.nslots, (size_t)h.pool_bytes);
    size_t at = up8(sizeof h + body), sp = up8(at + (size_t)h.n * sizeof(float));
    if (body > n - sizeof h || at > n || (size_t)h.n > (n - at) / sizeof(float) || sp > n ||
        (size_t)h.nspecial > (n - sp) / sizeof(int32_t))
        return MNEMO_CORRUPT;
    int32_t ids[3] = {h.bos, h.eos, h.unk};
    for (int k = 0; k < 3; k++)
        if (ids[k] < -1 || (int64_t)ids[k] >= (int64_t)h.n)
            return MNEMO_CORRUPT;
    if ((h.add_bos && h.bos < 0) || (h.add_eos && h.eos < 0))
        return MNEMO_CORRUPT;
    for (int c = 0; c < 256; c++)
        if (h.bytes[c] < -1 || (int64_t)h.bytes[c] >= (int64_t)h.n)
            return MNEMO_CORRUPT;
    const int32_t *special = (const int32_t *)(const void *)((const char *)p + sp);
    for (size_t k = 0; k < h.nspecial; k++)
        if (special[k] < 0 || (uint64_t)special[k] >= h.n)
            return MNEMO_CORRUPT;
    spm *s = calloc(1, sizeof *s);
    if (!s)
        return MNEMO_NOMEM;
    if (vocab_from_blob(&s->v, (const char *)p + sizeof h, body, (size_t)h.n, (size_t)h.nslots,
                        (size_t)h.pool_bytes)) {
        free(s);
        return MNEMO_CORRUPT;
    }
    for (size_t k = 0; k < h.nspecial; k++)
        if (!vocab_str(&s->v, special[k])) {
            vocab_cleanup(&s->v);
            free(s);
            return MNEMO_CORRUPT;
        }
    s->mapped = 1;
    s->scores = (float *)(uintptr_t)((const char *)p + at);
    s->special = (int32_t *)(uintptr_t)special;
    s->nspecial = (size_t)h.nspecial;
    memcpy(s->bytes, h.bytes, sizeof s->bytes);
    s->cfg = (spm_cfg){h.bos, h.eos, h.unk, h.add_bos, h.add_eos, h.add_space_prefix};
    *out = s;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Merging
 * -------------------------------------------------------------------- */

typedef struct sym {
    const char *text;
    size_t n;
    int prev, next;
} sym;

typedef struct bigram {
    float score;
    int left, right;
    size_t size;
} bigram;

typedef struct ids {
    int32_t *v;
    size_t n, cap;
    int oom;
} ids;

static void push_id(ids *o, int32_t id)
{
    if (id < 0 || o->oom)
        return;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        int32_t *v = realloc(o->v, cap * sizeof *v);
        if (!v) {
            o->oom = 1;
            return;
        }
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = id;
}

/* A before B in the heap: the higher score, then the leftmost. */
static int before(const bigram *a, const bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

typedef struct heap {
    bigram *v;
    size_t n, cap;
} heap;

static int heap_push(heap *h, bigram b)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        bigram *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&b, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = b;
    return 0;
}

static bigram heap_pop(heap *h)
{
    bigram top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

static int try_bigram(const spm *s, const sym *sy, heap *h, int left, int right)
{
    if (left < 0 || right < 0)
        return 0;
    size_t n = sy[left].n + sy[right].n;
    int32_t id = vocab_find(&s->v, sy[left].text, n);
    if (id < 0)
        return 0;
    bigram b = {s->scores[id], left, right, n};
    return heap_push(h, b);
}

static size_t utf8_len(unsigned char c)
{
    static const unsigned char lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lens[c >> 4];
}

/* The tokens of one piece of text T (N bytes, spaces already U+2581). */
static void segment(const spm *s, const char *t, size_t n, ids *o)
{
    if (!n)
        return;
    sym *sy = malloc(n * sizeof *sy);
    heap h = {0};
    if (!sy) {
        o->oom = 1;
        return;
    }
    int count = 0;
    for (size_t off = 0; off < n; count++) {
        size_t l = utf8_len((unsigned char)t[off]);
        l = l < n - off ? l : n - off;
        sy[count] = (sym){t + off, l, count - 1, off + l == n ? -1 : count + 1};
        off += l;
    }
    int bad = 0;
    for (int i = 1; i < count && !bad; i++)
        bad = try_bigram(s, sy, &h, i - 1, i);
    while (h.n && !bad) {
        bigram b = heap_pop(&h);
        sym *l = &sy[b.left], *r = &sy[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            sy[r->next].prev = b.left;
        bad = try_bigram(s, sy, &h, l->prev, b.left) || try_bigram(s, sy, &h, b.left, l->next);
    }
    if (bad)
        o->oom = 1;
    for (int i = 0; !bad && i != -1; i = sy[i].next) {
        int32_t id = vocab_find(&s->v, sy[i].text, sy[i].n);
        if (id >= 0) {
            push_id(o, id);
            continue;
        }
        for (size_t j = 0; j < sy[i].n; j++)
            push_id(o, s->bytes[(unsigned char)sy[i].text[j]]);
    }
    free(h.v);
    free(sy);
}

/* A piece of raw text with a space prefix if asked, spaces to U+2581. */
static void raw_piece(const spm *s, const char *t, size_t n, int prefix, ids *o, buf *tmp)
{
    tmp->len = 0;
    if (prefix)
        buf_puts(tmp, "\xe2\x96\x81");
    for (size_t i = 0; i < n; i++) {
        if (t[i] == ' ')
            buf_puts(tmp, "\xe2\x96\x81");
        else
            buf_putc(tmp, t[i]);
    }
    if (tmp->len && !tmp->data)
        o->oom = 1;
    else
        segment(s, tmp->data, tmp->len, o);
}

/* A fragment of the text: raw (ID -1) or a special token. */
typedef struct frag {
    const char *t;
    size_t n;
    int32_t id;
} frag;

/* Splits the raw fragments of F (*NF of them, room for *CAP) at every
 * occurrence of the special token ID (TOK, TL bytes). */
static int split_at(frag **f, size_t *nf, size_t *cap, int32_t id, const char *tok, size_t tl)
{
    size_t i = 0;
    while (i < *nf && ((*f)[i].id >= 0 || !memmem((*f)[i].t, (*f)[i].n, tok, tl)))
        i++;
    if (i == *nf)
        return 0; /* the common case: no copy */
    size_t n = 0, room = *nf * 2 + 16;
    frag *g = malloc(room * sizeof *g);
    if (!g)
        return -1;
    for (i = 0; i < *nf; i++) {
        frag x = (*f)[i];
        while (x.id < 0) {
            const char *hit = memmem(x.t, x.n, tok, tl);
            if (n + 3 > room) {
                frag *h = realloc(g, (room *= 2) * sizeof *g);
                if (!h) {
                    free(g);
                    return -1;
                }
                g = h;
            }
            if (!hit)
                break;
            if (hit > x.t)
                g[n++] = (frag){x.t, (size_t)(hit - x.t), -1};
            g[n++] = (frag){hit, tl, id};
            x.n -= (size_t)(hit + tl - x.t);
            x.t = hit + tl;
        }
        if (x.id >= 0 || x.n)
            g[n++] = x;
    }
    free(*f);
    *f = g;
    *nf = n;
    *cap = room;
    return 0;
}

int spm_encode(const spm *s, const char *text, size_t len, int32_t *out, int max)
{
    /* Split at the user-defined tokens, longest first, as llama.cpp's
     * tokenizer_st_partition does. */
    size_t nf = 1, capf = 1;
    frag *f = malloc(sizeof *f);
    ids o = {0};
    buf tmp;
    buf_init(&tmp, 0);
    if (!f)
        return -1;
    f[0] = (frag){text, len, -1};
    for (size_t k = 0; k < s->nspecial; k++) {
        const char *tok = vocab_str(&s->v, s->special[k]);
        if (split_at(&f, &nf, &capf, s->special[k], tok, strlen(tok))) {
            free(f);
            return -1;
        }
    }
    int prev_special = 1;
    for (size_t i = 0; i < nf && !o.oom; i++) {
        if (f[i].id >= 0) {
            push_id(&o, f[i].id);
            prev_special = 1;
        } else if (f[i].n) {
            raw_piece(s, f[i].t, f[i].n, s->cfg.add_space_prefix && prev_special, &o, &tmp);
            prev_special = 0;
        }
    }
    free(f);
    buf_cleanup(&tmp);
    if (o.oom) {
        free(o.v);
        return -1;
    }
    int c = 0, room = max - (s->cfg.add_bos ? 1 : 0) - (s->cfg.add_eos ? 1 : 0);
    if (s->cfg.add_bos && c < max)
        out[c++] = s->cfg.bos;
    for (size_t i = 0; i < o.n && (int)i < room; i++)
        out[c++] = o.v[i];
    if (s->cfg.add_eos && c < max)
        out[c++] = s->cfg.eos;
    free(o.v);
    return c;
}
