/* singer.c - the singer connector: run the Singer tap named by
 * input.plugin and load the records it writes.
 *
 * The tap is an executable file in the singer_taps_dir directory, run as
 *
 *     TAP --config config.json [--state state.json] [--catalog catalog.json]
 *
 * in a private temporary directory (mode 0700, the files 0600, all removed
 * afterwards) that is also its working, HOME and TMPDIR directory.  It gets
 * a minimal environment, /dev/null as stdin, no other descriptor of ours,
 * its own process group (so it and its children can be stopped together)
 * and SIGKILL when the job process dies.
 *
 * stdout carries one Singer message per line:
 *   SCHEMA  creates (or widens) the stream's table from its JSON Schema;
 *   RECORD  becomes a row (an upsert on key_properties when the stream has
 *           them, else an appended row);
 *   STATE   is remembered; the latest one is saved (state_save_singer) in
 *           the same commit as every record written before it.
 * Commits happen at the first STATE after singer_commit_rows uncommitted
 * rows, before any DDL, and at the end once the tap has exited 0.  A tap
 * that exits non-zero, writes a line that is not a JSON object or breaks
 * its schema fails the task: the tap is stopped and the rows since the last
 * commit are rolled back, so the saved state always trails the data.
 * stderr lines go to the run log (bounded in length and number). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/connectors/dest.h"
#include "util/config.h"
#include "util/str.h"

#define SINGER_PLUGIN_MAX 128        /* bytes of a tap's file name */
#define SINGER_STREAMS_MAX 1000
#define SINGER_COLUMNS_MAX 4000
#define SINGER_JSON_DEPTH 64
#define SINGER_BATCH_ROWS 1000       /* rows per INSERT statement */
#define SINGER_READ_CHUNK 65536
#define SINGER_ERR_LINE_MAX 1000     /* bytes of a stderr line kept */
#define SINGER_ERR_LINES_LOGGED 1000 /* stderr lines written to the run log */
#define SINGER_LOG_SNIPPET 300       /* bytes of a state shown in the log */
#define SINGER_STOP_WAIT_MS 2000     /* SIGTERM to SIGKILL */
#define SINGER_POLL_MS 500
#define SINGER_EXIT_GRACE_MS 5000    /* output left open after the tap exited */

#define LOGI(s, ...) do { if ((s)->env->log != NULL) \
	run_log_info((s)->env->log, __VA_ARGS__); } while (0)
#define LOGW(s, ...) do { if ((s)->env->log != NULL) \
	run_log_warning((s)->env->log, __VA_ARGS__); } while (0)

struct stream {
	char *name;
	char table[DEST_NAME_MAX];
	char *schema_text;           /* the SCHEMA message's schema and keys */
	struct dest_col *cols;
	const char **colnames;
	size_t ncols;
	struct dest_writer *wr;
	const char **vals;
	size_t *lens;
	char (*scratch)[DEST_DATETIME_LEN];
	long long records;
	bool warned_extra;
};

struct singer {
	const struct job_spec *job;
	struct task_env *env;
	const char *schema;          /* destination schema */
	const char *main_stream;     /* input.table_name: loads into dest_table */
	char dir[PATH_MAX];          /* private temporary directory, "" = none */
	pid_t pid;                   /* the tap, -1 when none was started */
	bool reaped;                 /* its exit status is in status */
	int status;
	struct timespec reaped_at;
	int out_fd, err_fd;
	struct stream *streams;
	size_t nstreams;
	bool in_txn;
	long long pending_rows;      /* written since the last commit */
	long long committed_rows;
	char *state;                 /* latest STATE value (JSON text) */
	bool state_unsaved;
	long long line_no;
	struct json_tokener *tok;
	/* stderr */
	char ebuf[SINGER_ERR_LINE_MAX + 1];
	size_t elen;
	bool etrunc;
	long long elines;
	char last_err[SINGER_ERR_LINE_MAX + 1];
	bool saw_oom;
	bool warned_types[4];
};

/* ==== small helpers ====================================================== */

/* s[0..n) as one printable line of valid UTF-8: invalid bytes and control
 * characters become '?'; cut with "..." to fit cap. */
static void printable(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0, i = 0;

	if (cap == 0)
		return;
	while (i < n && o + 4 < cap) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 :
		             (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
		bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2) &&
		          !(len == 4 && c > 0xF4);

		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
		if (ok && len == 3) {
			unsigned char c1 = (unsigned char)s[i + 1];

			ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
		}
		if (ok && len == 4) {
			unsigned char c1 = (unsigned char)s[i + 1];

			ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
		}
		if (!ok || (len == 1 && (c < 0x20 || c == 0x7F) && c != '\t')) {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, s + i, len);
		o += len;
		i += len;
	}
	if (i < n && cap >= 4) {
		if (o + 3 >= cap)
			o = cap - 4;
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

static const char *json_text(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	                                      JSON_C_TO_STRING_NOSLASHESCAPE);
}

static const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* A tap's file name: directly in the taps directory (str_file_name_ok). */
static bool plugin_ok(const char *p)
{
	return str_file_name_ok(p, SINGER_PLUGIN_MAX);
}

/* ==== the private directory and its files ================================ */

static int rm_entry(const char *path, const struct stat *st, int type,
                    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path) == 0 || errno == ENOENT ? 0 : 0;
	return unlink(path) == 0 || errno == ENOENT ? 0 : 0;
}

static void dir_remove(struct singer *s)
{
	if (s->dir[0] == '\0')
		return;
	nftw(s->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	rmdir(s->dir);
	s->dir[0] = '\0';
}

static int dir_make(struct singer *s, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	if (tmp == NULL || tmp[0] != '/')
		tmp = "/tmp";
	n = snprintf(s->dir, sizeof s->dir, "%s/sluice-singer-XXXXXX", tmp);
	if (n < 0 || (size_t)n >= sizeof s->dir || mkdtemp(s->dir) == NULL) {
		s->dir[0] = '\0';
		str_errf(err, errlen, "cannot create a temporary directory for the tap");
		return -1;
	}
	return 0;
}

/* path = dir/name; text written 0600, never through a symlink. */
static int file_write(struct singer *s, const char *name, const char *text,
                      char *path, size_t cap, char *err, size_t errlen)
{
	size_t len = strlen(text), off = 0;
	int fd, n;

	n = snprintf(path, cap, "%s/%s", s->dir, name);
	if (n < 0 || (size_t)n >= cap)
		goto fail;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			goto fail;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0)
		goto fail;
	return 0;
fail:
	str_errf(err, errlen, "cannot write the tap's %s", name);
	return -1;
}

