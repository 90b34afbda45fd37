/*
 * embed_http.c - embedding over HTTP with libcurl (see embed.h for the
 * policy: batching, concurrency, splitting, retries, validation).
 *
 * One curl multi handle per embedder keeps connections alive across calls.
 * A call plans batches, then runs a small scheduler: up to `concurrency`
 * requests in flight, each finished request either fills its rows of the
 * output, is queued again (retry after a delay, or split in two), or fails
 * the whole call. What differs between the providers' APIs (the URL, the
 * body, the key's header, the answer's shape) is one table per wire format.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed/bedrock.h"
#include "embed/curl_dl.h"
#include "embed/embed_http.h"
#include "util/jsonvec.h"
#include "mnemo.h"
#include "text/dsn.h"
#include "util/time.h"
#include "embed/vec.h"

#define MAX_CONCURRENCY 16
#define MAX_RESPONSE (256u << 20)
#define NET_TRIES 3
#define RATE_TRIES 5
#define BACKOFF_MIN 0.5
#define BACKOFF_MAX 8.0

/* libcurl, loaded by the first embed_http_open(). */
static const curl_api *C;

struct http_state {
    CURLM *multi;
    struct curl_slist *headers;
    uint64_t rng;
    char *shown_url; /* base_url as messages name it: user:***@, ?key=*** */
};

typedef struct job {
    size_t first, count;
    int tries;      /* failed attempts so far (network/5xx) */
    int rate_tries; /* 429 answers so far */
    double not_before;
} job;

typedef struct slot {
    CURL *easy;
    job j;
    buf req, resp;
    struct curl_slist *signed_hd; /* this request's headers when each is signed */
    int gen;                      /* github-copilot: the exchange whose token it sent */
    char errtype[64];   /* x-amzn-ErrorType, AWS's name for an error */
    double retry_after; /* seconds, < 0 when absent */
    int busy;
} slot;

typedef struct call {
    embedder *e;
    int type;
    const char *const *texts;
    const size_t *lens;
    const embed_media *media; /* beside each text, or NULL */
    size_t n;
    float *out;
    job *queue;
    size_t nq, capq;
    slot slots[MAX_CONCURRENCY];
    int nslots;
    double deadline; /* queries: give up after this (monotonic), 0 = none */
    long timeout_ms;
    buf *err;
    int rc;
    int reexchanged; /* github-copilot: a 401 led to a new token in this call */
} call;

/* ----------------------------------------------------------------------
 * Wire formats
 * -------------------------------------------------------------------- */

/* One wire format's steps, as curl's Curl_handler is one protocol's: all
 * that differs between the providers' APIs. Batching, the scheduler,
 * retries and the checks of an answer are the same for every one. */
struct wire_ops {
    const char *key_header;                 /* the API key's header, up to the key */
    const char *query_type, *document_type; /* input types sent when none is configured */
    int response;                           /* the answer's JSONVEC_* format */
    /* Where a batch is posted. */
    void (*url)(const embedder *e, buf *url);
    /* The body of batch J: its inputs, typed ITYPE (NULL: none). */
    json_t *(*body)(const call *c, const job *j, const char *itype);
    /* Reads the answer when jsonvec_scan does not know its shape (NULL: it does). */
    long (*scan)(const char *s, size_t n, float *scratch, size_t cap, jsonvec_fn fn, void *ud,
                 char *err, size_t errlen);
};

/* Input I with the configured prefix of its type. */
static json_t *input_text(const call *c, size_t i)
{
    const char *prefix = c->type == EMBED_QUERY ? c->e->qprefix : c->e->dprefix;
    if (!*prefix)
        return json_stringn_nocheck(c->texts[i], c->lens[i]);
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, prefix);
    buf_append(&b, c->texts[i], c->lens[i]);
    json_t *j = buf_err(&b) ? NULL : json_stringn_nocheck(b.data, b.len);
    buf_cleanup(&b);
    return j;
}

/* {"model","input":[...]}: the start of an OpenAI or Ollama body. */
static json_t *model_and_input(const call *c, const job *j)
{
    json_t *root = json_object(), *inputs = json_array();
    for (size_t i = j->first; i < j->first + j->count; i++)
        json_array_append_new(inputs, input_text(c, i));
    json_object_set_new(root, "model", json_string(c->e->model));
    json_object_set_new(root, "input", inputs);
    return root;
}

/* OpenAI and the APIs that copy it (Voyage and Mistral with their own
 * names for a few members). */
static void openai_url(const embedder *e, buf *url)
{
    buf_printf(url, "%s/embeddings", e->base_url);
}

