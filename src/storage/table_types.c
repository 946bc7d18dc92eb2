/* table_types.c - the column types of storage explorer tables, their
 * MariaDB DDL, and which dataset types a table column takes.
 *
 * The vocabulary is the inferred one (INTEGER, BIGINT, DECIMAL, DOUBLE,
 * BOOLEAN, DATE, TIMESTAMP, VARCHAR), with DECIMAL(p,s) and VARCHAR(n)
 * sized.  Widening is allowed along INTEGER -> BIGINT -> DECIMAL -> DOUBLE
 * and DATE -> TIMESTAMP, and anything goes into VARCHAR; a DECIMAL must fit
 * the table's precision and scale.  A dataset type wider than the table's
 * (db/wh_evolve.h's lattice) is taken too: its load widens the column. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "db/wh_evolve.h"
#include "storage/tables.h"
#include "tabular/tabular.h"
#include "util/str.h"

static const struct {
	const char *name;
	enum table_type_kind kind;
} kinds[] = {
	{ "INTEGER", TABLE_INTEGER },
	{ "BIGINT", TABLE_BIGINT },
	{ "DECIMAL", TABLE_DECIMAL },
	{ "DOUBLE", TABLE_DOUBLE },
	{ "BOOLEAN", TABLE_BOOLEAN },
	{ "DATE", TABLE_DATE },
	{ "TIMESTAMP", TABLE_TIMESTAMP },
	{ "VARCHAR", TABLE_VARCHAR },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define TYPES_LIST "INTEGER, BIGINT, DECIMAL(p,s), DOUBLE, BOOLEAN, DATE, " \
                   "TIMESTAMP, VARCHAR or VARCHAR(n)"

/* A decimal number of at most 9 digits at *p (spaces around it skipped). */
static int parse_small(const char **p, long *out)
{
	const char *s = *p;
	long v = 0;
	int digits = 0;

	while (*s == ' ')
		s++;
	while (*s >= '0' && *s <= '9') {
		if (++digits > 9)
			return -1;
		v = v * 10 + (*s++ - '0');
	}
	if (digits == 0)
		return -1;
	while (*s == ' ')
		s++;
	*p = s;
	*out = v;
	return 0;
}

int table_type_parse(const char *s, struct table_type *t, char *err, size_t errlen)
{
	size_t n = 0;
	const char *p;
	long a = 0, b = 0;
	int nargs = 0;

	memset(t, 0, sizeof *t);
	while (s[n] != '\0' && s[n] != '(')
		n++;
	for (size_t i = 0; i < NELEM(kinds); i++) {
		if (strlen(kinds[i].name) != n || strncasecmp(kinds[i].name, s, n) != 0)
			continue;
		t->kind = kinds[i].kind;
		p = s + n;
		if (*p == '(') {
			p++;
			if (parse_small(&p, &a) != 0)
				goto bad_args;
			nargs = 1;
			if (*p == ',') {
				p++;
				if (parse_small(&p, &b) != 0)
					goto bad_args;
				nargs = 2;
			}
			if (*p != ')' || p[1] != '\0')
				goto bad_args;
		}
		switch (t->kind) {
		case TABLE_DECIMAL:
			if (nargs == 0) {
				str_errf(err, errlen, "DECIMAL needs a precision and a scale: "
				         "DECIMAL(p,s) with p 1 to %d", TABLE_DECIMAL_MAX);
				return -1;
			}
			if (a < 1 || a > TABLE_DECIMAL_MAX || b > a) {
				str_errf(err, errlen, "DECIMAL(p,s) needs p from 1 to %d "
				         "and s from 0 to p", TABLE_DECIMAL_MAX);
				return -1;
			}
			t->precision = (int)a;
			t->scale = (int)b;
			return 0;
		case TABLE_VARCHAR:
			if (nargs == 2)
				goto bad_args;
			if (nargs == 1 && (a < 1 || a > TABLE_VARCHAR_MAX)) {
				str_errf(err, errlen, "VARCHAR(n) needs n from 1 to %ld",
				         TABLE_VARCHAR_MAX);
				return -1;
			}
			t->length = a;
			return 0;
		default:
			if (nargs != 0) {
				str_errf(err, errlen, "%s takes no size", kinds[i].name);
				return -1;
			}
			return 0;
		}
	}
	str_errf(err, errlen, "unknown type: use one of " TYPES_LIST);
	return -1;
bad_args:
	str_errf(err, errlen, "malformed size: write DECIMAL(p,s) or VARCHAR(n)");
	return -1;
}

