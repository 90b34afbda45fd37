/*
 * provider.c - the provider policy: which embedding provider the
 * configuration asks for, opening it once per handle, the identity its
 * vectors carry, and importing a static model into the models folder.
 */
#include "engine/provider.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/calib.h"
#include "engine/core.h"
#include "util/errcode.h"
#include "embed/bert.h"
#include "embed/model.h"
#include "embed/pull.h"
#include "util/io.h"

/* ----------------------------------------------------------------------
 * Provider policy
 * -------------------------------------------------------------------- */

static char *models_dir(mnemo *m)
{
    const char *d = cfg_str(m->cfg, CFG_MODELS_DIR);
    return *d ? strdup(d) : io_data_dir("models");
}

void provider_resolve(mnemo *m, char *name, int *explicit_)
{
    const char *p = cfg_str(m->cfg, CFG_PROVIDER);
    *explicit_ = 0;
    if (strcmp(p, "auto") != 0) {
        snprintf(name, 32, "%s", p);
        *explicit_ = strcmp(p, "none") != 0;
        return;
    }
    const char *mname = cfg_str(m->cfg, CFG_MODEL);
    if (*mname) {
        char *dir = models_dir(m);
        char *path = dir ? embed_table_path(dir, mname) : NULL;
        struct stat st;
        int is_table = path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        free(dir);
        if (is_table) {
            snprintf(name, 32, "static");
            return;
        }
        dir = models_dir(m);
        path = dir ? embed_model_dir(dir, mname) : NULL;
        buf cfgp;
        buf_init(&cfgp, 0);
        buf_printf(&cfgp, "%s/config.json", path ? path : "");
        int is_model = path && cfgp.data && stat(cfgp.data, &st) == 0 && S_ISREG(st.st_mode);
        if (path && !is_model) {
            /* a GGUF file, or a folder holding one */
            size_t pl = strlen(path);
            buf_reset(&cfgp);
            buf_printf(&cfgp, "%s/model.gguf", path);
            is_model = (pl > 5 && !strcmp(path + pl - 5, ".gguf") && stat(path, &st) == 0 &&
                        S_ISREG(st.st_mode)) ||
                       (cfgp.data && stat(cfgp.data, &st) == 0 && S_ISREG(st.st_mode));
        }
        buf_cleanup(&cfgp);
        free(path);
        free(dir);
        if (is_model) {
            snprintf(name, 32, "local");
            return;
        }
    }
    static const char *const remote[] = {"openai", "gemini", "voyage", "mistral"};
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++) {
        if (embed_api_key(remote[i], cfg_str(m->cfg, CFG_API_KEY_ENV), NULL)) {
            snprintf(name, 32, "%s", remote[i]);
            return;
        }
    }
    if (*mname) {
        /* A model asked for by name that nothing here can open (not
         * installed, mistyped): an error that names the fix, never a
         * silent fall back to keywords. */
        snprintf(name, 32, "local");
        *explicit_ = 1;
        return;
    }
    snprintf(name, 32, "none");
}

/* The start of an imported model's JSON: {"name":...,"path":... */
static void model_json_head(buf *j, const char *name, const char *path)
{
    buf_init(j, 0);
    buf_puts(j, "{\"name\":");
    buf_json_str(j, name, strlen(name));
    buf_puts(j, ",\"path\":");
    buf_json_str(j, path, strlen(path));
}

/* mkdir -p DIR */
static void mkdirs(char *dir)
{
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0755);
            *p = '/';
        }
    }
    mkdir(dir, 0755);
}

const char *mnemo_search_mode(mnemo *m)
{
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    return strcmp(name, "none") ? "hybrid" : "keyword";
}

int mnemo_model_import(mnemo *m, const char *src, const char *name, size_t max_words, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!name || !*name || strchr(name, '/') || name[0] == '.')
        return core_error(m, MNEMO_INVALID, "model name '%s' must be a plain file name",
                          name ? name : "");
    char *dir = models_dir(m);
    if (!dir)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    mkdirs(dir);
    buf err;
    buf_init(&err, 8192);
    size_t words = 0;
    int dims = 0, rc, local = bert_is_model(src);
    char *path = embed_install_path(dir, name, !local);
    free(dir);
    if (!path)
        rc = MNEMO_NOMEM;
    else if (local)
        rc = bert_install(src, path, &dims, &err);
    else
        rc = model_import(src, path, max_words, &err, &words, &dims);
    if (rc) {
        core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
    } else {
        buf j;
        model_json_head(&j, name, path);
        if (local)
            buf_printf(&j, ",\"provider\":\"local\",\"dims\":%d}", dims);
        else
            buf_printf(&j, ",\"provider\":\"static\",\"words\":%zu,\"dims\":%d}", words,
                       dims);
        *out = buf_detach(&j);
        if (!*out)
            rc = MNEMO_NOMEM;
    }
    buf_cleanup(&err);
    free(path);
    return rc;
}

