/*
 * sigv4.c - AWS credentials and Signature Version 4 (see sigv4.h).
 *
 * The canonical request follows botocore's SigV4Auth for services other
 * than S3: the path as sent, with dot and empty segments removed, is
 * URI-encoded once more, so a model id's ':' sent as %3A is signed as
 * %253A. libcurl's CURLOPT_AWS_SIGV4 (7.88) signs such paths otherwise, and
 * AWS would refuse it.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embed/sigv4.h"
#include "mnemo.h"
#include "util/sha.h"
#include "util/time.h"

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

/* The settings of one profile that mnemo reads, from either shared file. */
typedef struct profile {
    char *access_key, *secret_key, *token, *region, *process;
} profile;

static void profile_clear(profile *p)
{
    char **v[] = {&p->access_key, &p->secret_key, &p->token, &p->region, &p->process};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        if (*v[i]) {
            memset(*v[i], 0, strlen(*v[i]));
            free(*v[i]);
            *v[i] = NULL;
        }
    }
}

/* Reads the keys of section SECTION of the INI file PATH into C (the ones
 * not set yet). Returns 0 when the file is missing, 1 when it exists
 * without the section, 2 when the section is there. */
static int read_profile(const char *path, const char *section, profile *c)
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
                     : !strcmp(k, "region")                ? &c->region
                     : !strcmp(k, "credential_process")    ? &c->process
                                                           : NULL;
        if (dst && !*dst && *v)
            *dst = strdup(v);
    }
    memset(line, 0, sizeof line);
    fclose(f);
    return found;
}

static int complete(const profile *c) { return c->access_key && c->secret_key; }

/* The shared files and the profile, as the SDKs find them: AWS_PROFILE or
 * "default"; AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials;
 * AWS_CONFIG_FILE or ~/.aws/config, where the profile's section is
 * "profile NAME" (but "default"). */
typedef struct shared_files {
    const char *profile;
    char cred[2048], conf[2048], section[300];
} shared_files;

static void shared_files_find(shared_files *f)
{
    const char *home = env("HOME");
    f->profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
    if (env("AWS_SHARED_CREDENTIALS_FILE"))
        snprintf(f->cred, sizeof f->cred, "%s", env("AWS_SHARED_CREDENTIALS_FILE"));
    else
        snprintf(f->cred, sizeof f->cred, "%s/.aws/credentials", home ? home : "");
    if (env("AWS_CONFIG_FILE"))
        snprintf(f->conf, sizeof f->conf, "%s", env("AWS_CONFIG_FILE"));
    else
        snprintf(f->conf, sizeof f->conf, "%s/.aws/config", home ? home : "");
    snprintf(f->section, sizeof f->section, "%s%s", strcmp(f->profile, "default") ? "profile " : "",
             f->profile);
}

int aws_config_region(char *out, size_t n, char *src, size_t srcn)
{
    shared_files f;
    shared_files_find(&f);
    profile p = {0};
    read_profile(f.conf, f.section, &p);
    int found = p.region && *p.region;
    if (found) {
        snprintf(out, n, "%s", p.region);
        if (src)
            snprintf(src, srcn, "profile '%.200s' in %.1000s", f.profile, f.conf);
    }
    profile_clear(&p);
    return found;
}

/* ----------------------------------------------------------------------
 * credential_process
 * -------------------------------------------------------------------- */

/* How long a credential_process may take (an SSO helper may ask a browser). */
#define PROCESS_TIMEOUT_MS 60000
#define PROCESS_MAX_OUTPUT 65536

/* Splits CMD into words as botocore does (shlex, POSIX rules): blanks
 * separate, '...' is literal, "..." keeps \" and \\, a backslash outside
 * quotes escapes the next byte. Writes the words into OUT (NUL-separated)
 * and their starts into ARGV. Returns the count, or -1 for an unterminated
 * quote or too many words. */
static int split_words(const char *cmd, char *out, char **argv, int max)
{
    int argc = 0;
    const char *s = cmd;
    char *o = out;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (!*s)
            break;
        if (argc == max - 1)
            return -1;
        argv[argc++] = o;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
            if (*s == '\'') {
                const char *e = strchr(s + 1, '\'');
                if (!e)
                    return -1;
                memcpy(o, s + 1, (size_t)(e - s - 1));
                o += e - s - 1;
                s = e + 1;
            } else if (*s == '"') {
                for (s++; *s && *s != '"'; s++) {
                    if (*s == '\\' && (s[1] == '"' || s[1] == '\\' || s[1] == '$' || s[1] == '`'))
                        s++;
                    *o++ = *s;
                }
                if (*s != '"')
                    return -1;
                s++;
            } else if (*s == '\\' && s[1]) {
                *o++ = s[1];
                s += 2;
            } else {
                *o++ = *s++;
            }
        }
        *o++ = 0;
    }
    argv[argc] = NULL;
    return argc;
}

/* Runs ARGV without a shell, its standard output into OUT (at most
 * PROCESS_MAX_OUTPUT bytes); its standard error is the caller's, so a
 * helper's own advice (such as "run aws sso login") reaches the user.
 * Returns the exit status, or -1 with WHY set. */
