/* test_str.c - str_* functions, plus the arena, strbuf and log_quote beside them. */
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "suites.h"
#include "util/arena.h"
#include "util/log.h"
#include "util/str.h"
#include "util/strbuf.h"
#include "util/uuid.h"

/* ---- str_to_ll ---------------------------------------------------------- */

struct ll_case {
	const char *in;
	long long min, max;
	int rc;
	long long want;                   /* when rc == 0 */
};

static const struct ll_case ll_cases[] = {
	{ "0", 0, 10, 0, 0 },
	{ "7", 0, 10, 0, 7 },
	{ "007", 0, 10, 0, 7 },
	{ "10", 0, 10, 0, 10 },                   /* max */
	{ "11", 0, 10, -2, 0 },                   /* max + 1 */
	{ "5", 5, 10, 0, 5 },                     /* min */
	{ "4", 5, 10, -2, 0 },                    /* min - 1 */
	{ "-5", -5, 5, 0, -5 },                   /* negative min */
	{ "-6", -5, 5, -2, 0 },                   /* negative min - 1 */
	{ "-0", -5, 5, 0, 0 },
	{ "-1", 0, 10, -1, 0 },                   /* '-' only when min < 0 */
	{ "-", -5, 5, -1, 0 },
	{ "--1", -5, 5, -1, 0 },
	{ "", 0, 10, -1, 0 },
	{ " 5", 0, 10, -1, 0 },
	{ "5 ", 0, 10, -1, 0 },
	{ "\t5", 0, 10, -1, 0 },
	{ "5\n", 0, 10, -1, 0 },
	{ "+5", 0, 10, -1, 0 },
	{ "+5", -10, 10, -1, 0 },
	{ "5x", 0, 10, -1, 0 },
	{ "x", 0, 10, -1, 0 },
	{ "0x10", 0, 100, -1, 0 },
	{ "1e3", 0, 10000, -1, 0 },
	{ "1.5", 0, 10, -1, 0 },
	{ "9223372036854775807", LLONG_MIN, LLONG_MAX, 0, LLONG_MAX },
	{ "9223372036854775808", LLONG_MIN, LLONG_MAX, -2, 0 },
	{ "-9223372036854775808", LLONG_MIN, LLONG_MAX, 0, LLONG_MIN },
	{ "-9223372036854775809", LLONG_MIN, LLONG_MAX, -2, 0 },
	{ "99999999999999999999999", 0, LLONG_MAX, -2, 0 },
	{ "99999999999999999999999x", 0, LLONG_MAX, -1, 0 },
	{ NULL, 0, 0, 0, 0 },
};

static void test_to_ll(void)
{
	for (const struct ll_case *t = ll_cases; t->in != NULL; t++) {
		long long out = 12345;
		int rc = str_to_ll(t->in, t->min, t->max, &out);

		if (rc != t->rc)
			fprintf(stderr, "\n  str_to_ll(\"%s\", %lld, %lld) = %d, want %d",
			        t->in, t->min, t->max, rc, t->rc);
		CU_ASSERT_EQUAL(rc, t->rc);
		if (t->rc == 0) {
			CU_ASSERT_EQUAL(out, t->want);
		} else {
			CU_ASSERT_EQUAL(out, 12345);      /* untouched on failure */
		}
	}
	CU_ASSERT_EQUAL(str_to_ll(NULL, 0, 1, &(long long){0}), -1);
}

/* ---- str_url_decode ----------------------------------------------------- */

struct url_case {
	const char *in;
	size_t n;                         /* 0: strlen(in) */
	bool plus;
	size_t cap;
	int rc;
	const char *want;                 /* when rc == 0 */
};

