/*
 * lite_filter.h - the filter language (text/mfilter.h) on SQLite.
 */
#ifndef MNEMO_LITE_FILTER_H
#define MNEMO_LITE_FILTER_H

#include <sqlite3.h>

#include "mnemo.h"
#include "text/mfilter.h"

/* Binds F's arguments to ST starting at parameter FIRST (1-based). */
int lite_filter_bind(const mfilter *f, sqlite3_stmt *st, int first);

/* Registers mnemo_fold(text), Unicode case folding, used by icontains. */
int lite_filter_register(sqlite3 *db);

#endif
