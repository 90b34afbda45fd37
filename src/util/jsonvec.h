/*
 * jsonvec.h - reading embedding vectors out of a provider's JSON answer
 * without building a JSON tree.
 *
 * A 384-dimension answer for 32 inputs holds 12,288 numbers; a general
 * JSON library allocates a node for each and parses it with the locale-aware
 * strtod, which made response parsing the bottleneck of the embedding
 * pipeline. This scanner walks the text once, skips what it does not need
 * (validating it), and parses the numbers straight into floats.
 */
#ifndef MNEMO_JSONVEC_H
#define MNEMO_JSONVEC_H

#include <stddef.h>

enum { JSONVEC_OPENAI, JSONVEC_OLLAMA, JSONVEC_GEMINI };

/* Called for each vector: its position (OpenAI "index" when present, else
 * the order), the numbers and their count. Non-zero stops the scan. */
typedef int (*jsonvec_fn)(void *ud, size_t index, const float *v, size_t n);

/* Scans S (N bytes, NUL-terminated) in the shape of FORMAT:
 *   OpenAI {"data":[{"embedding":[...],"index":i}, ...]}
 *   Ollama {"embeddings":[[...], ...]}
 *   Gemini {"embeddings":[{"values":[...]}, ...]}
 * SCRATCH holds up to CAP floats (the longest vector). Returns the number
 * of vectors, or -1 with a message in ERR (invalid JSON, wrong shape, a
 * vector longer than CAP, the callback's refusal). */
long jsonvec_scan(const char *s, size_t n, int format, float *scratch, size_t cap, jsonvec_fn fn,
                  void *ud, char *err, size_t errlen);

#endif
