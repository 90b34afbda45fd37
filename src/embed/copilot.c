/*
 * copilot.c - GitHub Copilot's token exchange, its cache file and its
 * models (see copilot.h). The embedding requests themselves go through
 * embed_http.c as OpenAI's do, with the Copilot token as the bearer.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/copilot.h"
#include "embed/curl_dl.h"
#include "mnemo.h"
#include "text/dsn.h"
#include "util/io.h"
#include "util/sha.h"
#include "util/time.h"

#define MAX_ANSWER (4u << 20)
#define REFRESH_MARGIN 300.0 /* seconds: refresh a token with less than this left */

/* What the Copilot editor extensions send; GitHub's proxies expect an
 * editor to be named. The headers setting replaces any of them. */
static const char *const editor[][2] = {
    {"Editor-Version", "vscode/1.96.2"},
    {"Editor-Plugin-Version", "copilot-chat/0.26.7"},
    {"Copilot-Integration-Id", "vscode-chat"},
    {"User-Agent", "GitHubCopilotChat/0.26.7"},
};

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

const char *copilot_github_token(const char *key_env, const char **var)
{
    if (key_env && *key_env) {
        if (var)
            *var = key_env;
        return env(key_env);
    }
    static const char *const vars[] = {"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"};
    for (size_t i = 0; i < 3; i++) {
        if (env(vars[i])) {
            if (var)
                *var = vars[i];
            return env(vars[i]);
        }
    }
    if (var)
        *var = "COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN";
    return NULL;
}

void copilot_api_base(const char *token, char *out, size_t n)
{
    snprintf(out, n, "%s", COPILOT_DEFAULT_BASE);
    for (const char *p = token; p && *p;) {
        size_t l = strcspn(p, ";");
        while (l && *p == ' ') {
            p++;
            l--;
        }
        if (l > 9 && strncasecmp(p, "proxy-ep=", 9) == 0) {
            const char *h = p + 9;
            size_t hl = l - 9;
            if (hl > 8 && strncasecmp(h, "https://", 8) == 0) {
                h += 8;
                hl -= 8;
            }
            /* A host name and port only: the token must not steer the
             * requests anywhere stranger. */
            for (size_t i = 0; i < hl; i++) {
                char ch = h[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == ':'))
                    return;
            }
            if (hl > 6 && strncasecmp(h, "proxy.", 6) == 0)
                snprintf(out, n, "https://api.%.*s", (int)(hl - 6), h + 6);
            else if (hl)
                snprintf(out, n, "https://%.*s", (int)hl, h);
            return;
        }
        p += l + (p[l] == ';');
    }
}

int copilot_offers(const char *list, const char *model)
{
    size_t ml = strlen(model);
    for (const char *p = list; p && *p;) {
        size_t l = strcspn(p, ",");
        if (l == ml && strncmp(p, model, l) == 0)
            return 1;
        p += l + (p[l] == ',');
    }
    return 0;
}

void copilot_editor_headers(const char *headers_json, int user, buf *lines)
{
    json_t *h = headers_json && *headers_json ? json_loads(headers_json, 0, NULL) : NULL;
    for (size_t i = 0; i < sizeof editor / sizeof *editor; i++) {
        const char *k;
        json_t *v;
        int set = 0;
        json_object_foreach(h, k, v)
            set |= strcasecmp(k, editor[i][0]) == 0;
        if (!set)
            buf_printf(lines, "%s: %s\n", editor[i][0], editor[i][1]);
    }
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v)
    {
        if (user && strcasecmp(k, "Authorization") != 0)
            buf_printf(lines, "%s: %s\n", k, json_is_string(v) ? json_string_value(v) : "");
    }
    json_decref(h);
}

/* ----------------------------------------------------------------------
 * The cache file
 * -------------------------------------------------------------------- */

/* $XDG_CACHE_HOME/mnemo/copilot/token-HASH.json: HASH of the GitHub token
 * and the exchange URL, so that another account or server has its own
 * file and the name tells nothing of the token. */
static char *cache_path(const char *gh, const char *url)
{
    char *dir = io_cache_dir("copilot");
    if (!dir)
        return NULL;
    sha_ctx s;
    char hex[65];
    sha256_init(&s);
    sha_update(&s, "mnemo copilot token\n", 20);
    sha_update(&s, gh, strlen(gh));
    sha_update(&s, "\n", 1);
    sha_update(&s, url, strlen(url));
    sha_final_hex(&s, hex);
    buf p;
    buf_init(&p, 8192);
    buf_printf(&p, "%s/token-%.32s.json", dir, hex);
    free(dir);
    return buf_detach(&p);
}

