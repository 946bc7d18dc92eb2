/* db.c - one MariaDB connection with cached prepared statements. */
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "db/db.h"
#include "util/config.h"
#include "util/log.h"
#include "util/timeutil.h"


#define DB_MIN_COLBUF 64
#define DB_RETRY_MS 250.0     /* between connect attempts while the server is down */

static unsigned long long tx_retries;   /* this process's, for logs and tests */

struct cached_stmt {
	char *sql;                /* our own copy: a caller's text may not outlive it */
	unsigned long hash;       /* of sql, to skip most comparisons */
	MYSQL_STMT *stmt;
	struct db_stmt *open;     /* the result currently being read, if any */
};

struct db {
	const struct config *cfg;
	MYSQL *conn;
	struct cached_stmt cache[DB_STMT_CACHE];
	size_t ncache, next_evict;
	bool in_tx;
	double retry_after_ms;    /* no connect attempt before this (monotonic) */
	int last_err;
	char errbuf[512];
};

struct db_stmt {
	struct db *db;
	struct cached_stmt *cs;
	unsigned ncols;
	MYSQL_BIND *bind;
	char **buf;
	unsigned long *len;
	my_bool *is_null;
	my_bool *truncated;
};

static void set_error(struct db *db, int err, const char *what, const char *text)
{
	db->last_err = err;
	snprintf(db->errbuf, sizeof db->errbuf, "%s: %s", what, text);
}

int db_classify(unsigned int no)
{
	switch (no) {
	/* A Galera node outside the primary component (quorum lost) or not
	 * yet synced answers every query "WSREP has not yet prepared node for
	 * application use": like a server that is down, another node or a
	 * later try answers. */
	case ER_UNKNOWN_COM_ERROR:
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_UNKNOWN_HOST:
	case ER_CONNECTION_KILLED:
	case ER_SERVER_SHUTDOWN:
	case ER_CON_COUNT_ERROR:
	case ER_QUERY_INTERRUPTED:
		return DB_ERR_UNAVAILABLE;
	case ER_DUP_ENTRY:
	case ER_DUP_ENTRY_WITH_KEY_NAME:
		return DB_ERR_DUPLICATE;
	/* On Galera also a certification failure (a conflicting write
	 * committed first on another node) and a brute-force abort. */
	case ER_LOCK_DEADLOCK:
	case ER_LOCK_WAIT_TIMEOUT:
		return DB_ERR_DEADLOCK;
	case ER_NO_REFERENCED_ROW:
	case ER_NO_REFERENCED_ROW_2:
	case ER_ROW_IS_REFERENCED:
	case ER_ROW_IS_REFERENCED_2:
		return DB_ERR_FOREIGN_KEY;
	case ER_ACCESS_DENIED_ERROR:
	case ER_DBACCESS_DENIED_ERROR:
	case ER_BAD_DB_ERROR:
		return DB_ERR_ACCESS;
	default:
		return DB_ERR;
	}
}

struct db *db_new(const struct config *cfg)
{
	struct db *db = calloc(1, sizeof *db);

	if (db != NULL)
		db->cfg = cfg;
	return db;
}

static void cache_clear(struct db *db)
{
	for (size_t i = 0; i < db->ncache; i++) {
		if (db->cache[i].stmt != NULL)
			mysql_stmt_close(db->cache[i].stmt);
		free(db->cache[i].sql);
	}
	memset(db->cache, 0, sizeof db->cache);
	db->ncache = db->next_evict = 0;
}

void db_disconnect(struct db *db)
{
	if (db == NULL || db->conn == NULL)
		return;
	cache_clear(db);
	mysql_close(db->conn);
	db->conn = NULL;
	db->in_tx = false;
}

void db_free(struct db *db)
{
	if (db == NULL)
		return;
	db_disconnect(db);
	free(db);
}

bool db_connected(const struct db *db)
{
	return db->conn != NULL;
}

const char *db_error(const struct db *db)
{
	return db->errbuf[0] != '\0' ? db->errbuf : "no error";
}

