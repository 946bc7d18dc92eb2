/* supervisor.c - the `sluice work` process.
 *
 * Signal handlers only set flags; every signal the loop cares about stays
 * blocked and is let in by ppoll, the loop's only wait.  One turn:
 *
 *   heartbeat     its claims and itself (every QUEUE_HEARTBEAT_S)
 *   recover       claims of dead work processes go back (every minute)
 *   scheduler     due cron schedules become runs (runner/scheduler.c)
 *   executor      pipeline runs start in their own supervisors (executor.c)
 *   sweep         a runner_sweep item now and then (orphaned staging tables)
 *   questions     a question whose worker died unanswered gets its queue row
 *                 (every RAG_QUESTION_FALLBACK_S)
 *   reap          children that ended: their outcome into the queue
 *   deadlines     children past their kind's deadline are killed
 *   claim         for each kind with a free slot, the fairest item, a child
 *
 * None of it waits on a child, so the scheduler fires on time whatever the
 * children do.  An outcome that cannot be recorded (the database is away)
 * stays with its slot and is tried again each turn.
 *
 * Besides signals, ppoll waits on the wake socket (util/wake.h): a process
 * on this host that queued an item claimable now names its kind there, and
 * the turn that follows only reaps and claims that kind (the rest keeps the
 * work_poll_ms pace), after nudging its running children when they
 * linger for more items (work_kind.lingers: WORK_NUDGE, which they take
 * with work_wait_nudge).  The poll stays: items queued on another host, or
 * whose wake was lost, are claimed by it.
 *
 * SIGTERM: no more claims; the children are asked to stop (SIGTERM: they
 * stop at a safe point) and get work_shutdown_grace_s, then SIGKILL; an
 * item stopped so goes back to the queue without counting as an attempt.
 * Pipeline runs get runner_shutdown_grace_s (executor.c).  Then it exits. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "db/db.h"
#include "db/queue.h"
#include "retrieval/index_checks.h"
#include "retrieval/retrieval.h"
#include "runner/runner.h"
#include "util/config.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/wake.h"
#include "work/work.h"

#define CHILDREN_MAX 256
#define ITEM_BUF (64 * 1024)          /* an item's text columns */
#define RECOVER_MS 60000.0
#define KILL_WAIT_MS 10000.0          /* after SIGKILL, at most this for the reap */
#define WAKES_PER_TURN 256            /* datagrams read in one turn */

enum child_state {
	C_FREE,
	C_RUNNING,                        /* the child process is there */
	C_RECORDING,                      /* it ended; its outcome is not recorded yet */
};

struct child {
	enum child_state state;
	pid_t pid;
	int fd;                           /* the result pipe */
	const struct work_kind *kind;
	struct work_item it;
	char *buf;                        /* ITEM_BUF bytes: the item's text */
	double started_ms, deadline_ms;
	bool past_deadline, stopped;      /* killed for its deadline / asked to stop */
	struct work_result res;
	size_t got;                       /* bytes of res read */
	enum queue_outcome outcome;       /* C_RECORDING */
	long rss_kb;                      /* the child's peak RSS */
	double cpu_ms;                    /* the child's CPU time, user and system */
	char why[600];
};

/* Small and static: task children of runs inherit this address space,
 * and their RLIMIT_AS counts it.  An item's text is malloc'd per claim. */
static struct child children[CHILDREN_MAX];
static volatile sig_atomic_t got_term, got_chld;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		got_chld = 1;
	else
		got_term = 1;
}

static int running_of(const struct work_kind *k)
{
	int n = 0;

	for (int i = 0; i < CHILDREN_MAX; i++)
		if (children[i].state != C_FREE && children[i].kind == k)
			n++;
	return n;
}

static int children_live(void)
{
	int n = 0;

	for (int i = 0; i < CHILDREN_MAX; i++)
		if (children[i].state != C_FREE)
			n++;
	return n;
}

/* ---- starting ------------------------------------------------------------------- */

/* Claim one item of k and fork its child.  1 started, 0 nothing to claim,
 * < 0 error (the claim, if made, was released or is recovered later). */
