/* jdbc.c - the jdbc connector: a table of a MariaDB/MySQL or PostgreSQL
 * database into a warehouse table.
 *
 *   full_load                 every row into a staging table, then one
 *                             RENAME swaps it for the destination: readers
 *                             see the old rows or the new, never a mix.
 *   incremental               rows whose incremental column is greater than
 *                             the bookmark, in that column's order, appended;
 *                             the bookmark moves to the largest value loaded
 *                             in the same commit as the rows; columns
 *                             whose source type widened are widened first,
 *                             a narrowed or incompatible one fails the run
 *                             before any DDL (db/wh_evolve.h).  Without a
 *                             bookmark (first run, after reset-state) the
 *                             run is a full load (staging + swap) that then
 *                             sets the bookmark.
 *   incremental_with_qualify  the same, but an incremental run's rows go to
 *                             the destination's increment table, and the
 *                             qualify task (jdbc_qualify.c) applies them,
 *                             one row per primary key, the latest by the
 *                             column.
 *
 * Ties: a large incremental load commits every jdbc_commit_rows rows (config), but
 * only between two different values of the incremental column, so all rows
 * with the value the bookmark names are in the warehouse when the bookmark
 * is; the next run asks for values strictly greater.  No row of the source
 * snapshot is skipped or loaded twice.
 *
 * Rows are streamed from the source (the drivers never hold a result set)
 * and sent to the warehouse in batches of JDBC_BATCH_ROWS. */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "db/warehouse.h"
#include "db/wh_evolve.h"
#include "runner/connector.h"
#include "runner/connectors/jdbc.h"
#include "util/config.h"
#include "util/str.h"
#include "util/timeutil.h"

#define JDBC_BATCH_ROWS 10000
#define JDBC_PROGRESS_ROWS 250000
#define JDBC_BOOKMARK_MAX 64
#define JDBC_EXPR_MAX (2 * JDBC_QNAME_MAX + 64)

/* ---- drivers --------------------------------------------------------------- */

const struct jdbc_driver *jdbc_driver_for(const char *plugin)
{
	if (plugin == NULL)
		return NULL;
	if (strcmp(plugin, "mariadb") == 0 || strcmp(plugin, "mysql") == 0)
		return &jdbc_mariadb_driver;
	if (strcmp(plugin, "postgres") == 0)
		return &jdbc_postgres_driver;
	return NULL;
}