int mnemo_model_pull(mnemo *m, const char *repo, const char *revision, const char *name,
                     mnemo_pull_progress progress, void *ud, char **out)
{
    *out = NULL;
    core_clear(m);
    if (!repo || !*repo)
        return core_error(m, MNEMO_INVALID, "no repository named (owner/name)");
    if (!name || !*name || strchr(name, '/') || name[0] == '.')
        return core_error(m, MNEMO_INVALID, "model name '%s' must be a plain file name",
                          name ? name : "");
    char *dir = models_dir(m);
    if (!dir)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    mkdirs(dir);
    char *path = embed_install_path(dir, name, 0);
    buf staging, err;
    buf_init(&staging, 0);
    buf_init(&err, 8192);
    buf_printf(&staging, "%s/.pull-%s", dir, name);
    free(dir);
    const char *token = getenv("HF_TOKEN");
    if (!token || !*token)
        token = getenv("HUGGING_FACE_HUB_TOKEN");
    pull_opts o = {cfg_str(m->cfg, CFG_HUB_ENDPOINT), repo, revision, token, progress, ud};
    char commit[48];
    int dims = 0;
    int rc = !path || buf_err(&staging) ? MNEMO_NOMEM
                                         : hub_pull(&o, staging.data, path, &dims, commit, &err);
    if (rc) {
        core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
    } else {
        buf j;
        model_json_head(&j, name, path);
        buf_printf(&j, ",\"provider\":\"local\",\"dims\":%d,\"repo\":", dims);
        buf_json_str(&j, repo, strlen(repo));
        buf_printf(&j, ",\"commit\":\"%s\"}", commit);
        if (!(*out = buf_detach(&j)))
            rc = MNEMO_NOMEM;
    }
    buf_cleanup(&staging);
    buf_cleanup(&err);
    free(path);
    return rc;
}

/* The embedding settings of the configuration for provider NAME; DIR is
 * the models folder (kept by the caller). */
static embed_cfg embed_settings(mnemo *m, const char *name, const char *dir)
{
    /* inputType sets both kinds where the specific key is not set. */
    const char *both = cfg_str(m->cfg, CFG_INPUT_TYPE);
    const char *qt = cfg_str(m->cfg, CFG_QUERY_INPUT_TYPE);
    const char *dt = cfg_str(m->cfg, CFG_DOCUMENT_INPUT_TYPE);
    embed_cfg c = {
        name,
        cfg_str(m->cfg, CFG_MODEL),
        cfg_str(m->cfg, CFG_BASE_URL),
        cfg_str(m->cfg, CFG_API_KEY_ENV),
        cfg_str(m->cfg, CFG_HEADERS),
        (int)cfg_int(m->cfg, CFG_DIMENSIONS),
        *qt ? qt : both,
        *dt ? dt : both,
        cfg_str(m->cfg, CFG_QUERY_PREFIX),
        cfg_str(m->cfg, CFG_DOCUMENT_PREFIX),
        (int)cfg_int(m->cfg, CFG_EMBED_BATCH_BYTES),
        (int)cfg_int(m->cfg, CFG_EMBED_CONCURRENCY),
        (int)cfg_int(m->cfg, CFG_EMBED_QUERY_TIMEOUT_MS),
        (int)cfg_int(m->cfg, CFG_EMBED_BATCH_TIMEOUT_MS),
        dir,
        (int)cfg_int(m->cfg, CFG_LOCAL_THREADS),
        strcmp(cfg_str(m->cfg, CFG_LOCAL_QUANTIZATION), "int8") == 0,
        cfg_str(m->cfg, CFG_COPILOT_TOKEN_URL),
    };
    return c;
}

int provider_embedder(mnemo *m, const char *name, embedder **out, buf *err)
{
    if (m->emb && strcmp(embed_provider(m->emb), name) == 0) {
        *out = m->emb;
        return MNEMO_OK;
    }
    embed_close(m->emb);
    m->emb = NULL;
    char *dir = models_dir(m);
    embed_cfg c = embed_settings(m, name, dir);
    int rc = embed_open(&c, &m->emb, err);
    free(dir);
    *out = m->emb;
    return rc;
}

json_t *provider_credentials(mnemo *m, const char *name)
{
    embed_cfg c = embed_settings(m, name, "");
    buf source, fix;
    buf_init(&source, 8192);
    buf_init(&fix, 8192);
    int found = embed_credentials(&c, &source, &fix);
    json_t *j = json_pack("{s:s,s:s}", "status",
                          found > 0 ? "ok" : found == 0 ? "missing" : "none", "detail",
                          source.data ? source.data : "");
    if (j && found == 0 && fix.data)
        json_object_set_new(j, "fix", json_string(fix.data));
    buf_cleanup(&source);
    buf_cleanup(&fix);
    return j;
}

