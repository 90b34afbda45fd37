/*
 * gguf.c - reading a GGUF file (see gguf.h).
 *
 * Layout (little-endian): "GGUF", version u32, tensor count u64, key
 * count u64; each key a string (u64 length + bytes), a type u32 and a
 * value (arrays: element type u32, count u64, elements); each tensor a
 * name, n_dims u32, ne[n_dims] u64 (innermost first), a ggml type u32
 * and an offset u64 from the data, which starts at the next multiple of
 * general.alignment (32 by default).
 */
#include "embed/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/safetensors.h"
#include "mnemo.h"

enum {
    V_U8, V_I8, V_U16, V_I16, V_U32, V_I32, V_F32, V_BOOL, V_STR, V_ARR, V_U64, V_I64, V_F64,
};

enum { G_F32 = 0, G_F16 = 1, G_Q8_0 = 8, G_BF16 = 30 };

typedef struct kv {
    const char *key;
    size_t klen;
    uint32_t type, etype; /* ETYPE, COUNT: of an array */
    uint64_t count;
    const unsigned char *val;
} kv;

typedef struct gtensor {
    const char *name;
    size_t nlen;
    int ndim;
    int64_t ne[4];
    uint32_t type;
    const unsigned char *data;
    size_t bytes;
    float *wide;
} gtensor;

struct gguf {
    unsigned char *map;
    size_t size;
    kv *kvs;
    size_t nkv;
    gtensor *ts;
    size_t nt;
};

typedef struct rd {
    const unsigned char *p, *end;
    int bad;
} rd;

static int need(rd *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    return 1;
}

static uint64_t u64(rd *r)
{
    uint64_t v = 0;
    if (need(r, 8)) {
        memcpy(&v, r->p, 8);
        r->p += 8;
    }
    return v;
}

static uint32_t u32(rd *r)
{
    uint32_t v = 0;
    if (need(r, 4)) {
        memcpy(&v, r->p, 4);
        r->p += 4;
    }
    return v;
}

static const char *str(rd *r, size_t *len)
{
    uint64_t n = u64(r);
    if (n > (1u << 30) || !need(r, (size_t)n))
        return NULL;
    const char *s = (const char *)r->p;
    r->p += n;
    *len = (size_t)n;
    return s;
}

static size_t scalar_size(uint32_t t)
{
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < sizeof sz / sizeof *sz ? sz[t] : 0;
}

/* Skips one value of type T. */
static void skip(rd *r, uint32_t t, int depth)
{
    if (t == V_STR) {
        size_t l;
        str(r, &l);
    } else if (t == V_ARR) {
        uint32_t et = u32(r);
        uint64_t n = u64(r);
        if (depth > 2 || et > V_F64) {
            r->bad = 1;
            return;
        }
        size_t es = scalar_size(et);
        if (es) {
            if (n > (uint64_t)(r->end - r->p) / es || !need(r, (size_t)n * es))
                return;
            r->p += n * es;
        } else {
            for (uint64_t i = 0; i < n && !r->bad; i++)
                skip(r, et, depth + 1);
        }
    } else if (scalar_size(t) && need(r, scalar_size(t))) {
        r->p += scalar_size(t);
    } else {
        r->bad = 1;
    }
}

void gguf_close(gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nt; i++)
        free(g->ts[i].wide);
    free(g->ts);
    free(g->kvs);
    if (g->map)
        munmap(g->map, g->size);
    free(g);
}

static const kv *find_kv(const gguf *g, const char *key)
{
    size_t l = strlen(key);
    for (size_t i = 0; i < g->nkv; i++)
        if (g->kvs[i].klen == l && !memcmp(g->kvs[i].key, key, l))
            return &g->kvs[i];
    return NULL;
}

static gtensor *find_t(const gguf *g, const char *name)
{
    size_t l = strlen(name);
    for (size_t i = 0; i < g->nt; i++)
        if (g->ts[i].nlen == l && !memcmp(g->ts[i].name, name, l))
            return &g->ts[i];
    return NULL;
}

