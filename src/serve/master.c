/* master.c - the `sluice serve` master: socket, worker slots, signals.
 *
 * Shaped after nginx's master cycle.  Signal handlers only set flags; the
 * master keeps every signal it cares about blocked and waits for them in
 * ppoll(), which unblocks them atomically for the wait (sigsuspend with a
 * timeout).  After each wake-up it reaps children, respawns the ones that
 * should run, and advances a reload or a shutdown one step.
 *
 *   SIGCHLD      reap; respawn unless stopping (crash loops back off)
 *   SIGTERM/INT  stop accepting, let workers finish their request, exit;
 *                SIGKILL what is left after shutdown_timeout
 *   SIGHUP       re-read the config; start new workers, and stop the old
 *                ones once every new one reports ready on the ready pipe
 *
 * Beside the workers runs one waiter (waiter.c), which holds the long polls
 * nginx proxies to its own socket; the master keeps that socket too, so a
 * waiter restarted (it died, or SIGHUP replaced it) finds the requests that
 * came meanwhile in the backlog.
 *
 * A worker exiting with SERVE_EXIT_FATAL (bad config, credentials refused)
 * stops the master instead of feeding a respawn loop; during a reload it
 * abandons the reload instead, and the old workers go on serving. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <mysql.h>

#include "auth/auth.h"
#include "http/pool.h"
#include "http/wait.h"
#include "retrieval/index_checks.h"
#include "retrieval/pass_share.h"
#include "serve/serve.h"
#include "util/config.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_SLOTS 512                   /* workers of two generations */
#define BACKOFF_MIN_MS 100.0
#define BACKOFF_MAX_MS 5000.0
#define QUICK_DEATH_MS 1000.0           /* a worker dying this young is crashing */

static volatile sig_atomic_t got_chld, got_term, got_hup;

struct slot {
	pid_t pid;                      /* 0 = free */
	unsigned generation;            /* config generation it was started with */
	bool stopping;                  /* sent SIGTERM: do not respawn */
	bool ready;                     /* passed its start-up checks */
	double started_ms;
};

struct master {
	const char *conf_path;
	struct config cfg;              /* current generation */
	unsigned generation;
	unsigned gen_seq;               /* last generation number handed out */
	int listen_fd;
	int handoff[2];                 /* struct worker_fds */
	int wait_fd;                    /* the waiter's socket */
	pid_t waiter;                   /* 0: none running */
	double waiter_after_ms;         /* respawn back-off */
	int ready_fd[2];                /* workers write their pid when ready */
	bool reload_pending;            /* new generation not all ready yet */
	struct config prev_cfg;         /* what serves until then */
	unsigned prev_generation;
	struct slot slots[MAX_SLOTS];
	int want;                       /* workers wanted in the current generation */
	int quick_deaths;               /* consecutive crashes right after start */
	double respawn_after_ms;        /* crash-loop back-off */
	bool shutting_down;
	double kill_at_ms;              /* SIGKILL deadline while shutting down */
	double next_term_ms;            /* re-send SIGTERM (closes the accept race) */
	double term_delay_ms;
	int exit_status;
};

static void on_signal(int sig)
{
	switch (sig) {
	case SIGCHLD: got_chld = 1; break;
	case SIGHUP:  got_hup = 1; break;
	default:      got_term = 1; break;
	}
}

static int install_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block;
	int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		if (sigaction(sigs[i], &sa, NULL) != 0)
			return -1;
		sigaddset(&block, sigs[i]);
	}
	signal(SIGPIPE, SIG_IGN);
	return sigprocmask(SIG_BLOCK, &block, waitmask);
}

/* Bind the unix socket with the configured mode.  A stale socket file left
 * by a crash is removed; a live one (another serve answers) is an error. */
