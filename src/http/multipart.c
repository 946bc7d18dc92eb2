/* multipart.c - multipart/form-data, one byte state machine.
 *
 * The delimiter is "\r\n--" boundary.  Its first byte, CR, never occurs in
 * a boundary, so a partial match that fails can restart only at the failing
 * byte: no buffering beyond the bytes matched so far, which are the
 * delimiter's own prefix and need no copy.  The body is treated as if a
 * CRLF came before it, so a first line "--boundary" matches too. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/multipart.h"
#include "http/request.h"
#include "http/response.h"

enum mp_state {
	MP_PREAMBLE,          /* before the first delimiter: discarded */
	MP_AFTER_DELIM,       /* "--" (end) or optional blanks and CRLF */
	MP_AFTER_DASH,        /* one '-' seen */
	MP_AFTER_CR,          /* CR seen, LF expected */
	MP_HEADERS,
	MP_BODY,
	MP_EPILOGUE,          /* after the closing delimiter: discarded */
	MP_DONE_ERR,
};

#define MP_BLANKS_MAX 64      /* transport padding after a delimiter */

struct multipart {
	enum mp_state state;
	char delim[4 + MULTIPART_BOUNDARY_MAX + 1];
	size_t dlen;
	size_t match;                     /* delimiter bytes matched */
	bool in_part;
	unsigned blanks;
	char hdr[MULTIPART_HEADER_MAX + 1];
	size_t hlen;
	/* the current part's header values */
	char name[256];
	char filename[1024];
	char ctype[256];
	bool has_filename;
};

static int fail(struct multipart *m, char *err, size_t errlen, const char *msg)
{
	m->state = MP_DONE_ERR;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "Malformed multipart body: %s", msg);
	return MULTIPART_ERR_BAD;
}

/* RFC 2046 bchars; a space only when not last. */
static bool boundary_ok(const char *b, size_t n)
{
	static const char extra[] = "'()+_,-./:=? ";

	if (n == 0 || n > MULTIPART_BOUNDARY_MAX || b[n - 1] == ' ')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || (c != '\0' && strchr(extra, c))))
			return false;
	}
	return true;
}

int multipart_boundary(const char *ct, char out[MULTIPART_BOUNDARY_MAX + 1])
{
	static const char type[] = "multipart/form-data";
	const char *p;
	size_t n = 0;

	if (ct == NULL)
		return -1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, type, sizeof type - 1) != 0)
		return -1;
	p = ct + sizeof type - 1;
	/* parameters: ; name=value or name="value" */
	while (*p != '\0') {
		const char *name;
		size_t nlen;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != ';')
			return -1;
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		name = p;
		while (*p != '\0' && *p != '=' && *p != ';' && *p != ' ')
			p++;
		nlen = (size_t)(p - name);
		if (*p != '=')
			return -1;
		p++;
		if (nlen == 8 && strncasecmp(name, "boundary", 8) == 0) {
			const char *v = p;

			if (*p == '"') {
				v = ++p;
				while (*p != '\0' && *p != '"')
					p++;
				if (*p != '"')
					return -1;
				n = (size_t)(p - v);
				p++;
			} else {
				while (*p != '\0' && *p != ';' && *p != ' ' && *p != '\t')
					p++;
				n = (size_t)(p - v);
			}
			if (!boundary_ok(v, n))
				return -1;
			memcpy(out, v, n);
			out[n] = '\0';
		} else if (*p == '"') {
			p++;
			while (*p != '\0' && *p != '"')
				p++;
			if (*p != '"')
				return -1;
			p++;
		} else {
			while (*p != '\0' && *p != ';' && *p != ' ' && *p != '\t')
				p++;
		}
	}
	return n > 0 ? 0 : -1;
}

struct multipart *multipart_new(const char *boundary)
{
	struct multipart *m;
	size_t n = boundary != NULL ? strlen(boundary) : 0;

	if (!boundary_ok(boundary, n))
		return NULL;
	if ((m = calloc(1, sizeof *m)) == NULL)
		return NULL;
	memcpy(m->delim, "\r\n--", 4);
	memcpy(m->delim + 4, boundary, n);
	m->dlen = 4 + n;
	m->state = MP_PREAMBLE;
	m->match = 2;                     /* the virtual CRLF before the body */
	return m;
}

void multipart_free(struct multipart *m)
{
	free(m);
}

/* A header parameter value (token or quoted string, \" and \\ escaped) of
 * name in s into out; 1 found, 0 absent, -1 malformed or too long. */
