/* test_doctext.c - the text of uploaded documents: the converters' output
 * and its bound (JSON paths and CSV names repeat on every value, so a small
 * file can ask for a lot of text). */
#include <stdlib.h>
#include <string.h>

#include "retrieval/doctext.h"
#include "suites.h"

static int convert(enum doc_type t, const char *src, size_t max, char **text, size_t *len)
{
	char err[256];

	return doc_text(t, src, strlen(src), 8, max, text, len, err, sizeof err);
}

static void test_types(void)
{
	char *text;
	size_t len;

	CU_ASSERT_EQUAL(convert(DOC_HTML, "<p>a &amp; b</p><script>x</script>c", 100, &text, &len),
	                DOC_TEXT_OK);
	CU_ASSERT_STRING_EQUAL(text, "a & b\n\nc");
	CU_ASSERT_EQUAL(len, strlen(text));
	free(text);
	CU_ASSERT_EQUAL(convert(DOC_JSON, "[{\"a\":{\"b\":1}}]", 100, &text, &len), DOC_TEXT_OK);
	CU_ASSERT_STRING_EQUAL(text, "a.b: 1\n\n");
	free(text);
	CU_ASSERT_EQUAL(convert(DOC_CSV, "k,v\n1,2\n", 100, &text, &len), DOC_TEXT_OK);
	CU_ASSERT_STRING_EQUAL(text, "k: 1\nv: 2\n\n");
	free(text);
	CU_ASSERT_EQUAL(convert(DOC_JSON, "[1,", 100, &text, &len), DOC_TEXT_BAD_JSON);
	CU_ASSERT_PTR_NULL(text);
	CU_ASSERT_EQUAL(convert(DOC_HTML, "<p> </p>", 100, &text, &len), DOC_TEXT_EMPTY);
	CU_ASSERT_EQUAL(convert(DOC_TEXT, "\xff", 100, &text, &len), DOC_TEXT_NOT_UTF8);
	CU_ASSERT_PTR_NULL(text);
}

/* {"kkk...k":[1,1,...]}: each value repeats the path, so the text is about
 * nvalues * (keylen + 4) bytes from a file of keylen + 2 * nvalues. */
static void test_bound(void)
{
	char src[4200], *text;
	size_t len, n = 0, want;

	n += (size_t)sprintf(src, "{\"");
	memset(src + n, 'k', 1000);
	n += 1000;
	n += (size_t)sprintf(src + n, "\":[1");
	for (int i = 1; i < 1000; i++)
		n += (size_t)sprintf(src + n, ",1");
	sprintf(src + n, "]}");
	want = 1000 * (1000 + 4);          /* "kkk...k: 1\n" a value */

	CU_ASSERT_EQUAL(convert(DOC_JSON, src, want, &text, &len), DOC_TEXT_OK);
	CU_ASSERT_EQUAL(len, want);
	free(text);
	CU_ASSERT_EQUAL(convert(DOC_JSON, src, want - 1, &text, &len), DOC_TEXT_TOO_LARGE);
	CU_ASSERT_PTR_NULL(text);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_EQUAL(convert(DOC_TEXT, "abc", 3, &text, &len), DOC_TEXT_OK);
	free(text);
	CU_ASSERT_EQUAL(convert(DOC_TEXT, "abcd", 3, &text, &len), DOC_TEXT_TOO_LARGE);
}

int suite_doctext(void)
{
	static const struct test_case tests[] = {
		{ "each type", test_types },
		{ "text bound at max and max + 1", test_bound },
		{ NULL, NULL },
	};
	return suite_add("doctext", tests);
}
