/*
 * test_mfilter.c - the memory filter language against a real SQLite table.
 */
#include "mfilter.h"
#include "test.h"
