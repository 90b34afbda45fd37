/*
 * provider_server.c - a fake embedding provider over HTTP for the tests
 * (see provider_server.h), built on libmicrohttpd and jansson.
 *
 * One thread per connection, so a delayed answer never holds up another
 * connection and concurrency can be measured. Each request's body is
 * gathered in a per-request context; once complete, the request is routed
 * by path, checked in the documented order and answered. All shared state
 * (options, counters, the last request) sits behind one mutex; the
 * condition variable only exists so ps_stop() can cut delays short.
 */
#include "provider_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "util/buf.h"

#define PS_MAX_BODY ((size_t)16 << 20)
#define PS_DEFAULT_DIMS 8
/* Far above any real model; only keeps a typo in a test from eating memory. */
#define PS_MAX_DIMS 65536

enum api { API_NONE, API_OPENAI, API_OLLAMA, API_GEMINI };

typedef struct header {
    char *name, *value;
} header;

typedef struct header_list {
    header *v;
    size_t n, cap;
    int oom;
} header_list;

struct provider_server {
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast by ps_stop() to end delays */
    int stopping;
    ps_options o; /* o.require_key is NULL or points at key */
    char *fail_body; /* o.fail_body points here */
    char *key;
    int fail_left; /* what is left of the fail_first_n budget */
    int requests, inputs, connections, in_flight, max_in_flight;
    char *last_body;
    header_list last_headers;
    int port;
    char url[32];
};

/* One HTTP request being received (MHD's per-request context). */
typedef struct request {
    char *body;
    size_t len, cap;
    int too_big; /* over PS_MAX_BODY: the rest is read and dropped */
} request;

/* The inputs of one embedding request, whatever the wire format. */
typedef struct input {
    char *text;
    size_t len;
    int dims;
    char *caption; /* a Gemini media part's: what the "model" sees in it, or NULL */
} input;

typedef struct batch {
    input *v;
    size_t n;
    size_t bytes;
    int media_model; /* Gemini: the model takes images and audio (gemini-embedding-2*) */
    char err[200]; /* why the request is malformed */
} batch;

/* The option values one request works with, taken under the lock at once. */
typedef struct snapshot {
    int dims, fail_status, retry_after_s, delay_ms, delay_per_input_ms, wrong_dims, wrong_count,
        truncate_json;
    size_t max_batch_bytes;
    int max_batch_inputs;
} snapshot;

/* ---- the vectors ---------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

void ps_vector(const char *text, size_t len, int dims, float *out)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)text[i];
        h *= 0x100000001b3u;
    }
    /* A splitmix64 finaliser, so texts whose hashes differ in few bits
     * still start the generator far apart. */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebu;
    h ^= h >> 31;
    if (h == 0) /* xorshift would stay at zero forever */
        h = 0x9e3779b97f4a7c15u;
    double norm = 0;
    for (int i = 0; i < dims; i++) {
        double u = (double)(next_random(&h) >> 11) * (1.0 / 9007199254740992.0);
        out[i] = (float)(2 * u - 1);
        norm += (double)out[i] * out[i];
    }
    if (dims <= 0)
        return;
    if (norm == 0) {
        out[0] = 1;
        return;
    }
    norm = sqrt(norm);
    for (int i = 0; i < dims; i++)
        out[i] = (float)(out[i] / norm);
}

/* ---- replies -------------------------------------------------------------------------- */

static const char *grpc_status(int status)
{
    switch (status) {
    case 400:
    case 413:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 429:
        return "RESOURCE_EXHAUSTED";
    case 503:
        return "UNAVAILABLE";
    case 504:
        return "DEADLINE_EXCEEDED";
    default:
        return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION";
    }
}

static json_t *error_json(enum api api, int status, const char *msg)
{
    switch (api) {
    case API_OLLAMA:
        return json_pack("{s:s}", "error", msg);
    case API_GEMINI:
        return json_pack("{s:{s:i,s:s,s:s}}", "error", "code", status, "message", msg, "status",
                         grpc_status(status));
    case API_NONE:
    case API_OPENAI:
        break;
    }
    return json_pack("{s:{s:s,s:s,s:n}}", "error", "message", msg, "type",
                     status >= 500 ? "server_error" : "invalid_request_error", "code");
}

