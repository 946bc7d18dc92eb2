/* waiter.c - the waiter: every long poll of the service in one process.
 *
 * A worker that would wait (GET question ?wait, a refresh-schema in sluice
 * work) answers at once with a redirect into /_sluice_wait/ (http/wait.h);
 * nginx proxies that request to this process over a unix socket (HTTP/1.0,
 * one request per connection).  The waiter checks the URI's mac, then
 * holds the connection while the work is not settled: every WAITER_TICK_MS
 * it asks MariaDB, in batches, which of the waited-for rows settled, and
 * answers those (and any whose deadline passed) with the body the worker's
 * own GET would have given.  One poll loop, one database connection, no
 * worker held: a thousand long polls cost a thousand sockets here.
 *
 * A process on this host that settles a row (a worker or sluice work that
 * stored a question's result) also sends a wake (util/wake.h) naming it:
 * the waiting requests for that row are looked at then and there, not at
 * the next tick.  The wake is only a hint; the tick stays, for results
 * stored on another host and for wakes that were lost.
 *
 * The serve master keeps the listening socket and restarts the waiter if it
 * dies; requests that arrive meanwhile wait in the socket's backlog.
 * SIGTERM: every waiting request is answered as it stands, then exit. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/wait.h"
#include "retrieval/retrieval.h"
#include "serve/serve.h"
#include "storage/storage.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/wake.h"

#define WAITER_CLIENTS 4096           /* connections held at once */
#define WAITER_TICK_MS 50             /* how often settled rows are looked for */
#define HEAD_MAX 8192                 /* a request head nginx sends */
#define HEAD_OUT_MAX 384              /* the head of an answer */
#define READ_TIMEOUT_MS 5000          /* for the head, from nginx on the same host */
#define WAKES_PER_TURN 256            /* datagrams read before the sockets get a turn */
#define WOKEN_KEPT 512                /* the last wakes, for requests yet to arrive */

enum cstate { C_FREE, C_READ, C_WAIT, C_WRITE };

struct client {
	enum cstate state;
	int fd;
	char *head;                       /* HEAD_MAX + 1, while reading it */
	size_t hlen;
	struct wait_ref ref;
	const struct wait_kind *kind;
	long long read_by_ms;
	bool settled;
	char *out;
	size_t outlen, outoff;
};

/* What can be waited for: which rows settled (a batch), and the answer. */
struct wait_kind {
	const char *name;
	int (*settled)(struct db *db, struct client **c, size_t n);
	/* 0 with *status and *body; 1: not yet (only when !final); < 0. */
	int (*answer)(struct db *db, const struct wait_ref *ref, bool final,
	              int *status, struct json_object **body);
};

static struct client *clients;        /* WAITER_CLIENTS, the waiter's only */

/* The rows the last WOKEN_KEPT wakes named, oldest overwritten first.  A
 * request arriving for one of them is looked at at once: its row settled
 * before the redirect reached us.  Any other waits for its wake or the
 * tick, without a statement of its own. */
static struct woken {
	char kind[WAKE_KIND_MAX + 1], id[WAKE_ID_MAX + 1];
} *woken;
static size_t woken_next;
static bool tick_blind;               /* a test's: the tick keeps only deadlines */
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- the kinds ------------------------------------------------------------------ */

/* Which of the n waiting clients c settled: the kind's query over the
 * b part of their URIs (a question id, a queue item id). */
static int settled_by(int (*query)(struct db *, const char *const *, size_t, bool *),
                      struct db *db, struct client **c, size_t n)
{
	const char *ids[DB_IN_BATCH] = { NULL };
	bool done[DB_IN_BATCH];
	int rc;

