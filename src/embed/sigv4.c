/*
 * sigv4.c - AWS credentials and Signature Version 4 (see sigv4.h).
 *
 * The canonical request follows botocore's SigV4Auth for services other
 * than S3: the path as sent, with dot and empty segments removed, is
 * URI-encoded once more, so a model id's ':' sent as %3A is signed as
 * %253A. libcurl's CURLOPT_AWS_SIGV4 (7.88) signs such paths otherwise, and
 * AWS would refuse it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed/sigv4.h"
#include "mnemo.h"
#include "util/sha.h"

/* ----------------------------------------------------------------------
 * Credentials
 * -------------------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void aws_creds_clear(aws_creds *c)
{
    char **keys[] = {&c->access_key, &c->secret_key, &c->token};
    for (size_t i = 0; i < 3; i++) {
        if (*keys[i]) {
            memset(*keys[i], 0, strlen(*keys[i]));
            free(*keys[i]);
            *keys[i] = NULL;
        }
    }
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

/* Reads the keys of section SECTION of the INI file PATH into C (the ones
 * not set yet). Returns 0 when the file is missing, 1 when it exists
 * without the section, 2 when the section is there. */
static int read_profile(const char *path, const char *section, aws_creds *c)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int in = 0, found = 1;
    while (fgets(line, sizeof line, f)) {
        char *s = trim(line);
        if (*s == '#' || *s == ';' || !*s)
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (end)
                *end = 0;
            in = strcmp(trim(s + 1), section) == 0;
            if (in)
                found = 2;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!in || !eq)
            continue;
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        char **dst = !strcmp(k, "aws_access_key_id")       ? &c->access_key
                     : !strcmp(k, "aws_secret_access_key") ? &c->secret_key
                     : !strcmp(k, "aws_session_token")     ? &c->token
                                                           : NULL;
        if (dst && !*dst && *v)
            *dst = strdup(v);
    }
    memset(line, 0, sizeof line);
    fclose(f);
    return found;
}

static int complete(const aws_creds *c) { return c->access_key && c->secret_key; }

int aws_creds_load(aws_creds *c, buf *err)
{
    memset(c, 0, sizeof *c);
    const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    if (id && secret) {
        c->access_key = strdup(id);
        c->secret_key = strdup(secret);
        const char *tok = env("AWS_SESSION_TOKEN");
        c->token = tok ? strdup(tok) : NULL;
        if (!c->access_key || !c->secret_key || (tok && !c->token)) {
            aws_creds_clear(c);
            return MNEMO_NOMEM;
        }
        snprintf(c->source, sizeof c->source, "the environment (AWS_ACCESS_KEY_ID%s)",
                 tok ? ", AWS_SESSION_TOKEN" : "");
        return MNEMO_OK;
    }
    const char *profile = env("AWS_PROFILE");
    if (!profile)
        profile = "default";
    const char *home = env("HOME");
    char cred[2048], conf[2048], section[300];
    if (env("AWS_SHARED_CREDENTIALS_FILE"))
        snprintf(cred, sizeof cred, "%s", env("AWS_SHARED_CREDENTIALS_FILE"));
    else
        snprintf(cred, sizeof cred, "%s/.aws/credentials", home ? home : "");
    if (env("AWS_CONFIG_FILE"))
        snprintf(conf, sizeof conf, "%s", env("AWS_CONFIG_FILE"));
    else
        snprintf(conf, sizeof conf, "%s/.aws/config", home ? home : "");
    /* The credentials file names a profile as it is; the config file as
     * "profile NAME", except the default one. */
    int in_cred = read_profile(cred, profile, c);
    const char *where = cred;
    int in_conf = -1;
    if (!complete(c)) {
        snprintf(section, sizeof section, "%s%s", strcmp(profile, "default") ? "profile " : "",
                 profile);
        in_conf = read_profile(conf, section, c);
        where = conf;
    }
    if (complete(c)) {
        snprintf(c->source, sizeof c->source, "profile '%.200s' in %.290s", profile, where);
        return MNEMO_OK;
    }
    static const char *const state[] = {"no such file", "no such profile",
                                        "the profile lacks aws_access_key_id or "
                                        "aws_secret_access_key"};
    buf_printf(err, "bedrock: no AWS credentials; tried AWS_BEARER_TOKEN_BEDROCK (unset), ");
    if (id || secret)
        buf_printf(err, "the environment (%s is set but %s is not), ",
                   id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                   id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    else
        buf_printf(err, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (unset), ");
    buf_printf(err, "profile '%s'%s in %s (%s) and %s (%s)", profile,
               env("AWS_PROFILE") ? " (AWS_PROFILE)" : "", cred, state[in_cred], conf,
               state[in_conf < 0 ? 0 : in_conf]);
    aws_creds_clear(c);
    return MNEMO_UNAVAILABLE;
}

/* ----------------------------------------------------------------------
 * Signing
 * -------------------------------------------------------------------- */

static void hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
    sha_ctx c;
    sha256_init(&c);
    sha_update(&c, p, n);
    sha_final_hex(&c, out);
}

/* Appends S[0..N) URI-encoded as AWS encodes: unreserved bytes and '/'
 * kept, everything else %XX. */
static void uri_encode(buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/')
            buf_putc(b, (char)ch);
        else
            buf_printf(b, "%%%02X", ch);
    }
}

