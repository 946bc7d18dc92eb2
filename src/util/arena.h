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
void arena_reset(struct arena *a);         /* keep the first block, drop the rest */

void *arena_alloc(struct arena *a, size_t n);       /* zeroed, 16-aligned */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
