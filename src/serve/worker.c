/* worker.c - one pre-forked worker: accept, dispatch, answer, repeat.
 *
 * nginx keeps its FastCGI connections open between requests
 * (fastcgi_keep_conn), so a worker holds every connection it accepted until
 * nginx closes it, and waits in one ppoll() on all of them and on the
 * listening socket.  An idle worker thus always takes new connections too:
 * connections nginx keeps idle can never leave a new one waiting in the
 * backlog while a worker sleeps, whatever nginx's keepalive and worker
 * counts are.  A worker that already holds connections leaves a new one to
 * a worker holding fewer for a moment first, so that a kept connection
 * seldom waits behind a busy worker; and one about to work after an answer
 * (ranking a question) first hands the connections it holds to the idle
 * ones, through a socket pair they share.
 *
 * SIGTERM is blocked while a request is being handled and open only inside
 * ppoll(): a stop request lets the current answer finish. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
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
}

static int install_term_handler(sigset_t *termset)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;      /* no SA_RESTART: ppoll() must return */
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

/* Connections one worker holds at most.  nginx keeps at most its upstream
 * `keepalive` idle connections per nginx process; a worker holding this many
 * takes no new ones until one closes. */
#define WORKER_CONNS 64

/* A worker holding n connections lets a new one wait n ms (at most this)
 * for a worker holding none before it takes it itself. */
#define ACCEPT_DEFER_MAX_MS 4

struct worker {
	const struct config *cfg;
	const struct worker_fds *fds;
	struct db *db;
	struct arena *a;
	const struct route *routes;
	size_t nroutes;
	sigset_t waitmask;              /* ppoll()'s mask: SIGTERM open */
	FCGX_Request conn[WORKER_CONNS];
	int nconn;
	long served;
};

/* A connection this worker now holds: accepted, or handed over by another
 * worker, between two requests. */
static void hold_conn(struct worker *w, int fd)
{
	FCGX_Request *fr = &w->conn[w->nconn++];

	FCGX_InitRequest(fr, -1, 0);   /* -1: libfcgi never accepts itself */
	fr->ipcFd = fd;
	/* FCGX_Accept_r first ends the previous request, closing its
	 * connection unless kept: there is none, keep this one. */
	fr->keepConnection = 1;
}

/* Slot i no longer holds a connection: the last slot takes its place.
 * Between requests a FCGX_Request holds no stream pointing back at it, so
 * it may be copied. */
static void drop_conn(struct worker *w, int i)
{
	w->conn[i] = w->conn[--w->nconn];
}

static void take_new_conn(struct worker *w)
{
	int fd = accept4(w->fds->listen, NULL, NULL, SOCK_CLOEXEC);

	if (fd >= 0)
		hold_conn(w, fd);       /* else another worker took it */
}

/* One descriptor in one datagram of the hand-off socket. */
struct fd_msg {
	struct msghdr msg;
	struct iovec iov;
	char byte;                      /* a datagram carries at least one */
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
};

static struct cmsghdr *fd_msg_init(struct fd_msg *m)
{
	memset(m, 0, sizeof *m);
	m->iov = (struct iovec){ .iov_base = &m->byte, .iov_len = 1 };
	m->msg.msg_iov = &m->iov;
	m->msg.msg_iovlen = 1;
	m->msg.msg_control = m->ctl.buf;
	m->msg.msg_controllen = sizeof m->ctl.buf;
	return CMSG_FIRSTHDR(&m->msg);
}

/* Takes one connection another worker handed over, if one is still there. */
static void take_handed_conn(struct worker *w)
{
	struct fd_msg m;
	struct cmsghdr *c;
	int fd;

	fd_msg_init(&m);
	if (recvmsg(w->fds->handoff[1], &m.msg, MSG_CMSG_CLOEXEC) < 0)
		return;                 /* another worker took it */
	c = CMSG_FIRSTHDR(&m.msg);
	if (c == NULL || c->cmsg_level != SOL_SOCKET ||
	    c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	hold_conn(w, fd);
}

/* Before work that follows an answer (ranking a question), the worker gives
 * its kept connections to the others: nginx may send the next request on
 * any of them at once, and it must not wait for this work.  A connection
 * the socket has no room for stays here. */
static void hand_over_conns(struct worker *w)
{
	for (int i = w->nconn - 1; i >= 0; i--) {
		int fd = w->conn[i].ipcFd;
		struct fd_msg m;
		struct cmsghdr *c = fd_msg_init(&m);

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
		if (sendmsg(w->fds->handoff[0], &m.msg, MSG_NOSIGNAL) != 1)
			continue;
		/* The datagram holds the connection now: only this worker's
		 * descriptor goes (close, never shutdown). */
		close(fd);
		drop_conn(w, i);
	}
}

/* What the handler left of the body: the next request on a kept connection
 * must start at its own first record, not in this one's stdin. */
static void drain_body(FCGX_Request *fr)
{
	char buf[16384];

	while (FCGX_GetStr(buf, sizeof buf, fr->in) > 0)
		;
}

/* Reads and answers the request waiting on slot i's connection.  A
 * connection nginx closed (no request, libfcgi closed our end too) or did
 * not ask to keep leaves its slot.  Returns whether a request was served. */
static bool serve_conn(struct worker *w, int i)
{
	FCGX_Request *fr = &w->conn[i];
	req_after_fn after_fn = NULL;
	void *after_arg = NULL;

	if (FCGX_Accept_r(fr) < 0) {
		drop_conn(w, i);
		return false;
	}
	serve_one(fr, w->a, w->cfg, w->db, w->routes, w->nroutes,
	          &after_fn, &after_arg);
	if (fr->keepConnection)
		drain_body(fr);
	FCGX_Finish_r(fr);
	if (fr->ipcFd < 0)
		drop_conn(w, i);
	/* The client has its answer; SIGTERM stays blocked, so a stop
	 * waits for this short work as it waits for a request. */
	if (after_fn != NULL) {
		hand_over_conns(w);
		after_fn(after_arg);
	}
	log_set_request_id(NULL);
	arena_reset(w->a);
	w->served++;
	return true;
}

/* Answers every connection poll found ready, last first so that a dropped
 * slot is refilled from one already looked at; connections handed over
 * meanwhile are the taker's to answer.  Returns how many it served. */
static int serve_ready(struct worker *w, const struct pollfd *pfd, int n)
{
	int served = 0;

	for (int i = n - 1; i >= 0; i--) {
		if (i >= w->nconn)
			break;
		if (pfd[i].revents != 0 && serve_conn(w, i))
			served++;
	}
	return served;
}

/* pfd[0 .. nconn-1]: the connections held; then, when `more`, the
 * hand-off socket and the listening socket.  Returns the count. */
static int poll_set(const struct worker *w, struct pollfd *pfd, bool more)
{
	int n = w->nconn;

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = w->conn[i].ipcFd, .events = POLLIN };
	if (!more || n == WORKER_CONNS)
		return n;
	pfd[n] = (struct pollfd){ .fd = w->fds->handoff[1], .events = POLLIN };
	pfd[n + 1] = (struct pollfd){ .fd = w->fds->listen, .events = POLLIN };
	return n + 2;
}

