/*
 * memory.c - structured memories.
 */
#include "mnemo.h"
