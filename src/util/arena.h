/* arena.h - one allocation pool per request, freed in one call.
 *
 * Every allocation a request makes comes from its arena, so a handler never
 * frees anything itself and an early return cannot leak.  Allocation failure
 * aborts: a worker that cannot get memory cannot answer anyway, and the master
 * respawns it. */
#ifndef SLUICE_ARENA_H
#define SLUICE_ARENA_H

#include <stddef.h>

struct arena;

struct arena *arena_new(void);
void arena_free(struct arena *a);          /* NULL is fine */
/* Empty it for the next request: the first block stays, and up to 1 MiB of
 * the other normal blocks is kept for reuse; the rest is freed. */
void arena_reset(struct arena *a);
size_t arena_kept(const struct arena *a);  /* bytes of blocks kept for reuse */

void *arena_alloc(struct arena *a, size_t n);       /* zeroed, 16-aligned */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