static json_t *openai_body(const call *c, const job *j, const char *itype)
{
    const embedder *e = c->e;
    json_t *root = model_and_input(c, j);
    int voyage = strcmp(e->provider, "voyage") == 0;
    int mistral = strcmp(e->provider, "mistral") == 0;
    /* Copilot's proxy takes the members its editors send, no more. */
    if (!voyage && !mistral && e->wire != WIRE_COPILOT)
        json_object_set_new(root, "encoding_format", json_string("float"));
    if (e->send_dims)
        json_object_set_new(root, voyage ? "output_dimension" : "dimensions",
                            json_integer(e->dims));
    if (itype)
        json_object_set_new(root, "input_type", json_string(itype));
    return root;
}

static const wire_ops openai_wire = {
    "Authorization: Bearer ",
    NULL,
    NULL,
    JSONVEC_OPENAI,
    openai_url,
    openai_body,
    NULL,
};

/* Ollama's /api/embed: no input types. */
static void ollama_url(const embedder *e, buf *url)
{
    buf_printf(url, "%s/api/embed", e->base_url);
}

static json_t *ollama_body(const call *c, const job *j, const char *itype)
{
    (void)itype;
    json_t *root = model_and_input(c, j);
    if (c->e->send_dims)
        json_object_set_new(root, "dimensions", json_integer(c->e->dims));
    return root;
}

static const wire_ops ollama_wire = {
    "Authorization: Bearer ",
    NULL,
    NULL,
    JSONVEC_OLLAMA,
    ollama_url,
    ollama_body,
    NULL,
};

/* Gemini's batchEmbedContents: one request per input, each naming the
 * model and its task type. */
static void gemini_url(const embedder *e, buf *url)
{
    buf_printf(url, "%s/models/%s:batchEmbedContents", e->base_url, e->model);
}

static json_t *gemini_body(const call *c, const job *j, const char *itype)
{
    const embedder *e = c->e;
    json_t *root = json_object(), *inputs = json_array();
    buf name;
    buf_init(&name, 4096);
    buf_printf(&name, "models/%s", e->model);
    for (size_t i = j->first; i < j->first + j->count; i++) {
        json_t *r = json_pack("{s:s,s:{s:[{s:o}]}}", "model", name.data ? name.data : "",
                              "content", "parts", "text", input_text(c, i));
        if (c->media && c->media[i].data) {
            /* The file itself beside its label, as inline data. */
            buf b64;
            buf_init(&b64, 0);
            buf_base64(&b64, c->media[i].data, c->media[i].len);
            json_t *parts = json_object_get(json_object_get(r, "content"), "parts");
            json_array_append_new(parts, buf_err(&b64) ? NULL
                                                       : json_pack("{s:{s:s,s:s%}}", "inlineData",
                                                                   "mimeType", c->media[i].mime,
                                                                   "data", b64.data, b64.len));
            buf_cleanup(&b64);
        }
        if (itype)
            json_object_set_new(r, "taskType", json_string(itype));
        if (e->send_dims)
            json_object_set_new(r, "outputDimensionality", json_integer(e->dims));
        json_array_append_new(inputs, r);
    }
    buf_cleanup(&name);
    json_object_set_new(root, "requests", inputs);
    return root;
}

static const wire_ops gemini_wire = {
    "x-goog-api-key: ",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    JSONVEC_GEMINI,
    gemini_url,
    gemini_body,
    NULL,
};

/* Amazon Bedrock's InvokeModel: the body is the model family's own; Titan
 * and Nova take one input a request, Cohere a batch. */
static void bedrock_url(const embedder *e, buf *url)
{
    /* The id's ':' (and any other reserved byte) is sent percent-encoded. */
    buf_printf(url, "%s/model/", e->base_url);
    for (const char *p = e->model; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~')
            buf_putc(url, (char)ch);
        else
            buf_printf(url, "%%%02X", ch);
    }
    buf_puts(url, "/invoke");
}

