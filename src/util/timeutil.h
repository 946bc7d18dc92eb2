/* timeutil.h - clocks and ISO 8601. */
#ifndef SLUICE_TIMEUTIL_H
#define SLUICE_TIMEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

double time_mono_ms(void);                 /* monotonic, for durations */
/* The calling thread's CPU time: what a piece of work cost, which a busy
 * machine's waits for a core do not inflate. */
double time_cpu_ms(void);
long long time_now_s(void);                /* wall clock, seconds */
/* "2026-11-22T10:00:00Z" (or with .mmm when ms >= 0) into buf (>= 32 bytes). */
char *time_iso8601(char *buf, size_t cap, time_t t, int ms);
char *time_iso8601_now(char *buf, size_t cap);   /* with milliseconds */

/* "2026-11-22 10:00:00" (UTC) for a DATETIME parameter; NULL for t = 0. */
#define TIME_SQL_LEN 24
const char *time_sql(char buf[TIME_SQL_LEN], time_t t);

/* The one timestamp grammar of the service (a bookmark a PATCH accepts is
 * one the run time reads):
 *   YYYY-MM-DD [ 'T' hh:mm:ss [ '.' 1..9 digits ] [ 'Z' | (+|-)hh:mm ] ]
 * a real calendar day (leap years), year >= 1, hh <= 23, mm and ss <= 59.
 * TIME_ISO_SPACE also takes ' ' for 'T', as SQL writes it. */
#define TIME_ISO_SPACE 1
struct time_iso {
	int year, month, day, hour, min, sec;
	char frac[10];                 /* the fraction's digits, "" for none */
	bool has_time;
	int offset_s;                  /* east of UTC; 0 for 'Z' or no zone */
};
/* 0 and *out filled, or -1 (s is not of the grammar; s may be NULL). */
int time_iso_parse(const char *s, int flags, struct time_iso *out);
/* The moment in UTC, seconds since the epoch (the fraction apart). */
time_t time_iso_utc(const struct time_iso *t);

#endif
