/*
 * fuzz_text.c - libFuzzer harness for the text parsers that take what an
 * agent or a user sends: the first byte picks one. 0: the credential
 * filter (never reads past the text; the same answer twice). 1: message
 * sanitizing (output is valid UTF-8 when the input is). 2: JSONL
 * transcripts (every text line maps to a JSONL line within the input).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/sanitize.h"
#include "text/secrets.h"
#include "text/transcript.h"
#include "util/buf.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 3;
    /* An exact-size copy, so that a read past the end is seen by ASan. */
    size_t n = size - 1;
    char *s = malloc(n ? n : 1);
    if (!s)
        return 0;
    memcpy(s, data + 1, n);
    if (which == 0) {
        const char *a = secret_find(s, n), *b = secret_find(s, n);
        if (a != b)
            abort();
    } else if (which == 1) {
        buf out;
        buf_init(&out, 1 << 24);
        if (sanitize_message(s, n, &out) == 0 && utf8_valid(s, n) && out.len &&
            !utf8_valid(out.data, out.len))
            abort();
        buf_cleanup(&out);
    } else {
        transcript t;
        transcript_init(&t);
        if (transcript_flatten(s, n, &t) == 0) {
            size_t lines = 1;
            for (size_t i = 0; i < n; i++)
                lines += s[i] == '\n';
            for (size_t i = 0; i < t.n; i++)
                if (t.lines[i] == 0 || t.lines[i] > lines)
                    abort();
        }
        transcript_cleanup(&t);
    }
    free(s);
    return 0;
}
