/*
 * io.c - small POSIX I/O helpers (see io.h).
 */
#include "util/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int io_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* mnemo's folder SUB under $VAR (an XDG base directory), else under
 * $HOME/HOME_MID, else under /tmp/TMP_MID. */
static char *xdg_dir(const char *var, const char *home_mid, const char *tmp_mid,
                     const char *sub)
{
    const char *xdg = getenv(var), *home = getenv("HOME");
    const char *base = xdg && *xdg ? xdg : home && *home ? home : "/tmp";
    const char *mid = xdg && *xdg ? "/mnemo" : home && *home ? home_mid : tmp_mid;
    size_t n = strlen(base) + strlen(mid) + (sub ? strlen(sub) + 1 : 0) + 1;
    char *d = malloc(n);
    if (d)
        snprintf(d, n, "%s%s%s%s", base, mid, sub ? "/" : "", sub ? sub : "");
    return d;
}

char *io_data_dir(const char *sub)
{
    return xdg_dir("XDG_DATA_HOME", "/.local/share/mnemo", "/mnemo", sub);
}

char *io_cache_dir(const char *sub)
{
    return xdg_dir("XDG_CACHE_HOME", "/.cache/mnemo", "/mnemo-cache", sub);
}