static json_t *bedrock_body(const call *c, const job *j, const char *itype)
{
    const embedder *e = c->e;
    json_t *root = json_object();
    switch (e->bedrock->family) {
    case BEDROCK_TITAN_V2:
        json_object_set_new(root, "inputText", input_text(c, j->first));
        json_object_set_new(root, "dimensions", json_integer(e->dims));
        json_object_set_new(root, "normalize", json_true());
        break;
    case BEDROCK_TITAN_V1:
        json_object_set_new(root, "inputText", input_text(c, j->first));
        break;
    case BEDROCK_NOVA: {
        const char *purpose = c->type == EMBED_QUERY ? "GENERIC_RETRIEVAL" : "GENERIC_INDEX";
        json_t *text = json_pack("{s:s,s:o}", "truncationMode", "END", "value",
                                 input_text(c, j->first));
        json_object_set_new(root, "taskType", json_string("SINGLE_EMBEDDING"));
        json_object_set_new(root, "singleEmbeddingParams",
                            json_pack("{s:s,s:i,s:o}", "embeddingPurpose", purpose,
                                      "embeddingDimension", e->dims, "text", text));
        break;
    }
    default: { /* Cohere */
        json_t *texts = json_array();
        for (size_t i = j->first; i < j->first + j->count; i++)
            json_array_append_new(texts, input_text(c, i));
        json_object_set_new(root, "texts", texts);
        json_object_set_new(root, "input_type", json_string(itype ? itype : "search_document"));
        json_object_set_new(root, "truncate", json_string("END"));
        if (e->bedrock->family == BEDROCK_COHERE_V4) {
            json_object_set_new(root, "embedding_types", json_pack("[s]", "float"));
            json_object_set_new(root, "output_dimension", json_integer(e->dims));
        }
        break;
    }
    }
    return root;
}

static const wire_ops bedrock_wire = {
    "Authorization: Bearer ",
    "search_query",
    "search_document",
    JSONVEC_OPENAI, /* unused: bedrock_scan reads the answer */
    bedrock_url,
    bedrock_body,
    bedrock_scan,
};

/* The table of each remote provider's wire (embed.c's provider table
 * names it). */
static const wire_ops *const wires[] = {
    [WIRE_OPENAI] = &openai_wire,
    [WIRE_OLLAMA] = &ollama_wire,
    [WIRE_GEMINI] = &gemini_wire,
    [WIRE_BEDROCK] = &bedrock_wire,
    [WIRE_COPILOT] = &openai_wire, /* the token goes with each request (start) */
};

/* ----------------------------------------------------------------------
 * Set-up
 * -------------------------------------------------------------------- */

int embed_http_open(embedder *e, buf *err)
{
    e->ops = wires[e->wire];
    if (!(C = curl_api_get())) {
        buf_printf(err, "%s: %s", e->provider, curl_api_error());
        return MNEMO_UNAVAILABLE;
    }
    http_state *h = calloc(1, sizeof *h);
    if (!h)
        return MNEMO_NOMEM;
    buf shown;
    buf_init(&shown, 0);
    dsn_redact(&shown, e->base_url, NULL);
    h->shown_url = buf_detach(&shown);
    h->multi = C->multi_init();
    h->rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(time_wall() * 1e6);
    if (!h->multi || !h->shown_url) {
        if (h->multi)
            C->multi_cleanup(h->multi);
        free(h->shown_url);
        free(h);
        return MNEMO_NOMEM;
    }
    C->multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)MAX_CONCURRENCY);
    struct curl_slist *hd = C->slist_append(NULL, "Content-Type: application/json");
    buf line;
    buf_init(&line, 16384);
    if (e->key) {
        buf_printf(&line, "%s%s", e->ops->key_header, e->key);
        hd = C->slist_append(hd, line.data);
        memset(line.data, 0, line.len);
    }
    if (e->wire == WIRE_COPILOT) {
        buf ed;
        buf_init(&ed, 1u << 16);
        copilot_editor_headers(e->headers_json, 0, &ed);
        for (char *p = ed.data, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
            *nl = 0;
            hd = C->slist_append(hd, p);
        }
        buf_cleanup(&ed);
    }
    if (*e->headers_json) {
        json_error_t je;
        json_t *o = json_loads(e->headers_json, 0, &je);
        const char *k;
        json_t *v;
        if (!json_is_object(o)) {
            buf_printf(err, "%s: headers must be a JSON object of strings", e->provider);
            json_decref(o);
            buf_cleanup(&line);
            C->slist_free_all(hd);
            C->multi_cleanup(h->multi);
            free(h->shown_url);
            free(h);
            return MNEMO_INVALID;
        }
        json_object_foreach(o, k, v)
        {
            buf_reset(&line);
            buf_printf(&line, "%s: %s", k, json_is_string(v) ? json_string_value(v) : "");
            hd = C->slist_append(hd, line.data);
        }
        json_decref(o);
    }
    buf_cleanup(&line);
    h->headers = hd;
    e->http = h;
    return MNEMO_OK;
}

void embed_http_close(embedder *e)
{
    http_state *h = e->http;
    if (!h)
        return;
    /* The slist holds the key: wipe it before freeing. */
    for (struct curl_slist *s = h->headers; s; s = s->next)
        memset(s->data, 0, strlen(s->data));
    C->slist_free_all(h->headers);
    C->multi_cleanup(h->multi);
    free(h->shown_url);
    free(h);
    e->http = NULL;
}

