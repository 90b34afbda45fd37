/*
 * dsn.c - connection strings and the names put into SQL, as text: removing
 * credentials from a DSN, a URL (or any message that may quote one) and
 * checking an identifier. No connection here: the configuration checks its
 * store settings with these and masks what it prints, the PostgreSQL
 * backend its messages and names, the HTTP providers their errors.
 */
#include "text/dsn.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "text/secrets.h"

static int ci_prefix(const char *s, const char *p)
{
    for (; *p; s++, p++)
        if (tolower((unsigned char)*s) != *p)
            return 0;
    return 1;
}

/* Whether the query parameter NAME (N bytes) carries a credential: key,
 * token, secret, password, sig, signature, credential, alone or as the
 * last word of a longer name (api_key, access_token, client_secret,
 * X-Amz-Signature), and apikey, passwd, pwd, sslpassword, auth. "monkey"
 * is not; a harmless name caught by these is only shown masked. */
static int credential_param(const char *name, size_t n)
{
    static const char *const words[] = {"key",       "token",      "secret", "password",
                                        "signature", "credential", "sig"};
    static const char *const whole[] = {"apikey", "passwd", "pwd", "sslpassword", "auth",
                                        "authorization"};
    char low[64];
    if (n == 0 || n >= sizeof low)
        return 0;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof whole / sizeof *whole; i++)
        if (!strcmp(low, whole[i]))
            return 1;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t wl = strlen(words[i]);
        if (n >= wl && !strcmp(low + n - wl, words[i]) &&
            (n == wl || strchr("_-.", low[n - wl - 1])))
            return 1;
    }
    return 0;
}

void dsn_redact(buf *out, const char *s, const char *secret)
{
    buf tmp;
    buf_init(&tmp, 0);
    const char *p = s ? s : "";
    while (*p) {
        /* scheme://user:SECRET@host */
        if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
            const char *u = p + 3, *end = u;
            while (*end && *end != '/' && *end != '?' && *end != ' ' && *end != '\n' &&
                   *end != '"' && *end != '\'')
                end++;
            const char *at = NULL;
            for (const char *q = u; q < end; q++)
                if (*q == '@')
                    at = q;
            const char *colon = at ? memchr(u, ':', (size_t)(at - u)) : NULL;
            if (at && secret_find(u, (size_t)((colon ? colon : at) - u))) {
                /* https://TOKEN@host: a token given as the user name */
                buf_puts(&tmp, colon ? "://***:***" : "://***");
                p = at;
                continue;
            }
            if (colon) {
                buf_append(&tmp, p, (size_t)(colon + 1 - p));
                buf_puts(&tmp, "***");
                p = at;
                continue;
            }
            buf_append(&tmp, p, 3);
            p += 3;
            continue;
        }
        /* password=VALUE, password = 'VAL UE', ?password=VALUE */
        if (ci_prefix(p, "password") &&
            (p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            const char *q = p + 8;
            while (*q == ' ')
                q++;
            if (*q == '=') {
                q++;
                while (*q == ' ')
                    q++;
                if (*q == '\'' || *q == '"') {
                    char quote = *q++;
                    while (*q && *q != quote) {
                        if (*q == '\\' && q[1])
                            q++;
                        q++;
                    }
                    if (*q)
                        q++;
                } else {
                    while (*q && *q != ' ' && *q != '&' && *q != '\n' && *q != '\t')
                        q++;
                }
                buf_puts(&tmp, "password=***");
                p = q;
                continue;
            }
        }
        /* ?api_key=VALUE, &token=VALUE, #access_token=VALUE */
        if (p > s && (p[-1] == '?' || p[-1] == '&' || p[-1] == ';' || p[-1] == '#')) {
            size_t n = 0;
            while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-' || p[n] == '.')
                n++;
            if (p[n] == '=' && credential_param(p, n)) {
                const char *q = p + n + 1;
                while (*q && !strchr("&#; \t\n\"'<>", *q))
                    q++;
                buf_append(&tmp, p, n + 1);
                buf_puts(&tmp, "***");
                p = q;
                continue;
            }
        }
        buf_putc(&tmp, *p++);
    }
    const char *t = tmp.data ? tmp.data : "";
    size_t sl = secret ? strlen(secret) : 0;
    if (sl >= 3) { /* shorter "secrets" would shred ordinary words */
        const char *hit;
        while ((hit = strstr(t, secret)) != NULL) {
            buf_append(out, t, (size_t)(hit - t));
            buf_puts(out, "***");
            t = hit + sl;
        }
    }
    buf_puts(out, t);
    buf_cleanup(&tmp);
}

char *mnemo_redact(const char *text)
{
    if (!text)
        return NULL;
    buf b;
    buf_init(&b, 0);
    dsn_redact(&b, text, NULL);
    return buf_detach(&b); /* NULL when out of memory */
}

static int part_valid(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

int dsn_ident_valid(const char *name)
{
    if (!name)
        return 0;
    const char *dot = strchr(name, '.');
    if (!dot)
        return part_valid(name, strlen(name));
    return !strchr(dot + 1, '.') && part_valid(name, (size_t)(dot - name)) &&
           part_valid(dot + 1, strlen(dot + 1));
}