static const struct url_case url_cases[] = {
	{ "abc", 0, false, 64, 0, "abc" },
	{ "", 0, false, 1, 0, "" },
	{ "a%20b", 0, false, 64, 0, "a b" },
	{ "%41%62", 0, false, 64, 0, "Ab" },
	{ "%4a%4A", 0, false, 64, 0, "JJ" },
	{ "%e2%82%ac", 0, false, 64, 0, "\xe2\x82\xac" },
	{ "%25", 0, false, 64, 0, "%" },
	{ "a+b", 0, true, 64, 0, "a b" },
	{ "a+b", 0, false, 64, 0, "a+b" },
	{ "%2B", 0, true, 64, 0, "+" },
	{ "%00", 0, false, 64, -1, NULL },
	{ "a%00b", 0, false, 64, -1, NULL },
	{ "%", 0, false, 64, -1, NULL },
	{ "%4", 0, false, 64, -1, NULL },
	{ "a%4", 0, false, 64, -1, NULL },
	{ "%zz", 0, false, 64, -1, NULL },
	{ "%4g", 0, false, 64, -1, NULL },
	{ "%g4", 0, false, 64, -1, NULL },
	{ "% 41", 0, false, 64, -1, NULL },
	{ "abc", 0, false, 4, 0, "abc" },         /* cap fits exactly */
	{ "abcd", 0, false, 4, -1, NULL },        /* one byte more */
	{ "abc", 0, false, 3, -1, NULL },         /* no room for the NUL */
	{ "%41%42", 0, false, 3, 0, "AB" },       /* decoded size counts */
	{ "%41%42%43", 0, false, 3, -1, NULL },
	{ "abc%41", 3, false, 64, 0, "abc" },     /* n bounds the input */
	{ "%41", 2, false, 64, -1, NULL },        /* escape cut by n */
	{ NULL, 0, false, 0, 0, NULL },
};

static void test_url_decode(void)
{
	for (const struct url_case *t = url_cases; t->in != NULL; t++) {
		char dst[64];
		size_t n = t->n != 0 ? t->n : strlen(t->in);
		int rc;

		memset(dst, 'X', sizeof dst);
		rc = str_url_decode(dst, t->cap, t->in, n, t->plus);
		if (rc != t->rc)
			fprintf(stderr, "\n  str_url_decode(\"%s\", cap %zu) = %d, want %d",
			        t->in, t->cap, rc, t->rc);
		CU_ASSERT_EQUAL(rc, t->rc);
		if (t->rc == 0) {
			CU_ASSERT_STRING_EQUAL(dst, t->want);
		} else {
			CU_ASSERT_EQUAL(dst[0], '\0');    /* no half-decoded output */
		}
	}
	/* a raw NUL inside the counted input is refused like %00 */
	{
		char dst[8];

		CU_ASSERT_EQUAL(str_url_decode(dst, sizeof dst, "a\0b", 3, false), -1);
		CU_ASSERT_EQUAL(str_url_decode(dst, 0, "a", 1, false), -1);
	}
}

/* ---- str_ct_equal ------------------------------------------------------- */

struct ct_case {
	const char *a;
	size_t alen;
	const char *b;
	size_t blen;
	bool want;
};

static const struct ct_case ct_cases[] = {
	{ "abc", 3, "abc", 3, true },
	{ "abc", 3, "abd", 3, false },
	{ "abc", 3, "xbc", 3, false },
	{ "abc", 3, "ab", 2, false },
	{ "ab", 2, "abc", 3, false },
	{ "", 0, "", 0, true },
	{ "", 0, "a", 1, false },
	{ "a\0b", 3, "a\0b", 3, true },
	{ "a\0b", 3, "a\0c", 3, false },
	{ "\xff", 1, "\x7f", 1, false },
	{ NULL, 0, NULL, 0, false },
};

static void test_ct_equal(void)
{
	for (const struct ct_case *t = ct_cases; t->a != NULL; t++)
		CU_ASSERT_EQUAL(str_ct_equal(t->a, t->alen, t->b, t->blen), t->want);
}

/* ---- the small ones ----------------------------------------------------- */

static void test_copy(void)
{
	char dst[4] = "old";

	CU_ASSERT_EQUAL(str_copy(dst, sizeof dst, "abc"), 0);
	CU_ASSERT_STRING_EQUAL(dst, "abc");
	CU_ASSERT_EQUAL(str_copy(dst, sizeof dst, "abcd"), -1);
	CU_ASSERT_STRING_EQUAL(dst, "abc");       /* untouched */
	CU_ASSERT_EQUAL(str_copy(dst, sizeof dst, ""), 0);
	CU_ASSERT_STRING_EQUAL(dst, "");
	CU_ASSERT_EQUAL(str_copy(dst, 0, ""), -1);
}

