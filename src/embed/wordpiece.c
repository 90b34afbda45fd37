/*
 * wordpiece.c - the BERT tokenizer (see wordpiece.h).
 */
#include "embed/wordpiece.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "mnemo.h"
#include "embed/vocab.h"
#include "util/utf8.h"

#define MAX_PIECE 512 /* bytes of a vocabulary entry looked up */

struct wordpiece {
    vocab v;
    int32_t unk, cls, sep;
    int max_chars;    /* a longer word is [UNK] */
    char prefix[16];  /* continuing_subword_prefix */
    int clean, chinese, strip, lower;
};

void wp_free(wordpiece *w)
{
    if (!w)
        return;
    vocab_cleanup(&w->v);
    free(w);
}

size_t wp_vocab_size(const wordpiece *w) { return w->v.n; }

static int32_t lookup(const wordpiece *w, const char *s, size_t n)
{
    return vocab_find(&w->v, s, n);
}

static int32_t special(const wordpiece *w, const char *tok)
{
    return lookup(w, tok, strlen(tok));
}

/* The [CLS] and [SEP] ids of a post_processor (TemplateProcessing or
 * BertProcessing), else of the vocabulary. */
static void template_ids(wordpiece *w, json_t *pp)
{
    w->cls = special(w, "[CLS]");
    w->sep = special(w, "[SEP]");
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (type && !strcmp(type, "BertProcessing")) {
        json_t *c = json_object_get(pp, "cls"), *s = json_object_get(pp, "sep");
        if (json_is_integer(json_array_get(c, 1)))
            w->cls = (int32_t)json_integer_value(json_array_get(c, 1));
        if (json_is_integer(json_array_get(s, 1)))
            w->sep = (int32_t)json_integer_value(json_array_get(s, 1));
    } else if (type && !strcmp(type, "TemplateProcessing")) {
        json_t *single = json_object_get(pp, "single"), *sp = json_object_get(pp, "special_tokens");
        int before = 1;
        size_t i;
        json_t *e;
        json_array_foreach(single, i, e)
        {
            if (json_object_get(e, "Sequence")) {
                before = 0;
                continue;
            }
            const char *id = json_string_value(json_object_get(json_object_get(e, "SpecialToken"), "id"));
            json_t *ids = json_object_get(json_object_get(sp, id ? id : ""), "ids");
            if (!json_is_integer(json_array_get(ids, 0)))
                continue;
            int32_t v = (int32_t)json_integer_value(json_array_get(ids, 0));
            if (before)
                w->cls = v;
            else
                w->sep = v;
        }
    }
}

