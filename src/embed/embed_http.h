/*
 * embed_http.h - the HTTP providers (embed_http.c) as embed.c (the
 * interface and the static provider) drives them, and the embedder both
 * fill in. Below embed.h: it never includes it.
 */
#ifndef MNEMO_EMBED_HTTP_H
#define MNEMO_EMBED_HTTP_H

#include <stddef.h>

#include "embed/bedrock.h"
#include "embed/bert.h"
#include "embed/copilot.h"
#include "embed/embed_types.h"
#include "embed/model.h"
#include "embed/sigv4.h"
#include "text/tok.h"
#include "util/buf.h"

typedef struct http_state http_state;
typedef struct wire_ops wire_ops;

/* What computes the vectors: a static table, a local model, or a remote
 * provider through the steps of its wire format (embed_http.c). */
enum { WIRE_STATIC, WIRE_LOCAL, WIRE_OPENAI, WIRE_OLLAMA, WIRE_GEMINI, WIRE_BEDROCK, WIRE_COPILOT };

struct embedder {
    char *provider, *model, *base_url, *key, *headers_json;
    char *qtype, *dtype, *qprefix, *dprefix;
    const wire_ops *ops; /* remote: the steps of its wire format, set by embed_http_open */
    int wire;
    int dims;          /* configured or learned */
    int dims_fixed;    /* dims came from config or the table: responses must match */
    int send_dims;     /* send the dims parameter (configured explicitly) */
    int batch_bytes, max_inputs, concurrency;
    int query_timeout_ms, batch_timeout_ms;
    long requests, inputs;
    model *table;      /* static */
    tok *tok;          /* static: language none */
    bert *enc;         /* local */
    char version[40];  /* local: the weights' fingerprint, "+int8d" when quantized */
    http_state *http;  /* remote */
    aws_creds *aws;    /* bedrock: the keys requests are signed with (NULL: a bearer token) */
    const bedrock_model *bedrock; /* bedrock: the model's family and limits */
    char region[32];   /* bedrock */
    copilot *copilot;  /* github-copilot: the tokens; each request sends the current one */
    char region_source[320]; /* bedrock: where the region came from, for messages */
    char key_source[64]; /* where the API key came from, for messages */
    char *last_q;      /* the last query embedded and its vector: a search of */
    size_t last_qlen;  /* notes and facts asks for the same one twice */
    float *last_qv;
};

int embed_http_open(embedder *e, buf *err);
void embed_http_close(embedder *e);
int embed_http_texts(embedder *e, int type, const char *const *texts, const size_t *lens,
                     size_t n, float **out, buf *err);
/* Documents with media beside their labels (MEDIA[i]), one a request. */
int embed_http_media(embedder *e, const char *const *texts, const size_t *lens,
                     const embed_media *media, size_t n, float **out, buf *err);

#endif