static int open_listen_socket(const char *path, int mode, int backlog)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old_umask;
	int fd = -1, probe = -1;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		log_kv(LOG_ERROR, "listen path too long", "max=%zu",
		       sizeof sa.sun_path - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_kv(LOG_ERROR, "listen path exists and is not a socket",
			       "path=%s", path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa,
		                          sizeof sa) == 0) {
			close(probe);
			log_kv(LOG_ERROR, "another process listens on the socket",
			       "path=%s", path);
			return -1;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}

	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		goto fail;
	/* Create the socket file with no access, then open it up: no window in
	 * which it has wider permissions than configured. */
	old_umask = umask(0777);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		umask(old_umask);
		goto fail;
	}
	umask(old_umask);
	if (chmod(path, (mode_t)mode) != 0 || listen(fd, backlog) != 0)
		goto fail;
	return fd;
fail:
	log_kv(LOG_ERROR, "cannot listen", "path=%s error=%s",
	       LOG_Q(path), LOG_Q(strerror(errno)));
	if (fd >= 0)
		close(fd);
	return -1;
}

static int write_pid_file(const char *path)
{
	char tmp[CONFIG_PATH_MAX + 8], buf[32];
	int fd, n;

	if (path[0] == '\0')
		return 0;
	/* Write then rename, so a reader never sees an empty pid file. */
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		goto fail;
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (write(fd, buf, (size_t)n) != n) {
		close(fd);
		goto fail;
	}
	close(fd);
	if (rename(tmp, path) != 0)
		goto fail;
	return 0;
fail:
	log_kv(LOG_ERROR, "cannot write pid file", "path=%s error=%s",
	       LOG_Q(path), LOG_Q(strerror(errno)));
	return -1;
}

static int live_workers(const struct master *m)
{
	int n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (m->slots[i].pid > 0)
			n++;
	return n;
}

static int current_workers(const struct master *m)
{
	int n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (m->slots[i].pid > 0 && !m->slots[i].stopping &&
		    m->slots[i].generation == m->generation)
			n++;
	return n;
}

static void spawn_worker(struct master *m, const sigset_t *origmask)
{
	struct slot *s = NULL;
	pid_t pid;
	int idx = -1;

	for (int i = 0; i < MAX_SLOTS && s == NULL; i++)
		if (m->slots[i].pid == 0) {
			s = &m->slots[i];
			idx = i;
		}
	if (s == NULL) {
		log_error("no free worker slot");
		return;
	}
	pid = fork();
	if (pid < 0) {
		log_kv(LOG_ERROR, "fork failed", "error=%s",
		       LOG_Q(strerror(errno)));
		m->respawn_after_ms = time_mono_ms() + BACKOFF_MAX_MS;
		return;
	}
	if (pid == 0) {
		/* The worker sets up its own handlers; start from defaults with
		 * the mask the master was started with. */
		signal(SIGCHLD, SIG_DFL);
		signal(SIGHUP, SIG_IGN);        /* reload is the master's job */
		signal(SIGINT, SIG_IGN);        /* ^C reaches the group: master decides */
		sigprocmask(SIG_SETMASK, origmask, NULL);
		close(m->ready_fd[0]);
		close(m->wait_fd);
		pool_slot_set(idx);
		_exit(worker_main(&m->cfg, &(struct worker_fds){
			.listen = m->listen_fd,
			.handoff = { m->handoff[0], m->handoff[1] },
			.ready = m->ready_fd[1],
		}));
	}
	s->pid = pid;
	s->generation = m->generation;
	s->stopping = false;
	s->ready = false;
	s->started_ms = time_mono_ms();
	log_kv(LOG_INFO, "worker started", "worker=%ld generation=%u",
	       (long)pid, m->generation);
}

static void spawn_waiter(struct master *m, const sigset_t *origmask)
{
	pid_t pid = fork();

	if (pid < 0) {
		log_kv(LOG_ERROR, "fork failed", "error=%s", LOG_Q(strerror(errno)));
		m->waiter_after_ms = time_mono_ms() + BACKOFF_MAX_MS;
		return;
	}
	if (pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		sigprocmask(SIG_SETMASK, origmask, NULL);
		close(m->ready_fd[0]);
		close(m->ready_fd[1]);
		close(m->listen_fd);
		close(m->handoff[0]);
		close(m->handoff[1]);
		_exit(waiter_main(&m->cfg, m->wait_fd));
	}
	m->waiter = pid;
	m->waiter_after_ms = time_mono_ms() + BACKOFF_MIN_MS;
	log_kv(LOG_INFO, "waiter started", "waiter=%ld", (long)pid);
}

