/*
 * provider.h - the embedding provider policy, shared by both backends.
 */
#ifndef MNEMO_PROVIDER_H
#define MNEMO_PROVIDER_H

#include <jansson.h>
#include <stddef.h>

#include "embed/embed.h"
#include "mnemo.h"
#include "util/buf.h"

/* The provider the configuration asks for: "none" (keyword on purpose),
 * a named provider (*explicit_ = 1), or for "auto" the first that is
 * configured: a static table named by `model`, then a remote provider whose
 * API key is in the environment; "none" when there is nothing. Writes the
 * name into NAME (32 bytes). */
void provider_resolve(mnemo *m, char *name, int *explicit_);

/* Opens (once per handle) the embedder for provider NAME. */
int provider_embedder(mnemo *m, const char *name, embedder **out, buf *err);

/* Where provider NAME's credentials come from, found without a request:
 * {"status":"ok","detail":...}, {"status":"missing","detail":...,"fix":...}
 * or {"status":"none"} for a provider that takes none; never a secret.
 * NULL on out-of-memory. */
json_t *provider_credentials(mnemo *m, const char *name);

/* "provider|model|dims|chunking": vectors of another identity are stale. */
void provider_identity(mnemo *m, embedder *e, char *out, size_t n);

/* The identity of a chunk's vectors: provider_identity and, with parts
 * (vectorChars > 0), the version of the rule that cuts a chunk into them
 * (chunk_parts), so vectors of an older rule are embedded again. */
void provider_chunk_identity(mnemo *m, embedder *e, char *out, size_t n);

/* The identity of the fixed texts' vectors (calib.h): provider_identity
 * and CALIB_VERSION. */
void provider_calib_identity(mnemo *m, embedder *e, char *out, size_t n);

/* For vectors of IDENTITY (as provider_identity writes it) that a search
 * leaves unused because provider "auto" found nothing to use: the provider
 * they were built with into FROM (32 bytes), and into WHY the reason with
 * the settings that would use them ("vectors present but unused: ...; run
 * with --set provider=static --set model=glove, or ..."). */
void provider_unused_hint(const char *identity, char *from, buf *why);

/* mnemo_embed_json: TEXTS[0..N) embedded by the configured provider, as
 * queries (QUERY != 0) or documents. */
int provider_embed_json(mnemo *m, const char *const *texts, size_t n, int query, char **out);

#endif
