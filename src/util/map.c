/*
 * map.c - string -> size_t hash map with linear probing (see map.h).
 */
#include "util/map.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "mnemo.h"

void map_init(map *m) { memset(m, 0, sizeof *m); }

void map_cleanup(map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->hashes);
    memset(m, 0, sizeof *m);
}

static int grow(map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **keys = calloc(cap, sizeof *keys);
    size_t *vals = malloc(cap * sizeof *vals);
    uint64_t *hashes = malloc(cap * sizeof *hashes);
    if (!keys || !vals || !hashes) {
        free(keys);
        free(vals);
        free(hashes);
        return MNEMO_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = m->hashes[i] & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
        hashes[j] = m->hashes[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->hashes);
    m->keys = keys;
    m->vals = vals;
    m->hashes = hashes;
    m->cap = cap;
    return MNEMO_OK;
}

int map_put(map *m, const char *key, size_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m))
        return MNEMO_NOMEM;
    uint64_t h = hash64(key, strlen(key));
    size_t j = h & (m->cap - 1);
    while (m->keys[j]) {
        if (m->hashes[j] == h && strcmp(m->keys[j], key) == 0) {
            m->vals[j] = val;
            return MNEMO_OK;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->hashes[j] = h;
    m->n++;
    return MNEMO_OK;
}

int map_get(const map *m, const char *key, size_t *val)
{
    if (!m->cap)
        return 0;
    uint64_t h = hash64(key, strlen(key));
    size_t j = h & (m->cap - 1);
    while (m->keys[j]) {
        if (m->hashes[j] == h && strcmp(m->keys[j], key) == 0) {
            *val = m->vals[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}