static void signal_workers(struct master *m, int sig, bool only_stopping)
{
	for (int i = 0; i < MAX_SLOTS; i++) {
		struct slot *s = &m->slots[i];

		if (s->pid <= 0 || (only_stopping && !s->stopping))
			continue;
		kill(s->pid, sig);
	}
}

static void begin_shutdown(struct master *m, int status)
{
	double now = time_mono_ms();

	if (m->shutting_down)
		return;
	m->shutting_down = true;
	m->exit_status = status;
	if (m->reload_pending) {
		m->reload_pending = false;
		explicit_bzero(&m->prev_cfg, sizeof m->prev_cfg);
	}
	m->kill_at_ms = now + m->cfg.shutdown_timeout * 1000.0;
	m->term_delay_ms = 50;
	m->next_term_ms = now + m->term_delay_ms;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (m->slots[i].pid > 0)
			m->slots[i].stopping = true;
	signal_workers(m, SIGTERM, true);
	if (m->waiter > 0)
		kill(m->waiter, SIGTERM);
	log_kv(LOG_INFO, "shutting down", "workers=%d timeout_s=%d",
	       live_workers(m), m->cfg.shutdown_timeout);
}

/* The new generation cannot serve: stop it and go back to the config
 * the old workers run with, which they never stopped doing. */
static void abandon_reload(struct master *m, const char *why)
{
	enum log_level lvl;

	for (int i = 0; i < MAX_SLOTS; i++) {
		struct slot *s = &m->slots[i];

		if (s->pid > 0 && s->generation == m->generation && !s->stopping) {
			s->stopping = true;
			kill(s->pid, SIGTERM);
		}
	}
	m->cfg = m->prev_cfg;
	m->generation = m->prev_generation;
	m->want = config_worker_count(&m->cfg);
	m->reload_pending = false;
	explicit_bzero(&m->prev_cfg, sizeof m->prev_cfg);
	if (log_level_parse(m->cfg.log_level, &lvl) == 0)
		log_set_level(lvl);
	log_kv(LOG_ERROR, "reload abandoned, keeping the running config",
	       "reason=%s generation=%u", LOG_Q(why), m->generation);
}

static void reap(struct master *m)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct slot *s = NULL;
		double now = time_mono_ms();

		if (pid == m->waiter) {
			log_kv(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? LOG_INFO
			       : LOG_WARN, "waiter ended", "waiter=%ld status=%d", (long)pid,
			       status);
			m->waiter = 0;           /* cycle() starts the next one */
			continue;
		}
		for (int i = 0; i < MAX_SLOTS && s == NULL; i++)
			if (m->slots[i].pid == pid) {
				s = &m->slots[i];
				pool_slot_clear(i);  /* what it held is free again */
			}
		if (s == NULL)
			continue;

		if (WIFEXITED(status))
			log_kv(s->stopping || WEXITSTATUS(status) == 0 ?
			       LOG_INFO : LOG_WARN, "worker exited",
			       "worker=%ld status=%d", (long)pid,
			       WEXITSTATUS(status));
		else if (WIFSIGNALED(status))
			log_kv(s->stopping ? LOG_INFO : LOG_WARN, "worker killed",
			       "worker=%ld signal=%d", (long)pid, WTERMSIG(status));

		if (!s->stopping && WIFEXITED(status) &&
		    WEXITSTATUS(status) == SERVE_EXIT_FATAL &&
		    m->reload_pending && s->generation == m->generation) {
			memset(s, 0, sizeof *s);
			abandon_reload(m, "a new worker refused to start (fatal exit)");
			continue;
		} else if (!s->stopping && WIFEXITED(status) &&
		           WEXITSTATUS(status) == SERVE_EXIT_FATAL) {
			log_error("worker reported a fatal error; not respawning");
			begin_shutdown(m, SERVE_EXIT_FATAL);
		} else if (!s->stopping && now - s->started_ms < QUICK_DEATH_MS &&
		           !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			double delay = BACKOFF_MIN_MS;

			for (int k = 0; k < m->quick_deaths && delay < BACKOFF_MAX_MS; k++)
				delay *= 2;
			if (delay > BACKOFF_MAX_MS)
				delay = BACKOFF_MAX_MS;
			m->quick_deaths++;
			m->respawn_after_ms = now + delay;
		} else if (!s->stopping) {
			m->quick_deaths = 0;
		}
		memset(s, 0, sizeof *s);
	}
}