	for (size_t i = 0; i < n; i++)
		ids[i] = c[i]->ref.b;
	if ((rc = query(db, ids, n, done)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		c[i]->settled = done[i];
	return 0;
}

static int question_settled(struct db *db, struct client **c, size_t n)
{
	return settled_by(rag_questions_settled, db, c, n);
}

static int question_answer(struct db *db, const struct wait_ref *ref, bool final,
                           int *status, struct json_object **body)
{
	struct json_object *st;
	int rc = rag_question_wait_answer(db, ref->owner, ref->a, ref->b, status, body);

	/* Before the deadline only a settled question is answered. */
	if (rc == 0 && !final && *status == 200 &&
	    json_object_object_get_ex(*body, "status", &st) &&
	    strcmp(json_object_get_string(st), "processing") == 0) {
		json_object_put(*body);
		*body = NULL;
		return 1;
	}
	return rc;
}

static int refresh_settled(struct db *db, struct client **c, size_t n)
{
	return settled_by(queue_settled, db, c, n);
}

static int refresh_answer(struct db *db, const struct wait_ref *ref, bool final,
                          int *status, struct json_object **body)
{
	return storage_refresh_result(db, ref->owner, ref->a, atoll(ref->b), final,
	                              status, body);
}

#define BATCH DB_IN_BATCH

static const struct wait_kind kinds[] = {
	{ "question", question_settled, question_answer },
	{ "refresh", refresh_settled, refresh_answer },
};

/* ---- connections --------------------------------------------------------------------- */

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->head);
	free(c->out);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

static void respond_raw(struct client *c, int status, const char *body)
{
	size_t blen = strlen(body);
	int n;

	c->out = malloc(blen + HEAD_OUT_MAX);
	if (c->out == NULL) {
		client_close(c);
		return;
	}
	/* The worker's X-Request-Id does not survive nginx's internal
	 * redirect: the waiter says it again. */
	n = snprintf(c->out, HEAD_OUT_MAX, "HTTP/1.0 %d %s\r\nContent-Type: application/json\r\n"
	             "Content-Length: %zu\r\nCache-Control: no-store\r\n"
	             "%s%s%sConnection: close\r\n\r\n", status,
	             status == 200 ? "OK" : status == 202 ? "Accepted" : "Error", blen,
	             c->ref.request_id[0] != '\0' ? "X-Request-Id: " : "", c->ref.request_id,
	             c->ref.request_id[0] != '\0' ? "\r\n" : "");
	memcpy(c->out + n, body, blen);
	c->outlen = (size_t)n + blen;
	c->outoff = 0;
	c->state = C_WRITE;
}

static void respond_json(struct client *c, int status, struct json_object *body)
{
	if (status >= 500 && c->ref.request_id[0] != '\0' &&
	    json_object_is_type(body, json_type_object))
		json_object_object_add(body, "request_id",
		                       json_object_new_string(c->ref.request_id));
	respond_raw(c, status, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
	json_object_put(body);
}

/* Answer c now if it settled (or must: final); else leave it waiting. */
static void try_answer(struct db *db, struct client *c, bool final)
{
	struct json_object *body = NULL;
	int status = 500, rc;

	rc = c->kind->answer(db, &c->ref, final, &status, &body);
	if (rc == 1 && !final)
		return;
	if (rc < 0 || body == NULL) {
		json_object_put(body);
		body = json_object_new_object();
		json_object_object_add(body, "detail",
		                       json_object_new_string("Service temporarily unavailable"));
		respond_json(c, 503, body);
		return;
	}
	respond_json(c, status, body);
}

static bool was_woken(const char *kind, const char *id)
{
	for (size_t i = 0; i < WOKEN_KEPT; i++)
		if (strcmp(woken[i].id, id) == 0 && strcmp(woken[i].kind, kind) == 0)
			return true;
	return false;
}

/* A whole head arrived: take the path off the request line.  wakes_on:
 * the waiter's wake socket is bound. */
static void head_done(struct db *db, struct client *c, bool wakes_on)
{
	char *sp1 = strchr(c->head, ' '), *sp2;
	size_t k;
	bool final;

	if (sp1 == NULL || (sp2 = strchr(sp1 + 1, ' ')) == NULL ||
	    wait_uri_parse(sp1 + 1, (size_t)(sp2 - sp1 - 1), &c->ref) != 0) {
		/* Not written by a worker: nothing to say about it. */
		respond_raw(c, 404, "{\"detail\":\"Not Found\"}");
		return;
	}
	for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		if (strcmp(kinds[k].name, c->ref.kind) == 0)
			c->kind = &kinds[k];
	if (c->kind == NULL) {
		respond_raw(c, 404, "{\"detail\":\"Not Found\"}");
		return;
	}
	c->state = C_WAIT;
	free(c->head);                    /* the request line is in c->ref */
	c->head = NULL;
	/* Settled before the redirect reached us (or, without wakes, maybe
	 * so): answer at once. */
	final = wait_now_ms() >= c->ref.deadline_ms;
	if ((final || !wakes_on || was_woken(c->kind->name, c->ref.b)) &&
	    db_ensure(db) == DB_OK)
		try_answer(db, c, final);
}

static void on_readable(struct db *db, struct client *c, bool wakes_on)
{
	ssize_t n;

	if (c->state == C_WAIT) {
		char b[256];

		/* nginx has nothing more to send: readable means it closed
		 * (the client went away). */
		n = read(c->fd, b, sizeof b);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			client_close(c);
		return;
	}
	n = read(c->fd, c->head + c->hlen, HEAD_MAX - c->hlen);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_close(c);
		return;
	}
	if (n < 0)
		return;
	c->hlen += (size_t)n;
	c->head[c->hlen] = '\0';
	if (strstr(c->head, "\r\n\r\n") != NULL)
		head_done(db, c, wakes_on);
	else if (c->hlen == HEAD_MAX)
		respond_raw(c, 400, "{\"detail\":\"Malformed request\"}");
}

static void on_writable(struct client *c)
{
	ssize_t n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->outoff += (size_t)n;
	if (c->outoff == c->outlen)
		client_close(c);
}

static void accept_all(int listen_fd)
{
	for (;;) {
		struct client *c = NULL;
		int fd;

		for (int i = 0; i < WAITER_CLIENTS && c == NULL; i++)
			if (clients[i].state == C_FREE)
				c = &clients[i];
		if (c == NULL)
			return;               /* full: the rest wait in the backlog */
		fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		memset(c, 0, sizeof *c);
		c->fd = fd;
		if ((c->head = malloc(HEAD_MAX + 1)) == NULL) {
			client_close(c);
			return;
		}
		c->state = C_READ;
		c->read_by_ms = wait_now_ms() + READ_TIMEOUT_MS;
	}
}

/* ---- wakes ------------------------------------------------------------------------------ */

/* "<kind> <id>" settled, says a process on this host: look at the requests
 * waiting for it now.  A wake for a row that did not settle (yet) finds it
 * processing and leaves it waiting, as a tick would. */
static void on_wakes(struct db *db, int wake_fd)
{
	char kind[WAKE_KIND_MAX + 1], id[WAKE_ID_MAX + 1];
	bool up = false, tried = false;

	for (int n = 0; n < WAKES_PER_TURN && wake_recv(wake_fd, kind, id) == 1; n++) {
		long long now = wait_now_ms();

		snprintf(woken[woken_next].kind, sizeof woken->kind, "%s", kind);
		snprintf(woken[woken_next].id, sizeof woken->id, "%s", id);
		woken_next = (woken_next + 1) % WOKEN_KEPT;

		for (int i = 0; i < WAITER_CLIENTS; i++) {
			struct client *c = &clients[i];

			if (c->state != C_WAIT || strcmp(c->kind->name, kind) != 0 ||
			    strcmp(c->ref.b, id) != 0)
				continue;
			if (!tried) {
				up = db_ensure(db) == DB_OK;
				tried = true;
			}
			if (up)
				try_answer(db, c, now >= c->ref.deadline_ms);
		}
	}
}

/* ---- the tick ------------------------------------------------------------------------- */

/* Which waiting requests settled, a batch of one kind at a time; answer
 * those, and those whose deadline passed. */
static void tick(struct db *db)
{
	long long now = wait_now_ms();

	if (db_ensure(db) != DB_OK) {
		/* Nothing can be looked up: only the deadlines are kept. */
		for (int i = 0; i < WAITER_CLIENTS; i++)
			if (clients[i].state == C_WAIT && now >= clients[i].ref.deadline_ms)
				respond_raw(&clients[i], 503, "{\"detail\":\"Service "
				            "temporarily unavailable\"}");
		return;
	}

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		struct client *batch[BATCH];
		size_t n = 0;

		for (int i = 0; i <= WAITER_CLIENTS; i++) {
			struct client *c = i < WAITER_CLIENTS ? &clients[i] : NULL;

			if (c != NULL && c->state == C_WAIT && c->kind == &kinds[k])
				batch[n++] = c;
			if (n == 0 || (n < BATCH && c != NULL))
				continue;
			if (tick_blind || kinds[k].settled(db, batch, n) < 0)
				for (size_t j = 0; j < n; j++)
					batch[j]->settled = false;
			for (size_t j = 0; j < n; j++)
				if (batch[j]->settled || now >= batch[j]->ref.deadline_ms)
					try_answer(db, batch[j], now >= batch[j]->ref.deadline_ms);
			n = 0;
		}
	}
	for (int i = 0; i < WAITER_CLIENTS; i++)
		if (clients[i].state == C_READ && now >= clients[i].read_by_ms)
			client_close(&clients[i]);
}

