/*
 * memvec.h - the vectors of stored memories in the SQLite memory store.
 */
#ifndef MNEMO_MEMVEC_H
#define MNEMO_MEMVEC_H

#include <stdint.h>

#include "embed/embed.h"
#include "mnemo.h"
#include "store/sqlite/store.h"
#include "util/buf.h"

/* The embedder of the configured provider when the memory store's vectors
 * are of its identity (memory_meta vec_identity), else NULL (ERR may say
 * why). */
embedder *memvec_embedder(mnemo *m, buf *err);

/* Embeds TEXT for memory MID when a provider is configured (best effort:
 * a failure leaves the memory without a vector, for the next sync). */
void mem_embed(mnemo *m, int64_t mid, const char *text);

/* Embeds the memories of ST that have no vector with E (during a sync). */
int mem_embed_missing(mnemo *m, store *st, embedder *e, buf *err);

/* The same with the configured provider, best effort (after an import). */
void mem_embed_pending(mnemo *m);

#endif