/* The tap's config: input.config, plus the connection's fields (host,
 * port, user, password, dbname, database, and its options) under names the
 * input's config does not set itself. */
static char *config_text(const struct job_spec *job, char *err, size_t errlen)
{
	struct json_object *in = NULL, *cfg = NULL;
	char *text = NULL;

	if (json_object_object_get_ex(job->input, "config", &in) && in != NULL) {
		if (!json_object_is_type(in, json_type_object)) {
			str_errf(err, errlen, "input.config must be an object");
			return NULL;
		}
		if (json_object_deep_copy(in, &cfg, NULL) != 0) {
			str_errf(err, errlen, "out of memory");
			return NULL;
		}
	} else if ((cfg = json_object_new_object()) == NULL) {
		str_errf(err, errlen, "out of memory");
		return NULL;
	}
	if (job->has_source) {
		const struct source_conn *c = &job->source;
		struct { const char *k; struct json_object *v; } add[] = {
			{ "host", json_object_new_string(c->host) },
			{ "port", json_object_new_int(c->port) },
			{ "user", json_object_new_string(c->user) },
			{ "password", json_object_new_string(c->password) },
			{ "dbname", json_object_new_string(c->database) },
			{ "database", json_object_new_string(c->database) },
		};

		for (size_t i = 0; i < sizeof add / sizeof add[0]; i++) {
			if (json_object_object_get_ex(cfg, add[i].k, NULL))
				json_object_put(add[i].v);
			else
				json_object_object_add(cfg, add[i].k, add[i].v);
		}
		if (c->options != NULL && json_object_is_type(c->options, json_type_object)) {
			json_object_object_foreach(c->options, k, v) {
				if (!json_object_object_get_ex(cfg, k, NULL))
					json_object_object_add(cfg, k, json_object_get(v));
			}
		}
	}
	text = strdup(json_text(cfg));
	json_object_put(cfg);
	if (text == NULL)
		str_errf(err, errlen, "out of memory");
	return text;
}

/* ==== the tap process ====================================================== */

static void child_exec(const char *path, char *const argv[], const char *dir,
                       int out_w, int err_w, pid_t parent, int memory_mb)
{
	struct rlimit rl;
	char home[PATH_MAX + 8], tmp[PATH_MAX + 8];
	char *envp[] = {
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		home, tmp, NULL
	};
	sigset_t none;
	int fd;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	/* The job's memory is the tap's limit too.  The job process has the
	 * same limit already, except in a sanitizer build, where its limit
	 * sits on top of the sanitizer's reservations: never raise it here. */
	if (memory_mb > 0 && getrlimit(RLIMIT_AS, &rl) == 0) {
		rlim_t want = (rlim_t)memory_mb << 20;

		if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > want)
			rl.rlim_cur = want;
		if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want)
			rl.rlim_max = want;
		setrlimit(RLIMIT_AS, &rl);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	fd = open("/dev/null", O_RDONLY);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		_exit(127);
	/* Nothing of ours (the database connections) reaches the tap. */
	{
		long max = sysconf(_SC_OPEN_MAX);

		if (max < 0 || max > 65536)
			max = 65536;
		for (long i = 3; i < max; i++)
			close((int)i);
	}
	snprintf(home, sizeof home, "HOME=%s", dir);
	snprintf(tmp, sizeof tmp, "TMPDIR=%s", dir);
	if (chdir(dir) != 0)
		_exit(127);
	execve(path, argv, envp);
	dprintf(2, "cannot run the tap: %s\n", strerror(errno));
	_exit(127);
}

static int tap_start(struct singer *s, const char *path, char *const argv[],
                     char *err, size_t errlen)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	pid_t parent = getpid();

	if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0)
		goto fail;
	s->pid = fork();
	if (s->pid < 0)
		goto fail;
	if (s->pid == 0)
		child_exec(path, argv, s->dir, outp[1], errp[1], parent,
		           s->job->memory_mb);
	setpgid(s->pid, s->pid);     /* either side may win the race */
	close(outp[1]);
	close(errp[1]);
	s->out_fd = outp[0];
	s->err_fd = errp[0];
	return 0;
fail:
	str_errf(err, errlen, "cannot start the tap: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	s->pid = -1;
	return -1;
}

