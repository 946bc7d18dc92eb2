/* serve.h - `sluice serve`: the master process and its pre-forked workers.
 *
 * The master owns the FastCGI listening socket and the worker slots; it
 * never answers a request.  Each worker blocks in accept() on the shared
 * socket (the kernel wakes one), holds its own MariaDB connection, and
 * serves requests until told to stop or until max_requests. */
#ifndef SLUICE_SERVE_H
#define SLUICE_SERVE_H

struct config;

/* Exit status of a worker (and of serve) that must not be restarted:
 * bad configuration or credentials the database refuses (EX_CONFIG). */
#define SERVE_EXIT_FATAL 78

/* Run the master until SIGTERM/SIGINT.  conf_path is re-read on SIGHUP.
 * Returns the process exit status. */
int serve_main(const char *conf_path);

/* Run one worker on listen_fd; returns its exit status.  The worker writes
 * its pid to ready_fd once its start-up checks passed (-1: nobody asks). */
int worker_main(const struct config *cfg, int listen_fd, int ready_fd);

/* Run the waiter (waiter.c) on listen_fd, the socket nginx proxies long
 * polls to; returns its exit status. */
int waiter_main(const struct config *cfg, int listen_fd);

#endif
