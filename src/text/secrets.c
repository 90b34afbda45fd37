/*
 * secrets.c - credential patterns (see secrets.h).
 *
 * A prefix alone is not enough: "sk-" must be followed by a long run of
 * key characters, "password=" by a value, so that "the sk-learn docs" or
 * "reset my password" are not refused.
 *
 * The rules read the text as written and, when it is not plain ASCII, as
 * normalised: NFKC (a full-width ＡＫＩＡ... is AKIA...) without format
 * characters (a zero-width space or a soft hyphen inside a key). A key
 * split in two by one space or punctuation mark is read whole. What is
 * stored is never the normalised text: it exists only here.
 */
#include "text/secrets.h"

#include "mnemo.h"
#include "util/buf.h"
#include "util/utf8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

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

/* The share of the lower-case letters of P (N bytes) followed by another:
 * in English and in identifiers most are (three times in four); in random
 * base62, one in 26 of 62. 0 without lower-case letters. */
static double words_share(const char *p, size_t n)
{
    size_t lower = 0, lower_lower = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] >= 'a' && p[i] <= 'z') {
            lower++;
            lower_lower += p[i + 1] >= 'a' && p[i + 1] <= 'z';
        }
    return lower ? (double)lower_lower / (double)lower : 0;
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
    if (!(up && lo && dig) || words_share(p, n) > 0.6)
        return 0;
    double h = 0;
    for (int c = 0; c < 256; c++)
        if (count[c]) {
            double q = (double)count[c] / (double)n;
            h -= q * log2(q);
        }
    return h >= 4.2;
}

static int has_digit(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] >= '0' && p[i] <= '9')
            return 1;
    return 0;
}

/* Whether the N bytes at P are all in SET (the text may not end in NUL). */
static int all_in(const char *p, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!p[i] || !strchr(set, p[i]))
            return 0;
    return 1;
}

/* A word, not part of a generated string: no digit, and a lower-case
 * letter mostly followed by another (see high_entropy). */
static int wordlike(const char *p, size_t n)
{
    return !has_digit(p, n) && words_share(p, n) > 0.6;
}

/* Length of the token of class CLS at P, read whole when one space or
 * punctuation mark splits it ("ghp_abcd1234 efgh5678..."): the second part
 * counts when it has 4 or more characters, one of the two holds a digit
 * and neither reads as a word, so that "ghp_ tokens are GitHub's" or "the
 * sk-learn LogisticRegression2 class" stay prose. */