void table_type_name(const struct table_type *t, char buf[TABLE_TYPE_TEXT_MAX])
{
	for (size_t i = 0; i < NELEM(kinds); i++) {
		if (kinds[i].kind != t->kind)
			continue;
		if (t->kind == TABLE_DECIMAL)
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "DECIMAL(%d,%d)", t->precision, t->scale);
		else if (t->kind == TABLE_VARCHAR && t->length > 0)
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "VARCHAR(%ld)", t->length);
		else
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "%s", kinds[i].name);
		return;
	}
	snprintf(buf, TABLE_TYPE_TEXT_MAX, "?");
}

/* VARCHAR(n) is stored as VARCHAR up to this length, as TEXT types above:
 * wide VARCHARs count in full against the 65535-byte row, TEXT does not. */
#define VARCHAR_INLINE_MAX 1024
#define TEXT_CHARS_MAX     16383        /* TEXT holds 65535 bytes of utf8mb4 */

void table_type_sql(const struct table_type *t, char buf[TABLE_TYPE_TEXT_MAX])
{
	switch (t->kind) {
	case TABLE_INTEGER: snprintf(buf, TABLE_TYPE_TEXT_MAX, "INT"); break;
	case TABLE_BIGINT: snprintf(buf, TABLE_TYPE_TEXT_MAX, "BIGINT"); break;
	case TABLE_DECIMAL:
		snprintf(buf, TABLE_TYPE_TEXT_MAX, "DECIMAL(%d,%d)", t->precision, t->scale);
		break;
	case TABLE_DOUBLE: snprintf(buf, TABLE_TYPE_TEXT_MAX, "DOUBLE"); break;
	case TABLE_BOOLEAN: snprintf(buf, TABLE_TYPE_TEXT_MAX, "BOOLEAN"); break;
	case TABLE_DATE: snprintf(buf, TABLE_TYPE_TEXT_MAX, "DATE"); break;
	case TABLE_TIMESTAMP: snprintf(buf, TABLE_TYPE_TEXT_MAX, "DATETIME(6)"); break;
	case TABLE_VARCHAR:
		if (t->length == 0)
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "LONGTEXT");
		else if (t->length <= VARCHAR_INLINE_MAX)
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "VARCHAR(%ld)", t->length);
		else if (t->length <= TEXT_CHARS_MAX)
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "TEXT");
		else
			snprintf(buf, TABLE_TYPE_TEXT_MAX, "MEDIUMTEXT");
		break;
	}
}

long table_type_row_bytes(const struct table_type *t)
{
	switch (t->kind) {
	case TABLE_INTEGER: return 4;
	case TABLE_BIGINT: return 8;
	case TABLE_DECIMAL: return (t->precision + 1) / 2 + 1;   /* an upper bound */
	case TABLE_DOUBLE: return 8;
	case TABLE_BOOLEAN: return 1;
	case TABLE_DATE: return 3;
	case TABLE_TIMESTAMP: return 8;
	case TABLE_VARCHAR:
		if (t->length == 0)
			return 12;                                /* LONGTEXT pointer */
		if (t->length <= VARCHAR_INLINE_MAX)
			return t->length * 4 + (t->length * 4 > 255 ? 2 : 1);
		return t->length <= TEXT_CHARS_MAX ? 10 : 11;
	}
	return 0;
}

