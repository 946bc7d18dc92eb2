/* work.c - the claim / run / record loop of `sluice work`. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>

#include "db/db.h"
#include "retrieval/retrieval.h"
#include "runner/runner.h"
#include "runner/work.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/config.h"
#include "util/log.h"
#include "util/timeutil.h"

struct work_kind {
	const char *kind;
	work_fn run;
};

/* Every kind of work this build knows.  Areas add their rows here. */
static const struct work_kind kinds[] = {
	{ "rag_question", rag_question_work },
	{ "rag_ingest", rag_ingest_work },
	{ "storage_infer", storage_infer_work },
	{ "storage_link_load", storage_link_load_work },
	{ NULL, NULL },
};

static volatile sig_atomic_t stop_requested;

/* A pipeline run's supervisor ended: only wakes the idle wait, so its slot
 * is reused at once (the executor reaps it). */
static void on_child(int sig)
{
	(void)sig;
}

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Signals stay blocked while an item runs (so it is never interrupted
 * half-way); a pending one still means "stop at the next safe point". */
int work_stopping(void)
{
	sigset_t pending;

	if (stop_requested)
		return 1;
	if (sigpending(&pending) != 0)
		return 0;
	return sigismember(&pending, SIGTERM) == 1 ||
	       sigismember(&pending, SIGINT) == 1;
}

long long work_enqueue(struct db *db, const char *kind, const char *ref_id,
                       const char *customer_id, const char *payload)
{
	long long rc = db_exec(db,
	    "INSERT INTO work_queue (kind, ref_id, customer_id, payload) "
	    "VALUES (?, ?, ?, ?)", "ssss", kind, ref_id, customer_id, payload);

	return rc < 0 ? rc : db_last_insert_id(db);
}

long long work_enqueue_delayed(struct db *db, const char *kind, const char *ref_id,
                               const char *customer_id, const char *payload,
                               int delay_s)
{
	long long rc = db_exec(db,
	    "INSERT INTO work_queue (kind, ref_id, customer_id, payload, available_at) "
	    "VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND)", "ssssi",
	    kind, ref_id, customer_id, payload, (long long)delay_s);

	return rc < 0 ? rc : db_last_insert_id(db);
}

void work_heartbeat(struct work_ctx *w, const struct work_item *it)
{
	db_exec(w->db, "UPDATE work_queue SET heartbeat_at = UTC_TIMESTAMP(3) "
	               "WHERE id = ? AND claimed_by = ?", "is",
	        it->id, w->process_id);
	db_exec(w->db, "UPDATE work_processes SET heartbeat_at = UTC_TIMESTAMP(3) "
	               "WHERE id = ?", "s", w->process_id);
}

static int register_process(struct work_ctx *w, const char *host)
{
	long long rc = db_exec(w->db,
	    "INSERT INTO work_processes (id, host, pid, started_at, heartbeat_at) "
	    "VALUES (?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)) "
	    "ON DUPLICATE KEY UPDATE started_at = UTC_TIMESTAMP(3), "
	    "heartbeat_at = UTC_TIMESTAMP(3)",
	    "ssi", w->process_id, host, (long long)getpid());

	return rc < 0 ? (int)rc : 0;
}

bool work_process_gone(long pid)
{
	char path[64], buf[256];
	const char *close;
	FILE *f;
	bool zombie = false;

	if (kill((pid_t)pid, 0) != 0)
		return errno == ESRCH;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) != NULL && (close = strrchr(buf, ')')) != NULL)
		zombie = close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
	fclose(f);
	return zombie;
}

/* Claims of a process on this host that no longer exists (killed, crashed)
 * go back at once: a restarted `sluice work` should not wait WORK_STALE_S
 * for work its dead predecessor held.  Other hosts' claims wait for the
 * heartbeat rule below. */
static void recover_dead_local(struct work_ctx *w)
{
	const char *colon = strrchr(w->process_id, ':');
	char dead[16][160];
	struct db_stmt *st;
	size_t plen, ndead = 0;

	if (colon == NULL)
		return;
	plen = (size_t)(colon - w->process_id) + 1;      /* "host:" */
	st = db_query(w->db, "SELECT DISTINCT claimed_by FROM work_queue "
	    "WHERE status = 'running' AND LEFT(claimed_by, ?) = LEFT(?, ?)",
	    "isi", (long long)plen, w->process_id, (long long)plen);
	if (st == NULL)
		return;
	while (ndead < 16 && db_fetch(st) == 1) {
		const char *c = db_col_str(st, 0);
		char *end;
		long pid = strtol(c + plen, &end, 10);

		if (strlen(c) <= plen || *end != '\0' || pid <= 0 || pid == (long)getpid())
			continue;
		if (work_process_gone(pid))
			snprintf(dead[ndead++], sizeof dead[0], "%s", c);
	}
	db_done(st);
	for (size_t i = 0; i < ndead; i++) {
		long long n = db_exec(w->db,
		    "UPDATE work_queue SET status = IF(attempts < max_attempts, 'queued', 'failed'), "
		    "finished_at = IF(attempts < max_attempts, NULL, UTC_TIMESTAMP(3)), "
		    "error = IF(attempts < max_attempts, error, 'the process running it died'), "
		    "claimed_by = NULL, available_at = UTC_TIMESTAMP(3) "
		    "WHERE status = 'running' AND claimed_by = ?", "s", dead[i]);

		if (n > 0)
			log_kv(LOG_WARN, "took back work of a dead process", "process=%s items=%lld",
			       dead[i], n);
	}
}