static long long ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000LL + (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* Reap the tap if it has exited (blocking when wait).  1 reaped, 0 not yet. */
static int tap_reap(struct singer *s, bool wait)
{
	pid_t r;

	if (s->pid <= 0 || s->reaped)
		return 1;
	while ((r = waitpid(s->pid, &s->status, wait ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (r == s->pid || (r < 0 && errno == ECHILD)) {
		if (r < 0)
			s->status = W_EXITCODE(127, 0);
		s->reaped = true;
		clock_gettime(CLOCK_MONOTONIC, &s->reaped_at);
		return 1;
	}
	return 0;
}

/* Stop the tap's process group: SIGTERM, then SIGKILL; reap the tap. */
static void tap_stop(struct singer *s)
{
	if (s->pid <= 0)
		return;
	if (!s->reaped) {
		struct timespec t0;

		kill(-s->pid, SIGTERM);
		kill(s->pid, SIGTERM);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!tap_reap(s, false) && ms_since(&t0) < SINGER_STOP_WAIT_MS)
			nanosleep(&(struct timespec){ 0, 20 * 1000000L }, NULL);
		if (!s->reaped) {
			kill(s->pid, SIGKILL);
			tap_reap(s, true);
		}
	}
	kill(-s->pid, SIGKILL);     /* anything it left behind in its group */
	s->pid = -1;
}

/* ==== stderr ================================================================ */

static bool oom_text(const char *t)
{
	static const char *const pat[] = {
		"out of memory", "cannot allocate memory", "memoryerror",
		"bad_alloc", "outofmemory",
	};
	char low[SINGER_ERR_LINE_MAX + 1];
	size_t i;

	for (i = 0; t[i] != '\0' && i < sizeof low - 1; i++)
		low[i] = (char)tolower((unsigned char)t[i]);
	low[i] = '\0';
	for (i = 0; i < sizeof pat / sizeof pat[0]; i++)
		if (strstr(low, pat[i]) != NULL)
			return true;
	return false;
}

static void err_line_done(struct singer *s)
{
	char line[SINGER_ERR_LINE_MAX + 8];

	printable(s->ebuf, s->elen, line, sizeof line - 4);
	if (s->etrunc)
		strcat(line, "...");
	s->elen = 0;
	s->etrunc = false;
	if (line[0] == '\0')
		return;
	memcpy(s->last_err, line, sizeof s->last_err - 1);
	s->last_err[sizeof s->last_err - 1] = '\0';
	if (oom_text(line))
		s->saw_oom = true;
	s->elines++;
	if (s->elines <= SINGER_ERR_LINES_LOGGED)
		LOGI(s, "tap: %s", line);
	else if (s->elines == SINGER_ERR_LINES_LOGGED + 1)
		LOGW(s, "the tap wrote more than %d lines to stderr: the rest is "
		     "not logged", SINGER_ERR_LINES_LOGGED);
}

/* 1 while open, 0 at EOF. */
static int err_read(struct singer *s)
{
	char buf[4096];
	ssize_t n = read(s->err_fd, buf, sizeof buf);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		if (s->elen > 0 || s->etrunc)
			err_line_done(s);
		return 0;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			err_line_done(s);
		} else if (s->elen < SINGER_ERR_LINE_MAX) {
			if (buf[i] != '\r')
				s->ebuf[s->elen++] = buf[i];
		} else {
			s->etrunc = true;
		}
	}
	return 1;
}

/* ==== commits ================================================================ */

static int txn_begin(struct singer *s, char *err, size_t errlen)
{
	if (s->in_txn)
		return 0;
	if (wh_begin(s->env->wh) != 0) {
		str_errf(err, errlen, "warehouse: cannot begin a transaction: %s",
		         wh_error(s->env->wh));
		return -1;
	}
	s->in_txn = true;
	return 0;
}

/* Send every buffered row, save the latest state with them, commit. */
static int commit_point(struct singer *s, char *err, size_t errlen)
{
	if (!s->in_txn && !s->state_unsaved)
		return 0;
	if (txn_begin(s, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < s->nstreams; i++)
		if (s->streams[i].wr != NULL &&
		    dest_writer_flush(s->streams[i].wr, err, errlen) != 0)
			return -1;
	if (s->state_unsaved &&
	    state_save_singer(s->env, s->job->job_id, s->state, err, errlen) != 0)
		return -1;
	if (state_save_rows(s->env, s->committed_rows + s->pending_rows, err, errlen) != 0)
		return -1;
	if (wh_commit(s->env->wh) != 0) {
		str_errf(err, errlen, "warehouse: commit failed: %s", wh_error(s->env->wh));
		return -1;
	}
	s->in_txn = false;
	if (state_after_commit(s->env, err, errlen) != 0)
		return -1;
	s->committed_rows += s->pending_rows;
	s->env->rows_loaded = s->committed_rows;
	if (s->pending_rows > 0 || s->state_unsaved) {
		char snip[SINGER_LOG_SNIPPET + 8];

		printable(s->state != NULL ? s->state : "(none)",
		          s->state != NULL ? strlen(s->state) : 6, snip, sizeof snip);
		LOGI(s, "committed %lld rows (%lld in all); state %s", s->pending_rows,
		     s->committed_rows, s->state_unsaved ? snip : "unchanged");
	}
	s->pending_rows = 0;
	s->state_unsaved = false;
	return 0;
}

/* ==== SCHEMA ==================================================================== */

/* Types named by a property schema, with anyOf/oneOf folded in. */
struct ptypes {
	bool null, integer, number, boolean, string, object, array, any;
	const char *format;
	double multiple_of;
	long long max_length;
};

static void type_name(struct ptypes *t, const char *n)
{
	if (strcmp(n, "null") == 0) t->null = true;
	else if (strcmp(n, "integer") == 0) t->integer = true;
	else if (strcmp(n, "number") == 0) t->number = true;
	else if (strcmp(n, "boolean") == 0) t->boolean = true;
	else if (strcmp(n, "string") == 0) t->string = true;
	else if (strcmp(n, "object") == 0) t->object = true;
	else if (strcmp(n, "array") == 0) t->array = true;
	else t->any = true;
}

static void prop_types(struct json_object *p, struct ptypes *t, int depth)
{
	struct json_object *ty = NULL, *alt = NULL, *x = NULL;

	if (depth > 8 || !json_object_is_type(p, json_type_object)) {
		t->any = true;
		return;
	}
	if (json_object_object_get_ex(p, "type", &ty) && ty != NULL) {
		if (json_object_is_type(ty, json_type_string)) {
			type_name(t, json_object_get_string(ty));
		} else if (json_object_is_type(ty, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(ty); i++) {
				struct json_object *e = json_object_array_get_idx(ty, i);

				if (json_object_is_type(e, json_type_string))
					type_name(t, json_object_get_string(e));
				else
					t->any = true;
			}
		} else {
			t->any = true;
		}
	} else if ((json_object_object_get_ex(p, "anyOf", &alt) ||
	            json_object_object_get_ex(p, "oneOf", &alt)) &&
	           json_object_is_type(alt, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(alt); i++)
			prop_types(json_object_array_get_idx(alt, i), t, depth + 1);
	} else {
		t->any = true;
	}
	if (t->format == NULL && (x = NULL, json_object_object_get_ex(p, "format", &x)) &&
	    json_object_is_type(x, json_type_string))
		t->format = json_object_get_string(x);
	if (json_object_object_get_ex(p, "multipleOf", &x) &&
	    (json_object_is_type(x, json_type_double) || json_object_is_type(x, json_type_int)))
		t->multiple_of = json_object_get_double(x);
	if (json_object_object_get_ex(p, "maxLength", &x) &&
	    json_object_is_type(x, json_type_int))
		t->max_length = json_object_get_int64(x);
}

/* 10^-scale == m for a scale of 1..30; else 0. */
static int decimal_scale(double m)
{
	double p = 1;

	for (int sc = 1; sc <= 30; sc++) {
		p /= 10;
		if (fabs(m - p) <= p * 1e-9)
			return sc;
	}
	return 0;
}

static void col_from_types(const struct ptypes *t, struct dest_col *c)
{
	int kinds = t->integer + t->number + t->boolean + t->string + t->object +
	            t->array;

	c->nullable = true;
	c->varchar_len = 0;
	c->scale = 0;
	if (t->any || kinds == 0) {
		c->kind = DEST_JSON;
	} else if (kinds == 1 && t->integer) {
		c->kind = DEST_BIGINT;
	} else if ((kinds == 1 && t->number) || (kinds == 2 && t->integer && t->number)) {
		c->scale = t->multiple_of > 0 ? decimal_scale(t->multiple_of) : 0;
		c->kind = c->scale > 0 ? DEST_DECIMAL : DEST_DOUBLE;
	} else if (kinds == 1 && t->boolean) {
		c->kind = DEST_BOOL;
	} else if (kinds == 1 && t->string) {
		if (t->format != NULL && strcmp(t->format, "date-time") == 0)
			c->kind = DEST_DATETIME;
		else if (t->format != NULL && strcmp(t->format, "date") == 0)
			c->kind = DEST_DATE;
		else
			c->kind = DEST_TEXT;
	} else if (!t->integer && !t->number && !t->boolean && !t->string) {
		c->kind = DEST_JSON;          /* object and/or array */
	} else {
		c->kind = DEST_TEXT;          /* mixed: scalars as text, the rest as JSON */
	}
}

static void stream_free_cols(struct stream *st)
{
	dest_writer_free(st->wr);
	st->wr = NULL;
	free(st->cols);
	free(st->colnames);
	free(st->vals);
	free(st->lens);
	free(st->scratch);
	st->cols = NULL;
	st->colnames = NULL;
	st->vals = NULL;
	st->lens = NULL;
	st->scratch = NULL;
	st->ncols = 0;
}

static void stream_free(struct stream *st)
{
	stream_free_cols(st);
	free(st->name);
	free(st->schema_text);
}

static struct stream *stream_find(struct singer *s, const char *name)
{
	for (size_t i = 0; i < s->nstreams; i++)
		if (strcmp(s->streams[i].name, name) == 0)
			return &s->streams[i];
	return NULL;
}

/* The table of a stream: output.raw.table_name for the job's stream
 * (input.table_name), else table_name + "__" + the stream name in lower
 * case with every character but [a-z0-9_] as '_', cut to 64 bytes. */
static void stream_table(const struct singer *s, const char *stream, char *out)
{
	size_t n;

	if (s->main_stream != NULL && strcmp(stream, s->main_stream) == 0) {
		snprintf(out, DEST_NAME_MAX, "%s", s->job->dest_table);
		return;
	}
	n = (size_t)snprintf(out, DEST_NAME_MAX, "%s__", s->job->dest_table);
	for (const char *p = stream; *p != '\0' && n < WH_IDENT_MAX; p++) {
		unsigned char c = (unsigned char)*p;

		out[n++] = isalnum(c) && c < 0x80 ? (char)tolower(c) : '_';
	}
	if (n > WH_IDENT_MAX)
		n = WH_IDENT_MAX;
	out[n] = '\0';
}

static bool in_array(struct json_object *a, const char *name)
{
	if (a == NULL || !json_object_is_type(a, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(a, i));

		if (e != NULL && strcmp(e, name) == 0)
			return true;
	}
	return false;
}

static int on_schema(struct singer *s, struct json_object *msg, char *err,
                     size_t errlen)
{
	const char *name = obj_str(msg, "stream");
	struct json_object *schema = NULL, *props = NULL, *keys = NULL, *req = NULL;
	struct json_object *sig = NULL;
	const char **keynames = NULL;
	struct dest_evolve ev = { 0 };
	struct stream *st;
	size_t nkeys = 0, nstring_keys = 0, np;
	char *sig_text = NULL;
	int rc = -1, made;

	if (name == NULL || name[0] == '\0') {
		str_errf(err, errlen, "line %lld: SCHEMA without a stream name", s->line_no);
		return -1;
	}
	if (!json_object_object_get_ex(msg, "schema", &schema) ||
	    !json_object_is_type(schema, json_type_object)) {
		str_errf(err, errlen, "line %lld: SCHEMA of stream '%.100s' has no schema "
		         "object", s->line_no, name);
		return -1;
	}
	json_object_object_get_ex(msg, "key_properties", &keys);
	if (keys != NULL && !json_object_is_type(keys, json_type_array)) {
		str_errf(err, errlen, "line %lld: key_properties of stream '%.100s' must "
		         "be an array", s->line_no, name);
		return -1;
	}
	if (!json_object_object_get_ex(schema, "properties", &props) ||
	    !json_object_is_type(props, json_type_object) ||
	    (np = (size_t)json_object_object_length(props)) == 0) {
		str_errf(err, errlen, "line %lld: the schema of stream '%.100s' has no "
		         "properties", s->line_no, name);
		return -1;
	}
	if (np > SINGER_COLUMNS_MAX) {
		str_errf(err, errlen, "line %lld: stream '%.100s' has %zu properties "
		         "(at most %d)", s->line_no, name, np, SINGER_COLUMNS_MAX);
		return -1;
	}
	json_object_object_get_ex(schema, "required", &req);

	/* The same schema again (taps repeat it): nothing to do. */
	sig = json_object_new_array();
	json_object_array_add(sig, json_object_get(schema));
	json_object_array_add(sig, keys != NULL ? json_object_get(keys) : NULL);
	sig_text = strdup(json_text(sig));
	json_object_put(sig);
	if (sig_text == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	st = stream_find(s, name);
	if (st != NULL && st->schema_text != NULL && strcmp(st->schema_text, sig_text) == 0) {
		free(sig_text);
		return 0;
	}
	/* DDL commits: first commit what is pending, state included. */
	if (commit_point(s, err, errlen) != 0)
		goto out;
	if (st == NULL) {
		struct stream *grown;
		char table[DEST_NAME_MAX];

		if (s->nstreams >= SINGER_STREAMS_MAX) {
			str_errf(err, errlen, "line %lld: more than %d streams", s->line_no,
			         SINGER_STREAMS_MAX);
			goto out;
		}
		stream_table(s, name, table);
		for (size_t i = 0; i < s->nstreams; i++)
			if (strcmp(s->streams[i].table, table) == 0) {
				str_errf(err, errlen, "line %lld: streams '%.100s' and '%.100s' "
				         "would both load into table %s", s->line_no,
				         s->streams[i].name, name, table);
				goto out;
			}
		grown = realloc(s->streams, (s->nstreams + 1) * sizeof *grown);
		if (grown == NULL) {
			str_errf(err, errlen, "out of memory");
			goto out;
		}
		s->streams = grown;
		st = &s->streams[s->nstreams];
		memset(st, 0, sizeof *st);
		if ((st->name = strdup(name)) == NULL) {
			str_errf(err, errlen, "out of memory");
			goto out;
		}
		memcpy(st->table, table, sizeof st->table);
		s->nstreams++;
	}
	stream_free_cols(st);
	free(st->schema_text);
	st->schema_text = sig_text;
	sig_text = NULL;

	st->cols = calloc(np, sizeof *st->cols);
	st->colnames = calloc(np, sizeof *st->colnames);
	st->vals = calloc(np, sizeof *st->vals);
	st->lens = calloc(np, sizeof *st->lens);
	st->scratch = calloc(np, sizeof *st->scratch);
	nkeys = keys != NULL ? json_object_array_length(keys) : 0;
	keynames = calloc(nkeys + 1, sizeof *keynames);
	if (st->cols == NULL || st->colnames == NULL || st->vals == NULL ||
	    st->lens == NULL || st->scratch == NULL || keynames == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	json_object_object_foreach(props, pname, pval) {
		struct dest_col *c = &st->cols[st->ncols];
		struct ptypes t = { 0 };

		if (!wh_ident_ok(pname) || strlen(pname) >= DEST_NAME_MAX) {
			str_errf(err, errlen, "line %lld: stream '%.100s': property "
			         "'%.80s' cannot be a column name (1 to %d characters)",
			         s->line_no, name, pname, WH_IDENT_MAX);
			goto out;
		}
		memcpy(c->name, pname, strlen(pname) + 1);
		prop_types(pval, &t, 0);
		col_from_types(&t, c);
		if (in_array(keys, pname)) {
			if (c->kind == DEST_JSON) {
				str_errf(err, errlen, "line %lld: stream '%.100s': key property "
				         "'%.80s' is not a scalar", s->line_no, name, pname);
				goto out;
			}
			c->nullable = false;
			if (c->kind == DEST_TEXT) {
				nstring_keys++;
				c->varchar_len = t.max_length > 0 &&
				    t.max_length < DEST_KEY_VARCHAR_MAX ?
				    (int)t.max_length : DEST_KEY_VARCHAR_MAX;
			}
		} else if (!t.null && !t.any && in_array(req, pname)) {
			c->nullable = false;
		}
		st->colnames[st->ncols] = c->name;
		st->ncols++;
	}
	/* InnoDB keys hold 3072 bytes: share them among the text key columns. */
	if (nstring_keys > 1)
		for (size_t i = 0; i < st->ncols; i++)
			if (st->cols[i].varchar_len > (int)(768 / nstring_keys))
				st->cols[i].varchar_len = (int)(768 / nstring_keys);
	for (size_t i = 0; i < nkeys; i++) {
		const char *k = json_object_get_string(json_object_array_get_idx(keys, i));
		bool found = false;

		for (size_t c = 0; k != NULL && c < st->ncols; c++)
			if (strcmp(st->cols[c].name, k) == 0) {
				keynames[i] = st->cols[c].name;
				found = true;
			}
		if (!found) {
			str_errf(err, errlen, "line %lld: stream '%.100s': key property "
			         "'%.80s' is not in the schema", s->line_no, name,
			         k != NULL ? k : "?");
			goto out;
		}
	}
	/* A stream's types are the coarse ones of JSON Schema: a narrower
	 * one (integer after string) loads into the wider column. */
	ev.fn = run_log_widened;
	ev.arg = s->env->log;
	made = dest_table_ensure(s->env->wh, s->schema, st->table, st->cols,
	                         st->ncols, keynames, nkeys, NULL, &ev, err, errlen);
	if (made < 0)
		goto out;
	LOGI(s, "stream %s: %zu columns, %s; table %s.%s %s", name, st->ncols,
	     nkeys > 0 ? "rows upserted by key_properties" : "rows appended",
	     s->schema, st->table, made ? "created" : "exists (missing columns added)");
	st->wr = dest_writer_new(s->env->wh, s->schema, st->table, st->colnames,
	                         st->ncols, nkeys > 0, SINGER_BATCH_ROWS, err, errlen);
	if (st->wr == NULL)
		goto out;
	rc = 0;
out:
	free(sig_text);
	free(keynames);
	return rc;
}

/* ==== RECORD ==================================================================== */

/* The text for column c of value v: *val (NULL = SQL NULL) and *len.
 * NULL, or what was expected when v does not fit. */
static const char *col_value(const struct dest_col *c, struct json_object *v,
                             char *scratch, const char **val, size_t *len)
{
	enum json_type t = json_object_get_type(v);
	const char *str = NULL;
	size_t n = 0;

	*val = NULL;
	*len = 0;
	if (v == NULL || t == json_type_null)
		return c->nullable ? NULL : "a value (the column is NOT NULL)";
	if (t == json_type_string) {
		str = json_object_get_string(v);
		n = (size_t)json_object_get_string_len(v);
		if (n == 0 && c->kind != DEST_TEXT && c->kind != DEST_JSON)
			return c->nullable ? NULL : "a value (the column is NOT NULL)";
	}
	switch (c->kind) {
	case DEST_BIGINT: {
		long long x;

		if (t == json_type_int) {
			x = json_object_get_int64(v);
			if ((x == INT64_MAX && strcmp(json_object_get_string(v),
			                              "9223372036854775807") != 0))
				return "an integer within 64 bits";
			snprintf(scratch, DEST_DATETIME_LEN, "%lld", x);
		} else if (t == json_type_double) {
			double d = json_object_get_double(v);

			if (d != floor(d) || fabs(d) >= 9.2e18)
				return "an integer";
			snprintf(scratch, DEST_DATETIME_LEN, "%.0f", d);
		} else if (t == json_type_string) {
			if (str_to_ll(str, INT64_MIN, INT64_MAX, &x) != 0)
				return "an integer";
			snprintf(scratch, DEST_DATETIME_LEN, "%lld", x);
		} else {
			return "an integer";
		}
		*val = scratch;
		*len = strlen(scratch);
		return NULL;
	}
	case DEST_DOUBLE:
	case DEST_DECIMAL:
		if (t == json_type_int || t == json_type_double) {
			*val = json_object_get_string(v);
			*len = strlen(*val);
			return NULL;
		}
		if (t == json_type_string) {
			char *end;
			double d;

			errno = 0;
			d = strtod(str, &end);
			if (end == str || *end != '\0' || !isfinite(d) || isspace((unsigned char)*str))
				return "a number";
			*val = str;
			*len = n;
			return NULL;
		}
		return "a number";
	case DEST_BOOL:
		if (t == json_type_boolean) {
			*val = json_object_get_boolean(v) ? "1" : "0";
		} else if (t == json_type_int && (json_object_get_int64(v) == 0 ||
		                                  json_object_get_int64(v) == 1)) {
			*val = json_object_get_int64(v) ? "1" : "0";
		} else if (t != json_type_string || dest_bool_norm(str, n, val) != 0) {
			return "a boolean";
		}
		*len = 1;
		return NULL;
	case DEST_DATE:
		if (t != json_type_string || dest_date_norm(str, n, scratch) != 0)
			return "a date (YYYY-MM-DD)";
		*val = scratch;
		*len = strlen(scratch);
		return NULL;
	case DEST_DATETIME:
		if (t != json_type_string || dest_datetime_norm(str, n, scratch) != 0)
			return "an ISO 8601 date-time";
		*val = scratch;
		*len = strlen(scratch);
		return NULL;
	case DEST_TEXT:
		if (t == json_type_string) {
			*val = str;
			*len = n;
		} else {
			*val = t == json_type_object || t == json_type_array ?
			       json_text(v) : json_object_get_string(v);
			*len = strlen(*val);
		}
		return NULL;
	case DEST_JSON:
		*val = json_text(v);
		*len = strlen(*val);
		return NULL;
	}
	return "a value";
}

static int on_record(struct singer *s, struct json_object *msg, char *err,
                     size_t errlen)
{
	const char *name = obj_str(msg, "stream");
	struct json_object *rec = NULL;
	struct stream *st;

	if (name == NULL) {
		str_errf(err, errlen, "line %lld: RECORD without a stream name", s->line_no);
		return -1;
	}
	if ((st = stream_find(s, name)) == NULL || st->wr == NULL) {
		str_errf(err, errlen, "line %lld: RECORD of stream '%.100s' before its "
		         "SCHEMA", s->line_no, name);
		return -1;
	}
	if (!json_object_object_get_ex(msg, "record", &rec) ||
	    !json_object_is_type(rec, json_type_object)) {
		str_errf(err, errlen, "line %lld: RECORD of stream '%.100s' has no record "
		         "object", s->line_no, name);
		return -1;
	}
	s->env->rows_read++;
	for (size_t i = 0; i < st->ncols; i++) {
		struct json_object *v = NULL;
		const char *want;

		json_object_object_get_ex(rec, st->cols[i].name, &v);
		want = col_value(&st->cols[i], v, st->scratch[i], &st->vals[i],
		                 &st->lens[i]);
		if (want != NULL) {
			char shown[64];
			const char *txt = v != NULL ? json_text(v) : "missing";

			printable(txt, strlen(txt), shown, sizeof shown);
			str_errf(err, errlen, "line %lld: stream '%.100s': property '%.80s' "
			         "is %s, not %s", s->line_no, name, st->cols[i].name,
			         shown, want);
			return -1;
		}
	}
	if (!st->warned_extra &&
	    (size_t)json_object_object_length(rec) > st->ncols) {
		json_object_object_foreach(rec, k, v) {
			bool known = false;

			(void)v;
			for (size_t i = 0; i < st->ncols && !known; i++)
				known = strcmp(st->cols[i].name, k) == 0;
			if (!known) {
				LOGW(s, "stream %s: property '%.80s' is not in the schema: "
				     "it is not loaded", name, k);
				st->warned_extra = true;
				break;
			}
		}
	}
	if (txn_begin(s, err, errlen) != 0)
		return -1;
	if (dest_writer_add(st->wr, st->vals, st->lens, err, errlen) != 0) {
		char why[512];

		snprintf(why, sizeof why, "%s", err);
		str_errf(err, errlen, "line %lld: stream '%.100s': loading into %s.%s "
		         "failed: %s", s->line_no, name, s->schema, st->table, why);
		return -1;
	}
	st->records++;
	s->pending_rows++;
	return 0;
}

/* ==== STATE and the dispatch ===================================================== */

static int on_state(struct singer *s, struct json_object *msg, char *err,
                    size_t errlen)
{
	struct json_object *v = NULL;
	char *text;

	if (!json_object_object_get_ex(msg, "value", &v) ||
	    !json_object_is_type(v, json_type_object)) {
		str_errf(err, errlen, "line %lld: STATE without a value object", s->line_no);
		return -1;
	}
	if ((text = strdup(json_text(v))) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	free(s->state);
	s->state = text;
	s->state_unsaved = true;
	if (s->pending_rows >= s->env->cfg->singer_commit_rows)
		return commit_point(s, err, errlen);
	return 0;
}

static int on_line(struct singer *s, char *line, size_t len, char *err,
                   size_t errlen)
{
	struct json_object *msg;
	enum json_tokener_error jerr;
	const char *type;
	size_t end;
	int rc = -1;

	s->line_no++;
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
	                   line[len - 1] == '\t'))
		len--;
	if (len == 0)
		return 0;
	json_tokener_reset(s->tok);
	msg = json_tokener_parse_ex(s->tok, line, (int)len);
	jerr = json_tokener_get_error(s->tok);
	end = json_tokener_get_parse_end(s->tok);
	if (msg == NULL || jerr != json_tokener_success || end != len) {
		str_errf(err, errlen, "line %lld: the tap wrote invalid JSON (%s at "
		         "byte %zu)", s->line_no,
		         msg == NULL && jerr == json_tokener_continue ? "incomplete" :
		         json_tokener_error_desc(jerr), end + 1);
		json_object_put(msg);
		return -1;
	}
	if (!json_object_is_type(msg, json_type_object) ||
	    (type = obj_str(msg, "type")) == NULL) {
		str_errf(err, errlen, "line %lld: not a Singer message (a JSON object "
		         "with a \"type\")", s->line_no);
		goto out;
	}
	if (strcmp(type, "RECORD") == 0) {
		rc = on_record(s, msg, err, errlen);
	} else if (strcmp(type, "SCHEMA") == 0) {
		rc = on_schema(s, msg, err, errlen);
	} else if (strcmp(type, "STATE") == 0) {
		rc = on_state(s, msg, err, errlen);
	} else {
		/* ACTIVATE_VERSION, BATCH and the like: nothing to do here. */
		int slot = strcmp(type, "ACTIVATE_VERSION") == 0 ? 0 : 1;

		if (!s->warned_types[slot]) {
			char shown[64];

			printable(type, strlen(type), shown, sizeof shown);
			LOGW(s, "line %lld: %s messages are ignored", s->line_no, shown);
			s->warned_types[slot] = true;
		}
		rc = 0;
	}
out:
	json_object_put(msg);
	return rc;
}

/* ==== the main loop ============================================================== */

struct outbuf {
	char *p;
	size_t len, cap, scanned;
};

/* Hand every complete line to on_line.  0 or -1. */
static int out_lines(struct singer *s, struct outbuf *b, char *err, size_t errlen)
{
	size_t start = 0;

	for (;;) {
		char *nl = memchr(b->p + b->scanned, '\n', b->len - b->scanned);
		size_t n;

		if (nl == NULL) {
			b->scanned = b->len;
			break;
		}
		n = (size_t)(nl - (b->p + start));
		if (on_line(s, b->p + start, n, err, errlen) != 0)
			return -1;
		start += n + 1;
		b->scanned = start;
	}
	if (start > 0) {
		memmove(b->p, b->p + start, b->len - start);
		b->len -= start;
		b->scanned -= start;
	}
	return 0;
}

/* 1 while open, 0 at EOF, -1 on error. */
static int out_read(struct singer *s, struct outbuf *b, char *err, size_t errlen)
{
	size_t max = (size_t)s->env->cfg->singer_line_max_bytes + 1;
	ssize_t n;

	if (b->len == b->cap) {
		size_t want = b->cap == 0 ? SINGER_READ_CHUNK : b->cap * 2;
		char *p;

		if (b->cap >= max) {
			str_errf(err, errlen, "line %lld: longer than singer_line_max_bytes "
			         "(%ld bytes)", s->line_no + 1,
			         s->env->cfg->singer_line_max_bytes);
			return -1;
		}
		if (want > max)
			want = max;
		if ((p = realloc(b->p, want)) == NULL) {
			str_errf(err, errlen, "out of memory reading line %lld",
			         s->line_no + 1);
			return -1;
		}
		b->p = p;
		b->cap = want;
	}
	n = read(s->out_fd, b->p + b->len, b->cap - b->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n < 0) {
		str_errf(err, errlen, "reading the tap's output: %s", strerror(errno));
		return -1;
	}
	if (n == 0) {
		/* A last line without its newline. */
		if (b->len > 0 && on_line(s, b->p, b->len, err, errlen) != 0)
			return -1;
		b->len = b->scanned = 0;
		return 0;
	}
	b->len += (size_t)n;
	return out_lines(s, b, err, errlen) != 0 ? -1 : 1;
}

/* Read the tap's stdout and stderr until both end.  A tap that has exited
 * while something it started still holds its pipes open gets
 * SINGER_EXIT_GRACE_MS, then its group is killed and reading stops. */
static int pump(struct singer *s, char *err, size_t errlen)
{
	struct outbuf b = { 0 };
	int rc = 0;

	while (s->out_fd >= 0 || s->err_fd >= 0) {
		struct pollfd p[2] = {
			{ .fd = s->out_fd, .events = POLLIN },
			{ .fd = s->err_fd, .events = POLLIN },
		};
		int n = poll(p, 2, SINGER_POLL_MS);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			str_errf(err, errlen, "poll: %s", strerror(errno));
			rc = -1;
			break;
		}
		if (n == 0) {
			if (tap_reap(s, false) && ms_since(&s->reaped_at) > SINGER_EXIT_GRACE_MS) {
				kill(-s->pid, SIGKILL);
				LOGW(s, "the tap exited but a process it started kept its "
				     "output open: that process group was killed");
				break;
			}
			continue;
		}
		if (s->err_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    err_read(s) == 0) {
			close(s->err_fd);
			s->err_fd = -1;
		}
		if (s->out_fd >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			int r = out_read(s, &b, err, errlen);

			if (r < 0) {
				rc = -1;
				break;
			}
			if (r == 0) {
				close(s->out_fd);
				s->out_fd = -1;
			}
		}
	}
	free(b.p);
	return rc;
}

static void singer_free(struct singer *s)
{
	if (s->out_fd >= 0)
		close(s->out_fd);
	if (s->err_fd >= 0)
		close(s->err_fd);
	s->out_fd = s->err_fd = -1;
	tap_stop(s);
	if (s->in_txn)
		wh_rollback(s->env->wh);
	s->in_txn = false;
	for (size_t i = 0; i < s->nstreams; i++)
		stream_free(&s->streams[i]);
	free(s->streams);
	free(s->state);
	if (s->tok != NULL)
		json_tokener_free(s->tok);
	dir_remove(s);
}

/* Why the tap ended badly, from its wait status. */
static void exit_reason(struct singer *s, int status, char *err, size_t errlen)
{
	char how[64], last[SINGER_ERR_LINE_MAX + 32] = "";

	if (WIFEXITED(status))
		snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else
		snprintf(how, sizeof how, "ended (status %d)", status);
	if (s->last_err[0] != '\0')
		snprintf(last, sizeof last, "; its last stderr line: %s", s->last_err);
	str_errf(err, errlen, "tap %s %s after %lld lines of output%s%s",
	         s->job->plugin, how, s->line_no, last,
	         s->saw_oom ? "; the tap ran out of memory (the job's memory limit "
	         "applies to the tap too)" :
	         WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ?
	         "; it may have run out of memory (the job's memory limit applies "
	         "to the tap too)" : "");
}

int singer_extract_load(const struct job_spec *job, struct task_env *env,
                        char *err, size_t errlen)
{
	struct singer s = { .job = job, .env = env, .pid = -1, .out_fd = -1,
	                    .err_fd = -1 };
	struct json_object *catalog = NULL;
	char tap[PATH_MAX], cfg_path[PATH_MAX], state_path[PATH_MAX];
	char cat_path[PATH_MAX];
	char *argv[8], *cfg_text = NULL;
	struct stat sb;
	int argc = 0, status, rc = -1, n;

	if (!plugin_ok(job->plugin)) {
		str_errf(err, errlen, "input.plugin must name a tap: 1 to %d characters "
		         "of letters, digits, '.', '_', '-', '+', not starting with '.'",
		         SINGER_PLUGIN_MAX);
		return -1;
	}
	if (job->dest_table == NULL || !wh_ident_ok(job->dest_table)) {
		str_errf(err, errlen, "output.raw.table_name is missing or not valid");
		return -1;
	}
	s.schema = job->dest_schema != NULL && job->dest_schema[0] != '\0' ?
	           job->dest_schema : wh_default_schema(env->wh);
	s.main_stream = obj_str(job->input, "table_name");
	n = snprintf(tap, sizeof tap, "%s/%s", env->cfg->singer_taps_dir, job->plugin);
	if (n < 0 || (size_t)n >= sizeof tap || stat(tap, &sb) != 0 ||
	    !S_ISREG(sb.st_mode) || access(tap, X_OK) != 0) {
		str_errf(err, errlen, "tap '%s' is not installed (no executable file of "
		         "that name in the taps directory)", job->plugin);
		return -1;
	}
	if (json_object_object_get_ex(job->input, "catalog", &catalog) &&
	    catalog != NULL && !json_object_is_type(catalog, json_type_object)) {
		str_errf(err, errlen, "input.catalog must be an object");
		return -1;
	}
	if ((s.tok = json_tokener_new_ex(SINGER_JSON_DEPTH)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	json_tokener_set_flags(s.tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	if (dir_make(&s, err, errlen) != 0 ||
	    (cfg_text = config_text(job, err, errlen)) == NULL ||
	    file_write(&s, "config.json", cfg_text, cfg_path, sizeof cfg_path,
	               err, errlen) != 0)
		goto out;
	argv[argc++] = tap;
	argv[argc++] = "--config";
	argv[argc++] = cfg_path;
	if (job->singer_state != NULL && job->singer_state[0] != '\0') {
		char snip[SINGER_LOG_SNIPPET + 8];

		if (file_write(&s, "state.json", job->singer_state, state_path,
		               sizeof state_path, err, errlen) != 0)
			goto out;
		argv[argc++] = "--state";
		argv[argc++] = state_path;
		printable(job->singer_state, strlen(job->singer_state), snip, sizeof snip);
		LOGI(&s, "state before: %s", snip);
	} else {
		LOGI(&s, "state before: none (full sync)");
	}
	if (catalog != NULL) {
		if (file_write(&s, "catalog.json", json_text(catalog), cat_path,
		               sizeof cat_path, err, errlen) != 0)
			goto out;
		argv[argc++] = "--catalog";
		argv[argc++] = cat_path;
	}
	argv[argc] = NULL;
	LOGI(&s, "running tap %s%s%s%s into schema %s", job->plugin,
	     catalog != NULL ? " with a catalog" : "",
	     argc > 3 && catalog == NULL ? " with its state" : "",
	     argc > 5 ? " and its state" : "", s.schema);
	if (tap_start(&s, tap, argv, err, errlen) != 0)
		goto out;
	if (pump(&s, err, errlen) != 0)
		goto out;
	tap_reap(&s, true);
	status = s.status;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		exit_reason(&s, status, err, errlen);
		goto out;
	}
	if (commit_point(&s, err, errlen) != 0)
		goto out;
	for (size_t i = 0; i < s.nstreams; i++)
		LOGI(&s, "stream %s: %lld records into %s.%s", s.streams[i].name,
		     s.streams[i].records, s.schema, s.streams[i].table);
	LOGI(&s, "tap %s done: %lld lines, %lld records, %lld rows written",
	     job->plugin, s.line_no, env->rows_read, s.committed_rows);
	rc = 0;
out:
	if (cfg_text != NULL) {
		explicit_bzero(cfg_text, strlen(cfg_text));
		free(cfg_text);
	}
	if (rc != 0 && s.committed_rows > 0)
		LOGW(&s, "%lld rows committed earlier in this task stay loaded, with "
		     "the state that covers them", s.committed_rows);
	singer_free(&s);
	return rc;
}
