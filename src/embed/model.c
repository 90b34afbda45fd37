/*
 * model.c - static embedding tables (see model.h).
 *
 * File layout (.mnv, little-endian, sections 64-byte aligned):
 *   header   magic "MNEMOVEC", version, dims, words, flags, slots, offsets
 *   strings  the words, NUL-terminated, back to back
 *   index    u32 string offset per word
 *   slots    u32 open-addressing hash table: word index + 1, 0 = empty
 *   weights  f32 per word (SIF weight, or 1 for mean pooling)
 *   vectors  f32 words x dims
 * Opening validates every offset against the file size, so a truncated or
 * foreign file is refused instead of read out of bounds.
 */
#include "embed/model.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>
#include <zlib.h>

#include "mnemo.h"
#include "util/io.h"
#include "util/hash.h"
#include "util/utf8.h"

#define MAGIC "MNEMOVEC"
#define VERSION 1
#define FLAG_WORDPIECE 1 /* model2vec: WordPiece tokens, mean pooling */
#define MAX_DIMS 8192
#define MAX_WORD 200
#define SIF_A 1e-3

typedef struct header {
    char magic[8];
    uint32_t version, dims, words, flags, slots, reserved;
    uint64_t strings_off, strings_size, index_off, slots_off, weights_off, vectors_off;
} header;

struct model {
    void *map;
    size_t size;
    const header *h;
    const char *strings;
    const uint32_t *index, *slots;
    const float *weights, *vectors;
};

/* ----------------------------------------------------------------------
 * Building a table in memory
 * -------------------------------------------------------------------- */

typedef struct table {
    buf strings;
    uint32_t *offs;
    float *vecs;
    size_t n, cap;
    int dims;
    int wordpiece;
    size_t max_words;
} table;

static void table_init(table *t, size_t max_words)
{
    memset(t, 0, sizeof *t);
    buf_init(&t->strings, (size_t)1 << 31);
    t->max_words = max_words;
}

static void table_cleanup(table *t)
{
    buf_cleanup(&t->strings);
    free(t->offs);
    free(t->vecs);
}

static int table_add(table *t, const char *word, size_t len, const float *v)
{
    if (t->max_words && t->n >= t->max_words)
        return MNEMO_OK;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        uint32_t *o = realloc(t->offs, cap * sizeof *o);
        if (!o)
            return MNEMO_NOMEM;
        t->offs = o;
        float *vv = realloc(t->vecs, cap * (size_t)t->dims * sizeof *vv);
        if (!vv)
            return MNEMO_NOMEM;
        t->vecs = vv;
        t->cap = cap;
    }
    t->offs[t->n] = (uint32_t)t->strings.len;
    buf_append(&t->strings, word, len);
    buf_putc(&t->strings, 0);
    if (buf_err(&t->strings))
        return buf_err(&t->strings);
    memcpy(t->vecs + t->n * (size_t)t->dims, v, (size_t)t->dims * sizeof *v);
    t->n++;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Readers
 * -------------------------------------------------------------------- */

static int read_text(const char *src, table *t, buf *err)
{
    gzFile f = gzopen(src, "rb");
    if (!f) {
        buf_printf(err, "%s: %s", src, strerror(errno));
        return MNEMO_IO;
    }
    char *line = malloc(1 << 20);
    float *v = malloc(MAX_DIMS * sizeof *v);
    int rc = MNEMO_OK;
    long lineno = 0, skipped = 0;
    if (!line || !v) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    while (gzgets(f, line, 1 << 20)) {
        lineno++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        char *sp = strchr(line, ' ');
        if (!sp || sp == line)
            continue;
        /* A word2vec text header: "count dims". */
        if (lineno == 1) {
            char *e1, *e2;
            long a = strtol(line, &e1, 10), b = strtol(sp + 1, &e2, 10);
            if (e1 == sp && *e2 == 0 && a > 0 && b > 0)
                continue;
        }
        int d = 0;
        char *p = sp + 1;
        while (*p && d < MAX_DIMS) {
            char *end;
            float x = strtof(p, &end);
            if (end == p)
                break;
            v[d++] = x;
            p = end;
            while (*p == ' ')
                p++;
        }
        if (*p) {
            skipped++;
            continue;
        }
        if (!t->dims)
            t->dims = d;
        if (d != t->dims) {
            skipped++;
            continue;
        }
        size_t wlen = (size_t)(sp - line);
        if (wlen > MAX_WORD || !utf8_valid(line, wlen)) {
            skipped++;
            continue;
        }
        if ((rc = table_add(t, line, wlen, v)))
            goto done;
        if (t->max_words && t->n >= t->max_words)
            break;
    }
    if (!t->n) {
        buf_printf(err, "%s: no vectors found (expected lines of \"word v1 v2 ...\")", src);
        rc = MNEMO_INVALID;
    }
    (void)skipped;
done:
    free(line);
    free(v);
    gzclose(f);
    return rc;
}

