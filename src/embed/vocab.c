/*
 * vocab.c - a tokenizer's vocabulary (see vocab.h).
 */
#include "embed/vocab.h"

#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "util/hash.h"

void vocab_cleanup(vocab *v)
{
    if (!v->mapped) {
        free(v->pool);
        free(v->off);
        free(v->slots);
    }
    memset(v, 0, sizeof *v);
}

int32_t vocab_find(const vocab *v, const char *s, size_t n)
{
    size_t mask = v->nslots - 1, i = (size_t)hash64(s, n) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t e = v->slots[i];
        if (!e)
            return -1;
        const char *t = v->pool + v->off[e - 1];
        if (!strncmp(t, s, n) && t[n] == 0)
            return (int32_t)(e - 1);
    }
}

const char *vocab_str(const vocab *v, int32_t id)
{
    if (id < 0 || (size_t)id >= v->n || v->off[id] == UINT32_MAX)
        return NULL;
    return v->pool + v->off[id];
}

int vocab_build(vocab *v, const char *const *toks, size_t n)
{
    memset(v, 0, sizeof *v);
    size_t bytes = 1;
    for (size_t i = 0; i < n; i++)
        bytes += toks[i] ? strlen(toks[i]) + 1 : 0;
    v->n = n;
    for (v->nslots = 16; v->nslots < 2 * n; v->nslots *= 2)
        ;
    v->pool = malloc(bytes);
    v->off = malloc((n ? n : 1) * sizeof *v->off);
    v->slots = calloc(v->nslots, sizeof *v->slots);
    if (!v->pool || !v->off || !v->slots)
        return MNEMO_NOMEM;
    size_t p = 0, mask = v->nslots - 1;
    for (size_t i = 0; i < n; i++) {
        v->off[i] = UINT32_MAX;
        if (!toks[i])
            continue;
        size_t l = strlen(toks[i]);
        if (vocab_find(v, toks[i], l) >= 0)
            continue;
        memcpy(v->pool + p, toks[i], l + 1);
        v->off[i] = (uint32_t)p;
        p += l + 1;
        size_t s = (size_t)hash64(toks[i], l) & mask;
        while (v->slots[s])
            s = (s + 1) & mask;
        v->slots[s] = (uint32_t)i + 1;
    }
    if (!p)
        v->pool[p++] = 0;
    v->pool_bytes = p;
    return MNEMO_OK;
}

static size_t up8(size_t x) { return (x + 7) & ~(size_t)7; }

size_t vocab_blob_bytes(size_t n, size_t nslots, size_t pool_bytes)
{
    return up8(pool_bytes) + up8(n * 4) + nslots * 4;
}

int vocab_to_blob(const vocab *v, buf *out)
{
    static const char zero[8] = {0};
    buf_append(out, v->pool, v->pool_bytes);
    buf_append(out, zero, up8(v->pool_bytes) - v->pool_bytes);
    buf_append(out, v->off, v->n * sizeof *v->off);
    buf_append(out, zero, up8(v->n * 4) - v->n * 4);
    buf_append(out, v->slots, v->nslots * sizeof *v->slots);
    return buf_err(out) ? MNEMO_NOMEM : MNEMO_OK;
}

int vocab_from_blob(vocab *v, const void *p, size_t bytes, size_t n, size_t nslots,
                    size_t pool_bytes)
{
    memset(v, 0, sizeof *v);
    if (n == 0 || nslots < n || (nslots & (nslots - 1)) || pool_bytes == 0 ||
        vocab_blob_bytes(n, nslots, pool_bytes) > bytes)
        return MNEMO_CORRUPT;
    const char *b = p;
    v->mapped = 1;
    v->pool = (char *)b;
    v->pool_bytes = pool_bytes;
    v->off = (uint32_t *)(void *)(b + up8(pool_bytes));
    v->slots = (uint32_t *)(void *)(b + up8(pool_bytes) + up8(n * 4));
    v->n = n;
    v->nslots = nslots;
    /* Every offset inside the pool, every slot an id, the pool ending in
     * NUL: lookups then stay in bounds; an empty slot: they end. */
    int ok = v->pool[pool_bytes - 1] == 0;
    size_t empty = 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = v->off[i] == UINT32_MAX || v->off[i] < pool_bytes;
    for (size_t i = 0; ok && i < nslots; i++) {
        ok = v->slots[i] <= n && (v->slots[i] == 0 || v->off[v->slots[i] - 1] != UINT32_MAX);
        empty += v->slots[i] == 0;
    }
    ok = ok && empty > 0;
    if (!ok) {
        memset(v, 0, sizeof *v);
        return MNEMO_CORRUPT;
    }
    return MNEMO_OK;
}
