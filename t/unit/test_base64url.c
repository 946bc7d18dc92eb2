/* test_base64url.c - base64 and base64url: RFC 4648 vectors, alphabet,
 * refusals, and long input (libb64 would break lines at 72). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "util/base64url.h"

/* A table assertion that names the failing case. */
#define CHECK_CASE(cond, name) do {                                        \
	char m_[256];                                                       \
	snprintf(m_, sizeof m_, "%s [case %s]", #cond, (name));            \
	CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE, __LINE__, m_,  \
	    __FILE__, "", CU_FALSE);                                        \
} while (0)

/* RFC 4648 section 10, with the url form unpadded. */
static const struct vec {
	const char *plain, *std, *url;
} vectors[] = {
	{ "",       "",         ""         },
	{ "f",      "Zg==",     "Zg"       },
	{ "fo",     "Zm8=",     "Zm8"      },
	{ "foo",    "Zm9v",     "Zm9v"     },
	{ "foob",   "Zm9vYg==", "Zm9vYg"   },
	{ "fooba",  "Zm9vYmE=", "Zm9vYmE"  },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
	{ NULL, NULL, NULL },
};

/* Inputs with a length so that embedded NULs can be expressed; len 0
 * means strlen. */
struct bad {
	const char *in;
	size_t len;
	const char *why;
};

static const struct bad invalid_url[] = {
	{ "Zg=",          0, "padding" },
	{ "Zg==",         0, "full padding" },
	{ "Zm8=",         0, "one pad" },
	{ "Zm9v+w",       0, "'+' is standard alphabet" },
	{ "Zm9v/w",       0, "'/' is standard alphabet" },
	{ "Z",            0, "len % 4 == 1" },
	{ "Zm9vY",        0, "len 5" },
	{ "Zm9vYmFyZ",    0, "len 9" },
	{ " Zm9v",        0, "leading space" },
	{ "Zm9v ",        0, "trailing space" },
	{ "Zm\n9v",       0, "newline" },
	{ "Zm9v\r\n",     0, "CRLF" },
	{ "Zm\t9",        0, "tab" },
	{ "Zm9\xc3\xa9",  0, "non-ASCII" },
	{ "Zm9\xff",      0, "high byte" },
	{ "Zm\0v",        4, "NUL byte" },
	{ "Zh",           0, "non-canonical trailing bits (2)" },
	{ "Zm9",          0, "non-canonical trailing bits (3)" },
	{ "Zm.v",         0, "dot" },
	{ NULL, 0, NULL },
};

static const struct bad invalid_std[] = {
	{ "Zg",           0, "missing padding" },
	{ "Zg=",          0, "short padding" },
	{ "Z===",         0, "three pads" },
	{ "====",         0, "only padding" },
	{ "Zg==Zg==",     0, "padding in the middle" },
	{ "Zm=v",         0, "'=' inside" },
	{ "Zm9v-_8=",     0, "url alphabet" },
	{ "Zm9v\n",       0, "newline" },
	{ "Zm9v\nZm9v",   0, "line break" },
	{ "Zm 9v",        0, "space" },
	{ "Zm9\xc3",      0, "non-ASCII" },
	{ "Zm\0v",        4, "NUL byte" },
	{ "Zh==",         0, "non-canonical trailing bits (1 byte)" },
	{ "Zm9=",         0, "non-canonical trailing bits (2 bytes)" },
	{ "Z",            0, "len 1" },
	{ NULL, 0, NULL },
};

static void test_encode_vectors(void)
{
	for (const struct vec *v = vectors; v->plain != NULL; v++) {
		char *s = b64_encode(v->plain, strlen(v->plain));
		char *u = b64url_encode(v->plain, strlen(v->plain));

		CHECK_CASE(s != NULL && strcmp(s, v->std) == 0, v->std);
		CHECK_CASE(u != NULL && strcmp(u, v->url) == 0, v->url);
		free(s);
		free(u);
	}
}

static void test_decode_vectors(void)
{
	for (const struct vec *v = vectors; v->plain != NULL; v++) {
		size_t n = 99, m = 99;
		unsigned char *s = b64_decode(v->std, strlen(v->std), &n);
		unsigned char *u = b64url_decode(v->url, strlen(v->url), &m);

		CHECK_CASE(s != NULL && n == strlen(v->plain) &&
		    memcmp(s, v->plain, n) == 0 && s[n] == '\0', v->std);
		CHECK_CASE(u != NULL && m == strlen(v->plain) &&
		    memcmp(u, v->plain, m) == 0 && u[m] == '\0', v->url);
		free(s);
		free(u);
	}
}