int table_type_from_inferred(const char *inferred_type, int precision, int scale,
                             struct table_type *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < NELEM(kinds); i++) {
		if (strcasecmp(kinds[i].name, inferred_type) != 0)
			continue;
		t->kind = kinds[i].kind;
		if (t->kind == TABLE_DECIMAL) {
			/* Out-of-range sizes cannot come from inference; read them
			 * as the widest decimal rather than refusing. */
			if (precision < 1 || precision > 65 || scale < 0 || scale > precision) {
				precision = TABLE_DECIMAL_MAX;
				scale = scale >= 0 && scale <= TABLE_DECIMAL_MAX ? scale : 0;
			}
			t->precision = precision;
			t->scale = scale;
		}
		return 0;
	}
	return -1;
}

/* --- compatibility ------------------------------------------------------------ */

/* Characters the text of a value of type t may take, at most (VARCHAR:
 * unknown, 0). */
static long text_width(const struct table_type *t)
{
	switch (t->kind) {
	case TABLE_INTEGER: return 11;            /* -2147483648 */
	case TABLE_BIGINT: return 20;             /* -9223372036854775808 */
	case TABLE_DECIMAL: return t->precision + 2;   /* sign and point */
	case TABLE_DOUBLE: return 24;             /* -1.2345678901234567e+308 */
	case TABLE_BOOLEAN: return 5;             /* false */
	case TABLE_DATE: return 10;               /* 2026-11-22 */
	case TABLE_TIMESTAMP: return 26;          /* 2026-11-22 10:00:00.123456 */
	case TABLE_VARCHAR: return 0;
	}
	return 0;
}

/* Integer digits a type holds. */
static int int_digits(const struct table_type *t)
{
	switch (t->kind) {
	case TABLE_INTEGER: return 10;
	case TABLE_BIGINT: return 19;
	case TABLE_DECIMAL: return t->precision - t->scale;
	default: return 0;
	}
}

int table_type_compat(const struct table_type *from, const struct table_type *to,
                      char *note, size_t notelen)
{
	char fn[TABLE_TYPE_TEXT_MAX], tn[TABLE_TYPE_TEXT_MAX];

	table_type_name(from, fn);
	table_type_name(to, tn);
	str_errf(note, notelen, "%s", "");

	if (to->kind == TABLE_VARCHAR) {
		long w = text_width(from);

		if (from->kind == TABLE_VARCHAR && to->length == 0)
			return 0;
		if (to->length == 0) {
			str_errf(note, notelen, "%s values are stored as text", fn);
			return 1;
		}
		if (from->kind == TABLE_VARCHAR) {
			if (from->length > 0 && from->length <= to->length)
				return 0;      /* its longest value fits */
			str_errf(note, notelen, "a value longer than %ld characters makes "
			         "the load fail", to->length);
			return 1;
		}
		if (w > to->length) {
			str_errf(note, notelen, "%s values take up to %ld characters, "
			         "more than %s holds", fn, w, tn);
			return -1;
		}
		str_errf(note, notelen, "%s values are stored as text", fn);
		return 1;
	}

	switch (from->kind) {
	case TABLE_INTEGER:
	case TABLE_BIGINT:
		if (to->kind == from->kind)
			return 0;
		if (to->kind == TABLE_BIGINT && from->kind == TABLE_INTEGER) {
			str_errf(note, notelen, "INTEGER values widened to BIGINT");
			return 1;
		}
		if (to->kind == TABLE_DECIMAL) {
			if (int_digits(to) < int_digits(from)) {
				str_errf(note, notelen, "%s holds %d integer digits, %s values "
				         "need up to %d", tn, int_digits(to), fn, int_digits(from));
				return -1;
			}
			str_errf(note, notelen, "%s values widened to %s", fn, tn);
			return 1;
		}
		if (to->kind == TABLE_DOUBLE) {
			str_errf(note, notelen, from->kind == TABLE_BIGINT
			         ? "BIGINT values widened to DOUBLE: integers beyond 2^53 are rounded"
			         : "INTEGER values widened to DOUBLE");
			return 1;
		}
		break;
	case TABLE_DECIMAL:
		if (to->kind == TABLE_DECIMAL) {
			if (to->precision == from->precision && to->scale == from->scale)
				return 0;
			if (to->scale < from->scale) {
				str_errf(note, notelen, "%s keeps %d digits after the point, "
				         "the dataset has %d", tn, to->scale, from->scale);
				return -1;
			}
			if (int_digits(to) < int_digits(from)) {
				str_errf(note, notelen, "%s holds %d integer digits, the "
				         "dataset's %s has %d", tn, int_digits(to), fn,
				         int_digits(from));
				return -1;
			}
			str_errf(note, notelen, "%s values widened to %s", fn, tn);
			return 1;
		}
		if (to->kind == TABLE_DOUBLE) {
			str_errf(note, notelen, "%s values widened to DOUBLE: more than 15 "
			         "significant digits are rounded", fn);
			return 1;
		}
		/* A whole-number decimal fits an integer type that has the digits. */
		if ((to->kind == TABLE_INTEGER || to->kind == TABLE_BIGINT) &&
		    from->scale == 0 && from->precision < int_digits(to)) {
			str_errf(note, notelen, "%s values stored as %s", fn, tn);
			return 1;
		}
		break;
	case TABLE_DOUBLE:
	case TABLE_BOOLEAN:
	case TABLE_TIMESTAMP:
		if (to->kind == from->kind)
			return 0;
		break;
	case TABLE_DATE:
		if (to->kind == TABLE_DATE)
			return 0;
		if (to->kind == TABLE_TIMESTAMP) {
			str_errf(note, notelen, "DATE values widened to TIMESTAMP at midnight");
			return 1;
		}
		break;
	case TABLE_VARCHAR:
		break;
	}
	str_errf(note, notelen, "%s values do not fit %s", fn, tn);
	return -1;
}

