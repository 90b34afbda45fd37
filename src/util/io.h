/*
 * io.h - small POSIX I/O helpers.
 */
#ifndef MNEMO_UTIL_IO_H
#define MNEMO_UTIL_IO_H

#include <stddef.h>

/* Writes all N bytes of P to FD, retrying on EINTR and short writes.
 * 0, or -1 with errno set. */
int io_write_all(int fd, const void *p, size_t n);

/* mnemo's data folder: $XDG_DATA_HOME/mnemo, else $HOME/.local/share/mnemo,
 * else /tmp/mnemo; with "/SUB" after it when SUB is not NULL. Not created.
 * Caller frees; NULL on out-of-memory. */
char *io_data_dir(const char *sub);

/* mnemo's cache folder, for what can be fetched again: $XDG_CACHE_HOME/mnemo,
 * else $HOME/.cache/mnemo, else /tmp/mnemo-cache; with "/SUB" after it when
 * SUB is not NULL. Not created. Caller frees; NULL on out-of-memory. */
char *io_cache_dir(const char *sub);

#endif
