/* runner.h - the pipeline runner inside `sluice work`: the scheduler that
 * turns cron firings into runs, and the executor that claims runs and
 * supervises their tasks.
 *
 *   work loop ──▶ scheduler_tick   due pipelines -> runs (trigger schedule)
 *             ──▶ executor_tick    reap supervisors, recover dead runs,
 *                                  claim CREATED runs, fork a supervisor each
 *   supervisor (one process per run): walks the task graph, forks one task
 *   child per task (RLIMIT_AS = the job's memory), heartbeats the run,
 *   notices cancel requests, records every status.
 *   task child (child.c): its own database and warehouse connections, the
 *   job_spec, connector_extract_load / connector_qualify.
 *
 * Every claim is SELECT ... FOR UPDATE SKIP LOCKED in a transaction retried
 * on deadlock or Galera certification failure, and counts only once its
 * COMMIT succeeded, so any number of work processes on any number of hosts
 * share the work and never run a run or fire a schedule twice. */
#ifndef SLUICE_RUNNER_H
#define SLUICE_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "db/queue.h"

struct config;
struct db;
struct job_spec;
struct run_log;

/* ---- scheduler.c ---------------------------------------------------------- */

/* Fire every due schedule (at most a batch per call): a run with trigger
 * `schedule` unless one is active, and next_run_at moved to the first
 * firing after now.  Returns how many pipelines were handled, or < 0. */
int scheduler_tick(struct work_ctx *w);

/* The next firing of cron_text in tz ("" or NULL = UTC) strictly after
 * `after`.  0; -1 with a reason in err (bad expression or zone, never). */
int scheduler_next_run(const char *cron_text, const char *tz, time_t after,
                       time_t *next, char *err, size_t errlen);

/* ---- executor.c ----------------------------------------------------------- */

/* Reap finished supervisors, recover runs of dead processes, claim and
 * start CREATED runs up to runner_max_runs (none once stopping).  Returns
 * how many runs were started. */
int executor_tick(struct work_ctx *w, bool stopping);
/* Supervisors still running under this process. */
int executor_active(void);
/* Signal every run supervisor of this process: on shutdown, SIGTERM once
 * runner_shutdown_grace_s is over (each fails its run with a log line),
 * SIGKILL when that did not end them (the caller keeps calling
 * executor_tick to reap them). */
void executor_signal_all(int sig);

/* ---- staging.c ------------------------------------------------------------ */

/* Drop the staging tables a run's tasks registered and left (a task killed
 * or crashed), with a WARNING line each on log (NULL: none).  How many
 * were dropped, or -1 (the sweep drops them later). */
int staging_drop_run(const struct config *cfg, struct db *db, const char *run_id,
                     struct run_log *log);
/* Queue a runner_sweep item unless one is waiting already. */
void runner_sweep_request(struct db *db);
/* The runner_sweep work kind: staging tables of runs that are over, and
 * staging-named tables nobody registered (older than runner_stale_s). */
int runner_sweep_work(struct work_ctx *w, const struct work_item *it,
                      char *err, size_t errlen);

/* ---- child.c: one task in its own process ------------------------------ */

/* What the task child reports to its supervisor through a pipe. */
struct task_result {
	int rc;                          /* 0 ok, -1 failed */
	int memory_exceeded;             /* an allocation hit the limit */
	long long rows_read, rows_loaded;
	long long vm_peak_kb;            /* VmPeak at the end */
	long long baseline_kb;           /* address space below the limit (sanitizers) */
	char error[1024];
};

struct task_ref {
	const char *run_id;
	const char *pipeline_id;
	const char *customer_id;
	const char *job_id;
	const char *task_id;
	const char *kind;                /* extract_load | qualify */
	int memory_mb;
};

/* Runs in the forked child: set up, call the connector, write the result
 * to fd.  Never returns. */
void child_task_main(const struct config *cfg, const struct task_ref *t, int fd)
	__attribute__((noreturn));

/* ---- pure helpers (tested by t/unit/test_runner.c) ----------------------- */

/* Seconds to wait before retry `attempt` (1 = the first retry):
 * base * 2^(attempt-1), capped at RUNNER_RETRY_MAX_S. */
#define RUNNER_RETRY_MAX_S 3600
int runner_retry_delay(int base_s, int attempt);

/* The RLIMIT_AS of a task of memory_mb: memory_mb MiB, plus baseline_kb of
 * address space the process already has when sanitizers reserve shadow
 * memory (0 otherwise). */
unsigned long long runner_rlimit_bytes(int memory_mb, long long baseline_kb);

/* Did a task that ended so exceed its memory?  status as from waitpid;
 * peak_kb the largest VmPeak / maxrss seen and limit_kb the job's memory,
 * both without the sanitizer baseline; r the child's report or NULL. */
bool runner_memory_exceeded(int status, long long peak_kb, long long limit_kb,
                            const struct task_result *r);

/* AddressSanitizer builds reserve terabytes of shadow address space: there
 * the limit is added to what the process has mapped when the task starts. */
#if defined(__SANITIZE_ADDRESS__)
#define RUNNER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUNNER_SANITIZED 1
#endif
#endif

/* A line of /proc/self/status ("VmSize:", "VmPeak:") in kB, or -1. */
long long runner_self_vm_kb(const char *key);

/* True when err reads like an allocation failure ("out of memory",
 * "Cannot allocate memory", "MemoryError"), case-insensitive. */
bool runner_error_is_oom(const char *err);

/* The tasks of a run (a pipeline has at most 100 jobs, two tasks each) and
 * the upstream tasks of one (a qualify task has one). */
#define RUNNER_TASKS_MAX 256
#define RUNNER_UP_MAX    8
struct task_deps {
	size_t n;                        /* > RUNNER_UP_MAX: refused */
	size_t up[RUNNER_UP_MAX];        /* indexes of upstream tasks */
};

/* Order n tasks (n <= RUNNER_TASKS_MAX) so that each comes after its
 * upstream tasks, stable otherwise, into order[].  0, or -1 on a cycle, a
 * task upstream of itself, a bad index or too many upstreams. */
int runner_task_order(size_t n, const struct task_deps *deps, size_t *order);


/* ---- connector.c extras ------------------------------------------------- */

/* 0, or -1 with "driver not available: <plugin>" for a jdbc plugin this
 * build has no client for (checked before any connection is opened). */
int connector_driver_check(const struct job_spec *job, char *err, size_t errlen);

/* ---- run_log.c extras --------------------------------------------------- */

/* Replace every occurrence of secret in later lines by "***" (a source
 * password; NULL or "" clears).  The log keeps its own copy, wiped on free. */
void run_log_redact(struct run_log *l, const char *secret);
/* The text a message is stored as (redacted, one line, valid UTF-8, at
 * most RUN_LOG_LINE_MAX bytes), into out of cap bytes. */
void run_log_clean(const char *in, const char *secret, char *out, size_t cap);
/* Write one line at level ("INFO", "WARNING", "ERROR") on db for run_id,
 * outside any run_log (used by recovery and the cancel route).  0 or < 0. */
int run_log_line(struct db *db, const char *run_id, const char *task_id,
                 const char *level, const char *message);

#endif
