/*
 * test_memory.c - structured memories.
 */
#include "test.h"