static int from_json(wordpiece *w, const char *path, buf *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) {
        buf_printf(err, "%s: %s (line %d)", path, je.text, je.line);
        return MNEMO_INVALID;
    }
    int rc = MNEMO_OK;
    const char **toks = NULL;
    json_t *model = json_object_get(j, "model"), *jv = json_object_get(model, "vocab");
    const char *type = json_string_value(json_object_get(model, "type"));
    json_t *norm = json_object_get(j, "normalizer"), *pre = json_object_get(j, "pre_tokenizer");
    const char *ntype = json_string_value(json_object_get(norm, "type"));
    const char *ptype = json_string_value(json_object_get(pre, "type"));
    if (!type || strcmp(type, "WordPiece") || !json_is_object(jv)) {
        buf_printf(err, "%s: a %s tokenizer (only WordPiece is supported so far)", path,
                   type ? type : "unknown");
        rc = MNEMO_INVALID;
        goto done;
    }
    if ((ntype && strcmp(ntype, "BertNormalizer")) || (ptype && strcmp(ptype, "BertPreTokenizer") &&
                                                       strcmp(ptype, "Whitespace") &&
                                                       strcmp(ptype, "WhitespaceSplit"))) {
        buf_printf(err, "%s: normalizer %s with pre-tokenizer %s is not supported", path,
                   ntype ? ntype : "none", ptype ? ptype : "none");
        rc = MNEMO_INVALID;
        goto done;
    }
    w->clean = ntype && json_is_true(json_object_get(norm, "clean_text"));
    w->chinese = ntype && json_is_true(json_object_get(norm, "handle_chinese_chars"));
    w->lower = ntype && json_is_true(json_object_get(norm, "lowercase"));
    json_t *sa = json_object_get(norm, "strip_accents");
    w->strip = ntype && (json_is_boolean(sa) ? json_is_true(sa) : w->lower);
    json_int_t maxc = json_integer_value(json_object_get(model, "max_input_chars_per_word"));
    w->max_chars = maxc > 0 && maxc < 100000 ? (int)maxc : 100;
    const char *pfx = json_string_value(json_object_get(model, "continuing_subword_prefix"));
    snprintf(w->prefix, sizeof w->prefix, "%s", pfx ? pfx : "##");
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(jv, k, v)
    {
        json_int_t id = json_integer_value(v);
        if (id >= 0 && (size_t)id + 1 > n)
            n = (size_t)id + 1;
    }
    if (n == 0 || n > (1u << 24)) {
        buf_printf(err, "%s: empty or oversized vocabulary", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    if (!(toks = calloc(n, sizeof *toks))) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    json_object_foreach(jv, k, v)
    {
        json_int_t id = json_integer_value(v);
        if (id >= 0 && (size_t)id < n && !toks[id])
            toks[id] = k;
    }
    if ((rc = vocab_build(&w->v, toks, n)))
        goto done;
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    w->unk = special(w, unk ? unk : "[UNK]");
    template_ids(w, json_object_get(j, "post_processor"));
done:
    free(toks);
    json_decref(j);
    return rc;
}

static int from_vocab_txt(wordpiece *w, const char *dir, const char *path, buf *err)
{
    size_t len = 0;
    char *text = NULL;
    FILE *f = fopen(path, "rb");
    int rc = MNEMO_OK;
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz >= 0 && sz < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 &&
            (text = malloc((size_t)sz + 1)) && fread(text, 1, (size_t)sz, f) == (size_t)sz)
            len = (size_t)sz;
        else
            rc = MNEMO_IO;
    } else {
        rc = MNEMO_IO;
    }
    if (f)
        fclose(f);
    if (rc) {
        free(text);
        buf_printf(err, "%s: cannot read", path);
        return rc;
    }
    size_t n = 0, cap = 1024;
    const char **toks = malloc(cap * sizeof *toks);
    if (!toks) {
        free(text);
        return MNEMO_NOMEM;
    }
    for (char *p = text, *nl; p < text + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(text + len - p));
        if (!nl)
            nl = text + len;
        *nl = 0;
        if (nl > p && nl[-1] == '\r')
            nl[-1] = 0;
        if (n == cap) {
            const char **t = realloc(toks, 2 * cap * sizeof *toks);
            if (!t) {
                rc = MNEMO_NOMEM;
                break;
            }
            toks = t;
            cap *= 2;
        }
        toks[n++] = p;
    }
    if (!rc)
        rc = vocab_build(&w->v, toks, n);
    free(toks);
    free(text);
    if (rc)
        return rc;
    w->clean = w->chinese = 1;
    w->lower = 1;
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    json_t *c = json_load_file(cfg, 0, NULL);
    if (json_is_false(json_object_get(c, "do_lower_case")))
        w->lower = 0;
    json_decref(c);
    w->strip = w->lower;
    w->max_chars = 100;
    snprintf(w->prefix, sizeof w->prefix, "##");
    w->unk = special(w, "[UNK]");
    w->cls = special(w, "[CLS]");
    w->sep = special(w, "[SEP]");
    return MNEMO_OK;
}

int wp_load(const char *dir, wordpiece **out, buf *err)
{
    *out = NULL;
    wordpiece *w = calloc(1, sizeof *w);
    if (!w)
        return MNEMO_NOMEM;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "rb");
    int rc;
    if (f) {
        fclose(f);
        rc = from_json(w, path, err);
    } else {
        snprintf(path, sizeof path, "%s/vocab.txt", dir);
        if ((f = fopen(path, "rb"))) {
            fclose(f);
            rc = from_vocab_txt(w, dir, path, err);
        } else {
            buf_printf(err, "%s: no tokenizer.json or vocab.txt", dir);
            rc = MNEMO_NOTFOUND;
        }
    }
    if (!rc && (w->cls < 0 || w->sep < 0 || w->unk < 0)) {
        buf_printf(err, "%s: the vocabulary lacks [CLS], [SEP] or [UNK]", dir);
        rc = MNEMO_INVALID;
    }
    if (rc) {
        wp_free(w);
        return rc;
    }
    *out = w;
    return MNEMO_OK;
}