int table_type_widen(const struct table_type *col, const struct table_type *src,
                     struct table_type *to)
{
	char cs[TABLE_TYPE_TEXT_MAX], ss[TABLE_TYPE_TEXT_MAX], err[160];
	char wt[WH_TYPE_TEXT_MAX], sc[WH_TYPE_TEXT_MAX];

	*to = *col;
	if (src->kind == TABLE_VARCHAR && src->length == 0)
		return 0;                      /* text of unknown length: as it is */
	/* A BOOLEAN column is a TINYINT to MariaDB, not a number to widen. */
	if (col->kind == TABLE_BOOLEAN && src->kind != TABLE_BOOLEAN)
		return -1;
	table_type_sql(col, cs);
	table_type_sql(src, ss);
	switch (wh_type_change(cs, ss, wt)) {
	case WH_TYPE_INCOMPATIBLE:
		return -1;
	case WH_TYPE_WIDEN:
		break;
	default:
		return 0;
	}
	wh_type_canonical(ss, sc);
	if (strcmp(wt, sc) == 0)
		*to = *src;                    /* the dataset's own type */
	else if (table_type_parse(wt, to, err, sizeof err) != 0)
		return -1;                     /* a DECIMAL beyond TABLE_DECIMAL_MAX */
	return 1;
}

bool table_column_name_eq(const char *a, const char *b)
{
	return str_eq_nocase(a, b);
}

/* --- the link check -------------------------------------------------------------- */

void table_match_free(struct table_match *m)
{
	json_object_put(m->missing_columns);
	json_object_put(m->extra_columns);
	json_object_put(m->type_mismatches);
	json_object_put(m->warnings);
	memset(m, 0, sizeof *m);
}

static int add_str(struct json_object *arr, const char *s)
{
	struct json_object *o = json_object_new_string(s);

	if (o == NULL || json_object_array_add(arr, o) != 0) {
		json_object_put(o);
		return -1;
	}
	return 0;
}

static int add_warning(struct json_object *arr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_warning(struct json_object *arr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return add_str(arr, buf);
}

static int add_mismatch(struct json_object *arr, const char *column,
                        const char *table_type, const char *dataset_type)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return -1;
	json_object_object_add(o, "column", json_object_new_string(column));
	json_object_object_add(o, "table_type", json_object_new_string(table_type));
	json_object_object_add(o, "dataset_type", json_object_new_string(dataset_type));
	if (json_object_array_add(arr, o) != 0) {
		json_object_put(o);
		return -1;
	}
	return 0;
}