/* SIGHUP: a new generation of workers with the new config, then the old
 * generation is asked to finish.  A config that does not load changes
 * nothing: the old workers keep serving. */
static void reload(struct master *m, const sigset_t *origmask)
{
	struct config next;
	char err[512];
	enum log_level lvl;

	config_defaults(&next);
	if (config_load(m->conf_path, &next, err, sizeof err) != 0 ||
	    config_load_jwt_secret(&next, err, sizeof err) != 0 ||
	    config_load_connection_key(&next, err, sizeof err) != 0) {
		log_kv(LOG_ERROR, "reload refused, keeping the running config",
		       "error=%s", LOG_Q(err));
		explicit_bzero(&next, sizeof next);
		return;
	}
	if (strcmp(next.listen, m->cfg.listen) != 0 ||
	    strcmp(next.wait_listen, m->cfg.wait_listen) != 0 ||
	    next.listen_mode != m->cfg.listen_mode ||
	    next.listen_backlog != m->cfg.listen_backlog ||
	    strcmp(next.pid_file, m->cfg.pid_file) != 0) {
		log_warn("listen, wait_listen, listen_mode, listen_backlog and "
		         "pid_file change only on restart; keeping the running values");
		memcpy(next.listen, m->cfg.listen, sizeof next.listen);
		memcpy(next.wait_listen, m->cfg.wait_listen, sizeof next.wait_listen);
		next.listen_mode = m->cfg.listen_mode;
		next.listen_backlog = m->cfg.listen_backlog;
		memcpy(next.pid_file, m->cfg.pid_file, sizeof next.pid_file);
	}
	if (m->reload_pending)
		abandon_reload(m, "a newer reload replaces it");
	if (log_level_parse(next.log_level, &lvl) == 0)
		log_set_level(lvl);

	m->prev_cfg = m->cfg;
	m->prev_generation = m->generation;
	m->reload_pending = true;
	m->cfg = next;
	explicit_bzero(next.jwt_secret, sizeof next.jwt_secret);
	explicit_bzero(next.connection_key, sizeof next.connection_key);
	m->generation = ++m->gen_seq;
	m->want = config_worker_count(&m->cfg);
	m->quick_deaths = 0;
	m->respawn_after_ms = 0;

	for (int i = 0; i < m->want; i++)
		spawn_worker(m, origmask);
	/* The waiter is replaced too; its socket keeps what comes meanwhile. */
	if (m->waiter > 0)
		kill(m->waiter, SIGTERM);
	log_kv(LOG_INFO, "reloading", "generation=%u workers=%d",
	       m->generation, m->want);
}

static int ready_workers(const struct master *m)
{
	int n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (m->slots[i].pid > 0 && !m->slots[i].stopping &&
		    m->slots[i].ready && m->slots[i].generation == m->generation)
			n++;
	return n;
}

/* Every new worker is ready: retire the previous generation. */
static void finish_reload(struct master *m)
{
	for (int i = 0; i < MAX_SLOTS; i++) {
		struct slot *s = &m->slots[i];

		if (s->pid > 0 && s->generation != m->generation && !s->stopping) {
			s->stopping = true;
			kill(s->pid, SIGTERM);
		}
	}
	m->reload_pending = false;
	explicit_bzero(&m->prev_cfg, sizeof m->prev_cfg);
	log_kv(LOG_INFO, "reloaded", "generation=%u workers=%d",
	       m->generation, m->want);
}

