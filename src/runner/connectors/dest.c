/* dest.c - destination tables of the singer and file_storage connectors:
 * DDL from a fixed type vocabulary, a row writer, value normalisation. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/warehouse.h"
#include "db/wh_evolve.h"
#include "runner/connectors/dest.h"
#include "util/str.h"

/* MariaDB takes at most 65535 placeholders in one statement. */
#define DEST_PARAMS_MAX 65000
#define DEST_INDEX_PREFIX 255   /* characters of a text column in an index */

void dest_sql_type(const struct dest_col *c, char *buf, size_t cap)
{
	switch (c->kind) {
	case DEST_BIGINT:   snprintf(buf, cap, "BIGINT"); return;
	case DEST_DOUBLE:   snprintf(buf, cap, "DOUBLE"); return;
	case DEST_DECIMAL:  snprintf(buf, cap, "DECIMAL(38,%d)", c->scale); return;
	case DEST_BOOL:     snprintf(buf, cap, "BOOLEAN"); return;
	case DEST_DATE:     snprintf(buf, cap, "DATE"); return;
	case DEST_DATETIME: snprintf(buf, cap, "DATETIME(6)"); return;
	case DEST_TEXT:
		if (c->varchar_len > 0)
			snprintf(buf, cap, "VARCHAR(%d)", c->varchar_len);
		else
			snprintf(buf, cap, "LONGTEXT");
		return;
	case DEST_JSON:     snprintf(buf, cap, "LONGTEXT"); return;
	}
	snprintf(buf, cap, "LONGTEXT");
}

/* ==== SQL text ============================================================ */

void dest_ident(struct strbuf *b, const char *name)
{
	char q[2 * WH_IDENT_MAX * 4 + 3];

	if (wh_quote(name, q, sizeof q) != 0) {
		b->oom = true;
		return;
	}
	strbuf_adds(b, q);
}

/* ==== tables ================================================================ */

static void dest_table_name(struct strbuf *b, const char *schema, const char *table)
{
	dest_ident(b, schema);
	strbuf_adds(b, ".");
	dest_ident(b, table);
}

static void dest_coldef(struct strbuf *b, const struct dest_col *c, bool force_null)
{
	char type[32];

	dest_sql_type(c, type, sizeof type);
	dest_ident(b, c->name);
	strbuf_addf(b, " %s %s", type, c->nullable || force_null ? "NULL" : "NOT NULL");
}

/* A column indexed by its first DEST_INDEX_PREFIX characters only. */
static bool text_col(const struct dest_col *cols, size_t ncols, const char *name)
{
	for (size_t i = 0; i < ncols; i++)
		if (strcmp(cols[i].name, name) == 0)
			return (cols[i].kind == DEST_TEXT &&
			        (cols[i].varchar_len == 0 ||
			         cols[i].varchar_len > DEST_INDEX_PREFIX)) ||
			       cols[i].kind == DEST_JSON;
	return false;
}

static long long exec_sb(struct wh *w, struct strbuf *b, char *err, size_t errlen)
{
	if (b->oom || b->p == NULL) {
		str_errf(err, errlen, "a table or column name is not valid, or out of memory");
		return -1;
	}
	return wh_exec(w, b->p, err, errlen);
}

/* The existing table's columns follow cols' types (db/wh_evolve.h). */
static int evolve(struct wh *w, const char *schema, const char *table,
                  const struct dest_col *cols, size_t ncols,
                  const struct dest_evolve *ev, char *err, size_t errlen)
{
	struct wh_column *wc = calloc(ncols ? ncols : 1, sizeof *wc);
	char (*types)[32] = calloc(ncols ? ncols : 1, sizeof *types);
	int rc = -1;

	if (wc == NULL || types == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < ncols; i++) {
		dest_sql_type(&cols[i], types[i], sizeof types[i]);
		wc[i].name = cols[i].name;
		wc[i].sql_type = types[i];
		wc[i].nullable = true;
	}
	rc = wh_table_evolve(w, schema, table, wc, ncols, ev != NULL ? ev->flags : 0,
	                     ev != NULL ? ev->fn : NULL, ev != NULL ? ev->arg : NULL,
	                     err, errlen) < 0 ? -1 : 0;
out:
	free(wc);
	free(types);
	return rc;
}

