/* executor.c - claim CREATED runs and supervise them.
 *
 * In the work process (executor_tick, called from the work loop):
 *   - reap finished supervisors; one that died abnormally leaves its run
 *     FAILED with a log line;
 *   - every runner_heartbeat_s, fail the RUNNING runs whose work process is
 *     gone: claimed on this host by a pid that no longer exists, or (any
 *     host) with a heartbeat older than runner_stale_s;
 *   - claim CREATED runs (whose retry time, if any, has come) with SELECT
 *     ... FOR UPDATE SKIP LOCKED, mark them RUNNING (claimed_by = this work
 *     process, heartbeat now) and fork one supervisor each, up to
 *     runner_max_runs.  The work loop is never blocked by a run.
 *
 * The supervisor (one process per run, its own database connection) walks
 * the run's orchestration tasks so that each comes after its upstream
 * tasks, and forks one task child per task (child.c) with RLIMIT_AS set to
 * the job's memory.  While a child runs it samples the child's peak address
 * space, heartbeats the run every runner_heartbeat_s and reads its cancel
 * request; a cancel or a shutdown kills the child.  It records each task's
 * status, skips the tasks downstream of a failed one, sets every job's
 * job_status, the run's status, rows and error, and the pipeline's
 * last_status; or, for a failed run with retries left, puts the run back to
 * CREATED with a retry time (exponential backoff).
 *
 * The supervisor and the task child die with their parent
 * (PR_SET_PDEATHSIG): kill -9 of sluice work takes its runs down with it,
 * and the next work process fails them.  Connectors never move state ahead
 * of committed rows, so a killed task changes nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "db/run_events.h"
#include "runner/connector.h"
#include "runner/runner.h"
#include "util/config.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#define SUP_MAX        256          /* runner_max_runs' upper bound */
#define TASKS_MAX      RUNNER_TASKS_MAX
#define POLL_MS        100          /* supervisor's child polling period */
#define FINISH_TRIES   300          /* seconds a run's end waits for the database */

/* ==== pure helpers ========================================================== */

int runner_retry_delay(int base_s, int attempt)
{
	long long d = base_s < 1 ? 1 : base_s;

	for (int i = 1; i < attempt && d < RUNNER_RETRY_MAX_S; i++)
		d *= 2;
	return d > RUNNER_RETRY_MAX_S ? RUNNER_RETRY_MAX_S : (int)d;
}

unsigned long long runner_rlimit_bytes(int memory_mb, long long baseline_kb)
{
	unsigned long long b = (unsigned long long)(memory_mb > 0 ? memory_mb : 1)
	                       * 1024ULL * 1024ULL;

	if (baseline_kb > 0)
		b += (unsigned long long)baseline_kb * 1024ULL;
	return b;
}

bool runner_error_is_oom(const char *err)
{
	static const char *const marks[] = {
		"out of memory", "cannot allocate memory", "memoryerror",
		"memory exhausted", "std::bad_alloc", NULL,
	};

	if (err == NULL)
		return false;
	for (const char *const *m = marks; *m != NULL; m++) {
		size_t n = strlen(*m);

		for (const char *p = err; *p != '\0'; p++)
			if (strncasecmp(p, *m, n) == 0)
				return true;
	}
	return false;
}

/* A limit counts as reached when the peak came within this much of it:
 * an allocation that fails is refused before the peak moves, so the peak
 * seen is below the limit by up to that allocation's size. */
static long long near_limit_kb(long long limit_kb)
{
	long long margin = limit_kb / 10;

	if (margin < 16 * 1024)
		margin = 16 * 1024;
	return limit_kb - margin;
}

bool runner_memory_exceeded(int status, long long peak_kb, long long limit_kb,
                            const struct task_result *r)
{
	if (r != NULL && r->memory_exceeded)
		return true;
	if (r != NULL && r->rc != 0 && runner_error_is_oom(r->error))
		return true;
	if (r != NULL && r->rc != 0 && peak_kb >= near_limit_kb(limit_kb))
		return true;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		/* What a failed allocation turns into when nobody checks it. */
		if ((sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS ||
		     sig == SIGKILL) && peak_kb >= near_limit_kb(limit_kb))
			return true;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && r == NULL &&
	    peak_kb >= near_limit_kb(limit_kb))
		return true;
	return false;
}

int runner_task_order(size_t n, const struct task_deps *deps, size_t *order)
{
	bool done[RUNNER_TASKS_MAX] = { false };
	size_t k = 0;

	if (n > RUNNER_TASKS_MAX)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (deps[i].n > RUNNER_UP_MAX)
			return -1;
		for (size_t u = 0; u < deps[i].n; u++)
			if (deps[i].up[u] >= n || deps[i].up[u] == i)
				return -1;
	}
	while (k < n) {
		bool progress = false;

		for (size_t i = 0; i < n; i++) {
			bool ready = !done[i];

			for (size_t u = 0; ready && u < deps[i].n; u++)
				ready = done[deps[i].up[u]];
			if (!ready)
				continue;
			order[k++] = i;
			done[i] = true;
			progress = true;
		}
		if (!progress)
			return -1;
	}
	return 0;
}