/* One wait: serve what is ready, or take a connection.  Returns -1 on an
 * error that ends the worker. */
static int serve_round(struct worker *w)
{
	struct pollfd pfd[WORKER_CONNS + 2];
	int n = w->nconn, npfd, rc;

	npfd = poll_set(w, pfd, true);
	rc = ppoll(pfd, (nfds_t)npfd, NULL, &w->waitmask);
	if (rc < 0)
		return errno == EINTR ? 0 : -1;
	if (serve_ready(w, pfd, n) > 0 || w->nconn != n || npfd == n)
		return 0;
	if (pfd[n].revents != 0) {
		take_handed_conn(w);
		return 0;
	}
	if (pfd[n + 1].revents == 0)
		return 0;
	/* Only a new connection: a worker holding fewer may take it. */
	if (n > 0) {
		struct timespec defer = {
			.tv_nsec = (n < ACCEPT_DEFER_MAX_MS ? n : ACCEPT_DEFER_MAX_MS)
			           * 1000000L,
		};

		npfd = poll_set(w, pfd, false);
		rc = ppoll(pfd, (nfds_t)npfd, &defer, &w->waitmask);
		if (rc < 0)
			return errno == EINTR ? 0 : -1;
		if (rc > 0) {
			serve_ready(w, pfd, n);
			return 0;
		}
	}
	take_new_conn(w);
	return 0;
}

/* Before exiting: a request nginx already sent is answered, then each
 * connection is shut down; libfcgi waits for nginx to close its side. */
static void close_conns(struct worker *w)
{
	while (w->nconn > 0) {
		int i = w->nconn - 1;
		struct pollfd p = { .fd = w->conn[i].ipcFd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1 && (!serve_conn(w, i) || i >= w->nconn))
			continue;       /* closed by nginx, or handed over */
		w->conn[i].keepConnection = 0;
		FCGX_Finish_r(&w->conn[i]);
		w->nconn--;
	}
}

int worker_main(const struct config *cfg, const struct worker_fds *fds)
{
	static struct worker w;         /* 64 requests: keep it off the stack */
	sigset_t termset;
	int status = 0, rc;

	w.cfg = cfg;
	w.fds = fds;
	if (install_term_handler(&termset) != 0 ||
	    sigprocmask(SIG_BLOCK, &termset, &w.waitmask) != 0 ||
	    fcntl(fds->listen, F_SETFL, O_NONBLOCK) != 0) {
		log_error("worker set-up failed");
		return 1;
	}
	sigdelset(&w.waitmask, SIGTERM);
	w.a = arena_new();
	w.db = db_new(cfg);
	if (w.a == NULL || w.db == NULL) {
		log_error("out of memory");
		return 1;
	}
	w.routes = routes_table(cfg, &w.nroutes);

	/* Credentials the server refuses will not get better by retrying; an
	 * unreachable server will, and requests meanwhile get a 503. */
	rc = db_ensure(w.db);
	if (rc == DB_ERR_ACCESS) {
		log_kv(LOG_ERROR, "database refused the configured credentials",
		       "error=%s", LOG_Q(db_error(w.db)));
		status = SERVE_EXIT_FATAL;
		goto out;
	}
	if (rc != DB_OK)
		log_kv(LOG_WARN, "database unavailable at start, will retry",
		       "error=%s", LOG_Q(db_error(w.db)));
	announce_ready(fds->ready);

	while (!stop_requested) {
		if (serve_round(&w) != 0) {
			log_kv(LOG_ERROR, "poll failed", "error=%s",
			       LOG_Q(strerror(errno)));
			status = 1;
			break;
		}
		if (cfg->max_requests > 0 && w.served >= cfg->max_requests) {
			log_kv(LOG_INFO, "worker recycled", "requests=%ld", w.served);
			break;
		}
	}
	close_conns(&w);
out:
	db_free(w.db);
	arena_free(w.a);
	return status;
}