/* Claims whose process stopped heart-beating go back to the queue, or fail
 * for good once they used up their attempts. */
static void recover_stale(struct work_ctx *w)
{
	long long n;

	recover_dead_local(w);

	n = db_exec(w->db,
	    "UPDATE work_queue SET status = 'queued', claimed_by = NULL, "
	    "available_at = UTC_TIMESTAMP(3) "
	    "WHERE status = 'running' AND attempts < max_attempts "
	    "AND heartbeat_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND",
	    "i", (long long)WORK_STALE_S);
	if (n > 0)
		log_kv(LOG_WARN, "requeued abandoned work", "items=%lld", n);
	n = db_exec(w->db,
	    "UPDATE work_queue SET status = 'failed', finished_at = UTC_TIMESTAMP(3), "
	    "error = 'the process running it stopped responding' "
	    "WHERE status = 'running' AND attempts >= max_attempts "
	    "AND heartbeat_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND",
	    "i", (long long)WORK_STALE_S);
	if (n > 0)
		log_kv(LOG_WARN, "gave up on abandoned work", "items=%lld", n);
	db_exec(w->db, "DELETE FROM work_processes "
	               "WHERE heartbeat_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND",
	        "i", (long long)WORK_STALE_S);
}

/* Claim one queued item of this kind.  1 claimed, 0 none, < 0 error. */
static int claim(struct work_ctx *w, const char *kind, struct work_item *it,
                 char *buf, size_t cap)
{
	struct db_stmt *st = NULL;
	int rc;

	if ((rc = db_begin(w->db)) != DB_OK)
		return rc;
	st = db_query(w->db,
	    "SELECT id, kind, ref_id, customer_id, payload, attempts, max_attempts "
	    "FROM work_queue WHERE status = 'queued' AND kind = ? "
	    "AND available_at <= UTC_TIMESTAMP(3) "
	    "ORDER BY available_at, id LIMIT 1 FOR UPDATE SKIP LOCKED", "s", kind);
	if (st == NULL) {
		rc = db_last_err(w->db);
		goto fail;
	}
	if ((rc = db_fetch(st)) <= 0) {
		db_done(st);
		db_rollback(w->db);
		return rc;
	}
	/* Copy the row out: columns die with the statement. */
	{
		size_t off = 0;
		const char *cols[3] = { db_col_str(st, 2),
		    db_col_null(st, 3) ? NULL : db_col_str(st, 3),
		    db_col_null(st, 4) ? NULL : db_col_str(st, 4) };
		const char **dst[3] = { &it->ref_id, &it->customer_id, &it->payload };

		it->id = db_col_ll(st, 0);
		it->kind = kind;
		it->attempts = (int)db_col_ll(st, 5) + 1;
		it->max_attempts = (int)db_col_ll(st, 6);
		for (int i = 0; i < 3; i++) {
			size_t n;

			if (cols[i] == NULL) {
				*dst[i] = NULL;
				continue;
			}
			n = strlen(cols[i]) + 1;
			if (off + n > cap) {
				log_kv(LOG_ERROR, "work item too large", "id=%lld", it->id);
				db_done(st);
				rc = DB_ERR;
				goto fail;
			}
			memcpy(buf + off, cols[i], n);
			*dst[i] = buf + off;
			off += n;
		}
	}
	db_done(st);
	if (db_exec(w->db, "UPDATE work_queue SET status = 'running', "
	    "claimed_by = ?, claimed_at = UTC_TIMESTAMP(3), "
	    "heartbeat_at = UTC_TIMESTAMP(3), attempts = attempts + 1 "
	    "WHERE id = ?", "si", w->process_id, it->id) < 0) {
		rc = db_last_err(w->db);
		goto fail;
	}
	if ((rc = db_commit(w->db)) != DB_OK)
		goto fail;
	return 1;
fail:
	db_rollback(w->db);
	return rc < 0 ? rc : DB_ERR;
}

