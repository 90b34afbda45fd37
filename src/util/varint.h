/*
 * varint.h - SQLite's variable-length integers (big-endian groups of 7 bits,
 * the ninth byte whole), as its record format and FTS5's records write them.
 * Header only: read in tight loops.
 */
#ifndef MNEMO_VARINT_H
#define MNEMO_VARINT_H

#include <stdint.h>

/* The varint at P (before END) into *V: its length in bytes, 0 when it
 * runs past END. */
static inline int varint_sqlite(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 9; i++) {
        if (p + i >= end)
            return 0;
        if (i == 8) {
            *v = (x << 8) | p[i];
            return 9;
        }
        x = (x << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

#endif