static int header_param(const char *s, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name);
	const char *p = s;

	while ((p = strchr(p, ';')) != NULL) {
		size_t n = 0;

		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, name, nlen) != 0 || p[nlen] != '=')
			continue;
		p += nlen + 1;
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\0')
					return -1;
				/* A quoted-pair only where one is needed (\" and
				 * \\): browsers send a Windows path's backslashes
				 * as they are ("C:\Users\me\win.csv"), so any
				 * other backslash is a literal one. */
				if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				if (n + 1 >= cap)
					return -1;
				out[n++] = *p;
			}
		} else {
			for (; *p != '\0' && *p != ';' && *p != ' ' && *p != '\t'; p++) {
				if (n + 1 >= cap)
					return -1;
				out[n++] = *p;
			}
		}
		out[n] = '\0';
		return 1;
	}
	return 0;
}

/* The header block (CRLF-separated lines, ending in an empty one). */
static int parse_headers(struct multipart *m, char *err, size_t errlen)
{
	char *line = m->hdr, *next;
	bool disposition = false;

	m->name[0] = m->filename[0] = m->ctype[0] = '\0';
	m->has_filename = false;
	for (; *line != '\0'; line = next) {
		char *colon, *v;

		if ((next = strstr(line, "\r\n")) == NULL)
			return fail(m, err, errlen, "part header without CRLF");
		*next = '\0';
		next += 2;
		if (*line == '\0')
			break;
		if (memchr(line, '\0', (size_t)(next - 2 - line)) != NULL ||
		    (colon = strchr(line, ':')) == NULL)
			return fail(m, err, errlen, "bad part header line");
		*colon = '\0';
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (strcasecmp(line, "Content-Disposition") == 0) {
			int rc;

			if (strncasecmp(v, "form-data", 9) != 0 ||
			    (v[9] != '\0' && v[9] != ';' && v[9] != ' '))
				return fail(m, err, errlen,
				            "Content-Disposition is not form-data");
			disposition = true;
			if (header_param(v, "name", m->name, sizeof m->name) < 0)
				return fail(m, err, errlen, "bad name parameter");
			rc = header_param(v, "filename", m->filename, sizeof m->filename);
			if (rc < 0)
				return fail(m, err, errlen, "bad or too long filename");
			m->has_filename = rc == 1;
		} else if (strcasecmp(line, "Content-Type") == 0) {
			if (strlen(v) >= sizeof m->ctype)
				return fail(m, err, errlen, "Content-Type too long");
			strcpy(m->ctype, v);
		}
	}
	if (!disposition)
		return fail(m, err, errlen, "part without Content-Disposition");
	return MULTIPART_OK;
}

static int emit(struct multipart *m, const struct multipart_cb *cb, void *arg,
                const char *p, size_t n)
{
	if (n == 0 || m->state != MP_BODY || cb->part_data == NULL)
		return 0;
	return cb->part_data(arg, p, n);
}

static int stop(struct multipart *m)
{
	m->state = MP_DONE_ERR;
	return MULTIPART_ERR_STOP;
}

