/*
 * pgmpost.h - what the handle's close needs of the memories' inverted
 * index (pgmpost.c; the rest of its interface is in pgmem_int.h).
 */
#ifndef MNEMO_PGMPOST_H
#define MNEMO_PGMPOST_H

#include "mnemo.h"

/* Waits for the handle's merge running on its thread, if any: before the
 * handle's memory side is freed (pgmem_close). */
void pgmpost_wait(mnemo *m);

#endif