int db_last_err(const struct db *db)
{
	return db->last_err;
}

/* An unavailable server drops the connection, so the next call reconnects;
 * at once after a dead connection (a node restarted: the next may serve),
 * but not before DB_RETRY_MS when the node itself said it cannot serve
 * (1047, a Galera node outside the primary component), as at connect. */
static int fail_unavailable(struct db *db, unsigned int no)
{
	if (no == ER_UNKNOWN_COM_ERROR)
		db->retry_after_ms = time_mono_ms() + DB_RETRY_MS;
	db_disconnect(db);
	return DB_ERR_UNAVAILABLE;
}

/* A failure on the connection itself: drop it so the next call reconnects. */
static int fail_conn(struct db *db, const char *what)
{
	unsigned int no = mysql_errno(db->conn);
	int err = db_classify(no);

	set_error(db, err, what, mysql_error(db->conn));
	return err == DB_ERR_UNAVAILABLE ? fail_unavailable(db, no) : err;
}

static int fail_stmt(struct db *db, MYSQL_STMT *st, const char *what)
{
	unsigned int no = mysql_stmt_errno(st);
	int err = db_classify(no);

	set_error(db, err, what, mysql_stmt_error(st));
	return err == DB_ERR_UNAVAILABLE ? fail_unavailable(db, no) : err;
}

/* The value of the first row of a SHOW ... LIKE: 1 "ON", 0 anything else
 * or no row, -1 when the statement failed. */
static int show_on(MYSQL *m, const char *show)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int on;

	if (mysql_query(m, show) != 0 || (res = mysql_store_result(m)) == NULL)
		return -1;
	row = mysql_fetch_row(res);
	on = row != NULL && row[1] != NULL && strcmp(row[1], "ON") == 0;
	mysql_free_result(res);
	return on;
}

/* The server answers, and is not a Galera node that cannot serve (a server
 * built with wsrep but not in a cluster says wsrep_ready OFF too: only
 * wsrep_on tells them apart). */
static bool galera_ready(MYSQL *m)
{
	int on = show_on(m, "SHOW VARIABLES LIKE 'wsrep_on'");

	return on == 0 || (on == 1 && show_on(m, "SHOW STATUS LIKE 'wsrep_ready'") == 1);
}

int db_ensure(struct db *db)
{
	const struct config *c = db->cfg;
	unsigned int timeout = (unsigned int)c->db_connect_timeout;
	unsigned int io_timeout = 60;
	my_bool off = 0;
	MYSQL *m;
	int err;

	if (db->conn != NULL)
		return DB_OK;
	/* While the server is down, do not make every request wait for a
	 * connect timeout: fail fast until the throttle window has passed. */
	if (time_mono_ms() < db->retry_after_ms)
		return db->last_err == DB_ERR_ACCESS ? DB_ERR_ACCESS
		                                     : DB_ERR_UNAVAILABLE;
	if ((m = mysql_init(NULL)) == NULL) {
		set_error(db, DB_ERR_UNAVAILABLE, "connect", "out of memory");
		return DB_ERR_UNAVAILABLE;
	}
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
	mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
	mysql_options(m, MYSQL_OPT_RECONNECT, &off);   /* we re-prepare ourselves */
	mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* Every session speaks UTC and refuses silent truncation. */
	mysql_options(m, MYSQL_INIT_COMMAND,
	    "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,"
	    "NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
	    "NO_ENGINE_SUBSTITUTION'");

	if (mysql_real_connect(m,
	    c->db_socket[0] != '\0' ? NULL : c->db_host,
	    c->db_user, c->db_password, c->db_name,
	    c->db_socket[0] != '\0' ? 0 : (unsigned int)c->db_port,
	    c->db_socket[0] != '\0' ? c->db_socket : NULL, CLIENT_FOUND_ROWS) == NULL) {
		err = db_classify(mysql_errno(m));
		if (err != DB_ERR_ACCESS)
			err = DB_ERR_UNAVAILABLE;
		set_error(db, err, "connect", mysql_error(m));
		mysql_close(m);
		db->retry_after_ms = time_mono_ms() + DB_RETRY_MS;
		return err;
	}
	/* A Galera node accepts the connection (and SET) while it cannot
	 * serve: ask whether it is ready, so that "connected" means "usable"
	 * and a node without quorum is treated as down (throttled like one).
	 * With wsrep_sync_wait=1 such a node fails the statement itself
	 * (1205 after the causal wait), else it says wsrep_ready OFF. */
	if (!galera_ready(m)) {
		set_error(db, DB_ERR_UNAVAILABLE, "connect", mysql_errno(m) != 0 ?
		          mysql_error(m) : "the Galera node is not ready (wsrep_ready OFF)");
		mysql_close(m);
		db->retry_after_ms = time_mono_ms() + DB_RETRY_MS;
		return DB_ERR_UNAVAILABLE;
	}
	db->conn = m;
	db->last_err = DB_OK;
	db->errbuf[0] = '\0';
	return DB_OK;
}

