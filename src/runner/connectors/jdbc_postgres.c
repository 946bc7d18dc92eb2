/* jdbc_postgres.c - the postgres plugin of the jdbc connector, on libpq.
 *
 * Queries go out with PQsendQueryParams (the bookmark is a bound text
 * parameter) in single-row mode: libpq hands over one row at a time and
 * never holds the result set.  The session speaks UTC and ISO dates;
 * timestamptz columns are selected AT TIME ZONE 'UTC', booleans become 1/0
 * and bytea (hex text) becomes its bytes for the warehouse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/connectors/jdbc.h"
#include "util/str.h"

#define PG_IDENT_BYTES 63

struct jdbc_src {
	PGconn *c;
	PGresult *row;                /* the current single-row result */
	bool active;                  /* a query's results are still coming */
	size_t ncols;
	enum jdbc_kind *kinds;
	const char **vals;
	size_t *lens;
	char **conv;                  /* converted values (bytea) */
	size_t *convcap;
};

/* libpq messages end in a newline; a log line must not. */
static void pg_err(PGconn *c, const char *what, char *err, size_t errlen)
{
	char msg[512];
	size_t n;

	snprintf(msg, sizeof msg, "%s", c != NULL ? PQerrorMessage(c) : "out of memory");
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	for (char *p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	str_errf(err, errlen, "%s: %s", what, msg);
}

static void drain(struct jdbc_src *s)
{
	PGresult *r;

	if (s->row != NULL) {
		PQclear(s->row);
		s->row = NULL;
	}
	if (!s->active)
		return;
	/* Stop a query still streaming, then swallow what is left. */
	if (PQstatus(s->c) == CONNECTION_OK) {
		PGcancel *cn = PQgetCancel(s->c);
		char buf[256];

		if (cn != NULL) {
			PQcancel(cn, buf, sizeof buf);
			PQfreeCancel(cn);
		}
	}
	while ((r = PQgetResult(s->c)) != NULL)
		PQclear(r);
	s->active = false;
}

static void result_free(struct jdbc_src *s)
{
	drain(s);
	if (s->conv != NULL)
		for (size_t i = 0; i < s->ncols; i++)
			free(s->conv[i]);
	free(s->conv);
	free(s->convcap);
	free(s->kinds);
	free(s->vals);
	free(s->lens);
	s->conv = NULL;
	s->convcap = NULL;
	s->kinds = NULL;
	s->vals = NULL;
	s->lens = NULL;
	s->ncols = 0;
}

static void pg_close(struct jdbc_src *s)
{
	if (s == NULL)
		return;
	result_free(s);
	if (s->c != NULL)
		PQfinish(s->c);
	free(s);
}

static int pg_open(struct jdbc_src **out, const struct source_conn *c,
                   char *err, size_t errlen)
{
	char port[16];
	const char *keys[] = { "host", "port", "dbname", "user", "password",
	                       "connect_timeout", "application_name",
	                       "client_encoding", NULL };
	const char *vals[] = { c->host, port, c->database, c->user, c->password,
	                       "10", "sluice", "UTF8", NULL };
	struct jdbc_src *s;
	PGresult *r;
	char what[320];

	*out = NULL;
	snprintf(port, sizeof port, "%d", c->port);
	if ((s = calloc(1, sizeof *s)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(what, sizeof what, "cannot connect to PostgreSQL at %s:%d", c->host, c->port);
	s->c = PQconnectdbParams(keys, vals, 0);
	if (s->c == NULL || PQstatus(s->c) != CONNECTION_OK) {
		pg_err(s->c, what, err, errlen);
		pg_close(s);
		return -1;
	}
	r = PQexec(s->c, "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; "
	           "SET extra_float_digits = 3");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		PQclear(r);
		pg_err(s->c, "source session set-up failed", err, errlen);
		pg_close(s);
		return -1;
	}
	PQclear(r);
	*out = s;
	return 0;
}

static int start(struct jdbc_src *s, const char *sql, const char *const *params,
                 int nparams, size_t ncols, char *err, size_t errlen)
{
	result_free(s);
	if (PQsendQueryParams(s->c, sql, nparams, NULL, params, NULL, NULL, 0) != 1) {
		pg_err(s->c, "source query failed", err, errlen);
		return -1;
	}
	s->active = true;
	if (PQsetSingleRowMode(s->c) != 1) {
		pg_err(s->c, "source query failed", err, errlen);
		return -1;
	}
	s->ncols = ncols;
	s->kinds = calloc(ncols > 0 ? ncols : 1, sizeof *s->kinds);
	s->vals = calloc(ncols > 0 ? ncols : 1, sizeof *s->vals);
	s->lens = calloc(ncols > 0 ? ncols : 1, sizeof *s->lens);
	s->conv = calloc(ncols > 0 ? ncols : 1, sizeof *s->conv);
	s->convcap = calloc(ncols > 0 ? ncols : 1, sizeof *s->convcap);
	if (s->kinds == NULL || s->vals == NULL || s->lens == NULL || s->conv == NULL ||
	    s->convcap == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < ncols; i++)
		s->kinds[i] = JK_OTHER;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int pg_fetch(struct jdbc_src *s, const char *const **vals, const size_t **lens,
                    char *err, size_t errlen)
{
	PGresult *r;

	if (s->row != NULL) {
		PQclear(s->row);
		s->row = NULL;
	}
	if (!s->active)
		return 0;
	for (;;) {
		r = PQgetResult(s->c);
		if (r == NULL) {
			s->active = false;
			return 0;
		}
		switch (PQresultStatus(r)) {
		case PGRES_SINGLE_TUPLE:
			break;
		case PGRES_TUPLES_OK:       /* the end of the rows */
			PQclear(r);
			continue;
		default: {
			char msg[512];
			size_t n;

			snprintf(msg, sizeof msg, "%s", PQresultErrorMessage(r));
			n = strlen(msg);
			while (n > 0 && msg[n - 1] == '\n')
				msg[--n] = '\0';
			PQclear(r);
			str_errf(err, errlen, "source read failed: %s", msg);
			drain(s);
			return -1;
		}
		}
		break;
	}
	s->row = r;
	if ((size_t)PQnfields(r) != s->ncols) {
		str_errf(err, errlen, "source returned %d columns, %zu expected",
		         PQnfields(r), s->ncols);
		return -1;
	}
	for (size_t i = 0; i < s->ncols; i++) {
		const char *v;
		size_t n;

		if (PQgetisnull(r, 0, (int)i)) {
			s->vals[i] = NULL;
			s->lens[i] = 0;
			continue;
		}
		v = PQgetvalue(r, 0, (int)i);
		n = (size_t)PQgetlength(r, 0, (int)i);
		if (s->kinds[i] == JK_BOOL) {
			v = v[0] == 't' ? "1" : "0";
			n = 1;
		} else if (s->kinds[i] == JK_BYTES && n >= 2 && v[0] == '\\' && v[1] == 'x') {
			size_t out = (n - 2) / 2;

			if (s->convcap[i] < out + 1) {
				char *nb = realloc(s->conv[i], out + 1);

				if (nb == NULL) {
					str_errf(err, errlen, "out of memory");
					return -1;
				}
				s->conv[i] = nb;
				s->convcap[i] = out + 1;
			}
			for (size_t k = 0; k < out; k++) {
				int hi = hexval(v[2 + 2 * k]), lo = hexval(v[3 + 2 * k]);

				if (hi < 0 || lo < 0) {
					str_errf(err, errlen, "bad bytea value from the source");
					return -1;
				}
				s->conv[i][k] = (char)(hi << 4 | lo);
			}
			v = s->conv[i];
			n = out;
		}
		s->vals[i] = v;
		s->lens[i] = n;
	}
	*vals = s->vals;
	*lens = s->lens;
	return 1;
}

static int pg_catalog_map(const char *const *v, struct jdbc_col *col)
{
	col->nullable = v[2] != NULL && strcmp(v[2], "YES") == 0;
	return jdbc_map_postgres(v[1], jdbc_catalog_num(v[3]), jdbc_catalog_num(v[4]),
	                         jdbc_catalog_num(v[5]), jdbc_catalog_num(v[6]), &col->kind,
	                         col->wh_type, sizeof col->wh_type);
}

static int pg_describe(struct jdbc_src *s, const char *schema, const char *table,
                       struct jdbc_col **cols, size_t *ncols, char *err, size_t errlen)
{
	static const char sql[] =
		"SELECT column_name, data_type, is_nullable, numeric_precision, "
		"numeric_scale, character_maximum_length, datetime_precision "
		"FROM information_schema.columns "
		"WHERE table_schema = COALESCE(NULLIF($1, ''), current_schema()) "
		"AND table_name = $2 ORDER BY ordinal_position";
	static const struct jdbc_catalog cat = { pg_fetch, result_free, pg_catalog_map };
	const char *params[2] = { schema != NULL ? schema : "", table };

	*cols = NULL;
	*ncols = 0;
	if (start(s, sql, params, 2, 7, err, errlen) != 0)
		return -1;
	return jdbc_catalog_cols(s, &cat, cols, ncols, err, errlen);
}

/* "name" with double quotes doubled; PostgreSQL names are at most 63 bytes. */
static int pg_quote(const char *name, char *buf, size_t cap)
{
	size_t o = 0;

	if (!wh_ident_ok(name) || strlen(name) > PG_IDENT_BYTES || cap < 3)
		return -1;
	buf[o++] = '"';
	for (const char *p = name; *p != '\0'; p++) {
		if (o + 3 >= cap)
			return -1;
		if (*p == '"')
			buf[o++] = '"';
		buf[o++] = *p;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return 0;
}

static int pg_select_expr(const struct jdbc_col *c, const char *q, char *buf, size_t cap)
{
	int n = c->kind == JK_TIMESTAMPTZ ? snprintf(buf, cap, "(%s AT TIME ZONE 'UTC')", q)
	                                  : snprintf(buf, cap, "%s", q);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static const char *pg_param_expr(enum jdbc_kind k)
{
	switch (k) {
	case JK_INT: return "$1::bigint";
	case JK_TIMESTAMPTZ: return "$1::timestamptz";
	default: return "$1::timestamp";   /* date and timestamp columns */
	}
}

static int pg_query(struct jdbc_src *s, const char *sql, const char *param,
                    const struct jdbc_col *const *cols, size_t ncols,
                    char *err, size_t errlen)
{
	if (start(s, sql, &param, param != NULL ? 1 : 0, ncols, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < ncols; i++)
		s->kinds[i] = cols[i]->kind;
	return 0;
}

const struct jdbc_driver jdbc_postgres_driver = {
	.name = "PostgreSQL",
	.open = pg_open,
	.describe = pg_describe,
	.quote = pg_quote,
	.select_expr = pg_select_expr,
	.param_expr = pg_param_expr,
	.order_suffix = " ASC NULLS FIRST",
	.query = pg_query,
	.fetch = pg_fetch,
	.close = pg_close,
};