/* Queues J (consumed) as the answer; TRUNCATE halves the body, RETRY_AFTER > 0 adds the
 * header. */
static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_t *j, int truncate,
                                 int retry_after)
{
    if (!j)
        return MHD_NO;
    /* 17 digits: the floats must survive the trip to the client exactly. */
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!text)
        return MHD_NO;
    size_t len = strlen(text);
    if (truncate)
        len /= 2;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", retry_after);
        MHD_add_response_header(r, "Retry-After", v);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, enum api api, int status,
                                  const char *msg, int retry_after)
{
    return send_json(c, status, error_json(api, status, msg), 0, retry_after);
}

/* ---- parsing the three request formats ------------------------------------------------- */

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].text);
        free(b->v[i].caption);
    }
    free(b->v);
}

static int batch_add(batch *b, const char *text, size_t len, int dims)
{
    input *v = realloc(b->v, (b->n + 1) * sizeof *v);
    if (!v)
        return -1;
    b->v = v;
    input *in = &b->v[b->n];
    in->text = malloc(len + 1);
    if (!in->text)
        return -1;
    memcpy(in->text, text, len);
    in->text[len] = '\0';
    in->len = len;
    in->dims = dims;
    in->caption = NULL;
    b->n++;
    b->bytes += len;
    return 0;
}

/* Reads an optional dimension count MEMBER of OBJ into *dims. */
static int get_dims(batch *b, json_t *obj, const char *member, int *dims)
{
    json_t *d = json_object_get(obj, member);
    if (!d || json_is_null(d))
        return 0;
    if (!json_is_integer(d) || json_integer_value(d) < 1 ||
        json_integer_value(d) > PS_MAX_DIMS) {
        snprintf(b->err, sizeof b->err, "'%s' must be an integer from 1 to %d", member,
                 PS_MAX_DIMS);
        return -1;
    }
    *dims = (int)json_integer_value(d);
    return 0;
}