/* Read the pids of workers that passed their start-up checks. */
static void read_ready(struct master *m)
{
	pid_t pids[64];
	ssize_t n;

	while ((n = read(m->ready_fd[0], pids, sizeof pids)) > 0)
		for (size_t k = 0; k < (size_t)n / sizeof pids[0]; k++)
			for (int i = 0; i < MAX_SLOTS; i++)
				if (m->slots[i].pid == pids[k])
					m->slots[i].ready = true;
}

/* How long ppoll may sleep before the master has something to do. */
static int wait_ms(const struct master *m, double now)
{
	double t = 60000;

	if (m->shutting_down) {
		t = m->next_term_ms - now;
		if (m->kill_at_ms - now < t)
			t = m->kill_at_ms - now;
	} else if (current_workers(m) < m->want) {
		t = m->respawn_after_ms - now;
	} else if (m->waiter == 0) {
		t = m->waiter_after_ms - now;
	}
	/* Old-generation workers still draining get TERM again now and then. */
	if (!m->shutting_down && live_workers(m) > current_workers(m) && t > 200)
		t = 200;
	return t < 0 ? 0 : (int)t + 1;
}

static void cycle(struct master *m, const sigset_t *origmask)
{
	for (;;) {
		double now = time_mono_ms();
		int ms = wait_ms(m, now);
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
		struct pollfd pfd = { m->ready_fd[0], POLLIN, 0 };

		if (!(got_chld || got_term || got_hup))
			ppoll(&pfd, 1, &ts, origmask);
		read_ready(m);

		if (got_chld) {
			got_chld = 0;
			reap(m);
		}
		if (got_term) {
			got_term = 0;
			begin_shutdown(m, 0);
		}
		if (got_hup) {
			got_hup = 0;
			if (!m->shutting_down)
				reload(m, origmask);
		}
		if (m->reload_pending && ready_workers(m) >= m->want)
			finish_reload(m);

		now = time_mono_ms();
		if (m->shutting_down) {
			if (live_workers(m) == 0 && m->waiter == 0)
				return;
			if (now >= m->kill_at_ms) {
				log_kv(LOG_WARN, "shutdown timeout, killing workers",
				       "workers=%d", live_workers(m));
				signal_workers(m, SIGKILL, false);
				if (m->waiter > 0)
					kill(m->waiter, SIGKILL);
				m->kill_at_ms = now + 60000;   /* then just reap */
			} else if (now >= m->next_term_ms) {
				/* A worker between its last check and accept() may
				 * have missed the first signal: repeat it, backing off. */
				signal_workers(m, SIGTERM, true);
				m->term_delay_ms *= 2;
				m->next_term_ms = now + m->term_delay_ms;
			}
			continue;
		}
		if (live_workers(m) > current_workers(m))
			signal_workers(m, SIGTERM, true);
		if (m->waiter == 0 && now >= m->waiter_after_ms)
			spawn_waiter(m, origmask);
		while (current_workers(m) < m->want && now >= m->respawn_after_ms &&
		       live_workers(m) < MAX_SLOTS) {
			int before = current_workers(m);

			spawn_worker(m, origmask);
			if (current_workers(m) == before)
				break;
		}
	}
}

/* Create the storage area's top directory when it is missing, so a fresh
 * install is healthy without a manual step; its parent must exist. */
static void make_storage_root(const char *path)
{
	if (path[0] == '\0' || mkdir(path, 0750) == 0 || errno == EEXIST)
		return;
	log_kv(LOG_WARN, "cannot create storage_root", "path=%s error=%s",
	       LOG_Q(path), LOG_Q(strerror(errno)));
}