int db_ping(struct db *db)
{
	int rc;

	if ((rc = db_ensure(db)) != DB_OK)
		return rc;
	if (mysql_ping(db->conn) == 0)
		return DB_OK;
	/* The server may have restarted since we last spoke: one fresh try. */
	fail_conn(db, "ping");
	if ((rc = db_ensure(db)) != DB_OK)
		return rc;
	if (mysql_ping(db->conn) != 0)
		return fail_conn(db, "ping");
	return DB_OK;
}

long long db_rows_read(struct db *db)
{
	struct db_stmt *st = db_query(db, "SELECT SUM(VARIABLE_VALUE) FROM "
	                              "information_schema.SESSION_STATUS WHERE "
	                              "VARIABLE_NAME LIKE 'HANDLER\\_READ\\_%'", "");
	long long n = -1;

	if (st != NULL && db_fetch(st) == 1 && !db_col_null(st, 0))
		n = db_col_ll(st, 0);
	db_done(st);
	return n;
}

/* FNV-1a: the cache's key is the SQL text itself, compared in full. */
static unsigned long sql_hash(const char *sql)
{
	unsigned long h = 2166136261u;

	for (; *sql != '\0'; sql++)
		h = (h ^ (unsigned char)*sql) * 16777619u;
	return h;
}

/* The cached statement for sql, preparing it on first use. */
static struct cached_stmt *stmt_get(struct db *db, const char *sql)
{
	struct cached_stmt *cs = NULL;
	unsigned long h = sql_hash(sql);
	MYSQL_STMT *st;
	char *copy;
	my_bool on = 1;

	for (size_t i = 0; i < db->ncache; i++)
		if (db->cache[i].hash == h && strcmp(db->cache[i].sql, sql) == 0)
			return &db->cache[i];

	if ((copy = strdup(sql)) == NULL) {
		set_error(db, DB_ERR, "prepare", "out of memory");
		return NULL;
	}
	if ((st = mysql_stmt_init(db->conn)) == NULL) {
		free(copy);
		fail_conn(db, "stmt_init");
		return NULL;
	}
	if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) != 0) {
		free(copy);
		fail_stmt(db, st, "prepare");
		mysql_stmt_close(st);
		return NULL;
	}
	mysql_stmt_attr_set(st, STMT_ATTR_UPDATE_MAX_LENGTH, &on);

	if (db->ncache < DB_STMT_CACHE) {
		cs = &db->cache[db->ncache++];
	} else {
		/* Full: evict round-robin, skipping one whose rows are being read. */
		for (size_t n = 0; n < DB_STMT_CACHE; n++) {
			cs = &db->cache[db->next_evict];
			db->next_evict = (db->next_evict + 1) % DB_STMT_CACHE;
			if (cs->open == NULL)
				break;
		}
		mysql_stmt_close(cs->stmt);
		free(cs->sql);
	}
	cs->sql = copy;
	cs->hash = h;
	cs->stmt = st;
	cs->open = NULL;
	return cs;
}

