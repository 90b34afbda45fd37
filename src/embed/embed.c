/*
 * embed.c - the embedding interface, provider defaults, and the static
 * (in-process table) provider. HTTP providers live in embed_http.c.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/embed.h"
#include "embed/embed_http.h"
#include "util/errcode.h"
#include "mnemo.h"
#include "embed/vec.h"
#include "text/dsn.h"
#include "text/media.h"
#include "util/time.h"

typedef struct provider_def {
    const char *name;
    int wire;
    const char *base_url;
    const char *key_env;
    const char *key_env_also; /* read when key_env is unset or empty */
    const char *model;
    int dims;        /* of the default model; 0 = learn */
    int max_inputs;  /* per request */
    int concurrency; /* requests in flight it takes; 0 = as configured */
} provider_def;

static const provider_def providers[] = {
    {"static", WIRE_STATIC, "", NULL, NULL, "", 0, 0, 0},
    {"local", WIRE_LOCAL, "", NULL, NULL, "", 0, 0, 0},
    {"openai", WIRE_OPENAI, "https://api.openai.com/v1", "OPENAI_API_KEY", NULL,
     "text-embedding-3-small", 1536, 2048, 0},
    {"openai-compatible", WIRE_OPENAI, "", NULL, NULL, "", 0, 2048, 0},
    {"ollama", WIRE_OLLAMA, "http://127.0.0.1:11434", NULL, NULL, "nomic-embed-text", 0, 512, 1},
    {"gemini", WIRE_GEMINI, "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY",
     "GOOGLE_API_KEY", "gemini-embedding-001", 3072, 100, 0},
    {"voyage", WIRE_OPENAI, "https://api.voyageai.com/v1", "VOYAGE_API_KEY", NULL, "voyage-3.5",
     1024, 1000, 0},
    {"mistral", WIRE_OPENAI, "https://api.mistral.ai/v1", "MISTRAL_API_KEY", NULL,
     "mistral-embed", 1024, 512, 0},
    {"deepinfra", WIRE_OPENAI, "https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY",
     NULL, "BAAI/bge-m3", 1024, 512, 0},
    /* the URL comes from the region; the bearer token is optional (else AWS keys) */
    {"bedrock", WIRE_BEDROCK, "", NULL, NULL, "amazon.titan-embed-text-v2:0", 1024, 1, 0},
    /* the URL comes from the Copilot token; the key is a GitHub token exchanged for it */
    {"github-copilot", WIRE_COPILOT, "", NULL, NULL, "text-embedding-3-small", 0, 512, 0},
};

/* Dimensions of well-known models, for providers that serve several. */
static const struct {
    const char *model;
    int dims;
} known_models[] = {
    {"text-embedding-3-small", 1536}, {"text-embedding-3-large", 3072},
    {"text-embedding-ada-002", 1536}, {"text-embedding-004", 768},
    {"gemini-embedding-001", 3072},   {"gemini-embedding-2-preview", 3072},
    {"voyage-3", 1024},
    {"voyage-3.5", 1024},             {"voyage-3-lite", 512},
    {"voyage-3.5-lite", 1024},        {"mistral-embed", 1024},
    {"BAAI/bge-m3", 1024},
};

static const provider_def *find_provider(const char *name)
{
    for (size_t i = 0; i < sizeof providers / sizeof *providers; i++)
        if (strcmp(providers[i].name, name) == 0)
            return &providers[i];
    return NULL;
}

const char *embed_api_key(const char *provider, const char *key_env, const char **var)
{
    const provider_def *p = find_provider(provider);
    int own = !key_env || !*key_env;
    const char *name = own ? (p ? p->key_env : NULL) : key_env;
    if (var)
        *var = name;
    const char *key = name ? getenv(name) : NULL;
    if ((!key || !*key) && own && p && p->key_env_also)
        key = getenv(p->key_env_also);
    return key && *key ? key : NULL;
}