int serve_main(const char *conf_path)
{
	static struct master m;     /* large: keep it off the stack */
	char wait_path[CONFIG_PATH_MAX + 8];
	sigset_t origmask;
	char err[512];
	enum log_level lvl;

	m.conf_path = conf_path;
	m.listen_fd = -1;
	m.wait_fd = -1;
	config_defaults(&m.cfg);
	if (config_load(conf_path, &m.cfg, err, sizeof err) != 0 ||
	    config_load_jwt_secret(&m.cfg, err, sizeof err) != 0 ||
	    config_load_connection_key(&m.cfg, err, sizeof err) != 0) {
		log_kv(LOG_ERROR, "cannot start", "error=%s", LOG_Q(err));
		return SERVE_EXIT_FATAL;
	}
	if (log_level_parse(m.cfg.log_level, &lvl) == 0)
		log_set_level(lvl);

	/* Library set-up happens once, before fork, as both libraries ask. */
	if (mysql_library_init(0, NULL, NULL) != 0 || FCGX_Init() != 0) {
		log_error("library initialisation failed");
		return SERVE_EXIT_FATAL;
	}
	if (install_signals(&origmask) != 0) {
		log_kv(LOG_ERROR, "cannot install signal handlers",
		       "error=%s", LOG_Q(strerror(errno)));
		return 1;
	}
	config_wait_listen(&m.cfg, wait_path, sizeof wait_path);
	if ((m.listen_fd = open_listen_socket(m.cfg.listen, m.cfg.listen_mode,
	                                      m.cfg.listen_backlog)) < 0)
		return SERVE_EXIT_FATAL;
	/* Long polls wait in the waiter, never in a worker; the key proves a
	 * redirect there came from a worker (http/wait.h). */
	if ((m.wait_fd = open_listen_socket(wait_path, m.cfg.listen_mode,
	                                    m.cfg.listen_backlog)) < 0 ||
	    wait_key_init() != 0 || pool_init(MAX_SLOTS) != 0) {
		unlink(m.cfg.listen);
		return SERVE_EXIT_FATAL;
	}
	if (write_pid_file(m.cfg.pid_file) != 0) {
		unlink(m.cfg.listen);
		unlink(wait_path);
		return SERVE_EXIT_FATAL;
	}

	if (pipe2(m.ready_fd, O_CLOEXEC) != 0 ||
	    fcntl(m.ready_fd[0], F_SETFL, O_NONBLOCK) != 0) {
		log_kv(LOG_ERROR, "cannot create the ready pipe", "error=%s",
		       LOG_Q(strerror(errno)));
		return 1;
	}
	/* The master holds both ends for its lifetime: connections in transit
	 * between workers outlive any one worker, and a reload's workers take
	 * them too. */
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	               m.handoff) != 0) {
		log_kv(LOG_ERROR, "cannot create the hand-off socket", "error=%s",
		       LOG_Q(strerror(errno)));
		return 1;
	}
	make_storage_root(m.cfg.storage_root);
	/* Before any fork: every worker, of every reload, shares them. */
	if (auth_shared_init() != 0) {
		log_kv(LOG_ERROR, "cannot map the shared Basic tables", "error=%s",
		       LOG_Q(strerror(errno)));
		return 1;
	}
	/* Without it each worker ranks its questions alone. */
	if (pass_share_init() != 0)
		log_kv(LOG_WARN, "cannot map the board of shared passes", "error=%s",
		       LOG_Q(strerror(errno)));
	/* Without it each worker checks every index file it opens itself. */
	if (index_checks_init() != 0)
		log_kv(LOG_WARN, "cannot map the table of checked index files", "error=%s",
		       LOG_Q(strerror(errno)));

	m.generation = m.gen_seq = 1;
	m.want = config_worker_count(&m.cfg);
	log_kv(LOG_INFO, "serve started", "listen=%s workers=%d version=%s",
	       m.cfg.listen, m.want, PACKAGE_VERSION);
	cycle(&m, &origmask);

	close(m.listen_fd);
	unlink(m.cfg.listen);
	close(m.handoff[0]);
	close(m.handoff[1]);
	close(m.wait_fd);
	unlink(wait_path);
	if (m.cfg.pid_file[0] != '\0')
		unlink(m.cfg.pid_file);
	mysql_library_end();
	log_kv(LOG_INFO, "serve stopped", "status=%d", m.exit_status);
	return m.exit_status;
}
