/*
 * embed.h - embedding providers behind one interface.
 *
 * Providers: "local" (a transformer model folder run in process, bert.h),
 * "static" (an imported table, in process), and over HTTP
 * "openai", "openai-compatible", "ollama", "gemini", "voyage", "mistral",
 * "deepinfra", "bedrock" (bedrock.h) and "github-copilot" (copilot.h).
 * Every vector returned is L2-normalised, so cosine similarity is a dot
 * product. Remote providers batch inputs (by bytes and by the provider's
 * input limit), keep up to `concurrency` requests in flight on kept-alive
 * connections, split a batch the server rejects as too large, and retry:
 * network errors and 5xx three tries with exponential backoff and jitter
 * (0.5 s to 8 s), 429 up to five tries honouring Retry-After. A response with
 * the wrong number of vectors or the wrong dimension is an error. API keys
 * are read from the environment and never appear in messages.
 */
#ifndef MNEMO_EMBED_H
#define MNEMO_EMBED_H

#include <pthread.h>
#include <stddef.h>

#include "embed/embed_types.h"
#include "util/buf.h"

typedef struct embed_cfg {
    const char *provider;      /* a provider name, not "auto" or "none" */
    const char *model;         /* "" = the provider's default */
    const char *base_url;      /* "" = the provider's default */
    const char *api_key_env;   /* "" = the provider's default variable */
    const char *headers_json;  /* JSON object of extra headers, or "" */
    int dims;                  /* 0 = the model's default */
    const char *query_input_type, *document_input_type; /* "" = provider default */
    const char *query_prefix, *document_prefix;
    int batch_bytes;           /* UTF-8 bytes per request */
    int concurrency;           /* requests in flight (ollama: 1) */
    int query_timeout_ms, batch_timeout_ms;
    const char *models_dir;    /* where `mnemo model import` puts tables and model folders */
    int threads;               /* local: encoder threads, 0 = one per core */
    int int8;                  /* local: int8 weights (bert_quantize) */
    const char *copilot_token_url; /* github-copilot: "" = from COPILOT_GITHUB_DOMAIN */
} embed_cfg;


/* Opens a provider. MNEMO_INVALID for an unknown provider or missing
 * setting, MNEMO_UNAVAILABLE for a missing API key or table; ERR says which. */
int embed_open(const embed_cfg *c, embedder **out, buf *err);
void embed_close(embedder *e);

const char *embed_provider(const embedder *e);
const char *embed_model(const embedder *e);
/* What tells two models of one name apart: "" for providers that cannot
 * know, the weights' fingerprint for local models. */
const char *embed_model_version(const embedder *e);
/* Dimensions: known at open for static tables and configured or known
 * models, otherwise learned from the first response (0 until then). */
int embed_dims(const embedder *e);

/* Embeds TEXTS[0..N) (LENS[i] bytes each) as queries or documents. On
 * success *OUT holds N x dims floats (caller frees with free()). Errors:
 * MNEMO_HTTP, MNEMO_TIMEOUT, MNEMO_UNAVAILABLE, MNEMO_INVALID (bad
 * response), with "provider: what happened" in ERR. */
int embed_texts(embedder *e, int type, const char *const *texts, const size_t *lens, size_t n,
                float **out, buf *err);

/* The media (MEDIA_IMAGE | MEDIA_AUDIO, text/media.h) PROVIDER's MODEL
 * ("" its default) embeds beside text: 0 for text only. */
int embed_media_support(const char *provider, const char *model_name);

/* Embeds documents TEXTS[0..N) (their labels) each with MEDIA[i], as
 * embed_texts does texts. MNEMO_INVALID when E embeds no media. */
int embed_media_docs(embedder *e, const char *const *texts, const size_t *lens,
                     const embed_media *media, size_t n, float **out, buf *err);

/* One query embedded while the caller does other work (the keyword leg of
 * a search): embed_start hands TEXT (LEN bytes, kept alive by the caller
 * until embed_finish) to a thread where that pays (a provider's round
 * trip; a local model that leaves a core free), and embed_finish waits
 * for it, or embeds the text itself, and returns what embed_texts would
 * have (*OUT, ERR). The embedder must not be used by anyone else in
 * between. */
typedef struct embed_job {
    embedder *e;
    int type;
    const char *text;
    size_t len;
    float *out;
    buf err;
    int rc, threaded;
    pthread_t tid;
} embed_job;

void embed_start(embed_job *j, embedder *e, int type, const char *text, size_t len);
int embed_finish(embed_job *j, float **out, buf *err);
/* Ends a job whose vector is no longer wanted. */
void embed_drop(embed_job *j);

/* Statistics since open: requests sent (including retries) and inputs. */
void embed_counters(const embedder *e, long *requests, long *inputs);

/* PROVIDER's API key from the environment: the variable KEY_ENV names
 * when KEY_ENV is set (non-empty), else the provider's own (for gemini
 * GEMINI_API_KEY, then GOOGLE_API_KEY). NULL when it is unset or empty, or
 * when the provider takes no key. *VAR (may be NULL) receives the variable
 * to name in an error, NULL for a provider without one. */
const char *embed_api_key(const char *provider, const char *key_env, const char **var);

/* Where PROVIDER's credentials come from, found without a request (the
 * variable, the AWS profile or file, a cached Copilot token and until
 * when), into SOURCE, or what is missing and how to fix it into FIX;
 * never a secret. 1 when there are credentials, 0 when they are missing,
 * -1 for a provider that takes none (SOURCE says so). */
int embed_credentials(const embed_cfg *c, buf *source, buf *fix);

/* Resolves a local model name to a folder: an existing folder (or any
 * name with a slash) as given, else MODELS_DIR/NAME. Caller frees. */
char *embed_model_dir(const char *models_dir, const char *name);

/* Appends to OUT what is installed in MODELS_DIR for a NAME that is not:
 * "; did you mean 'X'?" for a close name, and the names there (or how to
 * install one). */
void embed_installed_hint(const char *models_dir, const char *name, buf *out);

/* Where an import or a download named NAME (a plain file name) goes:
 * always inside MODELS_DIR (a folder, or with TABLE a .mnv file), whatever
 * the current directory holds. Caller frees. */
char *embed_install_path(const char *models_dir, const char *name, int table);

/* Resolves a static table name to a path: an existing file as given, else
 * MODELS_DIR/NAME.mnv. Caller frees. */
char *embed_table_path(const char *models_dir, const char *name);

#endif
