/* warehouse.c - the destination MariaDB of pipelines and linked datasets.
 *
 * One MariaDB Connector/C connection per struct wh.  Rows are loaded with
 * LOAD DATA LOCAL INFILE whose "file" is an in-memory buffer handed to the
 * client library through mysql_set_local_infile_handler: values travel in
 * the data stream (tab-separated, backslash-escaped, \N for NULL), never as
 * SQL text, and one statement carries thousands of rows.  It needs
 * neither the FILE privilege nor a file on the server. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>
#include <errmsg.h>
#include <openssl/evp.h>

#include "db/warehouse.h"
#include "util/config.h"
#include "util/str.h"

#define WH_PASSWORD_MAX 1024
#define WH_BATCH_BYTES_MAX (8u << 20)    /* flush a batch at this many bytes */
#define WH_QNAME_MAX (2 * WH_IDENT_MAX * 4 + 3)
#define WH_QUALIFIED_MAX (2 * WH_QNAME_MAX + 2)
#define WH_LOGICAL_MAX 255                /* bytes of a logical schema name */

struct wh {
	MYSQL *conn;
	bool shares_app;
	char app_db[WH_QNAME_MAX];           /* quoted db_name of the service */
	char default_schema[WH_IDENT_MAX * 4 + 1];
	char err[512];
};

struct wh_batch {
	struct wh *w;
	char *sql;                            /* the LOAD DATA statement */
	size_t ncols;
	size_t rows_per_batch;
	char *buf;                            /* rows waiting to be sent */
	size_t len, cap;
	size_t pending;                       /* rows in buf */
	size_t sent_off;                      /* read position of the infile reader */
	long long sent;                       /* rows sent so far */
};

static void set_err(struct wh *w, char *err, size_t errlen, const char *what,
                    const char *text)
{
	snprintf(w->err, sizeof w->err, "%s: %s", what, text);
	str_errf(err, errlen, "%s", w->err);
}

static void conn_err(struct wh *w, char *err, size_t errlen, const char *what)
{
	set_err(w, err, errlen, what, mysql_error(w->conn));
}

const char *wh_error(const struct wh *w)
{
	return w != NULL && w->err[0] != '\0' ? w->err : "no error";
}

/* --- identifiers ---------------------------------------------------------- */

bool wh_ident_ok(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t chars = 0, n;

	if (name == NULL || *name == '\0')
		return false;
	while (*p != '\0') {
		/* 4-byte sequences are outside the BMP: MariaDB identifiers
		 * cannot hold them. */
		n = str_utf8_next(p, 4, NULL);   /* stops at the NUL */
		if (n == 0 || n == 4)
			return false;
		p += n;
		if (++chars > WH_IDENT_MAX)
			return false;
	}
	return p[-1] != ' ';
}

int wh_quote(const char *name, char *buf, size_t cap)
{
	size_t o = 0;

	if (!wh_ident_ok(name) || cap == 0)
		return -1;
	if (o + 1 >= cap)
		return -1;
	buf[o++] = '`';
	for (const char *p = name; *p != '\0'; p++) {
		if (o + (*p == '`' ? 2 : 1) >= cap)
			return -1;
		if (*p == '`')
			buf[o++] = '`';
		buf[o++] = *p;
	}
	if (o + 2 > cap)
		return -1;
	buf[o++] = '`';
	buf[o] = '\0';
	return 0;
}

/* --- where a customer's schema lives ---------------------------------------- */

static char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