/* 62 and 63 are where the two alphabets differ. */
static void test_alphabet(void)
{
	static const unsigned char b2[] = { 0xfb, 0xff };
	static const unsigned char b3[] = { 0xfb, 0xff, 0xbf };
	char *s;
	unsigned char *d;
	size_t n;

	s = b64url_encode(b2, sizeof b2);
	CU_ASSERT_STRING_EQUAL(s, "-_8");
	free(s);
	s = b64_encode(b2, sizeof b2);
	CU_ASSERT_STRING_EQUAL(s, "+/8=");
	free(s);
	s = b64url_encode(b3, sizeof b3);
	CU_ASSERT_STRING_EQUAL(s, "-_-_");
	free(s);
	s = b64_encode(b3, sizeof b3);
	CU_ASSERT_STRING_EQUAL(s, "+/+/");
	free(s);

	d = b64url_decode("-_8", 3, &n);
	CU_ASSERT(d != NULL && n == 2 && memcmp(d, b2, 2) == 0);
	free(d);
	d = b64_decode("+/+/", 4, &n);
	CU_ASSERT(d != NULL && n == 3 && memcmp(d, b3, 3) == 0);
	free(d);
}

static void check_invalid(const struct bad *t, bool url)
{
	for (; t->in != NULL; t++) {
		size_t n = 42, len = t->len != 0 ? t->len : strlen(t->in);
		unsigned char *d = url ? b64url_decode(t->in, len, &n) :
		    b64_decode(t->in, len, &n);

		CHECK_CASE(d == NULL, t->why);
		CHECK_CASE(n == 0, t->why);
		free(d);
	}
}

static void test_invalid_url(void)
{
	check_invalid(invalid_url, true);
}

static void test_invalid_std(void)
{
	check_invalid(invalid_std, false);
}

/* Every prefix of 0..255 survives both alphabets. */
static void test_roundtrip_all_bytes(void)
{
	unsigned char in[256];
	size_t len, n;

	for (len = 0; len < sizeof in; len++)
		in[len] = (unsigned char)len;
	for (len = 0; len <= sizeof in; len++) {
		char *s = b64_encode(in, len), *u = b64url_encode(in, len);
		unsigned char *ds = NULL, *du = NULL;

		CU_ASSERT_FATAL(s != NULL && u != NULL);
		CU_ASSERT_EQUAL(strlen(s), (len + 2) / 3 * 4);
		CU_ASSERT_EQUAL(strlen(u), (len * 4 + 2) / 3);
		ds = b64_decode(s, strlen(s), &n);
		CU_ASSERT(ds != NULL && n == len && memcmp(ds, in, len) == 0);
		du = b64url_decode(u, strlen(u), &n);
		CU_ASSERT(du != NULL && n == len && memcmp(du, in, len) == 0);
		free(s);
		free(u);
		free(ds);
		free(du);
	}
}

/* Longer than libb64's 72-character lines: no newline may survive. */
static void test_long_input(void)
{
	static const size_t sizes[] = { 54, 55, 100, 1000, 300001 };

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t len = sizes[i], n;
		unsigned char *in = malloc(len), *d;
		char *s, *u;

		CU_ASSERT_FATAL(in != NULL);
		for (size_t j = 0; j < len; j++)
			in[j] = (unsigned char)(j * 7 + 3);
		s = b64_encode(in, len);
		u = b64url_encode(in, len);
		CU_ASSERT_FATAL(s != NULL && u != NULL);
		CU_ASSERT(strchr(s, '\n') == NULL);
		CU_ASSERT(strchr(u, '\n') == NULL);
		CU_ASSERT(strchr(u, '=') == NULL);
		CU_ASSERT_EQUAL(strlen(s), (len + 2) / 3 * 4);
		CU_ASSERT_EQUAL(strlen(u), (len * 4 + 2) / 3);
		d = b64_decode(s, strlen(s), &n);
		CU_ASSERT(d != NULL && n == len && memcmp(d, in, len) == 0);
		free(d);
		d = b64url_decode(u, strlen(u), &n);
		CU_ASSERT(d != NULL && n == len && memcmp(d, in, len) == 0);
		free(d);
		free(in);
		free(s);
		free(u);
	}
}

static void test_null_outlen(void)
{
	unsigned char *d = b64url_decode("Zm9v", 4, NULL);

	CU_ASSERT(d != NULL && strcmp((char *)d, "foo") == 0);
	free(d);
	CU_ASSERT(b64url_decode(NULL, 1, NULL) == NULL);
	CU_ASSERT(b64_encode(NULL, 1) == NULL);
}

int suite_base64url(void)
{
	static const struct test_case tests[] = {
		{ "RFC 4648 vectors encode", test_encode_vectors },
		{ "RFC 4648 vectors decode", test_decode_vectors },
		{ "alphabet 62/63", test_alphabet },
		{ "invalid base64url", test_invalid_url },
		{ "invalid base64", test_invalid_std },
		{ "roundtrip every byte", test_roundtrip_all_bytes },
		{ "long input, no line breaks", test_long_input },
		{ "NULL arguments", test_null_outlen },
		{ NULL, NULL },
	};

	return suite_add("base64url", tests);
}
