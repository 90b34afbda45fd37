/*
 * pull.c - downloading a model folder from a hub (see pull.h).
 */
#include "embed/pull.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/bert.h"
#include "embed/curl_dl.h"
#include "mnemo.h"
#include "text/dsn.h"
#include "util/sha.h"

#define MAX_META (16u << 20)
#define MAX_ERR_BODY 2048

/* owner/name: letters, digits and . _ - in each part, no "..". */
static int valid_repo(const char *r)
{
    int parts = 1;
    if (!*r || *r == '/' || strstr(r, ".."))
        return 0;
    for (const char *p = r; *p; p++) {
        if (*p == '/') {
            if (++parts > 2 || !p[1])
                return 0;
        } else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-')) {
            return 0;
        }
    }
    return 1;
}

static int valid_revision(const char *r)
{
    if (!*r || *r == '/' || strstr(r, "..") || strlen(r) > 200)
        return 0;
    for (const char *p = r; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-' || *p == '/'))
            return 0;
    return 1;
}

typedef struct sink {
    CURL *h;
    const curl_api *C;
    buf *mem;           /* the body in memory (metadata), or */
    FILE *f;            /* into a file from offset BASE */
    uint64_t base, got, total;
    const char *file;
    const pull_opts *o;
    buf errbody;        /* the body of an error answer */
    int checked, restart;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    long code = 0;
    if (!s->checked) {
        s->checked = 1;
        s->C->easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 300) {
            s->f = NULL; /* an error page: kept for the message only */
            s->mem = NULL;
        } else if (s->f && s->base > 0 && code != 206) {
            /* A range refused: the whole file comes again. */
            if (fflush(s->f) != 0 || ftruncate(fileno(s->f), 0) != 0 ||
                fseek(s->f, 0, SEEK_SET) != 0)
                return 0;
            s->base = 0;
            s->restart = 1;
        }
    }
    if (s->mem) {
        buf_append(s->mem, p, len);
        return buf_err(s->mem) ? 0 : len;
    }
    if (!s->f) {
        if (s->errbody.len < MAX_ERR_BODY)
            buf_append(&s->errbody, p, len);
        return len;
    }
    if (fwrite(p, 1, len, s->f) != len)
        return 0;
    s->got += len;
    if (s->o->progress)
        s->o->progress(s->o->ud, s->file, s->base + s->got, s->total);
    return len;
}

/* GET URL into S; the final status in *CODE. */
static int get(sink *s, const char *url, long *code, buf *err)
{
    const curl_api *C = s->C;
    CURL *h = s->h;
    C->easy_reset(h);
    struct curl_slist *hdr = NULL;
    char auth[4200], range[64];
    if (s->o->token && *s->o->token) {
        /* libcurl does not send a custom Authorization header on to
         * another host after a redirect. */
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->o->token);
        hdr = C->slist_append(hdr, auth);
        memset(auth, 0, sizeof auth);
    }
    if (s->f && s->base > 0) {
        snprintf(range, sizeof range, "Range: bytes=%llu-", (unsigned long long)s->base);
        hdr = C->slist_append(hdr, range);
    }
    C->easy_setopt(h, CURLOPT_URL, url);
    C->easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    C->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    C->easy_setopt(h, CURLOPT_MAXREDIRS, 8L);
    C->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    C->easy_setopt(h, CURLOPT_WRITEDATA, s);
    C->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
    C->easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    C->easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    C->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    C->easy_setopt(h, CURLOPT_USERAGENT, "mnemo/" MNEMO_VERSION);
    s->checked = 0;
    s->restart = 0;
    CURLcode rc = C->easy_perform(h);
    C->slist_free_all(hdr);
    *code = 0;
    C->easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    if (rc != CURLE_OK) {
        dsn_redact(err, url, NULL); /* an endpoint may carry user:password@ */
        buf_printf(err, ": %s", C->easy_strerror(rc));
        return MNEMO_UNAVAILABLE;
    }
    return MNEMO_OK;
}