/* ----------------------------------------------------------------------
 * Requests and responses
 * -------------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    buf *b = ud;
    return buf_append(b, p, size * n) ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    slot *s = ud;
    size_t len = size * n;
    if (len > 17 && strncasecmp(p, "x-amzn-errortype:", 17) == 0) {
        /* "ExpiredTokenException:http://internal.amazon.com/..." */
        const char *v = p + 17;
        size_t vl = len - 17;
        while (vl && *v == ' ') {
            v++;
            vl--;
        }
        size_t m = 0; /* curl's header line is not NUL-terminated */
        while (m < vl && v[m] != ':' && v[m] != '\r' && v[m] != '\n')
            m++;
        if (m >= sizeof s->errtype)
            m = sizeof s->errtype - 1;
        memcpy(s->errtype, v, m);
        s->errtype[m] = 0;
    }
    if (len > 12 && strncasecmp(p, "retry-after:", 12) == 0) {
        char tmp[32];
        size_t m = len - 12 < sizeof tmp - 1 ? len - 12 : sizeof tmp - 1;
        memcpy(tmp, p + 12, m);
        tmp[m] = 0;
        char *end;
        double v = strtod(tmp, &end);
        if (end != tmp && v >= 0)
            s->retry_after = v > 300 ? 300 : v;
    }
    return len;
}

static const char *input_type(const embedder *e, int type)
{
    const char *t = type == EMBED_QUERY ? e->qtype : e->dtype;
    if (*t)
        return t;
    if (strcmp(e->provider, "voyage") == 0)
        return type == EMBED_QUERY ? "query" : "document";
    return type == EMBED_QUERY ? e->ops->query_type : e->ops->document_type;
}

static int build_request(call *c, const job *j, buf *out, buf *url)
{
    embedder *e = c->e;
    json_t *root = e->ops->body(c, j, input_type(e, c->type));
    e->ops->url(e, url);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s)
        return MNEMO_NOMEM;
    buf_reset(out);
    buf_puts(out, s);
    free(s);
    return buf_err(out) || buf_err(url) ? MNEMO_NOMEM : MNEMO_OK;
}

/* Copies the provider's error message out of BODY without a secret: the
 * API key and every configured header value are masked in the whole text
 * first, and only then is it cut to size, so no part of one survives
 * wherever the server echoed it. */
static void error_message(const embedder *e, const buf *body, char *out, size_t n)
{
    out[0] = 0;
    json_t *j = body->data ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    const char *msg = NULL;
    if (j) {
        json_t *er = json_object_get(j, "error");
        msg = json_is_string(er) ? json_string_value(er)
                                 : json_string_value(json_object_get(er, "message"));
        if (!msg)
            msg = json_string_value(json_object_get(j, "message"));
        if (!msg)
            msg = json_string_value(json_object_get(j, "detail"));
    }
    buf t;
    buf_init(&t, 1u << 24);
    if (msg)
        buf_puts(&t, msg);
    else if (body->data && body->len)
        buf_append(&t, body->data, body->len);
    json_decref(j);
    if (!t.data) {
        buf_cleanup(&t);
        return;
    }
    buf_mask(&t, e->key, 1);
    if (e->copilot) {
        buf_mask(&t, e->copilot->token, 1);
        buf_mask(&t, e->copilot->gh_token, 1);
    }
    json_t *h = *e->headers_json ? json_loads(e->headers_json, 0, NULL) : NULL;
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v)
    {
        const char *hv = json_string_value(v);
        buf_mask(&t, hv, 8);
        /* "Bearer TOKEN": the token alone too */
        const char *sp = hv ? strrchr(hv, ' ') : NULL;
        buf_mask(&t, sp ? sp + 1 : NULL, 8);
    }
    json_decref(h);
    /* A proxy may quote the URL asked for, password and all. */
    buf red;
    buf_init(&red, 1u << 24);
    dsn_redact(&red, t.data, NULL);
    buf_cleanup(&t);
    if (!red.data) {
        buf_cleanup(&red);
        return;
    }
    size_t len = red.len > 200 && !msg ? 200 : red.len;
    snprintf(out, n, "%.*s", (int)len, red.data);
    buf_cleanup(&red);
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

typedef struct rows {
    call *c;
    const job *j;
    char msg[256];
    unsigned char *seen;
} rows;

