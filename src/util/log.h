/* log.h - one line per event on stderr, in stable key=value form.
 *
 *   ts=2026-11-22T10:00:00.123Z level=info pid=123 msg="worker started" ...
 *
 * Values with spaces, quotes or control characters are quoted and escaped, so
 * a line is always one line.  Never pass a secret to these functions. */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level lvl);
int log_level_parse(const char *s, enum log_level *out);   /* 0 or -1 */

/* msg is free text; kv is a printf format producing extra key=value pairs
 * (use log_quote for values that may contain spaces), or NULL. */
void log_msg(enum log_level lvl, const char *msg);
void log_kv(enum log_level lvl, const char *msg, const char *kvfmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_info(m)  log_msg(LOG_INFO, (m))
#define log_warn(m)  log_msg(LOG_WARN, (m))
#define log_error(m) log_msg(LOG_ERROR, (m))

/* s as a kv value: returned unchanged when it needs no quoting, else quoted
 * and escaped into buf (cut short with ..." when cap is too small).  NULL
 * gives "-".  For values passed through log_kv's "%s". */
const char *log_quote(char *buf, size_t cap, const char *s);

/* log_quote into a buffer that lives until the end of the calling block:
 * log_kv(LOG_WARN, "x failed", "error=%s", LOG_Q(msg)); */
#define LOG_Q(s) log_quote((char[256]){0}, 256, (s))

/* The id of the request (or of the queued work a request asked for) this
 * process is busy with: while set, every line carries request_id=ID, so that
 * one id finds a request's lines in serve's log and its work's in work's.
 * NULL or "" clears it; an id is cut at LOG_REQUEST_ID_MAX bytes. */
#define LOG_REQUEST_ID_MAX 64
void log_set_request_id(const char *id);
/* The id set, or NULL. */
const char *log_request_id(void);

/* The access log line: method, path, status, ms, customer. */
void log_request(const char *method, const char *path, int status,
                 double ms, const char *customer);

#endif