/* The bytes of a tensor of type T with NE elements per row and N in all;
 * 0 for a type not read here (or a Q8_0 row not of whole blocks). */
static size_t tensor_bytes(uint32_t t, int64_t ne0, uint64_t n)
{
    switch (t) {
    case G_F32: return n <= SIZE_MAX / 4 ? (size_t)n * 4 : 0;
    case G_F16:
    case G_BF16: return n <= SIZE_MAX / 2 ? (size_t)n * 2 : 0;
    case G_Q8_0: return ne0 % 32 == 0 && n / 32 <= SIZE_MAX / 34 ? (size_t)(n / 32) * 34 : 0;
    default: return 0;
    }
}

int gguf_open(const char *path, gguf **out, buf *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        buf_printf(err, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? MNEMO_NOTFOUND : MNEMO_IO;
    }
    struct stat sb;
    gguf *g = calloc(1, sizeof *g);
    if (!g || fstat(fd, &sb) != 0 || sb.st_size < 24) {
        close(fd);
        free(g);
        buf_printf(err, "%s: not a GGUF file (too short)", path);
        return g ? MNEMO_CORRUPT : MNEMO_NOMEM;
    }
    g->size = (size_t)sb.st_size;
    void *m = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        free(g);
        buf_printf(err, "%s: %s", path, strerror(errno));
        return MNEMO_IO;
    }
    g->map = m;
    rd r = {g->map, g->map + g->size, 0};
    uint32_t magic = u32(&r), version = u32(&r);
    uint64_t nt = u64(&r), nkv = u64(&r);
    if (magic != 0x46554747u || version < 2 || version > 3 || nt > 1u << 20 || nkv > 1u << 20) {
        buf_printf(err, "%s: not a GGUF file of version 2 or 3", path);
        gguf_close(g);
        return MNEMO_CORRUPT;
    }
    g->kvs = calloc(nkv ? nkv : 1, sizeof *g->kvs);
    g->ts = calloc(nt ? nt : 1, sizeof *g->ts);
    if (!g->kvs || !g->ts) {
        gguf_close(g);
        return MNEMO_NOMEM;
    }
    for (uint64_t i = 0; i < nkv && !r.bad; i++) {
        kv *k = &g->kvs[g->nkv++];
        k->key = str(&r, &k->klen);
        k->type = u32(&r);
        if (k->type == V_ARR && need(&r, 12)) {
            memcpy(&k->etype, r.p, 4);
            memcpy(&k->count, r.p + 4, 8);
            k->val = r.p + 12;
        } else {
            k->val = r.p;
        }
        skip(&r, k->type, 0);
    }
    const kv *al = find_kv(g, "general.alignment");
    uint64_t align = 32;
    if (al && al->type == V_U32)
        align = (uint64_t)al->val[0] | (uint64_t)al->val[1] << 8 | (uint64_t)al->val[2] << 16 |
                (uint64_t)al->val[3] << 24;
    for (uint64_t i = 0; i < nt && !r.bad; i++) {
        gtensor *t = &g->ts[g->nt++];
        t->name = str(&r, &t->nlen);
        uint32_t nd = u32(&r);
        if (nd < 1 || nd > 4) {
            r.bad = 1;
            break;
        }
        t->ndim = (int)nd;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v = u64(&r);
            t->ne[d] = v < (1ull << 40) ? (int64_t)v : (r.bad = 1, 1);
        }
        t->type = u32(&r);
        t->data = (const unsigned char *)(uintptr_t)u64(&r); /* the offset, for now */
    }
    size_t head = (size_t)(r.p - g->map);
    if (r.bad || align == 0 || (align & (align - 1)) || align > 1 << 20) {
        buf_printf(err, "%s: damaged GGUF header", path);
        gguf_close(g);
        return MNEMO_CORRUPT;
    }
    size_t data = (size_t)((head + align - 1) / align * align);
    for (size_t i = 0; i < g->nt; i++) {
        gtensor *t = &g->ts[i];
        uint64_t n = 1, off = (uint64_t)(uintptr_t)t->data;
        for (int d = 0; d < t->ndim; d++)
            n = t->ne[d] && n > UINT64_MAX / (uint64_t)t->ne[d] ? 0 : n * (uint64_t)t->ne[d];
        t->bytes = tensor_bytes(t->type, t->ne[0], n);
        if (data > g->size || off > g->size - data || t->bytes > g->size - data - off) {
            buf_printf(err, "%s: tensor %.*s lies outside the file", path, (int)t->nlen, t->name);
            gguf_close(g);
            return MNEMO_CORRUPT;
        }
        t->data = g->map + data + off;
    }
    *out = g;
    return MNEMO_OK;
}

