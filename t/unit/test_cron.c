/* test_cron.c - cron_parse (valid and invalid expressions, bounds) and
 * cron_next (month ends, leap years, the day-of-month/day-of-week rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "suites.h"
#include "util/cron.h"

/* "2024-02-28 23:59" (UTC) as time_t. */
static time_t utc(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%d-%d-%d %d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min) != 5)
		return (time_t)-1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

static const char *fmt(time_t t, char buf[32])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%d %H:%M", &tm);
	return buf;
}

/* ---- parse: valid ---------------------------------------------------------- */

static const char *const valids[] = {
	"* * * * *", "0 2 * * *", "*/5 * * * *", "0-59 0-23 1-31 1-12 0-7",
	"59 23 31 12 7", "0 0 1 1 0", "1,2,3 4,5 6,7 8,9 1,2",
	"0 9-17/2 * * MON-FRI", "0 0 * JAN,jul sun", "0 0 1 Feb-Dec *",
	"5/15 * * * *", "0 0 29 2 *", "0 0 31 * *", "  0   2 *  *  *  ",
	"0\t2\t*\t*\t*", "*/60 * * * *", "0 0 * * 7", "@daily", "@HOURLY",
	"@yearly", "@annually", "@monthly", "@weekly", "@midnight",
	"0 0 30 1-2 *", NULL,
};