static size_t token_run(const char *p, const char *end, int (*cls)(unsigned char))
{
    size_t a = run(p, end, cls);
    const char *q = p + a;
    if (end - q < 5 || !(*q == ' ' || (*q > ' ' && *q < 0x7f && !alnum((unsigned char)*q))))
        return a;
    size_t b = run(q + 1, end, cls);
    if (b < 4 || !(has_digit(p, a) || has_digit(q + 1, b)) || wordlike(p, a) ||
        wordlike(q + 1, b))
        return a;
    return a + b;
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

/* ----------------------------------------------------------------------
 * Passwords in prose and in .pgpass lines
 * -------------------------------------------------------------------- */

/* The word at P (ASCII letters), case-insensitively, or 0. */
static size_t word_is(const char *p, const char *end, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((p[i] | 0x20) != w[i])
            return 0;
    return p + n == end || !keych((unsigned char)p[n]) ? n : 0;
}

static const char *skip_spaces(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* A value after "password is" that is a password, not a word: quoted, or
 * with a digit or a symbol; not a path, a variable, a URL, a mask
 * (********) or a standard's name (AES-256, UTF-8). A PIN: 4 to 8 digits. */
static int password_value(const char *v, size_t n, int quoted, int pin)
{
    while (n && !quoted && all_in(v + n - 1, 1, ".,;:!?)]}\"'"))
        n--;
    if (pin)
        return n >= 4 && n <= 8 && all_in(v, n, "0123456789");
    if (n < 4 || n > 128 || all_in(v, 1, "/~$%{<"))
        return 0;
    int letter = 0, symbol = 0, digit = has_digit(v, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        letter |= (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
        symbol |= c > ' ' && c < 0x7f && !alnum(c) && !strchr("-_.'", c);
    }
    if (!letter && !digit)
        return 0; /* ********, ---- */
    if (find_ci(v, v + n, "://", v))
        return 0;
    size_t l = run(v, v + n, alnum);
    if (l >= 2 && l < n && v[l] == '-' && all_in(v + l + 1, n - l - 1, "0123456789.") &&
        !has_digit(v, l))
        return 0; /* AES-256, SHA-1, UTF-8, ISO-8601 */
    return quoted || digit || symbol;
}

/* "my bank password is hunter2", "password: hunter2", "the pin is 4821",
 * "my password for the bank was Tr0ub4dor&3": a password word, perhaps
 * "for|to|of|on|at" and up to three words (a PIN: "code" or "number"),
 * then is, was, : or =, then a value password_value takes. */
static int stated_password(const char *s, const char *end)
{
    static const char *const words[] = {"password", "passwd", "passphrase", "passcode",
                                        "pwd",      "pw",     "pin"};
    for (const char *p = s; p < end; p++) {
        if (!at_word(s, p))
            continue;
        size_t w = 0;
        int pin = 0;
        for (size_t i = 0; !w && i < sizeof words / sizeof *words; i++)
            if ((w = word_is(p, end, words[i])))
                pin = !strcmp(words[i], "pin");
        if (!w)
            continue;
        const char *q = skip_spaces(p + w, end);
        size_t f;
        if (pin && ((f = word_is(q, end, "code")) || (f = word_is(q, end, "number"))))
            q = skip_spaces(q + f, end);
        static const char *const preps[] = {"for", "to", "of", "on", "at", NULL};
        for (size_t i = 0; !pin && preps[i]; i++)
            if ((f = word_is(q, end, preps[i]))) {
                q = skip_spaces(q + f, end);
                for (int k = 0; k < 3 && q < end && keych((unsigned char)*q) &&
                                !word_is(q, end, "is") && !word_is(q, end, "was");
                     k++)
                    q = skip_spaces(q + run(q, end, keych), end);
                break;
            }
        if ((f = word_is(q, end, "is")) || (f = word_is(q, end, "was"))) {
            q = skip_spaces(q + f, end);
            if (q < end && *q == ':')
                q = skip_spaces(q + 1, end);
        } else if (q < end && (*q == ':' || *q == '=')) {
            q = skip_spaces(q + 1, end);
        } else {
            continue;
        }
        int quoted = q < end && (*q == '"' || *q == '\'' || *q == '`');
        const char *v = q + quoted, *ve = v;
        while (ve < end && (quoted ? *ve != *q : *ve != ' ' && *ve != '\t') && *ve != '\n')
            ve++;
        if (quoted && (ve >= end || *ve != *q))
            continue;
        if (password_value(v, (size_t)(ve - v), quoted, pin))
            return 1;
    }
    return 0;
}

/* Splits the N bytes at P at colons (not at \: escaped ones) into F and
 * FL; the number of fields, MAX + 1 when there are more than MAX. */
static size_t colon_fields(const char *p, size_t n, const char **f, size_t *fl, size_t max)
{
    size_t k = 0, from = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] == '\\') {
            i++;
            continue;
        }
        if (i < n && p[i] != ':')
            continue;
        if (k == max)
            return max + 1;
        f[k] = p + from;
        fl[k++] = i - from;
        from = i + 1;
    }
    return k;
}

/* A host of a .pgpass line: *, or a name or an IPv4 address. */
static int pgpass_host(const char *h, size_t n)
{
    if (n == 1 && *h == '*')
        return 1;
    int letter_or_dot = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (!(alnum(c) || c == '.' || c == '-' || c == '_'))
            return 0;
        letter_or_dot |= c == '.' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    }
    return letter_or_dot;
}

/* A .pgpass line, hostname:port:database:username:password: a run without
 * white space (quotes and brackets around it aside) of exactly five fields
 * split by colons, none empty, the host a name or address (or *), the
 * port 1 to 5 digits (or *). Times (10:30:00), host:port and IPv6
 * addresses have fewer fields, more, or empty ones. */
static int pgpass_line(const char *s, const char *end)
{
    const char *p = s;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || all_in(p, 1, "\"'`([<")))
            p++;
        const char *e = p;
        while (e < end && *e != ' ' && *e != '\t' && *e != '\n')
            e++;
        const char *next = e;
        while (e > p && all_in(e - 1, 1, "\"'`)]>.,;"))
            e--;
        const char *f[5];
        size_t fl[5];
        if (e > p && colon_fields(p, (size_t)(e - p), f, fl, 5) == 5 && fl[2] && fl[3] &&
            fl[4] && pgpass_host(f[0], fl[0]) &&
            ((fl[1] == 1 && *f[1] == '*') ||
             (fl[1] && fl[1] <= 5 && all_in(f[1], fl[1], "0123456789") && *f[1] != '0')))
            return 1;
        p = next;
    }
    return 0;
}

