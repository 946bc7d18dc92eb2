/* doctext.h - the text of an uploaded document (documents.c): what
 * POST /dataset/{id}/documents keeps of a .txt/.md, .html, .csv or .json
 * file.  Separate from the handler so that the converters, parsers of
 * network input, can be called (and fuzzed) on their own. */
#ifndef SLUICE_DOCTEXT_H
#define SLUICE_DOCTEXT_H

#include <stddef.h>

enum doc_type { DOC_TEXT, DOC_HTML, DOC_CSV, DOC_JSON };

enum doc_text_err {
	DOC_TEXT_OK = 0,
	DOC_TEXT_NOT_UTF8 = -1,
	DOC_TEXT_BAD_JSON = -2,          /* err says why */
	DOC_TEXT_EMPTY = -3,             /* nothing but white space */
	DOC_TEXT_TOO_LARGE = -4,         /* more than max bytes of text */
	DOC_TEXT_NO_MEMORY = -5,
	DOC_TEXT_BAD_CSV = -6,           /* err says why */
};

/* The type a file name's extension says (case-insensitive); 0 or -1. */
int doc_type_of(const char *filename, enum doc_type *t);

/* The text of the file src[0..len) of type t: a UTF-8 byte order mark is
 * dropped, the rest must be UTF-8 without NUL; JSON nests at most
 * json_depth levels.  On DOC_TEXT_OK *text is malloc'd (the caller frees
 * it), NUL-terminated after *textlen bytes, at most max of them; otherwise
 * *text is NULL. */
int doc_text(enum doc_type t, const char *src, size_t len, int json_depth,
             size_t max, char **text, size_t *textlen, char *err, size_t errlen);

#endif