/* The MYSQL_BIND array of one execution: inline up to DB_MAX_PARAMS, from
 * the heap past it (db_exec_params). */
struct params {
	MYSQL_BIND inline_bind[DB_MAX_PARAMS];
	unsigned long inline_len[DB_MAX_PARAMS];
	MYSQL_BIND *bind;
	unsigned long *len;
};

static void params_free(struct params *p)
{
	if (p->bind != p->inline_bind)
		free(p->bind);
	if (p->len != p->inline_len)
		free(p->len);
}

/* The type string and its arguments as an array of struct db_param. */
static int params_of_args(struct db *db, const char *types, va_list ap,
                          struct db_param *ps, size_t *n)
{
	*n = strlen(types);
	if (*n > DB_MAX_PARAMS) {
		set_error(db, DB_ERR, "bind", "too many parameters");
		log_kv(LOG_ERROR, "bad statement binding", "types=\"%s\"", types);
		return DB_ERR;
	}
	for (size_t i = 0; i < *n; i++) {
		ps[i] = (struct db_param){ .type = types[i] };
		switch (types[i]) {
		case 's':
			ps[i].p = va_arg(ap, const char *);
			break;
		case 'i':
			ps[i].i = va_arg(ap, long long);
			break;
		case 'd':
			ps[i].d = va_arg(ap, double);
			break;
		case 'b':
			ps[i].p = va_arg(ap, const void *);
			ps[i].len = va_arg(ap, size_t);
			break;
		default:
			set_error(db, DB_ERR, "bind", "unknown parameter type letter");
			return DB_ERR;
		}
	}
	return DB_OK;
}

static int bind_params(struct db *db, MYSQL_STMT *st, const struct db_param *ps,
                       size_t n, struct params *p)
{
	p->bind = p->inline_bind;
	p->len = p->inline_len;
	if (n != mysql_stmt_param_count(st)) {
		set_error(db, DB_ERR, "bind", "parameter count does not match the SQL");
		log_kv(LOG_ERROR, "bad statement binding", "params=%zu", n);
		return DB_ERR;
	}
	if (n > DB_MAX_PARAMS) {
		p->bind = malloc(n * sizeof *p->bind);
		p->len = malloc(n * sizeof *p->len);
		if (p->bind == NULL || p->len == NULL) {
			set_error(db, DB_ERR, "bind", "out of memory");
			return DB_ERR;
		}
	}
	memset(p->bind, 0, sizeof(MYSQL_BIND) * n);
	for (size_t i = 0; i < n; i++) {
		MYSQL_BIND *b = &p->bind[i];

		switch (ps[i].type) {
		case 's':
		case 'b':
			if (ps[i].p == NULL) {
				b->buffer_type = MYSQL_TYPE_NULL;
				break;
			}
			p->len[i] = (unsigned long)(ps[i].type == 's' ? strlen(ps[i].p)
			                                               : ps[i].len);
			b->buffer_type = ps[i].type == 's' ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
			b->buffer = (void *)(uintptr_t)ps[i].p;
			b->buffer_length = p->len[i];
			b->length = &p->len[i];
			break;
		case 'i':
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = (void *)(uintptr_t)&ps[i].i;
			break;
		case 'd':
			b->buffer_type = MYSQL_TYPE_DOUBLE;
			b->buffer = (void *)(uintptr_t)&ps[i].d;
			break;
		default:
			set_error(db, DB_ERR, "bind", "unknown parameter type letter");
			return DB_ERR;
		}
	}
	if (n > 0 && mysql_stmt_bind_param(st, p->bind) != 0)
		return fail_stmt(db, st, "bind");
	return DB_OK;
}

/* Prepare (cached), bind and execute.  A connection found dead before the
 * statement could be sent is reopened and the statement tried once more,
 * unless a transaction was open (its earlier work is gone with the
 * connection, so the caller must see the failure). */