/* "input": a string or an array of strings, shared by OpenAI and Ollama. */
static int parse_input(batch *b, json_t *j, int dims)
{
    json_t *in = json_object_get(j, "input");
    if (json_is_string(in))
        return batch_add(b, json_string_value(in), json_string_length(in), dims) ? -2 : 0;
    if (!json_is_array(in)) {
        snprintf(b->err, sizeof b->err, "'input' must be a string or an array of strings");
        return -1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(in, i, e) {
        if (!json_is_string(e)) {
            snprintf(b->err, sizeof b->err, "'input[%zu]' is not a string", i);
            return -1;
        }
        if (batch_add(b, json_string_value(e), json_string_length(e), dims))
            return -2;
    }
    return 0;
}

/* Returns 0, -1 for a malformed request (b->err says why) or -2 when out of memory. */
static int parse_openai(batch *b, json_t *j, int dims)
{
    if (!json_is_string(json_object_get(j, "model"))) {
        snprintf(b->err, sizeof b->err, "'model' is required and must be a string");
        return -1;
    }
    json_t *f = json_object_get(j, "encoding_format");
    if (f && !json_is_null(f) && !(json_is_string(f) && !strcmp(json_string_value(f), "float"))) {
        snprintf(b->err, sizeof b->err, "'encoding_format' must be \"float\" here");
        return -1;
    }
    /* Voyage's input_type: the only values it knows. */
    json_t *t = json_object_get(j, "input_type");
    if (t && !json_is_null(t) &&
        !(json_is_string(t) && (!strcmp(json_string_value(t), "query") ||
                                !strcmp(json_string_value(t), "document")))) {
        snprintf(b->err, sizeof b->err, "'input_type' must be \"query\", \"document\" or null");
        return -1;
    }
    if (get_dims(b, j, "dimensions", &dims))
        return -1;
    int rc = parse_input(b, j, dims);
    if (rc)
        return rc;
    if (b->n == 0) { /* as OpenAI does; Ollama answers an empty list */
        snprintf(b->err, sizeof b->err, "'input' must not be empty");
        return -1;
    }
    return 0;
}

static int parse_ollama(batch *b, json_t *j, int dims)
{
    if (!json_is_string(json_object_get(j, "model"))) {
        snprintf(b->err, sizeof b->err, "model is required");
        return -1;
    }
    if (get_dims(b, j, "dimensions", &dims))
        return -1;
    return parse_input(b, j, dims);
}

static const char *const task_types[] = {
    "TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY",    "RETRIEVAL_DOCUMENT", "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",        "CLUSTERING",         "QUESTION_ANSWERING", "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
};

static int known_task_type(const char *t)
{
    for (size_t i = 0; i < sizeof task_types / sizeof *task_types; i++)
        if (!strcmp(t, task_types[i]))
            return 1;
    return 0;
}

/* Decodes base64 S (padded, RFC 4648) into a malloc'd *OUT; -1 when S is
 * not base64. */
static int unbase64(const char *s, size_t n, unsigned char **out, size_t *outlen)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n % 4)
        return -1;
    unsigned char *o = malloc(n / 4 * 3 + 1);
    if (!o)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            const char *p = s[i + j] ? strchr(tab, s[i + j]) : NULL;
            if (s[i + j] == '=' && i + 4 == n && j >= 2) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!p || pad) {
                free(o);
                return -1;
            }
            v = v << 6 | (uint32_t)(p - tab);
        }
        o[k++] = (unsigned char)(v >> 16);
        if (pad < 2)
            o[k++] = (unsigned char)(v >> 8);
        if (pad < 1)
            o[k++] = (unsigned char)v;
    }
    *out = o;
    *outlen = k;
    return 0;
}

/* A media part (inlineData): checked as Gemini does (a MIME type of an
 * image or audio, base64 data), its bytes' FNV hash appended to TEXT, and
 * what the "model" sees in it: the line after "caption:" in the bytes. */
static int gemini_media(batch *b, json_t *inl, size_t k, size_t i, buf *text, char **caption)
{
    const char *mime = json_string_value(json_object_get(inl, "mimeType"));
    json_t *data = json_object_get(inl, "data");
    if (!mime || (strncmp(mime, "image/", 6) != 0 && strncmp(mime, "audio/", 6) != 0)) {
        snprintf(b->err, sizeof b->err,
                 "requests[%zu].content.parts[%zu].inline_data.mime_type is not supported", k, i);
        return -1;
    }
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (!json_is_string(data) ||
        unbase64(json_string_value(data), json_string_length(data), &bytes, &n) || n == 0) {
        free(bytes);
        snprintf(b->err, sizeof b->err,
                 "Invalid value at 'requests[%zu].content.parts[%zu].inline_data.data' (TYPE_BYTES),"
                 " Base64 decoding failed",
                 k, i);
        return -1;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t j = 0; j < n; j++)
        h = (h ^ bytes[j]) * 0x100000001b3ull;
    buf_printf(text, "[%s %016llx]", mime, (unsigned long long)h);
    const char *c = memmem(bytes, n, "caption:", 8);
    if (c && !*caption) {
        c += 8;
        const char *end = memchr(c, '\n', n - (size_t)(c - (const char *)bytes));
        size_t len = end ? (size_t)(end - c) : n - (size_t)(c - (const char *)bytes);
        *caption = strndup(c, len);
    }
    free(bytes);
    return buf_err(text) ? -2 : 0;
}

