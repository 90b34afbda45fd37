/*
 * lock.c - flock-based writer lock (see lock.h).
 */
#include "util/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

int lock_acquire(const char *path, int timeout_ms)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int waited = 0;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (waited >= timeout_ms) {
            close(fd);
            return -2;
        }
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
        waited += 20;
    }
}

void lock_release(int fd)
{
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
}
