/*
 * hash.c - XXH3 hashing (see hash.h). xxhash is used header-only.
 */
#include "util/hash.h"

#include <stdlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static void hex128(XXH128_hash_t h, char out[HASH_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t parts[2] = {h.high64, h.low64};
    int k = 0;
    for (int i = 0; i < 2; i++)
        for (int shift = 60; shift >= 0; shift -= 4)
            out[k++] = hex[(parts[i] >> shift) & 15];
    out[k] = 0;
}

void hash_hex(const void *p, size_t n, char out[HASH_HEX_LEN + 1])
{
    hex128(XXH3_128bits(p, n), out);
}

uint64_t hash64(const void *p, size_t n) { return XXH3_64bits(p, n); }

struct hash_stream {
    XXH3_state_t *s;
};

hash_stream *hash_stream_new(void)
{
    hash_stream *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    h->s = XXH3_createState();
    if (!h->s) {
        free(h);
        return NULL;
    }
    XXH3_128bits_reset(h->s);
    return h;
}

void hash_stream_update(hash_stream *h, const void *p, size_t n)
{
    XXH3_128bits_update(h->s, p, n);
}

void hash_stream_hex(const hash_stream *h, char out[HASH_HEX_LEN + 1])
{
    hex128(XXH3_128bits_digest(h->s), out);
}

void hash_stream_free(hash_stream *h)
{
    if (!h)
        return;
    XXH3_freeState(h->s);
    free(h);
}
