/* test_chunk.c - chunk boundaries: paragraph, sentence, word, long words,
 * UTF-8 sequences, overlap, coverage. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "retrieval/chunk.h"

#define MAXC 64

/* The chunks of text as strings joined by '|'. */
static size_t chunks(const char *text, size_t size, size_t overlap, char *buf, size_t cap)
{
	struct chunk c[MAXC];
	size_t n = chunk_text(text, strlen(text), size, overlap, c, MAXC);

	CU_ASSERT_FATAL(n <= MAXC);
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, "%s%.*s", i ? "|" : "", (int)c[i].len, text + c[i].off);
	}
	return n;
}

struct chunk_case { const char *text; size_t size, overlap; const char *want; };

static const struct chunk_case cases[] = {
	/* the paragraph break wins over the word breaks after it */
	{ "First para one.\n\nSecond para two.", 20, 0, "First para one.\n\n|Second para two." },
	/* the sentence end wins over a later word break */
	{ "One two three. Four five six. Seven", 20, 0, "One two three. |Four five six. Seven" },
	/* a word break when there is no sentence end */
	{ "alpha beta gamma delta", 12, 0, "alpha beta |gamma delta" },
	/* a word longer than size: cut between characters */
	{ "abcdefghij", 4, 0, "abcd|efgh|ij" },
	/* overlap: each chunk starts at a word within 3 characters of the
	 * previous end */
	{ "aa bb cc dd ee ff", 8, 3, "aa bb |bb cc |cc dd |dd ee ff" },
	/* trailing white space joins the last chunk, none is blank */
	{ "abcdefgh      ", 10, 0, "abcdefgh      " },
	{ "  lead", 10, 0, "  lead" },
	/* a run of white space longer than size after a hard cut */
	{ "abcdefgh            word", 10, 0, "abcdefgh  |          word" },
	/* a sentence break too close to the start is not taken */
	{ "Dr. Jones arrived late", 20, 0, "Dr. Jones arrived |late" },
	{ "short", 800, 100, "short" },
	{ NULL, 0, 0, NULL },
};

static void test_cases(void)
{
	char buf[512];

	for (const struct chunk_case *t = cases; t->text != NULL; t++) {
		chunks(t->text, t->size, t->overlap, buf, sizeof buf);
		if (strcmp(buf, t->want) != 0)
			fprintf(stderr, "\nchunk \"%s\" %zu/%zu: got \"%s\"\n", t->text, t->size,
			        t->overlap, buf);
		CU_ASSERT_STRING_EQUAL(buf, t->want);
	}
}

static void test_empty(void)
{
	struct chunk c[2];

	CU_ASSERT_EQUAL(chunk_text("", 0, 10, 0, c, 2), 0);
	CU_ASSERT_EQUAL(chunk_text(" \n\n\t ", 5, 10, 0, c, 2), 0);
	/* More chunks than room: the count says so, only max are written. */
	CU_ASSERT_EQUAL(chunk_text("abcdefghij", 10, 2, 0, c, 2), 5);
	CU_ASSERT_EQUAL(c[1].off, 2);
	CU_ASSERT_EQUAL(chunk_text("abcdefghij", 10, 2, 0, NULL, 0), 5);
}

static bool is_cont(unsigned char ch)
{
	return (ch & 0xC0) == 0x80;
}

/* Sizes count characters, and no cut falls inside a UTF-8 sequence. */
static void test_utf8(void)
{
	const char *two = "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";          /* 5 x e-acute */
	const char *three = "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xE3\x81\xA7\xE3\x81\x99";
	const char *texts[] = { two, three };
	struct chunk c[MAXC];

	size_t n = chunk_text(two, strlen(two), 2, 0, c, MAXC);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(c[0].len, 4);
	CU_ASSERT_EQUAL(c[2].len, 2);
	for (size_t t = 0; t < 2; t++)
		for (size_t size = 1; size < 6; size++)
			for (size_t ov = 0; ov < 3; ov++) {
				const char *s = texts[t];
				n = chunk_text(s, strlen(s), size, ov, c, MAXC);
				for (size_t i = 0; i < n; i++) {
					CU_ASSERT_FALSE(is_cont((unsigned char)s[c[i].off]));
					size_t end = c[i].off + c[i].len;
					CU_ASSERT(end == strlen(s) || !is_cont((unsigned char)s[end]));
				}
			}
}

/* Without overlap the chunks tile the text; with it they cover it; each is
 * at most size characters (the last may add trailing white space) and
 * holds a non-space. */
static void test_coverage(void)
{
	const char *text =
		"Sluice ingests documents. Each is split into snippets!\n\n"
		"A snippet keeps its document's metadata? Yes.  Long words like "
		"antidisestablishmentarianism are cut.\n\nThe end.\n";
	struct chunk c[MAXC];
	size_t len = strlen(text);

	for (size_t size = 5; size < 80; size += 7)
		for (size_t ov = 0; ov < size; ov += 3) {
			size_t n = chunk_text(text, len, size, ov, c, MAXC);
			CU_ASSERT_FATAL(n > 0 && n <= MAXC);
			CU_ASSERT_EQUAL(c[0].off, 0);
			CU_ASSERT_EQUAL(c[n - 1].off + c[n - 1].len, len);
			for (size_t i = 0; i < n; i++) {
				bool word = false;
				for (size_t j = 0; j < c[i].len; j++)
					word = word || !strchr(" \n", text[c[i].off + j]);
				CU_ASSERT(word);
				size_t lead = 0;
				while (lead < c[i].len && strchr(" \n", text[c[i].off + lead]))
					lead++;
				CU_ASSERT(i == n - 1 || c[i].len - lead <= size);
				if (i > 0) {
					size_t prev_end = c[i - 1].off + c[i - 1].len;
					CU_ASSERT(c[i].off > c[i - 1].off);
					CU_ASSERT(c[i].off <= prev_end);
					CU_ASSERT(c[i].off + c[i].len > prev_end);
					if (ov == 0)
						CU_ASSERT_EQUAL(c[i].off, prev_end);
				}
			}
		}
}

int suite_chunk(void)
{
	static const struct test_case tests[] = {
		{ "paragraph, sentence, word and hard cuts; overlap", test_cases },
		{ "empty and blank text; more chunks than room", test_empty },
		{ "UTF-8 sequences never split", test_utf8 },
		{ "chunks cover the text", test_coverage },
		{ NULL, NULL },
	};
	return suite_add("chunk", tests);
}