/* ----------------------------------------------------------------------
 * The rules, and the text they read
 * -------------------------------------------------------------------- */

/* What the rules find in S (LEN bytes), or NULL. */
static const char *match(const char *text, size_t len)
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
            token_run(p + 3, end, keych) >= 20)
            return "an API key (sk-...)";
        if (left > 8 && (!memcmp(p, "sk_live_", 8) || !memcmp(p, "rk_live_", 8) ||
                         !memcmp(p, "sk_test_", 8) || !memcmp(p, "rk_test_", 8)) &&
            token_run(p + 8, end, alnum) >= 16)
            return "a Stripe key (sk_live_...)";
        if (left > 4 && !memcmp(p, "npm_", 4) && token_run(p + 4, end, alnum) >= 36)
            return "an npm token (npm_...)";
        if (left > 3 && !memcmp(p, "hf_", 3) && token_run(p + 3, end, alnum) >= 30)
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
            token_run(p + 4, end, keych) >= 20)
            return "a GitHub token (ghp_...)";
        if (left > 11 && !memcmp(p, "github_pat_", 11) && token_run(p + 11, end, keych) >= 20)
            return "a GitHub token (github_pat_...)";
        if (left >= 20 && (!memcmp(p, "AKIA", 4) || !memcmp(p, "ASIA", 4)) &&
            token_run(p + 4, end, upper_or_digit) >= 16)
            return "an AWS access key (AKIA...)";
        if (left > 5 && !memcmp(p, "xox", 3) && strchr("bpaors", p[3]) && p[4] == '-' &&
            token_run(p + 5, end, keych) >= 10)
            return "a Slack token (xox?-...)";
        if (left > 6 && !memcmp(p, "glpat-", 6) && token_run(p + 6, end, keych) >= 20)
            return "a GitLab token (glpat-...)";
        if (left > 4 && !memcmp(p, "AIza", 4) && token_run(p + 4, end, keych) >= 30)
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
    if (stated_password(s, end))
        return "a password stated in the text (password is ...)";
    if (pgpass_line(s, end))
        return "a .pgpass line (host:port:database:user:password)";
    return NULL;
}

/* S (N bytes of UTF-8) as the rules read it when it is not ASCII: NFKC,
 * without format characters (general category Cf: zero-width spaces and
 * joiners, soft hyphens, byte order marks, bidirectional controls) or
 * other default-ignorable ones. MNEMO_INVALID for invalid UTF-8. */
static int normalise(const char *s, size_t n, buf *out)
{
    utf8proc_uint8_t *nfkc = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfkc,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    if (k < 0)
        return k == UTF8PROC_ERROR_NOMEM ? MNEMO_NOMEM : MNEMO_INVALID;
    const char *t = (const char *)nfkc;
    for (size_t i = 0; i < (size_t)k;) {
        int32_t cp;
        int l = utf8_decode(t + i, (size_t)k - i, &cp);
        if (cp < 0 || !(utf8proc_category(cp) == UTF8PROC_CATEGORY_CF ||
                        utf8proc_get_property(cp)->ignorable))
            buf_append(out, t + i, (size_t)l);
        i += (size_t)l;
    }
    free(nfkc);
    return buf_err(out);
}

const char *secret_find(const char *text, size_t len)
{
    const char *kind = match(text, len);
    size_t i = 0;
    while (i < len && (unsigned char)text[i] < 0x80)
        i++;
    if (kind || i == len)
        return kind; /* ASCII: NFKC leaves it as it is */
    buf norm;
    buf_init(&norm, 0);
    int rc = normalise(text, len, &norm);
    if (rc == MNEMO_NOMEM) /* unchecked is not clean */
        kind = "text that could not be checked for credentials (out of memory)";
    else if (!rc && norm.len)
        kind = match(norm.data, norm.len);
    buf_cleanup(&norm);
    return kind;
}

const char *mnemo_secret_kind(const char *text, size_t len)
{
    return text ? secret_find(text, len) : NULL;
}
