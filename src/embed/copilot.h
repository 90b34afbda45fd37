/*
 * copilot.h - GitHub Copilot's embeddings: the GitHub token, its exchange
 * for a short-lived Copilot token, the token's cache file, the API base the
 * token names, and the embedding models the account is offered.
 *
 * A GitHub token (COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN, or the
 * variable apiKeyEnv names) is exchanged at
 * https://api.github.com/copilot_internal/v2/token (api.DOMAIN with
 * COPILOT_GITHUB_DOMAIN; copilotTokenUrl replaces it) for
 * {"token","expires_at"}. The Copilot token is kept in
 * $XDG_CACHE_HOME/mnemo/copilot/token-HASH.json (mode 0600), HASH of the
 * GitHub token and the exchange URL, never the GitHub token itself; every
 * process reuses it until under 5 minutes remain.
 */
#ifndef MNEMO_COPILOT_H
#define MNEMO_COPILOT_H

#include <stddef.h>

#include "util/buf.h"

#define COPILOT_DEFAULT_BASE "https://api.individual.githubcopilot.com"

typedef struct copilot {
    char *gh_token;      /* the GitHub token (wiped when freed) */
    char gh_source[64];  /* the variable it came from, for messages */
    char *token_url;     /* where it is exchanged */
    char *cache_path;    /* the cache file, NULL without a cache folder */
    char *token;         /* the Copilot token, NULL before an exchange */
    double expires_at;   /* Unix seconds */
    double obtained_at;  /* when it was issued (the exchange's time) */
    char *models_base;   /* the API base the models were listed at */
    char *models;        /* their ids, comma-separated ("" none offered, NULL not listed) */
    int gen;             /* counts the exchanges of this process */
    long timeout_ms;
} copilot;

/* The GitHub token: the variable KEY_ENV names when set, else
 * COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN. *VAR (may be NULL) receives
 * the variable it came from, or the ones tried ("A, B or C") when NULL is
 * returned. */
const char *copilot_github_token(const char *key_env, const char **var);

/* Finds the GitHub token and the exchange URL (URL when set, else from
 * COPILOT_GITHUB_DOMAIN) and reads the cache file; no request is made.
 * MNEMO_UNAVAILABLE without a GitHub token (ERR names the variables). */
int copilot_open(copilot **out, const char *key_env, const char *url, long timeout_ms,
                 buf *err);
void copilot_free(copilot *c);

/* Is the token missing, or due for a refresh at NOW? */
int copilot_stale(const copilot *c, double now);

/* Exchanges the GitHub token for a Copilot token (sending the editor
 * headers of HEADERS_JSON, see copilot_editor_headers) and writes the
 * cache file. MNEMO_UNAVAILABLE when GitHub refuses (ERR says why: no
 * Copilot access, an invalid token), MNEMO_HTTP when it cannot be reached. */
int copilot_exchange(copilot *c, const char *headers_json, buf *err);

/* Lists the embedding models offered at BASE (GET BASE/models) into
 * c->models and the cache file. */
int copilot_list_models(copilot *c, const char *base, const char *headers_json, buf *err);

/* The API base a Copilot token names: its proxy-ep field's host
 * proxy.X as https://api.X, else COPILOT_DEFAULT_BASE. */
void copilot_api_base(const char *token, char *out, size_t n);

/* Appends the editor headers ("Name: value\n" lines): Editor-Version,
 * Editor-Plugin-Version, Copilot-Integration-Id and User-Agent, each
 * unless the JSON object HEADERS_JSON names it (any case); with USER, then
 * those of HEADERS_JSON but Authorization. */
void copilot_editor_headers(const char *headers_json, int user, buf *lines);

/* Is MODEL one of the comma-separated LIST? */
int copilot_offers(const char *list, const char *model);

#endif
