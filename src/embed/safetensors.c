/*
 * safetensors.c - memory-mapped safetensors files (see safetensors.h).
 */
#include "embed/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnemo.h"
#include "util/hash.h"

#define MAX_HEADER (100u << 20) /* as the format's own reader */

typedef struct tensor {
    char *name;
    int dtype; /* DT_* */
    int ndim;
    int64_t shape[4];
    const unsigned char *data;
    size_t bytes;
    float *wide; /* F16/BF16 widened, or NULL */
} tensor;

enum { DT_F32, DT_F16, DT_BF16, DT_OTHER };

struct safetensors {
    void *map;
    size_t size;
    tensor *t;
    size_t n;
};

static int dtype_of(const char *s, size_t *width)
{
    static const struct {
        const char *name;
        int dt;
        size_t w;
    } dts[] = {{"F32", DT_F32, 4}, {"F16", DT_F16, 2}, {"BF16", DT_BF16, 2},
               {"F64", DT_OTHER, 8}, {"I64", DT_OTHER, 8}, {"I32", DT_OTHER, 4},
               {"I16", DT_OTHER, 2}, {"I8", DT_OTHER, 1}, {"U8", DT_OTHER, 1},
               {"BOOL", DT_OTHER, 1}, {"U16", DT_OTHER, 2}, {"U32", DT_OTHER, 4},
               {"U64", DT_OTHER, 8}, {"F8_E4M3", DT_OTHER, 1}, {"F8_E5M2", DT_OTHER, 1}};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++)
        if (!strcmp(s, dts[i].name)) {
            *width = dts[i].w;
            return dts[i].dt;
        }
    return -1;
}

void st_close(safetensors *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->t[i].name);
        free(s->t[i].wide);
    }
    free(s->t);
    if (s->map)
        munmap(s->map, s->size);
    free(s);
}

static int parse_header(safetensors *s, const char *path, const char *h, size_t hlen,
                        size_t base, buf *err)
{
    json_error_t je;
    json_t *j = json_loadb(h, hlen, 0, &je);
    if (!json_is_object(j)) {
        buf_printf(err, "%s: header is not a JSON object (%s)", path, je.text);
        json_decref(j);
        return MNEMO_CORRUPT;
    }
    s->t = calloc(json_object_size(j) + 1, sizeof *s->t);
    if (!s->t) {
        json_decref(j);
        return MNEMO_NOMEM;
    }
    const char *k;
    json_t *v;
    int rc = MNEMO_OK;
    json_object_foreach(j, k, v)
    {
        if (!strcmp(k, "__metadata__"))
            continue;
        const char *dt = json_string_value(json_object_get(v, "dtype"));
        json_t *shape = json_object_get(v, "shape"), *off = json_object_get(v, "data_offsets");
        size_t width = 0;
        int d = dt ? dtype_of(dt, &width) : -1;
        if (d < 0 || !json_is_array(shape) || json_array_size(shape) > 4 ||
            json_array_size(off) != 2) {
            buf_printf(err, "%s: tensor %s: bad dtype, shape or offsets", path, k);
            rc = MNEMO_CORRUPT;
            break;
        }
        tensor *t = &s->t[s->n];
        t->dtype = d;
        t->ndim = (int)json_array_size(shape);
        uint64_t count = 1;
        for (int i = 0; i < t->ndim; i++) {
            json_int_t x = json_integer_value(json_array_get(shape, (size_t)i));
            if (x < 0 || x > (json_int_t)1 << 40) {
                rc = MNEMO_CORRUPT;
                break;
            }
            t->shape[i] = x;
            count *= (uint64_t)x;
            if (count > (uint64_t)1 << 40)
                rc = MNEMO_CORRUPT;
        }
        json_int_t a = json_integer_value(json_array_get(off, 0));
        json_int_t b = json_integer_value(json_array_get(off, 1));
        if (rc || a < 0 || b < a || (uint64_t)(b - a) != count * width ||
            (uint64_t)b > s->size - base) {
            buf_printf(err, "%s: tensor %s: data outside the file or not its shape", path, k);
            rc = MNEMO_CORRUPT;
            break;
        }
        t->data = (const unsigned char *)s->map + base + (size_t)a;
        t->bytes = (size_t)(b - a);
        if (!(t->name = strdup(k))) {
            rc = MNEMO_NOMEM;
            break;
        }
        s->n++;
    }
    json_decref(j);
    return rc;
}