static void finish(struct work_ctx *w, const struct work_item *it, int ok,
                   const char *err)
{
	if (ok) {
		db_exec(w->db, "UPDATE work_queue SET status = 'done', "
		    "finished_at = UTC_TIMESTAMP(3), error = NULL WHERE id = ?",
		    "i", it->id);
	} else if (it->attempts < it->max_attempts) {
		/* Back off 2^attempts seconds before the next try. */
		db_exec(w->db, "UPDATE work_queue SET status = 'queued', "
		    "claimed_by = NULL, error = ?, available_at = "
		    "UTC_TIMESTAMP(3) + INTERVAL ? SECOND WHERE id = ?",
		    "sii", err, 1LL << (it->attempts < 16 ? it->attempts : 16),
		    it->id);
	} else {
		db_exec(w->db, "UPDATE work_queue SET status = 'failed', "
		    "finished_at = UTC_TIMESTAMP(3), error = ? WHERE id = ?",
		    "si", err, it->id);
	}
}

/* One pass over every kind; returns how many items ran. */
static int run_pass(struct work_ctx *w)
{
	static char buf[1 << 20];
	int ran = 0;

	for (const struct work_kind *k = kinds; k->kind != NULL; k++) {
		struct work_item it;
		char err[512] = "";
		double t0;
		int rc;

		if (work_stopping())
			break;
		if ((rc = claim(w, k->kind, &it, buf, sizeof buf)) <= 0)
			continue;
		t0 = time_mono_ms();
		log_kv(LOG_INFO, "work started", "id=%lld kind=%s ref=%s attempt=%d",
		       it.id, it.kind, it.ref_id, it.attempts);
		rc = k->run(w, &it, err, sizeof err);
		finish(w, &it, rc == 0, err[0] != '\0' ? err : "failed");
		log_kv(rc == 0 ? LOG_INFO : LOG_WARN, "work finished",
		       "id=%lld kind=%s ok=%d ms=%.0f", it.id, it.kind, rc == 0,
		       time_mono_ms() - t0);
		ran++;
	}
	return ran;
}

/* Sleep up to ms, waking at once for SIGTERM/SIGINT. */
static void idle(int ms, const sigset_t *origmask)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	if (!stop_requested)
		ppoll(NULL, 0, &ts, origmask);
}

int work_main(const struct config *cfg)
{
	struct work_ctx w;
	struct sigaction sa;
	sigset_t block, origmask;
	char host[256], process_id[320];
	double last_beat = 0, last_recover = 0;
	bool db_down = false;
	int status = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_flags = 0;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &origmask);

	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	/* Fits work_processes.id and claimed_by (128): a long host name is cut. */
	snprintf(process_id, sizeof process_id, "%.100s:%ld", host, (long)getpid());

	if (mysql_library_init(0, NULL, NULL) != 0) {
		log_error("library initialisation failed");
		return 78;
	}
	w.cfg = cfg;
	w.process_id = process_id;
	if ((w.db = db_new(cfg)) == NULL)
		return 1;
	if (db_ensure(w.db) == DB_ERR_ACCESS) {
		char q[512];

		log_kv(LOG_ERROR, "database refused the configured credentials",
		       "error=%s", log_quote(q, sizeof q, db_error(w.db)));
		status = 78;
		goto out;
	}
	log_kv(LOG_INFO, "work started", "process=%s", process_id);

	while (!stop_requested) {
		double now = time_mono_ms();
		int ran;

		if (db_ensure(w.db) != DB_OK) {
			if (!db_down)
				log_warn("database unavailable, waiting");
			db_down = true;
			idle(cfg->work_poll_ms, &origmask);
			continue;
		}
		if (db_down) {
			log_info("database back");
			db_down = false;
			last_beat = 0;
		}
		if (now - last_beat >= WORK_HEARTBEAT_S * 1000.0) {
			if (register_process(&w, host) == 0)
				last_beat = now;
		}
		if (now - last_recover >= 60000.0) {
			recover_stale(&w);
			last_recover = now;
		}
		ran = run_pass(&w);
		/* The pipeline runner: schedules fire, runs start (runner.h). */
		if (scheduler_tick(&w) > 0)
			ran++;
		if (executor_tick(&w, false) > 0)
			ran++;
		if (ran == 0)
			idle(cfg->work_poll_ms, &origmask);
	}
	log_kv(LOG_INFO, "work stopping", "process=%s", process_id);
	executor_shutdown(&w);
	db_exec(w.db, "DELETE FROM work_processes WHERE id = ?", "s", process_id);
out:
	db_free(w.db);
	mysql_library_end();
	return status;
}