char *embed_table_path(const char *models_dir, const char *name)
{
    struct stat st;
    buf b;
    buf_init(&b, 8192);
    if (strchr(name, '/') || stat(name, &st) == 0) {
        buf_puts(&b, name);
    } else {
        size_t n = strlen(name);
        buf_printf(&b, "%s/%s%s", models_dir ? models_dir : ".", name,
                   n > 4 && strcmp(name + n - 4, ".mnv") == 0 ? "" : ".mnv");
    }
    return buf_detach(&b);
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

char *embed_model_dir(const char *models_dir, const char *name)
{
    struct stat st;
    buf b;
    buf_init(&b, 8192);
    if (strchr(name, '/') || (stat(name, &st) == 0 && S_ISDIR(st.st_mode)))
        buf_puts(&b, name);
    else
        buf_printf(&b, "%s/%s", models_dir ? models_dir : ".", name);
    return buf_detach(&b);
}

char *embed_install_path(const char *models_dir, const char *name, int table)
{
    buf b;
    buf_init(&b, 8192);
    size_t n = strlen(name);
    buf_printf(&b, "%s/%s%s", models_dir, name,
               table && !(n > 4 && strcmp(name + n - 4, ".mnv") == 0) ? ".mnv" : "");
    return buf_detach(&b);
}

/* The prompts of model families whose folders carry none: E5 wants
 * "query: " and "passage: ", BGE (English v1.5) an instruction before
 * queries. */
static void family_prompts(const char *name, const char **q, const char **d)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strstr(base, "e5-") || strstr(base, "e5_")) {
        *q = "query: ";
        *d = "passage: ";
    } else if (strstr(base, "bge-") && strstr(base, "-en")) {
        *q = "Represent this sentence for searching relevant passages: ";
        *d = "";
    }
}

/* Levenshtein distance of A and B, stopping at 9 (names of 64 bytes at most). */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64)
        return 9;
    int row[65];
    for (size_t j = 0; j <= m; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j];
            int sub = diag + (a[i - 1] != b[j - 1]);
            int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[m] > 9 ? 9 : row[m];
}

void embed_installed_hint(const char *models_dir, const char *name, buf *out)
{
    DIR *d = models_dir ? opendir(models_dir) : NULL;
    if (!d) {
        buf_printf(out, "; none is installed in %s (mnemo model import DIR --name NAME, or "
                        "mnemo model pull REPO)",
                   models_dir ? models_dir : "the models folder");
        return;
    }
    char best[256] = "", list[512] = "";
    int best_d = 3, n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char nm[256];
        snprintf(nm, sizeof nm, "%s", de->d_name);
        size_t l = strlen(nm);
        if (l > 4 && !strcmp(nm + l - 4, ".mnv"))
            nm[l - 4] = 0; /* a static table */
        int dd = distance(name, nm);
        if (dd < best_d) {
            best_d = dd;
            snprintf(best, sizeof best, "%s", nm);
        }
        size_t ll = strlen(list);
        if (n++ < 8 && ll + l + 3 < sizeof list)
            snprintf(list + ll, sizeof list - ll, "%s%s", ll ? ", " : "", nm);
    }
    closedir(d);
    if (best[0])
        buf_printf(out, "; did you mean '%s'?", best);
    if (n)
        buf_printf(out, " (installed in %s: %s%s)", models_dir, list, n > 8 ? ", ..." : "");
    else
        buf_printf(out, "; none is installed in %s (mnemo model import DIR --name NAME, or "
                        "mnemo model pull REPO)",
                   models_dir);
}

