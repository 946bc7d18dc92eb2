/* cron.h - standard five-field cron expressions, in UTC.
 *
 *   minute hour day-of-month month day-of-week
 *
 * Each field is a comma list of items: '*', a value, a range a-b, each with
 * an optional /step ("a/step" means a to the field's maximum).  Months take
 * JAN-DEC and days SUN-SAT (case-insensitive); day-of-week 7 is Sunday.
 * The shorthands @yearly @annually @monthly @weekly @daily @midnight
 * @hourly are accepted.  As in Vixie cron, when both day fields are
 * restricted (neither starts with '*') a day matches if either matches;
 * otherwise both must. */
#ifndef SLUICE_CRON_H
#define SLUICE_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CRON_EXPR_MAX 255

struct cron {
	uint64_t minute;          /* bit 0..59 */
	uint32_t hour;            /* bit 0..23 */
	uint32_t dom;             /* bit 1..31 */
	uint32_t month;           /* bit 1..12 */
	uint32_t dow;             /* bit 0..6, Sunday 0 */
	bool dom_star, dow_star;  /* the field started with '*' */
};

/* Parse expr into c.  0; or -1 with a message naming the field and the
 * problem ("hour: 24 is out of range 0-23") in err. */
int cron_parse(const char *expr, struct cron *c, char *err, size_t errlen);

/* The first firing time strictly after `after` (UTC, whole minutes) into
 * *next.  0, or -1 when there is none within the next 30 years. */
int cron_next(const struct cron *c, time_t after, time_t *next);

/* ---- time zones -------------------------------------------------------------
 * A schedule may be read in an IANA zone ("Europe/Berlin") of the system
 * time zone database (/usr/share/zoneinfo, Debian package tzdata).  The
 * expression then names local wall-clock times, and across daylight-saving
 * changes each local slot fires once:
 *   - a local time skipped by the spring-forward jump (02:30 when clocks go
 *     from 02:00 to 03:00) fires at the jump itself (03:00 local); several
 *     skipped slots fire once together there;
 *   - a local time repeated by the fall-back change (02:30 when clocks go
 *     from 03:00 back to 02:00) fires at its first occurrence only.
 * The lookups switch the process's TZ for the call and put it back:
 * single-threaded callers only (sluice processes are). */
#define CRON_TZ_MAX 64

/* True when tz names a zone file of the system database: 1..64 characters
 * of letters, digits, '/', '_', '-', '+', no "." or ".." segment, not
 * absolute, and the file starts with the TZif magic. */
bool cron_tz_valid(const char *tz);

/* cron_next with the expression read in tz (NULL or "" = UTC). */
int cron_next_tz(const struct cron *c, const char *tz, time_t after, time_t *next);

#endif
