/* worker.c - one pre-forked worker: accept, dispatch, answer, repeat.
 *
 * SIGTERM is blocked while a request is being handled and open only around
 * accept(): a stop request lets the current answer finish, and the handler
 * calls FCGX_ShutdownPending() so an interrupted accept is not retried. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/request.h"
#include "http/response.h"
#include "http/router.h"
#include "serve/routes.h"
#include "serve/serve.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/log.h"
#include "util/timeutil.h"

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
	FCGX_ShutdownPending();
}

static int install_term_handler(sigset_t *termset)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;      /* no SA_RESTART: accept() must return */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(termset);
	sigaddset(termset, SIGTERM);
	return 0;
}

static int authenticate(struct req *r, const struct route *route)
{
	switch (route->auth) {
	case ROUTE_AUTH_JWT:
		return auth_jwt_or_reply(r, route->permission);
	case ROUTE_AUTH_BASIC:
		return auth_basic_or_reply(r);
	case ROUTE_AUTH_HEALTH:
		return auth_health_or_reply(r);
	case ROUTE_AUTH_NONE:
	default:
		return 0;
	}
}

static void dispatch(struct req *r, const struct route *routes, size_t nroutes)
{
	struct route_match m;
	/* HEAD is GET without the body, which nginx drops by itself. */
	const char *method = strcmp(r->method, "HEAD") == 0 ? "GET" : r->method;

	switch (router_match(routes, nroutes, method, r->path, &m)) {
	case ROUTE_NOT_FOUND:
		resp_detail(r, 404, "Not Found");
		return;
	case ROUTE_BAD_METHOD:
		resp_header(r, "Allow", m.allow);
		resp_detail(r, 405, "Method Not Allowed");
		return;
	case ROUTE_FOUND:
		break;
	}

	r->nparams = m.nparams;
	for (size_t i = 0; i < m.nparams; i++) {
		r->param_name[i] = arena_strndup(r->arena, m.params[i].name,
		                                 m.params[i].name_len);
		r->param_value[i] = arena_strndup(r->arena, m.params[i].value,
		                                  m.params[i].value_len);
	}
	if (authenticate(r, m.route) != 0)
		return;
	m.route->handler(r);
	if (r->status == 0) {
		log_kv(LOG_ERROR, "handler returned without answering",
		       "path=%s", m.route->pattern);
		resp_detail(r, 500, "Internal Server Error");
	}
}

static const char *caller(const struct req *r)
{
	if (r->id.customer_id != NULL)
		return r->id.customer_id;
	if (r->id.user_name != NULL)
		return r->id.user_name;
	return NULL;
}

/* Answers one request; returns the work it left for after the answer
 * (req_after), whose argument lives in the arena a. */
static void serve_one(FCGX_Request *fr, struct arena *a,
                      const struct config *cfg, struct db *db,
                      const struct route *routes, size_t nroutes,
                      req_after_fn *after_fn, void **after_arg)
{
	struct req r;
	int rc;

	memset(&r, 0, sizeof r);
	rc = req_init(&r, a, cfg, db, fr);
	req_take_request_id(&r);
	log_set_request_id(r.request_id);
	if (rc == REQ_OK) {
		dispatch(&r, routes, nroutes);
	} else {
		r.arena = a;
		r.out = fr->out;
		resp_detail(&r, 400, "Malformed request");
	}

	log_request(r.method != NULL ? r.method : "-",
	            r.path != NULL ? r.path : "-", r.status,
	            time_mono_ms() - r.started_ms, caller(&r));
	*after_fn = r.after_fn;
	*after_arg = r.after_arg;
	req_finish(&r);
}

/* Tell the master this worker got through its start-up checks: a reload
 * retires the old workers only once the new ones have.  A pid is smaller
 * than PIPE_BUF, so the write is atomic among all workers. */
static void announce_ready(int ready_fd)
{
	pid_t pid = getpid();

	if (ready_fd >= 0 && write(ready_fd, &pid, sizeof pid) != sizeof pid)
		log_warn("cannot tell the master this worker is ready");
}

int worker_main(const struct config *cfg, int listen_fd, int ready_fd)
{
	FCGX_Request fr;
	struct arena *a = NULL;
	struct db *db = NULL;
	const struct route *routes;
	size_t nroutes;
	sigset_t termset;
	long served = 0;
	int status = 0, rc;

	if (install_term_handler(&termset) != 0 ||
	    FCGX_InitRequest(&fr, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		log_error("worker set-up failed");
		return 1;
	}
	a = arena_new();
	db = db_new(cfg);
	if (db == NULL) {
		log_error("out of memory");
		return 1;
	}
	routes = routes_table(cfg, &nroutes);

	/* Credentials the server refuses will not get better by retrying; an
	 * unreachable server will, and requests meanwhile get a 503. */
	rc = db_ensure(db);
	if (rc == DB_ERR_ACCESS) {
		log_kv(LOG_ERROR, "database refused the configured credentials",
		       "error=%s", LOG_Q(db_error(db)));
		status = SERVE_EXIT_FATAL;
		goto out;
	}
	if (rc != DB_OK)
		log_kv(LOG_WARN, "database unavailable at start, will retry",
		       "error=%s", LOG_Q(db_error(db)));
	announce_ready(ready_fd);

	while (!stop_requested) {
		req_after_fn after_fn = NULL;
		void *after_arg = NULL;

		sigprocmask(SIG_UNBLOCK, &termset, NULL);
		if (stop_requested)
			break;
		rc = FCGX_Accept_r(&fr);
		sigprocmask(SIG_BLOCK, &termset, NULL);
		if (rc < 0) {
			if (stop_requested || rc == -EINTR || errno == EINTR)
				continue;
			log_kv(LOG_ERROR, "accept failed", "error=%d", rc);
			status = 1;
			break;
		}
		serve_one(&fr, a, cfg, db, routes, nroutes, &after_fn, &after_arg);
		FCGX_Finish_r(&fr);
		/* The client has its answer; SIGTERM stays blocked, so a stop
		 * waits for this short work as it waits for a request. */
		if (after_fn != NULL)
			after_fn(after_arg);
		log_set_request_id(NULL);
		arena_reset(a);

		if (cfg->max_requests > 0 && ++served >= cfg->max_requests) {
			log_kv(LOG_INFO, "worker recycled", "requests=%ld", served);
			break;
		}
	}
out:
	FCGX_Free(&fr, 0);
	db_free(db);
	arena_free(a);
	return status;
}