void jdbc_cols_free(struct jdbc_col *cols, size_t n)
{
	if (cols == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(cols[i].name);
	free(cols);
}

/* Append a zeroed column named name to the array *cols of *n (capacity
 * *cap, grown as needed): the new column, or NULL when name is NULL or
 * memory ran out (the array is then unchanged). */
static struct jdbc_col *cols_add(struct jdbc_col **cols, size_t *n, size_t *cap,
                                 const char *name)
{
	struct jdbc_col *nc;
	size_t ncap;

	if (name == NULL)
		return NULL;
	if (*n == *cap) {
		ncap = *cap > 0 ? *cap * 2 : 16;
		if ((nc = realloc(*cols, ncap * sizeof *nc)) == NULL)
			return NULL;
		*cols = nc;
		*cap = ncap;
	}
	nc = &(*cols)[*n];
	memset(nc, 0, sizeof *nc);
	if ((nc->name = strdup(name)) == NULL)
		return NULL;
	(*n)++;
	return nc;
}

int jdbc_catalog_cols(struct jdbc_src *s, const struct jdbc_catalog *cat,
                      struct jdbc_col **cols, size_t *ncols, char *err, size_t errlen)
{
	const char *const *v;
	const size_t *l;
	struct jdbc_col *c = NULL, *col;
	size_t n = 0, cap = 0;
	int r;

	*cols = NULL;
	*ncols = 0;
	while ((r = cat->fetch(s, &v, &l, err, errlen)) == 1) {
		if ((col = cols_add(&c, &n, &cap, v[0])) == NULL) {
			str_errf(err, errlen, "out of memory");
			r = -1;
			break;
		}
		if (cat->map(v, col) != 0)
			col->wh_type[0] = '\0';     /* refused if it is to be loaded */
	}
	cat->finish(s);
	if (r < 0) {
		jdbc_cols_free(c, n);
		return -1;
	}
	*cols = c;
	*ncols = n;
	return 0;
}

long long jdbc_catalog_num(const char *v)
{
	return v != NULL ? strtoll(v, NULL, 10) : -1;
}

/* ---- type mapping ------------------------------------------------------------ */

static int put(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int put(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int fsp(long long p)
{
	return p < 0 ? 0 : p > 6 ? 6 : (int)p;
}

/* Text of n characters: VARCHAR up to 255, then the TEXT type that holds
 * n characters of utf8mb4. */
static int text_type(long long n, char *buf, size_t cap)
{
	if (n > 0 && n <= 255)
		return put(buf, cap, "VARCHAR(%lld)", n);
	if (n > 0 && n <= 16383)
		return put(buf, cap, "TEXT");
	if (n > 0 && n <= 4194303)
		return put(buf, cap, "MEDIUMTEXT");
	return put(buf, cap, "LONGTEXT");
}

static int decimal_type(long long p, long long s, char *buf, size_t cap)
{
	if (p < 1 || p > 65)
		return put(buf, cap, "DECIMAL(65,30)");
	if (s < 0)
		s = 0;
	if (s > 38)
		s = 38;
	if (s > p)
		s = p;
	return put(buf, cap, "DECIMAL(%lld,%lld)", p, s);
}

int jdbc_map_mariadb(const char *dt, const char *ct, long long prec, long long scale,
                     long long clen, long long dtp, enum jdbc_kind *kind,
                     char *wh, size_t cap)
{
	static const char *const ints[] = {
		"tinyint", "smallint", "mediumint", "int", "bigint", NULL
	};
	static const char *const same[] = {
		"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob",
		"mediumblob", "longblob", "float", "double", "year", NULL
	};
	bool uns = ct != NULL && strstr(ct, "unsigned") != NULL;
	char up[32];

	*kind = JK_OTHER;
	if (dt == NULL || strlen(dt) >= sizeof up)
		return -1;
	for (size_t i = 0; dt[i] != '\0'; i++)
		up[i] = (char)toupper((unsigned char)dt[i]);
	up[strlen(dt)] = '\0';
	for (const char *const *t = ints; *t != NULL; t++)
		if (strcmp(dt, *t) == 0) {
			*kind = JK_INT;
			return put(wh, cap, "%s%s", up, uns ? " UNSIGNED" : "");
		}
	if (strcmp(dt, "integer") == 0) {
		*kind = JK_INT;
		return put(wh, cap, "INT%s", uns ? " UNSIGNED" : "");
	}
	for (const char *const *t = same; *t != NULL; t++)
		if (strcmp(dt, *t) == 0)
			return put(wh, cap, "%s", up);
	if (strcmp(dt, "decimal") == 0 || strcmp(dt, "numeric") == 0)
		return decimal_type(prec, scale, wh, cap);
	if (strcmp(dt, "real") == 0)
		return put(wh, cap, "DOUBLE");
	if (strcmp(dt, "bit") == 0) {
		*kind = JK_BIT;
		return put(wh, cap, "BIGINT UNSIGNED");
	}
	if (strcmp(dt, "char") == 0)
		return clen > 0 && clen <= 255 ? put(wh, cap, "CHAR(%lld)", clen)
		                               : text_type(clen, wh, cap);
	if (strcmp(dt, "varchar") == 0)
		return text_type(clen, wh, cap);
	if (strcmp(dt, "binary") == 0)
		return clen > 0 && clen <= 255 ? put(wh, cap, "BINARY(%lld)", clen)
		                               : put(wh, cap, "BLOB");
	if (strcmp(dt, "varbinary") == 0)
		return clen > 0 && clen <= 255 ? put(wh, cap, "VARBINARY(%lld)", clen)
		       : clen > 0 && clen <= 65535 ? put(wh, cap, "BLOB")
		       : put(wh, cap, "LONGBLOB");
	if (strcmp(dt, "date") == 0) {
		*kind = JK_DATE;
		return put(wh, cap, "DATE");
	}
	if (strcmp(dt, "datetime") == 0) {
		*kind = JK_DATETIME;
		return put(wh, cap, "DATETIME(%d)", fsp(dtp));
	}
	if (strcmp(dt, "timestamp") == 0) {
		/* read in UTC (the session's time zone), kept as DATETIME: no
		 * 2038 limit and no automatic update in the warehouse */
		*kind = JK_TIMESTAMPTZ;
		return put(wh, cap, "DATETIME(%d)", fsp(dtp));
	}
	if (strcmp(dt, "time") == 0)
		return put(wh, cap, "TIME(%d)", fsp(dtp));
	if (strcmp(dt, "enum") == 0)
		return put(wh, cap, "VARCHAR(255)");
	if (strcmp(dt, "set") == 0 || strcmp(dt, "json") == 0)
		return put(wh, cap, strcmp(dt, "set") == 0 ? "TEXT" : "LONGTEXT");
	if (strcmp(dt, "uuid") == 0)
		return put(wh, cap, "CHAR(36)");
	if (strcmp(dt, "inet6") == 0 || strcmp(dt, "inet4") == 0)
		return put(wh, cap, "VARCHAR(45)");
	return -1;                  /* geometry and anything unknown */
}

int jdbc_map_postgres(const char *dt, long long prec, long long scale,
                      long long clen, long long dtp, enum jdbc_kind *kind,
                      char *wh, size_t cap)
{
	*kind = JK_OTHER;
	if (dt == NULL)
		return -1;
	if (strcmp(dt, "smallint") == 0 || strcmp(dt, "integer") == 0 ||
	    strcmp(dt, "bigint") == 0) {
		*kind = JK_INT;
		return put(wh, cap, "%s", dt[0] == 's' ? "SMALLINT"
		                          : dt[0] == 'i' ? "INT" : "BIGINT");
	}
	if (strcmp(dt, "numeric") == 0)
		return decimal_type(prec, scale, wh, cap);
	if (strcmp(dt, "real") == 0)
		return put(wh, cap, "FLOAT");
	if (strcmp(dt, "double precision") == 0)
		return put(wh, cap, "DOUBLE");
	if (strcmp(dt, "boolean") == 0) {
		*kind = JK_BOOL;
		return put(wh, cap, "BOOLEAN");
	}
	if (strcmp(dt, "character varying") == 0)
		return text_type(clen, wh, cap);
	if (strcmp(dt, "character") == 0)
		return clen > 0 && clen <= 255 ? put(wh, cap, "CHAR(%lld)", clen)
		                               : text_type(clen, wh, cap);
	if (strcmp(dt, "text") == 0 || strcmp(dt, "json") == 0 ||
	    strcmp(dt, "jsonb") == 0 || strcmp(dt, "xml") == 0)
		return put(wh, cap, "LONGTEXT");
	if (strcmp(dt, "date") == 0) {
		*kind = JK_DATE;
		return put(wh, cap, "DATE");
	}
	if (strcmp(dt, "timestamp without time zone") == 0) {
		*kind = JK_DATETIME;
		return put(wh, cap, "DATETIME(%d)", dtp < 0 ? 6 : fsp(dtp));
	}
	if (strcmp(dt, "timestamp with time zone") == 0) {
		*kind = JK_TIMESTAMPTZ;
		return put(wh, cap, "DATETIME(%d)", dtp < 0 ? 6 : fsp(dtp));
	}
	if (strcmp(dt, "time without time zone") == 0)
		return put(wh, cap, "TIME(%d)", dtp < 0 ? 6 : fsp(dtp));
	if (strcmp(dt, "time with time zone") == 0 || strcmp(dt, "money") == 0)
		return put(wh, cap, "VARCHAR(32)");
	if (strcmp(dt, "interval") == 0 || strcmp(dt, "inet") == 0 ||
	    strcmp(dt, "cidr") == 0 || strcmp(dt, "macaddr") == 0 ||
	    strcmp(dt, "macaddr8") == 0)
		return put(wh, cap, "VARCHAR(64)");
	if (strcmp(dt, "uuid") == 0)
		return put(wh, cap, "CHAR(36)");
	if (strcmp(dt, "bytea") == 0) {
		*kind = JK_BYTES;
		return put(wh, cap, "LONGBLOB");
	}
	/* arrays, enums, ranges, geometric types...: their text form */
	return put(wh, cap, "LONGTEXT");
}

/* ---- bookmarks ------------------------------------------------------------------- */

static bool is_int_text(const char *s)
{
	size_t n = 0;

	if (*s == '-')
		s++;
	for (; *s != '\0'; s++, n++)
		if (*s < '0' || *s > '9')
			return false;
	return n >= 1 && n <= 20;
}

int jdbc_bookmark_from_value(enum jdbc_kind k, const char *v, char *out, size_t cap)
{
	size_t n;

	if (v == NULL)
		return -1;
	n = strlen(v);
	switch (k) {
	case JK_INT:
		return is_int_text(v) ? put(out, cap, "%s", v) : -1;
	case JK_DATE:
		return n == 10 ? put(out, cap, "%s", v) : -1;
	case JK_DATETIME:
	case JK_TIMESTAMPTZ:
		if (n < 19 || n > 26 || v[10] != ' ')
			return -1;
		if (put(out, cap, "%s%s", v, k == JK_TIMESTAMPTZ ? "Z" : "") != 0)
			return -1;
		out[10] = 'T';
		return 0;
	default:
		return -1;
	}
}

int jdbc_bookmark_param(enum jdbc_kind k, const char *b, char *out, size_t cap)
{
	struct time_iso t;
	struct tm tm;
	time_t utc;

	if (b == NULL || strlen(b) > JDBC_BOOKMARK_MAX)
		return -1;
	if (k == JK_INT)
		return is_int_text(b) ? put(out, cap, "%s", b) : -1;
	if (k != JK_DATE && k != JK_DATETIME && k != JK_TIMESTAMPTZ)
		return -1;
	/* The grammar PATCH checks, and the SQL form as stored values have it. */
	if (time_iso_parse(b, TIME_ISO_SPACE, &t) != 0)
		return -1;
	utc = time_iso_utc(&t);
	if (gmtime_r(&utc, &tm) == NULL)
		return -1;
	t.frac[6] = '\0';             /* the microseconds both databases keep */
	return put(out, cap, "%04d-%02d-%02d %02d:%02d:%02d%s%s",
	           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	           tm.tm_min, tm.tm_sec, t.frac[0] != '\0' ? "." : "", t.frac);
}

int jdbc_value_cmp(enum jdbc_kind k, const char *a, const char *b)
{
	if (k == JK_INT) {
		bool na = a[0] == '-', nb = b[0] == '-';
		size_t la, lb;
		int c;

		if (na != nb)
			return na ? -1 : 1;
		if (na) {
			a++;
			b++;
		}
		while (a[0] == '0' && a[1] != '\0')
			a++;
		while (b[0] == '0' && b[1] != '\0')
			b++;
		la = strlen(a);
		lb = strlen(b);
		c = la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
		if (c != 0)
			c = c < 0 ? -1 : 1;
		return na ? -c : c;
	}
	return strcmp(a, b) < 0 ? -1 : strcmp(a, b) > 0 ? 1 : 0;
}

int jdbc_split_table(const char *in, char *schema, size_t scap, char *table,
                     size_t tcap)
{
	const char *dot;

	if (in == NULL || in[0] == '\0')
		return -1;
	dot = strchr(in, '.');
	if (dot == NULL) {
		schema[0] = '\0';
		return str_copy(table, tcap, in);
	}
	if (dot == in || dot[1] == '\0' || (size_t)(dot - in) >= scap)
		return -1;
	memcpy(schema, in, (size_t)(dot - in));
	schema[dot - in] = '\0';
	return str_copy(table, tcap, dot + 1);
}

/* ---- a task ------------------------------------------------------------------------ */

struct plan {
	const struct jdbc_driver *drv;
	struct jdbc_src *src;
	struct jdbc_col *all;            /* the source table's columns */
	size_t nall;
	struct jdbc_col **cols;          /* the loaded ones, in table order */
	size_t ncols;
	int inc;                         /* index in cols, -1 for full_load */
	char src_schema[256], src_table[256];
	struct jdbc_dest dest;
	const char *dest_schema, *dest_table;   /* dest's, for short */
	char *sql;
};

static void plan_free(struct plan *p)
{
	if (p->drv != NULL && p->src != NULL)
		p->drv->close(p->src);
	jdbc_cols_free(p->all, p->nall);
	free(p->cols);
	free(p->sql);
}

static struct jdbc_col *col_find(struct plan *p, const char *name)
{
	for (size_t i = 0; i < p->nall; i++)
		if (strcmp(p->all[i].name, name) == 0)
			return &p->all[i];
	/* MariaDB column names compare without case */
	for (size_t i = 0; i < p->nall; i++)
		if (str_eq_nocase(p->all[i].name, name))
			return &p->all[i];
	return NULL;
}

/* Which columns to load: all, or column_include_list plus the incremental
 * column and the primary keys (loading needs them, whatever the list says). */
static int plan_columns(const struct job_spec *job, struct task_env *env,
                        struct plan *p, char *err, size_t errlen)
{
	struct json_object *inc_list = job->column_include_list;
	bool limited = inc_list != NULL && json_object_is_type(inc_list, json_type_array) &&
	               json_object_array_length(inc_list) > 0;
	bool *want;
	int rc = -1;

	if ((want = calloc(p->nall, sizeof *want)) == NULL ||
	    (p->cols = calloc(p->nall, sizeof *p->cols)) == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	if (limited) {
		for (size_t i = 0; i < json_object_array_length(inc_list); i++) {
			const char *n = json_object_get_string(json_object_array_get_idx(inc_list, i));
			struct jdbc_col *c = n != NULL ? col_find(p, n) : NULL;

			if (c == NULL) {
				str_errf(err, errlen, "column_include_list names column '%.64s', "
				         "which the source table does not have", n != NULL ? n : "");
				goto out;
			}
			want[c - p->all] = true;
		}
	} else {
		for (size_t i = 0; i < p->nall; i++)
			want[i] = true;
	}
	if (job->load_type != LOAD_FULL) {
		struct jdbc_col *c = col_find(p, job->incremental_column);

		if (c == NULL) {
			str_errf(err, errlen, "incremental column '%.64s' is not a column of "
			         "the source table", job->incremental_column);
			goto out;
		}
		if (c->kind != JK_INT && c->kind != JK_DATE && c->kind != JK_DATETIME &&
		    c->kind != JK_TIMESTAMPTZ) {
			str_errf(err, errlen, "incremental column '%.64s' is of type %s in "
			         "the source: an integer, date or timestamp column is needed",
			         c->name, c->wh_type);
			goto out;
		}
		if (!want[c - p->all])
			run_log_warning(env->log, "incremental column %s is not in "
			                "column_include_list: loaded anyway", c->name);
		want[c - p->all] = true;
	}
	if (job->load_type == LOAD_INCREMENTAL_QUALIFY) {
		size_t nk = job->primary_keys != NULL ?
		            json_object_array_length(job->primary_keys) : 0;

		if (nk == 0) {
			str_errf(err, errlen, "incremental_with_qualify needs primary_keys");
			goto out;
		}
		for (size_t i = 0; i < nk; i++) {
			const char *n = json_object_get_string(
			    json_object_array_get_idx(job->primary_keys, i));
			struct jdbc_col *c = n != NULL ? col_find(p, n) : NULL;

			if (c == NULL) {
				str_errf(err, errlen, "primary key '%.64s' is not a column of "
				         "the source table", n != NULL ? n : "");
				goto out;
			}
			if (!want[c - p->all])
				run_log_warning(env->log, "primary key %s is not in "
				                "column_include_list: loaded anyway", c->name);
			want[c - p->all] = true;
		}
	}
	p->inc = -1;
	for (size_t i = 0; i < p->nall; i++) {
		if (!want[i])
			continue;
		if (!wh_ident_ok(p->all[i].name)) {
			str_errf(err, errlen, "source column '%.64s' cannot be a warehouse "
			         "column name", p->all[i].name);
			goto out;
		}
		if (p->all[i].wh_type[0] == '\0') {
			str_errf(err, errlen, "source column '%.64s' has a type the warehouse "
			         "cannot hold; leave it out with column_include_list",
			         p->all[i].name);
			goto out;
		}
		if (job->load_type != LOAD_FULL &&
		    str_eq_nocase(p->all[i].name, job->incremental_column))
			p->inc = (int)p->ncols;
		p->cols[p->ncols++] = &p->all[i];
	}
	rc = 0;
out:
	free(want);
	return rc;
}

/* SELECT <cols> FROM <table> [WHERE inc > param] [ORDER BY inc]. */
static int plan_sql(struct plan *p, bool where, bool order, char *err, size_t errlen)
{
	char q[JDBC_QNAME_MAX], expr[JDBC_EXPR_MAX], qs[JDBC_QNAME_MAX], qt[JDBC_QNAME_MAX];
	/* every piece at its longest: the select list, schema.table, the
	 * WHERE and ORDER BY column, the constants */
	size_t cap = 256 + p->ncols * (JDBC_EXPR_MAX + 2) + 5 * JDBC_QNAME_MAX;
	size_t len;

	if ((p->sql = malloc(cap)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	len = (size_t)snprintf(p->sql, cap, "SELECT ");
	for (size_t i = 0; i < p->ncols; i++) {
		if (p->drv->quote(p->cols[i]->name, q, sizeof q) != 0 ||
		    p->drv->select_expr(p->cols[i], q, expr, sizeof expr) != 0) {
			str_errf(err, errlen, "cannot quote source column '%.64s'",
			         p->cols[i]->name);
			return -1;
		}
		len += (size_t)snprintf(p->sql + len, cap - len, "%s%s", i > 0 ? ", " : "", expr);
	}
	if (p->drv->quote(p->src_table, qt, sizeof qt) != 0 ||
	    (p->src_schema[0] != '\0' && p->drv->quote(p->src_schema, qs, sizeof qs) != 0)) {
		str_errf(err, errlen, "invalid source table name");
		return -1;
	}
	if (p->src_schema[0] != '\0')
		len += (size_t)snprintf(p->sql + len, cap - len, " FROM %s.%s", qs, qt);
	else
		len += (size_t)snprintf(p->sql + len, cap - len, " FROM %s", qt);
	if (p->inc >= 0) {
		p->drv->quote(p->cols[p->inc]->name, q, sizeof q);
		if (where)
			len += (size_t)snprintf(p->sql + len, cap - len, " WHERE %s > %s", q,
			                        p->drv->param_expr(p->cols[p->inc]->kind));
		if (order)
			snprintf(p->sql + len, cap - len, " ORDER BY %s%s", q, p->drv->order_suffix);
	}
	return 0;
}

void jdbc_work_table(const char *prefix, const char *schema, const char *table,
                     char out[WH_IDENT_MAX + 1])
{
	uint64_t h = 14695981039346656037ULL;

	for (const char *s = schema; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	h = (h ^ '.') * 1099511628211ULL;
	for (const char *s = table; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	snprintf(out, WH_IDENT_MAX + 1, "%s%016llx", prefix, (unsigned long long)h);
}

/* The plan's columns as the warehouse takes them (free it); NULL with err. */
static struct wh_column *plan_wh_columns(const struct plan *p, char *err, size_t errlen)
{
	struct wh_column *wc = calloc(p->ncols ? p->ncols : 1, sizeof *wc);

	if (wc == NULL) {
		str_errf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < p->ncols; i++) {
		wc[i].name = p->cols[i]->name;
		wc[i].sql_type = p->cols[i]->wh_type;
		wc[i].nullable = true;       /* a later NOT NULL change must not fail a load */
	}
	return wc;
}

static int create_table(struct task_env *env, struct plan *p, const char *table,
                        int flags, char *err, size_t errlen)
{
	struct wh_column *wc = plan_wh_columns(p, err, errlen);
	int rc;

	if (wc == NULL)
		return -1;
	rc = wh_table_create(env->wh, p->dest_schema, table, wc, p->ncols, flags,
	                     err, errlen);
	free(wc);
	return rc;
}

/* An existing destination follows its source: columns whose source type
 * widened are widened (a narrowing or an incompatible change fails here,
 * before any DDL), then the columns it lacks are added (the include list
 * grew).  Both commit before the rows' transaction, and leave the rows
 * already there as they were. */
static int evolve_table(struct task_env *env, struct plan *p, const char *table,
                        char *err, size_t errlen)
{
	struct wh_column *wc = plan_wh_columns(p, err, errlen);
	int rc;

	if (wc == NULL)
		return -1;
	rc = wh_table_evolve(env->wh, p->dest_schema, table, wc, p->ncols,
	                     WH_EVOLVE_NARROWING_FAILS, run_log_widened, env->log,
	                     err, errlen);
	free(wc);
	return rc < 0 ? -1 : 0;
}

/* An existing destination gets the columns it lacks (the include list grew). */
static int add_missing_columns(struct task_env *env, struct plan *p, const char *table,
                               char *err, size_t errlen)
{
	char qs[JDBC_QNAME_MAX], qt[JDBC_QNAME_MAX], qc[JDBC_QNAME_MAX];
	size_t cap = 2 * JDBC_QNAME_MAX + 64 + p->ncols * (JDBC_QNAME_MAX + JDBC_TYPE_MAX + 40);
	char *sql = malloc(cap);
	size_t len;
	int rc = -1;

	if (sql == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	if (wh_quote(p->dest_schema, qs, sizeof qs) != 0 ||
	    wh_quote(table, qt, sizeof qt) != 0) {
		str_errf(err, errlen, "invalid destination name");
		goto out;
	}
	len = (size_t)snprintf(sql, cap, "ALTER TABLE %s.%s", qs, qt);
	for (size_t i = 0; i < p->ncols; i++) {
		wh_quote(p->cols[i]->name, qc, sizeof qc);
		len += (size_t)snprintf(sql + len, cap - len, "%s ADD COLUMN IF NOT EXISTS %s %s NULL",
		                        i > 0 ? "," : "", qc, p->cols[i]->wh_type);
	}
	rc = wh_exec(env->wh, sql, err, errlen) < 0 ? -1 : 0;
out:
	free(sql);
	return rc;
}

/* A qualify job's increment table: the plan's columns, widened and grown
 * like the destination's (it may hold a failed run's rows, with the bookmark
 * past them), and a sequence number that orders the rows as loaded and is
 * its primary key. */
static int increment_prepare(struct task_env *env, struct plan *p,
                             char *err, size_t errlen)
{
	char qs[JDBC_QNAME_MAX], qi[JDBC_QNAME_MAX], sql[2 * JDBC_QNAME_MAX + 128];

	if (create_table(env, p, p->dest.increment, WH_CREATE_IF_NOT_EXISTS, err, errlen) != 0 ||
	    evolve_table(env, p, p->dest.increment, err, errlen) != 0 ||
	    add_missing_columns(env, p, p->dest.increment, err, errlen) != 0)
		return -1;
	if (wh_quote(p->dest_schema, qs, sizeof qs) != 0 ||
	    wh_quote(p->dest.increment, qi, sizeof qi) != 0) {
		str_errf(err, errlen, "invalid destination name");
		return -1;
	}
	snprintf(sql, sizeof sql, "ALTER TABLE %s.%s ADD COLUMN IF NOT EXISTS `"
	         JDBC_SEQ_COLUMN "` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", qs, qi);
	return wh_exec(env->wh, sql, err, errlen) < 0 ? -1 : 0;
}

static const char *kind_word(enum jdbc_kind k)
{
	switch (k) {
	case JK_INT: return "integer";
	case JK_DATE: return "date";
	case JK_DATETIME: return "datetime";
	case JK_TIMESTAMPTZ: return "timestamp (UTC)";
	default: return "other";
	}
}

/* Stream the query into the warehouse.  With track, commits every
 * jdbc_commit_rows rows at a change of the incremental value, the bookmark
 * in the same commit; the caller has a transaction open.  max (when track
 * or want_max) gets the largest incremental value loaded. */
static int stream_rows(const struct job_spec *job, struct task_env *env,
                       struct plan *p, const char *table, const char *param,
                       bool track, char *max, size_t maxcap,
                       char *err, size_t errlen)
{
	const char **names = calloc(p->ncols, sizeof *names);
	struct wh_batch *b = NULL;
	const char *const *vals;
	const size_t *lens;
	char last[JDBC_BOOKMARK_MAX + 1] = "", bm[JDBC_BOOKMARK_MAX + 8];
	bool have_last = false;
	long long since_commit = 0, committed = 0, next_progress = JDBC_PROGRESS_ROWS;
	long long commit_rows = env->cfg != NULL && env->cfg->jdbc_commit_rows > 0
	                        ? env->cfg->jdbc_commit_rows : 100000;
	int r, rc = -1;

	max[0] = '\0';
	if (names == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < p->ncols; i++)
		names[i] = p->cols[i]->name;
	if ((b = wh_batch_new(env->wh, p->dest_schema, table, names, p->ncols,
	                      JDBC_BATCH_ROWS, err, errlen)) == NULL)
		goto out;
	if (p->drv->query(p->src, p->sql, param, (const struct jdbc_col *const *)p->cols,
	                  p->ncols, err, errlen) != 0)
		goto out;
	while ((r = p->drv->fetch(p->src, &vals, &lens, err, errlen)) == 1) {
		const char *iv = p->inc >= 0 ? vals[p->inc] : NULL;

		env->rows_read++;
		if (iv != NULL && lens[p->inc] > JDBC_BOOKMARK_MAX) {
			str_errf(err, errlen, "incremental value too long");
			goto out;
		}
		/* A commit point: enough rows, and this row's value differs from
		 * the last one loaded, so no tie straddles the commit. */
		if (track && since_commit >= commit_rows && have_last &&
		    (iv == NULL || strcmp(iv, last) != 0)) {
			if (wh_batch_flush(b, err, errlen) != 0)
				goto out;
			if (jdbc_bookmark_from_value(p->cols[p->inc]->kind, last, bm, sizeof bm) != 0) {
				str_errf(err, errlen, "cannot make a bookmark of '%.64s'", last);
				goto out;
			}
			if (state_save_bookmark(env, job->job_id, bm, err, errlen) != 0 ||
			    state_save_rows(env, env->rows_loaded + wh_batch_rows(b),
			                    err, errlen) != 0)
				goto out;
			if (wh_commit(env->wh) != 0) {
				str_errf(err, errlen, "warehouse commit failed: %s", wh_error(env->wh));
				goto out;
			}
			if (state_after_commit(env, err, errlen) != 0)
				goto out;
			committed = wh_batch_rows(b);
			run_log_info(env->log, "committed %lld rows so far, bookmark %s",
			             committed, bm);
			if (wh_begin(env->wh) != 0) {
				str_errf(err, errlen, "warehouse: %s", wh_error(env->wh));
				goto out;
			}
			since_commit = 0;
		}
		if (wh_batch_add(b, vals, lens, err, errlen) != 0)
			goto out;
		since_commit++;
		if (iv != NULL) {
			if (max[0] == '\0' || jdbc_value_cmp(p->cols[p->inc]->kind, iv, max) > 0)
				snprintf(max, maxcap, "%s", iv);
			memcpy(last, iv, lens[p->inc]);
			last[lens[p->inc]] = '\0';
			have_last = true;
		}
		if (env->rows_read >= next_progress) {
			run_log_info(env->log, "%lld rows read", env->rows_read);
			next_progress += JDBC_PROGRESS_ROWS;
		}
	}
	if (r < 0)
		goto out;
	if (wh_batch_flush(b, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	/* A failure rolls back what was not committed (all of a staging load
	 * is dropped): only committed rows count as loaded. */
	if (b != NULL)
		env->rows_loaded += rc == 0 ? wh_batch_rows(b) : committed;
	wh_batch_free(b);
	free(names);
	return rc;
}

static int save_bookmark_alone(const struct job_spec *job, struct task_env *env,
                               const char *bm, char *err, size_t errlen)
{
	if (wh_begin(env->wh) != 0) {
		str_errf(err, errlen, "warehouse: %s", wh_error(env->wh));
		return -1;
	}
	if (state_save_bookmark(env, job->job_id, bm, err, errlen) != 0) {
		wh_rollback(env->wh);
		return -1;
	}
	if (wh_commit(env->wh) != 0) {
		str_errf(err, errlen, "warehouse commit failed: %s", wh_error(env->wh));
		return -1;
	}
	return state_after_commit(env, err, errlen);
}

int jdbc_dest_names(const struct job_spec *job, struct task_env *env,
                    struct jdbc_dest *d, char *err, size_t errlen)
{
	d->schema = job->dest_schema != NULL && job->dest_schema[0] != '\0'
	            ? job->dest_schema : wh_default_schema(env->wh);
	d->table = job->dest_table;
	if (!wh_ident_ok(d->schema) || d->table == NULL || !wh_ident_ok(d->table)) {
		str_errf(err, errlen, "output.raw.table_schema/table_name is not a valid "
		         "warehouse name");
		return -1;
	}
	jdbc_work_table(JDBC_STAGING_PREFIX, d->schema, d->table, d->staging);
	jdbc_work_table(JDBC_INCREMENT_PREFIX, d->schema, d->table, d->increment);
	return 0;
}

static const char *input_str(const struct job_spec *job, const char *key)
{
	struct json_object *v;

	if (job->input == NULL || !json_object_object_get_ex(job->input, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int jdbc_extract_load(const struct job_spec *job, struct task_env *env,
                      char *err, size_t errlen)
{
	const struct source_conn *sc = &job->source;
	const char *plugin = job->has_source && sc->plugin[0] != '\0' ? sc->plugin : job->plugin;
	const char *tname = input_str(job, "table_name");
	char param[JDBC_BOOKMARK_MAX + 8], max[JDBC_BOOKMARK_MAX + 1];
	char bm[JDBC_BOOKMARK_MAX + 8];
	struct plan p;
	bool append;
	double t0 = time_mono_ms();
	int rc = -1;

	memset(&p, 0, sizeof p);
	if ((p.drv = jdbc_driver_for(plugin)) == NULL) {
		str_errf(err, errlen, "driver not available: %.32s", plugin != NULL ? plugin : "");
		return -1;
	}
	if (!job->has_source) {
		str_errf(err, errlen, "the job has no source connection (input.connection_id)");
		return -1;
	}
	if (tname == NULL || jdbc_split_table(tname, p.src_schema, sizeof p.src_schema,
	                                      p.src_table, sizeof p.src_table) != 0) {
		str_errf(err, errlen, "input.table_name must be \"table\" or \"schema.table\"");
		return -1;
	}
	if (jdbc_dest_names(job, env, &p.dest, err, errlen) != 0)
		return -1;
	p.dest_schema = p.dest.schema;
	p.dest_table = p.dest.table;

	run_log_info(env->log, "connecting to %s at %s:%d, database %s, as %s",
	             p.drv->name, sc->host, sc->port, sc->database, sc->user);
	if (p.drv->open(&p.src, sc, err, errlen) != 0)
		goto out;
	if (p.drv->describe(p.src, p.src_schema, p.src_table, &p.all, &p.nall,
	                    err, errlen) != 0)
		goto out;
	if (p.nall == 0) {
		str_errf(err, errlen, "source table %.200s not found (or no columns are "
		         "visible to user %.64s)", tname, sc->user);
		goto out;
	}
	if (plan_columns(job, env, &p, err, errlen) != 0)
		goto out;

	param[0] = '\0';
	append = false;
	if (job->load_type != LOAD_FULL) {
		enum jdbc_kind k = p.cols[p.inc]->kind;

		run_log_info(env->log, "incremental column %s (%s), bookmark before: %s",
		             p.cols[p.inc]->name, kind_word(k),
		             job->bookmark != NULL ? job->bookmark : "none");
		if (job->bookmark != NULL && job->bookmark[0] != '\0') {
			if (jdbc_bookmark_param(k, job->bookmark, param, sizeof param) != 0) {
				str_errf(err, errlen, "bookmark '%.64s' does not fit incremental "
				         "column %.64s (%s): set it with PATCH input or "
				         "reset-state", job->bookmark, p.cols[p.inc]->name,
				         kind_word(k));
				goto out;
			}
			append = true;
		}
	}
	if (plan_sql(&p, append, append, err, errlen) != 0)
		goto out;
	run_log_info(env->log, "query: %s%s%s%s", p.sql, append ? " (parameter: " : "",
	             append ? param : "", append ? ")" : "");

	if (append) {
		/* Rows go straight into the destination, the bookmark with them;
		 * a qualify job's rows into its increment table instead, which
		 * the qualify task applies to the destination. */
		const char *into = job->load_type == LOAD_INCREMENTAL_QUALIFY
		                   ? p.dest.increment : p.dest_table;

		if (create_table(env, &p, p.dest_table, WH_CREATE_IF_NOT_EXISTS, err, errlen) != 0 ||
		    evolve_table(env, &p, p.dest_table, err, errlen) != 0 ||
		    add_missing_columns(env, &p, p.dest_table, err, errlen) != 0)
			goto out;
		if (into != p.dest_table ? increment_prepare(env, &p, err, errlen) != 0
		                         : jdbc_increment_append(env, &p.dest, err, errlen) != 0)
			goto out;
		if (wh_begin(env->wh) != 0) {
			str_errf(err, errlen, "warehouse: %s", wh_error(env->wh));
			goto out;
		}
		if (stream_rows(job, env, &p, into, param, true, max, sizeof max,
		                err, errlen) != 0) {
			wh_rollback(env->wh);
			goto out;
		}
		if (max[0] != '\0') {
			if (jdbc_bookmark_from_value(p.cols[p.inc]->kind, max, bm, sizeof bm) != 0) {
				str_errf(err, errlen, "cannot make a bookmark of '%.64s'", max);
				wh_rollback(env->wh);
				goto out;
			}
			if (state_save_bookmark(env, job->job_id, bm, err, errlen) != 0) {
				wh_rollback(env->wh);
				goto out;
			}
		}
		if (state_save_rows(env, env->rows_loaded, err, errlen) != 0) {
			wh_rollback(env->wh);
			goto out;
		}
		if (wh_commit(env->wh) != 0) {
			str_errf(err, errlen, "warehouse commit failed: %s", wh_error(env->wh));
			goto out;
		}
		if (state_after_commit(env, err, errlen) != 0)
			goto out;
		run_log_info(env->log, "appended %lld rows to %s.%s", env->rows_loaded,
		             p.dest_schema, into);
		run_log_info(env->log, "bookmark after: %s",
		             max[0] != '\0' ? bm : job->bookmark);
	} else {
		/* Everything into staging, then one atomic swap.  The staging
		 * table is registered first: should this process be killed, its
		 * supervisor (or the sweep) drops it.  An increment still
		 * pending from a failed run is older than this full load. */
		if ((job->load_type != LOAD_FULL &&
		     wh_table_drop(env->wh, p.dest_schema, p.dest.increment, err, errlen) != 0) ||
		    staging_register(env, p.dest_schema, p.dest.staging, err, errlen) != 0 ||
		    create_table(env, &p, p.dest.staging, WH_CREATE_REPLACE, err, errlen) != 0)
			goto out;
		if (stream_rows(job, env, &p, p.dest.staging, NULL, false, max, sizeof max,
		                err, errlen) != 0) {
			char e2[256];

			if (wh_table_drop(env->wh, p.dest_schema, p.dest.staging, e2, sizeof e2) == 0)
				staging_release(env, p.dest_schema, p.dest.staging);
			goto out;
		}
		if (wh_table_swap(env->wh, p.dest_schema, p.dest_table, p.dest.staging,
		                  err, errlen) != 0)
			goto out;
		staging_release(env, p.dest_schema, p.dest.staging);
		if (state_save_rows(env, env->rows_loaded, err, errlen) != 0 ||
		    state_after_commit(env, err, errlen) != 0)
			goto out;
		run_log_info(env->log, "replaced %s.%s with %lld rows (staging table swapped in)",
		             p.dest_schema, p.dest_table, env->rows_loaded);
		if (job->load_type != LOAD_FULL) {
			if (max[0] != '\0') {
				if (jdbc_bookmark_from_value(p.cols[p.inc]->kind, max, bm,
				                             sizeof bm) != 0) {
					str_errf(err, errlen, "cannot make a bookmark of '%.64s'", max);
					goto out;
				}
				if (save_bookmark_alone(job, env, bm, err, errlen) != 0)
					goto out;
			}
			run_log_info(env->log, "bookmark after: %s", max[0] != '\0' ? bm : "none");
		}
	}
	run_log_info(env->log, "rows read: %lld, rows written: %lld, %.1f s",
	             env->rows_read, env->rows_loaded, (time_mono_ms() - t0) / 1000.0);
	rc = 0;
out:
	plan_free(&p);
	return rc;
}
