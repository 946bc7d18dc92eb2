/* pages.h - faulting in a large array's pages in one call.
 *
 * A large array filled element by element takes a page fault for each new
 * page, and on a virtual machine such a fault costs 10 to 20 us: for the
 * arrays of an index file of 100,000 snippets (hundreds of megabytes),
 * most of the time the writing took.  One MADV_POPULATE_WRITE (Linux 5.14)
 * over the part about to be filled does them all at once. */
#ifndef SLUICE_PAGES_H
#define SLUICE_PAGES_H

#include <stddef.h>

/* Fault in the whole pages of p[0 .. len) for writing.  Advice only:
 * where the kernel lacks it, pages fault in one by one as before.  The
 * pages count in the process's memory at once: for an array grown by
 * doubling, its whole new half, used or not. */
void pages_populate(void *p, size_t len);

#endif
