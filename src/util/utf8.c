/*
 * utf8.c - UTF-8 decoding, repair and CJK classification (see utf8.h).
 */
#include "util/utf8.h"

int utf8_decode(const char *s, size_t n, int32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    int32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2; v = c & 0x1f; min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3; v = c & 0x0f; min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4; v = c & 0x07; min = 0x10000;
    } else {
        *cp = -1;
        return 1;
    }
    if ((size_t)len > n) {
        *cp = -1;
        return 1;
    }
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = -1;
        return 1;
    }
    *cp = v;
    return len;
}

int utf8_put(int32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

int utf8_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        int32_t cp;
        int len = utf8_decode(s + i, n - i, &cp);
        if (cp < 0)
            return 0;
        i += (size_t)len;
    }
    return 1;
}

int utf8_repair(buf *out, const char *s, size_t n)
{
    size_t i = 0, start = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        int32_t cp;
        int len = utf8_decode(s + i, n - i, &cp);
        if (cp < 0) {
            buf_append(out, s + start, i - start);
            buf_append(out, "\xef\xbf\xbd", 3);
            i += 1;
            start = i;
        } else {
            i += (size_t)len;
        }
    }
    return buf_append(out, s + start, n - start);
}

size_t utf8_count(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += ((unsigned char)s[i] & 0xc0) != 0x80;
    return count;
}

size_t utf8_prefix(const char *s, size_t n, size_t maxcp)
{
    size_t i = 0, cps = 0;
    while (i < n && cps < maxcp) {
        int32_t cp;
        i += (size_t)utf8_decode(s + i, n - i, &cp);
        cps++;
    }
    return i;
}

int utf8_is_cjk(int32_t cp)
{
    if (cp < 0x1100)
        return 0;
    return (cp >= 0x1100 && cp <= 0x11ff)      /* Hangul Jamo */
        || (cp >= 0x2e80 && cp <= 0x2fdf)      /* CJK and Kangxi radicals */
        || cp == 0x3005 || cp == 0x3007        /* 々 〇 */
        || (cp >= 0x3021 && cp <= 0x3029)      /* Hangzhou numerals */
        || (cp >= 0x3038 && cp <= 0x303b)
        || (cp >= 0x3041 && cp <= 0x309f)      /* Hiragana */
        || (cp >= 0x30a0 && cp <= 0x30ff)      /* Katakana, incl. ー */
        || (cp >= 0x3130 && cp <= 0x318f)      /* Hangul compatibility Jamo */
        || (cp >= 0x31f0 && cp <= 0x31ff)      /* Katakana phonetic extensions */
        || (cp >= 0x3400 && cp <= 0x4dbf)      /* CJK extension A */
        || (cp >= 0x4e00 && cp <= 0x9fff)      /* CJK unified ideographs */
        || (cp >= 0xa960 && cp <= 0xa97f)      /* Hangul Jamo extended A */
        || (cp >= 0xac00 && cp <= 0xd7ff)      /* Hangul syllables, Jamo ext B */
        || (cp >= 0xf900 && cp <= 0xfaff)      /* CJK compatibility ideographs */
        || (cp >= 0xff66 && cp <= 0xffdc)      /* halfwidth Katakana and Hangul */
        || (cp >= 0x20000 && cp <= 0x3134f);   /* CJK extensions B..G */
}

int utf8_is_space(int32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || c == ' ' || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000;
}
