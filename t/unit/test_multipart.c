/* test_multipart.c - the streaming multipart/form-data parser, fed whole
 * and in every split, since a delimiter may straddle two reads. */
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "http/multipart.h"

/* What the callbacks saw: "name|filename|type=data;" per part. */
struct seen {
	char out[4096];
	size_t n;
	int stop_at_part;                 /* part_begin of this part (1-based) fails */
	int parts;
};

static void put(struct seen *s, const char *p, size_t n)
{
	if (s->n + n < sizeof s->out) {
		memcpy(s->out + s->n, p, n);
		s->n += n;
		s->out[s->n] = '\0';
	}
}

static int on_begin(void *arg, const struct multipart_part *p)
{
	struct seen *s = arg;
	char b[1400];

	if (++s->parts == s->stop_at_part)
		return -1;
	snprintf(b, sizeof b, "%s|%s|%s=", p->name,
	         p->filename != NULL ? p->filename : "(null)", p->content_type);
	put(s, b, strlen(b));
	return 0;
}

static int on_data(void *arg, const char *data, size_t len)
{
	put(arg, data, len);
	return 0;
}

static int on_end(void *arg)
{
	put(arg, ";", 1);
	return 0;
}

static const struct multipart_cb cb = { on_begin, on_data, on_end };

/* Parse body in pieces of step bytes (0 = whole); rc of the feed or finish. */
static int parse(const char *boundary, const char *body, size_t len, size_t step,
                 struct seen *s, char *err, size_t errlen)
{
	struct multipart *m = multipart_new(boundary);
	int rc = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	if (step == 0)
		step = len;
	for (size_t off = 0; off < len && rc == 0; off += step)
		rc = multipart_feed(m, body + off, len - off < step ? len - off : step,
		                    &cb, s, err, errlen);
	if (rc == 0)
		rc = multipart_finish(m, err, errlen);
	multipart_free(m);
	return rc;
}

struct mp_case {
	const char *body;
	int rc;
	const char *want;                 /* callbacks' record, or error substring */
};

#define B "XyZ"
static const struct mp_case cases[] = {
	{ "--" B "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
	  "Content-Type: text/plain\r\n\r\nhello\r\nworld\r\n--" B "--\r\n",
	  0, "file|a.txt|text/plain=hello\r\nworld;" },
	/* preamble, two parts, data that looks like a delimiter, epilogue */
	{ "preamble\r\n--" B "\r\nContent-Disposition: form-data; name=a\r\n\r\n"
	  "x\r\n--XY\r\n-" "\r\n--" B "\r\ncontent-disposition: form-data; name=\"b\"; "
	  "filename=\"q\\\"t.md\"\r\n\r\n\r\n--" B "--epilogue",
	  0, "a|(null)|=x\r\n--XY\r\n-;b|q\"t.md|=;" },
	/* a Windows path sent as browsers send it: its backslashes are kept;
	 * an escaped backslash is one backslash */
	{ "--" B "\r\nContent-Disposition: form-data; name=\"file\"; "
	  "filename=\"C:\\Users\\me\\win.csv\"\r\n\r\nx\r\n--" B "--",
	  0, "file|C:\\Users\\me\\win.csv|=x;" },
	{ "--" B "\r\nContent-Disposition: form-data; name=\"file\"; "
	  "filename=\"C:\\\\Users\\\\w.csv\"\r\n\r\nx\r\n--" B "--",
	  0, "file|C:\\Users\\w.csv|=x;" },
	/* empty part data, blanks after the boundary */
	{ "--" B "  \r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n\r\n--" B "--",
	  0, "e|(null)|=;" },
	{ "--" B "\r\nContent-Type: text/plain\r\n\r\nx\r\n--" B "--",
	  -1, "without Content-Disposition" },
	{ "--" B "\r\nContent-Disposition: attachment\r\n\r\nx\r\n--" B "--",
	  -1, "not form-data" },
	{ "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nunfinished",
	  -1, "before the closing boundary" },
	{ "no boundary at all", -1, "no boundary found" },
	{ "--" B "x\r\n", -1, "after a boundary" },
	{ NULL, 0, NULL },
};

