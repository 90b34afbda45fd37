/*
 * gguf.h - reading a GGUF file (llama.cpp's model format, version 2 or 3):
 * the header, the metadata (typed key-value pairs), the tensor table and
 * the data, aligned to general.alignment. The file is memory-mapped;
 * float32 tensors are used in place, float16, bfloat16 and Q8_0 ones
 * (blocks of 32 int8 values with a float16 scale) are widened to float32
 * once, on first use (kept until close).
 */
#ifndef MNEMO_GGUF_H
#define MNEMO_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct gguf gguf;

/* Maps PATH and checks it: every key, tensor and range inside the file.
 * MNEMO_NOTFOUND, MNEMO_IO or MNEMO_CORRUPT (message in ERR). */
int gguf_open(const char *path, gguf **out, buf *err);
void gguf_close(gguf *g);

/* Metadata: a number key as an integer or a float (DFLT when absent or
 * of another type); a string key copied into OUT (N bytes), 0 when
 * absent. */
int64_t gguf_int(const gguf *g, const char *key, int64_t dflt);
double gguf_num(const gguf *g, const char *key, double dflt);
int gguf_str(const gguf *g, const char *key, char *out, size_t n);

/* The strings of the array KEY: their count, or -1 when KEY is not an
 * array of strings; *PTRS and *LENS receive new arrays (caller frees both)
 * pointing into the mapped file (not NUL-terminated). */
long gguf_strings(const gguf *g, const char *key, const char ***ptrs, size_t **lens);

/* Tensor NAME as float32 in row-major order, its shape outermost first
 * (the reverse of GGUF's ne order, so a [out, in] matrix reads as
 * safetensors gives it) in SHAPE, the number of dims in *NDIM. NULL when
 * there is no such tensor or its type is not F32, F16, BF16 or Q8_0
 * (message in ERR). */
const float *gguf_f32(gguf *g, const char *name, int64_t *shape, int *ndim, buf *err);
int gguf_has(const gguf *g, const char *name);

/* The numbers of the array KEY (any integer or float element type) as
 * float or int32: their count, or -1 when KEY is not a numeric array;
 * *OUT receives a new array (caller frees). */
long gguf_floats(const gguf *g, const char *key, float **out);
long gguf_ints(const gguf *g, const char *key, int32_t **out);

/* The shape of tensor NAME as gguf_f32 gives it, without widening it: 0
 * when there is no such tensor or gguf_f32 would not read it. */
int gguf_shape(const gguf *g, const char *name, int64_t *shape, int *ndim);

/* Row ROW of the matrix NAME widened into OUT (shape[1] floats), without
 * widening the rest (a token embedding table is read row by row). */
int gguf_row(const gguf *g, const char *name, int64_t row, float *out);

/* As st_fingerprint: a hash of samples of the file, 16 hex digits. */
void gguf_fingerprint(const gguf *g, char out[17]);

#endif