int wp_from_list(const char *const *toks, size_t n, int lower, int32_t unk, int32_t cls,
                 int32_t sep, wordpiece **out)
{
    *out = NULL;
    wordpiece *w = calloc(1, sizeof *w);
    if (!w)
        return MNEMO_NOMEM;
    int rc = n ? vocab_build(&w->v, toks, n) : MNEMO_INVALID;
    w->clean = w->chinese = 1;
    w->lower = w->strip = lower;
    w->max_chars = 100;
    snprintf(w->prefix, sizeof w->prefix, "##");
    w->unk = unk >= 0 ? unk : special(w, "[UNK]");
    w->cls = cls >= 0 ? cls : special(w, "[CLS]");
    w->sep = sep >= 0 ? sep : special(w, "[SEP]");
    if (!rc && (w->unk < 0 || w->cls < 0 || w->sep < 0 || (size_t)w->unk >= n ||
                (size_t)w->cls >= n || (size_t)w->sep >= n))
        rc = MNEMO_INVALID;
    if (rc) {
        wp_free(w);
        return rc;
    }
    *out = w;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * As a blob: a header of 32-bit fields, then POOL, OFF and SLOTS, each
 * 8-aligned.
 * -------------------------------------------------------------------- */

typedef struct blob_hdr {
    uint32_t n, nslots, pool_bytes;
    int32_t unk, cls, sep, max_chars;
    uint32_t flags; /* 1 clean, 2 chinese, 4 strip, 8 lower */
    char prefix[16];
} blob_hdr;

int wp_to_blob(const wordpiece *w, buf *out)
{
    blob_hdr h;
    memset(&h, 0, sizeof h);
    h.n = (uint32_t)w->v.n;
    h.nslots = (uint32_t)w->v.nslots;
    h.pool_bytes = (uint32_t)w->v.pool_bytes;
    h.unk = w->unk;
    h.cls = w->cls;
    h.sep = w->sep;
    h.max_chars = w->max_chars;
    h.flags = (uint32_t)(w->clean | w->chinese << 1 | w->strip << 2 | w->lower << 3);
    memcpy(h.prefix, w->prefix, sizeof h.prefix);
    buf_append(out, &h, sizeof h);
    return buf_err(out) ? MNEMO_NOMEM : vocab_to_blob(&w->v, out);
}

int wp_from_blob(const void *p, size_t n, wordpiece **out)
{
    *out = NULL;
    blob_hdr h;
    if (n < sizeof h)
        return MNEMO_CORRUPT;
    memcpy(&h, p, sizeof h);
    if (h.prefix[15] != 0 || h.unk < 0 || (uint32_t)h.unk >= h.n || h.cls < 0 ||
        (uint32_t)h.cls >= h.n || h.sep < 0 || (uint32_t)h.sep >= h.n)
        return MNEMO_CORRUPT;
    wordpiece *w = calloc(1, sizeof *w);
    if (!w)
        return MNEMO_NOMEM;
    if (vocab_from_blob(&w->v, (const char *)p + sizeof h, n - sizeof h, h.n, h.nslots,
                        h.pool_bytes)) {
        free(w);
        return MNEMO_CORRUPT;
    }
    w->unk = h.unk;
    w->cls = h.cls;
    w->sep = h.sep;
    w->max_chars = h.max_chars > 0 ? h.max_chars : 100;
    memcpy(w->prefix, h.prefix, sizeof w->prefix);
    w->clean = h.flags & 1;
    w->chinese = (h.flags >> 1) & 1;
    w->strip = (h.flags >> 2) & 1;
    w->lower = (h.flags >> 3) & 1;
    *out = w;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Encoding
 * -------------------------------------------------------------------- */

static int is_control(int32_t c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return 0;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CS || k == UTF8PROC_CATEGORY_CN;
}

static int is_punct(int32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126))
        return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

static int is_chinese(int32_t c)
{
    return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) ||
           (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f) ||
           (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b820 && c <= 0x2ceaf) ||
           (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

typedef struct enc {
    const wordpiece *w;
    int32_t *ids;
    int n, max; /* MAX: room for text tokens */
    char word[4 * 128 + 8];
    size_t wlen;
    int wchars, overlong;
} enc;

static void emit(enc *e, int32_t id)
{
    if (e->n < e->max)
        e->ids[e->n++] = id;
}

/* WordPiece of the word gathered so far. */
static void flush(enc *e)
{
    if (!e->wlen && !e->overlong)
        return;
    const wordpiece *w = e->w;
    if (e->overlong || e->wchars > w->max_chars) {
        emit(e, w->unk);
    } else {
        int first = e->n;
        size_t start = 0, plen = strlen(w->prefix);
        char piece[MAX_PIECE];
        while (start < e->wlen) {
            size_t end = e->wlen;
            int32_t id = -1;
            while (end > start) {
                size_t off = start ? plen : 0, l = end - start;
                if (off + l < sizeof piece) {
                    memcpy(piece, w->prefix, off);
                    memcpy(piece + off, e->word + start, l);
                    if ((id = lookup(w, piece, off + l)) >= 0)
                        break;
                }
                end--;
                while (end > start && ((unsigned char)e->word[end] & 0xc0) == 0x80)
                    end--;
            }
            if (id < 0) {
                e->n = first; /* an unknown piece: the word is [UNK] */
                emit(e, w->unk);
                break;
            }
            emit(e, id);
            start = end;
        }
    }
    e->wlen = 0;
    e->wchars = 0;
    e->overlong = 0;
}

static void add_char(enc *e, int32_t c)
{
    if (e->wlen + 4 > sizeof e->word - 1) {
        e->overlong = 1; /* surely over max_chars: [UNK] */
        e->wchars++;
        return;
    }
    e->wlen += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)e->word + e->wlen);
    e->wchars++;
}