static int take_vector(void *ud, size_t index, const float *v, size_t d)
{
    rows *r = ud;
    call *c = r->c;
    embedder *e = c->e;
    if (index >= r->j->count || r->seen[index]) {
        snprintf(r->msg, sizeof r->msg, "%s: the response has a bad or repeated index %zu",
                 e->provider, index);
        return -1;
    }
    if (d == 0) {
        snprintf(r->msg, sizeof r->msg, "%s: the response has an empty vector", e->provider);
        return -1;
    }
    if (!e->dims) {
        e->dims = (int)d; /* learned from the first answer */
        float *nv = realloc(c->out, c->n * d * sizeof *nv);
        if (!nv) {
            snprintf(r->msg, sizeof r->msg, "%s: out of memory", e->provider);
            return -1;
        }
        c->out = nv;
    }
    if (d != (size_t)e->dims) {
        snprintf(r->msg, sizeof r->msg, "%s: the response has %zu dimensions, expected %d",
                 e->provider, d, e->dims);
        return -1;
    }
    float *dst = c->out + (r->j->first + index) * d;
    memcpy(dst, v, d * sizeof *dst);
    vec_normalize(dst, d);
    r->seen[index] = 1;
    return 0;
}

/* Parses a success response into rows j->first.. of c->out. */
static int parse_response(call *c, const job *j, const buf *body)
{
    embedder *e = c->e;
    /* One more than the expected dimension, so a longer vector is reported
     * as a wrong dimension rather than cut. */
    size_t cap = e->dims ? (size_t)e->dims + 1 : 65536;
    float *scratch = malloc(cap * sizeof *scratch);
    rows r = {c, j, "", calloc(j->count ? j->count : 1, 1)};
    int rc = MNEMO_OK;
    if (!scratch || !r.seen) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    char jerr[256] = "";
    long got = e->ops->scan ? e->ops->scan(body->data ? body->data : "", body->len, scratch, cap,
                                           take_vector, &r, jerr, sizeof jerr)
                            : jsonvec_scan(body->data ? body->data : "", body->len,
                                           e->ops->response, scratch, cap, take_vector, &r, jerr,
                                           sizeof jerr);
    if (got < 0) {
        if (r.msg[0])
            buf_printf(c->err, "%s", r.msg);
        else
            buf_printf(c->err, "%s: %s in the response", e->provider, jerr);
        rc = MNEMO_INVALID;
    } else if ((size_t)got != j->count) {
        buf_printf(c->err, "%s: the response has %ld vectors for %zu inputs", e->provider, got,
                   j->count);
        rc = MNEMO_INVALID;
    } else {
        e->inputs += (long)j->count;
    }
done:
    free(scratch);
    free(r.seen);
    return rc;
}

/* Is this 4xx answer the server saying the batch is too large? */
static int too_large(long status, const char *msg)
{
    if (status == 413)
        return 1;
    if (status != 400)
        return 0;
    static const char *const hints[] = {"too large",       "too long",     "maximum context",
                                        "max tokens",      "token limit",  "too many tokens",
                                        "batch size",      "too many inputs", "maximum request size",
                                        "exceeds the limit"};
    char low[512];
    size_t n = strlen(msg);
    if (n >= sizeof low)
        n = sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(msg[i] >= 'A' && msg[i] <= 'Z' ? msg[i] + 32 : msg[i]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof hints / sizeof *hints; i++)
        if (strstr(low, hints[i]))
            return 1;
    return 0;
}

/* ----------------------------------------------------------------------
 * The scheduler
 * -------------------------------------------------------------------- */

static int push(call *c, job j, int front)
{
    if (c->nq == c->capq) {
        size_t cap = c->capq ? c->capq * 2 : 16;
        job *q = realloc(c->queue, cap * sizeof *q);
        if (!q)
            return MNEMO_NOMEM;
        c->queue = q;
        c->capq = cap;
    }
    if (front) {
        memmove(c->queue + 1, c->queue, c->nq * sizeof *c->queue);
        c->queue[0] = j;
    } else {
        c->queue[c->nq] = j;
    }
    c->nq++;
    return MNEMO_OK;
}

static double jitter(http_state *h)
{
    h->rng ^= h->rng << 13;
    h->rng ^= h->rng >> 7;
    h->rng ^= h->rng << 17;
    return 0.75 + 0.5 * (double)(h->rng >> 11) / 9007199254740992.0; /* 0.75 .. 1.25 */
}

static double backoff(call *c, int tries)
{
    double d = BACKOFF_MIN * pow(2.0, tries - 1) * jitter(c->e->http);
    return d > BACKOFF_MAX ? BACKOFF_MAX : d;
}

static void free_signed(slot *s)
{
    /* The lines hold a session token: wipe them before freeing. */
    for (struct curl_slist *l = s->signed_hd; l; l = l->next)
        memset(l->data, 0, strlen(l->data));
    if (s->signed_hd)
        C->slist_free_all(s->signed_hd);
    s->signed_hd = NULL;
}

