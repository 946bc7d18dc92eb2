/* test_hooks.c - the test-only pauses, spins and allocations of test_hooks.h;
 * compiled only with --enable-test-hooks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/test_hooks.h"
#include "util/timeutil.h"

#define MIB (1024 * 1024)

void test_hook_pause(int ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void test_hook_spin(int ms)
{
	double until = time_cpu_ms() + ms;
	volatile unsigned long n = 0;

	while (ms > 0 && time_cpu_ms() < until)
		n++;
}

int test_hook_alloc(int mb, int *got)
{
	void **chunks = calloc(mb > 0 ? (size_t)mb : 1, sizeof *chunks);
	int rc = 0;

	*got = 0;
	if (chunks == NULL)
		return -1;
	for (int i = 0; i < mb; i++) {
		if ((chunks[i] = malloc(MIB)) == NULL) {
			rc = -1;
			break;
		}
		memset(chunks[i], 0x5a, MIB);
		*got = i + 1;
	}
	for (int i = 0; i < *got; i++)
		free(chunks[i]);
	free(chunks);
	return rc;
}