static int run_process(char **argv, buf *out, const char **why)
{
    int fd[2];
    if (pipe(fd) != 0) {
        *why = strerror(errno);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *why = strerror(errno);
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        signal(SIGPIPE, SIG_DFL); /* the daemon ignores it; the helper should not */
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    double until = time_mono() + PROCESS_TIMEOUT_MS / 1000.0;
    char chunk[4096];
    int timed_out = 0;
    for (;;) {
        int left = (int)((until - time_mono()) * 1000);
        struct pollfd p = {fd[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) == 0) {
            timed_out = 1;
            break;
        }
        ssize_t r = read(fd[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (out->len + (size_t)r <= PROCESS_MAX_OUTPUT)
            buf_append(out, chunk, (size_t)r);
    }
    memset(chunk, 0, sizeof chunk);
    close(fd[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        *why = "did not finish within 60 s";
        return -1;
    }
    if (WIFSIGNALED(st)) {
        *why = "was killed by a signal";
        return -1;
    }
    return WEXITSTATUS(st);
}

/* Keys from credential_process CMD of profile P in FILE: its output is
 * {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?,
 * "Expiration"?}. Messages name the profile and file, never the command
 * (it may carry a secret) nor the output. */
static int from_process(const char *cmd, const char *prof, const char *file, aws_creds *c,
                        buf *err)
{
    size_t n = strlen(cmd);
    char *words = malloc(n + 1), *argv[64];
    if (!words)
        return MNEMO_NOMEM;
    int rc = MNEMO_UNAVAILABLE;
    buf out;
    buf_init(&out, 4096);
    json_t *j = NULL;
    const char *why = NULL;
    int argc = split_words(cmd, words, argv, 64);
    if (argc <= 0) {
        why = argc < 0 ? "cannot be split into words (an unclosed quote?)" : "is empty";
        goto done;
    }
    int st = run_process(argv, &out, &why);
    if (st < 0)
        goto done;
    if (st == 127) {
        why = "could not be run (exit status 127: command not found?)";
        goto done;
    }
    if (st != 0) {
        buf_printf(err, "bedrock: credential_process of profile '%s' in %s exited with status %d",
                   prof, file, st);
        goto done;
    }
    j = json_loadb(out.data ? out.data : "", out.len, 0, NULL);
    json_t *ver = json_object_get(j, "Version");
    const char *id = json_string_value(json_object_get(j, "AccessKeyId"));
    const char *secret = json_string_value(json_object_get(j, "SecretAccessKey"));
    const char *tok = json_string_value(json_object_get(j, "SessionToken"));
    const char *exp = json_string_value(json_object_get(j, "Expiration"));
    double t;
    if (!json_is_object(j))
        why = "printed no JSON object";
    else if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        why = "printed a Version other than 1";
    else if (!id || !*id || !secret || !*secret)
        why = "printed no AccessKeyId or SecretAccessKey";
    else if (exp && time_parse_iso(exp, &t) != 0)
        why = "printed an Expiration that is not an ISO 8601 time";
    else if (exp && t <= time_wall()) {
        char at[32];
        snprintf(at, sizeof at, "%.31s", exp);
        buf_printf(err, "bedrock: credential_process of profile '%s' in %s: the credentials it "
                        "printed expired at %s",
                   prof, file, at);
        goto done;
    }
    if (why)
        goto done;
    c->access_key = strdup(id);
    c->secret_key = strdup(secret);
    c->token = tok && *tok ? strdup(tok) : NULL;
    if (!c->access_key || !c->secret_key || (tok && *tok && !c->token)) {
        aws_creds_clear(c);
        rc = MNEMO_NOMEM;
        goto done;
    }
    snprintf(c->source, sizeof c->source, "credential_process of profile '%.200s' in %.250s",
             prof, file);
    rc = MNEMO_OK;
done:
    if (why)
        buf_printf(err, "bedrock: credential_process of profile '%s' in %s %s", prof, file, why);
    if (j) {
        /* the secret strings live in J: wipe them before freeing */
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (json_is_string(v))
                memset((char *)json_string_value(v), 0, json_string_length(v));
        }
        json_decref(j);
    }
    if (out.data)
        memset(out.data, 0, out.len);
    buf_cleanup(&out);
    memset(words, 0, n + 1);
    free(words);
    return rc;
}

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
    /* Static keys from the credentials file, then the config file (a key
     * set in the first is not read from the second), then the profile's
     * credential_process: in the order AWS's SDKs take them. */
    shared_files f;
    shared_files_find(&f);
    profile p = {0};
    int in_cred = read_profile(f.cred, f.profile, &p);
    const char *where = f.cred, *proc_file = p.process ? f.cred : NULL;
    int in_conf = -1;
    if (!complete(&p)) {
        in_conf = read_profile(f.conf, f.section, &p);
        where = f.conf;
        if (!proc_file && p.process)
            proc_file = f.conf;
    }
    int rc = MNEMO_UNAVAILABLE;
    if (complete(&p)) {
        c->access_key = p.access_key;
        c->secret_key = p.secret_key;
        c->token = p.token;
        p.access_key = p.secret_key = p.token = NULL;
        snprintf(c->source, sizeof c->source, "profile '%.200s' in %.290s", f.profile, where);
        rc = MNEMO_OK;
        goto done;
    }
    if (proc_file) {
        rc = from_process(p.process, f.profile, proc_file, c, err);
        goto done;
    }
    static const char *const state[] = {"no such file", "no such profile",
                                        "the profile lacks aws_access_key_id or "
                                        "aws_secret_access_key, and credential_process"};
    buf_printf(err, "bedrock: no AWS credentials; tried AWS_BEARER_TOKEN_BEDROCK (unset), ");
    if (id || secret)
        buf_printf(err, "the environment (%s is set but %s is not), ",
                   id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                   id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    else
        buf_printf(err, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (unset), ");
    buf_printf(err, "profile '%s'%s in %s (%s) and %s (%s)", f.profile,
               env("AWS_PROFILE") ? " (AWS_PROFILE)" : "", f.cred, state[in_cred], f.conf,
               state[in_conf < 0 ? 0 : in_conf]);
done:
    profile_clear(&p);
    if (rc)
        aws_creds_clear(c);
    return rc;
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