static void test_cases(void)
{
	for (const struct mp_case *t = cases; t->body != NULL; t++) {
		size_t len = strlen(t->body);

		for (size_t step = 0; step <= len; step++) {
			struct seen s = { .stop_at_part = 0 };
			char err[256] = "";
			int rc = parse(B, t->body, len, step, &s, err, sizeof err);

			if (rc != t->rc || (rc == 0 ? strcmp(s.out, t->want) != 0
			                            : strstr(err, t->want) == NULL)) {
				fprintf(stderr, "\n  case %d step %zu: rc %d out '%s' err '%s'",
				        (int)(t - cases), step, rc, s.out, err);
				CU_FAIL("multipart case");
				break;
			}
		}
	}
}

static void test_header_limit(void)
{
	static char body[MULTIPART_HEADER_MAX + 200];
	struct seen s = { .stop_at_part = 0 };
	char err[256] = "";
	size_t n;

	n = (size_t)snprintf(body, sizeof body,
	    "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: ");
	/* exactly MULTIPART_HEADER_MAX bytes of header block is fine */
	memset(body + n, 'p', MULTIPART_HEADER_MAX - (n - 7) - 4);
	n += MULTIPART_HEADER_MAX - (n - 7) - 4;
	n += (size_t)snprintf(body + n, sizeof body - n, "\r\n\r\nd\r\n--" B "--");
	CU_ASSERT_EQUAL(parse(B, body, n, 0, &s, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(s.out, "a|(null)|=d;");

	/* one byte more is not */
	memmove(body + 60, body + 59, n - 59);
	n++;
	memset(&s, 0, sizeof s);
	CU_ASSERT_EQUAL(parse(B, body, n, 0, &s, err, sizeof err), MULTIPART_ERR_BAD);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "headers too large"));
}

static void test_stop(void)
{
	static const char body[] =
		"--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n"
		"--" B "\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\ny\r\n--" B "--";
	struct seen s = { .stop_at_part = 2 };
	char err[64];

	CU_ASSERT_EQUAL(parse(B, body, strlen(body), 0, &s, err, sizeof err),
	                MULTIPART_ERR_STOP);
	CU_ASSERT_STRING_EQUAL(s.out, "a|(null)|=x;");
}

static void test_boundary(void)
{
	char b[MULTIPART_BOUNDARY_MAX + 1];
	char ct[200];

	CU_ASSERT_EQUAL(multipart_boundary("multipart/form-data; boundary=abc", b), 0);
	CU_ASSERT_STRING_EQUAL(b, "abc");
	CU_ASSERT_EQUAL(multipart_boundary("Multipart/Form-Data;charset=utf-8; "
	                                   "boundary=\"a b:c\"", b), 0);
	CU_ASSERT_STRING_EQUAL(b, "a b:c");
	CU_ASSERT_EQUAL(multipart_boundary("multipart/form-data", b), -1);
	CU_ASSERT_EQUAL(multipart_boundary("multipart/mixed; boundary=abc", b), -1);
	CU_ASSERT_EQUAL(multipart_boundary("application/json", b), -1);
	CU_ASSERT_EQUAL(multipart_boundary("multipart/form-data; boundary=", b), -1);
	CU_ASSERT_EQUAL(multipart_boundary("multipart/form-data; boundary=\"ab \"", b), -1);
	CU_ASSERT_EQUAL(multipart_boundary("multipart/form-data; boundary=a\rb", b), -1);
	/* 70 characters at most */
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=%070d", 7);
	CU_ASSERT_EQUAL(multipart_boundary(ct, b), 0);
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=%071d", 7);
	CU_ASSERT_EQUAL(multipart_boundary(ct, b), -1);
	CU_ASSERT_PTR_NULL(multipart_new(""));
	CU_ASSERT_PTR_NULL(multipart_new("a\r\nb"));
}

int suite_multipart(void)
{
	static const struct test_case tests[] = {
		{ "parts in every split", test_cases },
		{ "header block limit", test_header_limit },
		{ "callback stops", test_stop },
		{ "boundary parameter", test_boundary },
		{ NULL, NULL },
	};
	return suite_add("multipart", tests);
}
