/* timeutil.c - clocks and ISO 8601 timestamps, always in UTC. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/timeutil.h"

double time_mono_ms(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

double time_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

/* --- the timestamp grammar ----------------------------------------------- */

/* n digits at *p into *out; advances p. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -1;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : d[m - 1];
}

/* hh:mm:ss[.f][Z|+hh:mm] at p, to the end of the string. */
static int parse_time(const char *p, struct time_iso *t)
{
	int oh, om, sign;
	size_t n = 0;

	if (digits(&p, 2, &t->hour) || *p++ != ':' || digits(&p, 2, &t->min) ||
	    *p++ != ':' || digits(&p, 2, &t->sec) || t->hour > 23 ||
	    t->min > 59 || t->sec > 59)
		return -1;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9' && n < sizeof t->frac - 1; p++)
			t->frac[n++] = *p;
		if (n == 0 || (*p >= '0' && *p <= '9'))
			return -1;
		t->frac[n] = '\0';
	}
	if (*p == 'Z')
		return p[1] == '\0' ? 0 : -1;
	if (*p == '\0')
		return 0;
	if (*p != '+' && *p != '-')
		return -1;
	sign = *p++ == '+' ? 1 : -1;
	if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) ||
	    oh > 23 || om > 59)
		return -1;
	t->offset_s = sign * (oh * 3600 + om * 60);
	return *p == '\0' ? 0 : -1;
}

int time_iso_parse(const char *s, int flags, struct time_iso *out)
{
	const char *p = s;
	struct time_iso t;

	memset(&t, 0, sizeof t);
	if (s == NULL)
		return -1;
	if (digits(&p, 4, &t.year) || *p++ != '-' || digits(&p, 2, &t.month) ||
	    *p++ != '-' || digits(&p, 2, &t.day))
		return -1;
	if (t.year < 1 || t.month < 1 || t.month > 12 || t.day < 1 ||
	    t.day > days_in_month(t.year, t.month))
		return -1;
	if (*p != '\0') {
		if (*p != 'T' && !(*p == ' ' && (flags & TIME_ISO_SPACE)))
			return -1;
		if (parse_time(p + 1, &t) != 0)
			return -1;
		t.has_time = true;
	}
	*out = t;
	return 0;
}

time_t time_iso_utc(const struct time_iso *t)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	tm.tm_year = t->year - 1900;
	tm.tm_mon = t->month - 1;
	tm.tm_mday = t->day;
	tm.tm_hour = t->hour;
	tm.tm_min = t->min;
	tm.tm_sec = t->sec;
	return timegm(&tm) - t->offset_s;
}