static void test_trim_and_compare(void)
{
	char s1[] = "  \t key \r\n", s2[] = "   ", s3[] = "x";

	CU_ASSERT_STRING_EQUAL(str_trim(s1), "key");
	CU_ASSERT_STRING_EQUAL(str_trim(s2), "");
	CU_ASSERT_STRING_EQUAL(str_trim(s3), "x");

	CU_ASSERT_TRUE(str_eq_nocase("Content-Type", "content-type"));
	CU_ASSERT_FALSE(str_eq_nocase("Content-Type", "content-typ"));
	CU_ASSERT_FALSE(str_eq_nocase("a", "b"));
	CU_ASSERT_TRUE(str_eq_nocase("", ""));

	CU_ASSERT_TRUE(str_has_prefix("Bearer abc", "Bearer "));
	CU_ASSERT_TRUE(str_has_prefix("abc", ""));
	CU_ASSERT_FALSE(str_has_prefix("Bear", "Bearer "));
}

/* ---- arena -------------------------------------------------------------- */

static void test_arena(void)
{
	struct arena *a = arena_new();
	unsigned char *p;
	char *s;

	/* alignment and zeroing, across several blocks */
	for (size_t n = 0; n < 3000; n += 7) {
		p = arena_alloc(a, n);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_EQUAL((uintptr_t)p % 16, 0);
		for (size_t i = 0; i < n; i++)
			if (p[i] != 0) {
				CU_FAIL("arena_alloc memory not zeroed");
				break;
			}
		memset(p, 0xa5, n);
	}
	/* a large allocation gets its own block and stays usable */
	p = arena_alloc(a, 1 << 20);
	CU_ASSERT_EQUAL((uintptr_t)p % 16, 0);
	CU_ASSERT_EQUAL(p[0], 0);
	CU_ASSERT_EQUAL(p[(1 << 20) - 1], 0);
	memset(p, 1, 1 << 20);

	s = arena_strdup(a, "hello");
	CU_ASSERT_STRING_EQUAL(s, "hello");
	s = arena_strndup(a, "hello", 3);
	CU_ASSERT_STRING_EQUAL(s, "hel");
	s = arena_strndup(a, "hi", 10);
	CU_ASSERT_STRING_EQUAL(s, "hi");
	CU_ASSERT_PTR_NULL(arena_strdup(a, NULL));
	s = arena_printf(a, "%s=%d", "n", 42);
	CU_ASSERT_STRING_EQUAL(s, "n=42");
	s = arena_printf(a, "%5000d", 1);
	CU_ASSERT_EQUAL(strlen(s), 5000);

	arena_reset(a);
	p = arena_alloc(a, 100);
	CU_ASSERT_EQUAL(p[0], 0);
	CU_ASSERT_EQUAL(p[99], 0);
	arena_free(a);
	arena_free(NULL);
}

/* arena_reset keeps normal blocks up to its bound for the next request
 * (none under AddressSanitizer), not blocks of their own; a kept block
 * serves again zeroed. */
static void test_arena_keep(void)
{
	struct arena *a = arena_new();
#if defined(__SANITIZE_ADDRESS__)
	const size_t bound = 0;
#else
	const size_t bound = 1024 * 1024;
#endif
	unsigned char *p;

	CU_ASSERT_EQUAL(arena_kept(a), 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 1000; i++) {       /* about 2 MB of blocks */
			p = arena_alloc(a, 2000);
			if (p[0] != 0 || p[1999] != 0)
				CU_FAIL("a reused block is not zeroed");
			memset(p, 0xa5, 2000);
		}
		CU_ASSERT_EQUAL(arena_kept(a), 0);     /* every kept block in use */
		memset(arena_alloc(a, 1 << 20), 1, 1 << 20);
		arena_reset(a);
		CU_ASSERT_EQUAL(arena_kept(a), bound); /* the bound, not 2 MB */
	}
	arena_free(a);
}