static void cache_read(copilot *c)
{
    if (!c->cache_path)
        return;
    json_t *j = json_load_file(c->cache_path, 0, NULL);
    const char *tok = json_string_value(json_object_get(j, "token"));
    json_t *exp = json_object_get(j, "expires_at");
    if (tok && *tok && json_is_number(exp)) {
        c->token = strdup(tok);
        c->expires_at = json_number_value(exp);
        c->obtained_at = json_number_value(json_object_get(j, "obtained_at"));
        const char *mb = json_string_value(json_object_get(j, "models_base"));
        const char *m = json_string_value(json_object_get(j, "models"));
        if (mb && m) {
            c->models_base = strdup(mb);
            c->models = strdup(m);
        }
    }
    /* The token is in the parsed text too: wipe it there. */
    if (tok)
        memset((char *)tok, 0, strlen(tok));
    json_decref(j);
}

/* mkdir -p for the cache folder, private to the user. */
static void make_dirs(const char *path)
{
    char *d = strdup(path);
    if (!d)
        return;
    char *slash = strrchr(d, '/');
    if (slash)
        *slash = 0;
    for (char *p = d + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(d, 0700);
            *p = '/';
        }
    }
    mkdir(d, 0700);
    free(d);
}

/* Writes the cache file whole or not at all: a private temporary file
 * renamed over it. A failure only costs the next process an exchange. */
static void cache_write(const copilot *c)
{
    if (!c->cache_path || !c->token)
        return;
    json_t *j = json_pack("{s:s,s:f,s:f}", "token", c->token, "expires_at", c->expires_at,
                          "obtained_at", c->obtained_at);
    if (j && c->models && c->models_base) {
        json_object_set_new(j, "models_base", json_string(c->models_base));
        json_object_set_new(j, "models", json_string(c->models));
    }
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    buf tmp;
    buf_init(&tmp, 8192);
    buf_printf(&tmp, "%s.%ld.tmp", c->cache_path, (long)getpid());
    make_dirs(c->cache_path);
    int fd = s && tmp.data ? open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (fd >= 0) {
        int ok = fchmod(fd, 0600) == 0 && io_write_all(fd, s, strlen(s)) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp.data, c->cache_path) != 0)
            unlink(tmp.data);
    }
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
    buf_cleanup(&tmp);
}

int copilot_open(copilot **out, const char *key_env, const char *url, long timeout_ms,
                 buf *err)
{
    *out = NULL;
    const char *var;
    const char *gh = copilot_github_token(key_env, &var);
    if (!gh) {
        buf_printf(err, "github-copilot: no GitHub token (set %s to a token of an account with "
                        "Copilot, e.g. export GH_TOKEN=$(gh auth token))",
                   var);
        return MNEMO_UNAVAILABLE;
    }
    copilot *c = calloc(1, sizeof *c);
    if (!c)
        return MNEMO_NOMEM;
    snprintf(c->gh_source, sizeof c->gh_source, "%s", var);
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
    buf u;
    buf_init(&u, 8192);
    if (url && *url) {
        buf_puts(&u, url);
    } else {
        const char *domain = env("COPILOT_GITHUB_DOMAIN");
        buf_printf(&u, "https://api.%s/copilot_internal/v2/token", domain ? domain : "github.com");
    }
    c->gh_token = strdup(gh);
    c->token_url = buf_detach(&u);
    if (!c->gh_token || !c->token_url) {
        copilot_free(c);
        return MNEMO_NOMEM;
    }
    c->cache_path = cache_path(c->gh_token, c->token_url);
    cache_read(c);
    *out = c;
    return MNEMO_OK;
}

void copilot_free(copilot *c)
{
    if (!c)
        return;
    wipe_free(c->gh_token);
    wipe_free(c->token);
    free(c->token_url);
    free(c->cache_path);
    free(c->models_base);
    free(c->models);
    free(c);
}

int copilot_stale(const copilot *c, double now)
{
    if (!c->token || c->expires_at <= now + 5)
        return 1;
    /* One this process has just received is used, however short its life:
     * a server that issues short tokens is not asked again at each call. */
    if (c->gen > 0 && now - c->obtained_at < 60)
        return 0;
    return c->expires_at - now < REFRESH_MARGIN;
}

