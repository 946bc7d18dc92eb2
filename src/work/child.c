/* child.c - one work item in its own process.
 *
 * Forked by the supervisor after its claim committed.  The child dies with
 * the supervisor (a kill -9 of it leaves nothing running unsupervised: the
 * next work process takes the claim back), keeps no descriptor of its
 * parent's but the result pipe, opens its own database connection and calls
 * the kind's entry point, or its give-up when the item is to be settled as
 * failed.  SIGTERM asks it to stop at a safe point (work_stopping).  The
 * result goes to the supervisor through the pipe; the supervisor records
 * the outcome in the queue, so a child that crashes or hangs has nothing
 * half-recorded. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/db.h"
#include "util/config.h"
#include "util/log.h"
#include "util/proc.h"
#include "work/work.h"

#define CONNECT_TRIES 50            /* x 100 ms: a database restarting */

static volatile sig_atomic_t child_stop;

static void on_term(int sig)
{
	(void)sig;
	child_stop = 1;
}

bool work_wait_nudge(const struct work_ctx *w, long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };
	sigset_t nudge;

	sigemptyset(&nudge);
	sigaddset(&nudge, WORK_NUDGE);
	/* SIGTERM is let in: its handler ends the wait with EINTR. */
	return !work_stopping(w) && sigtimedwait(&nudge, NULL, &ts) == WORK_NUDGE;
}

void work_child_main(const struct config *cfg, const struct work_kind *k,
                     const struct work_item *it, const char *process_id,
                     int fd, pid_t parent)
{
	struct work_result res;
	struct work_ctx w;
	struct sigaction sa;
	sigset_t nudge;
	int rc = DB_ERR;

	if (proc_die_with_parent(parent) != 0)
		_exit(1);
	/* The supervisor's database session stays its own: closing the copy
	 * of its socket here sends nothing. */
	proc_close_fds(fd);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN);         /* the supervisor decides */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	/* The nudge stays blocked, as it was from the fork on: it is taken by
	 * work_wait_nudge, never delivered. */
	sigemptyset(&nudge);
	sigaddset(&nudge, WORK_NUDGE);
	sigprocmask(SIG_SETMASK, &nudge, NULL);

	memset(&res, 0, sizeof res);
	memset(&w, 0, sizeof w);
	log_set_request_id(it->request_id);
	w.cfg = cfg;
	w.process_id = process_id;
	w.stop = &child_stop;
	if ((w.db = db_new(cfg)) == NULL)
		_exit(1);
	for (int i = 0; i < CONNECT_TRIES && (rc = db_ensure(w.db)) != DB_OK &&
	     !child_stop; i++)
		nanosleep(&(struct timespec){ 0, 100 * 1000000L }, NULL);
	if (rc != DB_OK) {
		res.rc = -1;
		snprintf(res.err, sizeof res.err, "the database could not be reached");
	} else if (it->give_up_reason != NULL) {
		res.rc = k->give_up == NULL ? 0 : k->give_up(&w, it, it->give_up_reason);
		snprintf(res.err, sizeof res.err, "%s", it->give_up_reason);
	} else {
		res.rc = k->run(&w, it, res.err, sizeof res.err) == 0 ? 0 : -1;
		if (res.rc != 0 && res.err[0] == '\0')
			snprintf(res.err, sizeof res.err, "failed");
	}
	proc_write_all(fd, &res, sizeof res);
	db_free(w.db);
	fflush(stderr);
	_exit(0);
}