/* Bedrock with AWS keys: this request's headers, the shared ones and its
 * SigV4 signature (each request has its own: the signature covers the
 * body and the time). */
static int sign(const embedder *e, slot *s, const char *url)
{
    buf lines;
    buf_init(&lines, 1u << 16);
    int rc = sigv4_sign(e->aws, e->region, "bedrock", "POST", url, "application/json",
                        s->req.data ? s->req.data : "", s->req.len, (time_t)time_wall(), &lines);
    struct curl_slist *hd = NULL;
    for (struct curl_slist *l = e->http->headers; l && !rc; l = l->next)
        if (!(hd = C->slist_append(hd, l->data)))
            rc = MNEMO_NOMEM;
    /* No "Expect: 100-continue" round trip for larger bodies. */
    if (!rc && !(hd = C->slist_append(hd, "Expect:")))
        rc = MNEMO_NOMEM;
    for (char *p = lines.data, *nl; !rc && p && (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = 0;
        if (!(hd = C->slist_append(hd, p)))
            rc = MNEMO_NOMEM;
    }
    if (lines.data)
        memset(lines.data, 0, lines.len);
    buf_cleanup(&lines);
    s->signed_hd = hd;
    return rc;
}

/* github-copilot: this request's headers, the shared ones and the
 * current Copilot token (a refresh replaces it while others are in
 * flight with their own copy). */
static int with_token(const embedder *e, slot *s)
{
    buf line;
    buf_init(&line, 1u << 16);
    buf_printf(&line, "Authorization: Bearer %s", e->copilot->token ? e->copilot->token : "");
    struct curl_slist *hd = NULL;
    int rc = buf_err(&line) ? MNEMO_NOMEM : MNEMO_OK;
    for (struct curl_slist *l = e->http->headers; l && !rc; l = l->next)
        if (!(hd = C->slist_append(hd, l->data)))
            rc = MNEMO_NOMEM;
    if (!rc && !(hd = C->slist_append(hd, line.data)))
        rc = MNEMO_NOMEM;
    if (line.data)
        memset(line.data, 0, line.len);
    buf_cleanup(&line);
    s->signed_hd = hd;
    s->gen = e->copilot->gen;
    return rc;
}

static int start(call *c, slot *s, const job *j)
{
    buf url;
    buf_init(&url, 65536);
    int rc = build_request(c, j, &s->req, &url);
    if (rc) {
        buf_cleanup(&url);
        return rc;
    }
    if (!s->easy && !(s->easy = C->easy_init())) {
        buf_cleanup(&url);
        return MNEMO_NOMEM;
    }
    CURL *h = s->easy;
    C->easy_reset(h);
    buf_reset(&s->resp);
    s->resp.err = 0;
    s->retry_after = -1;
    s->errtype[0] = 0;
    s->j = *j;
    free_signed(s);
    if (c->e->aws && (rc = sign(c->e, s, url.data))) {
        buf_cleanup(&url);
        return rc;
    }
    if (c->e->copilot && (rc = with_token(c->e, s))) {
        buf_cleanup(&url);
        return rc;
    }
    C->easy_setopt(h, CURLOPT_URL, url.data);
    C->easy_setopt(h, CURLOPT_HTTPHEADER, s->signed_hd ? s->signed_hd : c->e->http->headers);
    C->easy_setopt(h, CURLOPT_POSTFIELDS, s->req.data);
    C->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->req.len);
    C->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    C->easy_setopt(h, CURLOPT_WRITEDATA, &s->resp);
    C->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    C->easy_setopt(h, CURLOPT_HEADERDATA, s);
    C->easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    C->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 10000 ? c->timeout_ms : 10000L);
    C->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    C->easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    C->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    C->easy_setopt(h, CURLOPT_USERAGENT, "mnemo/" MNEMO_VERSION);
    C->easy_setopt(h, CURLOPT_PRIVATE, s);
    buf_cleanup(&url);
    if (C->multi_add_handle(c->e->http->multi, h) != CURLM_OK)
        return MNEMO_NOMEM;
    s->busy = 1;
    c->e->requests++;
    return MNEMO_OK;
}