int dest_table_ensure(struct wh *w, const char *schema, const char *table,
                      const struct dest_col *cols, size_t ncols,
                      const char *const *keys, size_t nkeys,
                      const char *index_col, const struct dest_evolve *ev,
                      char *err, size_t errlen)
{
	struct strbuf b = { 0 };
	int exists, rc = -1;

	if (!wh_ident_ok(schema) || !wh_ident_ok(table)) {
		str_errf(err, errlen, "destination name not valid: %s.%s", schema, table);
		return -1;
	}
	for (size_t i = 0; i < ncols; i++)
		if (!wh_ident_ok(cols[i].name)) {
			str_errf(err, errlen, "column name not valid: '%.80s'", cols[i].name);
			return -1;
		}
	if ((exists = wh_table_exists(w, schema, table, err, errlen)) < 0)
		return -1;
	if (!exists) {
		strbuf_adds(&b, "CREATE SCHEMA IF NOT EXISTS ");
		dest_ident(&b, schema);
		if (exec_sb(w, &b, err, errlen) < 0)
			goto out;
		b.len = 0;
		strbuf_adds(&b, "CREATE TABLE IF NOT EXISTS ");
		dest_table_name(&b, schema, table);
		strbuf_adds(&b, " (");
		for (size_t i = 0; i < ncols; i++) {
			if (i > 0)
				strbuf_adds(&b, ", ");
			dest_coldef(&b, &cols[i], false);
		}
		if (nkeys > 0) {
			strbuf_adds(&b, ", PRIMARY KEY (");
			for (size_t i = 0; i < nkeys; i++) {
				if (i > 0)
					strbuf_adds(&b, ", ");
				dest_ident(&b, keys[i]);
			}
			strbuf_adds(&b, ")");
		}
		if (index_col != NULL) {
			strbuf_adds(&b, ", KEY ");
			dest_ident(&b, "sluice_source_idx");
			strbuf_adds(&b, " (");
			dest_ident(&b, index_col);
			if (text_col(cols, ncols, index_col))
				strbuf_addf(&b, "(%d)", DEST_INDEX_PREFIX);
			strbuf_adds(&b, ")");
		}
		strbuf_adds(&b, ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
		if (exec_sb(w, &b, err, errlen) < 0)
			goto out;
		rc = 1;
		goto out;
	}
	/* An existing table: widened where its source widened (refused, with
	 * nothing altered, where a type does not fit), then what it lacks is
	 * added. */
	if (evolve(w, schema, table, cols, ncols, ev, err, errlen) != 0)
		goto out;
	strbuf_adds(&b, "ALTER TABLE ");
	dest_table_name(&b, schema, table);
	for (size_t i = 0; i < ncols; i++) {
		strbuf_adds(&b, i > 0 ? ", ADD COLUMN IF NOT EXISTS " : " ADD COLUMN IF NOT EXISTS ");
		dest_coldef(&b, &cols[i], true);
	}
	if (index_col != NULL) {
		strbuf_adds(&b, ncols > 0 ? ", ADD KEY IF NOT EXISTS " : " ADD KEY IF NOT EXISTS ");
		dest_ident(&b, "sluice_source_idx");
		strbuf_adds(&b, " (");
		dest_ident(&b, index_col);
		if (text_col(cols, ncols, index_col))
			strbuf_addf(&b, "(%d)", DEST_INDEX_PREFIX);
		strbuf_adds(&b, ")");
	}
	if (ncols == 0 && index_col == NULL) {
		rc = 0;
		goto out;
	}
	if (exec_sb(w, &b, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	strbuf_free(&b);
	return rc;
}

/* ==== row writer ============================================================ */

#define NO_VALUE SIZE_MAX

struct dest_writer {
	struct wh *w;
	struct wh_batch *batch;        /* plain inserts */
	/* upserts: rows buffered here, sent as one statement */
	size_t ncols, rows_per_stmt, nrows;
	struct strbuf data;              /* values, each NUL-terminated */
	size_t *offs;                  /* rows_per_stmt * ncols offsets */
	const char **params;
	struct strbuf head, tail;        /* INSERT ... VALUES / ON DUPLICATE ... */
	char *full_sql;                /* statement for a full batch */
	long long sent;
};

static void build_stmt(struct dest_writer *d, size_t rows, struct strbuf *out)
{
	strbuf_add(out, d->head.p, d->head.len);
	for (size_t r = 0; r < rows; r++) {
		strbuf_adds(out, r > 0 ? ",(" : "(");
		for (size_t c = 0; c < d->ncols; c++)
			strbuf_adds(out, c > 0 ? ",?" : "?");
		strbuf_adds(out, ")");
	}
	strbuf_add(out, d->tail.p, d->tail.len);
}

struct dest_writer *dest_writer_new(struct wh *w, const char *schema,
                                    const char *table,
                                    const char *const *cols, size_t ncols,
                                    bool upsert, size_t rows_per_batch,
                                    char *err, size_t errlen)
{
	struct dest_writer *d = calloc(1, sizeof *d);
	struct strbuf full = { 0 };

	if (d == NULL) {
		str_errf(err, errlen, "out of memory");
		return NULL;
	}
	d->w = w;
	d->ncols = ncols;
	if (rows_per_batch == 0)
		rows_per_batch = 1;
	if (!upsert) {
		d->batch = wh_batch_new(w, schema, table, cols, ncols, rows_per_batch,
		                        err, errlen);
		if (d->batch == NULL)
			goto fail;
		return d;
	}
	if (ncols == 0) {
		str_errf(err, errlen, "a table without columns");
		goto fail;
	}
	d->rows_per_stmt = rows_per_batch;
	if (d->rows_per_stmt * ncols > DEST_PARAMS_MAX)
		d->rows_per_stmt = DEST_PARAMS_MAX / ncols;
	if (d->rows_per_stmt == 0) {
		str_errf(err, errlen, "too many columns (%zu)", ncols);
		goto fail;
	}
	d->offs = calloc(d->rows_per_stmt * ncols, sizeof *d->offs);
	d->params = calloc(d->rows_per_stmt * ncols, sizeof *d->params);
	if (d->offs == NULL || d->params == NULL) {
		str_errf(err, errlen, "out of memory");
		goto fail;
	}
	strbuf_adds(&d->head, "INSERT INTO ");
	dest_table_name(&d->head, schema, table);
	strbuf_adds(&d->head, " (");
	for (size_t c = 0; c < ncols; c++) {
		if (c > 0)
			strbuf_adds(&d->head, ",");
		dest_ident(&d->head, cols[c]);
	}
	strbuf_adds(&d->head, ") VALUES ");
	strbuf_adds(&d->tail, " ON DUPLICATE KEY UPDATE ");
	for (size_t c = 0; c < ncols; c++) {
		if (c > 0)
			strbuf_adds(&d->tail, ",");
		dest_ident(&d->tail, cols[c]);
		strbuf_adds(&d->tail, "=VALUES(");
		dest_ident(&d->tail, cols[c]);
		strbuf_adds(&d->tail, ")");
	}
	build_stmt(d, d->rows_per_stmt, &full);
	if (d->head.oom || d->tail.oom || full.oom) {
		strbuf_free(&full);
		str_errf(err, errlen, "a table or column name is not valid, or out of memory");
		goto fail;
	}
	d->full_sql = full.p;
	return d;
fail:
	dest_writer_free(d);
	return NULL;
}

int dest_writer_flush(struct dest_writer *d, char *err, size_t errlen)
{
	struct strbuf part = { 0 };
	const char *sql;
	size_t n;
	long long rc;

	if (d->batch != NULL) {
		if (wh_batch_flush(d->batch, err, errlen) != 0)
			return -1;
		d->sent = wh_batch_rows(d->batch);
		return 0;
	}
	if (d->nrows == 0)
		return 0;
	n = d->nrows * d->ncols;
	for (size_t i = 0; i < n; i++)
		d->params[i] = d->offs[i] == NO_VALUE ? NULL : d->data.p + d->offs[i];
	if (d->nrows == d->rows_per_stmt) {
		sql = d->full_sql;
	} else {
		build_stmt(d, d->nrows, &part);
		if (part.oom) {
			strbuf_free(&part);
			str_errf(err, errlen, "out of memory");
			return -1;
		}
		sql = part.p;
	}
	rc = wh_exec_bound(d->w, sql, d->params, n, err, errlen);
	strbuf_free(&part);
	if (rc < 0)
		return -1;
	d->sent += (long long)d->nrows;
	d->nrows = 0;
	d->data.len = 0;
	return 0;
}

int dest_writer_add(struct dest_writer *d, const char *const *vals,
                    const size_t *lens, char *err, size_t errlen)
{
	size_t base;

	if (d->batch != NULL) {
		if (wh_batch_add(d->batch, vals, lens, err, errlen) != 0)
			return -1;
		d->sent = wh_batch_rows(d->batch);
		return 0;
	}
	base = d->nrows * d->ncols;
	for (size_t c = 0; c < d->ncols; c++) {
		if (vals[c] == NULL) {
			d->offs[base + c] = NO_VALUE;
			continue;
		}
		d->offs[base + c] = d->data.len;
		strbuf_add(&d->data, vals[c], lens[c]);
		strbuf_add(&d->data, "", 1);        /* the NUL the bound string ends at */
	}
	if (d->data.oom) {
		str_errf(err, errlen, "out of memory buffering a row");
		return -1;
	}
	if (++d->nrows == d->rows_per_stmt)
		return dest_writer_flush(d, err, errlen);
	return 0;
}

long long dest_writer_rows(const struct dest_writer *d)
{
	return d->sent;
}

void dest_writer_free(struct dest_writer *d)
{
	if (d == NULL)
		return;
	wh_batch_free(d->batch);
	strbuf_free(&d->data);
	strbuf_free(&d->head);
	strbuf_free(&d->tail);
	free(d->full_sql);
	free(d->offs);
	free(d->params);
	free(d);
}

/* ==== values ================================================================== */

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int num(const char *s, size_t n)
{
	int v = 0;

	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool date_ok(int y, int m, int d)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1)
		return false;
	return d <= mdays[m - 1] + (m == 2 && leap(y));
}

/* "YYYY-MM-DD" at s (n >= 10). */
static int parse_date(const char *s, size_t n, int *y, int *m, int *d)
{
	if (n < 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) ||
	    s[7] != '-' || !digits(s + 8, 2))
		return -1;
	*y = num(s, 4);
	*m = num(s + 5, 2);
	*d = num(s + 8, 2);
	return date_ok(*y, *m, *d) ? 0 : -1;
}

int dest_date_norm(const char *s, size_t n, char *out)
{
	int y, m, d;

	if (parse_date(s, n, &y, &m, &d) != 0)
		return -1;
	if (n > 10 && s[10] != 'T' && s[10] != 't' && s[10] != ' ')
		return -1;
	snprintf(out, 11, "%04d-%02d-%02d", y, m, d);
	return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), for zone shifts
 * without the process's time zone. */
static long long days_from_civil(int y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(long long z, int *y, int *m, int *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

int dest_datetime_norm(const char *s, size_t n, char *out)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, off = 0;
	char frac[7] = "";
	size_t i = 10, nf = 0;
	long long t;

	if (parse_date(s, n, &y, &mo, &d) != 0)
		return -1;
	if (i < n) {
		if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
			return -1;
		i++;
		if (n - i < 5 || !digits(s + i, 2) || s[i + 2] != ':' ||
		    !digits(s + i + 3, 2))
			return -1;
		h = num(s + i, 2);
		mi = num(s + i + 3, 2);
		i += 5;
		if (i < n && s[i] == ':') {
			if (n - i < 3 || !digits(s + i + 1, 2))
				return -1;
			sec = num(s + i + 1, 2);
			i += 3;
			if (i < n && (s[i] == '.' || s[i] == ',')) {
				size_t j = i + 1;

				while (j < n && isdigit((unsigned char)s[j])) {
					if (nf < 6)
						frac[nf++] = s[j];
					j++;
				}
				if (j == i + 1)
					return -1;
				frac[nf] = '\0';
				i = j;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return -1;
		if (sec == 60)           /* a leap second: the last one of the minute */
			sec = 59;
		if (i < n) {
			int sign, oh, om = 0;

			if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) {
				i++;
			} else if (s[i] == '+' || s[i] == '-') {
				sign = s[i] == '-' ? -1 : 1;
				i++;
				if (n - i < 2 || !digits(s + i, 2))
					return -1;
				oh = num(s + i, 2);
				i += 2;
				if (i < n && s[i] == ':')
					i++;
				if (i < n) {
					if (n - i != 2 || !digits(s + i, 2))
						return -1;
					om = num(s + i, 2);
					i += 2;
				}
				if (oh > 23 || om > 59)
					return -1;
				off = sign * (oh * 60 + om);
			} else {
				return -1;
			}
		}
		if (i != n)
			return -1;
	}
	t = days_from_civil(y, mo, d) * 86400LL + h * 3600 + mi * 60 + sec -
	    off * 60LL;
	{
		long long days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
		long long rem = t - days * 86400;

		civil_from_days(days, &y, &mo, &d);
		h = (int)(rem / 3600);
		mi = (int)(rem % 3600 / 60);
		sec = (int)(rem % 60);
	}
	if (y < 1 || y > 9999)
		return -1;
	if (nf > 0)
		snprintf(out, DEST_DATETIME_LEN, "%04d-%02d-%02d %02d:%02d:%02d.%s",
		         y, mo, d, h, mi, sec, frac);
	else
		snprintf(out, DEST_DATETIME_LEN, "%04d-%02d-%02d %02d:%02d:%02d",
		         y, mo, d, h, mi, sec);
	return 0;
}

int dest_bool_norm(const char *s, size_t n, const char **out)
{
	static const char *const yes[] = { "true", "t", "yes", "y", "1" };
	static const char *const no[] = { "false", "f", "no", "n", "0" };
	char low[8];

	if (n == 0 || n >= sizeof low)
		return -1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)s[i]);
	low[n] = '\0';
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcmp(low, yes[i]) == 0) {
			*out = "1";
			return 0;
		}
		if (strcmp(low, no[i]) == 0) {
			*out = "0";
			return 0;
		}
	}
	return -1;
}