static struct cached_stmt *run(struct db *db, const char *sql,
                               const struct db_param *ps, size_t n)
{
	struct cached_stmt *cs;
	struct params p;
	int attempt, rc;

	for (attempt = 0; attempt < 2; attempt++) {
		bool in_tx = db->in_tx;

		if ((rc = db_ensure(db)) != DB_OK)
			return NULL;
		if ((cs = stmt_get(db, sql)) == NULL) {
			if (db->last_err == DB_ERR_UNAVAILABLE && !in_tx)
				continue;
			return NULL;
		}
		if (cs->open != NULL) {
			set_error(db, DB_ERR, "execute", "statement is still being read");
			return NULL;
		}
		if ((rc = bind_params(db, cs->stmt, ps, n, &p)) == DB_OK)
			rc = mysql_stmt_execute(cs->stmt);
		params_free(&p);
		if (rc < 0)
			return NULL;          /* the binding failed */
		if (rc == 0)
			return cs;
		if (mysql_stmt_errno(cs->stmt) == CR_SERVER_GONE_ERROR && !in_tx) {
			fail_stmt(db, cs->stmt, "execute");
			continue;
		}
		fail_stmt(db, cs->stmt, "execute");
		return NULL;
	}
	return NULL;
}

/* run() for a type string and its arguments. */
static struct cached_stmt *run_args(struct db *db, const char *sql,
                                    const char *types, va_list ap)
{
	struct db_param ps[DB_MAX_PARAMS];
	size_t n;

	if (params_of_args(db, types, ap, ps, &n) != DB_OK)
		return NULL;
	return run(db, sql, ps, n);
}

static long long exec_result(struct db *db, struct cached_stmt *cs)
{
	my_ulonglong n;

	if (cs == NULL)
		return db->last_err != DB_OK ? db->last_err : DB_ERR;
	n = mysql_stmt_affected_rows(cs->stmt);
	mysql_stmt_free_result(cs->stmt);
	return n == (my_ulonglong)-1 ? 0 : (long long)n;
}

long long db_exec(struct db *db, const char *sql, const char *types, ...)
{
	struct cached_stmt *cs;
	va_list ap;

	va_start(ap, types);
	cs = run_args(db, sql, types, ap);
	va_end(ap);
	return exec_result(db, cs);
}

long long db_exec_params(struct db *db, const char *sql,
                         const struct db_param *ps, size_t n)
{
	return exec_result(db, run(db, sql, ps, n));
}

int db_exec_rows(struct db *db, const char *head, const char *tuple, size_t ncols,
                 const struct db_param *ps, size_t nrows)
{
	size_t hlen = strlen(head), tlen = strlen(tuple), done = 0;
	char *sql = malloc(hlen + DB_ROWS_MAX * (tlen + 2) + 1);

	if (sql == NULL) {
		set_error(db, DB_ERR, "bind", "out of memory");
		return DB_ERR;
	}
	while (done < nrows) {
		size_t k = DB_ROWS_MAX, len = hlen;

		while (k > nrows - done)
			k /= 2;
		memcpy(sql, head, hlen);
		for (size_t i = 0; i < k; i++) {
			if (i > 0)
				sql[len++] = ',', sql[len++] = ' ';
			memcpy(sql + len, tuple, tlen);
			len += tlen;
		}
		sql[len] = '\0';
		if (db_exec_params(db, sql, ps + done * ncols, k * ncols) < 0) {
			free(sql);
			return db_last_err(db) < 0 ? db_last_err(db) : DB_ERR;
		}
		done += k;
	}
	free(sql);
	return DB_OK;
}

long long db_last_insert_id(struct db *db)
{
	return db->conn != NULL ? (long long)mysql_insert_id(db->conn) : 0;
}

static void stmt_free(struct db_stmt *r)
{
	if (r == NULL)
		return;
	if (r->buf != NULL)
		for (unsigned i = 0; i < r->ncols; i++)
			free(r->buf[i]);
	free(r->buf);
	free(r->bind);
	free(r->len);
	free(r->is_null);
	free(r->truncated);
	free(r);
}

