/*
 * secrets.c - credential patterns (see secrets.h).
 *
 * A prefix alone is not enough: "sk-" must be followed by a long run of
 * key characters, "password=" by a value, so that "the sk-learn docs" or
 * "reset my password" are not refused.
 */
#include "text/secrets.h"

#include "mnemo.h"

#include <math.h>
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

static int alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int hexch(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int b64url(unsigned char c) { return alnum(c) || c == '_' || c == '-'; }
static int b64(unsigned char c) { return alnum(c) || c == '+' || c == '/'; }

/* Whether one of the words of KEYS (lower case, NULL-terminated) is within
 * WINDOW bytes before P: the keyword anchor of generic rules, so that a
 * commit hash or a checksum alone is not a secret. */
static int near_keyword(const char *s, const char *p, size_t window, const char *const *keys)
{
    const char *from = (size_t)(p - s) > window ? p - window : s;
    for (size_t i = 0; keys[i]; i++)
        if (find_ci(s, p, keys[i], from))
            return 1;
    return 0;
}

/* A run that looks generated: long, upper and lower case letters and
 * digits, and close to the 5.95 bits a character of random base62 carries
 * (English words and identifiers stay far below). */
static int high_entropy(const char *p, size_t n)
{
    if (n < 32 || n > 512)
        return 0;
    int up = 0, lo = 0, dig = 0, count[256] = {0};
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        up |= c >= 'A' && c <= 'Z';
        lo |= c >= 'a' && c <= 'z';
        dig |= c >= '0' && c <= '9';
        count[c]++;
    }
    if (!(up && lo && dig))
        return 0;
    /* Words: in English and in identifiers a lower-case letter is mostly
     * followed by another (three times in four); in random base62, by one
     * of 26 of 62 characters. */
    size_t lower = 0, lower_lower = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] >= 'a' && p[i] <= 'z') {
            lower++;
            lower_lower += p[i + 1] >= 'a' && p[i + 1] <= 'z';
        }
    if (lower && (double)lower_lower / (double)lower > 0.6)
        return 0;
    double h = 0;
    for (int c = 0; c < 256; c++)
        if (count[c]) {
            double q = (double)count[c] / (double)n;
            h -= q * log2(q);
        }
    return h >= 4.2;
}

/* "scheme://user:password@host": credentials in a URL. */
static int url_credentials(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && ((*q >= 'a' && *q <= 'z') || *q == '+' || (*q >= '0' && *q <= '9')))
        q++;
    if (q == p || end - q < 3 || memcmp(q, "://", 3) != 0)
        return 0;
    q += 3;
    const char *colon = NULL;
    for (; q < end && *q != '/' && *q != ' ' && *q != '\n' && *q != '@'; q++)
        if (*q == ':' && !colon)
            colon = q;
    return q < end && *q == '@' && colon && q - colon > 1 && colon > p;
}

const char *secret_find(const char *text, size_t len)
{
    const char *s = text, *end = text + len;
    static const char *const token_words[] = {"token", "key", "secret", "auth", "bearer",
                                              "password", "credential", NULL};
    static const char *const aws_words[] = {"aws", NULL};
    for (const char *p = s; p < end; p++) {
        if (!at_word(s, p))
            continue;
        size_t left = (size_t)(end - p);
        if (left > 3 && (p[0] | 0x20) == 's' && (p[1] | 0x20) == 'k' && p[2] == '-' &&
            run(p + 3, end, keych) >= 20)
            return "an API key (sk-...)";
        if (left > 8 && (!memcmp(p, "sk_live_", 8) || !memcmp(p, "rk_live_", 8) ||
                         !memcmp(p, "sk_test_", 8) || !memcmp(p, "rk_test_", 8)) &&
            run(p + 8, end, alnum) >= 16)
            return "a Stripe key (sk_live_...)";
        if (left > 4 && !memcmp(p, "npm_", 4) && run(p + 4, end, alnum) >= 36)
            return "an npm token (npm_...)";
        if (left > 3 && !memcmp(p, "hf_", 3) && run(p + 3, end, alnum) >= 30)
            return "a Hugging Face token (hf_...)";
        if (left > 3 && !memcmp(p, "SG.", 3)) {
            size_t a = run(p + 3, end, b64url);
            if (a >= 16 && p + 3 + a < end && p[3 + a] == '.' &&
                run(p + 4 + a, end, b64url) >= 30)
                return "a SendGrid key (SG....)";
        }
        if (left >= 34 && p[0] == 'S' && p[1] == 'K' && run(p + 2, end, hexch) == 32 &&
            !keych((unsigned char)(p + 34 < end ? p[34] : ' ')))
            return "a Twilio API key (SK...)";
        if (left > 3 && !memcmp(p, "eyJ", 3)) { /* a JWT: header.payload.signature */
            size_t a = run(p, end, b64url);
            if (a >= 10 && end - (p + a) > 4 && p[a] == '.' && !memcmp(p + a + 1, "eyJ", 3)) {
                size_t b = run(p + a + 1, end, b64url);
                if (b >= 10 && p + a + 1 + b < end && p[a + 1 + b] == '.' &&
                    run(p + a + 2 + b, end, b64url) >= 16)
                    return "a JSON Web Token (eyJ...)";
            }
        }
        if ((p[0] == 'M' || p[0] == 'N' || p[0] == 'O') && left > 60) { /* Discord bot */
            size_t a = run(p, end, b64url);
            if (a >= 23 && a <= 28 && p[a] == '.' && run(p + a + 1, end, b64url) == 6 &&
                p[a + 7] == '.' && run(p + a + 8, end, b64url) >= 27)
                return "a Discord token";
        }
        if (left > 11 && !memcmp(p, "AccountKey=", 11) && run(p + 11, end, b64) >= 40)
            return "an Azure storage key (AccountKey=...)";
        if (left > 33 && !memcmp(p, "https://hooks.slack.com/services/", 33))
            return "a Slack webhook URL";
        if (left > 8 && url_credentials(p, end))
            return "a URL with a password (scheme://user:password@host)";
        if (left >= 40 && hexch((unsigned char)*p)) {
            size_t h = run(p, end, hexch);
            if (h >= 32 && h <= 64 && !keych((unsigned char)(p + h < end ? p[h] : ' ')) &&
                near_keyword(s, p, 40, token_words))
                return "a hex token next to the word token, key or secret";
        }
        if (left >= 40 && b64((unsigned char)*p) && run(p, end, b64) == 40 &&
            near_keyword(s, p, 60, aws_words) && near_keyword(s, p, 60, token_words))
            return "an AWS secret access key";
        {
            size_t r = run(p, end, token68);
            size_t seps = 0;
            for (size_t i = 0; i < r; i++)
                seps += p[i] == '/' || p[i] == '.';
            int in_url = p - s >= 3 && !memcmp(p - 3, "://", 3);
            if (r >= 32 && seps <= 2 && !in_url && high_entropy(p, r))
                return "a high-entropy token";
        }
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
    for (const char *b = find_ci(s, end, "-----begin", s); b; b = find_ci(s, end, "-----begin", b + 1)) {
        const char *k = find_ci(s, end, "private key", b);
        if (k && k - b < 48)
            return "a private key block";
    }
    static const char *const names[] = {"password", "passwd", "token", "secret", "api_key",
                                        "apikey"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (assignment(s, end, names[i]))
            return "a password or token assignment (name=value)";
    return NULL;
}

const char *mnemo_secret_kind(const char *text, size_t len)
{
    return text ? secret_find(text, len) : NULL;
}
