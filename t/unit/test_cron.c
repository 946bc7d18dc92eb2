/* test_cron.c - cron_parse (valid and invalid expressions, bounds) and
 * cron_next (month ends, leap years, the day-of-month/day-of-week rule). */
#include <stdio.h>
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

int suite_cron(void)
{
	static const struct test_case tests[] = {
		{ "cron_parse valid", test_parse_valid },
		{ "cron_parse invalid", test_parse_invalid },
		{ "cron_next", test_next },
		{ "cron_next seconds and OR rule", test_next_seconds },
		{ NULL, NULL },
	};

	return suite_add("cron", tests);
}
