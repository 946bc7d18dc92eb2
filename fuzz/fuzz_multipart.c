/* fuzz_multipart.c - libFuzzer target: a multipart/form-data upload as a
 * handler reads it (req_multipart_or_reply), and the same body fed to the
 * streaming parser in small pieces.
 *
 * Input: the Content-Type header value, a newline, the body; the body's
 * first byte also picks the piece size (1 to 64).  Checked: the
 * callbacks come in order (begin, data, end; data only inside a part),
 * with terminated header values within their bounds, and never more data
 * bytes than the body holds; a refusal is a 400, 413 or 415 with a reason;
 * and the request read and the piecewise feed see exactly the same parts,
 * bytes and outcome, wherever the pieces cut the body. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/multipart.h"
#include "http/request.h"
#include "util/arena.h"
#include "util/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_BODY_MAX 4096                /* the request's limit: 413 past it */

/* What the callbacks saw, as one byte string. */
struct seen {
	char *log;
	size_t n, cap;
	size_t data_bytes;
	bool in_part;
};

static void add(struct seen *s, const void *p, size_t n)
{
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2;
		if ((s->log = realloc(s->log, s->cap)) == NULL)
			abort();
	}
	memcpy(s->log + s->n, p, n);
	s->n += n;
}

static void add_str(struct seen *s, const char *v, size_t max)
{
	size_t n = strnlen(v, max);

	if (n == max)
		abort();                  /* unterminated or over its bound */
	add(s, v, n + 1);
}

static int on_begin(void *arg, const struct multipart_part *p)
{
	struct seen *s = arg;

	if (s->in_part || p->name == NULL || p->content_type == NULL)
		abort();
	s->in_part = true;
	add(s, "B", 1);
	add_str(s, p->name, 256);
	add_str(s, p->content_type, 256);
	if (p->filename != NULL)
		add_str(s, p->filename, 1024);
	else
		add(s, "-", 1);
	return 0;
}

static int on_data(void *arg, const char *data, size_t len)
{
	struct seen *s = arg;

	if (!s->in_part)
		abort();
	s->data_bytes += len;
	add(s, data, len);
	return 0;
}

static int on_end(void *arg)
{
	struct seen *s = arg;

	if (!s->in_part)
		abort();
	s->in_part = false;
	add(s, "E", 1);
	return 0;
}

static const struct multipart_cb cb = { on_begin, on_data, on_end };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct arena *a;
	static struct config cfg;
	char ct_var[1100], len_var[64], boundary[MULTIPART_BOUNDARY_MAX + 1], err[256] = "";
	char *env[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/dataset/x/documents", ct_var,
	                len_var, NULL };
	struct seen whole = { 0 }, pieces = { 0 };
	const char *nl = memchr(data, '\n', size), *body;
	struct multipart *m;
	size_t blen, step, off;
	struct req r;
	int rc, rc2 = MULTIPART_OK;

	if (nl == NULL || (size_t)(nl - (const char *)data) > 1000)
		return 0;
	if (a == NULL && (a = arena_new()) == NULL)
		abort();
	arena_reset(a);
	config_defaults(&cfg);
	snprintf(ct_var, sizeof ct_var, "CONTENT_TYPE=%.*s", (int)(nl - (const char *)data),
	         (const char *)data);
	body = nl + 1;
	blen = size - (size_t)(body - (const char *)data);
	snprintf(len_var, sizeof len_var, "CONTENT_LENGTH=%zu", blen);
	if (req_init_env(&r, a, &cfg, env) != REQ_OK)
		return 0;
	req_set_test_body(&r, body, blen);

	rc = req_multipart_or_reply(&r, FUZZ_BODY_MAX, &cb, &whole);
	if (rc == 0 ? r.status != 0
	            : (rc != -1 || (r.status != 400 && r.status != 413 && r.status != 415)))
		abort();
	if (whole.data_bytes > blen)
		abort();
	if (rc == 0 && whole.in_part)
		abort();                  /* a complete body ends its last part */

	/* The same body in pieces, when the request got as far as parsing. */
	if (r.status == 415 || r.status == 413 ||
	    multipart_boundary(r.content_type, boundary) != 0)
		goto out;
	if ((m = multipart_new(boundary)) == NULL)
		abort();                  /* multipart_boundary vouched for it */
	step = blen > 0 ? 1 + (unsigned char)body[0] % 64 : 1;
	for (off = 0; off < blen && rc2 == MULTIPART_OK; off += step)
		rc2 = multipart_feed(m, body + off, blen - off < step ? blen - off : step,
		                     &cb, &pieces, err, sizeof err);
	if (rc2 == MULTIPART_OK)
		rc2 = multipart_finish(m, err, sizeof err);
	multipart_free(m);
	if ((rc2 == MULTIPART_OK) != (rc == 0) ||
	    (rc2 != MULTIPART_OK && strncmp(err, "Malformed multipart body: ", 26) != 0))
		abort();
	/* A refused body may stop at a different byte; an accepted one not. */
	if (rc == 0 && (pieces.n != whole.n ||
	                (whole.n > 0 && memcmp(pieces.log, whole.log, whole.n) != 0)))
		abort();
out:
	free(whole.log);
	free(pieces.log);
	req_finish(&r);
	return 0;
}
