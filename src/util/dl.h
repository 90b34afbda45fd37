/*
 * dl.h - loading a shared library and a table of its functions at run time
 * (libcurl, libpq), so the mnemo process does not pay for linking them
 * until a feature needs them.
 */
#ifndef MNEMO_UTIL_DL_H
#define MNEMO_UTIL_DL_H

#include <stddef.h>

typedef struct dl_sym {
    const char *name; /* the symbol */
    size_t offset;    /* where its address goes in the caller's table */
} dl_sym;

/* Opens the first of NAMES that loads, and stores the address of every
 * symbol of SYMS at its offset in TABLE. Returns the library handle, or
 * NULL with a message in ERR: WHY_MISSING (then the dlerror() text) when
 * no name loads, "<LIB> is too old: it lacks <symbol><TOO_OLD_HINT>" when
 * a symbol is missing. */
void *dl_load(const char *const *names, size_t nnames, const dl_sym *syms, size_t nsyms,
              void *table, const char *lib, const char *why_missing, const char *too_old_hint,
              char *err, size_t errlen);

#endif