int table_match_columns(const struct table_column *table, size_t nt,
                        const struct table_column *dataset, size_t nd,
                        struct table_match *m)
{
	bool *used = NULL;
	int rc = -1;

	memset(m, 0, sizeof *m);
	m->missing_columns = json_object_new_array();
	m->extra_columns = json_object_new_array();
	m->type_mismatches = json_object_new_array();
	m->warnings = json_object_new_array();
	used = calloc(nd > 0 ? nd : 1, sizeof *used);
	if (m->missing_columns == NULL || m->extra_columns == NULL ||
	    m->type_mismatches == NULL || m->warnings == NULL || used == NULL)
		goto out;

	m->schema_matched = nt == nd;
	for (size_t i = 0; i < nt; i++) {
		const struct table_column *tc = &table[i];
		const struct table_column *dc = NULL;
		char note[256], tn[TABLE_TYPE_TEXT_MAX], dn[TABLE_TYPE_TEXT_MAX];
		struct table_type wider;
		int c;

		for (size_t k = 0; k < nd; k++) {
			if (!used[k] && table_column_name_eq(tc->name, dataset[k].name)) {
				used[k] = true;
				dc = &dataset[k];
				if (k != i || strcmp(tc->name, dc->name) != 0)
					m->schema_matched = false;
				break;
			}
		}
		if (dc == NULL) {
			m->schema_matched = false;
			if (add_str(m->missing_columns, tc->name) != 0)
				goto out;
			continue;
		}
		if (strcmp(tc->name, dc->name) != 0 &&
		    add_warning(m->warnings, "column '%s' of the dataset is loaded into "
		                "column '%s' of the table", dc->name, tc->name) != 0)
			goto out;
		table_type_name(&tc->type, tn);
		table_type_name(&dc->type, dn);
		c = table_type_compat(&dc->type, &tc->type, note, sizeof note);
		/* A wider dataset type: the load widens the table's column. */
		if (table_type_widen(&tc->type, &dc->type, &wider) > 0) {
			char wn[TABLE_TYPE_TEXT_MAX];

			table_type_name(&wider, wn);
			str_errf(note, sizeof note, "%s table column widened to %s", tn, wn);
			c = 1;
		}
		if (c != 0)
			m->schema_matched = false;
		if (c < 0 || (dc->nullable && !tc->nullable)) {
			/* A dataset column with empty values cannot go into a NOT NULL
			 * column: reported as a mismatch of the column definitions. */
			char tdef[TABLE_TYPE_TEXT_MAX + 16], ddef[TABLE_TYPE_TEXT_MAX + 16];
			bool nulls = dc->nullable && !tc->nullable;

			snprintf(tdef, sizeof tdef, "%s%s", tn, nulls ? " NOT NULL" : "");
			snprintf(ddef, sizeof ddef, "%s%s", dn, nulls ? " NULL" : "");
			if (add_mismatch(m->type_mismatches, tc->name, tdef, ddef) != 0)
				goto out;
			continue;
		}
		if (c > 0 && add_warning(m->warnings, "column '%s': %s", tc->name, note) != 0)
			goto out;
	}
	for (size_t k = 0; k < nd; k++) {
		if (used[k])
			continue;
		m->schema_matched = false;
		if (add_str(m->extra_columns, dataset[k].name) != 0)
			goto out;
	}
	m->compatible = json_object_array_length(m->missing_columns) == 0 &&
	                json_object_array_length(m->extra_columns) == 0 &&
	                json_object_array_length(m->type_mismatches) == 0;
	if (!m->compatible)
		m->schema_matched = false;
	rc = 0;
out:
	free(used);
	if (rc != 0)
		table_match_free(m);
	return rc;
}

