/* work.h - `sluice work`: a supervisor of isolated, deadlined, fairly
 * scheduled work.
 *
 *   supervisor.c  the process: signals, the loop, children, shutdown
 *   kinds.c       the one table of work kinds (entry points live in areas)
 *   child.c       one item in a child process
 *   test_kinds.c  kinds that sleep, crash and hang (test builds only)
 *
 * The supervisor never runs item code itself.  Each turn of its loop it
 * heartbeats its claims, fires due cron schedules and starts pipeline runs
 * (runner/), reaps the children that ended and records their outcome, kills
 * the children past their kind's deadline, and claims items (db/queue.h)
 * for every kind with a free slot, forking one child per item.  A crash or
 * a hang fails one item, never the loop; the loop's ticks never wait on a
 * child. */
#ifndef SLUICE_WORK_H
#define SLUICE_WORK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "db/queue.h"

struct config;

struct work_kind {
	const char *name;               /* work_queue.kind */
	work_fn run;
	work_give_up_fn give_up;        /* NULL: nothing of the area to settle */
	size_t slots_off;               /* offsetof(struct config, <kind>_slots) */
	size_t deadline_off;            /* offsetof(struct config, <kind>_deadline_s) */
	const char *waiter_kind;        /* NULL, or the waiter's kind of a request
	                                 * waiting on an item (util/wake.h) */
	bool lingers;                   /* its children take more items of theirs
	                                 * before they end: nudged by wakes */
};

/* The signal a lingering child is nudged with: blocked in `sluice work`
 * and its item children from their start, taken only by work_wait_nudge. */
#define WORK_NUDGE SIGUSR1

extern const struct work_kind work_kinds[];
extern const size_t work_nkinds;

int work_kind_slots(const struct config *cfg, const struct work_kind *k);
int work_kind_deadline_s(const struct config *cfg, const struct work_kind *k);

/* What a child tells the supervisor through its pipe before it exits. */
struct work_result {
	int rc;                         /* 0 done, -1 failed */
	char err[512];
};

/* The child's side: run it (or give it up) and report on fd.  Never
 * returns. */
void work_child_main(const struct config *cfg, const struct work_kind *k,
                     const struct work_item *it, const char *process_id,
                     int fd, pid_t parent) __attribute__((noreturn));

/* Run the supervisor until SIGTERM/SIGINT.  Returns the exit status. */
int work_main(const struct config *cfg);

#ifdef SLUICE_TEST_HOOKS
int work_test_sleep(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen);
int work_test_crash(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen);
int work_test_hang(struct work_ctx *w, const struct work_item *it,
                   char *err, size_t errlen);
#endif

#endif