/* Appends the texts of a Gemini content's parts to B as one input. */
static int gemini_content(batch *b, json_t *content, size_t k, int dims)
{
    json_t *parts = json_object_get(content, "parts");
    if (!json_is_array(parts) || json_array_size(parts) == 0) {
        snprintf(b->err, sizeof b->err, "requests[%zu].content.parts must be a non-empty array",
                 k);
        return -1;
    }
    size_t i;
    json_t *p;
    buf text;
    buf_init(&text, 0);
    char *caption = NULL;
    int rc = 0;
    json_array_foreach(parts, i, p) {
        json_t *t = json_object_get(p, "text"), *inl = json_object_get(p, "inlineData");
        if (json_is_object(inl)) {
            if (!b->media_model) {
                snprintf(b->err, sizeof b->err,
                         "requests[%zu].content.parts[%zu]: this model embeds text only", k, i);
                rc = -1;
            } else {
                rc = gemini_media(b, inl, k, i, &text, &caption);
            }
        } else if (!json_is_string(t)) {
            snprintf(b->err, sizeof b->err, "requests[%zu].content.parts[%zu].text is missing",
                     k, i);
            rc = -1;
        } else {
            buf_append(&text, json_string_value(t), json_string_length(t));
        }
        if (rc)
            break;
    }
    if (!rc && buf_err(&text))
        rc = -2;
    if (!rc && batch_add(b, text.data ? text.data : "", text.len, dims))
        rc = -2;
    if (!rc)
        b->v[b->n - 1].caption = caption;
    else
        free(caption);
    buf_cleanup(&text);
    return rc;
}