struct db_stmt *db_query(struct db *db, const char *sql, const char *types, ...)
{
	struct cached_stmt *cs;
	struct db_stmt *r = NULL;
	MYSQL_RES *meta = NULL;
	MYSQL_FIELD *f;
	va_list ap;

	va_start(ap, types);
	cs = run_args(db, sql, types, ap);
	va_end(ap);
	if (cs == NULL)
		return NULL;

	if (mysql_stmt_store_result(cs->stmt) != 0) {
		fail_stmt(db, cs->stmt, "store_result");
		return NULL;
	}
	if ((r = calloc(1, sizeof *r)) == NULL)
		goto oom;
	r->db = db;
	r->cs = cs;
	if ((meta = mysql_stmt_result_metadata(cs->stmt)) == NULL) {
		set_error(db, DB_ERR, "query", "statement returns no rows");
		goto fail;
	}
	r->ncols = mysql_num_fields(meta);
	f = mysql_fetch_fields(meta);
	r->bind = calloc(r->ncols, sizeof *r->bind);
	r->buf = calloc(r->ncols, sizeof *r->buf);
	r->len = calloc(r->ncols, sizeof *r->len);
	r->is_null = calloc(r->ncols, sizeof *r->is_null);
	r->truncated = calloc(r->ncols, sizeof *r->truncated);
	if (r->ncols > 0 && (r->bind == NULL || r->buf == NULL ||
	    r->len == NULL || r->is_null == NULL || r->truncated == NULL))
		goto oom;

	/* Every column is fetched as text, sized by the widest value in the
	 * stored result; numbers get room for their longest text form. */
	for (unsigned i = 0; i < r->ncols; i++) {
		unsigned long cap = f[i].max_length;

		if (cap < f[i].length && f[i].length < 4096)
			cap = f[i].length;
		if (cap < DB_MIN_COLBUF)
			cap = DB_MIN_COLBUF;
		if ((r->buf[i] = malloc(cap + 1)) == NULL)
			goto oom;
		r->bind[i].buffer_type = MYSQL_TYPE_STRING;
		r->bind[i].buffer = r->buf[i];
		r->bind[i].buffer_length = cap + 1;
		r->bind[i].length = &r->len[i];
		r->bind[i].is_null = &r->is_null[i];
		r->bind[i].error = &r->truncated[i];
	}
	mysql_free_result(meta);
	meta = NULL;
	if (r->ncols > 0 && mysql_stmt_bind_result(cs->stmt, r->bind) != 0) {
		fail_stmt(db, cs->stmt, "bind_result");
		goto fail;
	}
	cs->open = r;
	return r;
oom:
	set_error(db, DB_ERR, "query", "out of memory");
fail:
	if (meta != NULL)
		mysql_free_result(meta);
	mysql_stmt_free_result(cs->stmt);
	stmt_free(r);
	return NULL;
}

int db_fetch(struct db_stmt *r)
{
	MYSQL_STMT *st = r->cs->stmt;
	int rc = mysql_stmt_fetch(st);

	if (rc == MYSQL_NO_DATA)
		return 0;
	if (rc == 1)
		return fail_stmt(r->db, st, "fetch");
	if (rc == MYSQL_DATA_TRUNCATED) {
		/* A value longer than max_length promised: refetch that column. */
		for (unsigned i = 0; i < r->ncols; i++) {
			char *nb;

			if (!r->truncated[i] || r->len[i] < r->bind[i].buffer_length)
				continue;
			if ((nb = realloc(r->buf[i], r->len[i] + 1)) == NULL) {
				set_error(r->db, DB_ERR, "fetch", "out of memory");
				return DB_ERR;
			}
			r->buf[i] = nb;
			r->bind[i].buffer = nb;
			r->bind[i].buffer_length = r->len[i] + 1;
			if (mysql_stmt_fetch_column(st, &r->bind[i], i, 0) != 0)
				return fail_stmt(r->db, st, "fetch_column");
		}
		mysql_stmt_bind_result(st, r->bind);
	}
	for (unsigned i = 0; i < r->ncols; i++) {
		if (r->is_null[i])
			r->len[i] = 0;
		r->buf[i][r->len[i]] = '\0';
	}
	return 1;
}

