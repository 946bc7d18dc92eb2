/* cron.c - parse five-field cron expressions and find the next firing. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/cron.h"

struct field {
	const char *name;
	int min, max;
	const char *const *names;     /* names[i] is value min + i, or NULL */
};

static const char *const month_names[] = {
	"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
	"JUL", "AUG", "SEP", "OCT", "NOV", "DEC", NULL
};
static const char *const dow_names[] = {
	"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL
};

/* Day-of-week accepts 7 (Sunday) and folds it into 0 after parsing. */
static const struct field fields[5] = {
	{ "minute",       0, 59, NULL },
	{ "hour",         0, 23, NULL },
	{ "day-of-month", 1, 31, NULL },
	{ "month",        1, 12, month_names },
	{ "day-of-week",  0,  7, dow_names },
};

static const struct { const char *name, *expr; } shorthands[] = {
	{ "@yearly",   "0 0 1 1 *" },
	{ "@annually", "0 0 1 1 *" },
	{ "@monthly",  "0 0 1 * *" },
	{ "@weekly",   "0 0 * * 0" },
	{ "@daily",    "0 0 * * *" },
	{ "@midnight", "0 0 * * *" },
	{ "@hourly",   "0 * * * *" },
};

#define FIELD_TEXT_MAX 64

/* A number or (where the field has names) a three-letter name at *p;
 * advances *p.  0, or -1 with err written. */
static int parse_value(const struct field *f, const char **p, int *out,
                       char *err, size_t errlen)
{
	const char *s = *p;
	long v = 0;
	int n = 0;

	if (isdigit((unsigned char)*s)) {
		for (; isdigit((unsigned char)*s) && n < 4; s++, n++)
			v = v * 10 + (*s - '0');
		if (isdigit((unsigned char)*s)) {
			snprintf(err, errlen, "%s: number too long", f->name);
			return -1;
		}
	} else if (f->names != NULL && isalpha((unsigned char)*s)) {
		for (int i = 0; f->names[i] != NULL; i++)
			if (strncasecmp(s, f->names[i], 3) == 0 &&
			    !isalpha((unsigned char)s[3])) {
				*out = f->min + i;
				*p = s + 3;
				return 0;
			}
		snprintf(err, errlen, "%s: unknown name '%.3s'", f->name, s);
		return -1;
	} else {
		snprintf(err, errlen, "%s: expected a number%s at '%.10s'",
		         f->name, f->names != NULL ? " or a name" : "", s);
		return -1;
	}
	if (v < f->min || v > f->max) {
		snprintf(err, errlen, "%s: %ld is out of range %d-%d", f->name, v,
		         f->min, f->max);
		return -1;
	}
	*out = (int)v;
	*p = s;
	return 0;
}

/* One list item: '*' | value | value-value, then optional /step. */
static int parse_item(const struct field *f, const char **p, uint64_t *bits,
                      char *err, size_t errlen)
{
	int lo = f->min, hi = f->max, step = 1;
	bool single = false;
	const char *s = *p;

	if (*s == '*') {
		s++;
	} else {
		if (parse_value(f, &s, &lo, err, errlen) != 0)
			return -1;
		if (*s == '-') {
			s++;
			if (parse_value(f, &s, &hi, err, errlen) != 0)
				return -1;
			if (hi < lo) {
				snprintf(err, errlen, "%s: range %d-%d is backwards",
				         f->name, lo, hi);
				return -1;
			}
		} else {
			single = true;
		}
	}
	if (*s == '/') {
		long v = 0;
		int n = 0;

		for (s++; isdigit((unsigned char)*s) && n < 3; s++, n++)
			v = v * 10 + (*s - '0');
		if (n == 0 || isdigit((unsigned char)*s) || v < 1 ||
		    v > f->max - f->min + 1) {
			snprintf(err, errlen, "%s: step must be 1-%d", f->name,
			         f->max - f->min + 1);
			return -1;
		}
		step = (int)v;
		single = false;          /* "5/15": from 5 to the maximum */
	}
	if (single)
		hi = lo;
	for (int v = lo; v <= hi; v += step)
		*bits |= (uint64_t)1 << v;
	*p = s;
	return 0;
}

static int parse_field(const struct field *f, const char *text, uint64_t *bits,
                       char *err, size_t errlen)
{
	const char *p = text;

	*bits = 0;
	for (;;) {
		if (parse_item(f, &p, bits, err, errlen) != 0)
			return -1;
		if (*p == '\0')
			return 0;
		if (*p != ',') {
			snprintf(err, errlen, "%s: unexpected '%c' in '%s'", f->name,
			         *p, text);
			return -1;
		}
		p++;
	}
}

