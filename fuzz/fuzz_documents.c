/* fuzz_documents.c - libFuzzer target: the converters that turn an uploaded
 * document into text (doc_text: HTML without markup, CSV rows and JSON
 * values as "name: value" lines), called as an upload's part end does.
 *
 * The first byte picks the type and the JSON depth; the rest is the file.
 * Checked: a result is NUL-terminated at its length, holds no NUL, is valid
 * UTF-8 and not blank, and stays within the bound; a failure leaves no text;
 * plain text comes back as it went in, and the same file converts the same
 * way twice. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "retrieval/doctext.h"
#include "util/str.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small enough that a file of a few KiB can run into it. */
#define FUZZ_TEXT_MAX (64 * 1024)

static void check(int rc, const char *text, size_t len, const char *err)
{
	size_t i;

	if (rc != DOC_TEXT_OK) {
		if (text != NULL || len != 0)
			abort();
		if (rc == DOC_TEXT_BAD_JSON && strncmp(err, "Malformed JSON: ", 16) != 0)
			abort();
		return;
	}
	if (text == NULL || len > FUZZ_TEXT_MAX || text[len] != '\0' ||
	    strlen(text) != len || !str_utf8_valid(text, len))
		abort();
	for (i = 0; i < len && isspace((unsigned char)text[i]); i++)
		;
	if (i == len)
		abort();                       /* blank text is DOC_TEXT_EMPTY */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum doc_type t;
	const char *src;
	char *text = NULL, *again = NULL, err[256] = "", err2[256] = "";
	size_t len, len2;
	int depth, rc, rc2;

	if (size < 1)
		return 0;
	t = (enum doc_type)(data[0] & 3);
	depth = 1 + ((data[0] >> 2) & 7);
	src = (const char *)data + 1;
	size--;

	rc = doc_text(t, src, size, depth, FUZZ_TEXT_MAX, &text, &len, err, sizeof err);
	check(rc, text, len, err);
	if (rc == DOC_TEXT_OK && t == DOC_TEXT) {
		size_t bom = size >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;

		if (len != size - bom || memcmp(text, src + bom, len) != 0)
			abort();
	}
	/* No state survives a call. */
	rc2 = doc_text(t, src, size, depth, FUZZ_TEXT_MAX, &again, &len2, err2, sizeof err2);
	if (rc2 != rc || len2 != len || (rc == DOC_TEXT_OK && memcmp(text, again, len) != 0) ||
	    strcmp(err, err2) != 0)
		abort();
	free(text);
	free(again);
	return 0;
}
