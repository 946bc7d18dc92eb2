/* run_log.c - the log lines of a run, as GET .../pipeline_run/{runId}/logs
 * returns them.
 *
 * Each line is two autocommitted statements on the service database: the
 * run's counter pipeline_runs.log_lines is bumped with
 * LAST_INSERT_ID(log_lines + 1), which hands this connection the new number
 * (the row lock orders concurrent writers, so numbers are unique and
 * increasing), then the line is inserted with it.  The caller gives the
 * log a connection that never holds a transaction, so a line is visible as
 * soon as it is written and survives a rollback of the work it describes.
 *
 * A line is one line of at most RUN_LOG_LINE_MAX bytes of valid UTF-8:
 * control characters become spaces, invalid bytes '?', a longer text is cut
 * at a character boundary and ends in "...".  A registered secret (the
 * source password) is replaced by "***" wherever it appears.  A line that
 * cannot be written (database down) goes to the process log instead. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "runner/connector.h"
#include "runner/runner.h"
#include "util/log.h"
#include "util/str.h"
#include "util/uuid.h"

#define TASK_ID_MAX 128
#define SECRET_MAX  1024

struct run_log {
	struct db *db;
	char run_id[RUN_ID_LEN + 1];
	char task_id[TASK_ID_MAX + 1];  /* "" = the run as a whole */
	char secret[SECRET_MAX + 1];    /* "" = none */
};

struct run_log *run_log_new(struct db *db, const char *run_id, const char *task_id)
{
	struct run_log *l;

	if (db == NULL || run_id == NULL || strlen(run_id) > RUN_ID_LEN ||
	    (task_id != NULL && strlen(task_id) > TASK_ID_MAX))
		return NULL;
	if ((l = calloc(1, sizeof *l)) == NULL)
		return NULL;
	l->db = db;
	memcpy(l->run_id, run_id, strlen(run_id) + 1);
	if (task_id != NULL)
		memcpy(l->task_id, task_id, strlen(task_id) + 1);
	return l;
}

void run_log_free(struct run_log *l)
{
	if (l == NULL)
		return;
	explicit_bzero(l->secret, sizeof l->secret);
	free(l);
}

void run_log_redact(struct run_log *l, const char *secret)
{
	if (l == NULL)
		return;
	explicit_bzero(l->secret, sizeof l->secret);
	if (secret != NULL && strlen(secret) <= SECRET_MAX)
		memcpy(l->secret, secret, strlen(secret) + 1);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	return str_utf8_next(s, avail, NULL);
}

/* in -> out (cap bytes): redacted, one line, valid UTF-8, at most
 * RUN_LOG_LINE_MAX bytes; a cut text ends in "...". */
static void clean(const char *in, const char *secret, char *out, size_t cap)
{
	size_t slen = secret != NULL ? strlen(secret) : 0, o = 0, mark = 0, limit;
	const unsigned char *s = (const unsigned char *)in;

	limit = cap - 1;
	if (limit > RUN_LOG_LINE_MAX)
		limit = RUN_LOG_LINE_MAX;
	while (*s != '\0') {
		const char *unit;
		size_t n, used;
		char one;

		if (slen > 0 && strncmp((const char *)s, secret, slen) == 0) {
			unit = "***";
			n = 3;
			used = slen;
		} else if ((n = utf8_seq(s, strnlen((const char *)s, 4))) == 0) {
			one = '?';
			unit = &one;
			n = used = 1;
		} else if (n == 1 && (*s < 0x20 || *s == 0x7f)) {
			one = ' ';
			unit = &one;
			used = 1;
		} else {
			unit = (const char *)s;
			used = n;
		}
		if (o + n > limit) {
			memcpy(out + mark, "...", 4);
			return;
		}
		memcpy(out + o, unit, n);
		o += n;
		s += used;
		if (o + 3 <= limit)
			mark = o;
	}
	out[o] = '\0';
}

void run_log_clean(const char *in, const char *secret, char *out, size_t cap)
{
	clean(in, secret, out, cap);
}

int run_log_line(struct db *db, const char *run_id, const char *task_id,
                 const char *level, const char *message)
{
	long long n, line;

	n = db_exec(db, "UPDATE pipeline_runs SET log_lines = "
	            "LAST_INSERT_ID(log_lines + 1) WHERE id = ?", "s", run_id);
	if (n <= 0)
		return n < 0 ? (int)n : DB_ERR;
	line = db_last_insert_id(db);
	n = db_exec(db, "INSERT INTO run_logs (run_id, line_no, ts, level, task_id, "
	            "message) VALUES (?, ?, UTC_TIMESTAMP(3), ?, ?, ?)", "sisss",
	            run_id, line, level, task_id, message);
	return n < 0 ? (int)n : 0;
}

static void emit(struct run_log *l, const char *level, const char *fmt, va_list ap)
{
	char raw[RUN_LOG_LINE_MAX + 64], line[RUN_LOG_LINE_MAX + 1];

	if (l == NULL)
		return;
	/* A longer text is cut here first; clean then cuts it to the limit
	 * with "..." (raw has room beyond RUN_LOG_LINE_MAX for that). */
	vsnprintf(raw, sizeof raw, fmt, ap);
	clean(raw, l->secret[0] != '\0' ? l->secret : NULL, line, sizeof line);
	explicit_bzero(raw, sizeof raw);
	if (run_log_line(l->db, l->run_id, l->task_id[0] != '\0' ? l->task_id : NULL,
	                 level, line) != 0)
		log_kv(LOG_WARN, "run log line not stored", "run=%s task=%s level=%s "
		       "line=%s error=%s", l->run_id, l->task_id[0] ? l->task_id : "-",
		       level, LOG_Q(line), LOG_Q(db_error(l->db)));
}

void run_log_info(struct run_log *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(l, "INFO", fmt, ap);
	va_end(ap);
}

void run_log_warning(struct run_log *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(l, "WARNING", fmt, ap);
	va_end(ap);
}

void run_log_widened(void *log, const char *column, const char *from, const char *to)
{
	if (log != NULL && from != NULL)
		run_log_warning(log, "column %s widened from %s to %s: the source's "
		                "type changed", column, from, to);
}

void run_log_error(struct run_log *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(l, "ERROR", fmt, ap);
	va_end(ap);
}
