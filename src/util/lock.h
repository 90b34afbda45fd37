/*
 * lock.h - an advisory writer lock on a side file (flock), taken by every
 * process that writes the index, so syncs never interleave.
 */
#ifndef MNEMO_LOCK_H
#define MNEMO_LOCK_H

/* Locks PATH (created with mode 0600 if missing), waiting up to TIMEOUT_MS.
 * Returns the descriptor, -1 on error (errno set), or -2 on timeout. */
int lock_acquire(const char *path, int timeout_ms);
void lock_release(int fd);

#endif
