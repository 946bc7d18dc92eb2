/* timeutil.h - clocks and ISO 8601. */
#ifndef SLUICE_TIMEUTIL_H
#define SLUICE_TIMEUTIL_H

#include <stddef.h>
#include <time.h>

double time_mono_ms(void);                 /* monotonic, for durations */
long long time_now_s(void);                /* wall clock, seconds */
/* "2026-11-22T10:00:00Z" (or with .mmm when ms >= 0) into buf (>= 32 bytes). */
char *time_iso8601(char *buf, size_t cap, time_t t, int ms);
char *time_iso8601_now(char *buf, size_t cap);   /* with milliseconds */

/* "2026-11-22 10:00:00" (UTC) for a DATETIME parameter; NULL for t = 0. */
#define TIME_SQL_LEN 24
const char *time_sql(char buf[TIME_SQL_LEN], time_t t);

#endif
