/*
 * glob.c - glob matching with ** (see glob.h). Recursive with memo-free
 * backtracking; patterns are short and user-written, and recursion depth
 * is bounded by the pattern length.
 */
#include "util/glob.h"

#include <string.h>

static int class_match(const char **pp, char c)
{
    const char *p = *pp + 1; /* after '[' */
    int negate = 0, ok = 0;
    if (*p == '!' || *p == '^') {
        negate = 1;
        p++;
    }
    int first = 1;
    while (*p && (first || *p != ']')) {
        first = 0;
        char lo = *p;
        char hi = lo;
        if (p[1] == '-' && p[2] && p[2] != ']') {
            hi = p[2];
            p += 2;
        }
        if (c >= lo && c <= hi)
            ok = 1;
        p++;
    }
    if (*p != ']')
        return -1; /* unterminated: treat '[' literally */
    *pp = p + 1;
    return ok != negate;
}

static int match(const char *p, const char *s, int depth)
{
    if (depth > 64)
        return 0;
    while (*p) {
        if (p[0] == '*' && p[1] == '*') {
            p += 2;
            if (*p == '/') {
                /* A double star and a slash: zero or more whole segments. */
                p++;
                for (const char *t = s;; t++) {
                    if ((t == s || t[-1] == '/') && match(p, t, depth + 1))
                        return 1;
                    if (!*t)
                        return 0;
                }
            }
            for (const char *t = s;; t++) {
                if (match(p, t, depth + 1))
                    return 1;
                if (!*t)
                    return 0;
            }
        }
        if (*p == '*') {
            p++;
            for (const char *t = s;; t++) {
                if (match(p, t, depth + 1))
                    return 1;
                if (!*t || *t == '/')
                    return 0;
            }
        }
        if (!*s)
            return 0;
        if (*p == '?') {
            if (*s == '/')
                return 0;
            p++;
            s++;
            continue;
        }
        if (*p == '[') {
            const char *q = p;
            int r = class_match(&q, *s);
            if (r >= 0) {
                if (!r || *s == '/')
                    return 0;
                p = q;
                s++;
                continue;
            }
        }
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
    return *s == 0;
}

int glob_match(const char *pattern, const char *path)
{
    if (!strchr(pattern, '/')) {
        const char *base = strrchr(path, '/');
        return match(pattern, base ? base + 1 : path, 0);
    }
    return match(pattern, path, 0);
}