int st_open(const char *path, safetensors **out, buf *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        buf_printf(err, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? MNEMO_NOTFOUND : MNEMO_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        buf_printf(err, "%s: not a regular file", path);
        close(fd);
        return MNEMO_IO;
    }
    safetensors *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return MNEMO_NOMEM;
    }
    s->size = (size_t)sb.st_size;
    if (s->size >= 8) {
        s->map = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (s->map == MAP_FAILED)
            s->map = NULL;
    }
    close(fd);
    if (!s->map) {
        buf_printf(err, "%s: not a safetensors file (too short or unreadable)", path);
        free(s);
        return MNEMO_CORRUPT;
    }
    const unsigned char *p = s->map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | p[i];
    if (hlen < 2 || hlen > MAX_HEADER || hlen > s->size - 8) {
        buf_printf(err, "%s: not a safetensors file (header length %llu)", path,
                   (unsigned long long)hlen);
        st_close(s);
        return MNEMO_CORRUPT;
    }
    int rc = parse_header(s, path, (const char *)p + 8, (size_t)hlen, 8 + (size_t)hlen, err);
    if (rc) {
        st_close(s);
        return rc;
    }
    *out = s;
    return MNEMO_OK;
}

static tensor *find(const safetensors *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name))
            return &s->t[i];
    return NULL;
}

int st_has(const safetensors *s, const char *name) { return find(s, name) != NULL; }

void st_fingerprint_bytes(const void *map, size_t size, char out[17])
{
    enum { SAMPLE = 64 * 1024 };
    const unsigned char *p = map;
    uint64_t h = 0;
    size_t offs[4] = {0, size / 2, size > SAMPLE ? size - SAMPLE : 0, 0};
    for (int i = 0; i < 3; i++) {
        size_t n = size - offs[i] < SAMPLE ? size - offs[i] : SAMPLE;
        uint64_t x = hash64(p + offs[i], n);
        h = h * 0x9e3779b97f4a7c15u ^ x;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void st_fingerprint(const safetensors *s, char out[17]) { st_fingerprint_bytes(s->map, s->size, out); }

float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            bits = sign | exp << 23 | (man & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

const float *st_f32(safetensors *s, const char *name, int64_t *shape, int *ndim, buf *err)
{
    tensor *t = find(s, name);
    if (!t) {
        buf_printf(err, "no tensor %s", name);
        return NULL;
    }
    if (t->dtype == DT_OTHER) {
        buf_printf(err, "tensor %s: not float32, float16 or bfloat16", name);
        return NULL;
    }
    if (shape)
        memcpy(shape, t->shape, sizeof t->shape);
    if (ndim)
        *ndim = t->ndim;
    if (t->dtype == DT_F32) {
        if ((uintptr_t)t->data % 4 == 0)
            return (const float *)(const void *)t->data;
        /* Unaligned in the file: copied once. */
        if (!t->wide && (t->wide = malloc(t->bytes ? t->bytes : 1)))
            memcpy(t->wide, t->data, t->bytes);
        return t->wide;
    }
    if (!t->wide) {
        size_t n = t->bytes / 2;
        float *w = malloc((n ? n : 1) * sizeof *w);
        if (!w)
            return NULL;
        for (size_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(t->data[2 * i] | t->data[2 * i + 1] << 8);
            if (t->dtype == DT_F16) {
                w[i] = st_f16_to_f32(h);
            } else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&w[i], &bits, 4);
            }
        }
        t->wide = w;
    }
    return t->wide;
}