unsigned db_col_count(const struct db_stmt *r)
{
	return r->ncols;
}

bool db_col_null(const struct db_stmt *r, unsigned col)
{
	return col >= r->ncols || r->is_null[col];
}

const char *db_col_str(const struct db_stmt *r, unsigned col)
{
	return db_col_null(r, col) ? "" : r->buf[col];
}

size_t db_col_len(const struct db_stmt *r, unsigned col)
{
	return db_col_null(r, col) ? 0 : r->len[col];
}

long long db_col_ll(const struct db_stmt *r, unsigned col)
{
	return db_col_null(r, col) ? 0 : strtoll(r->buf[col], NULL, 10);
}

double db_col_double(const struct db_stmt *r, unsigned col)
{
	return db_col_null(r, col) ? 0.0 : strtod(r->buf[col], NULL);
}

void db_done(struct db_stmt *r)
{
	if (r == NULL)
		return;
	/* The connection may have been dropped (and the statement closed)
	 * while the rows were read. */
	if (r->db->conn != NULL && r->cs->open == r) {
		mysql_stmt_free_result(r->cs->stmt);
		r->cs->open = NULL;
	}
	stmt_free(r);
}

static int simple(struct db *db, const char *sql, const char *what)
{
	int rc;

	if ((rc = db_ensure(db)) != DB_OK)
		return rc;
	if (mysql_real_query(db->conn, sql, (unsigned long)strlen(sql)) != 0)
		return fail_conn(db, what);
	return DB_OK;
}

int db_begin(struct db *db)
{
	bool was_connected = db->conn != NULL;
	int rc = simple(db, "START TRANSACTION", "begin");

	/* As in run(): a connection found dead (the server or Galera node
	 * restarted since) is reopened and tried once more; nothing of the
	 * transaction was sent yet. */
	if (rc == DB_ERR_UNAVAILABLE && was_connected)
		rc = simple(db, "START TRANSACTION", "begin");

	if (rc == DB_OK)
		db->in_tx = true;
	return rc;
}

int db_commit(struct db *db)
{
	int rc;

	if (db->conn == NULL) {
		set_error(db, DB_ERR_UNAVAILABLE, "commit", "connection lost");
		db->in_tx = false;
		return DB_ERR_UNAVAILABLE;
	}
	rc = mysql_commit(db->conn) == 0 ? DB_OK : fail_conn(db, "commit");
	db->in_tx = false;
	return rc;
}

void db_rollback(struct db *db)
{
	if (db->conn != NULL && db->in_tx && mysql_rollback(db->conn) != 0)
		fail_conn(db, "rollback");
	db->in_tx = false;
}

int db_exec_script(struct db *db, const char *sql, size_t len)
{
	int rc, status;

	if ((rc = db_ensure(db)) != DB_OK)
		return rc;
	if (mysql_set_server_option(db->conn, MYSQL_OPTION_MULTI_STATEMENTS_ON) != 0)
		return fail_conn(db, "multi_statements");
	rc = DB_OK;
	if (mysql_real_query(db->conn, sql, (unsigned long)len) != 0) {
		rc = fail_conn(db, "script");
	} else {
		/* Drain every result; the first failing statement stops the run. */
		do {
			MYSQL_RES *res = mysql_store_result(db->conn);

			if (res != NULL)
				mysql_free_result(res);
			else if (mysql_field_count(db->conn) != 0) {
				rc = fail_conn(db, "script");
				break;
			}
			status = mysql_next_result(db->conn);
			if (status > 0) {
				rc = fail_conn(db, "script");
				break;
			}
		} while (status == 0);
	}
	if (db->conn != NULL)
		mysql_set_server_option(db->conn, MYSQL_OPTION_MULTI_STATEMENTS_OFF);
	return rc;
}

