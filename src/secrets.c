/*
 * secrets.c - credential patterns (see secrets.h).
 *
 * A prefix alone is not enough: "sk-" must be followed by a long run of
 * key characters, "password=" by a value, so that "the sk-learn docs" or
 * "reset my password" are not refused.
 */
#include "secrets.h"

#include <string.h>

static int keych(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '_' || c == '-';
}

/* Length of the run of key characters at P (bounded by END). */
static size_t run(const char *p, const char *end, int (*cls)(unsigned char))
{
    size_t n = 0;
    while (p + n < end && cls((unsigned char)p[n]))
        n++;
    return n;
}

static int upper_or_digit(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); }

static int token68(unsigned char c)
{
    return keych(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '=';
}

/* Starts a word: at the beginning or after a non-key character. */
static int at_word(const char *s, const char *p)
{
    return p == s || !keych((unsigned char)p[-1]);
}

static const char *find_ci(const char *s, const char *end, const char *needle, const char *from)
{
    size_t n = strlen(needle);
    for (const char *p = from; p + n <= end; p++) {
        size_t i = 0;
        while (i < n && (p[i] | 0x20) == needle[i])
            i++;
        if (i == n)
            return p;
    }
    (void)s;
    return NULL;
}

/* "password = x", "token: x", "secret=x", "api_key=x": a name, then = or :,
 * then a value. */
static int assignment(const char *s, const char *end, const char *name)
{
    for (const char *p = find_ci(s, end, name, s); p; p = find_ci(s, end, name, p + 1)) {
        if (!at_word(s, p) && !(p > s && (p[-1] == '_' || p[-1] == '-')))
            continue;
        const char *q = p + strlen(name);
        while (q < end && (*q == '_' || keych((unsigned char)*q)) && q - p < 24)
            q++; /* password_hash, token_value, ... */
        while (q < end && *q == ' ')
            q++;
        if (q >= end || (*q != '=' && *q != ':'))
            continue;
        int colon = *q == ':';
        q++;
        while (q < end && (*q == ' ' || *q == '"' || *q == '\''))
            q++;
        size_t v = 0;
        while (q + v < end && q[v] != ' ' && q[v] != '\n' && q[v] != '"' && q[v] != '\'' &&
               q[v] != ',' && q[v] != ';')
            v++;
        /* "token=x1y2" is a value; "token: rotate monthly" is prose, so
         * after a colon the value must look generated (letters and digits). */
        int alpha = 0, digit = 0;
        for (size_t i = 0; i < v; i++) {
            alpha |= ((q[i] | 0x20) >= 'a' && (q[i] | 0x20) <= 'z');
            digit |= q[i] >= '0' && q[i] <= '9';
        }
        if (colon ? v >= 8 && alpha && digit : v >= 4)
            return 1;
    }
    return 0;
}

const char *secret_find(const char *text, size_t len)
{
    const char *s = text, *end = text + len;
    for (const char *p = s; p < end; p++) {
        if (!at_word(s, p))
            continue;
        size_t left = (size_t)(end - p);
        if (left > 3 && !memcmp(p, "sk-", 3) && run(p + 3, end, keych) >= 20)
            return "an API key (sk-...)";
        if (left > 4 && (!memcmp(p, "ghp_", 4) || !memcmp(p, "gho_", 4) ||
                         !memcmp(p, "ghu_", 4) || !memcmp(p, "ghs_", 4) ||
                         !memcmp(p, "ghr_", 4)) &&
            run(p + 4, end, keych) >= 20)
            return "a GitHub token (ghp_...)";
        if (left > 11 && !memcmp(p, "github_pat_", 11) && run(p + 11, end, keych) >= 20)
            return "a GitHub token (github_pat_...)";
        if (left >= 20 && (!memcmp(p, "AKIA", 4) || !memcmp(p, "ASIA", 4)) &&
            run(p + 4, end, upper_or_digit) >= 16)
            return "an AWS access key (AKIA...)";
        if (left > 5 && !memcmp(p, "xox", 3) && strchr("bpaors", p[3]) && p[4] == '-' &&
            run(p + 5, end, keych) >= 10)
            return "a Slack token (xox?-...)";
        if (left > 6 && !memcmp(p, "glpat-", 6) && run(p + 6, end, keych) >= 20)
            return "a GitLab token (glpat-...)";
        if (left > 4 && !memcmp(p, "AIza", 4) && run(p + 4, end, keych) >= 30)
            return "a Google API key (AIza...)";
        if (left > 7 && (p[0] | 0x20) == 'b' && !strncmp(p + 1, "earer ", 6) &&
            run(p + 7, end, token68) >= 16)
            return "a bearer token (Bearer ...)";
    }
    if (find_ci(s, end, "-----begin", s) && find_ci(s, end, "private key-----", s))
        return "a private key block";
    static const char *const names[] = {"password", "passwd", "token", "secret", "api_key",
                                        "apikey"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (assignment(s, end, names[i]))
            return "a password or token assignment (name=value)";
    return NULL;
}
