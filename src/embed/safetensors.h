/*
 * safetensors.h - reading a safetensors file: an 8-byte little-endian
 * header length, a JSON header naming each tensor's dtype, shape and byte
 * range, then the data. The file is memory-mapped; float32 tensors are
 * used in place, float16 and bfloat16 ones are widened to float32 once,
 * on first use (kept until close).
 */
#ifndef MNEMO_SAFETENSORS_H
#define MNEMO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct safetensors safetensors;

/* Maps PATH and checks its header: every tensor's range inside the file
 * and matching its dtype and shape. MNEMO_NOTFOUND, MNEMO_IO or
 * MNEMO_CORRUPT (message in ERR). */
int st_open(const char *path, safetensors **out, buf *err);
void st_close(safetensors *s);

/* Tensor NAME as float32, with its shape (up to 4 dims) in SHAPE and their
 * number in *NDIM. NULL when there is no such tensor or its dtype is not
 * F32, F16 or BF16 (message in ERR), or out of memory. */
const float *st_f32(safetensors *s, const char *name, int64_t *shape, int *ndim, buf *err);

/* A fingerprint of the file's content: a 64-bit hash of its header and of
 * three 64 KB samples of its data (start, middle, end), as 16 hex digits
 * into OUT. Two models of one shape with other weights differ in it. */
void st_fingerprint(const safetensors *s, char out[17]);
/* The same over any mapped file (MAP, SIZE bytes). */
void st_fingerprint_bytes(const void *map, size_t size, char out[17]);

/* An IEEE half as float (subnormals, infinities and NaN kept). */
float st_f16_to_f32(uint16_t h);

/* Whether NAME is a tensor of the file. */
int st_has(const safetensors *s, const char *name);

#endif