static int read_w2v_bin(const char *src, table *t, buf *err)
{
    FILE *f = fopen(src, "rb");
    if (!f) {
        buf_printf(err, "%s: %s", src, strerror(errno));
        return MNEMO_IO;
    }
    long count = 0, dims = 0;
    int rc = MNEMO_OK;
    float *v = NULL;
    if (fscanf(f, "%ld %ld", &count, &dims) != 2 || count <= 0 || dims <= 0 || dims > MAX_DIMS) {
        buf_printf(err, "%s: not a word2vec binary file (bad header)", src);
        rc = MNEMO_INVALID;
        goto done;
    }
    t->dims = (int)dims;
    v = malloc((size_t)dims * sizeof *v);
    if (!v) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (long i = 0; i < count; i++) {
        char word[MAX_WORD + 1];
        size_t wl = 0;
        int c;
        while ((c = fgetc(f)) == '\n' || c == ' ')
            ;
        while (c != EOF && c != ' ' && wl < MAX_WORD) {
            word[wl++] = (char)c;
            c = fgetc(f);
        }
        if (c == EOF || fread(v, sizeof *v, (size_t)dims, f) != (size_t)dims) {
            buf_printf(err, "%s: truncated after %ld of %ld words", src, i, count);
            rc = MNEMO_INVALID;
            goto done;
        }
        if (!utf8_valid(word, wl))
            continue;
        if ((rc = table_add(t, word, wl, v)))
            goto done;
        if (t->max_words && t->n >= t->max_words)
            break;
    }
done:
    free(v);
    fclose(f);
    return rc;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
    uint32_t bits;
    if (exp == 0) {
        if (!man) {
            bits = sign;
        } else { /* subnormal */
            exp = 127 - 15 + 1;
            while (!(man & 1024)) {
                man <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((man & 1023) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* model2vec: model.safetensors (the "embeddings" matrix) + tokenizer.json. */
static int read_model2vec(const char *dir, table *t, buf *err)
{
    char path[4096];
    int rc = MNEMO_OK;
    json_t *tokj = NULL, *hdr = NULL;
    unsigned char *data = NULL;
    const char **names = NULL;
    size_t *name_lens = NULL;
    FILE *f = NULL;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    json_error_t je;
    tokj = json_load_file(path, 0, &je);
    if (!tokj) {
        buf_printf(err, "%s: %s", path, je.text);
        return MNEMO_INVALID;
    }
    json_t *mod = json_object_get(tokj, "model");
    json_t *vocab = json_object_get(mod, "vocab");
    const char *type = json_string_value(json_object_get(mod, "type"));
    size_t nv = json_is_object(vocab) ? json_object_size(vocab) : json_array_size(vocab);
    if (!nv) {
        buf_printf(err, "%s: no model.vocab", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    names = calloc(nv, sizeof *names);
    name_lens = calloc(nv, sizeof *name_lens);
    if (!names || !name_lens) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    if (json_is_object(vocab)) { /* WordPiece / BPE: token -> id */
        const char *k;
        json_t *v;
        json_object_foreach(vocab, k, v)
        {
            json_int_t id = json_integer_value(v);
            if (id >= 0 && (size_t)id < nv) {
                names[id] = k;
                name_lens[id] = strlen(k);
            }
        }
    } else { /* Unigram: [[token, score], ...] in id order */
        for (size_t i = 0; i < nv; i++) {
            json_t *e = json_array_get(json_array_get(vocab, i), 0);
            names[i] = json_string_value(e);
            name_lens[i] = names[i] ? strlen(names[i]) : 0;
        }
    }
    t->wordpiece = 1;
    (void)type;

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "rb");
    uint64_t hlen = 0;
    if (!f || fread(&hlen, 8, 1, f) != 1 || hlen == 0 || hlen > (64u << 20)) {
        buf_printf(err, "%s: not a safetensors file", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    char *hjson = malloc(hlen + 1);
    if (!hjson || fread(hjson, 1, hlen, f) != hlen) {
        free(hjson);
        buf_printf(err, "%s: truncated header", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    hjson[hlen] = 0;
    hdr = json_loads(hjson, 0, &je);
    free(hjson);
    json_t *tensor = json_object_get(hdr, "embeddings");
    if (!tensor) { /* any two-dimensional tensor */
        const char *k;
        json_t *v;
        json_object_foreach(hdr, k, v)
        {
            if (json_array_size(json_object_get(v, "shape")) == 2) {
                tensor = v;
                break;
            }
        }
    }
    const char *dtype = json_string_value(json_object_get(tensor, "dtype"));
    json_t *shape = json_object_get(tensor, "shape");
    json_t *offs = json_object_get(tensor, "data_offsets");
    size_t rows = (size_t)json_integer_value(json_array_get(shape, 0));
    size_t cols = (size_t)json_integer_value(json_array_get(shape, 1));
    size_t start = (size_t)json_integer_value(json_array_get(offs, 0));
    size_t end = (size_t)json_integer_value(json_array_get(offs, 1));
    int f16 = dtype && strcmp(dtype, "F16") == 0;
    size_t esz = f16 ? 2 : 4;
    if (!tensor || !dtype || (!f16 && strcmp(dtype, "F32") != 0) || !rows || !cols ||
        cols > MAX_DIMS || end - start != rows * cols * esz) {
        buf_printf(err, "%s: expected an F32 or F16 embeddings matrix", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    data = malloc(end - start);
    if (!data) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    if (fseek(f, (long)(8 + hlen + start), SEEK_SET) != 0 || fread(data, 1, end - start, f) != end - start) {
        buf_printf(err, "%s: truncated data", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    t->dims = (int)cols;
    float *v = malloc(cols * sizeof *v);
    if (!v) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (size_t r = 0; r < rows && r < nv && rc == MNEMO_OK; r++) {
        if (!names[r] || !name_lens[r] || name_lens[r] > MAX_WORD)
            continue;
        for (size_t c = 0; c < cols; c++) {
            if (f16) {
                uint16_t hv;
                memcpy(&hv, data + (r * cols + c) * 2, 2);
                v[c] = half_to_float(hv);
            } else {
                memcpy(&v[c], data + (r * cols + c) * 4, 4);
            }
        }
        rc = table_add(t, names[r], name_lens[r], v);
    }
    free(v);
done:
    if (f)
        fclose(f);
    free(data);
    free(names);
    free(name_lens);
    json_decref(hdr);
    json_decref(tokj);
    return rc;
}

/* ----------------------------------------------------------------------
 * Writing
 * -------------------------------------------------------------------- */

static uint64_t align64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

static int pad_to(int fd, uint64_t *pos, uint64_t target)
{
    static const char zeros[64];
    while (*pos < target) {
        size_t n = (size_t)(target - *pos > 64 ? 64 : target - *pos);
        if (io_write_all(fd, zeros, n))
            return -1;
        *pos += n;
    }
    return 0;
}

static int write_table(const table *t, const char *dst, buf *err)
{
    uint32_t slots = 1;
    while (slots < t->n * 2)
        slots <<= 1;
    uint32_t *sl = calloc(slots, sizeof *sl);
    float *w = malloc((t->n ? t->n : 1) * sizeof *w);
    if (!sl || !w) {
        free(sl);
        free(w);
        return MNEMO_NOMEM;
    }
    double hn = log((double)t->n + 1) + 0.5772;
    for (size_t i = 0; i < t->n; i++) {
        const char *word = t->strings.data + t->offs[i];
        uint32_t j = (uint32_t)hash64(word, strlen(word)) & (slots - 1);
        while (sl[j])
            j = (j + 1) & (slots - 1);
        sl[j] = (uint32_t)i + 1;
        double p = 1.0 / ((double)(i + 1) * hn);
        w[i] = t->wordpiece ? 1.0f : (float)(SIF_A / (SIF_A + p));
    }
    header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, 8);
    h.version = VERSION;
    h.dims = (uint32_t)t->dims;
    h.words = (uint32_t)t->n;
    h.flags = t->wordpiece ? FLAG_WORDPIECE : 0;
    h.slots = slots;
    h.strings_off = align64(sizeof h);
    h.strings_size = t->strings.len;
    h.index_off = align64(h.strings_off + h.strings_size);
    h.slots_off = align64(h.index_off + (uint64_t)t->n * 4);
    h.weights_off = align64(h.slots_off + (uint64_t)slots * 4);
    h.vectors_off = align64(h.weights_off + (uint64_t)t->n * 4);

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dst, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = MNEMO_OK;
    uint64_t pos = 0;
    if (fd < 0) {
        buf_printf(err, "%s: %s", tmp, strerror(errno));
        rc = MNEMO_IO;
        goto done;
    }
    if (io_write_all(fd, &h, sizeof h) || (pos = sizeof h, pad_to(fd, &pos, h.strings_off)) ||
        io_write_all(fd, t->strings.data, t->strings.len) ||
        (pos += t->strings.len, pad_to(fd, &pos, h.index_off)) ||
        io_write_all(fd, t->offs, t->n * 4) || (pos += t->n * 4, pad_to(fd, &pos, h.slots_off)) ||
        io_write_all(fd, sl, (size_t)slots * 4) ||
        (pos += (uint64_t)slots * 4, pad_to(fd, &pos, h.weights_off)) ||
        io_write_all(fd, w, t->n * 4) || (pos += t->n * 4, pad_to(fd, &pos, h.vectors_off)) ||
        io_write_all(fd, t->vecs, t->n * (size_t)t->dims * 4) || fsync(fd)) {
        buf_printf(err, "%s: %s", tmp, strerror(errno));
        rc = MNEMO_IO;
    }
    close(fd);
    if (!rc && rename(tmp, dst) != 0) {
        buf_printf(err, "%s: %s", dst, strerror(errno));
        rc = MNEMO_IO;
    }
    if (rc)
        unlink(tmp);
done:
    free(sl);
    free(w);
    return rc;
}

int model_import(const char *src, const char *dst, size_t max_words, buf *err, size_t *words,
                 int *dims)
{
    struct stat st;
    if (stat(src, &st) != 0) {
        buf_printf(err, "%s: %s", src, strerror(errno));
        return errno == ENOENT ? MNEMO_NOTFOUND : MNEMO_IO;
    }
    table t;
    table_init(&t, max_words);
    int rc;
    size_t n = strlen(src);
    if (S_ISDIR(st.st_mode))
        rc = read_model2vec(src, &t, err);
    else if (n > 4 && strcmp(src + n - 4, ".bin") == 0)
        rc = read_w2v_bin(src, &t, err);
    else
        rc = read_text(src, &t, err);
    if (!rc)
        rc = write_table(&t, dst, err);
    if (!rc) {
        if (words)
            *words = t.n;
        if (dims)
            *dims = t.dims;
    }
    table_cleanup(&t);
    return rc;
}

/* ----------------------------------------------------------------------
 * Opening and lookup
 * -------------------------------------------------------------------- */

int model_open(const char *path, model **out, buf *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        buf_printf(err, "embedding table %s: %s", path, strerror(errno));
        return errno == ENOENT ? MNEMO_NOTFOUND : MNEMO_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(header)) {
        close(fd);
        buf_printf(err, "embedding table %s is not a mnemo table (import one with: mnemo model "
                        "import FILE)",
                   path);
        return MNEMO_CORRUPT;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        buf_printf(err, "embedding table %s: %s", path, strerror(errno));
        return MNEMO_IO;
    }
    const header *h = map;
    uint64_t size = (uint64_t)st.st_size;
    int ok = memcmp(h->magic, MAGIC, 8) == 0 && h->version == VERSION && h->dims > 0 &&
             h->dims <= MAX_DIMS && h->slots && (h->slots & (h->slots - 1)) == 0 &&
             h->strings_off + h->strings_size <= size && h->index_off + (uint64_t)h->words * 4 <= size &&
             h->slots_off + (uint64_t)h->slots * 4 <= size &&
             h->weights_off + (uint64_t)h->words * 4 <= size &&
             h->vectors_off + (uint64_t)h->words * h->dims * 4 <= size &&
             (h->strings_size == 0 || ((const char *)map)[h->strings_off + h->strings_size - 1] == 0);
    if (ok) {
        const uint32_t *index = (const uint32_t *)((const char *)map + h->index_off);
        for (uint32_t i = 0; i < h->words && ok; i++)
            ok = index[i] < h->strings_size;
    }
    if (!ok) {
        munmap(map, (size_t)st.st_size);
        buf_printf(err, "embedding table %s is damaged or not a mnemo table; import it again "
                        "with: mnemo model import FILE",
                   path);
        return MNEMO_CORRUPT;
    }
    model *m = calloc(1, sizeof *m);
    if (!m) {
        munmap(map, (size_t)st.st_size);
        return MNEMO_NOMEM;
    }
    m->map = map;
    m->size = (size_t)st.st_size;
    m->h = h;
    m->strings = (const char *)map + h->strings_off;
    m->index = (const uint32_t *)((const char *)map + h->index_off);
    m->slots = (const uint32_t *)((const char *)map + h->slots_off);
    m->weights = (const float *)(const void *)((const char *)map + h->weights_off);
    m->vectors = (const float *)(const void *)((const char *)map + h->vectors_off);
    *out = m;
    return MNEMO_OK;
}

void model_close(model *m)
{
    if (!m)
        return;
    munmap(m->map, m->size);
    free(m);
}

int model_dims(const model *m) { return (int)m->h->dims; }
size_t model_words(const model *m) { return m->h->words; }

/* Index of WORD, or -1. */
static long lookup(const model *m, const char *word, size_t len)
{
    uint32_t mask = m->h->slots - 1;
    uint32_t j = (uint32_t)hash64(word, len) & mask;
    for (uint32_t probes = 0; probes <= mask; probes++) {
        uint32_t s = m->slots[j];
        if (!s)
            return -1;
        const char *w = m->strings + m->index[s - 1];
        if (strncmp(w, word, len) == 0 && w[len] == 0)
            return (long)(s - 1);
        j = (j + 1) & mask;
    }
    return -1;
}

typedef struct acc {
    const model *m;
    float *out;
    double wsum;
    int known;
} acc;

static void add_word(acc *a, long i)
{
    if (i < 0)
        return;
    const model *m = a->m;
    float w = m->weights[i];
    const float *v = m->vectors + (size_t)i * m->h->dims;
    for (uint32_t d = 0; d < m->h->dims; d++)
        a->out[d] += w * v[d];
    a->wsum += w;
    a->known++;
}

static int word_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    acc *a = ud;
    if (flags & (TOKF_WHOLE | TOKF_CJK))
        return 0; /* identifiers count by their parts; tables have no bigrams */
    add_word(a, lookup(a->m, token, (size_t)len));
    return 0;
}

/* WordPiece: greedy longest match, continuations prefixed with "##". */
static void wordpiece(acc *a, const char *w, size_t n)
{
    char piece[MAX_WORD + 3];
    size_t pos = 0;
    while (pos < n) {
        size_t end = n, found = 0;
        long idx = -1;
        while (end > pos) {
            size_t len = end - pos, off = 0;
            if (pos > 0) {
                memcpy(piece, "##", 2);
                off = 2;
            }
            if (len + off <= MAX_WORD) {
                memcpy(piece + off, w + pos, len);
                idx = lookup(a->m, piece, len + off);
                if (idx >= 0) {
                    found = len;
                    break;
                }
            }
            /* step back one code point */
            end--;
            while (end > pos && ((unsigned char)w[end] & 0xc0) == 0x80)
                end--;
        }
        if (!found)
            return; /* unknown word: contributes nothing */
        add_word(a, idx);
        pos += found;
    }
}

/* BERT-style pre-tokenization: lowercase, strip accents, split on spaces
 * and punctuation, CJK characters alone. */
static void wordpiece_text(acc *a, const char *text, size_t len)
{
    utf8proc_uint8_t *norm = NULL;
    utf8proc_ssize_t nl = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len,
                                       &norm,
                                       UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD |
                                           UTF8PROC_STRIPMARK);
    if (nl < 0)
        return;
    const char *s = (const char *)norm;
    size_t start = 0, i = 0, n = (size_t)nl;
    while (i <= n) {
        int32_t cp = 0;
        int l = i < n ? utf8_decode(s + i, n - i, &cp) : 1;
        int boundary = i == n || cp < 0;
        int alone = 0;
        if (!boundary) {
            utf8proc_category_t cat = utf8proc_category(cp);
            if (cat == UTF8PROC_CATEGORY_ZS || cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r')
                boundary = 1;
            else if ((cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO) ||
                     (cp < 128 && !((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9'))) ||
                     utf8_is_cjk(cp))
                boundary = alone = 1;
        }
        if (boundary) {
            if (i > start && i - start <= MAX_WORD)
                wordpiece(a, s + start, i - start);
            if (alone)
                wordpiece(a, s + i, (size_t)l);
            start = i + (size_t)l;
        }
        i += (size_t)l;
    }
    free(norm);
}

int model_embed(const model *m, tok *t, const char *text, size_t len, float *out)
{
    memset(out, 0, m->h->dims * sizeof *out);
    acc a = {m, out, 0, 0};
    if (m->h->flags & FLAG_WORDPIECE)
        wordpiece_text(&a, text, len);
    else
        tok_run(t, text, len, 0, word_fn, &a);
    if (a.known) {
        double s = 0;
        for (uint32_t d = 0; d < m->h->dims; d++)
            s += (double)out[d] * out[d];
        float norm = (float)sqrt(s);
        if (norm > 0)
            for (uint32_t d = 0; d < m->h->dims; d++)
                out[d] /= norm;
    }
    return a.known;
}