static int waiting(void)
{
	int n = 0;

	for (int i = 0; i < WAITER_CLIENTS; i++)
		if (clients[i].state == C_WAIT)
			n++;
	return n;
}

int waiter_main(const struct config *cfg, int listen_fd)
{
	struct pollfd *pfd;
	int *idx;
	struct sigaction sa;
	struct db *db;
	double last_tick = 0;
	int wake_fd;

	prctl(PR_SET_NAME, "sluice-wait");
#ifdef SLUICE_TEST_HOOKS
	tick_blind = cfg->wait_test_tick_blind;
#endif
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	clients = calloc(WAITER_CLIENTS, sizeof *clients);
	woken = calloc(WOKEN_KEPT, sizeof *woken);
	pfd = calloc(WAITER_CLIENTS + 2, sizeof *pfd);
	idx = calloc(WAITER_CLIENTS + 2, sizeof *idx);
	if (clients == NULL || woken == NULL || pfd == NULL || idx == NULL ||
	    (db = db_new(cfg)) == NULL)
		return 1;
	for (int i = 0; i < WAITER_CLIENTS; i++)
		clients[i].fd = -1;
	fcntl(listen_fd, F_SETFL, O_NONBLOCK);
	/* Without it every answer waits for a tick, as on another host. */
	if ((wake_fd = wake_bind(cfg, WAKE_WAITER)) < 0)
		log_kv(LOG_WARN, "waiter wakes unavailable: results are found by the tick",
		       "error=%s", LOG_Q(strerror(errno)));
	log_kv(LOG_INFO, "waiter started", "clients_max=%d wakes=%s", WAITER_CLIENTS,
	       wake_fd >= 0 ? "on" : "off");

	while (!stop) {
		double now = time_mono_ms();
		int n = 0, ms;

		pfd[n] = (struct pollfd){ listen_fd, POLLIN, 0 };
		idx[n++] = -1;
		pfd[n] = (struct pollfd){ wake_fd, POLLIN, 0 };  /* -1: ignored */
		idx[n++] = -1;
		for (int i = 0; i < WAITER_CLIENTS; i++) {
			short ev = clients[i].state == C_WRITE ? POLLOUT
			           : clients[i].state != C_FREE ? POLLIN : 0;

			if (ev == 0)
				continue;
			pfd[n] = (struct pollfd){ clients[i].fd, ev, 0 };
			idx[n++] = i;
		}
		ms = waiting() > 0 ? (int)(last_tick + WAITER_TICK_MS - now) : 1000;
		if (poll(pfd, (nfds_t)n, ms < 0 ? 0 : ms) < 0 && errno != EINTR)
			break;
		for (int k = 2; k < n; k++) {
			struct client *c = &clients[idx[k]];

			if (pfd[k].revents == 0 || c->state == C_FREE)
				continue;
			if (c->state == C_WRITE)
				on_writable(c);
			else
				on_readable(db, c, wake_fd >= 0);
		}
		if (pfd[0].revents & POLLIN)
			accept_all(listen_fd);
		if (pfd[1].revents & POLLIN)
			on_wakes(db, wake_fd);
		now = time_mono_ms();
		if (now - last_tick >= WAITER_TICK_MS) {
			last_tick = now;
			if (waiting() > 0)
				tick(db);
		}
	}
	/* Stopping: everyone gets the answer as it stands, then we go. */
	for (int i = 0; i < WAITER_CLIENTS; i++)
		if (clients[i].state == C_WAIT)
			try_answer(db, &clients[i], true);
	for (int i = 0; i < WAITER_CLIENTS; i++) {
		if (clients[i].state == C_WRITE) {
			fcntl(clients[i].fd, F_SETFL, 0);
			while (clients[i].state == C_WRITE)
				on_writable(&clients[i]);
		}
		if (clients[i].state != C_FREE)
			client_close(&clients[i]);
	}
	if (wake_fd >= 0)
		close(wake_fd);
	db_free(db);
	free(clients);
	free(pfd);
	free(idx);
	log_info("waiter stopped");
	return 0;
}
