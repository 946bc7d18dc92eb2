/* strbuf.c - a growing, NUL-terminated string on the heap. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

#define STRBUF_FIRST 256

/* Room for more bytes and the NUL, doubling; false (and oom) without. */
static bool grow(struct strbuf *b, size_t more)
{
	size_t want;
	char *p;

	if (b->oom || b->over)
		return false;
	if (b->max > 0 && more > b->max - b->len) {
		b->over = true;
		return false;
	}
	if (more >= SIZE_MAX / 2 - b->len) {
		b->oom = true;
		return false;
	}
	if (b->len + more < b->cap)
		return true;
	want = b->cap != 0 ? b->cap : STRBUF_FIRST;
	while (want <= b->len + more)
		want *= 2;
	if ((p = realloc(b->p, want)) == NULL) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = want;
	return true;
}

void strbuf_add(struct strbuf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void strbuf_adds(struct strbuf *b, const char *s)
{
	strbuf_add(b, s, strlen(s));
}

void strbuf_addf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if (!grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void strbuf_free(struct strbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

void strbuf_reset(struct strbuf *b, size_t keep)
{
	size_t max = b->max;

	if (b->cap > keep) {
		strbuf_free(b);
		b->max = max;
		return;
	}
	b->len = 0;
	b->oom = b->over = false;
	if (b->p != NULL)
		b->p[0] = '\0';
}