static int parse_gemini(batch *b, json_t *j, const char *model, int dims)
{
    json_t *reqs = json_object_get(j, "requests");
    if (!json_is_array(reqs) || json_array_size(reqs) == 0) {
        snprintf(b->err, sizeof b->err, "'requests' must be a non-empty array");
        return -1;
    }
    size_t k;
    json_t *r;
    b->media_model = !strncmp(model, "gemini-embedding-2", 18);
    json_array_foreach(reqs, k, r) {
        /* Gemini insists that every request names the model of the URL. */
        json_t *m = json_object_get(r, "model");
        if (!json_is_string(m) || strncmp(json_string_value(m), "models/", 7) != 0 ||
            strcmp(json_string_value(m) + 7, model) != 0) {
            snprintf(b->err, sizeof b->err, "requests[%zu].model must be \"models/%.100s\"", k,
                     model);
            return -1;
        }
        json_t *t = json_object_get(r, "taskType");
        if (t && !(json_is_string(t) && known_task_type(json_string_value(t)))) {
            snprintf(b->err, sizeof b->err, "requests[%zu].taskType is not a task type", k);
            return -1;
        }
        int d = dims;
        if (get_dims(b, r, "outputDimensionality", &d))
            return -1;
        int rc = gemini_content(b, json_object_get(r, "content"), k, d);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- answers -------------------------------------------------------------------------- */

/* The vector of IN as a JSON array, one entry too long with WRONG_DIMS. */
static json_t *vector_json(const input *in, int wrong_dims)
{
    int dims = in->dims + (wrong_dims ? 1 : 0);
    float *v = malloc((size_t)dims * sizeof *v);
    json_t *a = json_array();
    if (!v || !a) {
        free(v);
        json_decref(a);
        return NULL;
    }
    ps_vector(in->text, in->len, dims, v);
    if (in->caption) {
        /* A medium's vector leans towards its caption's, as far as a real
         * model's image and text vectors do (cosine about 0.5): clearly
         * related, far below a text about the same. */
        float *c = malloc((size_t)dims * sizeof *c);
        double norm = 0;
        if (c) {
            ps_vector(in->caption, strlen(in->caption), dims, c);
            for (int i = 0; i < dims; i++) {
                v[i] = 0.5f * c[i] + 0.866f * v[i];
                norm += (double)v[i] * v[i];
            }
            for (int i = 0; i < dims && norm > 0; i++)
                v[i] = (float)(v[i] / sqrt(norm));
            free(c);
        }
    }
    for (int i = 0; i < dims; i++) {
        if (json_array_append_new(a, json_real(v[i]))) {
            json_decref(a);
            a = NULL;
            break;
        }
    }
    free(v);
    return a;
}

/* A rough token count, like the real ones' order of magnitude: 4 bytes a token. */
static json_int_t tokens(const batch *b)
{
    json_int_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += b->v[i].len ? (json_int_t)((b->v[i].len + 3) / 4) : 1;
    return n;
}

static json_t *answer_json(enum api api, const batch *b, const char *model, const snapshot *o)
{
    size_t n = b->n - (o->wrong_count && b->n > 0 ? 1 : 0);
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        json_t *v = vector_json(&b->v[i], o->wrong_dims);
        json_t *e = v;
        if (v && api == API_OPENAI)
            e = json_pack("{s:s,s:I,s:o}", "object", "embedding", "index", (json_int_t)i,
                          "embedding", v);
        else if (v && api == API_GEMINI)
            e = json_pack("{s:o}", "values", v);
        if (!e || json_array_append_new(list, e)) {
            json_decref(list);
            list = NULL;
        }
    }
    if (!list)
        return NULL;
    json_int_t t = tokens(b);
    switch (api) {
    case API_OPENAI:
        return json_pack("{s:s,s:o,s:s,s:{s:I,s:I}}", "object", "list", "data", list, "model",
                         model, "usage", "prompt_tokens", t, "total_tokens", t);
    case API_OLLAMA:
        return json_pack("{s:s,s:o,s:I}", "model", model, "embeddings", list,
                         "prompt_eval_count", t);
    case API_GEMINI:
    case API_NONE:
        break;
    }
    return json_pack("{s:o}", "embeddings", list);
}

/* ---- request handling ----------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

/* Which endpoint METHOD URL is; the Gemini model name goes to MODEL. */
static enum api route(const char *method, const char *url, char *model, size_t cap)
{
    static const char gemini_pre[] = "/v1beta/models/", gemini_post[] = ":batchEmbedContents";
    if (strcmp(method, "POST") != 0)
        return API_NONE;
    if (!strcmp(url, "/api/embed"))
        return API_OLLAMA;
    if (!strncmp(url, gemini_pre, sizeof gemini_pre - 1) && ends_with(url, gemini_post)) {
        const char *m = url + sizeof gemini_pre - 1;
        size_t len = strlen(m) - (sizeof gemini_post - 1);
        if (len == 0 || len >= cap || memchr(m, '/', len) || memchr(m, ':', len))
            return API_NONE;
        memcpy(model, m, len);
        model[len] = '\0';
        return API_GEMINI;
    }
    if (ends_with(url, "/embeddings"))
        return API_OPENAI;
    return API_NONE;
}

static void lock(const provider_server *s)
{
    /* The getters take a const server; the mutex is the one thing they change. */
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
}

static void unlock(const provider_server *s)
{
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}

/* Waits MS milliseconds, or less if the server is stopping. */
static void pause_ms(provider_server *s, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    lock(s);
    while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
        ;
    unlock(s);
}

static int key_ok(struct MHD_Connection *c, enum api api, const char *key)
{
    if (!key)
        return 1;
    if (api == API_GEMINI) {
        const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-goog-api-key");
        return v && !strcmp(v, key);
    }
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return v && !strncmp(v, "Bearer ", 7) && !strcmp(v + 7, key);
}

static enum MHD_Result embed(provider_server *s, struct MHD_Connection *c, enum api api,
                             const char *gemini_model, request *r)
{
    lock(s);
    s->requests++;
    int authorised = key_ok(c, api, s->o.require_key);
    int fail = authorised && s->fail_left > 0;
    if (fail)
        s->fail_left--;
    snapshot o = {
        .dims = s->o.dims,
        .fail_status = s->o.fail_status,
        .retry_after_s = s->o.retry_after_s,
        .delay_ms = s->o.delay_ms,
        .delay_per_input_ms = s->o.delay_per_input_ms,
        .wrong_dims = s->o.wrong_dims,
        .wrong_count = s->o.wrong_count,
        .truncate_json = s->o.truncate_json,
        .max_batch_bytes = s->o.max_batch_bytes,
        .max_batch_inputs = s->o.max_batch_inputs,
    };
    char *body_copy = fail && s->fail_body ? strdup(s->fail_body) : NULL;
    unlock(s);

    if (!authorised)
        return send_error(c, api, 401, "invalid or missing API key", 0);
    if (fail && body_copy) {
        int status = o.fail_status ? o.fail_status : 500;
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(body_copy), body_copy, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(body_copy);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/plain");
        enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    if (fail) {
        int status = o.fail_status ? o.fail_status : 500;
        return send_error(c, api, status, "failure requested by the test (fail_first_n)",
                          status == 429 ? o.retry_after_s : 0);
    }
    if (r->too_big)
        return send_error(c, api, 413, "request body over 16 MiB", 0);

    json_error_t jerr;
    json_t *j = json_loadb(r->body ? r->body : "", r->len, 0, &jerr);
    if (!j || !json_is_object(j)) {
        char msg[240];
        snprintf(msg, sizeof msg, "invalid JSON body: %s", j ? "not an object" : jerr.text);
        json_decref(j);
        return send_error(c, api, 400, msg, 0);
    }
    batch b = {0};
    int dims = o.dims > 0 ? (o.dims < PS_MAX_DIMS ? o.dims : PS_MAX_DIMS) : PS_DEFAULT_DIMS;
    int rc = api == API_OPENAI   ? parse_openai(&b, j, dims)
             : api == API_OLLAMA ? parse_ollama(&b, j, dims)
                                 : parse_gemini(&b, j, gemini_model, dims);
    enum MHD_Result ret;
    if (rc == -2) {
        ret = send_error(c, api, 500, "out of memory", 0);
    } else if (rc) {
        ret = send_error(c, api, 400, b.err, 0);
    } else if ((o.max_batch_bytes && b.bytes > o.max_batch_bytes) ||
               (o.max_batch_inputs > 0 && b.n > (size_t)o.max_batch_inputs)) {
        char msg[160];
        snprintf(msg, sizeof msg, "batch too large: %zu inputs, %zu bytes", b.n, b.bytes);
        ret = send_error(c, api, api == API_GEMINI ? 400 : 413, msg, 0);
    } else {
        int delay = o.delay_ms + o.delay_per_input_ms * (int)b.n;
        if (delay > 0)
            pause_ms(s, delay);
        const char *model = api == API_GEMINI ? gemini_model
                                              : json_string_value(json_object_get(j, "model"));
        json_t *a = answer_json(api, &b, model, &o);
        if (a) {
            lock(s);
            s->inputs += (int)b.n;
            unlock(s);
            ret = send_json(c, 200, a, o.truncate_json, 0);
        } else {
            ret = send_error(c, api, 500, "out of memory", 0);
        }
    }
    batch_free(&b);
    json_decref(j);
    return ret;
}

static void headers_free(header_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].value);
    }
    free(l->v);
    *l = (header_list){0};
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    header_list *l = cls;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        header *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->oom = 1;
            return MHD_NO;
        }
        l->v = v;
        l->cap = cap;
    }
    header h = {strdup(key), strdup(value ? value : "")};
    if (!h.name || !h.value) {
        free(h.name);
        free(h.value);
        l->oom = 1;
        return MHD_NO;
    }
    l->v[l->n++] = h;
    return MHD_YES;
}

