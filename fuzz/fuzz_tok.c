/*
 * fuzz_tok.c - libFuzzer harness for the tokenizer: arbitrary bytes, both
 * modes, several languages. Every token must be valid UTF-8 within the
 * length cap and have sane offsets.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *ud, int flags, const char *token, int len, int start, int end)
{
    size_t n = *(size_t *)ud;
    (void)flags;
    if (len <= 0 || len > TOK_MAX_BYTES || !utf8_valid(token, (size_t)len) || start < 0 ||
        end < start || (size_t)end > n)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const langs[] = {"english", "none", "german"};
    if (size == 0)
        return 0;
    const char *lang = langs[data[0] % 3];
    tok *t;
    if (tok_new(lang, 1, &t))
        return 0;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    tok_run(t, text, n, 0, check, &n);
    tok_run(t, text, n, 1, check, &n);
    tok_free(t);
    return 0;
}