int multipart_feed(struct multipart *m, const char *data, size_t len,
                   const struct multipart_cb *cb, void *arg,
                   char *err, size_t errlen)
{
	size_t run = 0;                   /* start of unflushed body bytes */

	if (m->state == MP_DONE_ERR)
		return fail(m, err, errlen, "parser already failed");
	for (size_t i = 0; i < len; i++) {
		char c = data[i];

		switch (m->state) {
		case MP_PREAMBLE:
		case MP_BODY:
			if (c == m->delim[m->match]) {
				if (m->match == 0 && emit(m, cb, arg, data + run, i - run))
					return stop(m);
				if (++m->match == m->dlen) {
					m->match = 0;
					m->blanks = 0;
					m->state = MP_AFTER_DELIM;
				}
				break;
			}
			if (m->match > 0) {
				/* the bytes matched so far were data after all */
				if (emit(m, cb, arg, m->delim, m->match))
					return stop(m);
				m->match = 0;
				if (c == m->delim[0]) {
					m->match = 1;
					break;
				}
				run = i;
			}
			break;
		case MP_AFTER_DELIM:
			if (c == '-') {
				m->state = MP_AFTER_DASH;
			} else if (c == '\r') {
				m->state = MP_AFTER_CR;
			} else if ((c == ' ' || c == '\t') && ++m->blanks <= MP_BLANKS_MAX) {
				;
			} else {
				return fail(m, err, errlen, "bad bytes after a boundary");
			}
			break;
		case MP_AFTER_DASH:
			if (c != '-')
				return fail(m, err, errlen, "bad bytes after a boundary");
			if (m->in_part && cb->part_end != NULL && cb->part_end(arg))
				return stop(m);
			m->in_part = false;
			m->state = MP_EPILOGUE;
			break;
		case MP_AFTER_CR:
			if (c != '\n')
				return fail(m, err, errlen, "bad bytes after a boundary");
			if (m->in_part && cb->part_end != NULL && cb->part_end(arg))
				return stop(m);
			m->in_part = false;
			m->hlen = 0;
			m->state = MP_HEADERS;
			break;
		case MP_HEADERS:
			if (m->hlen == MULTIPART_HEADER_MAX)
				return fail(m, err, errlen, "part headers too large");
			if (c == '\0')
				return fail(m, err, errlen, "NUL byte in part headers");
			m->hdr[m->hlen++] = c;
			m->hdr[m->hlen] = '\0';
			if ((m->hlen == 2 && memcmp(m->hdr, "\r\n", 2) == 0) ||
			    (m->hlen >= 4 && memcmp(m->hdr + m->hlen - 4, "\r\n\r\n", 4) == 0)) {
				struct multipart_part p;
				int rc = parse_headers(m, err, errlen);

				if (rc != MULTIPART_OK)
					return rc;
				p.name = m->name;
				p.filename = m->has_filename ? m->filename : NULL;
				p.content_type = m->ctype;
				m->in_part = true;
				m->state = MP_BODY;
				m->match = 0;
				run = i + 1;
				if (cb->part_begin != NULL && cb->part_begin(arg, &p))
					return stop(m);
			}
			break;
		case MP_EPILOGUE:
			break;
		case MP_DONE_ERR:
			return MULTIPART_ERR_BAD;
		}
	}
	if (m->state == MP_BODY && m->match == 0 &&
	    emit(m, cb, arg, data + run, len - run))
		return stop(m);
	return MULTIPART_OK;
}

int multipart_finish(struct multipart *m, char *err, size_t errlen)
{
	if (m->state == MP_EPILOGUE)
		return MULTIPART_OK;
	if (m->state == MP_DONE_ERR)
		return MULTIPART_ERR_BAD;
	return fail(m, err, errlen, m->state == MP_PREAMBLE
	            ? "no boundary found" : "body ends before the closing boundary");
}

int req_multipart_or_reply(struct req *r, long max,
                           const struct multipart_cb *cb, void *arg)
{
	char boundary[MULTIPART_BOUNDARY_MAX + 1], err[256], msg[128];
	struct multipart *m = NULL;
	char *buf;
	size_t got, total = 0;
	const size_t cap = 64 * 1024;
	int rc = -1;

	if (multipart_boundary(r->content_type, boundary) != 0) {
		resp_detail(r, 415, "Content-Type must be application/json or "
		            "multipart/form-data with a boundary");
		return -1;
	}
	if (r->content_length > max) {
		snprintf(msg, sizeof msg, "Request body too large (limit %ld bytes)", max);
		resp_detail(r, 413, msg);
		return -1;
	}
	if ((m = multipart_new(boundary)) == NULL) {
		resp_detail(r, 415, "Bad multipart boundary");
		return -1;
	}
	buf = malloc(cap);
	if (buf == NULL) {
		resp_detail(r, 500, "Internal Server Error");
		goto out;             /* rc is -1 */
	}
	for (;;) {
		if (req_read_some(r, buf, cap, &got) != REQ_OK) {
			r->status = 499;        /* the client is gone */
			rc = -1;
			goto out;
		}
		if (got == 0)
			break;
		total += got;
		if (total > (size_t)max) {
			snprintf(msg, sizeof msg,
			         "Request body too large (limit %ld bytes)", max);
			resp_detail(r, 413, msg);
			rc = -1;
			goto out;
		}
		rc = multipart_feed(m, buf, got, cb, arg, err, sizeof err);
		if (rc == MULTIPART_ERR_STOP)
			goto out;
		if (rc != MULTIPART_OK) {
			resp_detail(r, 400, err);
			rc = -1;
			goto out;
		}
	}
	if (r->content_length >= 0 && total < (size_t)r->content_length) {
		r->status = 499;
		rc = -1;
		goto out;
	}
	if (multipart_finish(m, err, sizeof err) != MULTIPART_OK) {
		resp_detail(r, 400, err);
		rc = -1;
		goto out;
	}
	rc = 0;
out:
	free(buf);
	multipart_free(m);
	return rc;
}