/* Keeps copies of the body and headers of the request now being handled. */
static void record(provider_server *s, struct MHD_Connection *c, const request *r)
{
    header_list l = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, &l);
    char *body = malloc(r->len + 1);
    if (body) {
        if (r->len)
            memcpy(body, r->body, r->len);
        body[r->len] = '\0';
    }
    lock(s);
    free(s->last_body);
    s->last_body = body;
    headers_free(&s->last_headers);
    s->last_headers = l;
    unlock(s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    (void)version;
    provider_server *s = cls;
    request *r = *req_cls;
    if (!r) { /* the headers are in; the body, if any, comes in the next calls */
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        *req_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_big)
            return MHD_YES;
        if (n > PS_MAX_BODY - r->len) {
            /* Keep reading so the connection stays usable for the 413. */
            free(r->body);
            *r = (request){.too_big = 1};
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + n + 1)
                cap *= 2;
            char *b = realloc(r->body, cap);
            if (!b)
                return MHD_NO;
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        return MHD_YES;
    }

    record(s, c, r);
    lock(s);
    if (++s->in_flight > s->max_in_flight)
        s->max_in_flight = s->in_flight;
    unlock(s);

    char model[256];
    enum api api = route(method, url, model, sizeof model);
    enum MHD_Result ret;
    if (api == API_NONE) {
        char msg[300];
        snprintf(msg, sizeof msg, "no such endpoint: %s %.200s", method, url);
        ret = send_error(c, API_OPENAI, 404, msg, 0);
    } else {
        ret = embed(s, c, api, model, r);
    }

    lock(s);
    s->in_flight--;
    unlock(s);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    request *r = *req_cls;
    if (r) {
        free(r->body);
        free(r);
        *req_cls = NULL;
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)c;
    (void)socket_context;
    provider_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        lock(s);
        s->connections++;
        unlock(s);
    }
}

