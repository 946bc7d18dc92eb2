/* timeutil.c - clocks and ISO 8601 timestamps, always in UTC. */
#include <stdio.h>
#include <time.h>

#include "util/timeutil.h"

double time_mono_ms(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

long long time_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec;
}

/* Returns buf, or NULL (with buf emptied) when t is not representable or
 * the text does not fit in cap. */
char *time_iso8601(char *buf, size_t cap, time_t t, int ms)
{
	struct tm tm;
	int n;

	if (buf == NULL || cap == 0)
		return NULL;
	if (gmtime_r(&t, &tm) == NULL) {
		buf[0] = '\0';
		return NULL;
	}
	if (ms > 999)
		ms = 999;
	if (ms >= 0)
		n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		             tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	else
		n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02dZ",
		             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		             tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (n < 0 || (size_t)n >= cap) {
		buf[0] = '\0';
		return NULL;
	}
	return buf;
}

char *time_iso8601_now(char *buf, size_t cap)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return time_iso8601(buf, cap, ts.tv_sec, (int)(ts.tv_nsec / 1000000));
}

const char *time_sql(char buf[TIME_SQL_LEN], time_t t)
{
	struct tm tm;

	if (t == 0 || gmtime_r(&t, &tm) == NULL)
		return NULL;
	strftime(buf, TIME_SQL_LEN, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}
