/*
 * time.h - wall-clock helpers: ISO 8601 parsing and formatting in UTC, and
 * a monotonic clock for durations.
 */
#ifndef MNEMO_TIME_H
#define MNEMO_TIME_H

/* Parses YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS[.frac]] with Z, +HH:MM or no zone
 * (UTC). Returns 0 and Unix seconds in *out, or -1. */
int time_parse_iso(const char *s, double *out);

/* Formats Unix seconds as YYYY-MM-DDTHH:MM:SSZ into OUT (at least 32 bytes). */
void time_format_iso(double t, char *out);

/* Seconds from a monotonic clock. */
double time_mono(void);

/* Wall-clock Unix seconds. */
double time_wall(void);

#endif