static int fail(call *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(call *c, int rc, const char *fmt, ...)
{
    if (!c->rc) {
        va_list ap;
        va_start(ap, fmt);
        buf_reset(c->err);
        c->err->err = 0;
        buf_vprintf(c->err, fmt, ap);
        va_end(ap);
        c->rc = rc;
    }
    return rc;
}

/* Decides what a finished request means. */
static int finish(call *c, slot *s, CURLcode cc)
{
    embedder *e = c->e;
    job j = s->j;
    long status = 0;
    C->easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    double now = time_mono();
    if (cc != CURLE_OK) {
        j.tries++;
        int timeout = cc == CURLE_OPERATION_TIMEDOUT;
        if (j.tries >= NET_TRIES || (c->deadline && now + backoff(c, j.tries) > c->deadline))
            return fail(c, timeout ? MNEMO_TIMEOUT : MNEMO_HTTP, "%s: %s %s (%s)", e->provider,
                        timeout ? "timed out waiting for" : "cannot reach",
                        e->http->shown_url, C->easy_strerror(cc));
        j.not_before = now + backoff(c, j.tries);
        return push(c, j, 1);
    }
    if (status >= 200 && status < 300) {
        int rc = parse_response(c, &j, &s->resp);
        if (rc)
            c->rc = rc; /* message already in c->err */
        return rc;
    }
    char msg[512];
    error_message(e, &s->resp, msg, sizeof msg);
    if (status == 429 || !strcmp(s->errtype, "ThrottlingException")) {
        j.rate_tries++;
        if (j.rate_tries >= RATE_TRIES)
            return fail(c, MNEMO_HTTP, "%s: 429 rate limited (%d tries): %s", e->provider,
                        j.rate_tries, msg);
        double wait = s->retry_after >= 0 ? s->retry_after : backoff(c, j.rate_tries);
        if (c->deadline && now + wait > c->deadline)
            return fail(c, MNEMO_TIMEOUT, "%s: 429 rate limited, retry after %.0f s: %s",
                        e->provider, wait, msg);
        j.not_before = now + wait;
        return push(c, j, 1);
    }
    if (status >= 500) {
        j.tries++;
        if (j.tries >= NET_TRIES || (c->deadline && now + backoff(c, j.tries) > c->deadline))
            return fail(c, MNEMO_HTTP, "%s: %ld server error (%d tries): %s", e->provider, status,
                        j.tries, msg);
        j.not_before = now + backoff(c, j.tries);
        return push(c, j, 1);
    }
    if (too_large(status, msg)) {
        if (j.count < 2)
            return fail(c, MNEMO_HTTP, "%s: %ld input too large for the provider: %s",
                        e->provider, status, msg);
        job a = j, b = j;
        a.count = j.count / 2;
        b.first = j.first + a.count;
        b.count = j.count - a.count;
        a.not_before = b.not_before = 0;
        int rc = push(c, b, 1);
        return rc ? rc : push(c, a, 1);
    }
    if (e->copilot && status == 401) {
        /* The Copilot token was refused (expired early, revoked): a request
         * sent with an older token than the current one is sent again; the
         * first refusal of the current one gets a new token, once a call. */
        if (s->gen != e->copilot->gen)
            return push(c, j, 1);
        if (!c->reexchanged) {
            c->reexchanged = 1;
            buf xerr;
            buf_init(&xerr, 8192);
            int rc = copilot_exchange(e->copilot, e->headers_json, &xerr);
            if (rc) {
                fail(c, rc, "%s", xerr.len ? xerr.data : "github-copilot: token exchange failed");
                buf_cleanup(&xerr);
                return rc;
            }
            buf_cleanup(&xerr);
            return push(c, j, 1);
        }
        return fail(c, MNEMO_UNAVAILABLE,
                    "%s: 401 the Copilot token was refused even after a new exchange: %s",
                    e->provider, *msg ? msg : "unauthorized");
    }
    if (e->wire == WIRE_BEDROCK && status == 403) {
        const char *src = e->aws ? e->aws->source : e->key_source;
        if (!strcmp(s->errtype, "ExpiredTokenException") || strstr(msg, "expired"))
            return fail(c, MNEMO_UNAVAILABLE,
                        "%s: 403 ExpiredTokenException: the AWS credentials from %s have "
                        "expired; renew them (a new session token, or aws sso login): %s",
                        e->provider, src, msg);
        return fail(c, MNEMO_UNAVAILABLE, "%s: 403 %s%s%s (credentials from %s; region %s from %s)",
                    e->provider, s->errtype, *s->errtype ? ": " : "",
                    *msg ? msg : "request refused", src, e->region, e->region_source);
    }
    return fail(c, status == 401 || status == 403 ? MNEMO_UNAVAILABLE : MNEMO_HTTP,
                "%s: %ld %s", e->provider, status, *msg ? msg : "request refused");
}

static void plan(call *c)
{
    size_t i = 0;
    while (i < c->n && !c->rc) {
        size_t bytes = 0, k = i;
        /* A file of several megabytes goes alone. */
        while (k < c->n && (k == i || (!c->media && bytes + c->lens[k] <= (size_t)c->e->batch_bytes &&
                                       k - i < (size_t)c->e->max_inputs))) {
            bytes += c->lens[k];
            k++;
        }
        job j = {i, k - i, 0, 0, 0};
        if (push(c, j, 0))
            c->rc = MNEMO_NOMEM;
        i = k;
    }
}

static int run(embedder *e, int type, const char *const *texts, const size_t *lens,
               const embed_media *media, size_t n, float **out, buf *err)
{
    *out = NULL;
    call c;
    memset(&c, 0, sizeof c);
    c.e = e;
    c.type = type;
    c.texts = texts;
    c.lens = lens;
    c.media = media;
    c.n = n;
    c.err = err;
    /* A Copilot token about to expire is renewed before it is sent. */
    if (e->copilot && n && copilot_stale(e->copilot, time_wall())) {
        int rc = copilot_exchange(e->copilot, e->headers_json, err);
        if (rc)
            return rc;
    }
    int query = type == EMBED_QUERY && n <= 4;
    c.timeout_ms = query ? e->query_timeout_ms : e->batch_timeout_ms;
    c.deadline = query ? time_mono() + e->query_timeout_ms / 1000.0 : 0;
    c.nslots = e->concurrency > MAX_CONCURRENCY ? MAX_CONCURRENCY : e->concurrency;
    for (int i = 0; i < c.nslots; i++) {
        buf_init(&c.slots[i].req, 0);
        buf_init(&c.slots[i].resp, MAX_RESPONSE);
    }
    if (n == 0) {
        *out = malloc(sizeof(float));
        return *out ? MNEMO_OK : MNEMO_NOMEM;
    }

    if (e->dims && !(c.out = malloc(n * (size_t)e->dims * sizeof *c.out)))
        c.rc = MNEMO_NOMEM;
    if (!c.rc)
        plan(&c);
    CURLM *multi = e->http->multi;
    int active = 0;
    while (!c.rc && (c.nq || active)) {
        /* Start what may start. */
        double now = time_mono(), next = 0;
        for (int i = 0; i < c.nslots && c.nq && !c.rc; i++) {
            if (c.slots[i].busy)
                continue;
            size_t q = 0;
            while (q < c.nq && c.queue[q].not_before > now) {
                if (!next || c.queue[q].not_before < next)
                    next = c.queue[q].not_before;
                q++;
            }
            if (q == c.nq)
                break;
            job j = c.queue[q];
            memmove(c.queue + q, c.queue + q + 1, (c.nq - q - 1) * sizeof *c.queue);
            c.nq--;
            if (start(&c, &c.slots[i], &j))
                c.rc = c.rc ? c.rc : MNEMO_NOMEM;
            else
                active++;
        }
        if (c.rc)
            break;
        int running = 0;
        C->multi_perform(multi, &running);
        CURLMsg *msg;
        int left, freed = 0;
        while ((msg = C->multi_info_read(multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            slot *s = NULL;
            C->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            CURLcode cc = msg->data.result;
            C->multi_remove_handle(multi, msg->easy_handle);
            s->busy = 0;
            active--;
            freed = 1;
            if (!c.rc)
                finish(&c, s, cc);
        }
        if (c.rc || (!c.nq && !active))
            break;
        if (freed && c.nq)
            continue; /* refill the free slot before waiting */
        int wait_ms = 100;
        if (!active && next) {
            double d = (next - time_mono()) * 1000;
            wait_ms = d < 1 ? 1 : d > 1000 ? 1000 : (int)d;
        }
        C->multi_poll(multi, NULL, 0, wait_ms, NULL);
    }
    for (int i = 0; i < c.nslots; i++) {
        if (c.slots[i].busy)
            C->multi_remove_handle(multi, c.slots[i].easy);
        if (c.slots[i].easy)
            C->easy_cleanup(c.slots[i].easy);
        free_signed(&c.slots[i]);
        buf_cleanup(&c.slots[i].req);
        buf_cleanup(&c.slots[i].resp);
    }
    free(c.queue);
    if (c.rc) {
        if (c.rc == MNEMO_NOMEM && !err->len)
            buf_printf(err, "%s: out of memory", e->provider);
        free(c.out);
        return c.rc;
    }
    *out = c.out;
    return MNEMO_OK;
}

int embed_http_texts(embedder *e, int type, const char *const *texts, const size_t *lens,
                     size_t n, float **out, buf *err)
{
    return run(e, type, texts, lens, NULL, n, out, err);
}

int embed_http_media(embedder *e, const char *const *texts, const size_t *lens,
                     const embed_media *media, size_t n, float **out, buf *err)
{
    return run(e, EMBED_DOCUMENT, texts, lens, media, n, out, err);
}