static void test_parse_valid(void)
{
	struct cron c;
	char err[160];

	for (const char *const *e = valids; *e != NULL; e++) {
		err[0] = '\0';
		if (cron_parse(*e, &c, err, sizeof err) != 0) {
			fprintf(stderr, "\n  '%s' refused: %s\n", *e, err);
			CU_FAIL("valid expression refused");
		}
	}
	CU_ASSERT_EQUAL(cron_parse("0 0 * * 7", &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.dow, 1u);                          /* 7 is Sunday */
	CU_ASSERT_EQUAL(cron_parse("*/15 * * * *", &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.minute, (1ull << 0) | (1ull << 15) | (1ull << 30) |
	                (1ull << 45));
	CU_ASSERT_EQUAL(cron_parse("5/20 * * * *", &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.minute, (1ull << 5) | (1ull << 25) | (1ull << 45));
	CU_ASSERT_EQUAL(cron_parse("0 9-17/4 * * *", &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.hour, (1u << 9) | (1u << 13) | (1u << 17));
	CU_ASSERT_EQUAL(cron_parse("0 0 * mar-may *", &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.month, (1u << 3) | (1u << 4) | (1u << 5));
	CU_ASSERT(c.dom_star && c.dow_star);
	CU_ASSERT_EQUAL(cron_parse("0 0 1 * MON", &c, err, sizeof err), 0);
	CU_ASSERT(!c.dom_star && !c.dow_star);
}

/* ---- parse: invalid, with the message it gives ------------------------------ */

struct bad_case { const char *expr, *msg; };

static const struct bad_case invalids[] = {
	{ "", "expected 5 fields" },
	{ "* * * *", "got 4" },
	{ "* * * * * *", "got more" },
	{ "60 * * * *", "minute: 60 is out of range 0-59" },
	{ "* 24 * * *", "hour: 24 is out of range 0-23" },
	{ "* * 0 * *", "day-of-month: 0 is out of range 1-31" },
	{ "* * 32 * *", "day-of-month: 32 is out of range 1-31" },
	{ "* * * 0 *", "month: 0 is out of range 1-12" },
	{ "* * * 13 *", "month: 13 is out of range 1-12" },
	{ "* * * * 8", "day-of-week: 8 is out of range 0-7" },
	{ "-1 * * * *", "minute: expected a number" },
	{ "5-1 * * * *", "minute: range 5-1 is backwards" },
	{ "*/0 * * * *", "minute: step must be 1-60" },
	{ "*/61 * * * *", "minute: step must be 1-60" },
	{ "*/ * * * *", "minute: step must be" },
	{ "1,,2 * * * *", "minute: expected a number" },
	{ "1, * * * *", "minute: expected a number" },
	{ "a * * * *", "minute: expected a number" },
	{ "* * * FOO *", "month: unknown name" },
	{ "* * * * MONDAY", "day-of-week: unknown name" },
	{ "* * * JANUARY *", "month: unknown name" },
	{ "* * MON * *", "day-of-month: expected a number" },
	{ "1x * * * *", "minute: unexpected 'x'" },
	{ "*-5 * * * *", "minute: unexpected '-'" },
	{ "00000 * * * *", "minute: number too long" },
	{ "0 0 30 2 *", "day-of-month: no chosen day" },
	{ "0 0 31 4,6,9,11 *", "day-of-month: no chosen day" },
	{ "@reboot", "unknown shorthand" },
	{ "0 0 * * *\n", "control character" },
	{ NULL, NULL },
};

static void test_parse_invalid(void)
{
	char err[160], longer[CRON_EXPR_MAX + 2];
	struct cron c;

	for (const struct bad_case *t = invalids; t->expr != NULL; t++) {
		err[0] = '\0';
		if (cron_parse(t->expr, &c, err, sizeof err) == 0) {
			fprintf(stderr, "\n  '%s' accepted\n", t->expr);
			CU_FAIL("invalid expression accepted");
		} else if (strstr(err, t->msg) == NULL) {
			fprintf(stderr, "\n  '%s': '%s' lacks '%s'\n", t->expr, err,
			        t->msg);
			CU_FAIL("message does not say what is wrong");
		}
	}
	/* Length: CRON_EXPR_MAX accepted (padding spaces), one more refused. */
	memset(longer, ' ', sizeof longer);
	memcpy(longer, "* * * * *", 9);
	longer[CRON_EXPR_MAX] = '\0';
	CU_ASSERT_EQUAL(cron_parse(longer, &c, err, sizeof err), 0);
	longer[CRON_EXPR_MAX] = ' ';
	longer[CRON_EXPR_MAX + 1] = '\0';
	CU_ASSERT_EQUAL(cron_parse(longer, &c, err, sizeof err), -1);
	CU_ASSERT_EQUAL(cron_parse(NULL, &c, err, sizeof err), -1);
}

/* ---- next ---------------------------------------------------------------- */

struct next_case { const char *expr, *after, *want; };

static const struct next_case nexts[] = {
	{ "* * * * *",      "2026-01-01 00:00", "2026-01-01 00:01" },  /* strictly after */
	{ "0 2 * * *",      "2026-01-01 01:59", "2026-01-01 02:00" },
	{ "0 2 * * *",      "2026-01-01 02:00", "2026-01-02 02:00" },
	{ "0 0 * * *",      "2026-12-31 23:59", "2027-01-01 00:00" },  /* year end */
	{ "0 0 1 * *",      "2026-01-31 12:00", "2026-02-01 00:00" },  /* month end */
	{ "0 0 31 * *",     "2026-01-31 00:00", "2026-03-31 00:00" },  /* skips Feb */
	{ "0 0 31 * *",     "2026-04-01 00:00", "2026-05-31 00:00" },  /* skips Apr 30 */
	{ "0 12 30 * *",    "2026-02-01 00:00", "2026-03-30 12:00" },
	{ "0 0 29 2 *",     "2026-01-01 00:00", "2028-02-29 00:00" },  /* leap year */
	{ "0 0 29 2 *",     "2096-03-01 00:00", "2104-02-29 00:00" },  /* 2100 is not */
	{ "0 0 29 2 *",     "2000-01-01 00:00", "2000-02-29 00:00" },  /* 2000 is */
	{ "0 0 * 2 *",      "2024-02-28 00:00", "2024-02-29 00:00" },
	{ "0 0 * 2 *",      "2023-02-28 00:00", "2024-02-01 00:00" },
	{ "0 0 1 3 *",      "2024-02-28 23:59", "2024-03-01 00:00" },
	{ "0 0 * * MON",    "2026-11-22 10:00", "2026-11-23 00:00" },  /* a Sunday */
	{ "0 0 * * 0",      "2026-11-22 10:00", "2026-11-29 00:00" },
	{ "0 0 * * 7",      "2026-11-22 10:00", "2026-11-29 00:00" },
	/* both day fields restricted: either matches (the 13th or a Friday) */
	{ "0 0 13 * FRI",   "2026-11-01 00:00", "2026-11-06 00:00" },
	{ "0 0 13 * FRI",   "2026-11-10 00:00", "2026-11-13 00:00" },
	{ "0 0 1 * MON",    "2026-11-22 10:00", "2026-11-23 00:00" },
	{ "0 0 1 * MON",    "2026-11-24 00:00", "2026-11-30 00:00" },
	{ "0 0 1 * MON",    "2026-11-30 00:00", "2026-12-01 00:00" },
	/* one day field starts with '*': both must match */
	{ "0 0 */2 * MON",  "2026-11-24 00:00", "2026-12-07 00:00" },
	{ "0 0 1 * *",      "2026-11-22 00:00", "2026-12-01 00:00" },
	{ "0 0 * * 1-5",    "2026-11-20 23:00", "2026-11-23 00:00" },  /* Fri -> Mon */
	{ "*/15 9-17 * * *", "2026-11-23 17:45", "2026-11-24 09:00" },
	{ "30 */6 * * *",   "2026-11-23 18:31", "2026-11-24 00:30" },
	{ "59 23 31 12 *",  "2026-12-31 23:59", "2027-12-31 23:59" },
	{ "0 0 1 1 *",      "2026-06-15 08:00", "2027-01-01 00:00" },
	{ "@hourly",        "2026-11-23 10:00", "2026-11-23 11:00" },
	{ NULL, NULL, NULL },
};

static void test_next(void)
{
	char err[160], got[32];
	struct cron c;
	time_t t;

	for (const struct next_case *n = nexts; n->expr != NULL; n++) {
		CU_ASSERT_FATAL(cron_parse(n->expr, &c, err, sizeof err) == 0);
		if (cron_next(&c, utc(n->after), &t) != 0) {
			fprintf(stderr, "\n  '%s' after %s: none\n", n->expr, n->after);
			CU_FAIL("no next time");
		} else if (strcmp(fmt(t, got), n->want) != 0) {
			fprintf(stderr, "\n  '%s' after %s: %s, want %s\n", n->expr,
			        n->after, got, n->want);
			CU_FAIL("wrong next time");
		}
	}
}

static void test_next_seconds(void)
{
	char err[160], got[32];
	struct cron c;
	time_t t;

	/* Seconds inside the minute do not count: the next whole minute. */
	CU_ASSERT_FATAL(cron_parse("* * * * *", &c, err, sizeof err) == 0);
	CU_ASSERT_EQUAL(cron_next(&c, utc("2026-01-01 00:00") + 59, &t), 0);
	CU_ASSERT_STRING_EQUAL(fmt(t, got), "2026-01-01 00:01");
	CU_ASSERT_EQUAL(t % 60, 0);
	/* The Vixie OR rule with a day-of-week restriction and a 31st that
	 * rarely comes still fires on the weekday. */
	CU_ASSERT_FATAL(cron_parse("0 0 31 2 MON", &c, err, sizeof err) == 0);
	CU_ASSERT_EQUAL(cron_next(&c, utc("2026-01-01 00:00"), &t), 0);
	CU_ASSERT_STRING_EQUAL(fmt(t, got), "2026-02-02 00:00");
}

/* ---- time zones and daylight saving ---------------------------------------
 * Europe/Berlin 2026: CET (+1) to CEST (+2) on 29 March at 01:00 UTC (local
 * 02:00 -> 03:00); back on 25 October at 01:00 UTC (local 03:00 -> 02:00).
 * America/New_York 2026: 8 March 07:00 UTC (02:00 -> 03:00), 1 November
 * 06:00 UTC (02:00 -> 01:00).  Times in the table are UTC. */
struct tz_case { const char *expr, *tz, *after, *want; };

static const struct tz_case tz_cases[] = {
	/* Plain local time: 09:00 Berlin is 08:00 UTC in winter, 07:00 in summer. */
	{ "0 9 * * *", "Europe/Berlin", "2026-01-10 12:00", "2026-01-11 08:00" },
	{ "0 9 * * *", "Europe/Berlin", "2026-07-10 12:00", "2026-07-11 07:00" },
	{ "0 9 * * *", "Europe/Berlin", "2026-03-28 12:00", "2026-03-29 07:00" },
	/* Spring forward: 02:30 does not exist on 29 March; it fires once, at
	 * the jump (03:00 CEST = 01:00 UTC), then normally the next day. */
	{ "30 2 * * *", "Europe/Berlin", "2026-03-28 12:00", "2026-03-29 01:00" },
	{ "30 2 * * *", "Europe/Berlin", "2026-03-29 01:00", "2026-03-30 00:30" },
	/* Every half hour across the gap: 02:00 and 02:30 are skipped and fire
	 * once together at the jump; then 03:30 CEST. */
	{ "*/30 * * * *", "Europe/Berlin", "2026-03-29 00:45", "2026-03-29 01:00" },
	{ "*/30 * * * *", "Europe/Berlin", "2026-03-29 01:00", "2026-03-29 01:30" },
	/* Fall back: 02:30 happens twice on 25 October (00:30 and 01:30 UTC);
	 * it fires at the first only. */
	{ "30 2 * * *", "Europe/Berlin", "2026-10-24 12:00", "2026-10-25 00:30" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-25 00:30", "2026-10-26 01:30" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-25 01:00", "2026-10-26 01:30" },
	/* Every half hour across the repeated hour: 02:00 and 02:30 CEST fire,
	 * their CET repeats do not; next is 03:00 CET = 02:00 UTC. */
	{ "*/30 * * * *", "Europe/Berlin", "2026-10-25 00:15", "2026-10-25 00:30" },
	{ "*/30 * * * *", "Europe/Berlin", "2026-10-25 00:30", "2026-10-25 02:00" },
	{ "*/30 * * * *", "Europe/Berlin", "2026-10-25 01:10", "2026-10-25 02:00" },
	/* New York, a zone west of UTC. */
	{ "30 2 * * *", "America/New_York", "2026-03-07 12:00", "2026-03-08 07:00" },
	{ "30 1 * * *", "America/New_York", "2026-10-31 12:00", "2026-11-01 05:30" },
	{ "30 1 * * *", "America/New_York", "2026-11-01 05:30", "2026-11-02 06:30" },
	/* Day fields in local time: 23:30 Monday in Tokyo is Monday 14:30 UTC. */
	{ "30 23 * * MON", "Asia/Tokyo", "2026-01-01 00:00", "2026-01-05 14:30" },
	/* A fixed-offset zone and plain UTC. */
	{ "0 0 * * *", "Etc/GMT-5", "2026-01-01 00:00", "2026-01-01 19:00" },
	{ "0 0 * * *", "UTC", "2026-01-01 00:00", "2026-01-02 00:00" },
	{ "0 0 * * *", NULL, "2026-01-01 00:00", "2026-01-02 00:00" },
	{ "0 0 * * *", "", "2026-01-01 00:00", "2026-01-02 00:00" },
	{ NULL, NULL, NULL, NULL },
};

static void test_next_tz(void)
{
	char err[160], got[32];
	const char *tz_before = getenv("TZ");
	struct cron c;
	time_t t;

	for (const struct tz_case *k = tz_cases; k->expr != NULL; k++) {
		CU_ASSERT_FATAL(cron_parse(k->expr, &c, err, sizeof err) == 0);
		if (cron_next_tz(&c, k->tz, utc(k->after), &t) != 0) {
			fprintf(stderr, "\n  '%s' in %s after %s: none\n", k->expr,
			        k->tz ? k->tz : "(null)", k->after);
			CU_FAIL("no next time");
		} else if (strcmp(fmt(t, got), k->want) != 0) {
			fprintf(stderr, "\n  '%s' in %s after %s: %s, want %s\n",
			        k->expr, k->tz ? k->tz : "(null)", k->after, got, k->want);
			CU_FAIL("wrong next time");
		}
	}
	/* The process's TZ is as it was. */
	if (tz_before == NULL) {
		CU_ASSERT_PTR_NULL(getenv("TZ"));
	} else {
		CU_ASSERT_PTR_NOT_NULL(getenv("TZ"));
	}
}

/* Walking a whole year of "every 30 minutes" in Berlin: every UTC instant
 * is fired at most once, the count is the year's half hours minus the two
 * skipped-and-merged ones of spring and the two repeated ones of autumn. */
static void test_tz_year_walk(void)
{
	char err[160];
	struct cron c;
	time_t t = utc("2026-01-01 00:00") - 60, end = utc("2027-01-01 00:00");
	long n = 0, ok = 1;
	time_t prev = 0;

	CU_ASSERT_FATAL(cron_parse("*/30 * * * *", &c, err, sizeof err) == 0);
	while (cron_next_tz(&c, "Europe/Berlin", t, &t) == 0 && t < end) {
		if (t <= prev)
			ok = 0;
		prev = t;
		n++;
	}
	CU_ASSERT(ok);
	/* Berlin's offsets are whole hours, so firings are UTC half hours:
	 * 365 * 48 of them in the year.  In spring the skipped 02:00 and 02:30
	 * fire at the jump, which is the 03:00 CEST slot's instant: no instant
	 * is lost or added.  In autumn the repeated 02:00 and 02:30 CET do not
	 * fire: the two UTC half hours 01:00 and 01:30 have none. */
	CU_ASSERT_EQUAL(n, 365 * 48 - 2);
}

static void test_tz_valid(void)
{
	static const char *const good[] = {
		"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata",
		"America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince",
		NULL,
	};
	static const char *const bad[] = {
		"", "Mars/Olympus", "Europe/", "/etc/localtime", "../etc/passwd",
		"Europe/../../etc/passwd", "Europe//Berlin", "./UTC", "Europe/Berlin ",
		"Europe/Berlin\n", "Europe", "zone.tab", "CET;rm",
		"Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		NULL,
	};

	for (const char *const *z = good; *z != NULL; z++)
		if (!cron_tz_valid(*z)) {
			fprintf(stderr, "\n  %s refused\n", *z);
			CU_FAIL("valid zone refused");
		}
	for (const char *const *z = bad; *z != NULL; z++)
		if (cron_tz_valid(*z)) {
			fprintf(stderr, "\n  '%s' accepted\n", *z);
			CU_FAIL("invalid zone accepted");
		}
	CU_ASSERT_FALSE(cron_tz_valid(NULL));
}

int suite_cron(void)
{
	static const struct test_case tests[] = {
		{ "cron_parse valid", test_parse_valid },
		{ "cron_parse invalid", test_parse_invalid },
		{ "cron_next", test_next },
		{ "cron_next seconds and OR rule", test_next_seconds },
		{ "cron_next_tz and daylight saving", test_next_tz },
		{ "cron_next_tz a year of half hours", test_tz_year_walk },
		{ "cron_tz_valid", test_tz_valid },
		{ NULL, NULL },
	};

	return suite_add("cron", tests);
}
