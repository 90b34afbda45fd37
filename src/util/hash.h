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

/* hash_hex of bytes that come in pieces (a file read in windows): the
 * same 32 hex digits as hash_hex of them all at once. */
typedef struct hash_stream hash_stream;

/* A stream of no bytes yet; NULL when out of memory. Freed with
 * hash_stream_free (accepts NULL). */
hash_stream *hash_stream_new(void);
void hash_stream_update(hash_stream *h, const void *p, size_t n);
/* The hash of every byte given so far. */
void hash_stream_hex(const hash_stream *h, char out[HASH_HEX_LEN + 1]);
void hash_stream_free(hash_stream *h);

#endif
