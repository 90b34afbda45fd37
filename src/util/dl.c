/*
 * dl.c - a shared library's function table, loaded at run time (dl.h).
 */
#include "util/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *dl_load(const char *const *names, size_t nnames, const dl_sym *syms, size_t nsyms,
              void *table, const char *lib, const char *why_missing, const char *too_old_hint,
              char *err, size_t errlen)
{
    void *h = NULL;
    for (size_t i = 0; !h && i < nnames; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "%s: %s", why_missing, dlerror());
        return NULL;
    }
    for (size_t i = 0; i < nsyms; i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            snprintf(err, errlen, "%s is too old: it lacks %s%s", lib, syms[i].name,
                     too_old_hint);
            dlclose(h);
            return NULL;
        }
        /* POSIX guarantees data and function pointers convert. */
        memcpy((char *)table + syms[i].offset, &f, sizeof f);
    }
    return h;
}
