/*
 * io.h - small POSIX I/O helpers.
 */
#ifndef MNEMO_UTIL_IO_H
#define MNEMO_UTIL_IO_H

#include <stddef.h>

/* Writes all N bytes of P to FD, retrying on EINTR and short writes.
 * 0, or -1 with errno set. */
int io_write_all(int fd, const void *p, size_t n);

#endif