/* The canonical URI of PATH (N bytes): its segments without empty, "." and
 * ".." ones (as botocore normalizes), URI-encoded. */
static void canonical_uri(buf *b, const char *path, size_t n)
{
    const char *seg[256];
    size_t len[256], k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        size_t l = j - i;
        if (l == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (k)
                k--;
        } else if (l && !(l == 1 && path[i] == '.') && k < 256) {
            seg[k] = path + i;
            len[k++] = l;
        }
        i = j + 1;
    }
    buf_putc(b, '/');
    for (size_t i = 0; i < k; i++) {
        if (i)
            buf_putc(b, '/');
        uri_encode(b, seg[i], len[i]);
    }
    if (k && n && path[n - 1] == '/')
        buf_putc(b, '/');
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The query's parameters sorted (they are sent encoded already). */
static void canonical_query(buf *b, const char *q, size_t n)
{
    char *copy = strndup(q, n), *parts[128] = {NULL};
    size_t k = 0;
    for (char *save = NULL, *p = copy ? strtok_r(copy, "&", &save) : NULL; p && k < 128;
         p = strtok_r(NULL, "&", &save))
        parts[k++] = p;
    if (k > 1)
        qsort(parts, k, sizeof *parts, cmp_str);
    for (size_t i = 0; i < k; i++)
        buf_printf(b, "%s%s%s", i ? "&" : "", parts[i], strchr(parts[i], '=') ? "" : "=");
    free(copy);
}

int sigv4_sign(const aws_creds *c, const char *region, const char *service, const char *method,
               const char *url, const char *content_type, const void *body, size_t blen,
               time_t now, buf *headers)
{
    /* scheme://[user@]host[:port]/path?query */
    const char *p = strstr(url, "://");
    int https = strncmp(url, "https", 5) == 0;
    p = p ? p + 3 : url;
    const char *hend = p + strcspn(p, "/?#");
    const char *at = memchr(p, '@', (size_t)(hend - p));
    if (at)
        p = at + 1;
    size_t hlen = (size_t)(hend - p);
    const char *colon = memchr(p, ':', hlen);
    if (colon && !strncmp(colon, https ? ":443" : ":80", (size_t)(hend - colon)) &&
        (size_t)(hend - colon) == (https ? 4u : 3u))
        hlen = (size_t)(colon - p); /* a default port is not sent in Host */
    const char *path = hend, *pend = path + strcspn(path, "?#");
    const char *query = *pend == '?' ? pend + 1 : pend;
    size_t qlen = strcspn(query, "#");

    char date[17], day[9];
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
    memcpy(day, date, 8);
    day[8] = 0;
    char payload[65];
    sha256_hex(body, blen, payload);

    buf cr, sts;
    buf_init(&cr, 1u << 20);
    buf_init(&sts, 4096);
    buf_printf(&cr, "%s\n", method);
    canonical_uri(&cr, path, (size_t)(pend - path));
    buf_putc(&cr, '\n');
    canonical_query(&cr, query, qlen);
    buf_putc(&cr, '\n');
    const char *signed_headers =
        c->token ? "content-type;host;x-amz-date;x-amz-security-token"
                 : "content-type;host;x-amz-date";
    buf_printf(&cr, "content-type:%s\nhost:%.*s\nx-amz-date:%s\n", content_type, (int)hlen, p,
               date);
    if (c->token)
        buf_printf(&cr, "x-amz-security-token:%s\n", c->token);
    buf_printf(&cr, "\n%s\n%s", signed_headers, payload);
    char crhash[65];
    sha256_hex(cr.data ? cr.data : "", cr.len, crhash);
    buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", date, day, region,
               service, crhash);

    /* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), service), "aws4_request") */
    unsigned char k[32];
    buf key;
    buf_init(&key, 0);
    buf_printf(&key, "AWS4%s", c->secret_key);
    hmac_sha256(key.data ? key.data : "", key.len, day, strlen(day), k);
    if (key.data)
        memset(key.data, 0, key.len);
    buf_cleanup(&key);
    hmac_sha256(k, 32, region, strlen(region), k);
    hmac_sha256(k, 32, service, strlen(service), k);
    hmac_sha256(k, 32, "aws4_request", 12, k);
    unsigned char sig[32];
    hmac_sha256(k, 32, sts.data ? sts.data : "", sts.len, sig);
    memset(k, 0, sizeof k);
    char sighex[65];
    hex(sig, 32, sighex);

    buf_printf(headers, "x-amz-date: %s\n", date);
    if (c->token)
        buf_printf(headers, "x-amz-security-token: %s\n", c->token);
    buf_printf(headers,
               "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
               "SignedHeaders=%s, Signature=%s\n",
               c->access_key, day, region, service, signed_headers, sighex);
    int rc = buf_err(&cr) || buf_err(&sts) ? MNEMO_NOMEM : MNEMO_OK;
    buf_cleanup(&cr);
    buf_cleanup(&sts);
    return rc;
}
