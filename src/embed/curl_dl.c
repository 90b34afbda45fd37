/*
 * curl_dl.c - loading libcurl on first use (see curl_dl.h).
 */
#include "embed/curl_dl.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/dl.h"

static curl_api api;
static char load_error[256];
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const char *const names[] = {"libcurl.so.4", "libcurl.so", "libcurl-gnutls.so.4"};
    static const dl_sym syms[] = {
#define SYM(field, name) {name, offsetof(curl_api, field)}
        SYM(global_init, "curl_global_init"),
        SYM(easy_init, "curl_easy_init"),
        SYM(easy_reset, "curl_easy_reset"),
        SYM(easy_perform, "curl_easy_perform"),
        SYM(easy_cleanup, "curl_easy_cleanup"),
        SYM(easy_setopt, "curl_easy_setopt"),
        SYM(easy_getinfo, "curl_easy_getinfo"),
        SYM(easy_strerror, "curl_easy_strerror"),
        SYM(multi_init, "curl_multi_init"),
        SYM(multi_setopt, "curl_multi_setopt"),
        SYM(multi_add_handle, "curl_multi_add_handle"),
        SYM(multi_remove_handle, "curl_multi_remove_handle"),
        SYM(multi_perform, "curl_multi_perform"),
        SYM(multi_info_read, "curl_multi_info_read"),
        SYM(multi_poll, "curl_multi_poll"),
        SYM(multi_cleanup, "curl_multi_cleanup"),
        SYM(slist_append, "curl_slist_append"),
        SYM(slist_free_all, "curl_slist_free_all"),
#undef SYM
    };
    if (!dl_load(names, sizeof names / sizeof *names, syms, sizeof syms / sizeof *syms, &api,
                 "libcurl",
                 "remote embedding providers need libcurl (libcurl.so.4), which could not be "
                 "loaded",
                 " (7.66 or newer is needed)", load_error, sizeof load_error))
        return;
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(load_error, sizeof load_error, "libcurl failed to initialise");
        return;
    }
    loaded = 1;
}

const curl_api *curl_api_get(void)
{
    pthread_once(&once, load);
    return loaded ? &api : NULL;
}

const char *curl_api_error(void)
{
    pthread_once(&once, load);
    return loaded ? "" : load_error;
}