static int days_in_month(int month, int year)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

/* With only day-of-month restricting days, some chosen day must exist in
 * some chosen month (Feb 29 counts), or the schedule never fires. */
static bool dom_reachable(const struct cron *c)
{
	for (int m = 1; m <= 12; m++) {
		if (!(c->month & (1u << m)))
			continue;
		for (int d = 1; d <= days_in_month(m, 2000); d++)
			if (c->dom & (1u << d))
				return true;
	}
	return false;
}

static const char *expand_shorthand(const char *expr)
{
	for (size_t i = 0; i < sizeof shorthands / sizeof shorthands[0]; i++)
		if (strcasecmp(expr, shorthands[i].name) == 0)
			return shorthands[i].expr;
	return NULL;
}

/* Split expr into exactly five whitespace-separated fields. */
static int split_fields(const char *expr, char text[5][FIELD_TEXT_MAX + 1],
                        char *err, size_t errlen)
{
	const char *p = expr;
	int n = 0;

	for (;;) {
		size_t len = 0;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		if (n == 5) {
			snprintf(err, errlen, "expected 5 fields (minute hour "
			         "day-of-month month day-of-week), got more");
			return -1;
		}
		while (p[len] != '\0' && p[len] != ' ' && p[len] != '\t')
			len++;
		if (len > FIELD_TEXT_MAX) {
			snprintf(err, errlen, "%s: field too long", fields[n].name);
			return -1;
		}
		memcpy(text[n], p, len);
		text[n][len] = '\0';
		p += len;
		n++;
	}
	if (n != 5) {
		snprintf(err, errlen, "expected 5 fields (minute hour day-of-month "
		         "month day-of-week), got %d", n);
		return -1;
	}
	return 0;
}

int cron_parse(const char *expr, struct cron *c, char *err, size_t errlen)
{
	char text[5][FIELD_TEXT_MAX + 1];
	uint64_t bits[5];
	const char *full;

	memset(c, 0, sizeof *c);
	if (expr == NULL || strlen(expr) > CRON_EXPR_MAX) {
		snprintf(err, errlen, "expression longer than %d characters",
		         CRON_EXPR_MAX);
		return -1;
	}
	for (const char *p = expr; *p != '\0'; p++)
		if (iscntrl((unsigned char)*p) && *p != '\t') {
			snprintf(err, errlen, "control character in expression");
			return -1;
		}
	if (expr[0] == '@' && (full = expand_shorthand(expr)) == NULL) {
		snprintf(err, errlen, "unknown shorthand '%.20s'", expr);
		return -1;
	}
	if (expr[0] == '@')
		expr = full;
	if (split_fields(expr, text, err, errlen) != 0)
		return -1;
	for (int i = 0; i < 5; i++)
		if (parse_field(&fields[i], text[i], &bits[i], err, errlen) != 0)
			return -1;
	c->minute = bits[0];
	c->hour = (uint32_t)bits[1];
	c->dom = (uint32_t)bits[2];
	c->month = (uint32_t)bits[3];
	c->dow = (uint32_t)((bits[4] | bits[4] >> 7) & 0x7f);    /* 7 is 0 */
	c->dom_star = text[2][0] == '*';
	c->dow_star = text[4][0] == '*';
	if (c->dow_star && !dom_reachable(c)) {
		snprintf(err, errlen, "day-of-month: no chosen day exists in the "
		         "chosen months");
		return -1;
	}
	return 0;
}

static bool day_matches(const struct cron *c, const struct tm *tm)
{
	bool dom = c->dom & (1u << tm->tm_mday);
	bool dow = c->dow & (1u << tm->tm_wday);

	if (c->dom_star || c->dow_star)
		return dom && dow;
	return dom || dow;
}

#define CRON_YEARS_MAX 30

int cron_next(const struct cron *c, time_t after, time_t *next)
{
	struct tm tm;
	time_t t = after - (after % 60 + 60) % 60 + 60;   /* next whole minute */
	int last_year;

	if (gmtime_r(&t, &tm) == NULL)
		return -1;
	last_year = tm.tm_year + CRON_YEARS_MAX;
	/* Skip whole months, days and hours that cannot match before trying
	 * minutes; timegm normalises the carried fields. */
	while (tm.tm_year <= last_year) {
		if (!(c->month & (1u << (tm.tm_mon + 1)))) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!day_matches(c, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!(c->hour & (1u << tm.tm_hour))) {
			tm.tm_hour++;
			tm.tm_min = 0;
		} else if (!(c->minute & ((uint64_t)1 << tm.tm_min))) {
			tm.tm_min++;
		} else {
			*next = timegm(&tm);
			return 0;
		}
		tm.tm_sec = 0;
		tm.tm_isdst = 0;
		t = timegm(&tm);
		if (gmtime_r(&t, &tm) == NULL)
			return -1;
	}
	return -1;
}

