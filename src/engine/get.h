/*
 * get.h - part of a memory file, read from disk and confined to the memory
 * roots: the same for every backend (rows are not consulted).
 */
#ifndef MNEMO_GET_H
#define MNEMO_GET_H

#include "mnemo.h"

/* The contract of mnemo_get. */
int get_file(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out);

#endif
