/* log.c - key=value lines on stderr.
 *
 * Each line is built in a buffer and written with one write(2), so lines from
 * several workers sharing stderr never interleave.  Lines longer than the
 * buffer are cut, with any open quote closed and truncated=true added, and
 * every control character is escaped: one event is always one line. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"

#define LOG_LINE_MAX 4096
/* Room kept past the content limit for what closes a cut line:
 * ..." (4), " truncated=true" (15) and "\n" (1). */
#define LOG_RESERVE 32

static enum log_level log_threshold = LOG_INFO;

static const char *const level_names[] = {
	[LOG_DEBUG] = "debug",
	[LOG_INFO] = "info",
	[LOG_WARN] = "warn",
	[LOG_ERROR] = "error",
};

/* An output buffer: put() stops at limit and marks the buffer full; force()
 * writes the closing bytes into the reserve between limit and cap. */
struct out {
	char *buf;
	size_t len, limit, cap;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || n > o->limit - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* Unquoted text: as much as fits. */
static void put_partial(struct out *o, const char *s, size_t n)
{
	if (o->full)
		return;
	if (n > o->limit - o->len) {
		n = o->limit - o->len;
		o->full = true;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void force(struct out *o, const char *s, size_t n)
{
	if (n > o->cap - o->len)
		n = o->cap - o->len;      /* cannot happen with LOG_RESERVE */
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static bool needs_quote(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (*p == '\0')
		return true;
	for (; *p != '\0'; p++)
		if (*p == ' ' || *p == '"' || *p == '=' || is_ctl(*p))
			return true;
	return false;
}

/* The escaped form of c inside a quoted value, into u (>= 5 bytes). */
static size_t escape_char(unsigned char c, char *u)
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '"':  memcpy(u, "\\\"", 2); return 2;
	case '\\': memcpy(u, "\\\\", 2); return 2;
	case '\n': memcpy(u, "\\n", 2); return 2;
	case '\t': memcpy(u, "\\t", 2); return 2;
	case '\r': memcpy(u, "\\r", 2); return 2;
	}
	if (is_ctl(c)) {
		u[0] = '\\';
		u[1] = 'x';
		u[2] = hex[c >> 4];
		u[3] = hex[c & 15];
		return 4;
	}
	u[0] = (char)c;
	return 1;
}

/* "s" with escapes; an escape is never split, and a cut value ends ..." */
static void put_quoted(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char u[5];

	if (o->full)
		return;
	put(o, "\"", 1);
	if (o->full)
		return;                   /* not even the quote: nothing written */
	for (; *p != '\0' && !o->full; p++)
		put(o, u, escape_char(*p, u));
	put(o, "\"", 1);
	if (o->full)
		force(o, "...\"", 4);
}

static void put_value(struct out *o, const char *s)
{
	if (s == NULL)
		s = "-";
	if (needs_quote(s))
		put_quoted(o, s);
	else
		put_partial(o, s, strlen(s));
}

/* Caller-formatted key=value text: kept as written, except that control
 * characters are escaped and quotes are kept balanced, even when cut. */
static void put_kv(struct out *o, const char *s, bool cut)
{
	const unsigned char *p = (const unsigned char *)s;
	bool inq = false;
	char u[5];
	size_t n;

	while (*p == ' ')
		p++;
	if (*p == '\0')
		return;
	put(o, " ", 1);
	for (; *p != '\0' && !o->full; p++) {
		if (*p == '\\' && inq) {
			if (p[1] != '\0' && !is_ctl(p[1])) {
				/* an escape pair from log_quote */
				put(o, (const char *)p, 2);
				if (!o->full)
					p++;
				continue;
			}
			n = escape_char(*p, u);     /* lone: escape it */
		} else if (is_ctl(*p)) {
			n = escape_char(*p, u);
		} else {
			u[0] = (char)*p;
			n = 1;
		}
		put(o, u, n);
		if (!o->full && *p == '"')
			inq = !inq;
	}
	if (cut)
		o->full = true;
	/* Cut inside a quoted value, or unbalanced input: close it. */
	if (inq) {
		if (o->full)
			force(o, "...\"", 4);
		else
			force(o, "\"", 1);
	}
}

const char *log_quote(char *buf, size_t cap, const char *s)
{
	struct out o;

	if (s == NULL)
		return "-";
	if (!needs_quote(s))
		return s;
	if (buf == NULL || cap < 8)
		return "\"...\"";
	o.buf = buf;
	o.len = 0;
	o.cap = cap - 1;                  /* the NUL */
	o.limit = cap - 5;                /* ..." and the NUL */
	o.full = false;
	put_quoted(&o, s);
	buf[o.len] = '\0';
	return buf;
}

void log_set_level(enum log_level lvl)
{
	if (lvl >= LOG_DEBUG && lvl <= LOG_ERROR)
		log_threshold = lvl;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
		if (str_eq_nocase(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

static bool enabled(enum log_level lvl)
{
	return lvl >= log_threshold && lvl <= LOG_ERROR;
}

static char request_id[LOG_REQUEST_ID_MAX + 1];

void log_set_request_id(const char *id)
{
	size_t n = id != NULL ? strnlen(id, LOG_REQUEST_ID_MAX) : 0;

	memcpy(request_id, id != NULL ? id : "", n);
	request_id[n] = '\0';
}

const char *log_request_id(void)
{
	return request_id[0] != '\0' ? request_id : NULL;
}

static void line_begin(struct out *o, char *buf, enum log_level lvl,
                       const char *msg)
{
	char ts[40], num[32];
	int n;

	o->buf = buf;
	o->len = 0;
	o->cap = LOG_LINE_MAX;
	o->limit = LOG_LINE_MAX - LOG_RESERVE;
	o->full = false;

	put(o, "ts=", 3);
	if (time_iso8601_now(ts, sizeof ts) == NULL)
		strcpy(ts, "-");
	put(o, ts, strlen(ts));
	put(o, " level=", 7);
	put(o, level_names[lvl], strlen(level_names[lvl]));
	n = snprintf(num, sizeof num, " pid=%ld msg=", (long)getpid());
	put(o, num, (size_t)n);
	put_value(o, msg);
	if (request_id[0] != '\0') {
		put(o, " request_id=", 12);
		put_value(o, request_id);
	}
}

static void line_end(struct out *o)
{
	const char *p;
	size_t left;
	ssize_t n;

	if (o->full)
		force(o, " truncated=true", 15);
	force(o, "\n", 1);
	p = o->buf;
	left = o->len;
	while (left > 0) {
		n = write(STDERR_FILENO, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;           /* nowhere left to report it */
		}
		p += n;
		left -= (size_t)n;
	}
}

void log_msg(enum log_level lvl, const char *msg)
{
	char buf[LOG_LINE_MAX];
	struct out o;
	int saved = errno;

	if (!enabled(lvl))
		return;
	line_begin(&o, buf, lvl, msg);
	line_end(&o);
	errno = saved;
}

void log_kv(enum log_level lvl, const char *msg, const char *kvfmt, ...)
{
	char buf[LOG_LINE_MAX], kv[LOG_LINE_MAX];
	struct out o;
	va_list ap;
	int saved = errno, n = 0;

	if (!enabled(lvl))
		return;
	line_begin(&o, buf, lvl, msg);
	if (kvfmt != NULL) {
		va_start(ap, kvfmt);
		n = vsnprintf(kv, sizeof kv, kvfmt, ap);
		va_end(ap);
		if (n >= 0)
			put_kv(&o, kv, (size_t)n >= sizeof kv);
	}
	line_end(&o);
	errno = saved;
}

void log_request(const char *method, const char *path, int status,
                 double ms, const char *customer)
{
	char buf[LOG_LINE_MAX], num[64];
	struct out o;
	int saved = errno, n;

	if (!enabled(LOG_INFO))
		return;
	line_begin(&o, buf, LOG_INFO, "request");
	put(&o, " method=", 8);
	put_value(&o, method);
	put(&o, " path=", 6);
	put_value(&o, path);
	n = snprintf(num, sizeof num, " status=%d ms=%.1f customer=", status, ms);
	if (n > 0 && (size_t)n < sizeof num)
		put(&o, num, (size_t)n);
	put_value(&o, customer);
	line_end(&o);
	errno = saved;
}
