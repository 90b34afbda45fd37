/*
 * hash.c - XXH3 hashing (see hash.h). xxhash is used header-only.
 */
#include "util/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

void hash_hex(const void *p, size_t n, char out[HASH_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    XXH128_hash_t h = XXH3_128bits(p, n);
    uint64_t parts[2] = {h.high64, h.low64};
    int k = 0;
    for (int i = 0; i < 2; i++)
        for (int shift = 60; shift >= 0; shift -= 4)
            out[k++] = hex[(parts[i] >> shift) & 15];
    out[k] = 0;
}

uint64_t hash64(const void *p, size_t n) { return XXH3_64bits(p, n); }
