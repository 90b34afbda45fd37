/*
 * sha.h - SHA-256 and SHA-1 (FIPS 180-4), for checking downloads against
 * the checksums a model hub publishes: SHA-256 for large (LFS) files, the
 * git blob SHA-1 ("blob SIZE\0" + content) for small ones. Not for
 * secrets: SHA-1 is used only as git uses it, to name content.
 */
#ifndef MNEMO_SHA_H
#define MNEMO_SHA_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha_ctx {
    uint32_t h[8];
    uint64_t len;       /* bytes hashed */
    unsigned char blk[64];
    size_t fill;
    int sha1;           /* 1: SHA-1, 0: SHA-256 */
} sha_ctx;

void sha256_init(sha_ctx *c);
void sha1_init(sha_ctx *c);
void sha_update(sha_ctx *c, const void *p, size_t n);
/* The digest as lowercase hex into HEX (65 bytes: 64 or 40 digits + NUL). */
void sha_final_hex(sha_ctx *c, char hex[65]);

#endif
