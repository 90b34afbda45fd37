/*
 * msearch.c - searching memories.
 */
#include "mnemo.h"