/* ----------------------------------------------------------------------
 * Requests
 * -------------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    buf *b = ud;
    return buf_append(b, p, size * n) ? 0 : size * n;
}

/* The message of an error answer, without a token, on one line. */
static void answer_message(const copilot *c, const buf *body, char *out, size_t n)
{
    out[0] = 0;
    json_t *j = body->data ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    /* GitHub says why Copilot is refused in error_details, more plainly
     * than in its message. */
    const char *msg =
        json_string_value(json_object_get(json_object_get(j, "error_details"), "message"));
    json_t *er = json_object_get(j, "error");
    if (!msg)
        msg = json_string_value(json_object_get(j, "message"));
    if (!msg)
        msg = json_is_string(er) ? json_string_value(er)
                                 : json_string_value(json_object_get(er, "message"));
    buf t;
    buf_init(&t, 1u << 20);
    if (msg)
        buf_puts(&t, msg);
    else if (body->data)
        buf_append(&t, body->data, body->len > 200 ? 200 : body->len);
    json_decref(j);
    buf_mask(&t, c->gh_token, 1);
    buf_mask(&t, c->token, 1);
    snprintf(out, n, "%s", t.data ? t.data : "");
    buf_cleanup(&t);
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* GET URL with the header LINES ("Name: value\n" each) into BODY. */
static int get(const copilot *c, const char *url, const char *lines, long *status, buf *body,
               buf *err)
{
    const curl_api *C = curl_api_get();
    if (!C) {
        buf_printf(err, "github-copilot: %s", curl_api_error());
        return MNEMO_UNAVAILABLE;
    }
    CURL *h = C->easy_init();
    struct curl_slist *hd = NULL;
    char *copy = strdup(lines);
    int rc = h && copy ? MNEMO_OK : MNEMO_NOMEM;
    for (char *p = copy, *nl; !rc && p && (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = 0;
        struct curl_slist *n2 = C->slist_append(hd, p);
        if (!n2)
            rc = MNEMO_NOMEM;
        else
            hd = n2;
    }
    if (!rc) {
        C->easy_setopt(h, CURLOPT_URL, url);
        C->easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        C->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        C->easy_setopt(h, CURLOPT_WRITEDATA, body);
        C->easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
        C->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        C->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
        CURLcode cc = C->easy_perform(h);
        if (cc != CURLE_OK) {
            buf shown;
            buf_init(&shown, 0);
            dsn_redact(&shown, url, NULL);
            buf_printf(err, "github-copilot: cannot reach %s (%s)", shown.data ? shown.data : "",
                       C->easy_strerror(cc));
            buf_cleanup(&shown);
            rc = cc == CURLE_OPERATION_TIMEDOUT ? MNEMO_TIMEOUT : MNEMO_HTTP;
        } else {
            C->easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        }
    }
    for (struct curl_slist *l = hd; l; l = l->next)
        memset(l->data, 0, strlen(l->data));
    if (hd)
        C->slist_free_all(hd);
    if (copy) {
        memset(copy, 0, strlen(copy));
        free(copy);
    }
    if (h)
        C->easy_cleanup(h);
    return rc;
}

int copilot_exchange(copilot *c, const char *headers_json, buf *err)
{
    buf lines, body;
    buf_init(&lines, 1u << 16);
    buf_init(&body, MAX_ANSWER);
    buf_printf(&lines, "Accept: application/json\nAuthorization: token %s\n", c->gh_token);
    copilot_editor_headers(headers_json, 1, &lines);
    long status = 0;
    double now = time_wall();
    buf shown;
    buf_init(&shown, 0);
    dsn_redact(&shown, c->token_url, NULL);
    const char *url = shown.data ? shown.data : "";
    int rc = buf_err(&lines) ? MNEMO_NOMEM : get(c, c->token_url, lines.data, &status, &body, err);
    if (lines.data)
        memset(lines.data, 0, lines.len);
    buf_cleanup(&lines);
    if (rc)
        goto done;
    char msg[512];
    if (status != 200) {
        answer_message(c, &body, msg, sizeof msg);
        rc = status == 401 || status == 403 || status == 404 ? MNEMO_UNAVAILABLE : MNEMO_HTTP;
        if (status == 401)
            buf_printf(err, "github-copilot: the GitHub token from %s was refused (401 from %s%s%s): "
                            "it is invalid or expired; sign in again (gh auth login) or set a "
                            "new token",
                       c->gh_source, url, *msg ? ": " : "", msg);
        else if (status == 403 || status == 404)
            buf_printf(err, "github-copilot: this GitHub account has no Copilot access (%ld from "
                            "%s%s%s): use a token of an account with a Copilot subscription "
                            "(from a Copilot editor sign-in or gh auth token; GitHub Enterprise: "
                            "set COPILOT_GITHUB_DOMAIN)",
                       status, url, *msg ? ": " : "", msg);
        else
            buf_printf(err, "github-copilot: the token exchange failed (%ld from %s%s%s)", status,
                       url, *msg ? ": " : "", msg);
        goto done;
    }
    json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, NULL);
    const char *tok = json_string_value(json_object_get(j, "token"));
    json_t *exp = json_object_get(j, "expires_at");
    if (!tok || !*tok || !json_is_number(exp)) {
        buf_printf(err, "github-copilot: the token exchange at %s answered without a token and "
                        "its expiry",
                   url);
        rc = MNEMO_INVALID;
    } else if (json_number_value(exp) <= now) {
        char when[32];
        time_format_iso(json_number_value(exp), when);
        buf_printf(err, "github-copilot: the Copilot token from %s has expired already (at %s); "
                        "check the system clock",
                   url, when);
        rc = MNEMO_UNAVAILABLE;
    } else {
        wipe_free(c->token);
        c->token = strdup(tok);
        c->expires_at = json_number_value(exp);
        c->obtained_at = now;
        c->gen++;
        free(c->models);
        free(c->models_base);
        c->models = c->models_base = NULL;
        rc = c->token ? MNEMO_OK : MNEMO_NOMEM;
        if (!rc)
            cache_write(c);
    }
    if (tok)
        memset((char *)tok, 0, strlen(tok));
    json_decref(j);
done:
    if (body.data)
        memset(body.data, 0, body.len);
    buf_cleanup(&body);
    buf_cleanup(&shown);
    return rc;
}

/* Does the model entry M serve embeddings? Its supported_endpoints name
 * them ("/embeddings", "/v1/embeddings"), or its capabilities' type is. */
static int embeds(json_t *m)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(m, "supported_endpoints"), i, v)
    {
        const char *s = json_string_value(v);
        if (s && strstr(s, "embeddings"))
            return 1;
    }
    const char *type = json_string_value(
        json_object_get(json_object_get(m, "capabilities"), "type"));
    return type && strcmp(type, "embeddings") == 0;
}