int db_in_batch(struct db *db, const char *sql, const char *const *ids, size_t n,
                bool *found)
{
	const char *v[DB_IN_BATCH];
	struct db_stmt *st;
	int rc;

	if (n == 0 || n > DB_IN_BATCH)
		return n == 0 ? 0 : DB_ERR;
	for (size_t i = 0; i < DB_IN_BATCH; i++)
		v[i] = ids[i < n ? i : 0];
	st = db_query(db, sql, "ssssssssssssssss", v[0], v[1], v[2], v[3], v[4], v[5],
	              v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]);
	if (st == NULL)
		return db_last_err(db);
	for (size_t i = 0; i < n; i++)
		found[i] = false;
	while ((rc = db_fetch(st)) == 1)
		for (size_t i = 0; i < n; i++)
			if (strcmp(ids[i], db_col_str(st, 0)) == 0)
				found[i] = true;
	db_done(st);
	return rc < 0 ? rc : 0;
}

long long db_exec_in(struct db *db, const char *sql, const struct db_param *head,
                     size_t nhead, const long long *ids, size_t n)
{
	struct db_param ps[DB_MAX_PARAMS];
	long long total = 0, rc;

	if (nhead + DB_IN_BATCH > DB_MAX_PARAMS)
		return DB_ERR;
	for (size_t i = 0; i < nhead; i++)
		ps[i] = head[i];
	for (size_t done = 0; done < n; done += DB_IN_BATCH) {
		for (size_t i = 0; i < DB_IN_BATCH; i++)
			ps[nhead + i] = (struct db_param){ .type = 'i',
			    .i = ids[done + (done + i < n ? i : 0)] };
		if ((rc = db_exec_params(db, sql, ps, nhead + DB_IN_BATCH)) < 0)
			return rc;
		total += rc;
	}
	return total;
}

int db_first_row(struct db *db, struct db_stmt *st, const struct db_text *out, size_t n)
{
	int rc;

	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		for (size_t i = 0; i < n; i++)
			snprintf(out[i].buf, out[i].cap, "%s", db_col_str(st, (unsigned)i));
	db_done(st);
	return rc;
}

unsigned long long db_tx_retries(void)
{
	return tx_retries;
}

int db_tx(struct db *db, const char *what, db_tx_fn body, void *arg)
{
	double start = time_mono_ms();
	int rc = DB_ERR;

	for (int attempt = 1; attempt <= DB_TX_ATTEMPTS; attempt++) {
		if ((rc = db_begin(db)) != DB_OK)
			return rc;
		rc = body(db, arg);
		if (rc >= 0) {
			int c = db_commit(db);

			if (c == DB_OK)
				return rc;
			rc = c;
		} else {
			db_rollback(db);
		}
		if (rc != DB_ERR_DEADLOCK)
			return rc;
		/* A deadlock, a lock wait timeout or (on Galera) a certification
		 * failure at COMMIT: nothing of this attempt was kept.  Not again
		 * past the budget: a lock wait alone can take the server's
		 * innodb_lock_wait_timeout (50 s by default), and a request
		 * retried past nginx's timeout would commit after its client had
		 * an error and may have sent it again. */
		bool last = attempt == DB_TX_ATTEMPTS ||
		            time_mono_ms() - start > DB_TX_BUDGET_MS;
		if (!last)
			tx_retries++;
		log_kv(last ? LOG_WARN : LOG_INFO, last ? "transaction failed" : "transaction retried",
		       "what=%s attempt=%d of=%d retries_total=%llu error=%s", what, attempt,
		       DB_TX_ATTEMPTS, tx_retries, LOG_Q(db_error(db)));
		if (last)
			break;
		/* The ones that collided would collide again at once: each waits
		 * a random few milliseconds, longer with every attempt. */
		struct timespec pause = { 0, (long)arc4random_uniform(20000000u) * attempt };
		nanosleep(&pause, NULL);
	}
	return rc;
}
