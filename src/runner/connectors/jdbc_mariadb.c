/* jdbc_mariadb.c - the mariadb and mysql plugins of the jdbc connector, on
 * MariaDB Connector/C.
 *
 * Queries are prepared statements (the bookmark is a bound parameter) whose
 * rows are fetched one at a time straight off the connection: no
 * mysql_stmt_store_result, so the client never holds the result set.  Every
 * column is bound as a string, which the client library formats from the
 * binary protocol (dates with the column's fractional digits, numbers
 * exactly); a value longer than its buffer is fetched again into a larger
 * one.  The session reads TIMESTAMP columns in UTC. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/connectors/jdbc.h"
#include "util/str.h"

#define COLBUF_MIN 64
#define COLBUF_START_MAX 65536

struct jdbc_src {
	MYSQL *m;
	MYSQL_STMT *st;
	unsigned ncols;
	MYSQL_BIND *bind;
	char **buf;
	unsigned long *len;
	my_bool *is_null;
	my_bool *trunc;
	const char **vals;
	size_t *lens;
};

static void result_free(struct jdbc_src *s)
{
	if (s->st != NULL) {
		mysql_stmt_close(s->st);
		s->st = NULL;
	}
	if (s->buf != NULL)
		for (unsigned i = 0; i < s->ncols; i++)
			free(s->buf[i]);
	free(s->buf);
	free(s->bind);
	free(s->len);
	free(s->is_null);
	free(s->trunc);
	free(s->vals);
	free(s->lens);
	s->buf = NULL;
	s->bind = NULL;
	s->len = NULL;
	s->is_null = s->trunc = NULL;
	s->vals = NULL;
	s->lens = NULL;
	s->ncols = 0;
}

static void mdb_close(struct jdbc_src *s)
{
	if (s == NULL)
		return;
	result_free(s);
	if (s->m != NULL)
		mysql_close(s->m);
	free(s);
}

static int mdb_open(struct jdbc_src **out, const struct source_conn *c,
                    char *err, size_t errlen)
{
	unsigned int timeout = 10, io_timeout = 3600, proto = MYSQL_PROTOCOL_TCP;
	struct jdbc_src *s;
	my_bool off = 0;

	*out = NULL;
	if ((s = calloc(1, sizeof *s)) == NULL || (s->m = mysql_init(NULL)) == NULL) {
		free(s);
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	mysql_options(s->m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(s->m, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
	mysql_options(s->m, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
	mysql_options(s->m, MYSQL_OPT_RECONNECT, &off);
	/* host:port always, even for "localhost" (which would mean a socket) */
	mysql_options(s->m, MYSQL_OPT_PROTOCOL, &proto);
	mysql_options(s->m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* UTC for TIMESTAMP columns; a slow warehouse must not make the
	 * server give up on a result we are still reading. */
	mysql_options(s->m, MYSQL_INIT_COMMAND,
	              "SET time_zone = '+00:00', net_write_timeout = 3600");
	if (mysql_real_connect(s->m, c->host, c->user, c->password,
	                       c->database[0] != '\0' ? c->database : NULL,
	                       (unsigned int)c->port, NULL, 0) == NULL) {
		str_errf(err, errlen, "cannot connect to MariaDB at %s:%d: %s",
		         c->host, c->port, mysql_error(s->m));
		mdb_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

static int fail(struct jdbc_src *s, char *err, size_t errlen, const char *what)
{
	str_errf(err, errlen, "source %s failed: %s", what,
	         s->st != NULL ? mysql_stmt_error(s->st) : mysql_error(s->m));
	return -1;
}

/* Prepare, bind string parameters, execute, bind the result columns. */
static int run(struct jdbc_src *s, const char *sql, const char *const *params,
               unsigned nparams, char *err, size_t errlen)
{
	MYSQL_BIND pb[4];
	unsigned long plen[4];
	MYSQL_RES *meta = NULL;
	MYSQL_FIELD *f;

	result_free(s);
	if (nparams > 4)
		return -1;
	if ((s->st = mysql_stmt_init(s->m)) == NULL)
		return fail(s, err, errlen, "statement");
	if (mysql_stmt_prepare(s->st, sql, (unsigned long)strlen(sql)) != 0)
		return fail(s, err, errlen, "query");
	memset(pb, 0, sizeof pb);
	for (unsigned i = 0; i < nparams; i++) {
		plen[i] = (unsigned long)strlen(params[i]);
		pb[i].buffer_type = MYSQL_TYPE_STRING;
		pb[i].buffer = (void *)(uintptr_t)params[i];
		pb[i].buffer_length = plen[i];
		pb[i].length = &plen[i];
	}
	if (nparams > 0 && mysql_stmt_bind_param(s->st, pb) != 0)
		return fail(s, err, errlen, "query");
	if (mysql_stmt_execute(s->st) != 0)
		return fail(s, err, errlen, "query");
	if ((meta = mysql_stmt_result_metadata(s->st)) == NULL)
		return fail(s, err, errlen, "query");
	s->ncols = mysql_num_fields(meta);
	f = mysql_fetch_fields(meta);
	s->bind = calloc(s->ncols, sizeof *s->bind);
	s->buf = calloc(s->ncols, sizeof *s->buf);
	s->len = calloc(s->ncols, sizeof *s->len);
	s->is_null = calloc(s->ncols, sizeof *s->is_null);
	s->trunc = calloc(s->ncols, sizeof *s->trunc);
	s->vals = calloc(s->ncols, sizeof *s->vals);
	s->lens = calloc(s->ncols, sizeof *s->lens);
	if (s->bind == NULL || s->buf == NULL || s->len == NULL || s->is_null == NULL ||
	    s->trunc == NULL || s->vals == NULL || s->lens == NULL)
		goto oom;
	for (unsigned i = 0; i < s->ncols; i++) {
		unsigned long cap = f[i].length;

		if (cap < COLBUF_MIN)
			cap = COLBUF_MIN;
		if (cap > COLBUF_START_MAX)
			cap = COLBUF_START_MAX;
		if ((s->buf[i] = malloc(cap + 1)) == NULL)
			goto oom;
		s->bind[i].buffer_type = MYSQL_TYPE_STRING;
		s->bind[i].buffer = s->buf[i];
		s->bind[i].buffer_length = cap + 1;
		s->bind[i].length = &s->len[i];
		s->bind[i].is_null = &s->is_null[i];
		s->bind[i].error = &s->trunc[i];
	}
	mysql_free_result(meta);
	if (mysql_stmt_bind_result(s->st, s->bind) != 0)
		return fail(s, err, errlen, "query");
	return 0;
oom:
	mysql_free_result(meta);
	str_errf(err, errlen, "out of memory");
	return -1;
}

static int mdb_fetch(struct jdbc_src *s, const char *const **vals, const size_t **lens,
                     char *err, size_t errlen)
{
	int rc = mysql_stmt_fetch(s->st);

	if (rc == MYSQL_NO_DATA)
		return 0;
	if (rc == 1)
		return fail(s, err, errlen, "read");
	if (rc == MYSQL_DATA_TRUNCATED) {
		for (unsigned i = 0; i < s->ncols; i++) {
			char *nb;

			if (!s->trunc[i] || s->len[i] < s->bind[i].buffer_length)
				continue;
			if ((nb = realloc(s->buf[i], s->len[i] + 1)) == NULL) {
				str_errf(err, errlen, "out of memory for a value of %lu bytes",
				         s->len[i]);
				return -1;
			}
			s->buf[i] = nb;
			s->bind[i].buffer = nb;
			s->bind[i].buffer_length = s->len[i] + 1;
			if (mysql_stmt_fetch_column(s->st, &s->bind[i], i, 0) != 0)
				return fail(s, err, errlen, "read");
		}
		if (mysql_stmt_bind_result(s->st, s->bind) != 0)
			return fail(s, err, errlen, "read");
	}
	for (unsigned i = 0; i < s->ncols; i++) {
		if (s->is_null[i]) {
			s->vals[i] = NULL;
			s->lens[i] = 0;
		} else {
			s->buf[i][s->len[i]] = '\0';
			s->vals[i] = s->buf[i];
			s->lens[i] = s->len[i];
		}
	}
	*vals = s->vals;
	*lens = s->lens;
	return 1;
}

static int mdb_catalog_map(const char *const *v, struct jdbc_col *col)
{
	col->nullable = v[3] != NULL && strcmp(v[3], "YES") == 0;
	return jdbc_map_mariadb(v[1], v[2], jdbc_catalog_num(v[4]), jdbc_catalog_num(v[5]),
	                        jdbc_catalog_num(v[6]), jdbc_catalog_num(v[7]), &col->kind,
	                        col->wh_type, sizeof col->wh_type);
}

static int mdb_describe(struct jdbc_src *s, const char *schema, const char *table,
                        struct jdbc_col **cols, size_t *ncols, char *err, size_t errlen)
{
	static const char sql[] =
		"SELECT COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE), IS_NULLABLE, "
		"NUMERIC_PRECISION, NUMERIC_SCALE, CHARACTER_MAXIMUM_LENGTH, "
		"DATETIME_PRECISION FROM information_schema.COLUMNS "
		"WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) "
		"AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION";
	static const struct jdbc_catalog cat = { mdb_fetch, result_free, mdb_catalog_map };
	const char *params[2] = { schema != NULL ? schema : "", table };

	*cols = NULL;
	*ncols = 0;
	if (run(s, sql, params, 2, err, errlen) != 0)
		return -1;
	return jdbc_catalog_cols(s, &cat, cols, ncols, err, errlen);
}

static int mdb_quote(const char *name, char *buf, size_t cap)
{
	return wh_quote(name, buf, cap);
}

static int mdb_select_expr(const struct jdbc_col *c, const char *q, char *buf, size_t cap)
{
	int n = c->kind == JK_BIT ? snprintf(buf, cap, "(%s + 0)", q)
	                          : snprintf(buf, cap, "%s", q);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static const char *mdb_param_expr(enum jdbc_kind k)
{
	/* exact comparisons: a DECIMAL for any integer, DATETIME(6) for dates */
	return k == JK_INT ? "CAST(? AS DECIMAL(20,0))" : "CAST(? AS DATETIME(6))";
}

static int mdb_query(struct jdbc_src *s, const char *sql, const char *param,
                     const struct jdbc_col *const *cols, size_t ncols,
                     char *err, size_t errlen)
{
	(void)cols;
	(void)ncols;
	return run(s, sql, &param, param != NULL ? 1 : 0, err, errlen);
}

const struct jdbc_driver jdbc_mariadb_driver = {
	.name = "MariaDB",
	.open = mdb_open,
	.describe = mdb_describe,
	.quote = mdb_quote,
	.select_expr = mdb_select_expr,
	.param_expr = mdb_param_expr,
	.order_suffix = "",
	.query = mdb_query,
	.fetch = mdb_fetch,
	.close = mdb_close,
};