/* One normalised character into the pre-tokenizer. */
static void pre(enc *e, int32_t c)
{
    if (utf8_is_space(c)) {
        flush(e);
    } else if (is_punct(c)) {
        flush(e);
        add_char(e, c);
        flush(e);
    } else {
        add_char(e, c);
    }
}

/* The special token written at TEXT[0..N) ("[CLS]" and the like, as the
 * text has it: the tokenizers library matches its added tokens on the raw
 * text before normalising), its byte count in *L; -1 if none. */
static int32_t special_at(const wordpiece *w, const char *text, size_t n, size_t *l)
{
    static const char *const names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        size_t nl = strlen(names[k]);
        int32_t id;
        if (nl <= n && !memcmp(text, names[k], nl) && (id = special(w, names[k])) >= 0) {
            *l = nl;
            return id;
        }
    }
    return -1;
}

int wp_encode(const wordpiece *w, const char *text, size_t len, int32_t *ids, int max)
{
    enc e;
    e.w = w;
    e.ids = ids + 1;
    e.n = 0;
    e.max = max - 2;
    e.wlen = 0;
    e.wchars = 0;
    e.overlong = 0;
    const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)text;
    utf8proc_ssize_t i = 0, n = (utf8proc_ssize_t)len;
    while (i < n && e.n < e.max) {
        size_t sl;
        int32_t sid;
        if (s[i] == '[' && (sid = special_at(w, text + i, (size_t)(n - i), &sl)) >= 0) {
            flush(&e);
            emit(&e, sid);
            i += (utf8proc_ssize_t)sl;
            continue;
        }
        utf8proc_int32_t c;
        utf8proc_ssize_t l = utf8proc_iterate(s + i, n - i, &c);
        if (l <= 0) {
            i++;
            continue; /* invalid UTF-8: the byte is dropped */
        }
        i += l;
        if (w->clean) {
            if (c == 0 || c == 0xfffd || is_control(c))
                continue;
            if (utf8_is_space(c))
                c = ' ';
        }
        if (w->chinese && is_chinese(c)) {
            pre(&e, ' ');
            pre(&e, c);
            pre(&e, ' ');
            continue;
        }
        utf8proc_int32_t d[8];
        utf8proc_ssize_t nd = 1;
        d[0] = c;
        if (w->strip) {
            int last = 0;
            nd = utf8proc_decompose_char(c, d, 8, UTF8PROC_DECOMPOSE, &last);
            if (nd < 1 || nd > 8) {
                d[0] = c;
                nd = 1;
            }
        }
        for (utf8proc_ssize_t k = 0; k < nd; k++) {
            int32_t x = d[k];
            if (w->strip && utf8proc_category(x) == UTF8PROC_CATEGORY_MN)
                continue;
            if (w->lower)
                x = utf8proc_tolower(x);
            pre(&e, x);
        }
    }
    flush(&e);
    ids[0] = w->cls;
    ids[e.n + 1] = w->sep;
    return e.n + 2;
}