static int64_t scalar_int(const kv *k, int *ok)
{
    const unsigned char *v = k->val;
    *ok = 1;
    switch (k->type) {
    case V_U8:
    case V_BOOL: return v[0];
    case V_I8: return (int8_t)v[0];
    case V_U16: return (uint16_t)(v[0] | v[1] << 8);
    case V_I16: return (int16_t)(uint16_t)(v[0] | v[1] << 8);
    case V_U32: {
        uint32_t x;
        memcpy(&x, v, 4);
        return x;
    }
    case V_I32: {
        int32_t x;
        memcpy(&x, v, 4);
        return x;
    }
    case V_U64:
    case V_I64: {
        int64_t x;
        memcpy(&x, v, 8);
        return x;
    }
    default: *ok = 0; return 0;
    }
}

int64_t gguf_int(const gguf *g, const char *key, int64_t dflt)
{
    const kv *k = find_kv(g, key);
    int ok = 0;
    int64_t v = k ? scalar_int(k, &ok) : 0;
    return ok ? v : dflt;
}

double gguf_num(const gguf *g, const char *key, double dflt)
{
    const kv *k = find_kv(g, key);
    if (!k)
        return dflt;
    if (k->type == V_F32) {
        float f;
        memcpy(&f, k->val, 4);
        return f;
    }
    if (k->type == V_F64) {
        double d;
        memcpy(&d, k->val, 8);
        return d;
    }
    int ok;
    int64_t v = scalar_int(k, &ok);
    return ok ? (double)v : dflt;
}

int gguf_str(const gguf *g, const char *key, char *out, size_t n)
{
    const kv *k = find_kv(g, key);
    if (!k || k->type != V_STR || n == 0)
        return 0;
    uint64_t l;
    memcpy(&l, k->val, 8);
    snprintf(out, n, "%.*s", (int)(l < n ? l : n - 1), (const char *)k->val + 8);
    return 1;
}

long gguf_strings(const gguf *g, const char *key, const char ***ptrs, size_t **lens)
{
    const kv *k = find_kv(g, key);
    *ptrs = NULL;
    *lens = NULL;
    if (!k || k->type != V_ARR || k->etype != V_STR || k->count > (1u << 24))
        return -1;
    const char **p = malloc((k->count ? k->count : 1) * sizeof *p);
    size_t *l = malloc((k->count ? k->count : 1) * sizeof *l);
    if (!p || !l) {
        free(p);
        free(l);
        return -1;
    }
    rd r = {k->val, g->map + g->size, 0};
    for (uint64_t i = 0; i < k->count; i++)
        p[i] = str(&r, &l[i]); /* checked at open */
    *ptrs = p;
    *lens = l;
    return (long)k->count;
}

int gguf_has(const gguf *g, const char *name) { return find_t(g, name) != NULL; }

/* Element I of the numeric array K (checked at open) as a double. */
static double array_num(const kv *k, uint64_t i)
{
    kv one = {0};
    one.type = k->etype;
    one.val = k->val + i * scalar_size(k->etype);
    if (one.type == V_F32) {
        float f;
        memcpy(&f, one.val, 4);
        return f;
    }
    if (one.type == V_F64) {
        double d;
        memcpy(&d, one.val, 8);
        return d;
    }
    int ok;
    return (double)scalar_int(&one, &ok);
}