/* ---- time zones ------------------------------------------------------------ */

#define ZONEINFO_DIR "/usr/share/zoneinfo"

bool cron_tz_valid(const char *tz)
{
	char path[sizeof ZONEINFO_DIR + CRON_TZ_MAX + 2], magic[4];
	size_t n;
	FILE *f;
	bool ok;

	if (tz == NULL || (n = strlen(tz)) == 0 || n > CRON_TZ_MAX || tz[0] == '/')
		return false;
	for (const char *p = tz; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && *p != '/' && *p != '_' &&
		    *p != '-' && *p != '+' && *p != '.')
			return false;
	/* No "." or ".." segment, no empty segment. */
	for (const char *seg = tz; seg != NULL; seg = strchr(seg, '/')) {
		size_t len;

		if (*seg == '/')
			seg++;
		len = strcspn(seg, "/");
		if (len == 0 || seg[0] == '.')
			return false;
	}
	snprintf(path, sizeof path, "%s/%s", ZONEINFO_DIR, tz);
	if ((f = fopen(path, "rbe")) == NULL)
		return false;
	ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "TZif", 4) == 0;
	fclose(f);
	return ok;
}

/* The process's TZ switched to a zone and back. */
struct tz_switch {
	char saved[256];
	bool had;
};

static int tz_enter(struct tz_switch *s, const char *tz)
{
	const char *old = getenv("TZ");
	char spec[CRON_TZ_MAX + 2];

	s->had = old != NULL && strlen(old) < sizeof s->saved;
	if (s->had)
		memcpy(s->saved, old, strlen(old) + 1);
	snprintf(spec, sizeof spec, ":%s", tz);
	if (setenv("TZ", spec, 1) != 0)
		return -1;
	tzset();
	return 0;
}

static void tz_leave(struct tz_switch *s)
{
	if (s->had)
		setenv("TZ", s->saved, 1);
	else
		unsetenv("TZ");
	tzset();
}

/* The zone's UTC offset at t, in seconds east. */
static long gmtoff_at(time_t t)
{
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL)
		return 0;
	return tm.tm_gmtoff;
}

/* The instant a local wall-clock time (as seconds of a naive "UTC" clock)
 * fires: its first occurrence, or for a time the zone skips, the end of
 * the skipped interval.  Offsets change at most once within a day around
 * local, so the two offsets a day before and after cover every case. */
static time_t local_fire_time(time_t local)
{
	long oa = gmtoff_at(local - 86400), ob = gmtoff_at(local + 86400);
	time_t best = (time_t)-1, lo, hi;
	long offs[2] = { oa, ob };

	for (int i = 0; i < 2; i++) {
		time_t t = local - offs[i];

		if (i == 1 && ob == oa)
			break;
		if (t + gmtoff_at(t) == local && (best == (time_t)-1 || t < best))
			best = t;
	}
	if (best != (time_t)-1)
		return best;
	/* Skipped: the gap lies between local - max and local - min of the two
	 * offsets; find the first instant on the later offset. */
	lo = local - (oa > ob ? oa : ob);
	hi = local - (oa > ob ? ob : oa);
	while (hi - lo > 1) {
		time_t mid = lo + (hi - lo) / 2;

		if (gmtoff_at(mid) == ob)
			hi = mid;
		else
			lo = mid;
	}
	return gmtoff_at(lo) == ob ? lo : hi;
}

#define CRON_TZ_STEPS 100000

int cron_next_tz(const struct cron *c, const char *tz, time_t after, time_t *next)
{
	struct tz_switch sw;
	time_t local;
	int rc = -1;

	if (tz == NULL || tz[0] == '\0' || strcmp(tz, "UTC") == 0)
		return cron_next(c, after, next);
	if (!cron_tz_valid(tz) || tz_enter(&sw, tz) != 0)
		return -1;
	/* Local wall-clock minutes from the one holding `after`; the first
	 * whose firing instant is later than `after` wins.  (During a
	 * fall-back hour the local clock has been there before: those slots
	 * fired at their first occurrence and are passed over.) */
	local = after + gmtoff_at(after);
	local -= (local % 60 + 60) % 60 + 60;
	for (int i = 0; i < CRON_TZ_STEPS; i++) {
		time_t t;

		if (cron_next(c, local, &local) != 0)
			break;
		t = local_fire_time(local);
		if (t > after) {
			*next = t;
			rc = 0;
			break;
		}
	}
	tz_leave(&sw);
	return rc;
}
