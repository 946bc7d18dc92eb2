/* pages.c - see pages.h. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/pages.h"

/* Below this, the faults cost less than the call. */
#define PAGES_MIN (256 * 1024)

void pages_populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t page, from, to;

	if (len < PAGES_MIN)
		return;
	page = (uintptr_t)sysconf(_SC_PAGESIZE);
	from = ((uintptr_t)p + page - 1) & ~(page - 1);
	to = ((uintptr_t)p + len) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#else
	(void)p, (void)len;
#endif
}