static int start_one(struct work_ctx *w, const struct work_kind *k)
{
	struct child *c = NULL;
	int fds[2], rc;
	pid_t parent = getpid();

	for (int i = 0; i < CHILDREN_MAX && c == NULL; i++)
		if (children[i].state == C_FREE)
			c = &children[i];
	if (c == NULL)
		return 0;
	memset(c, 0, sizeof *c);
	if ((c->buf = malloc(ITEM_BUF)) == NULL)
		return -1;
	/* The item is ours only once the claim's COMMIT succeeded. */
	if ((rc = queue_claim(w->db, k->name, w->process_id, &c->it, c->buf,
	                      ITEM_BUF)) <= 0) {
		if (rc < 0 && rc != DB_ERR_UNAVAILABLE)
			log_kv(LOG_WARN, "work claim failed", "kind=%s error=%s", k->name,
			       LOG_Q(db_error(w->db)));
		free(c->buf);
		c->buf = NULL;
		return rc;
	}
	c->it.kind = k->name;
	c->kind = k;
	if (pipe2(fds, O_CLOEXEC) != 0) {
		log_kv(LOG_ERROR, "cannot start a work child", "error=%s",
		       LOG_Q(strerror(errno)));
		queue_finish(w->db, &c->it, w->process_id, QUEUE_RELEASE, NULL);
		free(c->buf);
		c->buf = NULL;
		return -1;
	}
	fflush(stderr);
	if ((c->pid = fork()) == 0) {
		close(fds[0]);
		work_child_main(w->cfg, k, &c->it, w->process_id, fds[1], parent);
	}
	close(fds[1]);
	if (c->pid < 0) {
		log_kv(LOG_ERROR, "cannot fork a work child", "error=%s",
		       LOG_Q(strerror(errno)));
		close(fds[0]);
		queue_finish(w->db, &c->it, w->process_id, QUEUE_RELEASE, NULL);
		free(c->buf);
		c->buf = NULL;
		return -1;
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	c->fd = fds[0];
	c->state = C_RUNNING;
	c->started_ms = time_mono_ms();
	c->deadline_ms = c->started_ms + work_kind_deadline_s(w->cfg, k) * 1000.0;
	log_set_request_id(c->it.request_id);
	log_kv(LOG_INFO, "work started", "id=%lld kind=%s ref=%s tenant=%s attempt=%d "
	       "child=%ld%s", c->it.id, k->name, c->it.ref_id, c->it.tenant,
	       c->it.attempts, (long)c->pid, c->it.give_up_reason != NULL ? " give_up=1" : "");
	log_set_request_id(NULL);
	return 1;
}

/* The running children of the kinds woken[] names that linger for more
 * items: one of them takes the new item sooner than a new child could,
 * and without waiting for its own poll. */
static void nudge_lingering(const bool *woken)
{
	for (int i = 0; i < CHILDREN_MAX; i++) {
		const struct child *c = &children[i];

		if (c->state == C_RUNNING && c->kind->lingers && woken[c->kind - work_kinds])
			kill(c->pid, WORK_NUDGE);
	}
}

/* Claim for every kind, or (only not NULL) for the kinds only[] names. */
static void claim_all(struct work_ctx *w, const bool *only)
{
	for (size_t i = 0; i < work_nkinds; i++) {
		const struct work_kind *k = &work_kinds[i];

		if (only != NULL && !only[i])
			continue;

		while (!got_term && running_of(k) < work_kind_slots(w->cfg, k))
			if (start_one(w, k) != 1)
				break;
	}
}

/* ---- ending ---------------------------------------------------------------------- */

static void drain_pipe(struct child *c)
{
	ssize_t n;

	while (c->got < sizeof c->res &&
	       (n = read(c->fd, (char *)&c->res + c->got, sizeof c->res - c->got)) > 0)
		c->got += (size_t)n;
}

/* The outcome of a child that ended with status. */
static void judge(const struct config *cfg, struct child *c, int status)
{
	bool reported = c->got == sizeof c->res;
	char how[128];

	c->res.err[sizeof c->res.err - 1] = '\0';
	if (c->it.give_up_reason != NULL) {
		/* A give-up run ends the item as failed, with the reason it
		 * was given up for, whatever became of the run itself. */
		c->outcome = QUEUE_FAILED;
		snprintf(c->why, sizeof c->why, "%s", c->it.give_up_reason);
		if (!reported || c->res.rc != 0)
			log_kv(LOG_WARN, "give-up not settled by its area", "id=%lld kind=%s",
			       c->it.id, c->kind->name);
		return;
	}
	if (reported && c->res.rc == 0) {
		c->outcome = QUEUE_DONE;
		return;
	}
	if (c->stopped && !c->past_deadline) {
		/* Shut down before it finished: not an attempt of its own. */
		c->outcome = QUEUE_RELEASE;
		return;
	}
	if (reported) {
		c->outcome = QUEUE_FAILED;
		snprintf(c->why, sizeof c->why, "%s", c->res.err);
		return;
	}
	c->outcome = QUEUE_GIVE_UP;
	if (c->past_deadline) {
		snprintf(c->why, sizeof c->why, "%s was stopped: it ran past its deadline "
		         "of %d s (attempt %d of %d)", c->kind->name,
		         work_kind_deadline_s(cfg, c->kind), c->it.attempts,
		         c->it.max_attempts);
	} else {
		proc_describe_status(status, how, sizeof how);
		snprintf(c->why, sizeof c->why, "the process running %s crashed (%s; "
		         "attempt %d of %d)", c->kind->name, how, c->it.attempts,
		         c->it.max_attempts);
	}
}

/* Record an ended child's outcome; the slot is free once that worked. */
static void record(struct work_ctx *w, struct child *c)
{
	int rc = queue_finish(w->db, &c->it, w->process_id, c->outcome,
	                      c->why[0] != '\0' ? c->why : NULL);

	if (rc < 0)
		return;                       /* the database is away: next turn */
	log_set_request_id(c->it.request_id);
	log_kv(c->outcome == QUEUE_DONE || c->outcome == QUEUE_RELEASE ? LOG_INFO
	       : LOG_WARN, "work finished", "id=%lld kind=%s outcome=%s ms=%.0f "
	       "cpu_ms=%.0f rss_kb=%ld%s%s", c->it.id, c->kind->name,
	       c->outcome == QUEUE_DONE ? "done" : c->outcome == QUEUE_RELEASE
	       ? "released" : c->outcome == QUEUE_FAILED ? "failed" : "crashed",
	       time_mono_ms() - c->started_ms, c->cpu_ms, c->rss_kb,
	       c->why[0] != '\0' ? " error=" : "",
	       c->why[0] != '\0' ? LOG_Q(c->why) : "");
	if (rc == 0)
		log_kv(LOG_WARN, "work outcome not recorded: the claim was taken back",
		       "id=%lld", c->it.id);
	/* A request may wait on the item (a refresh handed over): its
	 * waiter looks at once, not at its next tick. */
	if (rc > 0 && c->kind->waiter_kind != NULL && c->outcome != QUEUE_RELEASE) {
		char id[24];

		snprintf(id, sizeof id, "%lld", c->it.id);
		wake_send(w->cfg, WAKE_WAITER, c->kind->waiter_kind, id);
	}
	log_set_request_id(NULL);
	free(c->buf);
	c->buf = NULL;
	c->state = C_FREE;
}

static void reap(struct work_ctx *w)
{
	for (int i = 0; i < CHILDREN_MAX; i++) {
		struct child *c = &children[i];
		struct rusage ru;
		int status = 0;
		pid_t p;

		if (c->state == C_RUNNING) {
			drain_pipe(c);
			memset(&ru, 0, sizeof ru);
			p = wait4(c->pid, &status, WNOHANG, &ru);
			if (p == 0 || (p < 0 && errno == EINTR))
				continue;
			drain_pipe(c);
			close(c->fd);
			c->fd = -1;
			judge(w->cfg, c, status);
			c->rss_kb = ru.ru_maxrss;
			c->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			            (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
			c->state = C_RECORDING;
		}
		if (c->state == C_RECORDING && db_connected(w->db))
			record(w, c);
	}
}

static double enforce_deadlines(double now)
{
	double next = now + 60000.0;

	for (int i = 0; i < CHILDREN_MAX; i++) {
		struct child *c = &children[i];

		if (c->state != C_RUNNING)
			continue;
		if (!c->past_deadline && now >= c->deadline_ms) {
			log_kv(LOG_WARN, "work past its deadline: killed", "id=%lld kind=%s "
			       "child=%ld", c->it.id, c->kind->name, (long)c->pid);
			kill(c->pid, SIGKILL);
			c->past_deadline = true;
		}
		if (!c->past_deadline && c->deadline_ms < next)
			next = c->deadline_ms;
	}
	return next;
}

static void signal_children(int sig)
{
	for (int i = 0; i < CHILDREN_MAX; i++)
		if (children[i].state == C_RUNNING) {
			kill(children[i].pid, sig);
			if (sig == SIGTERM)
				children[i].stopped = true;
		}
}

/* ---- the loop ------------------------------------------------------------------------- */

struct loop {
	struct work_ctx w;
	char host[256];
	double last_beat, last_recover, last_sweep, last_questions;
	bool db_down;
	bool stopping;
	double stop_at;                   /* SIGKILL the children then */
	double give_up_at;                /* exit then even with outcomes unrecorded */
	double runs_term_at, runs_kill_at;
	int wake_fd;                      /* -1: no wakes, the poll only */
	bool wake_only;                   /* the last wait ended with wakes alone */
	bool woken[64];                   /* per work_kinds[]: named by a wake */
	double last_full;                 /* the last turn with housekeeping */
};

/* The wake socket, again when a stopped serve's runtime directory took its
 * file away. */
static void wake_keep(struct loop *L)
{
	if (L->wake_fd >= 0 && !wake_gone(L->w.cfg, WAKE_WORK))
		return;
	if (L->wake_fd >= 0)
		close(L->wake_fd);
	L->wake_fd = wake_bind(L->w.cfg, WAKE_WORK);
}

/* Which kinds the waiting wakes name. */
static void wake_read(struct loop *L)
{
	char kind[WAKE_KIND_MAX + 1], id[WAKE_ID_MAX + 1];

	for (int n = 0; n < WAKES_PER_TURN && wake_recv(L->wake_fd, kind, id) == 1; n++)
		for (size_t i = 0; i < work_nkinds && i < sizeof L->woken; i++)
			if (strcmp(work_kinds[i].name, kind) == 0)
				L->woken[i] = true;
}

/* A runner_sweep item every runner_sweep_interval_s, unless one waits. */
static void sweep_due(struct loop *L, double now)
{
	if (now - L->last_sweep < L->w.cfg->runner_sweep_interval_s * 1000.0)
		return;
	runner_sweep_request(L->w.db);
	L->last_sweep = now;
}

static void housekeeping(struct loop *L, double now)
{
	struct work_ctx *w = &L->w;

	if (db_ensure(w->db) != DB_OK) {
		if (!L->db_down)
			log_warn("database unavailable, waiting");
		L->db_down = true;
		return;
	}
	if (L->db_down) {
		log_info("database back");
		L->db_down = false;
		L->last_beat = 0;
	}
	if (now - L->last_beat >= QUEUE_HEARTBEAT_S * 1000.0 &&
	    queue_heartbeat(w->db, w->process_id, L->host) == 0) {
		L->last_beat = now;
		wake_keep(L);
	}
	if (now - L->last_recover >= RECOVER_MS) {
		queue_recover(w->db, w->process_id);
		L->last_recover = now;
	}
	if (!L->stopping) {
		scheduler_tick(w);
		sweep_due(L, now);
	}
	/* Questions an earlier sluice's worker stored, then died before it
	 * answered or queued them. */
	if (!L->stopping && now - L->last_questions >= RAG_QUESTION_FALLBACK_S * 1000.0) {
		rag_question_recover(w->db, w->cfg);
		L->last_questions = now;
	}
	executor_tick(w, L->stopping);
}

static void begin_stop(struct loop *L, double now)
{
	const struct config *cfg = L->w.cfg;

	L->stopping = true;
	L->stop_at = now + cfg->work_shutdown_grace_s * 1000.0;
	L->runs_term_at = now + cfg->runner_shutdown_grace_s * 1000.0;
	L->runs_kill_at = L->runs_term_at + KILL_WAIT_MS;
	L->give_up_at = (L->stop_at > L->runs_kill_at ? L->stop_at : L->runs_kill_at) +
	                KILL_WAIT_MS;
	log_kv(LOG_INFO, "work stopping", "process=%s children=%d runs=%d grace_s=%d "
	       "runs_grace_s=%d", L->w.process_id, children_live(), executor_active(),
	       cfg->work_shutdown_grace_s, cfg->runner_shutdown_grace_s);
	signal_children(SIGTERM);
}

/* While stopping: the bounds of the children and of the runs. */
static void stop_step(struct loop *L, double now)
{
	if (now >= L->stop_at && L->stop_at > 0) {
		if (children_live() > 0)
			log_kv(LOG_WARN, "shutdown grace over: killing work children",
			       "children=%d", children_live());
		signal_children(SIGKILL);
		L->stop_at = 0;
	}
	if (now >= L->runs_term_at && L->runs_term_at > 0) {
		executor_signal_all(SIGTERM);   /* each fails its run with a line */
		L->runs_term_at = 0;
	}
	if (now >= L->runs_kill_at && L->runs_kill_at > 0) {
		executor_signal_all(SIGKILL);
		L->runs_kill_at = 0;
	}
}

/* How long the loop may wait for a signal. */
static int wait_ms(const struct loop *L, double now, double next_deadline)
{
	double t = L->w.cfg->work_poll_ms;

	if (next_deadline - now < t)
		t = next_deadline - now;
	if (L->stopping) {
		if (t > 100)
			t = 100;
	} else if (now - L->last_beat >= QUEUE_HEARTBEAT_S * 1000.0 && t > 1000) {
		t = 1000;
	}
	return t < 0 ? 0 : (int)t + 1;
}

int work_main(const struct config *cfg)
{
	static struct loop L;
	struct sigaction sa;
	sigset_t block, origmask;
	char process_id[160];
	int status = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &origmask);
	/* Blocked before any fork, so that a child nudged early keeps it
	 * pending; never let in here (ppoll's mask keeps it out too). */
	sigemptyset(&block);
	sigaddset(&block, WORK_NUDGE);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigaddset(&origmask, WORK_NUDGE);

	queue_process_id(cfg->host_name, process_id, sizeof process_id, L.host,
	                 sizeof L.host);
	if (mysql_library_init(0, NULL, NULL) != 0) {
		log_error("library initialisation failed");
		return 78;
	}
	L.wake_fd = -1;
	L.w.cfg = cfg;
	L.w.process_id = process_id;
	L.w.stop = &got_term;
	if ((L.w.db = db_new(cfg)) == NULL)
		return 1;
	if (db_ensure(L.w.db) == DB_ERR_ACCESS) {
		log_kv(LOG_ERROR, "database refused the configured credentials",
		       "error=%s", LOG_Q(db_error(L.w.db)));
		status = 78;
		goto out;
	}
	/* Without it items are claimed at the poll, as from another host. */
	if ((L.wake_fd = wake_bind(cfg, WAKE_WORK)) < 0)
		log_kv(LOG_WARN, "work wakes unavailable: items are claimed by the poll",
		       "error=%s", LOG_Q(strerror(errno)));
	/* Without it each child checks every index file it opens itself. */
	if (index_checks_init() != 0)
		log_kv(LOG_WARN, "cannot map the table of checked index files", "error=%s",
		       LOG_Q(strerror(errno)));
	log_kv(LOG_INFO, "work started", "process=%s kinds=%zu wakes=%s", process_id,
	       work_nkinds, L.wake_fd >= 0 ? "on" : "off");

	for (;;) {
		double now = time_mono_ms(), next;
		struct pollfd pfd;
		struct timespec ts;
		bool full;
		int ms;

		if (got_term && !L.stopping)
			begin_stop(&L, now);
		/* Wakes alone: claim what they name, the rest at its pace. */
		full = !L.wake_only || L.stopping || got_chld ||
		       now - L.last_full >= cfg->work_poll_ms;
		got_chld = 0;
		if (full) {
			housekeeping(&L, now);
			L.last_full = now;
		}
		reap(&L.w);
		now = time_mono_ms();
		next = enforce_deadlines(now);
		if (L.stopping) {
			stop_step(&L, now);
			if (children_live() == 0 && executor_active() == 0)
				break;
			if (now >= L.give_up_at) {
				/* The database is away: the next work process takes
				 * the claims back as those of a dead process. */
				log_kv(LOG_WARN, "exiting with outcomes unrecorded",
				       "children=%d runs=%d", children_live(), executor_active());
				break;
			}
		} else if (!L.db_down) {
			nudge_lingering(L.woken);
			claim_all(&L.w, full ? NULL : L.woken);
		}
		memset(L.woken, 0, sizeof L.woken);
		L.wake_only = false;
		ms = wait_ms(&L, time_mono_ms(), next);
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long)(ms % 1000) * 1000000L;
		pfd = (struct pollfd){ L.wake_fd, POLLIN, 0 };   /* -1: ignored */
		if (!got_chld && !(got_term && !L.stopping) &&
		    ppoll(&pfd, 1, &ts, &origmask) > 0 && (pfd.revents & POLLIN)) {
			wake_read(&L);
			L.wake_only = true;
		}
	}
	queue_process_gone(L.w.db, process_id);
	log_kv(LOG_INFO, "work stopped", "process=%s", process_id);
out:
	if (L.wake_fd >= 0)
		close(L.wake_fd);
	db_free(L.w.db);
	mysql_library_end();
	return status;
}