/* ---- the API -------------------------------------------------------------------------- */

/* Copies O (NULL: defaults) into S, owning the key; the caller holds the lock or is alone. */
static int set_options(provider_server *s, const ps_options *o)
{
    char *key = o && o->require_key ? strdup(o->require_key) : NULL;
    char *fb = o && o->fail_body ? strdup(o->fail_body) : NULL;
    if ((o && o->require_key && !key) || (o && o->fail_body && !fb)) {
        free(key);
        free(fb);
        return -1;
    }
    free(s->key);
    free(s->fail_body);
    s->key = key;
    s->fail_body = fb;
    s->o = o ? *o : (ps_options){0};
    s->o.require_key = key;
    s->o.fail_body = fb;
    s->fail_left = s->o.fail_first_n;
    return 0;
}

provider_server *ps_start(const ps_options *o)
{
    provider_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    /* Delays are measured on the monotonic clock, immune to clock changes. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int cv_ok = pthread_cond_init(&s->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!cv_ok) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    if (set_options(s, o))
        goto fail;

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0; /* the kernel picks a free port */
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->d)
        goto fail;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || info->port == 0)
        goto fail;
    s->port = info->port;
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
    return s;
fail:
    ps_stop(s);
    return NULL;
}

int ps_port(const provider_server *s)
{
    return s->port;
}

const char *ps_url(const provider_server *s)
{
    return s->url;
}

static int counter(const provider_server *s, const int *c)
{
    lock(s);
    int v = *c;
    unlock(s);
    return v;
}

int ps_requests(const provider_server *s)
{
    return counter(s, &s->requests);
}

int ps_inputs(const provider_server *s)
{
    return counter(s, &s->inputs);
}

int ps_connections(const provider_server *s)
{
    return counter(s, &s->connections);
}

int ps_max_in_flight(const provider_server *s)
{
    return counter(s, &s->max_in_flight);
}

char *ps_last_body(const provider_server *s)
{
    lock(s);
    char *b = s->last_body ? strdup(s->last_body) : NULL;
    unlock(s);
    return b;
}

char *ps_last_header(const provider_server *s, const char *name)
{
    char *v = NULL;
    lock(s);
    for (size_t i = 0; i < s->last_headers.n; i++) {
        if (!strcasecmp(s->last_headers.v[i].name, name)) {
            v = strdup(s->last_headers.v[i].value);
            break;
        }
    }
    unlock(s);
    return v;
}

void ps_set(provider_server *s, const ps_options *o)
{
    lock(s);
    set_options(s, o);
    unlock(s);
}

void ps_stop(provider_server *s)
{
    if (!s)
        return;
    lock(s);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    unlock(s);
    /* Joins every connection thread, so nothing touches S afterwards. */
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->key);
    free(s->fail_body);
    free(s->last_body);
    headers_free(&s->last_headers);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