void provider_identity(mnemo *m, embedder *e, char *out, size_t n)
{
    /* The configured dimensions, not the learned ones: they follow from the
     * model and the setting, and are unknown before the first answer. */
    /* A local model's weights fingerprint follows its name ("#..."), so
     * that another model imported under the same name makes the vectors
     * stale; other providers' identities are as before. */
    const char *ver = embed_model_version(e);
    /* Runs of vectorChars (p) follow the chunking; without them (0) the
     * identity is what it was before they existed. */
    char parts[32] = "";
    long vc = cfg_int(m->cfg, CFG_VECTOR_CHARS);
    if (vc > 0)
        snprintf(parts, sizeof parts, "p%ld", vc);
    snprintf(out, n, "%s|%s%s%s|%ld|c%ldo%ld%s|%s", embed_provider(e), embed_model(e),
             *ver ? "#" : "", ver, cfg_int(m->cfg, CFG_DIMENSIONS),
             cfg_int(m->cfg, CFG_CHUNK_TOKENS), cfg_int(m->cfg, CFG_CHUNK_OVERLAP), parts,
             cfg_str(m->cfg, CFG_DOCUMENT_PREFIX));
}

/* 2: a part an entry (1, before it: runs of about vectorChars). */
#define PARTS_RULE 2

void provider_chunk_identity(mnemo *m, embedder *e, char *out, size_t n)
{
    provider_identity(m, e, out, n);
    size_t len = strlen(out);
    if (cfg_int(m->cfg, CFG_VECTOR_CHARS) > 0 && len < n)
        snprintf(out + len, n - len, "|parts%d", PARTS_RULE);
}

void provider_calib_identity(mnemo *m, embedder *e, char *out, size_t n)
{
    provider_identity(m, e, out, n);
    size_t len = strlen(out);
    if (len < n)
        snprintf(out + len, n - len, "|calib%d", CALIB_VERSION);
}

void provider_unused_hint(const char *identity, char *from, buf *why)
{
    /* provider|model[#weights]|dims|cXoY|documentPrefix */
    const char *p = identity, *bar = strchr(p, '|');
    size_t pl = bar ? (size_t)(bar - p) : strlen(p);
    snprintf(from, 32, "%.*s", (int)(pl < 31 ? pl : 31), p);
    const char *mod = bar ? bar + 1 : "";
    const char *me = mod + strcspn(mod, "|#");
    const char *dims = strchr(mod, '|');
    long d = dims ? strtol(dims + 1, NULL, 10) : 0;
    int ml = (int)(me - mod);
    buf_printf(why, "vectors present but unused: the index holds %s vectors", from);
    if (ml)
        buf_printf(why, " (model %.*s)", ml, mod);
    buf_printf(why, " and no embedding provider is configured, so searches run keyword only; "
                    "run with --set provider=%s", from);
    if (ml)
        buf_printf(why, " --set model=%.*s", ml, mod);
    if (d > 0)
        buf_printf(why, " --set dimensions=%ld", d);
    buf_printf(why, ", or keep it: mnemo config set provider %s", from);
    if (ml)
        buf_printf(why, " && mnemo config set model %.*s", ml, mod);
    if (d > 0)
        buf_printf(why, " && mnemo config set dimensions %ld", d);
}

int provider_embed_json(mnemo *m, const char *const *texts, size_t n, int query, char **out)
{
    *out = NULL;
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    if (strcmp(name, "none") == 0)
        return core_error(m, MNEMO_UNAVAILABLE, "%s",
                          strcmp(cfg_str(m->cfg, CFG_PROVIDER), "none") == 0
                              ? "no embedding provider: provider is none (set provider, and "
                                "model for a static table)"
                              : "no embedding provider: provider auto found no static table "
                                "named by model and no provider's API key in the environment");
    buf err;
    buf_init(&err, 16384);
    embedder *e = NULL;
    float *v = NULL;
    json_t *root = NULL;
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    int rc = lens ? provider_embedder(m, name, &e, &err) : MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        lens[i] = strlen(texts[i]);
    if (!rc && n)
        rc = embed_texts(e, query ? EMBED_QUERY : EMBED_DOCUMENT, texts, lens, n, &v, &err);
    if (rc) {
        core_error(m, rc, "%s", err.len ? err.data : errcode_text(rc));
        goto done;
    }
    int dims = embed_dims(e);
    json_t *vectors = json_array();
    root = json_pack("{s:s,s:s,s:i,s:o}", "provider", embed_provider(e), "model", embed_model(e),
                     "dims", dims, "vectors", vectors);
    for (size_t i = 0; root && i < n; i++) {
        json_t *row = json_array();
        for (int j = 0; row && j < dims; j++)
            json_array_append_new(row, json_real((double)v[i * (size_t)dims + (size_t)j]));
        json_array_append_new(vectors, row);
    }
    if (root)
        *out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    if (!*out)
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
done:
    json_decref(root);
    free(v);
    free(lens);
    buf_cleanup(&err);
    return rc;
}