/* The hub's words for a failed answer. */
static int http_error(sink *s, const char *what, long code, buf *err)
{
    json_t *j = json_loadb(s->errbody.data ? s->errbody.data : "", s->errbody.len, 0, NULL);
    const char *msg = json_string_value(json_object_get(j, "error"));
    if (code == 404)
        buf_printf(err, "%s: not found on the hub (404%s%s)%s", what, msg ? ": " : "",
                   msg ? msg : "",
                   s->o->token && *s->o->token ? ""
                                              : "; a private or gated model needs HF_TOKEN");
    else if (code == 401 || code == 403)
        buf_printf(err, "%s: access refused (%ld%s%s); set HF_TOKEN to a token that may read it",
                   what, code, msg ? ": " : "", msg ? msg : "");
    else
        buf_printf(err, "%s: the hub answered %ld%s%s", what, code, msg ? ": " : "",
                   msg ? msg : "");
    json_decref(j);
    return code == 404 ? MNEMO_NOTFOUND : MNEMO_UNAVAILABLE;
}

/* The digest of PATH's content: SHA-256, or the git blob SHA-1. */
static int file_digest(const char *path, int git_sha1, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return -1;
    }
    sha_ctx c;
    if (git_sha1) {
        char head[64];
        sha1_init(&c);
        int n = snprintf(head, sizeof head, "blob %lld", (long long)sb.st_size);
        sha_update(&c, head, (size_t)n + 1);
    } else {
        sha256_init(&c);
    }
    char blk[1 << 16];
    size_t n;
    while ((n = fread(blk, 1, sizeof blk, f)) > 0)
        sha_update(&c, blk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -1;
    sha_final_hex(&c, hex);
    return 0;
}

typedef struct want {
    const char *name;
    uint64_t size;
    char sum[65];
    int lfs; /* SUM is SHA-256, else the git blob SHA-1 */
} want;

static void rmtree_staging(const char *dir)
{
    const char *const *files = bert_model_files();
    char p[8192];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s.part", dir, files[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/commit", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/1_Pooling", dir);
    rmdir(p);
    rmdir(dir);
}