/* ==== small process helpers ================================================ */

/* VmPeak of pid in kB, or -1. */
static long long vm_peak_kb(pid_t pid)
{
	char path[64], line[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "VmPeak:", 7) == 0) {
			v = strtoll(line + 7, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ==== failing a run from outside its supervisor ============================== */

/* Mark run FAILED (when still RUNNING under claimed_by): tasks that did not
 * finish FAILED or SKIPPED, its jobs and pipeline FAILED, one ERROR line.
 * 1 done, 0 no longer ours to fail, < 0 database error. */
struct abandon {
	const char *run_id, *claimed_by, *why;
};

static int fail_abandoned_body(struct db *db, void *arg)
{
	const struct abandon *a = arg;
	char pipeline[65] = "";
	struct db_stmt *st;
	long long n;
	int rc;

	st = db_query(db, "SELECT pipeline_id FROM pipeline_runs WHERE id = ? "
	              "AND status = 'RUNNING' AND claimed_by = ? FOR UPDATE", "ss",
	              a->run_id, a->claimed_by);
	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		snprintf(pipeline, sizeof pipeline, "%s", db_col_str(st, 0));
	db_done(st);
	if (rc <= 0)
		return rc;                /* 0: no longer ours to fail */
	if ((n = db_exec(db, "UPDATE pipeline_runs SET status = 'FAILED', "
	    "finished_at = UTC_TIMESTAMP(3), error = ? WHERE id = ?", "ss", a->why,
	    a->run_id)) < 0 ||
	    (n = db_exec(db, "UPDATE run_task_status SET status = IF(status = "
	    "'RUNNING', 'FAILED', 'SKIPPED'), finished_at = UTC_TIMESTAMP(3), "
	    "error = IF(status = 'RUNNING', ?, 'not run: the run failed') "
	    "WHERE run_id = ? AND status IN ('PENDING', 'RUNNING')", "ss", a->why,
	    a->run_id)) < 0 ||
	    (n = db_exec(db, "UPDATE pipelines SET last_status = 'FAILED' "
	    "WHERE id = ?", "s", pipeline)) < 0 ||
	    (n = db_exec(db, "UPDATE jobs SET job_status = 'FAILED' "
	    "WHERE pipeline_id = ?", "s", pipeline)) < 0 ||
	    (n = run_events_record(db, a->run_id)) < 0)
		return (int)n;
	return 1;
}

/* Mark run FAILED (when still RUNNING under claimed_by): tasks that did not
 * finish FAILED or SKIPPED, its jobs and pipeline FAILED, one ERROR line,
 * a sweep of its staging tables queued.  1 done, 0 no longer ours to fail, < 0
 * database error. */
static int run_fail_abandoned(struct db *db, const char *run_id,
                              const char *claimed_by, const char *why)
{
	struct abandon a = { run_id, claimed_by, why };
	int rc = db_tx(db, "run failure", fail_abandoned_body, &a);

	if (rc != 1)
		return rc;
	run_log_line(db, run_id, NULL, "ERROR", why);
	/* Its staging tables go in a sweep, in a child: a DROP may wait for
	 * the rollback of the task that was killed, and this loop never waits. */
	runner_sweep_request(db);
	log_kv(LOG_WARN, "run failed: its process is gone", "run=%s claimed_by=%s",
	       run_id, claimed_by);
	return 1;
}

/* ==== the work process's side ================================================= */

struct sup {
	pid_t pid;
	char run_id[RUN_ID_LEN + 1];
};

static struct sup sups[SUP_MAX];
static int nsup;
static double last_recover_ms;

int executor_active(void)
{
	return nsup;
}

static void supervise(const struct config *cfg, const char *run_id,
                      const char *process_id) __attribute__((noreturn));

/* Claim one CREATED run.  1 claimed (run_id filled), 0 none, < 0 error. */
struct run_claim {
	const char *process_id;
	char *run_id;
	char *request_id;           /* LOG_REQUEST_ID_MAX + 1; "" = none */
};

static int claim_run_body(struct db *db, void *arg)
{
	struct run_claim *c = arg;
	char pipeline[65];
	const struct db_text row[] = { { c->run_id, RUN_ID_LEN + 1 },
	                               { pipeline, sizeof pipeline },
	                               { c->request_id, LOG_REQUEST_ID_MAX + 1 } };
	long long n;
	int rc;

	rc = db_first_row(db, db_query(db, "SELECT id, pipeline_id, "
	    "IFNULL(request_id, '') FROM pipeline_runs "
	    "WHERE status = 'CREATED' AND (not_before IS NULL OR "
	    "not_before <= UTC_TIMESTAMP(3)) ORDER BY created_at, id LIMIT 1 "
	    "FOR UPDATE SKIP LOCKED", ""), row, 3);
	if (rc <= 0)
		return rc;
	if ((n = db_exec(db, "UPDATE pipeline_runs SET status = 'RUNNING', "
	    "claimed_by = ?, claimed_at = UTC_TIMESTAMP(3), "
	    "heartbeat_at = UTC_TIMESTAMP(3), "
	    "started_at = IFNULL(started_at, UTC_TIMESTAMP(3)), not_before = NULL "
	    "WHERE id = ?", "ss", c->process_id, c->run_id)) < 0 ||
	    (n = db_exec(db, "UPDATE pipelines SET last_status = 'RUNNING' "
	    "WHERE id = ?", "s", pipeline)) < 0 ||
	    (n = db_exec(db, "UPDATE jobs SET job_status = 'RUNNING' "
	    "WHERE pipeline_id = ?", "s", pipeline)) < 0)
		return (int)n;
	return 1;
}

/* Claim one CREATED run.  1 claimed (run_id filled) once the COMMIT
 * succeeded, 0 none, < 0 error. */
static int claim_run(struct work_ctx *w, char run_id[RUN_ID_LEN + 1],
                     char request_id[LOG_REQUEST_ID_MAX + 1])
{
	struct run_claim c = { w->process_id, run_id, request_id };

	return db_tx(w->db, "run claim", claim_run_body, &c);
}

static int start_run(struct work_ctx *w)
{
	char run_id[RUN_ID_LEN + 1], request_id[LOG_REQUEST_ID_MAX + 1];
	pid_t pid;
	int rc;

	if ((rc = claim_run(w, run_id, request_id)) <= 0) {
		if (rc < 0 && rc != DB_ERR_DEADLOCK)
			log_kv(LOG_WARN, "run claim failed", "error=%s",
			       LOG_Q(db_error(w->db)));
		return rc;
	}
	fflush(stderr);
	/* A run asked for by a request: its processes' lines name it. */
	log_set_request_id(request_id);
	pid = fork();
	if (pid == 0)
		supervise(w->cfg, run_id, w->process_id);
	if (pid < 0) {
		char why[160];

		snprintf(why, sizeof why, "the run could not be started: %s",
		         strerror(errno));
		run_fail_abandoned(w->db, run_id, w->process_id, why);
		log_set_request_id(NULL);
		return -1;
	}
	sups[nsup].pid = pid;
	memcpy(sups[nsup].run_id, run_id, sizeof sups[nsup].run_id);
	nsup++;
	log_kv(LOG_INFO, "run started", "run=%s supervisor=%ld", run_id, (long)pid);
	log_set_request_id(NULL);
	return 1;
}

/* Reap supervisors; a run left RUNNING by one that died is failed. */
static void reap(struct work_ctx *w)
{
	for (int i = 0; i < nsup; ) {
		int status;
		pid_t p = waitpid(sups[i].pid, &status, WNOHANG);

		if (p == 0 || (p < 0 && errno == EINTR)) {
			i++;
			continue;
		}
		if (p > 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			char how[96], why[200];

			proc_describe_status(status, how, sizeof how);
			snprintf(why, sizeof why, "the run's supervisor process %s; "
			         "the run was stopped", how);
			if (run_fail_abandoned(w->db, sups[i].run_id, w->process_id,
			                       why) == 1)
				log_kv(LOG_WARN, "run supervisor died", "run=%s %s",
				       sups[i].run_id, how);
		}
		log_kv(LOG_INFO, "run supervisor ended", "run=%s", sups[i].run_id);
		sups[i] = sups[--nsup];
	}
}

static bool supervised(const char *run_id)
{
	for (int i = 0; i < nsup; i++)
		if (strcmp(sups[i].run_id, run_id) == 0)
			return true;
	return false;
}

/* Runs whose work process is gone: on this host a dead pid (at once), on
 * any host a heartbeat older than runner_stale_s. */
static void recover(struct work_ctx *w)
{
	const char *colon = strrchr(w->process_id, ':');
	char ids[32][RUN_ID_LEN + 1], by[32][129];
	struct db_stmt *st;
	size_t plen, n = 0;

	if (colon == NULL)
		return;
	plen = (size_t)(colon - w->process_id) + 1;
	st = db_query(w->db, "SELECT id, claimed_by, heartbeat_at < UTC_TIMESTAMP(3)"
	    " - INTERVAL ? SECOND FROM pipeline_runs WHERE status = 'RUNNING' AND "
	    "claimed_by IS NOT NULL LIMIT 500", "i",
	    (long long)w->cfg->runner_stale_s);
	if (st == NULL)
		return;
	while (n < 32 && db_fetch(st) == 1) {
		const char *c = db_col_str(st, 1);
		bool stale = db_col_ll(st, 2) != 0, dead = false;

		if (strcmp(c, w->process_id) == 0) {
			/* Ours: dead when no supervisor of ours has it (one that
			 * could not record the run's end while the database was
			 * away); a live supervisor heartbeats it itself. */
			dead = stale && !supervised(db_col_str(st, 0));
			stale = false;
		} else if (strlen(c) > plen && strncmp(c, w->process_id, plen) == 0) {
			char *end;
			long pid = strtol(c + plen, &end, 10);

			dead = *end == '\0' && pid > 0 && proc_gone(pid);
		}
		if (!stale && !dead)
			continue;
		snprintf(ids[n], sizeof ids[n], "%s", db_col_str(st, 0));
		snprintf(by[n], sizeof by[n], "%s", c);
		n++;
	}
	db_done(st);
	for (size_t i = 0; i < n; i++) {
		char why[400];

		snprintf(why, sizeof why, "the work process running this run (%.128s) "
		         "stopped responding or died; the run was marked FAILED by %.128s",
		         by[i], w->process_id);
		run_fail_abandoned(w->db, ids[i], by[i], why);
	}
}

int executor_tick(struct work_ctx *w, bool stopping)
{
	double now = time_mono_ms();
	int started = 0;

	reap(w);
	if (now - last_recover_ms >= w->cfg->runner_heartbeat_s * 1000.0) {
		recover(w);
		last_recover_ms = now;
	}
	while (!stopping && !work_stopping(w) && nsup < w->cfg->runner_max_runs &&
	       nsup < SUP_MAX) {
		if (start_run(w) != 1)
			break;
		started++;
	}
	return started;
}

void executor_signal_all(int sig)
{
	if (nsup > 0)
		log_kv(LOG_INFO, "signalling run supervisors", "runs=%d signal=%d", nsup, sig);
	/* SIGTERM: each supervisor kills its task and fails its run. */
	for (int i = 0; i < nsup; i++)
		kill(sups[i].pid, sig);
}

/* ==== the supervisor ===================================================== */

static volatile sig_atomic_t sup_term;

static void on_sup_term(int sig)
{
	(void)sig;
	sup_term = 1;
}

struct task {
	char task_id[129];
	char job_id[81];
	char kind[16];
	int memory_mb;
	struct task_deps deps;
	char status[12];                 /* PENDING RUNNING SUCCESS FAILED SKIPPED */
	long long rows;
	char error[1024];
};

struct run {
	const struct config *cfg;
	struct db *db;
	struct run_log *log;
	const char *process_id;
	char id[RUN_ID_LEN + 1];
	char pipeline_id[65];
	char customer_id[37];
	char trigger[16];
	int attempt, retries;
	int timeout_s;                   /* the run's time limit */
	double t0;                       /* when this attempt started (monotonic) */
	struct task tasks[TASKS_MAX];
	size_t ntasks;
	bool lost;                       /* the claim is gone: touch nothing */
	bool cancelled, stopped, timed_out;
	char cancelled_by[321];
};

static void sup_exit(struct run *r, int status) __attribute__((noreturn));
static void sup_exit(struct run *r, int status)
{
	run_log_free(r->log);
	/* The inherited connection of the work process is never closed here:
	 * closing would end the parent's session. */
	db_free(r->db);
	fflush(stderr);
	_exit(status);
}

/* Heartbeat the claim and read a cancel request.  -1 when the claim is lost
 * (the run was failed by someone else).  The UPDATE's row count cannot
 * tell: a heartbeat within the same millisecond changes nothing. */
static int beat(struct run *r)
{
	struct db_stmt *st;
	int rc;

	if (db_exec(r->db, "UPDATE pipeline_runs SET heartbeat_at = UTC_TIMESTAMP(3) "
	            "WHERE id = ? AND status = 'RUNNING' AND claimed_by = ?", "ss",
	            r->id, r->process_id) < 0)
		return 0;                /* the database is down: try again later */
	st = db_query(r->db, "SELECT status = 'RUNNING' AND claimed_by <=> ?, "
	              "cancel_requested_at IS NOT NULL, IFNULL(cancel_requested_by, '') "
	              "FROM pipeline_runs WHERE id = ?", "ss", r->process_id, r->id);
	if (st == NULL)
		return 0;
	if ((rc = db_fetch(st)) == 0 || (rc == 1 && db_col_ll(st, 0) == 0))
		r->lost = true;
	if (rc == 1 && db_col_ll(st, 1) != 0 && !r->cancelled) {
		r->cancelled = true;
		snprintf(r->cancelled_by, sizeof r->cancelled_by, "%s",
		         db_col_str(st, 2)[0] != '\0' ? db_col_str(st, 2) : "a user");
	}
	db_done(st);
	return r->lost ? -1 : 0;
}

static int load_run(struct run *r)
{
	struct db_stmt *st;
	int rc;

	st = db_query(r->db, "SELECT pr.pipeline_id, pr.customer_id, pr.trigger_type, "
	    "pr.attempt, p.retries, IFNULL(p.memory_allocated_mb, 0), "
	    "pr.cancel_requested_at IS NOT NULL, IFNULL(pr.cancel_requested_by, ''), "
	    "IFNULL(p.run_timeout_s, 0) FROM pipeline_runs pr JOIN pipelines p ON p.id = pr.pipeline_id "
	    "WHERE pr.id = ? AND pr.status = 'RUNNING' AND pr.claimed_by = ?",
	    "ss", r->id, r->process_id);
	if (st == NULL)
		return -1;
	if ((rc = db_fetch(st)) == 1) {
		int pmem = (int)db_col_ll(st, 5);

		snprintf(r->pipeline_id, sizeof r->pipeline_id, "%s", db_col_str(st, 0));
		snprintf(r->customer_id, sizeof r->customer_id, "%s", db_col_str(st, 1));
		snprintf(r->trigger, sizeof r->trigger, "%s", db_col_str(st, 2));
		r->attempt = (int)db_col_ll(st, 3);
		r->retries = (int)db_col_ll(st, 4);
		r->timeout_s = (int)db_col_ll(st, 8) > 0 ? (int)db_col_ll(st, 8)
		               : r->cfg->runner_run_timeout_s;
		if (db_col_ll(st, 6) != 0) {
			r->cancelled = true;
			snprintf(r->cancelled_by, sizeof r->cancelled_by, "%s",
			         db_col_str(st, 7));
		}
		db_done(st);
		/* The tasks with their job's memory: job, else pipeline, else default. */
		st = db_query(r->db, "SELECT t.task_id, t.job_id, t.kind, "
		    "t.upstream_task_ids, IFNULL(j.memory_allocated_mb, 0) "
		    "FROM orchestration_tasks t JOIN jobs j ON j.id = t.job_id "
		    "WHERE t.pipeline_id = ? ORDER BY t.position, t.task_id",
		    "s", r->pipeline_id);
		if (st == NULL)
			return -1;
		r->ntasks = 0;
		while ((rc = db_fetch(st)) == 1 && r->ntasks < TASKS_MAX) {
			struct task *t = &r->tasks[r->ntasks++];
			int jmem = (int)db_col_ll(st, 4);

			memset(t, 0, sizeof *t);
			snprintf(t->task_id, sizeof t->task_id, "%s", db_col_str(st, 0));
			snprintf(t->job_id, sizeof t->job_id, "%s", db_col_str(st, 1));
			snprintf(t->kind, sizeof t->kind, "%s", db_col_str(st, 2));
			t->memory_mb = jmem > 0 ? jmem : pmem > 0 ? pmem
			               : r->cfg->memory_default_mb;
			snprintf(t->status, sizeof t->status, "PENDING");
			/* upstream ids are resolved below, once all are known */
			snprintf(t->error, sizeof t->error, "%s", db_col_str(st, 3));
		}
		db_done(st);
		if (rc < 0)
			return -1;
		for (size_t i = 0; i < r->ntasks; i++) {
			struct json_object *a = json_tokener_parse(r->tasks[i].error);
			size_t n = a != NULL && json_object_is_type(a, json_type_array)
			           ? json_object_array_length(a) : 0;

			for (size_t k = 0; k < n; k++) {
				const char *u = json_object_get_string(
				    json_object_array_get_idx(a, k));

				struct task_deps *d = &r->tasks[i].deps;
				bool found = false;

				for (size_t j = 0; u != NULL && j < r->ntasks; j++) {
					if (strcmp(r->tasks[j].task_id, u) != 0)
						continue;
					/* More than RUNNER_UP_MAX: the order refuses it. */
					if (d->n < RUNNER_UP_MAX)
						d->up[d->n] = j;
					d->n++;
					found = true;
				}
				if (!found)              /* an unknown upstream task */
					d->n = RUNNER_UP_MAX + 1;
			}
			json_object_put(a);
			r->tasks[i].error[0] = '\0';
		}
		return 1;
	}
	db_done(st);
	return rc < 0 ? -1 : 0;
}

static void task_status_set(struct run *r, struct task *t)
{
	if (r->lost)
		return;
	if (strcmp(t->status, "RUNNING") == 0)
		db_exec(r->db, "UPDATE run_task_status SET status = 'RUNNING', "
		        "started_at = UTC_TIMESTAMP(3) WHERE run_id = ? AND task_id = ?",
		        "ss", r->id, t->task_id);
	else
		db_exec(r->db, "UPDATE run_task_status SET status = ?, "
		        "finished_at = UTC_TIMESTAMP(3), rows_loaded = ?, error = ? "
		        "WHERE run_id = ? AND task_id = ?", "sisss", t->status,
		        t->rows, t->error[0] != '\0' ? t->error : NULL, r->id,
		        t->task_id);
}

/* The rows a task committed, as it recorded them with each commit. */
static long long committed_rows(struct run *r, const struct task *t)
{
	struct db_stmt *st = db_query(r->db, "SELECT rows_loaded FROM run_task_status "
	                              "WHERE run_id = ? AND task_id = ?", "ss", r->id,
	                              t->task_id);
	long long n = 0;

	if (st != NULL && db_fetch(st) == 1)
		n = db_col_ll(st, 0);
	db_done(st);
	return n;
}

/* Run one task in a child and wait for it.  Fills t->status/rows/error. */
static void run_task(struct run *r, struct task *t, struct run_log *tl)
{
	struct task_result res;
	struct task_ref ref = {
		.run_id = r->id, .pipeline_id = r->pipeline_id,
		.customer_id = r->customer_id, .job_id = t->job_id,
		.task_id = t->task_id, .kind = t->kind, .memory_mb = t->memory_mb,
	};
	double t0 = time_mono_ms(), last_beat = t0;
	long long peak_kb = 0, limit_kb = (long long)t->memory_mb * 1024, base_kb = 0;
	struct rusage ru;
	int fds[2], status = 0;
	size_t got = 0;
	bool killed = false;
	pid_t pid;

	memset(&res, 0, sizeof res);
	memset(&ru, 0, sizeof ru);
#ifdef RUNNER_SANITIZED
	base_kb = runner_self_vm_kb("VmSize:");
#endif
	snprintf(t->status, sizeof t->status, "RUNNING");
	task_status_set(r, t);
	run_log_info(tl, "task started on %s: %s (memory limit %d MB)",
	             r->process_id, t->kind, t->memory_mb);
	if (pipe2(fds, O_CLOEXEC) != 0) {
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "could not start the task: %s",
		         strerror(errno));
		return;
	}
	fflush(stderr);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		child_task_main(r->cfg, &ref, fds[1]);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "could not start the task: %s",
		         strerror(errno));
		return;
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		pid_t p;
		long long v;
		ssize_t k;

		/* Drain the pipe as the child writes (its report is small). */
		while (got < sizeof res &&
		       (k = read(fds[0], (char *)&res + got, sizeof res - got)) > 0)
			got += (size_t)k;
		if ((v = vm_peak_kb(pid)) > peak_kb)
			peak_kb = v;
		p = wait4(pid, &status, WNOHANG, &ru);
		if (p == pid)
			break;
		if (p < 0 && errno != EINTR) {
			status = 0;
			break;
		}
		if (!killed && !r->timed_out &&
		    time_mono_ms() - r->t0 >= r->timeout_s * 1000.0)
			r->timed_out = true;
		if (!killed && (sup_term || r->cancelled || r->lost || r->timed_out)) {
			kill(pid, SIGKILL);
			killed = true;
			if (sup_term && !r->cancelled && !r->timed_out)
				r->stopped = true;
		}
		if (time_mono_ms() - last_beat >= r->cfg->runner_heartbeat_s * 1000.0) {
			beat(r);
			last_beat = time_mono_ms();
		}
		sleep_ms(POLL_MS);
	}
	while (got < sizeof res) {
		ssize_t k = read(fds[0], (char *)&res + got, sizeof res - got);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fds[0]);
	res.error[sizeof res.error - 1] = '\0';
	if (ru.ru_maxrss > peak_kb)
		peak_kb = ru.ru_maxrss;
	if (got == sizeof res && res.vm_peak_kb > peak_kb)
		peak_kb = res.vm_peak_kb;
	if (got == sizeof res)
		base_kb = res.baseline_kb;
	/* Sanitizer builds: what the process had mapped before the task. */
	peak_kb = peak_kb > base_kb ? peak_kb - base_kb : 0;

	/* Rows count as loaded once committed: a task that did not report
	 * (killed, crashed) counted its commits in run_task_status itself. */
	t->rows = got == sizeof res ? res.rows_loaded : committed_rows(r, t);
	if (r->cancelled) {
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "cancelled by %s", r->cancelled_by);
	} else if (r->timed_out) {
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "stopped: the run timed out after "
		         "%d s (run_timeout_s)", r->timeout_s);
	} else if (r->stopped || r->lost) {
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "stopped before it finished: "
		         "sluice work was shut down");
	} else if (runner_memory_exceeded(status, peak_kb, limit_kb,
	                                  got == sizeof res ? &res : NULL)) {
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "the task exceeded its memory limit "
		         "of %d MB", t->memory_mb);
	} else if (got == sizeof res && res.rc == 0 && WIFEXITED(status) &&
	           WEXITSTATUS(status) == 0) {
		snprintf(t->status, sizeof t->status, "SUCCESS");
	} else if (got == sizeof res && res.rc != 0) {
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "%s", res.error[0] != '\0'
		         ? res.error : "the connector failed");
	} else {
		char how[96];

		proc_describe_status(status, how, sizeof how);
		snprintf(t->status, sizeof t->status, "FAILED");
		snprintf(t->error, sizeof t->error, "the task process %s", how);
	}
	task_status_set(r, t);
	if (strcmp(t->status, "SUCCESS") == 0)
		run_log_info(tl, "task finished: SUCCESS, %lld rows read, %lld rows "
		             "loaded in %.1f s (peak memory %lld MB)", res.rows_read,
		             res.rows_loaded, (time_mono_ms() - t0) / 1000.0,
		             peak_kb / 1024);
	else if (r->cancelled)
		run_log_error(tl, "%s", t->error);
	else
		run_log_error(tl, "task failed after %.1f s: %s",
		              (time_mono_ms() - t0) / 1000.0, t->error);
	if (strcmp(t->status, "SUCCESS") != 0) {
		if (t->rows > 0)
			run_log_warning(tl, "%lld rows committed before the task stopped "
			                "stay loaded, with the state that covers them", t->rows);
		/* What a killed task could not drop itself. */
		if (!r->lost)
			staging_drop_run(r->cfg, r->db, r->id, tl);
	}
}

