/* worker.c - one pre-forked worker: accept, dispatch, answer, repeat.
 *
 * nginx keeps its FastCGI connections open between requests
 * (fastcgi_keep_conn), so a worker holds every connection it accepted until
 * nginx closes it, and waits in one epoll on all of them, on the listening
 * socket and on a socket pair the workers share.  An idle worker thus always
 * takes new connections too: connections nginx keeps idle can never leave a
 * new one waiting in the backlog while a worker sleeps, whatever nginx's
 * keepalive and worker counts are.  The shared sockets are registered
 * EPOLLEXCLUSIVE, so the kernel wakes one idle worker for a connection, not
 * all.  A worker about to do slow work inside a request (a connection
 * test, an upload, ranking a question, a password's PBKDF2:
 * req_before_slow_work) first hands the other connections it holds to the
 * idle workers through the socket pair.
 *
 * SIGTERM is blocked while a request is being handled and open only inside
 * epoll_pwait(): a stop request lets the current answer finish. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
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
#include "util/test_hooks.h"
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
	sa.sa_handler = on_term;      /* no SA_RESTART: epoll_pwait() must return */
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

/* Connections one worker holds at most.  nginx keeps at most its upstream
 * `keepalive` idle connections per nginx process; a worker holding this many
 * takes no new ones until one closes. */
#define WORKER_CONNS 64

struct worker {
	const struct config *cfg;
	const struct worker_fds *fds;
	struct db *db;
	struct arena *a;
	const struct route *routes;
	size_t nroutes;
	sigset_t waitmask;              /* epoll_pwait()'s mask: SIGTERM open */
	int ep;                         /* epoll: the connections held, and */
	bool accepting;                 /* ... the shared sockets while not full */
	FCGX_Request conn[WORKER_CONNS];
	int nconn;
	long served;
};

static const char *caller(const struct req *r)
{
	if (r->id.customer_id != NULL)
		return r->id.customer_id;
	if (r->id.user_name != NULL)
		return r->id.user_name;
	return NULL;
}

static void hand_over_conns(struct worker *w, const FCGX_Request *busy);

/* req_before_slow_work here: every connection but the request's own goes. */
struct slow_ctx {
	struct worker *w;
	const FCGX_Request *busy;
};

static void before_slow_work(void *ctx)
{
	struct slow_ctx *c = ctx;

	hand_over_conns(c->w, c->busy);
}

/* Answers the request on connection fr. */
static void serve_one(struct worker *w, FCGX_Request *fr)
{
	struct slow_ctx slow = { .w = w, .busy = fr };
	struct req r;
	int rc;

	memset(&r, 0, sizeof r);
	rc = req_init(&r, w->a, w->cfg, w->db, fr);
	req_take_request_id(&r);
	log_set_request_id(r.request_id);
	if (rc == REQ_OK) {
		r.slow_fn = before_slow_work;
		r.slow_ctx = &slow;
		dispatch(&r, w->routes, w->nroutes);
	} else {
		r.arena = w->a;
		r.out = fr->out;
		resp_detail(&r, 400, "Malformed request");
	}

	log_request(r.method != NULL ? r.method : "-",
	            r.path != NULL ? r.path : "-", r.status,
	            time_mono_ms() - r.started_ms, caller(&r));
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

/* The shared sockets are watched only while this worker can take more. */
static void set_accepting(struct worker *w, bool on)
{
	const int fds[] = { w->fds->listen, w->fds->handoff[1] };

	if (on == w->accepting)
		return;
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
		struct epoll_event ev = {
			.events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = fds[i],
		};

		if (epoll_ctl(w->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fds[i],
		              &ev) != 0)
			log_kv(LOG_ERROR, "epoll_ctl failed", "error=%s",
			       LOG_Q(strerror(errno)));
	}
	w->accepting = on;
}

/* A connection this worker now holds: accepted, or handed over by another
 * worker, between two requests. */
static void hold_conn(struct worker *w, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	FCGX_Request *fr;

	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
		log_kv(LOG_ERROR, "epoll_ctl failed", "error=%s",
		       LOG_Q(strerror(errno)));
		close(fd);
		return;
	}
	fr = &w->conn[w->nconn++];
	FCGX_InitRequest(fr, -1, 0);   /* -1: libfcgi never accepts itself */
	fr->ipcFd = fd;
	/* FCGX_Accept_r first ends the previous request, closing its
	 * connection unless kept: there is none, keep this one. */
	fr->keepConnection = 1;
	if (w->nconn == WORKER_CONNS)
		set_accepting(w, false);
}

/* Slot i no longer holds a connection (closed, which also took it out of
 * the epoll, or handed over): the last slot takes its place.  Only between
 * requests: a FCGX_Request then holds no stream pointing back at it, so it
 * may be copied. */
static void drop_conn(struct worker *w, int i)
{
	w->conn[i] = w->conn[--w->nconn];
	set_accepting(w, true);
}