int wh_schema_physical(const char *customer_id, const char *logical,
                       char out[WH_IDENT_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char input[WH_LOGICAL_MAX + 256];
	size_t n, clen, o, chars = 0;
	EVP_MD_CTX *ctx;
	int ok;

	out[0] = '\0';
	if (customer_id == NULL || logical == NULL)
		return -1;
	n = strlen(logical);
	clen = strlen(customer_id);
	if (n == 0 || n > WH_LOGICAL_MAX || clen == 0 || clen > 255)
		return -1;
	memcpy(input, customer_id, clen);
	input[clen] = '\n';
	for (size_t i = 0; i < n; i++)
		input[clen + 1 + i] = ascii_lower(logical[i]);
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(ctx, input, clen + 1 + n) == 1 &&
	     EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 8;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -1;

	/* The readable part: one output character per input character, so
	 * that SQL's REGEXP_REPLACE in migration 008 makes the same name. */
	o = strlen(WH_SCHEMA_PREFIX);
	memcpy(out, WH_SCHEMA_PREFIX, o);
	for (size_t i = 0; i < n && chars < WH_SCHEMA_LOGICAL_CHARS; i++) {
		char c = ascii_lower(logical[i]);

		if ((unsigned char)c >= 0x80 && ((unsigned char)c & 0xc0) == 0x80)
			continue;                    /* a continuation byte */
		out[o++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'
		           ? c : '_';
		chars++;
	}
	out[o++] = '_';
	for (int i = 0; i < 8; i++) {
		out[o++] = hex[md[i] >> 4];
		out[o++] = hex[md[i] & 15];
	}
	out[o] = '\0';
	return 0;
}

bool wh_schema_reserved(const char *logical, const char *service_db)
{
	static const char *const system[] = {
		"mysql", "information_schema", "performance_schema", "sys",
	};

	if (logical == NULL)
		return false;
	for (size_t i = 0; i < sizeof system / sizeof system[0]; i++)
		if (str_eq_nocase(logical, system[i]))
			return true;
	return service_db != NULL && str_eq_nocase(logical, service_db);
}

bool wh_schema_is_warehouse(const char *physical)
{
	size_t n = strlen(WH_SCHEMA_PREFIX);

	return physical != NULL && strncmp(physical, WH_SCHEMA_PREFIX, n) == 0 &&
	       physical[n] != '\0' && wh_ident_ok(physical);
}

/* `schema`.`table` into buf; an empty schema is the default one.  Only a
 * warehouse database is ever named: a loader's statement cannot reach the
 * service's or MariaDB's own schemas through here, whatever the caller. */
static int qualified(const struct wh *w, const char *schema, const char *table,
                     char *buf, size_t cap)
{
	char qs[WH_QNAME_MAX], qt[WH_QNAME_MAX];
	int n;

	if (schema == NULL || schema[0] == '\0')
		schema = w->default_schema;
	if (!wh_schema_is_warehouse(schema))
		return -1;
	if (wh_quote(schema, qs, sizeof qs) != 0 || wh_quote(table, qt, sizeof qt) != 0)
		return -1;
	n = snprintf(buf, cap, "%s.%s", qs, qt);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static const char *schema_or_default(const struct wh *w, const char *schema)
{
	return schema == NULL || schema[0] == '\0' ? w->default_schema : schema;
}

/* A column type from the callers' fixed vocabulary: letters, digits,
 * spaces, parentheses and commas only, so it can never end the column
 * list or start another statement. */
static bool sql_type_ok(const char *t)
{
	size_t n = 0;

	if (t == NULL || *t == '\0')
		return false;
	for (; *t != '\0'; t++, n++) {
		char c = *t;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == ' ' || c == '(' || c == ')' ||
		      c == ','))
			return false;
	}
	return n <= 64;
}

/* --- connection ------------------------------------------------------------ */

struct wh *wh_open(const struct config *cfg, char *err, size_t errlen)
{
	char pw[WH_PASSWORD_MAX + 1];
	const char *host, *sock, *user, *pass;
	unsigned int port, timeout = (unsigned int)cfg->db_connect_timeout;
	unsigned int io_timeout = 600, local_infile = 1;
	my_bool off = 0;
	struct wh *w;

	if ((w = calloc(1, sizeof *w)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return NULL;
	}
	pw[0] = '\0';
	if (!wh_ident_ok(cfg->warehouse_default_schema) ||
	    str_copy(w->default_schema, sizeof w->default_schema,
	             cfg->warehouse_default_schema) != 0) {
		str_errf(err, errlen, "warehouse_default_schema is not a valid identifier");
		goto fail;
	}
	if (wh_quote(cfg->db_name, w->app_db, sizeof w->app_db) != 0) {
		str_errf(err, errlen, "db_name is not a valid identifier");
		goto fail;
	}
	w->shares_app = cfg->warehouse_host[0] == '\0' &&
	                cfg->warehouse_socket[0] == '\0';
	if (w->shares_app) {
		host = cfg->db_host;
		sock = cfg->db_socket;
		port = (unsigned int)cfg->db_port;
	} else {
		host = cfg->warehouse_host;
		sock = cfg->warehouse_socket;
		port = (unsigned int)cfg->warehouse_port;
	}
	/* Always the loader account: its grants, not this code, are what
	 * keeps a load out of every database but the warehouse's. */
	if (config_read_password_file("warehouse_password_file",
	                              cfg->warehouse_password_file, pw, sizeof pw,
	                              err, errlen) != 0)
		goto fail;
	user = cfg->warehouse_user;
	pass = pw;

	if ((w->conn = mysql_init(NULL)) == NULL) {
		str_errf(err, errlen, "out of memory");
		goto fail;
	}
	mysql_options(w->conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(w->conn, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
	mysql_options(w->conn, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
	mysql_options(w->conn, MYSQL_OPT_RECONNECT, &off);
	mysql_options(w->conn, MYSQL_OPT_LOCAL_INFILE, &local_infile);
	mysql_options(w->conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(w->conn, MYSQL_INIT_COMMAND,
	    "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,"
	    "NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
	    "NO_ENGINE_SUBSTITUTION'");
	if (mysql_real_connect(w->conn, sock[0] != '\0' ? NULL : host, user, pass,
	                       NULL, sock[0] != '\0' ? 0 : port,
	                       sock[0] != '\0' ? sock : NULL, CLIENT_FOUND_ROWS) == NULL) {
		str_errf(err, errlen, "cannot connect to the warehouse (%s): %s",
		         sock[0] != '\0' ? sock : host, mysql_error(w->conn));
		goto fail;
	}
	explicit_bzero(pw, sizeof pw);
	return w;
fail:
	explicit_bzero(pw, sizeof pw);
	wh_close(w);
	return NULL;
}

void wh_close(struct wh *w)
{
	if (w == NULL)
		return;
	if (w->conn != NULL)
		mysql_close(w->conn);
	free(w);
}

bool wh_shares_app_server(const struct wh *w)
{
	return w->shares_app;
}

int wh_app_table(const struct wh *w, const char *table, char *buf, size_t cap)
{
	char qt[WH_QNAME_MAX];
	int n;

	if (wh_quote(table, qt, sizeof qt) != 0)
		return -1;
	n = snprintf(buf, cap, "%s.%s", w->app_db, qt);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

const char *wh_default_schema(const struct wh *w)
{
	return w->default_schema;
}

/* --- statements ------------------------------------------------------------------ */

/* Drain whatever results a statement left (none for DDL and DML). */
static void drain(MYSQL *m)
{
	MYSQL_RES *res;

	do {
		if ((res = mysql_store_result(m)) != NULL)
			mysql_free_result(res);
	} while (mysql_next_result(m) == 0);
}

long long wh_exec(struct wh *w, const char *sql, char *err, size_t errlen)
{
	my_ulonglong n;

	if (mysql_real_query(w->conn, sql, (unsigned long)strlen(sql)) != 0) {
		conn_err(w, err, errlen, "warehouse");
		return -1;
	}
	n = mysql_affected_rows(w->conn);
	drain(w->conn);
	return n == (my_ulonglong)-1 ? 0 : (long long)n;
}

long long wh_exec_bound(struct wh *w, const char *sql, const char *const *params,
                        size_t nparams, char *err, size_t errlen)
{
	MYSQL_STMT *st;
	MYSQL_BIND *b = NULL;
	unsigned long *lens = NULL;
	long long rc = -1;
	my_ulonglong n;

	if ((st = mysql_stmt_init(w->conn)) == NULL) {
		conn_err(w, err, errlen, "warehouse");
		return -1;
	}
	if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) != 0) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	if (mysql_stmt_param_count(st) != nparams) {
		set_err(w, err, errlen, "warehouse", "parameter count does not match the SQL");
		goto out;
	}
	if (nparams > 0) {
		b = calloc(nparams, sizeof *b);
		lens = calloc(nparams, sizeof *lens);
		if (b == NULL || lens == NULL) {
			set_err(w, err, errlen, "warehouse", "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nparams; i++) {
			if (params[i] == NULL) {
				b[i].buffer_type = MYSQL_TYPE_NULL;
				continue;
			}
			lens[i] = (unsigned long)strlen(params[i]);
			b[i].buffer_type = MYSQL_TYPE_STRING;
			b[i].buffer = (void *)(uintptr_t)params[i];
			b[i].buffer_length = lens[i];
			b[i].length = &lens[i];
		}
		if (mysql_stmt_bind_param(st, b) != 0) {
			set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
			goto out;
		}
	}
	if (mysql_stmt_execute(st) != 0) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	n = mysql_stmt_affected_rows(st);
	rc = n == (my_ulonglong)-1 ? 0 : (long long)n;
out:
	free(b);
	free(lens);
	mysql_stmt_close(st);
	return rc;
}

int wh_begin(struct wh *w)
{
	return wh_exec(w, "START TRANSACTION", NULL, 0) < 0 ? -1 : 0;
}

int wh_commit(struct wh *w)
{
	if (mysql_commit(w->conn) != 0) {
		conn_err(w, NULL, 0, "commit");
		return -1;
	}
	return 0;
}

void wh_rollback(struct wh *w)
{
	if (w != NULL && w->conn != NULL)
		mysql_rollback(w->conn);
}

/* --- tables ------------------------------------------------------------------------ */

/* sql, whose two parameters are a table's schema and name, executed with
 * its result stored; NULL with err. */
static MYSQL_STMT *table_query(struct wh *w, const char *sql, const char *schema,
                               const char *table, char *err, size_t errlen)
{
	MYSQL_STMT *st;
	MYSQL_BIND b[2];
	unsigned long lens[2];
	const char *v[2];

	v[0] = schema_or_default(w, schema);
	v[1] = table;
	if (!wh_schema_is_warehouse(v[0]) || !wh_ident_ok(v[1])) {
		set_err(w, err, errlen, "warehouse", "invalid schema or table name");
		return NULL;
	}
	if ((st = mysql_stmt_init(w->conn)) == NULL) {
		conn_err(w, err, errlen, "warehouse");
		return NULL;
	}
	memset(b, 0, sizeof b);
	for (int i = 0; i < 2; i++) {
		lens[i] = (unsigned long)strlen(v[i]);
		b[i].buffer_type = MYSQL_TYPE_STRING;
		b[i].buffer = (void *)(uintptr_t)v[i];
		b[i].buffer_length = lens[i];
		b[i].length = &lens[i];
	}
	if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) != 0 ||
	    mysql_stmt_bind_param(st, b) != 0 || mysql_stmt_execute(st) != 0 ||
	    mysql_stmt_store_result(st) != 0) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		mysql_stmt_close(st);
		return NULL;
	}
	return st;
}

int wh_table_exists(struct wh *w, const char *schema, const char *table,
                    char *err, size_t errlen)
{
	MYSQL_STMT *st = table_query(w, "SELECT 1 FROM information_schema.TABLES "
	                             "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
	                             schema, table, err, errlen);
	int rc = -1, f;

	if (st == NULL)
		return -1;
	f = mysql_stmt_fetch(st);
	if (f == 1) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	rc = f == MYSQL_NO_DATA ? 0 : 1;
out:
	mysql_stmt_close(st);
	return rc;
}

int wh_tables_like(struct wh *w, const char *like, int min_age_s,
                   wh_table_fn fn, void *arg, char *err, size_t errlen)
{
	const char *sql = "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
	                  "WHERE TABLE_NAME LIKE ? AND (CREATE_TIME IS NULL OR "
	                  "CREATE_TIME < NOW() - INTERVAL ? SECOND)";
	char names[2][WH_IDENT_MAX * 4 + 1];
	unsigned long lens[3];
	long long age = min_age_s;
	MYSQL_STMT *st = NULL;
	MYSQL_BIND in[2], out[2];
	int rc = -1, f, n = 0;

	if ((st = mysql_stmt_init(w->conn)) == NULL) {
		conn_err(w, err, errlen, "warehouse");
		return -1;
	}
	memset(in, 0, sizeof in);
	memset(out, 0, sizeof out);
	lens[2] = (unsigned long)strlen(like);
	in[0].buffer_type = MYSQL_TYPE_STRING;
	in[0].buffer = (void *)(uintptr_t)like;
	in[0].buffer_length = lens[2];
	in[0].length = &lens[2];
	in[1].buffer_type = MYSQL_TYPE_LONGLONG;
	in[1].buffer = &age;
	for (int i = 0; i < 2; i++) {
		out[i].buffer_type = MYSQL_TYPE_STRING;
		out[i].buffer = names[i];
		out[i].buffer_length = sizeof names[i];
		out[i].length = &lens[i];
	}
	if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) != 0 ||
	    mysql_stmt_bind_param(st, in) != 0 || mysql_stmt_execute(st) != 0 ||
	    mysql_stmt_store_result(st) != 0 || mysql_stmt_bind_result(st, out) != 0) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	while ((f = mysql_stmt_fetch(st)) == 0) {
		names[0][lens[0] < sizeof names[0] ? lens[0] : sizeof names[0] - 1] = '\0';
		names[1][lens[1] < sizeof names[1] ? lens[1] : sizeof names[1] - 1] = '\0';
		fn(arg, names[0], names[1]);
		n++;
	}
	if (f == 1) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	rc = n;
out:
	mysql_stmt_close(st);
	return rc;
}

int wh_table_columns(struct wh *w, const char *schema, const char *table,
                     wh_column_fn fn, void *arg, char *err, size_t errlen)
{
	MYSQL_STMT *st = table_query(w, "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
	                             "LEFT(COLUMN_COMMENT, 64) FROM information_schema.COLUMNS "
	                             "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? "
	                             "ORDER BY ORDINAL_POSITION", schema, table, err, errlen);
	char got[4][WH_IDENT_MAX * 4 + 1];
	unsigned long lens[4];
	MYSQL_BIND out[4];
	int rc = -1, f, n = 0;

	if (st == NULL)
		return -1;
	memset(out, 0, sizeof out);
	for (int i = 0; i < 4; i++) {
		out[i].buffer_type = MYSQL_TYPE_STRING;
		out[i].buffer = got[i];
		out[i].buffer_length = sizeof got[i];
		out[i].length = &lens[i];
	}
	if (mysql_stmt_bind_result(st, out) != 0) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	while ((f = mysql_stmt_fetch(st)) == 0 || f == MYSQL_DATA_TRUNCATED) {
		for (int i = 0; i < 4; i++)
			got[i][lens[i] < sizeof got[i] ? lens[i] : sizeof got[i] - 1] = '\0';
		fn(arg, got[0], got[1], strcmp(got[2], "YES") == 0, got[3]);
		n++;
	}
	if (f == 1) {
		set_err(w, err, errlen, "warehouse", mysql_stmt_error(st));
		goto out;
	}
	rc = n;
out:
	mysql_stmt_close(st);
	return rc;
}

int wh_table_drop(struct wh *w, const char *schema, const char *table,
                  char *err, size_t errlen)
{
	char q[WH_QUALIFIED_MAX], sql[WH_QUALIFIED_MAX + 32];

	if (qualified(w, schema, table, q, sizeof q) != 0) {
		set_err(w, err, errlen, "warehouse", "invalid schema or table name");
		return -1;
	}
	snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", q);
	return wh_exec(w, sql, err, errlen) < 0 ? -1 : 0;
}

int wh_table_create(struct wh *w, const char *schema, const char *table,
                    const struct wh_column *cols, size_t ncols, int flags,
                    char *err, size_t errlen)
{
	char qs[WH_QNAME_MAX], q[WH_QUALIFIED_MAX], qc[WH_QNAME_MAX];
	char sql[WH_QNAME_MAX + 64];
	char *ddl = NULL;
	size_t cap, len;
	int rc = -1;

	if (ncols == 0) {
		set_err(w, err, errlen, "warehouse", "a table needs at least one column");
		return -1;
	}
	if (wh_quote(schema_or_default(w, schema), qs, sizeof qs) != 0 ||
	    qualified(w, schema, table, q, sizeof q) != 0) {
		set_err(w, err, errlen, "warehouse", "invalid schema or table name");
		return -1;
	}
	cap = strlen(q) + 128 + ncols * (WH_QNAME_MAX + 80);
	if ((ddl = malloc(cap)) == NULL) {
		set_err(w, err, errlen, "warehouse", "out of memory");
		return -1;
	}
	len = (size_t)snprintf(ddl, cap, "CREATE TABLE %s%s (",
	                       (flags & WH_CREATE_IF_NOT_EXISTS) ? "IF NOT EXISTS " : "", q);
	for (size_t i = 0; i < ncols; i++) {
		if (wh_quote(cols[i].name, qc, sizeof qc) != 0) {
			str_errf(err, errlen, "invalid column name (column %zu)", i + 1);
			snprintf(w->err, sizeof w->err, "invalid column name");
			goto out;
		}
		if (!sql_type_ok(cols[i].sql_type)) {
			str_errf(err, errlen, "invalid column type for %s", qc);
			snprintf(w->err, sizeof w->err, "invalid column type");
			goto out;
		}
		len += (size_t)snprintf(ddl + len, cap - len, "%s%s %s%s",
		                        i > 0 ? ", " : "", qc, cols[i].sql_type,
		                        cols[i].nullable ? " NULL" : " NOT NULL");
	}
	snprintf(ddl + len, cap - len,
	         ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");

	snprintf(sql, sizeof sql, "CREATE SCHEMA IF NOT EXISTS %s", qs);
	if (wh_exec(w, sql, err, errlen) < 0)
		goto out;
	if ((flags & WH_CREATE_REPLACE) && wh_table_drop(w, schema, table, err, errlen) != 0)
		goto out;
	if (wh_exec(w, ddl, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	free(ddl);
	return rc;
}

int wh_table_swap(struct wh *w, const char *schema, const char *table,
                  const char *staging, char *err, size_t errlen)
{
	char qt[WH_QUALIFIED_MAX], qs[WH_QUALIFIED_MAX], qo[WH_QUALIFIED_MAX];
	char old[WH_IDENT_MAX + 1];
	char sql[4 * WH_QUALIFIED_MAX + 64];
	int ex;

	/* The old table's name for the moment of the swap: short and ours. */
	snprintf(old, sizeof old, "_sluice_old_%ld_%lx", (long)getpid(),
	         (unsigned long)random());
	if (qualified(w, schema, table, qt, sizeof qt) != 0 ||
	    qualified(w, schema, staging, qs, sizeof qs) != 0 ||
	    qualified(w, schema, old, qo, sizeof qo) != 0) {
		set_err(w, err, errlen, "warehouse", "invalid schema or table name");
		return -1;
	}
	if ((ex = wh_table_exists(w, schema, table, err, errlen)) < 0)
		return -1;
	if (ex == 0) {
		snprintf(sql, sizeof sql, "RENAME TABLE %s TO %s", qs, qt);
		return wh_exec(w, sql, err, errlen) < 0 ? -1 : 0;
	}
	/* Both renames in one statement: readers see the old table or the
	 * new one, never neither. */
	snprintf(sql, sizeof sql, "RENAME TABLE %s TO %s, %s TO %s", qt, qo, qs, qt);
	if (wh_exec(w, sql, err, errlen) < 0)
		return -1;
	snprintf(sql, sizeof sql, "DROP TABLE %s", qo);
	return wh_exec(w, sql, err, errlen) < 0 ? -1 : 0;
}

/* --- batched loading ------------------------------------------------------------------ */

struct wh_batch *wh_batch_new(struct wh *w, const char *schema, const char *table,
                              const char *const *columns, size_t ncols,
                              size_t rows_per_batch, char *err, size_t errlen)
{
	char q[WH_QUALIFIED_MAX], qc[WH_QNAME_MAX];
	struct wh_batch *b;
	size_t cap, len;

	if (ncols == 0) {
		set_err(w, err, errlen, "warehouse", "no columns to load");
		return NULL;
	}
	if (qualified(w, schema, table, q, sizeof q) != 0) {
		set_err(w, err, errlen, "warehouse", "invalid schema or table name");
		return NULL;
	}
	if ((b = calloc(1, sizeof *b)) == NULL) {
		set_err(w, err, errlen, "warehouse", "out of memory");
		return NULL;
	}
	b->w = w;
	b->ncols = ncols;
	b->rows_per_batch = rows_per_batch > 0 ? rows_per_batch : 10000;
	cap = strlen(q) + 256 + ncols * (WH_QNAME_MAX + 2);
	if ((b->sql = malloc(cap)) == NULL) {
		set_err(w, err, errlen, "warehouse", "out of memory");
		goto fail;
	}
	/* The file name is a constant: the local infile handler below supplies
	 * the bytes from memory whatever it says. */
	len = (size_t)snprintf(b->sql, cap,
	    "LOAD DATA LOCAL INFILE 'sluice-batch' INTO TABLE %s "
	    "CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' "
	    "LINES TERMINATED BY '\\n' (", q);
	for (size_t i = 0; i < ncols; i++) {
		if (wh_quote(columns[i], qc, sizeof qc) != 0) {
			str_errf(err, errlen, "invalid column name (column %zu)", i + 1);
			snprintf(w->err, sizeof w->err, "invalid column name");
			goto fail;
		}
		len += (size_t)snprintf(b->sql + len, cap - len, "%s%s",
		                        i > 0 ? "," : "", qc);
	}
	snprintf(b->sql + len, cap - len, ")");
	return b;
fail:
	wh_batch_free(b);
	return NULL;
}

static int buf_reserve(struct wh_batch *b, size_t more)
{
	size_t ncap;
	char *nb;

	if (b->len + more <= b->cap)
		return 0;
	ncap = b->cap > 0 ? b->cap : 65536;
	while (ncap < b->len + more)
		ncap *= 2;
	if ((nb = realloc(b->buf, ncap)) == NULL)
		return -1;
	b->buf = nb;
	b->cap = ncap;
	return 0;
}

int wh_batch_add(struct wh_batch *b, const char *const *vals, const size_t *lens,
                 char *err, size_t errlen)
{
	size_t need = b->ncols + 1;

	for (size_t i = 0; i < b->ncols; i++)
		need += vals[i] == NULL ? 2 : 2 * lens[i];
	if (buf_reserve(b, need) != 0) {
		set_err(b->w, err, errlen, "warehouse", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < b->ncols; i++) {
		char *o = b->buf + b->len;

		if (i > 0)
			*o++ = '\t';
		if (vals[i] == NULL) {
			*o++ = '\\';
			*o++ = 'N';
		} else {
			const char *v = vals[i];

			for (size_t k = 0; k < lens[i]; k++) {
				char c = v[k];

				switch (c) {
				case '\\': *o++ = '\\'; *o++ = '\\'; break;
				case '\t': *o++ = '\\'; *o++ = 't'; break;
				case '\n': *o++ = '\\'; *o++ = 'n'; break;
				case '\r': *o++ = '\\'; *o++ = 'r'; break;
				case '\0': *o++ = '\\'; *o++ = '0'; break;
				default: *o++ = c;
				}
			}
		}
		b->len = (size_t)(o - b->buf);
	}
	b->buf[b->len++] = '\n';
	b->pending++;
	if (b->pending >= b->rows_per_batch || b->len >= WH_BATCH_BYTES_MAX)
		return wh_batch_flush(b, err, errlen);
	return 0;
}

/* The local infile callbacks: the "file" is b->buf[0..len). */
static int infile_init(void **ptr, const char *filename, void *userdata)
{
	struct wh_batch *b = userdata;

	(void)filename;
	b->sent_off = 0;
	*ptr = b;
	return 0;
}

static int infile_read(void *ptr, char *buf, unsigned int len)
{
	struct wh_batch *b = ptr;
	size_t n = b->len - b->sent_off;

	if (n > len)
		n = len;
	memcpy(buf, b->buf + b->sent_off, n);
	b->sent_off += n;
	return (int)n;
}

static void infile_end(void *ptr)
{
	(void)ptr;
}

static int infile_error(void *ptr, char *msg, unsigned int len)
{
	(void)ptr;
	snprintf(msg, len, "in-memory batch could not be read");
	return CR_UNKNOWN_ERROR;
}

int wh_batch_flush(struct wh_batch *b, char *err, size_t errlen)
{
	struct wh *w = b->w;
	my_ulonglong n;
	unsigned warnings;
	int rc = -1;

	if (b->pending == 0)
		return 0;
	mysql_set_local_infile_handler(w->conn, infile_init, infile_read,
	                               infile_end, infile_error, b);
	if (mysql_real_query(w->conn, b->sql, (unsigned long)strlen(b->sql)) != 0) {
		conn_err(w, err, errlen, "warehouse load");
		goto out;
	}
	n = mysql_affected_rows(w->conn);
	warnings = mysql_warning_count(w->conn);
	drain(w->conn);
	/* LOAD DATA LOCAL turns data errors into warnings and skips rows: a
	 * load must be exact, so any warning or missing row fails it. */
	if (warnings > 0 || n != (my_ulonglong)b->pending) {
		char first[256] = "";
		MYSQL_RES *res;
		MYSQL_ROW row;

		if (warnings > 0 &&
		    mysql_real_query(w->conn, "SHOW WARNINGS LIMIT 1", 21) == 0 &&
		    (res = mysql_store_result(w->conn)) != NULL) {
			if ((row = mysql_fetch_row(res)) != NULL && row[2] != NULL)
				snprintf(first, sizeof first, "%s", row[2]);
			mysql_free_result(res);
		}
		/* Said as it is: the caller rolls the transaction back, so
		 * none of these rows stays, whatever the server accepted. */
		snprintf(w->err, sizeof w->err,
		         "warehouse load refused a batch of %zu rows, rolled back "
		         "(%llu accepted, %u warnings)%s%s",
		         b->pending, (unsigned long long)n, warnings,
		         first[0] != '\0' ? ": " : "", first);
		str_errf(err, errlen, "%s", w->err);
		goto out;
	}
	b->sent += (long long)b->pending;
	b->pending = 0;
	b->len = 0;
	rc = 0;
out:
	mysql_set_local_infile_default(w->conn);
	/* A batch grown by one huge row does not keep its memory. */
	if (b->cap > 2 * WH_BATCH_BYTES_MAX) {
		free(b->buf);
		b->buf = NULL;
		b->cap = 0;
		b->len = 0;
		b->pending = 0;
	}
	return rc;
}

long long wh_batch_rows(const struct wh_batch *b)
{
	return b->sent;
}

void wh_batch_free(struct wh_batch *b)
{
	if (b == NULL)
		return;
	free(b->sql);
	free(b->buf);
	free(b);
}
