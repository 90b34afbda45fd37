/*
 * hash.h - content hashing (XXH3, 128 bits, as 32 hex characters) for file
 * and chunk identity, and a 64-bit hash for in-memory tables.
 */
#ifndef MNEMO_HASH_H
#define MNEMO_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_HEX_LEN 32

/* Writes the 128-bit hash of P as 32 lowercase hex digits plus NUL. */
void hash_hex(const void *p, size_t n, char out[HASH_HEX_LEN + 1]);
uint64_t hash64(const void *p, size_t n);

#endif
