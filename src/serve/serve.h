/* serve.h - `sluice serve`: the master process and its pre-forked workers.
 *
 * The master owns the FastCGI listening socket and the worker slots; it
 * never answers a request.  Each worker serves the FastCGI connections nginx
 * keeps open to it and takes new ones from the shared socket whenever idle
 * (worker.c), holds its own MariaDB connection, and serves requests until
 * told to stop or until max_requests. */
#ifndef SLUICE_SERVE_H
#define SLUICE_SERVE_H

struct config;

/* Exit status of a worker (and of serve) that must not be restarted:
 * bad configuration or credentials the database refuses (EX_CONFIG). */
#define SERVE_EXIT_FATAL 78

/* Run the master until SIGTERM/SIGINT.  conf_path is re-read on SIGHUP.
 * Returns the process exit status. */
int serve_main(const char *conf_path);

/* The descriptors the master gives each worker. */
struct worker_fds {
	int listen;             /* the FastCGI socket nginx connects to */
	/* A datagram socket pair every worker shares: a worker about to be busy
	 * after an answer sends its kept connections into [0], and an idle one
	 * takes them from [1] (worker.c). */
	int handoff[2];
	int ready;              /* the worker writes its pid here once ready
	                         * (-1: nobody asks) */
};

/* Run one worker; returns its exit status. */
int worker_main(const struct config *cfg, const struct worker_fds *fds);

/* Run the waiter (waiter.c) on listen_fd, the socket nginx proxies long
 * polls to; returns its exit status. */
int waiter_main(const struct config *cfg, int listen_fd);

#endif
