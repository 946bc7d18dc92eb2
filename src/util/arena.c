/* arena.c - a chain of blocks, bump-allocated, freed all at once.
 *
 * The first block lives in the same malloc as the arena itself and survives
 * arena_reset, so a worker that reuses one arena per request normally makes
 * no malloc call at all.  Requests bigger than a quarter of a block get a
 * block of their own: they would otherwise waste most of a fresh block.
 *
 * arena_reset keeps up to ARENA_KEEP bytes of normal blocks for the next
 * request: a request that fills hundreds of kilobytes (the pipelines list)
 * would otherwise hand them back to the kernel and fault them in again
 * every time.  Blocks beyond that, and blocks of their own, are freed, so a
 * worker that once served a huge request gives the excess back. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"

#define ARENA_ALIGN 16
#define ARENA_BLOCK 8192                  /* usable bytes of a normal block */
#define ARENA_LARGE (ARENA_BLOCK / 4)     /* above this: a block of its own */
/* Normal blocks arena_reset keeps.  None under AddressSanitizer, so a use
 * of memory from an earlier request stays a use after free it reports. */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_KEEP 0
#else
#define ARENA_KEEP (1024 * 1024)
#endif

struct block {
	struct block *next;
	size_t size;                      /* usable bytes after the header */
	size_t used;
	/* data follows; the header keeps it 16-aligned on every ABI we use */
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

struct arena {
	struct block *cur;                /* where small allocations bump */
	struct block *extra;              /* every block but the first, newest first */
	struct block *spare;              /* normal blocks kept for reuse */
	size_t nspare;
	struct block first;               /* must stay last: its data follows */
};

static _Noreturn void arena_oom(size_t n)
{
	/* No logging machinery here: it may itself need memory. */
	fprintf(stderr, "sluice: out of memory (arena request of %zu bytes)\n", n);
	abort();
}

static struct block *block_new(size_t size)
{
	struct block *b;

	if (size > SIZE_MAX - sizeof *b)
		arena_oom(size);
	b = malloc(sizeof *b + size);
	if (b == NULL)
		arena_oom(size);
	b->next = NULL;
	b->size = size;
	b->used = 0;
	return b;
}

struct arena *arena_new(void)
{
	struct arena *a = malloc(sizeof *a + ARENA_BLOCK);

	if (a == NULL)
		arena_oom(sizeof *a + ARENA_BLOCK);
	a->first.next = NULL;
	a->first.size = ARENA_BLOCK;
	a->first.used = 0;
	a->cur = &a->first;
	a->extra = NULL;
	a->spare = NULL;
	a->nspare = 0;
	return a;
}

static void free_chain(struct block *b)
{
	struct block *next;

	for (; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
}

void arena_free(struct arena *a)
{
	if (a == NULL)
		return;
	free_chain(a->extra);
	free_chain(a->spare);
	free(a);
}

void arena_reset(struct arena *a)
{
	struct block *b, *next;

	if (a == NULL)
		return;
	for (b = a->extra; b != NULL; b = next) {
		next = b->next;
		if (b->size == ARENA_BLOCK &&
		    (a->nspare + 1) * ARENA_BLOCK <= ARENA_KEEP) {
			b->next = a->spare;
			a->spare = b;
			a->nspare++;
		} else {
			free(b);
		}
	}
	a->extra = NULL;
	a->first.used = 0;
	a->cur = &a->first;
}

/* A normal block: a kept one, else a new one. */
static struct block *block_normal(struct arena *a)
{
	struct block *b = a->spare;

	if (b == NULL)
		return block_new(ARENA_BLOCK);
	a->spare = b->next;
	a->nspare--;
	b->next = NULL;
	b->used = 0;
	return b;
}

size_t arena_kept(const struct arena *a)
{
	return a->nspare * ARENA_BLOCK;
}

/* Bytes to skip at b->used so the next pointer is ARENA_ALIGN-aligned. */
static size_t align_pad(const struct block *b)
{
	uintptr_t p = (uintptr_t)(b->data + b->used);

	return (size_t)((ARENA_ALIGN - (p & (ARENA_ALIGN - 1))) & (ARENA_ALIGN - 1));
}

void *arena_alloc(struct arena *a, size_t n)
{
	struct block *b;
	size_t pad;
	void *p;

	if (n == 0)
		n = 1;                    /* distinct pointers for distinct calls */
	if (n > SIZE_MAX - 2 * ARENA_ALIGN)
		arena_oom(n);

	if (n > ARENA_LARGE) {
		/* Own block, linked but not made current: the current block
		 * keeps serving small requests. */
		b = block_new(n + ARENA_ALIGN);
		b->next = a->extra;
		a->extra = b;
	} else {
		b = a->cur;
		if (align_pad(b) + n > b->size - b->used) {
			b = block_normal(a);
			b->next = a->extra;
			a->extra = b;
			a->cur = b;
		}
	}
	pad = align_pad(b);
	p = b->data + b->used + pad;
	b->used += pad + n;
	memset(p, 0, n);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *d;

	if (s == NULL)
		return NULL;
	n = strnlen(s, n);
	if (n == SIZE_MAX)
		arena_oom(n);
	d = arena_alloc(a, n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *arena_strdup(struct arena *a, const char *s)
{
	if (s == NULL)
		return NULL;
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	char *d;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* Only an invalid format or a result over INT_MAX gets here:
		 * a programming error, treated like the allocation failure it
		 * would otherwise turn into. */
		fprintf(stderr, "sluice: arena_printf: cannot format '%s'\n", fmt);
		abort();
	}
	d = arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return d;
}
