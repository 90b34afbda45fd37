/*
 * fuzz_jsonvec.c - libFuzzer harness for the embedding-response scanner:
 * arbitrary bytes in the three formats must give a count or a clean error,
 * never a read past the input or a vector longer than the scratch space.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonvec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *ud, size_t index, const float *v, size_t n)
{
    (void)ud;
    (void)index;
    (void)v;
    if (n > 16)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    float scratch[16];
    char err[256];
    long n = jsonvec_scan(s, size - 1, data[0] % 3, scratch, 16, check, NULL, err, sizeof err);
    if (n < -1)
        abort();
    free(s);
    return 0;
}