/* ---- log_quote ---------------------------------------------------------- */

struct quote_case {
	const char *in;
	const char *want;
};

static const struct quote_case quote_cases[] = {
	{ "plain", "plain" },
	{ "/health", "/health" },
	{ "", "\"\"" },
	{ "two words", "\"two words\"" },
	{ "a=b", "\"a=b\"" },
	{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
	{ "back\\slash here", "\"back\\\\slash here\"" },
	{ "line\nbreak", "\"line\\nbreak\"" },
	{ "tab\there", "\"tab\\there\"" },
	{ "bell\a", "\"bell\\x07\"" },
	{ "del\x7f", "\"del\\x7f\"" },
	{ NULL, NULL },
};

static void test_log_quote(void)
{
	char buf[64], small[12];
	const char *q;

	for (const struct quote_case *t = quote_cases; t->in != NULL; t++)
		CU_ASSERT_STRING_EQUAL(log_quote(buf, sizeof buf, t->in), t->want);
	CU_ASSERT_STRING_EQUAL(log_quote(buf, sizeof buf, NULL), "-");

	/* cut short: the quote is closed and no escape is split */
	q = log_quote(small, sizeof small, "a a a a a a a a a a");
	CU_ASSERT_STRING_EQUAL(q, "\"a a a ...\"");
	q = log_quote(small, sizeof small, "\n\n\n\n\n\n");
	CU_ASSERT_STRING_EQUAL(q, "\"\\n\\n\\n...\"");
	CU_ASSERT(strlen(q) < sizeof small);
}

/* Every boundary of RFC 3629's table of well-formed sequences. */
static void test_utf8(void)
{
	static const struct { const char *s; size_t len; unsigned cp; } cases[] = {
		{ "A", 1, 0x41 },
		{ "\x7f", 1, 0x7f },
		{ "\xc2\x80", 2, 0x80 },
		{ "\xdf\xbf", 2, 0x7ff },
		{ "\xc0\x80", 0, 0 },                   /* overlong NUL */
		{ "\xc1\xbf", 0, 0 },                   /* overlong */
		{ "\xe0\xa0\x80", 3, 0x800 },
		{ "\xe0\x9f\xbf", 0, 0 },               /* overlong */
		{ "\xed\x9f\xbf", 3, 0xd7ff },
		{ "\xed\xa0\x80", 0, 0 },               /* surrogate */
		{ "\xed\xbf\xbf", 0, 0 },               /* surrogate */
		{ "\xef\xbf\xbf", 3, 0xffff },
		{ "\xf0\x90\x80\x80", 4, 0x10000 },
		{ "\xf0\x8f\xbf\xbf", 0, 0 },           /* overlong */
		{ "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
		{ "\xf4\x90\x80\x80", 0, 0 },           /* past U+10FFFF */
		{ "\xf5\x80\x80\x80", 0, 0 },
		{ "\x80", 0, 0 },                       /* stray continuation */
		{ "\xe2\x82", 0, 0 },                   /* truncated by the NUL */
		{ "\xe2\x28\xa1", 0, 0 },               /* bad continuation */
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const unsigned char *u = (const unsigned char *)cases[i].s;
		unsigned cp = 0;
		size_t len = str_utf8_next(u, strlen(cases[i].s), &cp);

		CU_ASSERT_EQUAL(len, cases[i].len);
		if (len != 0)
			CU_ASSERT_EQUAL(cp, cases[i].cp);
		CU_ASSERT_EQUAL(str_utf8_valid(cases[i].s, strlen(cases[i].s)),
		                cases[i].len == strlen(cases[i].s));
	}
	/* n bounds the read: a sequence cut by n is refused */
	CU_ASSERT_EQUAL(str_utf8_next((const unsigned char *)"\xe2\x82\xac", 2, NULL), 0);
	CU_ASSERT_EQUAL(str_utf8_next((const unsigned char *)"", 0, NULL), 0);
	CU_ASSERT_TRUE(str_utf8_valid("na\xc3\xafve \xe2\x82\xac", 10));
	CU_ASSERT_TRUE(str_utf8_valid("", 0));
	CU_ASSERT_FALSE(str_utf8_valid("a\0b", 3));   /* NUL refused */
}

static void test_uuid_parse(void)
{
	char out[UUID_STR_LEN], fresh[UUID_STR_LEN];

	CU_ASSERT_EQUAL(uuid_parse("3F9C2A10-5B7E-4D21-9A0C-12AB34CD56EF", out), 0);
	CU_ASSERT_STRING_EQUAL(out, "3f9c2a10-5b7e-4d21-9a0c-12ab34cd56ef");
	CU_ASSERT_EQUAL(uuid_v4(fresh, '-'), 0);
	CU_ASSERT_EQUAL(uuid_parse(fresh, out), 0);
	CU_ASSERT_STRING_EQUAL(out, fresh);
	CU_ASSERT_EQUAL(uuid_parse(NULL, out), -1);
	CU_ASSERT_EQUAL(uuid_parse("", out), -1);
	CU_ASSERT_EQUAL(uuid_parse("3f9c2a10_5b7e_4d21_9a0c_12ab34cd56ef", out), -1);
	CU_ASSERT_EQUAL(uuid_parse("3f9c2a10-5b7e-4d21-9a0c-12ab34cd56e", out), -1);
	CU_ASSERT_EQUAL(uuid_parse("3f9c2a10-5b7e-4d21-9a0c-12ab34cd56eff", out), -1);
	CU_ASSERT_EQUAL(uuid_parse("3f9c2a10-5b7e-4d21-9a0c-12ab34cd56eg", out), -1);
	CU_ASSERT_EQUAL(uuid_parse("3f9c2a105-b7e-4d21-9a0c-12ab34cd56ef", out), -1);

	char a[RUN_ID_LEN + 1], b[RUN_ID_LEN + 1];

	CU_ASSERT_EQUAL(run_id_new(a), 0);
	CU_ASSERT_EQUAL(run_id_new(b), 0);
	CU_ASSERT_EQUAL(strlen(a), RUN_ID_LEN);
	CU_ASSERT_EQUAL(strspn(a, "0123456789abcdef"), RUN_ID_LEN);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
}

/* Version 7: canonical form, version and variant nibbles, the current
 * time in its first 48 bits, and ids made in a row sort in the order they
 * were made, within a millisecond too (what keeps inserts at the end of a
 * B-tree, and a request's document ids in its order).  20,000 in a row
 * are more than a millisecond's counter holds on a fast machine. */
static void test_uuid_v7(void)
{
	char prev[UUID_STR_LEN] = "", id[UUID_STR_LEN], out[UUID_STR_LEN], hex[13];
	unsigned long long ms, now = (unsigned long long)time(NULL) * 1000u;
	int backwards = 0;

	for (int i = 0; i < 20000; i++) {
		CU_ASSERT_EQUAL_FATAL(uuid_v7(id), 0);
		CU_ASSERT_EQUAL(uuid_parse(id, out), 0);
		CU_ASSERT_STRING_EQUAL(out, id);
		CU_ASSERT_EQUAL(id[14], '7');
		CU_ASSERT_PTR_NOT_NULL(strchr("89ab", id[19]));
		backwards += prev[0] != '\0' && strcmp(prev, id) >= 0;
		memcpy(prev, id, sizeof id);
	}
	CU_ASSERT_EQUAL(backwards, 0);
	memcpy(hex, id, 8);
	memcpy(hex + 8, id + 9, 4);
	hex[12] = '\0';
	ms = strtoull(hex, NULL, 16);
	CU_ASSERT(ms + 5000 >= now && ms <= now + 5000);
}

/* Appends across many doublings keep every byte and the NUL; a failed
 * append makes every later one a no-op. */
/* Emptied for reuse: the memory kept up to the bound, freed above it. */
static void test_strbuf_reset(void)
{
	struct strbuf b = { .max = 10000 };
	char big[5000];

	strbuf_adds(&b, "0123456789");
	strbuf_reset(&b, 1024);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.p);
	CU_ASSERT_STRING_EQUAL(b.p, "");
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT(b.cap > 0 && b.cap <= 1024);
	strbuf_adds(&b, "ab");
	CU_ASSERT_STRING_EQUAL(b.p, "ab");

	memset(big, 'x', sizeof big);
	strbuf_add(&b, big, sizeof big);
	strbuf_add(&b, big, sizeof big);     /* past max */
	CU_ASSERT_TRUE(b.over);
	strbuf_reset(&b, 1024);               /* holds more than the bound */
	CU_ASSERT_PTR_NULL(b.p);
	CU_ASSERT_EQUAL(b.cap, 0);
	CU_ASSERT_FALSE(b.over);
	CU_ASSERT_EQUAL(b.max, 10000);
	strbuf_adds(&b, "c");
	CU_ASSERT_STRING_EQUAL(b.p, "c");
	strbuf_free(&b);
}

static void test_strbuf(void)
{
	struct strbuf b = { 0 };
	size_t want = 0;

	strbuf_adds(&b, "");
	CU_ASSERT_EQUAL(b.len, 0);
	for (int i = 0; i < 5000; i++) {
		strbuf_addf(&b, "%d,", i);
		want += (size_t)snprintf(NULL, 0, "%d,", i);
	}
	CU_ASSERT_FALSE(b.oom);
	CU_ASSERT_EQUAL(b.len, want);
	CU_ASSERT_EQUAL(strlen(b.p), want);
	CU_ASSERT_NSTRING_EQUAL(b.p, "0,1,2,", 6);
	CU_ASSERT_STRING_EQUAL(b.p + want - 5, "4999,");
	strbuf_add(&b, "ab\0cd", 5);
	CU_ASSERT_EQUAL(b.len, want + 5);
	CU_ASSERT_EQUAL(memcmp(b.p + want, "ab\0cd", 6), 0);
	strbuf_free(&b);
	CU_ASSERT_PTR_NULL(b.p);
	CU_ASSERT_EQUAL(b.len, 0);

	b.oom = true;
	strbuf_adds(&b, "lost");
	strbuf_addf(&b, "%s", "lost");
	CU_ASSERT_PTR_NULL(b.p);
	CU_ASSERT_EQUAL(b.len, 0);
	strbuf_free(&b);
	CU_ASSERT_FALSE(b.oom);

	/* A bound: exactly max bytes fit; one more sets over and stops. */
	b.max = 8;
	strbuf_adds(&b, "1234");
	strbuf_addf(&b, "%s", "5678");
	CU_ASSERT_EQUAL(b.len, 8);
	CU_ASSERT_FALSE(b.over);
	strbuf_add(&b, "9", 1);
	CU_ASSERT_TRUE(b.over);
	CU_ASSERT_EQUAL(b.len, 8);
	CU_ASSERT_STRING_EQUAL(b.p, "12345678");
	strbuf_free(&b);
	b.max = 8;
	strbuf_addf(&b, "%s", "123456789");
	CU_ASSERT_TRUE(b.over);
	CU_ASSERT_EQUAL(b.len, 0);
	strbuf_free(&b);
	CU_ASSERT_FALSE(b.over);
	CU_ASSERT_EQUAL(b.max, 0);
}

int suite_str(void)
{
	static const struct test_case str_tests[] = {
		{ "str_to_ll", test_to_ll },
		{ "str_url_decode", test_url_decode },
		{ "str_ct_equal", test_ct_equal },
		{ "str_copy", test_copy },
		{ "str_trim, str_eq_nocase, str_has_prefix", test_trim_and_compare },
		{ "str_utf8_next, str_utf8_valid", test_utf8 },
		{ "uuid_parse, run_id_new", test_uuid_parse },
		{ "uuid_v7: form, time, order", test_uuid_v7 },
		{ NULL, NULL },
	};
	static const struct test_case util_tests[] = {
		{ "arena", test_arena },
		{ "arena_reset keeps blocks, bounded", test_arena_keep },
		{ "strbuf_reset", test_strbuf_reset },
		{ "strbuf", test_strbuf },
		{ "log_quote", test_log_quote },
		{ NULL, NULL },
	};

	if (suite_add("str", str_tests) != 0)
		return -1;
	return suite_add("arena, strbuf and log_quote", util_tests);
}