/* --- values for the load ----------------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

static void civil_from_days(long long z, long long *y, unsigned *m, unsigned *d)
{
	long long era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	*y = (long long)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y += *m <= 2;
}

static int digits(const char *s, size_t n, size_t at, size_t count, int *out)
{
	int v = 0;

	if (at + count > n)
		return -1;
	for (size_t i = at; i < at + count; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* "YYYY-MM-DD[T ]HH:MM[:SS[.f...]][Z|+HH[:MM]|-HH[:MM]]" as
 * "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC; -1 when s is not of that form. */
static int timestamp_utc(const char *s, size_t n, char buf[TABLE_VALUE_BUF], size_t *len)
{
	int y, mo, d, h, mi, sec = 0, oh = 0, om = 0, sign = 0;
	char frac[7] = "";
	size_t i = 16, nf = 0;
	long long days, secs;

	if (digits(s, n, 0, 4, &y) || n < 16 || s[4] != '-' || digits(s, n, 5, 2, &mo) ||
	    s[7] != '-' || digits(s, n, 8, 2, &d) || (s[10] != 'T' && s[10] != ' ' &&
	    s[10] != 't') || digits(s, n, 11, 2, &h) || s[13] != ':' ||
	    digits(s, n, 14, 2, &mi))
		return -1;
	if (i < n && s[i] == ':') {
		if (digits(s, n, 17, 2, &sec))
			return -1;
		i = 19;
		if (i < n && (s[i] == '.' || s[i] == ',')) {
			i++;
			while (i < n && s[i] >= '0' && s[i] <= '9') {
				if (nf < 6)
					frac[nf++] = s[i];
				i++;
			}
			if (nf == 0)
				return -1;
			frac[nf] = '\0';
		}
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < n && (s[i] == '+' || s[i] == '-')) {
		sign = s[i] == '+' ? 1 : -1;
		if (digits(s, n, i + 1, 2, &oh))
			return -1;
		i += 3;
		if (i < n && s[i] == ':')
			i++;
		if (i < n) {
			if (digits(s, n, i, 2, &om))
				return -1;
			i += 2;
		}
	}
	if (i != n || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    sec > 60 || oh > 23 || om > 59)
		return -1;
	days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	secs = days * 86400 + h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
	{
		long long yy, dd = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
		long long rem = secs - dd * 86400;
		unsigned m2, d2;

		civil_from_days(dd, &yy, &m2, &d2);
		if (yy < 0 || yy > 9999)
			return -1;
		*len = (size_t)snprintf(buf, TABLE_VALUE_BUF, "%04lld-%02u-%02u %02lld:%02lld:%02lld%s%s",
		                        yy, m2, d2, rem / 3600, rem / 60 % 60, rem % 60,
		                        nf > 0 ? "." : "", frac);
	}
	return 0;
}

/* A plain decimal "[+-]digits[.digits]" with more fractional digits than
 * scale, rounded half away from zero to scale digits into buf; -1 when s is
 * not such a number (or is too long), so it goes as it is. */
static int round_decimal(const char *s, size_t n, int scale, char buf[TABLE_VALUE_BUF],
                         size_t *len)
{
	char dig[TABLE_VALUE_BUF];
	size_t i = 0, nint = 0, nfrac = 0, nd, o = 0;
	bool neg = false, up;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	while (i + nint < n && s[i + nint] >= '0' && s[i + nint] <= '9')
		nint++;
	if (i + nint >= n || s[i + nint] != '.')
		return -1;
	while (i + nint + 1 + nfrac < n && s[i + nint + 1 + nfrac] >= '0' &&
	       s[i + nint + 1 + nfrac] <= '9')
		nfrac++;
	if (i + nint + 1 + nfrac != n || nfrac <= (size_t)scale ||
	    nint + (size_t)scale + 4 > sizeof dig)
		return -1;
	/* dig = a leading 0 (room for a carry), the integer digits, scale
	 * fractional ones; then add one in the last place when rounding up. */
	dig[0] = '0';
	memcpy(dig + 1, s + i, nint);
	memcpy(dig + 1 + nint, s + i + nint + 1, (size_t)scale);
	nd = 1 + nint + (size_t)scale;
	up = s[i + nint + 1 + scale] >= '5';
	for (size_t k = nd; up && k-- > 0;) {
		if (dig[k] == '9') {
			dig[k] = '0';
		} else {
			dig[k]++;
			up = false;
		}
	}
	if (neg)
		buf[o++] = '-';
	{
		size_t k = 0, int_end = 1 + nint;

		while (k + 1 < int_end && dig[k] == '0')     /* keep one integer digit */
			k++;
		memcpy(buf + o, dig + k, int_end - k);
		o += int_end - k;
	}
	if (scale > 0) {
		buf[o++] = '.';
		memcpy(buf + o, dig + 1 + nint, (size_t)scale);
		o += (size_t)scale;
	}
	buf[o] = '\0';
	*len = o;
	return 0;
}