/* Provider "local": the model folder named by model, in process. */
static int local_open(embedder *e, const embed_cfg *c, buf *err)
{
    if (!*e->model) {
        buf_printf(err, "local: no model configured; import a model folder with `mnemo model "
                        "import DIR --name NAME` and set model to NAME (or to the folder)");
        return MNEMO_INVALID;
    }
    char *dir = embed_model_dir(c->models_dir, e->model);
    if (!dir)
        return MNEMO_NOMEM;
    buf merr;
    buf_init(&merr, 4096);
    int rc = bert_open(dir, c->threads, &e->enc, &merr);
    if (rc == MNEMO_NOTFOUND) {
        buf_printf(err, "local: no model folder %s (import one with: mnemo model import DIR "
                        "--name %s)",
                   dir, e->model);
        if (!strchr(e->model, '/'))
            embed_installed_hint(c->models_dir, e->model, err);
    }
    else if (rc)
        buf_printf(err, "local: %s", merr.data ? merr.data : errcode_text(rc));
    buf_cleanup(&merr);
    free(dir);
    if (rc)
        return rc == MNEMO_NOTFOUND ? MNEMO_UNAVAILABLE : rc;
    if (c->int8 && (rc = bert_quantize(e->enc))) {
        buf_printf(err, "local: out of memory making the weights int8");
        return rc;
    }
    snprintf(e->version, sizeof e->version, "%s%s", bert_fingerprint(e->enc),
             c->int8 ? "+int8d" : "");
    e->dims = bert_dims(e->enc);
    e->dims_fixed = 1;
    /* Prompts: the configured ones, else the model's own, else its
     * family's. */
    const char *q = bert_query_prompt(e->enc), *d = bert_document_prompt(e->enc);
    if (!*q && !*d)
        family_prompts(e->model, &q, &d);
    if (!*e->qprefix && *q) {
        free(e->qprefix);
        if (!(e->qprefix = strdup(q)))
            return MNEMO_NOMEM;
    }
    if (!*e->dprefix && *d) {
        free(e->dprefix);
        if (!(e->dprefix = strdup(d)))
            return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

/* Provider "bedrock": the model's family, the region and endpoint, and
 * the credentials: a bearer token (AWS_BEARER_TOKEN_BEDROCK, or the
 * variable apiKeyEnv names), else AWS keys to sign each request with. */
static int bedrock_open(embedder *e, const embed_cfg *c, buf *err)
{
    e->bedrock = bedrock_find(e->model);
    if (!e->bedrock) {
        buf_printf(err, "bedrock: unknown embedding model '%s' (known: %s; an inference-profile "
                        "prefix such as us. is allowed)",
                   e->model, bedrock_models());
        return MNEMO_INVALID;
    }
    e->dims = c->dims > 0 ? c->dims : e->bedrock->dims;
    if (!bedrock_size_ok(e->bedrock, e->dims)) {
        buf_printf(err, "bedrock: %s makes vectors of %s dimensions, not %d", e->model,
                   e->bedrock->sizes, e->dims);
        return MNEMO_INVALID;
    }
    e->dims_fixed = 1;
    e->max_inputs = e->bedrock->max_inputs;
    /* A configured endpoint wins; the region then comes from its host or
     * the environment (it is part of the signature). */
    bedrock_region(e->base_url, e->region, sizeof e->region, e->region_source,
                   sizeof e->region_source);
    if (!*e->base_url) {
        buf u;
        buf_init(&u, 4096);
        buf_printf(&u, "https://bedrock-runtime.%s.amazonaws.com", e->region);
        free(e->base_url);
        if (!(e->base_url = buf_detach(&u)))
            return MNEMO_NOMEM;
    } else {
        size_t n = strlen(e->base_url);
        while (n && e->base_url[n - 1] == '/')
            e->base_url[--n] = 0;
    }
    const char *var = c->api_key_env && *c->api_key_env ? c->api_key_env
                                                        : "AWS_BEARER_TOKEN_BEDROCK";
    const char *token = getenv(var);
    if (token && *token) {
        if (!(e->key = strdup(token)))
            return MNEMO_NOMEM;
        snprintf(e->key_source, sizeof e->key_source, "%s", var);
    } else {
        if (!(e->aws = calloc(1, sizeof *e->aws)))
            return MNEMO_NOMEM;
        int rc = aws_creds_load(e->aws, err);
        if (rc) {
            free(e->aws);
            e->aws = NULL;
            return rc;
        }
    }
    return embed_http_open(e, err);
}

/* Provider "github-copilot": the GitHub token, a Copilot token (the
 * cached one while it lasts, else an exchange), the API base it names
 * (baseUrl wins), and the model among the embedding models offered. */
static int copilot_embed_open(embedder *e, const embed_cfg *c, buf *err)
{
    int rc = copilot_open(&e->copilot, c->api_key_env, c->copilot_token_url,
                          e->query_timeout_ms, err);
    if (rc)
        return rc;
    copilot *cp = e->copilot;
    if (copilot_stale(cp, time_wall()) && (rc = copilot_exchange(cp, e->headers_json, err)))
        return rc;
    if (!*e->base_url) {
        char base[512];
        copilot_api_base(cp->token, base, sizeof base);
        free(e->base_url);
        if (!(e->base_url = strdup(base)))
            return MNEMO_NOMEM;
    }
    size_t n = strlen(e->base_url);
    while (n && e->base_url[n - 1] == '/')
        e->base_url[--n] = 0;
    if ((!cp->models || !cp->models_base || strcmp(cp->models_base, e->base_url) != 0) &&
        (rc = copilot_list_models(cp, e->base_url, e->headers_json, err)))
        return rc;
    if (!*cp->models) {
        buf_printf(err, "github-copilot: this account is offered no embedding model at %s",
                   e->base_url);
        return MNEMO_UNAVAILABLE;
    }
    if (!copilot_offers(cp->models, e->model)) {
        if (c->model && *c->model) {
            buf_printf(err, "github-copilot: model '%s' is not offered for embeddings (offered: "
                            "%s)",
                       e->model, cp->models);
            return MNEMO_INVALID;
        }
        /* The preferred default is not offered: the first model that is. */
        free(e->model);
        if (!(e->model = strndup(cp->models, strcspn(cp->models, ","))))
            return MNEMO_NOMEM;
    }
    if (c->dims > 0) {
        e->dims = c->dims;
        e->dims_fixed = 1;
        e->send_dims = 1;
    } else if (strcmp(e->model, "text-embedding-3-small") == 0) {
        e->dims = 1536;
        e->dims_fixed = 1;
    }
    return embed_http_open(e, err);
}

void embed_close(embedder *e)
{
    if (!e)
        return;
    if (e->http)
        embed_http_close(e);
    model_close(e->table);
    bert_close(e->enc);
    tok_free(e->tok);
    free(e->provider);
    free(e->model);
    free(e->base_url);
    if (e->key) {
        memset(e->key, 0, strlen(e->key)); /* do not leave keys in freed memory */
        free(e->key);
    }
    if (e->aws) {
        aws_creds_clear(e->aws);
        free(e->aws);
    }
    copilot_free(e->copilot);
    free(e->headers_json);
    free(e->qtype);
    free(e->dtype);
    free(e->qprefix);
    free(e->dprefix);
    free(e->last_q);
    free(e->last_qv);
    free(e);
}

int embed_open(const embed_cfg *c, embedder **out, buf *err)
{
    *out = NULL;
    const provider_def *p = find_provider(c->provider ? c->provider : "");
    if (!p) {
        buf_printf(err, "unknown embedding provider '%s' (local, static, openai, "
                        "openai-compatible, ollama, gemini, voyage, mistral, deepinfra, bedrock, "
                        "github-copilot, none, auto)",
                   c->provider ? c->provider : "");
        return MNEMO_INVALID;
    }
    embedder *e = calloc(1, sizeof *e);
    if (!e)
        return MNEMO_NOMEM;
    int rc = MNEMO_OK;
    e->wire = p->wire;
    e->provider = strdup(p->name);
    e->model = strdup(c->model && *c->model ? c->model : p->model);
    e->base_url = strdup(c->base_url && *c->base_url ? c->base_url : p->base_url);
    e->headers_json = dup_or_empty(c->headers_json);
    e->qtype = dup_or_empty(c->query_input_type);
    e->dtype = dup_or_empty(c->document_input_type);
    e->qprefix = dup_or_empty(c->query_prefix);
    e->dprefix = dup_or_empty(c->document_prefix);
    if (!e->provider || !e->model || !e->base_url || !e->headers_json || !e->qtype ||
        !e->dtype || !e->qprefix || !e->dprefix) {
        rc = MNEMO_NOMEM;
        goto fail;
    }
    e->batch_bytes = c->batch_bytes > 0 ? c->batch_bytes : 8000;
    e->max_inputs = p->max_inputs;
    e->concurrency = p->concurrency ? p->concurrency : c->concurrency > 0 ? c->concurrency : 4;
    e->query_timeout_ms = c->query_timeout_ms > 0 ? c->query_timeout_ms : 10000;
    e->batch_timeout_ms = c->batch_timeout_ms > 0 ? c->batch_timeout_ms : 120000;

    if (p->wire == WIRE_STATIC) {
        if (!*e->model) {
            buf_printf(err, "static: no table configured; import one with `mnemo model import "
                            "FILE` and set model to its name");
            rc = MNEMO_INVALID;
            goto fail;
        }
        char *path = embed_table_path(c->models_dir, e->model);
        if (!path) {
            rc = MNEMO_NOMEM;
            goto fail;
        }
        buf merr;
        buf_init(&merr, 4096);
        rc = model_open(path, &e->table, &merr);
        if (rc == MNEMO_NOTFOUND) {
            buf_printf(err, "static: no embedding table %s (import one with: mnemo model import "
                            "FILE --name %s)",
                       path, e->model);
            if (!strchr(e->model, '/'))
                embed_installed_hint(c->models_dir, e->model, err);
        } else if (rc)
            buf_printf(err, "static: %s", merr.data ? merr.data : errcode_text(rc));
        buf_cleanup(&merr);
        free(path);
        if (rc) {
            rc = rc == MNEMO_NOTFOUND ? MNEMO_UNAVAILABLE : rc;
            goto fail;
        }
        e->dims = model_dims(e->table);
        e->dims_fixed = 1;
        if ((rc = tok_new("none", 0, &e->tok)))
            goto fail;
        *out = e;
        return MNEMO_OK;
    }

    if (p->wire == WIRE_LOCAL) {
        if ((rc = local_open(e, c, err)))
            goto fail;
        *out = e;
        return MNEMO_OK;
    }

    if (p->wire == WIRE_BEDROCK) {
        if ((rc = bedrock_open(e, c, err)))
            goto fail;
        *out = e;
        return MNEMO_OK;
    }

    if (p->wire == WIRE_COPILOT) {
        if ((rc = copilot_embed_open(e, c, err)))
            goto fail;
        *out = e;
        return MNEMO_OK;
    }

    if (!*e->base_url) {
        buf_printf(err, "%s: baseUrl is required (e.g. http://127.0.0.1:8080/v1)", p->name);
        rc = MNEMO_INVALID;
        goto fail;
    }
    const char *key_env;
    const char *key = embed_api_key(p->name, c->api_key_env, &key_env);
    if (key_env) {
        if (!key) {
            buf_printf(err, "%s: no API key (set %s)", p->name, key_env);
            rc = MNEMO_UNAVAILABLE;
            goto fail;
        }
        if (!(e->key = strdup(key))) {
            rc = MNEMO_NOMEM;
            goto fail;
        }
    }
    if (c->dims > 0) {
        e->dims = c->dims;
        e->dims_fixed = 1;
        e->send_dims = 1;
    } else {
        for (size_t i = 0; i < sizeof known_models / sizeof *known_models; i++)
            if (strcmp(known_models[i].model, e->model) == 0) {
                e->dims = known_models[i].dims;
                e->dims_fixed = 1;
            }
    }
    if ((rc = embed_http_open(e, err)))
        goto fail;
    *out = e;
    return MNEMO_OK;
fail:
    embed_close(e);
    return rc;
}

/* Bedrock: the bearer token, else AWS keys from where the SDKs look. */
static int bedrock_credentials(const embed_cfg *c, buf *source, buf *fix)
{
    const char *var = c->api_key_env && *c->api_key_env ? c->api_key_env
                                                        : "AWS_BEARER_TOKEN_BEDROCK";
    const char *token = getenv(var);
    if (token && *token) {
        buf_printf(source, "bearer token from %s", var);
        return 1;
    }
    aws_creds a;
    int rc = aws_creds_load(&a, source);
    if (rc == MNEMO_OK) {
        buf_printf(source, "AWS keys from %s", a.source);
        aws_creds_clear(&a);
        return 1;
    }
    buf_printf(fix, "set %s, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or keys for the "
                    "profile in ~/.aws/credentials (AWS_PROFILE; aws configure)",
               var);
    return rc == MNEMO_NOMEM ? -1 : 0;
}

/* Copilot: the GitHub token's variable, and the cached Copilot token: until
 * when it serves, or that the next request exchanges one. */
static int copilot_credentials(const embed_cfg *c, buf *source, buf *fix)
{
    copilot *cp = NULL;
    buf err;
    buf_init(&err, 4096);
    int rc = copilot_open(&cp, c->api_key_env, c->copilot_token_url, 0, &err);
    buf_cleanup(&err);
    if (rc) {
        const char *var;
        copilot_github_token(c->api_key_env, &var);
        buf_printf(source, "no GitHub token (%s unset)", var);
        buf_printf(fix, "export %s=... with a token of an account with Copilot (e.g. export "
                        "%s=$(gh auth token))",
                   c->api_key_env && *c->api_key_env ? c->api_key_env : "GH_TOKEN",
                   c->api_key_env && *c->api_key_env ? c->api_key_env : "GH_TOKEN");
        return rc == MNEMO_NOMEM ? -1 : 0;
    }
    char when[32];
    double now = time_wall();
    buf url;
    buf_init(&url, 8192);
    dsn_redact(&url, cp->token_url, NULL);
    const char *shown = url.data ? url.data : "";
    buf_printf(source, "GitHub token from %s; ", cp->gh_source);
    if (cp->token && !copilot_stale(cp, now)) {
        time_format_iso(cp->expires_at, when);
        buf_printf(source, "cached Copilot token valid until %s", when);
    } else if (cp->token) {
        time_format_iso(cp->expires_at, when);
        buf_printf(source, "the cached Copilot token %s %s: the next request exchanges a new one "
                           "at %s",
                   cp->expires_at <= now ? "expired at" : "expires soon, at", when, shown);
    } else {
        buf_printf(source, "no cached Copilot token: the next request exchanges it at %s",
                   shown);
    }
    buf_cleanup(&url);
    copilot_free(cp);
    return 1;
}

int embed_credentials(const embed_cfg *c, buf *source, buf *fix)
{
    const provider_def *p = find_provider(c->provider ? c->provider : "");
    if (!p) {
        buf_printf(source, "unknown provider '%s'", c->provider ? c->provider : "");
        return -1;
    }
    if (p->wire == WIRE_BEDROCK)
        return bedrock_credentials(c, source, fix);
    if (p->wire == WIRE_COPILOT)
        return copilot_credentials(c, source, fix);
    const char *var;
    const char *key = embed_api_key(p->name, c->api_key_env, &var);
    if (!var) {
        buf_printf(source, "%s takes no API key%s", p->name,
                   p->wire == WIRE_OPENAI ? " (none configured: apiKeyEnv is unset)" : "");
        return -1;
    }
    if (key) {
        /* Gemini's second variable when the first is unset. */
        const char *from = getenv(var) && *getenv(var) ? var : p->key_env_also;
        buf_printf(source, "API key from %s", from ? from : var);
        return 1;
    }
    buf_printf(source, "no API key (%s%s%s unset)", var,
               p->key_env_also && (!c->api_key_env || !*c->api_key_env) ? " and " : "",
               p->key_env_also && (!c->api_key_env || !*c->api_key_env) ? p->key_env_also : "");
    buf_printf(fix, "export %s=... (or name another variable with apiKeyEnv)", var);
    return 0;
}

const char *embed_provider(const embedder *e) { return e->provider; }
const char *embed_model(const embedder *e) { return e->model; }
const char *embed_model_version(const embedder *e)
{
    return e->enc ? e->version : "";
}
int embed_dims(const embedder *e) { return e->dims; }

void embed_counters(const embedder *e, long *requests, long *inputs)
{
    if (requests)
        *requests = e->requests;
    if (inputs)
        *inputs = e->inputs;
}

static int static_texts(embedder *e, int type, const char *const *texts, const size_t *lens,
                        size_t n, float **out)
{
    size_t d = (size_t)e->dims;
    float *v = malloc((n ? n : 1) * d * sizeof *v);
    if (!v)
        return MNEMO_NOMEM;
    const char *prefix = type == EMBED_QUERY ? e->qprefix : e->dprefix;
    buf tmp;
    buf_init(&tmp, 0);
    for (size_t i = 0; i < n; i++) {
        const char *t = texts[i];
        size_t len = lens[i];
        if (*prefix) {
            buf_reset(&tmp);
            buf_puts(&tmp, prefix);
            buf_append(&tmp, texts[i], lens[i]);
            if (buf_err(&tmp)) {
                buf_cleanup(&tmp);
                free(v);
                return MNEMO_NOMEM;
            }
            t = tmp.data;
            len = tmp.len;
        }
        model_embed(e->table, e->tok, t, len, v + i * d);
    }
    buf_cleanup(&tmp);
    e->requests++;
    e->inputs += (long)n;
    *out = v;
    return MNEMO_OK;
}

/* Provider "local": the texts with their prompt, through the encoder. */
static int local_texts(embedder *e, int type, const char *const *texts, const size_t *lens,
                       size_t n, float **out, buf *err)
{
    const char *prefix = type == EMBED_QUERY ? e->qprefix : e->dprefix;
    size_t plen = strlen(prefix);
    float *v = malloc((n ? n : 1) * (size_t)e->dims * sizeof *v);
    char **own = plen ? calloc(n ? n : 1, sizeof *own) : NULL;
    size_t *ol = plen ? malloc((n ? n : 1) * sizeof *ol) : NULL;
    int rc = v && (!plen || (own && ol)) ? MNEMO_OK : MNEMO_NOMEM;
    for (size_t i = 0; !rc && plen && i < n; i++) {
        if (!(own[i] = malloc(plen + lens[i] + 1))) {
            rc = MNEMO_NOMEM;
            break;
        }
        memcpy(own[i], prefix, plen);
        memcpy(own[i] + plen, texts[i], lens[i]);
        own[i][plen + lens[i]] = 0;
        ol[i] = plen + lens[i];
    }
    if (!rc)
        rc = plen ? bert_embed(e->enc, (const char *const *)own, ol, n, v)
                  : bert_embed(e->enc, texts, lens, n, v);
    for (size_t i = 0; own && i < n; i++)
        free(own[i]);
    free(own);
    free(ol);
    if (rc) {
        buf_printf(err, "local: %s", errcode_text(rc));
        free(v);
        return rc;
    }
    e->requests++;
    e->inputs += (long)n;
    *out = v;
    return MNEMO_OK;
}

int embed_texts(embedder *e, int type, const char *const *texts, const size_t *lens, size_t n,
                float **out, buf *err)
{
    *out = NULL;
    if (e->wire == WIRE_STATIC)
        return static_texts(e, type, texts, lens, n, out);
    size_t bytes = (size_t)e->dims * sizeof(float);
    int one_query = type == EMBED_QUERY && n == 1;
    if (one_query && e->last_qv && lens[0] == e->last_qlen &&
        memcmp(texts[0], e->last_q, lens[0]) == 0) {
        if (!(*out = malloc(bytes)))
            return MNEMO_NOMEM;
        memcpy(*out, e->last_qv, bytes);
        return MNEMO_OK;
    }
    int rc = e->wire == WIRE_LOCAL ? local_texts(e, type, texts, lens, n, out, err)
                                   : embed_http_texts(e, type, texts, lens, n, out, err);
    if (rc == MNEMO_OK && one_query) {
        bytes = (size_t)e->dims * sizeof(float); /* learned by a first answer */
        free(e->last_q);
        free(e->last_qv);
        e->last_q = malloc(lens[0] + 1);
        e->last_qv = malloc(bytes);
        if (e->last_q && e->last_qv) {
            memcpy(e->last_q, texts[0], lens[0]);
            memcpy(e->last_qv, *out, bytes);
            e->last_qlen = lens[0];
        } else {
            free(e->last_q);
            free(e->last_qv);
            e->last_q = NULL;
            e->last_qv = NULL;
        }
    }
    return rc;
}

int embed_media_support(const char *provider, const char *model_name)
{
    /* Gemini's second embedding model takes images and audio beside text
     * in one space; the first and the other providers' text models do not. */
    if (strcmp(provider, "gemini") == 0 && !strncmp(model_name, "gemini-embedding-2", 18))
        return MEDIA_IMAGE | MEDIA_AUDIO;
    return 0;
}

int embed_media_docs(embedder *e, const char *const *texts, const size_t *lens,
                     const embed_media *media, size_t n, float **out, buf *err)
{
    *out = NULL;
    if (!embed_media_support(e->provider, e->model)) {
        buf_printf(err, "%s: model %s embeds no images or audio (multimodal needs gemini "
                        "with gemini-embedding-2-preview)", e->provider, e->model);
        return MNEMO_INVALID;
    }
    return embed_http_media(e, texts, lens, media, n, out, err);
}

/* Whether a thread for the query pays: a provider's round trip always
 * does; a local model only when it leaves a core free (the first short
 * call of a process runs on one thread; later ones use them all, and
 * the caller's work beside them only slows both); a table lookup takes
 * microseconds. */
static int j_parallel(const embedder *e, size_t len)
{
    if (e->wire == WIRE_STATIC)
        return 0;
    if (e->wire != WIRE_LOCAL)
        return 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return bert_threads_for(e->enc, strlen(e->qprefix) + len) < ncpu;
}

static void *job_run(void *arg)
{
    embed_job *j = arg;
    j->rc = embed_texts(j->e, j->type, &j->text, &j->len, 1, &j->out, &j->err);
    return NULL;
}

void embed_start(embed_job *j, embedder *e, int type, const char *text, size_t len)
{
    j->e = e;
    j->type = type;
    j->text = text;
    j->len = len;
    j->out = NULL;
    j->rc = MNEMO_OK;
    j->threaded = 0;
    buf_init(&j->err, 8192);
    if (j_parallel(e, len) && pthread_create(&j->tid, NULL, job_run, j) == 0)
        j->threaded = 1; /* else embed_finish embeds it */
}

int embed_finish(embed_job *j, float **out, buf *err)
{
    if (j->threaded)
        pthread_join(j->tid, NULL);
    else
        job_run(j);
    j->threaded = 0;
    if (j->err.len)
        buf_append(err, j->err.data, j->err.len);
    buf_cleanup(&j->err);
    *out = j->out;
    j->out = NULL;
    return j->rc;
}

void embed_drop(embed_job *j)
{
    if (j->threaded)
        pthread_join(j->tid, NULL);
    j->threaded = 0;
    free(j->out);
    j->out = NULL;
    buf_cleanup(&j->err);
}
