/* strbuf.h - a growing, NUL-terminated string on the heap (for text whose
 * size is not known in advance: SQL, JSON, extracted documents; the
 * request arena cannot grow a block).
 *
 * An append that cannot get memory sets oom and every later append does
 * nothing: callers append freely and check oom once at the end.  Zero
 * initialised is empty; strbuf_free returns it to that state.  A non-zero
 * max bounds the length: an append past it sets over and, like oom, stops
 * every later append (text that grows from small input stays bounded). */
#ifndef SLUICE_STRBUF_H
#define SLUICE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *p;            /* NULL until the first append, then NUL-terminated */
	size_t len, cap;
	size_t max;         /* bytes it may hold; 0: no bound */
	bool oom;           /* an append failed: the text is incomplete */
	bool over;          /* an append would have passed max */
};

void strbuf_add(struct strbuf *b, const char *s, size_t n);
void strbuf_adds(struct strbuf *b, const char *s);
void strbuf_addf(struct strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void strbuf_free(struct strbuf *b);
/* Empty b for its next text, keeping its memory when it holds at most keep
 * bytes and freeing it otherwise; max stays, oom and over are cleared. */
void strbuf_reset(struct strbuf *b, size_t keep);

#endif