/* Fetches W into STAGING (resuming a .part file). */
static int fetch(sink *s, const char *base, const want *w, const char *staging, buf *err)
{
    char final[8192], part[8300], url[8192];
    snprintf(final, sizeof final, "%s/%s", staging, w->name);
    snprintf(part, sizeof part, "%s.part", final);
    struct stat sb;
    char hex[65];
    if (stat(final, &sb) == 0 && (uint64_t)sb.st_size == w->size &&
        file_digest(final, !w->lfs, hex) == 0 && !strcmp(hex, w->sum)) {
        if (s->o->progress)
            s->o->progress(s->o->ud, w->name, w->size, w->size);
        return MNEMO_OK; /* there from a run before */
    }
    uint64_t have = stat(part, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (have > w->size) {
        unlink(part);
        have = 0;
    }
    FILE *f = fopen(part, have ? "r+b" : "wb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        buf_printf(err, "%s: %s", part, strerror(errno));
        if (f)
            fclose(f);
        return MNEMO_IO;
    }
    snprintf(url, sizeof url, "%s/%s", base, w->name);
    s->f = f;
    s->mem = NULL;
    s->base = have;
    s->got = 0;
    s->total = w->size;
    s->file = w->name;
    s->errbody.len = 0;
    long code = 0;
    int rc = have < w->size || w->size == 0 ? get(s, url, &code, err) : MNEMO_OK;
    if (have >= w->size && w->size)
        code = 206;
    int closed = fclose(f);
    s->f = NULL;
    if (rc) {
        /* The .part file stays: the next run resumes it. */
        buf_printf(err, " after %llu of %llu bytes of %s; run the command again to resume",
                   (unsigned long long)(s->base + s->got), (unsigned long long)w->size, w->name);
        return rc;
    }
    if (code == 416)
        unlink(part); /* a range past the end: start again next time */
    if (code >= 300)
        return http_error(s, w->name, code, err);
    if (closed != 0) {
        buf_printf(err, "%s: %s", part, strerror(errno));
        return MNEMO_IO;
    }
    if (stat(part, &sb) != 0 || (uint64_t)sb.st_size != w->size) {
        buf_printf(err, "%s: %lld bytes where the hub lists %llu (run the command again to resume)",
                   w->name, stat(part, &sb) == 0 ? (long long)sb.st_size : -1LL,
                   (unsigned long long)w->size);
        if (stat(part, &sb) == 0 && (uint64_t)sb.st_size > w->size)
            unlink(part);
        return MNEMO_UNAVAILABLE;
    }
    if (file_digest(part, !w->lfs, hex) != 0) {
        buf_printf(err, "%s: cannot read it back", part);
        return MNEMO_IO;
    }
    if (strcmp(hex, w->sum)) {
        unlink(part);
        buf_printf(err,
                   "%s: checksum mismatch (%s %s expected, %s received); the file was removed",
                   w->name, w->lfs ? "SHA-256" : "git SHA-1", w->sum, hex);
        return MNEMO_CORRUPT;
    }
    if (rename(part, final) != 0) {
        buf_printf(err, "%s: %s", final, strerror(errno));
        return MNEMO_IO;
    }
    return MNEMO_OK;
}

/* The files to fetch from the metadata M; NULL-named end. */
static int pick(json_t *m, want *ws, size_t cap, size_t *n, buf *err)
{
    const char *const *files = bert_model_files();
    json_t *sib = json_object_get(m, "siblings"), *e;
    size_t i;
    *n = 0;
    int has_cfg = 0, has_st = 0, has_tok = 0;
    json_array_foreach(sib, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "rfilename"));
        int k = 0;
        while (name && files[k] && strcmp(files[k], name))
            k++;
        if (!name || !files[k] || *n == cap)
            continue;
        json_t *lfs = json_object_get(e, "lfs");
        const char *sum = json_string_value(lfs ? json_object_get(lfs, "sha256")
                                                : json_object_get(e, "blobId"));
        json_t *size = lfs ? json_object_get(lfs, "size") : json_object_get(e, "size");
        if (!sum || strlen(sum) >= sizeof ws->sum || !json_is_integer(size) ||
            json_integer_value(size) < 0) {
            buf_printf(err, "%s: the hub lists no size or checksum for it", name);
            return MNEMO_UNAVAILABLE;
        }
        want *w = &ws[(*n)++];
        w->name = files[k];
        w->size = (uint64_t)json_integer_value(size);
        w->lfs = lfs != NULL;
        snprintf(w->sum, sizeof w->sum, "%s", sum);
        for (char *p = w->sum; *p; p++)
            if (*p >= 'A' && *p <= 'F')
                *p = (char)(*p - 'A' + 'a');
        has_cfg |= !strcmp(name, "config.json");
        has_st |= !strcmp(name, "model.safetensors");
        has_tok |= !strcmp(name, "tokenizer.json") || !strcmp(name, "vocab.txt");
    }
    if (!has_cfg || !has_st || !has_tok) {
        buf_printf(err, "the repository has no %s (mnemo runs Hugging Face folders with "
                        "config.json, model.safetensors and tokenizer.json or vocab.txt)",
                   !has_cfg ? "config.json" : !has_st ? "model.safetensors" : "tokenizer");
        return MNEMO_NOTFOUND;
    }
    return MNEMO_OK;
}

