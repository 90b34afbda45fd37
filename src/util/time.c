/*
 * time.c - ISO 8601 and clocks (see time.h). Dates are converted with
 * days_from_civil so no time zone state (TZ, localtime) is involved.
 */
#include "util/time.h"

#include <stdio.h>
#include <time.h>

static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n, long *out)
{
    long v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int time_parse_iso(const char *s, double *out)
{
    long y, mo, d, h = 0, mi = 0, sec = 0;
    if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31)
        return -1;
    const char *p = s + 10;
    double frac = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (digits(p, 2, &h) || p[2] != ':' || digits(p + 3, 2, &mi))
            return -1;
        p += 5;
        if (*p == ':') {
            if (digits(p + 1, 2, &sec))
                return -1;
            p += 3;
            if (*p == '.' || *p == ',') {
                double scale = 0.1;
                p++;
                while (*p >= '0' && *p <= '9') {
                    frac += (*p - '0') * scale;
                    scale /= 10;
                    p++;
                }
            }
        }
        if (h > 23 || mi > 59 || sec > 60)
            return -1;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        long oh, om = 0;
        int sign = *p == '-' ? -1 : 1;
        if (digits(p + 1, 2, &oh))
            return -1;
        p += 3;
        if (*p == ':')
            p++;
        if (*p >= '0' && *p <= '9') {
            if (digits(p, 2, &om))
                return -1;
            p += 2;
        }
        offset = sign * (oh * 3600 + om * 60);
    }
    if (*p)
        return -1;
    *out = (double)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset) + frac;
    return 0;
}

void time_format_iso(double t, char *out)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

double time_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double time_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
