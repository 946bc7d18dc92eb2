/* thread.c - the helper threads sluice starts (see thread.h). */
#include <signal.h>

#include "util/thread.h"

bool thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc == 0;
}
