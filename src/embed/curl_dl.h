/*
 * curl_dl.h - libcurl, loaded when a remote embedding provider is first
 * used. Keyword search and static tables never need HTTP, and linking
 * libcurl (with its TLS, Kerberos and LDAP libraries) costs every process
 * several milliseconds at start-up: more than a whole search.
 */
#ifndef MNEMO_CURL_DL_H
#define MNEMO_CURL_DL_H

#include <stddef.h>

#include <curl/curl.h>

typedef struct curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_reset)(CURL *h);
    CURLcode (*easy_perform)(CURL *h);
    void (*easy_cleanup)(CURL *h);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *m, CURLMoption opt, ...);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_perform)(CURLM *m, int *running);
    CURLMsg *(*multi_info_read)(CURLM *m, int *left);
    CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned int n, int timeout_ms,
                            int *ret);
    CURLMcode (*multi_cleanup)(CURLM *m);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
} curl_api;

/* The loaded API (libcurl.so.4, initialised once, thread-safe), or NULL
 * when it cannot be loaded: curl_api_error() says why. */
const curl_api *curl_api_get(void);
const char *curl_api_error(void);

#endif