const char *table_value(const struct table_type *t, const struct tab_cell *c,
                        char buf[TABLE_VALUE_BUF], size_t *len)
{
	const char *s = c->text;
	size_t n = c->len;

	*len = 0;
	/* missing-value markers and NaN / Inf are nulls unless the column
	 * is text */
	if (s == NULL || tab_cell_is_null(c, t->kind == TABLE_VARCHAR))
		return NULL;
	if (t->kind == TABLE_VARCHAR) {
		*len = n;
		return s;
	}
	while (n > 0 && is_blank(*s)) {
		s++;
		n--;
	}
	while (n > 0 && is_blank(s[n - 1]))
		n--;
	if (n == 0)
		return NULL;

	switch (t->kind) {
	case TABLE_INTEGER:
	case TABLE_BIGINT:
	case TABLE_DECIMAL:
	case TABLE_DOUBLE:
		if (c->kind == TAB_BOOL) {
			*len = 1;
			return c->num != 0 ? "1" : "0";
		}
		if (n > 1 && *s == '+') {
			s++;
			n--;
		}
		/* More decimals than the column keeps (a spreadsheet's 0.1 is
		 * 0.10000000000000001): rounded here, as the warehouse would
		 * with a warning that fails the load. */
		if (t->kind == TABLE_DECIMAL) {
			if (round_decimal(s, n, t->scale, buf, len) == 0)
				return buf;
			if (c->kind == TAB_NUMBER && memchr(s, 'e', n) == NULL &&
			    memchr(s, 'E', n) == NULL)
				break;
			if (c->kind == TAB_NUMBER && isfinite(c->num)) {
				int k = snprintf(buf, TABLE_VALUE_BUF, "%.*f", t->scale, c->num);

				if (k > 0 && k < TABLE_VALUE_BUF) {
					*len = (size_t)k;
					return buf;
				}
			}
		}
		break;
	case TABLE_BOOLEAN:
		if (c->kind == TAB_BOOL || c->kind == TAB_NUMBER) {
			*len = 1;
			return c->num != 0 ? "1" : "0";
		}
		if (word_is(s, n, "true") || word_is(s, n, "t") || word_is(s, n, "yes") ||
		    word_is(s, n, "y") || word_is(s, n, "1")) {
			*len = 1;
			return "1";
		}
		if (word_is(s, n, "false") || word_is(s, n, "f") || word_is(s, n, "no") ||
		    word_is(s, n, "n") || word_is(s, n, "0")) {
			*len = 1;
			return "0";
		}
		break;
	case TABLE_DATE:
		/* "YYYY/MM/DD" is read as "YYYY-MM-DD". */
		if (n == 10 && s[4] == '/' && s[7] == '/') {
			memcpy(buf, s, 10);
			buf[4] = buf[7] = '-';
			*len = 10;
			return buf;
		}
		break;
	case TABLE_TIMESTAMP:
		if (n > 10 && timestamp_utc(s, n, buf, len) == 0)
			return buf;
		break;
	case TABLE_VARCHAR:
		break;
	}
	*len = n;
	return s;
}