static long numbers(const gguf *g, const char *key, float **fout, int32_t **iout)
{
    const kv *k = find_kv(g, key);
    if (!k || k->type != V_ARR || !scalar_size(k->etype) || k->etype == V_STR ||
        k->count > (1u << 24))
        return -1;
    size_t n = k->count ? (size_t)k->count : 1;
    void *o = malloc(n * (fout ? sizeof **fout : sizeof **iout));
    if (!o)
        return -1;
    for (uint64_t i = 0; i < k->count; i++) {
        double v = array_num(k, i);
        if (fout)
            ((float *)o)[i] = (float)v;
        else
            ((int32_t *)o)[i] = v < INT32_MIN || v > INT32_MAX ? 0 : (int32_t)v;
    }
    if (fout)
        *fout = o;
    else
        *iout = o;
    return (long)k->count;
}

long gguf_floats(const gguf *g, const char *key, float **out)
{
    *out = NULL;
    return numbers(g, key, out, NULL);
}

long gguf_ints(const gguf *g, const char *key, int32_t **out)
{
    *out = NULL;
    return numbers(g, key, NULL, out);
}

int gguf_shape(const gguf *g, const char *name, int64_t *shape, int *ndim)
{
    const gtensor *t = find_t(g, name);
    if (!t || !(t->type == G_F32 || t->type == G_F16 || t->type == G_BF16 ||
                (t->type == G_Q8_0 && t->bytes)))
        return 0;
    for (int d = 0; d < t->ndim; d++)
        shape[d] = t->ne[t->ndim - 1 - d];
    *ndim = t->ndim;
    return 1;
}

/* Widens N elements of type T from P (starting at element I0, a multiple
 * of 32 for Q8_0) into W. */
static void widen(uint32_t type, const unsigned char *p, size_t i0, size_t n, float *w)
{
    if (type == G_F32) {
        memcpy(w, p + i0 * 4, n * 4);
    } else if (type == G_Q8_0) {
        p += i0 / 32 * 34;
        for (size_t b = 0; b < n / 32; b++, p += 34) {
            float d = st_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
            for (int i = 0; i < 32; i++)
                w[b * 32 + (size_t)i] = d * (float)(int8_t)p[2 + i];
        }
    } else {
        p += i0 * 2;
        for (size_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            if (type == G_F16) {
                w[i] = st_f16_to_f32(h);
            } else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&w[i], &bits, 4);
            }
        }
    }
}

int gguf_row(const gguf *g, const char *name, int64_t row, float *out)
{
    const gtensor *t = find_t(g, name);
    int64_t shape[4];
    int nd;
    if (!t || !gguf_shape(g, name, shape, &nd) || nd != 2 || row < 0 || row >= shape[0])
        return MNEMO_INVALID;
    widen(t->type, t->data, (size_t)row * (size_t)shape[1], (size_t)shape[1], out);
    return MNEMO_OK;
}

const float *gguf_f32(gguf *g, const char *name, int64_t *shape, int *ndim, buf *err)
{
    gtensor *t = find_t(g, name);
    if (!t) {
        buf_printf(err, "no tensor %s", name);
        return NULL;
    }
    int known = t->type == G_F32 || t->type == G_F16 || t->type == G_BF16 ||
                (t->type == G_Q8_0 && t->bytes);
    if (!known) {
        buf_printf(err, "tensor %s: ggml type %u is not read (F32, F16, BF16 and Q8_0 are)", name,
                   t->type);
        return NULL;
    }
    for (int d = 0; d < t->ndim; d++)
        shape[d] = t->ne[t->ndim - 1 - d];
    *ndim = t->ndim;
    if (t->type == G_F32 && (uintptr_t)t->data % 4 == 0)
        return (const float *)(const void *)t->data;
    if (t->wide)
        return t->wide;
    size_t n = t->type == G_Q8_0 ? t->bytes / 34 * 32 : t->type == G_F32 ? t->bytes / 4
                                                                         : t->bytes / 2;
    float *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        return NULL;
    widen(t->type, t->data, 0, n, w);
    t->wide = w;
    return w;
}

void gguf_fingerprint(const gguf *g, char out[17]) { st_fingerprint_bytes(g->map, g->size, out); }
