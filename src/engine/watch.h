/*
 * watch.h - what the handle keeps of mnemo_refresh's watch (watch.c).
 */
#ifndef MNEMO_WATCH_H
#define MNEMO_WATCH_H

#include "mnemo.h"

/* Frees M's watch (m->watch), if any. */
void watch_close(mnemo *m);

#endif