int hub_pull(const pull_opts *o, const char *staging, const char *dst, int *dims, char *commit,
             buf *err)
{
    const char *rev = o->revision && *o->revision ? o->revision : "main";
    commit[0] = 0;
    if (!valid_repo(o->repo)) {
        buf_printf(err, "'%s' is not a repository name (owner/name)", o->repo);
        return MNEMO_INVALID;
    }
    if (!valid_revision(rev)) {
        buf_printf(err, "'%s' is not a revision name", rev);
        return MNEMO_INVALID;
    }
    struct stat sb;
    if (stat(dst, &sb) == 0) {
        buf_printf(err, "%s exists already (remove it, or pull under another --name)", dst);
        return MNEMO_INVALID;
    }
    const curl_api *C = curl_api_get();
    if (!C) {
        buf_printf(err, "%s", curl_api_error());
        return MNEMO_UNAVAILABLE;
    }
    sink s;
    memset(&s, 0, sizeof s);
    s.C = C;
    s.o = o;
    buf_init(&s.errbody, 0);
    if (!(s.h = C->easy_init()))
        return MNEMO_NOMEM;
    /* The revision's commit and files. */
    buf url, meta;
    buf_init(&url, 0);
    buf_init(&meta, MAX_META);
    buf_printf(&url, "%s/api/models/%s/revision/", o->endpoint, o->repo);
    for (const char *p = rev; *p; p++)
        buf_puts(&url, *p == '/' ? "%2F" : (char[]){*p, 0});
    buf_puts(&url, "?blobs=true");
    s.mem = &meta;
    long code = 0;
    json_t *m = NULL;
    want ws[16];
    size_t nw = 0;
    int rc = get(&s, url.data, &code, err);
    if (!rc && code >= 300)
        rc = http_error(&s, o->repo, code, err);
    if (!rc && !(m = json_loadb(meta.data ? meta.data : "", meta.len, 0, NULL))) {
        dsn_redact(err, url.data, NULL);
        buf_puts(err, ": the hub's answer is not JSON");
        rc = MNEMO_UNAVAILABLE;
    }
    const char *sha = json_string_value(json_object_get(m, "sha"));
    if (!rc && (!sha || strlen(sha) != 40 || strspn(sha, "0123456789abcdef") != 40)) {
        dsn_redact(err, url.data, NULL);
        buf_puts(err, ": the hub's answer names no commit");
        rc = MNEMO_UNAVAILABLE;
    }
    if (!rc)
        rc = pick(m, ws, sizeof ws / sizeof *ws, &nw, err);
    if (!rc) {
        memcpy(commit, sha, 41);
        /* A staging folder of another commit starts again. */
        char cpath[8192], old[64] = "";
        snprintf(cpath, sizeof cpath, "%s/commit", staging);
        FILE *cf = fopen(cpath, "r");
        if (cf) {
            if (!fgets(old, sizeof old, cf))
                old[0] = 0;
            fclose(cf);
        }
        if (strcmp(old, sha))
            rmtree_staging(staging);
        snprintf(cpath, sizeof cpath, "%s/1_Pooling", staging);
        if ((mkdir(staging, 0755) != 0 && errno != EEXIST) ||
            (mkdir(cpath, 0755) != 0 && errno != EEXIST)) {
            buf_printf(err, "%s: %s", staging, strerror(errno));
            rc = MNEMO_IO;
        }
        snprintf(cpath, sizeof cpath, "%s/commit", staging);
        if (!rc && (cf = fopen(cpath, "w")) != NULL) {
            fputs(sha, cf);
            if (fclose(cf) != 0)
                rc = MNEMO_IO;
        }
    }
    url.len = 0;
    if (!rc)
        buf_printf(&url, "%s/%s/resolve/%s", o->endpoint, o->repo, sha);
    for (size_t i = 0; !rc && i < nw; i++)
        rc = fetch(&s, url.data, &ws[i], staging, err);
    if (!rc && (rc = bert_install(staging, dst, dims, err)) == MNEMO_OK)
        rmtree_staging(staging);
    json_decref(m);
    buf_cleanup(&url);
    buf_cleanup(&meta);
    buf_cleanup(&s.errbody);
    C->easy_cleanup(s.h);
    return rc;
}