int copilot_list_models(copilot *c, const char *base, const char *headers_json, buf *err)
{
    buf lines, body, url;
    buf_init(&lines, 1u << 16);
    buf_init(&body, MAX_ANSWER);
    buf_init(&url, 8192);
    buf_printf(&url, "%s/models", base);
    buf_printf(&lines, "Accept: application/json\nAuthorization: Bearer %s\n", c->token);
    copilot_editor_headers(headers_json, 1, &lines);
    long status = 0;
    int rc = buf_err(&lines) || buf_err(&url) ? MNEMO_NOMEM
                                              : get(c, url.data, lines.data, &status, &body, err);
    if (lines.data)
        memset(lines.data, 0, lines.len);
    buf_cleanup(&lines);
    if (rc)
        goto done;
    if (status != 200) {
        char msg[512];
        answer_message(c, &body, msg, sizeof msg);
        buf shown;
        buf_init(&shown, 0);
        dsn_redact(&shown, url.data, NULL);
        buf_printf(err, "github-copilot: %ld listing the models at %s%s%s", status,
                   shown.data ? shown.data : "", *msg ? ": " : "", msg);
        buf_cleanup(&shown);
        rc = status == 401 || status == 403 ? MNEMO_UNAVAILABLE : MNEMO_HTTP;
        goto done;
    }
    json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, NULL);
    json_t *data = json_is_array(j) ? j : json_object_get(j, "data");
    buf ids;
    buf_init(&ids, 1u << 20);
    size_t i;
    json_t *m;
    json_array_foreach(data, i, m)
    {
        const char *id = json_string_value(json_object_get(m, "id"));
        if (id && *id && !strchr(id, ',') && embeds(m) && !copilot_offers(ids.data, id))
            buf_printf(&ids, "%s%s", ids.len ? "," : "", id);
    }
    int listed = json_is_array(data);
    json_decref(j);
    if (!listed) {
        buf_printf(err, "github-copilot: the models list at %s/models is not a list", base);
        rc = MNEMO_INVALID;
    } else if (buf_err(&ids)) {
        rc = MNEMO_NOMEM;
    } else {
        free(c->models);
        free(c->models_base);
        c->models = ids.data ? strdup(ids.data) : strdup("");
        c->models_base = strdup(base);
        rc = c->models && c->models_base ? MNEMO_OK : MNEMO_NOMEM;
        if (!rc)
            cache_write(c);
    }
    buf_cleanup(&ids);
done:
    buf_cleanup(&body);
    buf_cleanup(&url);
    return rc;
}