/* Job statuses from their tasks; the run's end (or its retry). */

/* The run's final status and, in the same transaction, a delivery for
 * each webhook of its pipeline: a work process killed right after cannot
 * lose one.  1 ended, 0 no longer ours, < 0 enum db_err. */
struct run_end {
	const struct run *r;
	bool ok;
	long long rows;
	const char *error;
};

static int run_end_body(struct db *db, void *arg)
{
	const struct run_end *e = arg;
	long long n = db_exec(db, "UPDATE pipeline_runs SET status = ?, "
	    "finished_at = UTC_TIMESTAMP(3), rows_loaded = rows_loaded + ?, "
	    "error = ? WHERE id = ? AND status = 'RUNNING' AND claimed_by = ?", "sisss",
	    e->ok ? "SUCCESS" : "FAILED", e->rows, e->ok ? NULL : e->error, e->r->id,
	    e->r->process_id);

	if (n == 1 && (n = run_events_record(db, e->r->id)) >= 0)
		n = 1;
	return (int)n;
}

static void finish_run(struct run *r, double t0)
{
	long long rows = 0;
	const struct task *failed = NULL;
	char error[1200] = "";
	bool ok = true;

	for (size_t i = 0; i < r->ntasks; i++) {
		const struct task *t = &r->tasks[i];

		rows += t->rows;
		if (strcmp(t->status, "SUCCESS") != 0) {
			ok = false;
			if (failed == NULL && strcmp(t->status, "FAILED") == 0)
				failed = t;
		}
	}
	if (r->ntasks == 0 && r->cancelled)
		ok = false;
	if (r->lost)
		return;
	if (failed != NULL)
		snprintf(error, sizeof error, "%s: %s", failed->task_id, failed->error);
	else if (!ok && r->timed_out)
		snprintf(error, sizeof error, "the run timed out after %d s "
		         "(run_timeout_s)", r->timeout_s);
	else if (!ok)
		snprintf(error, sizeof error, r->cancelled ? "cancelled by %s"
		         : "stopped before it finished", r->cancelled_by);

	/* A run that timed out is not tried again: it would likely hang the
	 * same way; the next scheduled run starts afresh. */
	if (!ok && !r->cancelled && !r->stopped && !r->timed_out &&
	    r->attempt <= r->retries) {
		int delay = runner_retry_delay(r->cfg->runner_retry_base_s, r->attempt);
		long long n;

		n = db_exec(r->db, "UPDATE pipeline_runs SET status = 'CREATED', "
		    "attempt = attempt + 1, not_before = UTC_TIMESTAMP(3) + INTERVAL ? "
		    "SECOND, claimed_by = NULL, heartbeat_at = NULL, "
		    "rows_loaded = rows_loaded + ?, error = ? "
		    "WHERE id = ? AND status = 'RUNNING' AND claimed_by = ?",
		    "iisss", (long long)delay, rows, error, r->id, r->process_id);
		if (n == 1) {
			db_exec(r->db, "UPDATE pipelines SET last_status = 'CREATED' "
			        "WHERE id = ?", "s", r->pipeline_id);
			db_exec(r->db, "UPDATE jobs SET job_status = 'CREATED' "
			        "WHERE pipeline_id = ?", "s", r->pipeline_id);
			run_log_warning(r->log, "attempt %d of %d failed (%s); retrying "
			                "in %d s", r->attempt, r->retries + 1, error, delay);
			return;
		}
	}
	/* The outcome must not be lost to a database restart: keep trying for
	 * a while (should another process fail it meanwhile, it stays failed). */
	for (int i = 0; ; i++) {
		struct run_end e = { r, ok, rows, error };
		int n = db_tx(r->db, "run end", run_end_body, &e);

		if (n == 1)
			break;
		if (n == 0 || i >= FINISH_TRIES || sup_term)
			return;
		sleep_ms(1000);
	}
	db_exec(r->db, "UPDATE pipelines SET last_status = ? WHERE id = ?", "ss",
	        ok ? "SUCCESS" : "FAILED", r->pipeline_id);
	/* A job is SUCCESS when every task of it is. */
	for (size_t i = 0; i < r->ntasks; i++) {
		const char *st = "SUCCESS";

		for (size_t j = 0; j < r->ntasks; j++)
			if (strcmp(r->tasks[j].job_id, r->tasks[i].job_id) == 0 &&
			    strcmp(r->tasks[j].status, "SUCCESS") != 0)
				st = "FAILED";
		db_exec(r->db, "UPDATE jobs SET job_status = ? WHERE id = ?", "ss", st,
		        r->tasks[i].job_id);
	}
	if (ok)
		run_log_info(r->log, "run finished: SUCCESS, %lld rows loaded in %.1f s",
		             rows, (time_mono_ms() - t0) / 1000.0);
	else
		run_log_error(r->log, "run finished: FAILED after %.1f s, %lld rows "
		              "loaded: %s", (time_mono_ms() - t0) / 1000.0, rows, error);
}

