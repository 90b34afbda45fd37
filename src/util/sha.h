/*
 * sha.h - SHA-256 and SHA-1 (FIPS 180-4), for checking downloads against
 * the checksums a model hub publishes: SHA-256 for large (LFS) files, the
 * git blob SHA-1 ("blob SIZE\0" + content) for small ones; and
 * HMAC-SHA256 (RFC 2104), for signing AWS requests (SigV4). SHA-1 is used
 * only as git uses it, to name content.
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
/* The digest as bytes into OUT (32 for SHA-256, 20 for SHA-1). */
void sha_final(sha_ctx *c, unsigned char out[32]);
/* HMAC-SHA256 of MSG under KEY into OUT. */
void hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                 unsigned char out[32]);

#endif
