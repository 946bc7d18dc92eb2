/* test_kinds.c - work kinds for the API tests, compiled only with
 * --enable-test-hooks (scripts/dev test): a production build has none.
 *
 *   test_sleep  payload {"ms": N}: sleeps N ms (stops early when asked to)
 *   test_crash  dies of SIGSEGV, as a parser with a bad pointer would
 *   test_hang   never returns, as a stuck network read would
 * Their slots and deadline are work_test_slots / work_test_deadline_s. */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "work/work.h"

int work_test_sleep(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen)
{
	struct json_object *p = json_tokener_parse(it->payload != NULL ? it->payload : "{}");
	struct json_object *v;
	long long ms = 0;

	if (p != NULL && json_object_object_get_ex(p, "ms", &v))
		ms = json_object_get_int64(v);
	json_object_put(p);
	for (; ms > 0; ms -= 10) {
		if (work_stopping(w)) {
			snprintf(err, errlen, "stopped");
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000000L }, NULL);
	}
	return 0;
}

int work_test_crash(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen)
{
	/* The kernel's own default action, past any handler a sanitizer
	 * installed (it would report the crash as a finding of its own). */
	struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; }
		dfl = { SIG_DFL, 0, NULL, 0 };

	(void)w;
	(void)it;
	(void)err;
	(void)errlen;
	syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, sizeof dfl.mask);
	raise(SIGSEGV);
	return 0;
}

int work_test_hang(struct work_ctx *w, const struct work_item *it,
                   char *err, size_t errlen)
{
	(void)it;
	(void)err;
	(void)errlen;
	/* Deaf to a stop request too, as a blocked read would be. */
	for (;;) {
		(void)w;
		pause();
	}
}