static void supervise(const struct config *cfg, const char *run_id,
                      const char *process_id)
{
	static struct run r;             /* static: tasks make it large */
	struct sigaction sa;
	sigset_t none;
	static size_t order[TASKS_MAX];
	static struct task_deps deps[TASKS_MAX];
	pid_t parent = getppid();
	double t0 = time_mono_ms();
	int rc = -1;

	/* Die with the work process: a kill -9 of it must not leave a run
	 * going on unsupervised. */
	if (proc_die_with_parent(parent) != 0)
		_exit(1);
	/* Nothing of the work process's: its database session stays its own
	 * (closing the copy sends nothing), its HTTP connections close when it
	 * closes them. */
	proc_close_fds(-1);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sup_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN);         /* the work process decides */
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	memset(&r, 0, sizeof r);
	r.t0 = t0;
	r.cfg = cfg;
	r.process_id = process_id;
	snprintf(r.id, sizeof r.id, "%s", run_id);
	if ((r.db = db_new(cfg)) == NULL)
		_exit(1);
	for (int i = 0; i < 50 && (rc = db_ensure(r.db)) != DB_OK; i++)
		sleep_ms(200);
	if (rc != DB_OK || (rc = load_run(&r)) <= 0) {
		log_kv(LOG_ERROR, "run supervisor could not load its run", "run=%s "
		       "error=%s", run_id, LOG_Q(db_error(r.db)));
		sup_exit(&r, 1);
	}
	r.log = run_log_new(r.db, r.id, NULL);
	run_log_info(r.log, "run claimed by %s (trigger %s, attempt %d of %d)",
	             process_id, r.trigger, r.attempt, r.retries + 1);
	for (size_t i = 0; i < r.ntasks; i++) {
		deps[i] = r.tasks[i].deps;
		db_exec(r.db, "INSERT INTO run_task_status (run_id, task_id, status) "
		        "VALUES (?, ?, 'PENDING') ON DUPLICATE KEY UPDATE status = "
		        "'PENDING', started_at = NULL, finished_at = NULL, rows_loaded = 0, "
		        "error = NULL", "ss", r.id, r.tasks[i].task_id);
	}
	if (r.ntasks == 0)
		run_log_warning(r.log, "the pipeline has no tasks");
	if (runner_task_order(r.ntasks, deps, order) != 0) {
		run_log_error(r.log, "the task graph is not valid (a cycle or an "
		              "unknown upstream task); nothing was run");
		for (size_t i = 0; i < r.ntasks; i++) {
			snprintf(r.tasks[i].status, sizeof r.tasks[i].status, "SKIPPED");
			task_status_set(&r, &r.tasks[i]);
		}
		finish_run(&r, t0);
		sup_exit(&r, 0);
	}
	for (size_t k = 0; k < r.ntasks; k++) {
		struct task *t = &r.tasks[order[k]];
		struct run_log *tl = run_log_new(r.db, r.id, t->task_id);
		const char *blocker = NULL;

		beat(&r);
		if (r.lost)
			break;
		for (size_t u = 0; u < t->deps.n && u < RUNNER_UP_MAX; u++)
			if (strcmp(r.tasks[t->deps.up[u]].status, "SUCCESS") != 0)
				blocker = r.tasks[t->deps.up[u]].task_id;
		if (!r.timed_out && time_mono_ms() - r.t0 >= r.timeout_s * 1000.0)
			r.timed_out = true;
		if (blocker != NULL || r.cancelled || sup_term || r.timed_out) {
			snprintf(t->status, sizeof t->status, "SKIPPED");
			if (blocker != NULL)
				snprintf(t->error, sizeof t->error, "skipped: upstream task "
				         "%s did not succeed", blocker);
			else
				snprintf(t->error, sizeof t->error, "skipped: the run was %s",
				         r.cancelled ? "cancelled" : r.timed_out
				         ? "stopped by its timeout" : "stopped");
			if (sup_term && !r.cancelled && !r.timed_out)
				r.stopped = true;
			task_status_set(&r, t);
			run_log_warning(tl, "%s", t->error);
		} else {
			run_task(&r, t, tl);
		}
		run_log_free(tl);
	}
	if (r.cancelled && r.ntasks > 0)
		run_log_error(r.log, "cancelled by %s", r.cancelled_by);
	finish_run(&r, t0);
	sup_exit(&r, 0);
}
