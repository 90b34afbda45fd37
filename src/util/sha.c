/*
 * sha.c - SHA-256 and SHA-1 (see sha.h), from FIPS 180-4.
 */
#include "util/sha.h"

#include <stdio.h>
#include <string.h>

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void block256(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6],
                    k = h[7];
    for (int i = 0; i < 16; i++)
        w[i] = be32(p + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] +
                      w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

static void block1(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 16; i++)
        w[i] = be32(p + 4 * i);
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void sha256_init(sha_ctx *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memset(c, 0, sizeof *c);
    memcpy(c->h, iv, sizeof iv);
}

void sha1_init(sha_ctx *c)
{
    static const uint32_t iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    memset(c, 0, sizeof *c);
    memcpy(c->h, iv, sizeof iv);
    c->sha1 = 1;
}

static void block(sha_ctx *c, const unsigned char *p)
{
    if (c->sha1)
        block1(c->h, p);
    else
        block256(c->h, p);
}

void sha_update(sha_ctx *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    c->len += n;
    if (c->fill) {
        size_t take = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->blk + c->fill, p, take);
        c->fill += take;
        p += take;
        n -= take;
        if (c->fill < 64)
            return;
        block(c, c->blk);
        c->fill = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        block(c, p);
    memcpy(c->blk, p, n);
    c->fill = n;
}

void sha_final(sha_ctx *c, unsigned char out[32])
{
    uint64_t bits = c->len * 8;
    unsigned char pad[72] = {0x80};
    size_t padn = (c->fill < 56 ? 56 : 120) - c->fill;
    for (int i = 0; i < 8; i++)
        pad[padn + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(c, pad, padn + 8);
    int words = c->sha1 ? 5 : 8;
    for (int i = 0; i < words; i++)
        for (int k = 0; k < 4; k++)
            out[4 * i + k] = (unsigned char)(c->h[i] >> (24 - 8 * k));
}

void sha_final_hex(sha_ctx *c, char hex[65])
{
    unsigned char d[32];
    int n = c->sha1 ? 20 : 32;
    sha_final(c, d);
    for (int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    hex[2 * n] = 0;
}

void hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                 unsigned char out[32])
{
    unsigned char k[64] = {0}, pad[64];
    sha_ctx c;
    if (klen > 64) {
        sha256_init(&c);
        sha_update(&c, key, klen);
        sha_final(&c, k);
    } else {
        memcpy(k, key, klen);
    }
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&c);
    sha_update(&c, pad, 64);
    sha_update(&c, msg, mlen);
    sha_final(&c, out);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&c);
    sha_update(&c, pad, 64);
    sha_update(&c, out, 32);
    sha_final(&c, out);
    /* K is derived from a secret key: do not leave it on the stack. */
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}