/* Between requests: the slots whose connection was closed or handed over
 * while a request ran leave. */
static void drop_gone_conns(struct worker *w)
{
	for (int i = w->nconn - 1; i >= 0; i--)
		if (w->conn[i].ipcFd < 0)
			drop_conn(w, i);
}

/* Every connection waiting, while there is room: the kernel may have woken
 * this worker alone for several. */
static void take_new_conns(struct worker *w)
{
	int fd;

	while (w->nconn < WORKER_CONNS &&
	       (fd = accept4(w->fds->listen, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		hold_conn(w, fd);       /* until none is left, or another took it */
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

/* Takes the connections other workers handed over that are still there,
 * while there is room, as take_new_conns does. */
static void take_handed_conns(struct worker *w)
{
	struct fd_msg m;
	struct cmsghdr *c;
	int fd;

	while (w->nconn < WORKER_CONNS) {
		fd_msg_init(&m);
		if (recvmsg(w->fds->handoff[1], &m.msg, MSG_CMSG_CLOEXEC) < 0)
			return;         /* none left, or another worker took it */
		c = CMSG_FIRSTHDR(&m.msg);
		if (c == NULL || c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
			continue;
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
		hold_conn(w, fd);
	}
}

/* Before slow work, the worker gives the connections it holds, all but
 * the busy one, to the others: nginx may send the next
 * request on any of them at once, and it must not wait for this work.  A
 * handed slot is only marked (its descriptor -1): a request may be running,
 * whose FCGX_Request must not move; drop_gone_conns clears the slots after
 * it.  A connection the socket has no room for stays here. */
static void hand_over_conns(struct worker *w, const FCGX_Request *busy)
{
	for (int i = 0; i < w->nconn; i++) {
		FCGX_Request *fr = &w->conn[i];
		int fd = fr->ipcFd;
		struct fd_msg m;
		struct cmsghdr *c;

		if (fr == busy || fd < 0)
			continue;
		c = fd_msg_init(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
		if (sendmsg(w->fds->handoff[0], &m.msg, MSG_NOSIGNAL) != 1)
			continue;
		/* The datagram holds the connection now: only this worker's
		 * descriptor goes (close, never shutdown).  The connection
		 * stays open, so it leaves the epoll by hand. */
		epoll_ctl(w->ep, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
		fr->ipcFd = -1;
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

	if (FCGX_Accept_r(fr) < 0) {
		drop_conn(w, i);
		return false;
	}
	serve_one(w, fr);
	if (fr->keepConnection)
		drain_body(fr);
	FCGX_Finish_r(fr);
	/* Answered: now the password check the request was spared, with no
	 * kept connection left to wait for it. */
	if (auth_renewal_due()) {
		hand_over_conns(w, NULL);
		auth_renew(w->db, w->cfg);
	}
	drop_gone_conns(w);
	log_set_request_id(NULL);
	arena_reset(w->a);
	w->served++;
	return true;
}

/* The slot holding connection fd, or -1: it was closed or handed over
 * while answering an earlier event of the same wait. */
static int slot_of(const struct worker *w, int fd)
{
	for (int i = 0; i < w->nconn; i++)
		if (w->conn[i].ipcFd == fd)
			return i;
	return -1;
}

/* One wait: take the connections handed over and the new ones, if any
 * wait, then answer every connection that called.  Taken first: the kernel
 * woke this worker alone for them (EPOLLEXCLUSIVE), so one left for after a
 * slow request would wait out that request, a request nginx already sent
 * on it included; taken, it is handed on again before the slow work.
 * Returns -1 on an error that ends the worker. */
static int serve_round(struct worker *w)
{
	struct epoll_event ev[WORKER_CONNS + 2];
	int n, timeout = -1;

#ifdef SLUICE_TEST_HOOKS
	if (w->cfg->serve_test_collect_delay_ms > 0) {
		if (epoll_pwait(w->ep, ev, 1, -1, &w->waitmask) < 0)
			return errno == EINTR ? 0 : -1;
		test_hook_pause(w->cfg->serve_test_collect_delay_ms);
		timeout = 0;            /* level-triggered: what woke it is still there */
	}
#endif
	n = epoll_pwait(w->ep, ev, WORKER_CONNS + 2, timeout, &w->waitmask);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	for (int k = 0; k < n; k++) {
		if (ev[k].data.fd == w->fds->handoff[1])
			take_handed_conns(w);
		else if (ev[k].data.fd == w->fds->listen)
			take_new_conns(w);
	}
	/* The shared sockets hold no slot: slot_of passes them over. */
	for (int k = 0; k < n; k++) {
		int i = slot_of(w, ev[k].data.fd);

		if (i >= 0)
			serve_conn(w, i);
	}
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
	    fcntl(fds->listen, F_SETFL, O_NONBLOCK) != 0 ||
	    (w.ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		log_error("worker set-up failed");
		return 1;
	}
	set_accepting(&w, true);
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
