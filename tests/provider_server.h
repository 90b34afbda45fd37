/*
 * provider_server.h - a fake embedding provider for the test suite: an HTTP
 * server on a loopback port that speaks the OpenAI (and compatible: Mistral,
 * Voyage, DeepInfra, LM Studio...), Ollama and Gemini embedding wire formats
 * and can be told to misbehave (fail, throttle, stall, answer wrong shapes),
 * so the client code is tested against the protocols without a network.
 *
 * Endpoints (POST, JSON bodies; anything else is a 404 with a JSON error):
 *   .../embeddings                              OpenAI and compatible
 *   /api/embed                                  Ollama
 *   /v1beta/models/{model}:batchEmbedContents   Gemini
 * Vectors are ps_vector() of each input, so tests can predict them.
 */
#ifndef MNEMO_PROVIDER_SERVER_H
#define MNEMO_PROVIDER_SERVER_H

#include <stddef.h>

typedef struct provider_server provider_server;

/* Behaviours, set per server; counters are per server. */
typedef struct ps_options {
    int dims;               /* dimensions of returned vectors (default 8 when 0) */
    int fail_first_n;       /* answer the first N embedding requests with `fail_status` */
    int fail_status;        /* e.g. 500, 429, 401, 400, 413 */
    int retry_after_s;      /* with 429: send "Retry-After: N" (0: no header) */
    int delay_ms;           /* sleep this long before answering each request (timeouts, latency) */
    int delay_per_input_ms; /* and this long for each input (a model's compute) */
    int wrong_dims;         /* answer vectors with dims + 1 entries */
    int wrong_count;        /* answer one vector fewer than inputs */
    int truncate_json;      /* cut the response body in half */
    size_t max_batch_bytes; /* reject a request whose inputs total more bytes than this with
                               413 (OpenAI-style error JSON) and for Gemini with 400;
                               0 = no limit */
    int max_batch_inputs;   /* same for the number of inputs; 0 = no limit */
    const char *fail_body;   /* with fail_first_n: this body, sent as it is (text/plain), in
                                place of the error JSON (copied) */
    const char *require_key; /* if not NULL, require "Authorization: Bearer KEY"
                                (OpenAI/Mistral/Voyage/compatible), "x-goog-api-key: KEY"
                                (Gemini); else 401 with a JSON error body */
} ps_options;

/*
 * Contract notes on the options:
 * - fail_status 0 means 500. The failure budget (fail_first_n) counts
 *   requests that passed the auth check; ps_set() starts a fresh budget, so
 *   "the next N requests fail" after a ps_set().
 * - The order for each embedding request is: count it in ps_requests();
 *   auth (401); fail_first_n; body over 16 MiB (413); broken JSON or a
 *   malformed request (400); batch limits (413, Gemini 400); delay_ms;
 *   answer with wrong_dims / wrong_count / truncate_json applied. Errors are
 *   answered at once: only requests that get to be answered are delayed.
 * - Errors use the endpoint's own error JSON ({"error":"..."} for Ollama).
 * - A "dimensions" member (OpenAI, Ollama) or "outputDimensionality"
 *   (Gemini, per request) overrides dims.
 * - require_key is copied; the caller's string need not outlive the call.
 * - delay_ms is cut short by ps_stop(), so stopping never waits for it.
 */

/* Starts a server on 127.0.0.1 with an ephemeral port (MHD_USE_INTERNAL_POLLING_THREAD |
 * MHD_USE_THREAD_PER_CONNECTION is fine, or a thread pool), keep-alive allowed. Returns NULL on
 * failure. O may be NULL for the defaults. */
provider_server *ps_start(const ps_options *o);
int ps_port(const provider_server *s);
/* "http://127.0.0.1:PORT" (static buffer inside the server struct) */
const char *ps_url(const provider_server *s);
/* Counters (thread-safe): embedding requests received (all, including failed ones), inputs
 * embedded successfully, TCP connections accepted (MHD_OPTION_NOTIFY_CONNECTION), and the
 * largest number of requests being handled at the same moment. */
int ps_requests(const provider_server *s);
int ps_inputs(const provider_server *s);
int ps_connections(const provider_server *s);
int ps_max_in_flight(const provider_server *s);
/*
 * Counter details: ps_requests() counts POSTs to the three endpoints, not
 * 404s. ps_inputs() adds the number of inputs of every request answered
 * with 200 (also when wrong_count / wrong_dims / truncate_json spoil the
 * answer). ps_max_in_flight() covers every complete request, 404s included.
 */
/* The body and headers of the last request, for assertions (copies, caller frees with free()). */
char *ps_last_body(const provider_server *s);
char *ps_last_header(const provider_server *s, const char *name); /* NULL if absent */
/*
 * "Last request" is the last complete request the server started handling,
 * whatever its path. ps_last_body() is NULL before the first request and ""
 * for an empty body (or one over 16 MiB, which is not kept). Header names
 * match case-insensitively.
 */
/* Changes behaviour while running (takes a lock). O may be NULL for the defaults. */
void ps_set(provider_server *s, const ps_options *o);
/* Stops the server, waits for its threads and frees everything. NULL is fine. */
void ps_stop(provider_server *s);

/* The deterministic vector the server returns for TEXT: dims floats, L2-normalised, derived
 * from a hash of the text bytes (FNV-1a 64, mixed by a splitmix64 finaliser, seeding a
 * xorshift64 generator, values uniform in [-1,1] then normalised). Exposed so tests can
 * compare. Writes dims floats into out. */
void ps_vector(const char *text, size_t len, int dims, float *out);
/*
 * The server writes each float to JSON with 17 significant digits, so a
 * client that parses a double and narrows it to float gets exactly these
 * values. A Gemini request with several parts embeds their texts joined
 * with nothing in between.
 */

#endif
