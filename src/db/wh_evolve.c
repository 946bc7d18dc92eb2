/* wh_evolve.c - the widening lattice of warehouse column types (see
 * wh_evolve.h) and the ALTER TABLE that follows a source's widened types. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/warehouse.h"
#include "db/wh_evolve.h"
#include "util/str.h"
#include "util/strbuf.h"

#define DECIMAL_PRECISION_MAX 65        /* MariaDB's limits */
#define DECIMAL_SCALE_MAX 38
#define FSP_MAX 6

enum cls { C_INT, C_DECIMAL, C_FLOAT, C_DATE, C_TIME, C_TEXT, C_BINARY, C_OTHER };

/* One parsed column type. */
struct ctype {
	enum cls cls;
	int bytes;               /* C_INT: 1 2 3 4 8; C_FLOAT: 4 8 */
	bool uns;                /* C_INT */
	int p, s;                /* C_DECIMAL; C_DATE, C_TIME: s = fractional digits */
	bool datetime;           /* C_DATE: DATETIME rather than DATE */
	long long len;           /* C_TEXT: characters, C_BINARY: bytes */
	char text[WH_TYPE_TEXT_MAX];   /* canonical DDL text */
	char word[16];           /* the type's name, lower case */
};

static const struct {
	const char *name;
	enum cls cls;
	int bytes;               /* C_INT, C_FLOAT */
	long long len;           /* C_TEXT, C_BINARY without a length */
} names[] = {
	{ "tinyint", C_INT, 1, 0 }, { "boolean", C_INT, 1, 0 }, { "bool", C_INT, 1, 0 }, { "smallint", C_INT, 2, 0 },
	{ "mediumint", C_INT, 3, 0 }, { "int", C_INT, 4, 0 },
	{ "integer", C_INT, 4, 0 }, { "bigint", C_INT, 8, 0 },
	{ "decimal", C_DECIMAL, 0, 0 }, { "numeric", C_DECIMAL, 0, 0 },
	{ "float", C_FLOAT, 4, 0 }, { "double", C_FLOAT, 8, 0 },
	{ "real", C_FLOAT, 8, 0 },
	{ "date", C_DATE, 0, 0 }, { "datetime", C_DATE, 0, 0 },
	{ "time", C_TIME, 0, 0 },
	{ "char", C_TEXT, 0, 1 }, { "varchar", C_TEXT, 0, 0 },
	{ "tinytext", C_TEXT, 0, 63 }, { "text", C_TEXT, 0, 16383 },
	{ "mediumtext", C_TEXT, 0, 4194303 }, { "longtext", C_TEXT, 0, 1073741823 },
	{ "binary", C_BINARY, 0, 1 }, { "varbinary", C_BINARY, 0, 0 },
	{ "tinyblob", C_BINARY, 0, 255 }, { "blob", C_BINARY, 0, 65535 },
	{ "mediumblob", C_BINARY, 0, 16777215 }, { "longblob", C_BINARY, 0, 4294967295LL },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Decimal digits of the largest value of an integer type. */
static int int_digits(const struct ctype *t)
{
	static const int sig[] = { 0, 3, 5, 7, 10, 0, 0, 0, 19 };
	static const int uns[] = { 0, 3, 5, 8, 10, 0, 0, 0, 20 };

	return t->uns ? uns[t->bytes] : sig[t->bytes];
}

static void canon(struct ctype *t, const char *word)
{
	char up[16];
	size_t i;

	for (i = 0; word[i] != '\0' && i + 1 < sizeof up; i++)
		up[i] = (char)toupper((unsigned char)word[i]);
	up[i] = '\0';
	switch (t->cls) {
	case C_INT:
		snprintf(t->text, sizeof t->text, "%s%s", strcmp(up, "INTEGER") == 0
		         ? "INT" : up, t->uns ? " UNSIGNED" : "");
		break;
	case C_DECIMAL:
		snprintf(t->text, sizeof t->text, "DECIMAL(%d,%d)", t->p, t->s);
		break;
	case C_FLOAT:
		snprintf(t->text, sizeof t->text, "%s", t->bytes == 4 ? "FLOAT" : "DOUBLE");
		break;
	case C_DATE:
		if (!t->datetime)
			snprintf(t->text, sizeof t->text, "DATE");
		else if (t->s > 0)
			snprintf(t->text, sizeof t->text, "DATETIME(%d)", t->s);
		else
			snprintf(t->text, sizeof t->text, "DATETIME");
		break;
	case C_TIME:
		snprintf(t->text, sizeof t->text, t->s > 0 ? "TIME(%d)" : "TIME", t->s);
		break;
	case C_TEXT:
	case C_BINARY:
		if (strcmp(up, "CHAR") == 0 || strcmp(up, "VARCHAR") == 0 ||
		    strcmp(up, "BINARY") == 0 || strcmp(up, "VARBINARY") == 0)
			snprintf(t->text, sizeof t->text, "%s(%lld)", up, t->len);
		else
			snprintf(t->text, sizeof t->text, "%s", up);
		break;
	case C_OTHER:
		break;
	}
}

/* MariaDB's COLUMN_TYPE or DDL text into t; an unknown type is C_OTHER
 * with its text upper-cased, which only an identical type matches. */
static void parse(const char *s, struct ctype *t)
{
	char word[16];
	long long a = -1, b = -1;
	size_t n = 0;
	const char *p = s;

	memset(t, 0, sizeof *t);
	t->cls = C_OTHER;
	for (size_t i = 0; s[i] != '\0' && i + 1 < sizeof t->text; i++)
		t->text[i] = (char)toupper((unsigned char)s[i]);
	while (isalpha((unsigned char)*p) && n + 1 < sizeof word)
		word[n++] = (char)tolower((unsigned char)*p++);
	word[n] = '\0';
	memcpy(t->word, word, n + 1);
	if (isalpha((unsigned char)*p))
		return;
	if (*p == '(') {
		char *end;

		a = strtoll(p + 1, &end, 10);
		if (*end == ',')
			b = strtoll(end + 1, &end, 10);
		if (*end != ')')
			return;
		p = end + 1;
	}
	while (*p == ' ')
		p++;
	if (strncasecmp(p, "unsigned", 8) == 0) {
		t->uns = true;
		p += 8;
		while (*p == ' ')
			p++;
	}
	if (*p != '\0')
		return;                       /* zerofill, a character set: as written */
	for (size_t i = 0; i < NELEM(names); i++) {
		if (strcmp(names[i].name, word) != 0)
			continue;
		t->cls = names[i].cls;
		t->bytes = names[i].bytes;
		t->len = names[i].len;
		if (t->uns && t->cls != C_INT && t->cls != C_DECIMAL && t->cls != C_FLOAT) {
			t->cls = C_OTHER;
			return;
		}
		t->uns = t->uns && t->cls == C_INT;
		switch (t->cls) {
		case C_DECIMAL:
			t->p = a > 0 ? (int)a : 10;
			t->s = b > 0 ? (int)b : 0;
			break;
		case C_DATE:
			t->datetime = strcmp(word, "datetime") == 0;
			t->s = a > 0 ? (int)a : 0;
			break;
		case C_TIME:
			t->s = a > 0 ? (int)a : 0;
			break;
		case C_TEXT:
		case C_BINARY:
			if (a > 0 && (strcmp(word, "char") == 0 || strcmp(word, "varchar") == 0 ||
			              strcmp(word, "binary") == 0 || strcmp(word, "varbinary") == 0))
				t->len = a;
			if (t->len <= 0) {
				t->cls = C_OTHER;
				return;
			}
			break;
		default:
			break;
		}
		canon(t, word);
		return;
	}
}

/* Characters of the text of a value of type v, at most (0: not text). */
static long long text_width(const struct ctype *v)
{
	switch (v->cls) {
	case C_INT: return int_digits(v) + 1;                 /* sign */
	case C_DECIMAL: return v->p + 2;                      /* sign, point */
	case C_FLOAT: return 24;                              /* -1.2345678901234567e+308 */
	case C_DATE: return v->datetime ? 19 + (v->s > 0 ? v->s + 1 : 0) : 10;
	case C_TIME: return 10 + (v->s > 0 ? v->s + 1 : 0);   /* -838:59:59 */
	default: return 0;
	}
}

/* Does a column of type t take every value of type v?  exact: without
 * changing any value; otherwise also as the storage explorer's links load
 * values (into a DOUBLE rounded to 15 digits, into text as their text). */
static bool holds(const struct ctype *t, const struct ctype *v, bool exact)
{
	if (!exact && t->cls == C_TEXT && v->cls != C_TEXT)
		return text_width(v) > 0 && t->len >= text_width(v);
	switch (v->cls) {
	case C_INT:
		if (t->cls == C_INT)
			return t->uns == v->uns ? t->bytes >= v->bytes
			       : v->uns ? t->bytes > v->bytes : false;
		if (t->cls == C_DECIMAL)
			return t->p - t->s >= int_digits(v);
		/* A DOUBLE holds integers of up to 53 bits exactly. */
		return t->cls == C_FLOAT && t->bytes == 8 && (!exact || v->bytes <= 4);
	case C_DECIMAL:
		if (t->cls == C_DECIMAL)
			return t->s >= v->s && t->p - t->s >= v->p - v->s;
		if (t->cls == C_INT)
			return v->s == 0 && v->p < int_digits(t);
		return !exact && t->cls == C_FLOAT && t->bytes == 8;
	case C_FLOAT:
		return t->cls == C_FLOAT && t->bytes >= v->bytes;
	case C_DATE:
		return t->cls == C_DATE && (t->datetime || !v->datetime) && t->s >= v->s;
	case C_TIME:
		return t->cls == C_TIME && t->s >= v->s;
	case C_TEXT:
	case C_BINARY:
		return t->cls == v->cls && t->len >= v->len;
	case C_OTHER:
		/* the same name (YEAR(4) is YEAR); sizes are not compared */
		return t->cls == C_OTHER && strcmp(t->word, v->word) == 0;
	}
	return false;
}

/* The least type that holds both a and b, when the lattice has one that
 * neither is: exact numbers (DECIMAL(10,2) and DECIMAL(10,4): DECIMAL(12,4);
 * INT UNSIGNED and INT: BIGINT).  0, or -1 when there is none. */
static int join(const struct ctype *a, const struct ctype *b, struct ctype *out)
{
	int ia, ib, s, i;

	if ((a->cls != C_INT && a->cls != C_DECIMAL) ||
	    (b->cls != C_INT && b->cls != C_DECIMAL))
		return -1;
	memset(out, 0, sizeof *out);
	if (a->cls == C_INT && b->cls == C_INT) {
		static const int next[] = { 0, 2, 3, 4, 8, 0, 0, 0, 0 };
		int need = a->bytes > b->bytes ? a->bytes : b->bytes;

		/* one is unsigned, the other signed: a signed type one size up */
		out->cls = C_INT;
		out->bytes = next[need];
		if (out->bytes != 0) {
			canon(out, out->bytes == 8 ? "bigint" : out->bytes == 4 ? "int"
			      : out->bytes == 3 ? "mediumint" : "smallint");
			return 0;
		}
	}
	ia = a->cls == C_INT ? int_digits(a) : a->p - a->s;
	ib = b->cls == C_INT ? int_digits(b) : b->p - b->s;
	s = a->cls == C_DECIMAL ? a->s : 0;
	if (b->cls == C_DECIMAL && b->s > s)
		s = b->s;
	i = ia > ib ? ia : ib;
	if (i + s > DECIMAL_PRECISION_MAX || s > DECIMAL_SCALE_MAX)
		return -1;
	out->cls = C_DECIMAL;
	out->p = i + s;
	out->s = s;
	canon(out, "decimal");
	return 0;
}

enum wh_change wh_type_change(const char *existing, const char *wanted,
                              char to[WH_TYPE_TEXT_MAX])
{
	struct ctype e, w, j;
	bool ew, we;

	parse(existing, &e);
	parse(wanted, &w);
	snprintf(to, WH_TYPE_TEXT_MAX, "%s", e.text);
	ew = holds(&e, &w, false);
	we = holds(&w, &e, true);
	if (we && holds(&e, &w, true))
		return WH_TYPE_SAME;
	if (ew)
		return WH_TYPE_NARROWER;
	if (we) {
		snprintf(to, WH_TYPE_TEXT_MAX, "%s", w.text);
		return WH_TYPE_WIDEN;
	}
	if (join(&e, &w, &j) == 0) {
		snprintf(to, WH_TYPE_TEXT_MAX, "%s", j.text);
		return WH_TYPE_WIDEN;
	}
	return WH_TYPE_INCOMPATIBLE;
}

void wh_type_canonical(const char *sql_type, char out[WH_TYPE_TEXT_MAX])
{
	struct ctype t;

	parse(sql_type, &t);
	snprintf(out, WH_TYPE_TEXT_MAX, "%s", t.text);
}

/* ---- the table ------------------------------------------------------------ */

/* A column widened to a type that holds more than its source's (the meet
 * of two DECIMALs) remembers the source's type in its comment, so that the
 * next load compares the source with its own earlier type. */
#define SOURCE_COMMENT "sluice source type "

struct have_col {
	char name[WH_IDENT_MAX * 4 + 1];
	char type[WH_TYPE_TEXT_MAX];
	char source[WH_TYPE_TEXT_MAX];    /* the source's type when last loaded */
	bool nullable;
};

struct have {
	struct have_col *c;
	size_t n, cap;
	bool oom;
};

static void have_add(void *arg, const char *name, const char *type, bool nullable,
                     const char *comment)
{
	struct have *h = arg;
	struct have_col *c;
	size_t pre = strlen(SOURCE_COMMENT);

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 32;
		struct have_col *grown = realloc(h->c, cap * sizeof *grown);

		if (grown == NULL) {
			h->oom = true;
			return;
		}
		h->c = grown;
		h->cap = cap;
	}
	c = &h->c[h->n++];
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->type, sizeof c->type, "%s", type);
	snprintf(c->source, sizeof c->source, "%s",
	         strncmp(comment, SOURCE_COMMENT, pre) == 0 ? comment + pre : type);
	c->nullable = nullable;
}

static struct have_col *have_find(const struct have *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->c[i].name, name) == 0)   /* MariaDB's column names */
			return &h->c[i];
	return NULL;
}

int wh_table_evolve(struct wh *w, const char *schema, const char *table,
                    const struct wh_column *cols, size_t ncols, int flags,
                    wh_evolve_fn fn, void *arg, char *err, size_t errlen)
{
	struct have h = { 0 };
	struct strbuf b = { 0 };
	char (*to)[WH_TYPE_TEXT_MAX] = NULL;
	enum wh_change *ch = NULL;
	char q[2 * WH_IDENT_MAX * 4 + 3];
	int rc = -1, nwiden = 0;

	if (wh_table_columns(w, schema, table, have_add, &h, err, errlen) < 0)
		goto out;
	if (h.oom || (to = calloc(ncols + 1, sizeof *to)) == NULL ||
	    (ch = calloc(ncols + 1, sizeof *ch)) == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	/* Every column is judged before anything is altered.  A narrowing is
	 * one from the source's own earlier type: a source back at the type a
	 * widening was made for is not narrower than the wider meet. */
	for (size_t i = 0; i < ncols; i++) {
		struct have_col *k = have_find(&h, cols[i].name);
		char et[WH_TYPE_TEXT_MAX], wt[WH_TYPE_TEXT_MAX], st[WH_TYPE_TEXT_MAX];

		ch[i] = WH_TYPE_SAME;
		if (k == NULL)
			continue;
		ch[i] = wh_type_change(k->type, cols[i].sql_type, to[i]);
		if (ch[i] == WH_TYPE_SAME || ch[i] == WH_TYPE_WIDEN ||
		    (ch[i] == WH_TYPE_NARROWER && (!(flags & WH_EVOLVE_NARROWING_FAILS) ||
		     wh_type_change(k->source, cols[i].sql_type, st) != WH_TYPE_NARROWER)))
			continue;
		wh_type_canonical(k->type, et);
		wh_type_canonical(cols[i].sql_type, wt);
		if (ch[i] == WH_TYPE_NARROWER)
			str_errf(err, errlen, "column %s: the source's type %s is narrower "
			         "than (or of another kind than) %s in the destination "
			         "%s.%s; a destination column is never narrowed or "
			         "converted: reset the job's state to rebuild the table "
			         "from the source", cols[i].name, wt, et, schema, table);
		else
			str_errf(err, errlen, "column %s: the source's type %s does not fit "
			         "%s in the destination %s.%s, and no wider type holds both",
			         cols[i].name, wt, et, schema, table);
		goto out;
	}
	if (wh_quote(schema, q, sizeof q) != 0)
		goto bad_name;
	strbuf_adds(&b, "ALTER TABLE ");
	strbuf_adds(&b, q);
	if (wh_quote(table, q, sizeof q) != 0)
		goto bad_name;
	strbuf_addf(&b, ".%s", q);
	for (size_t i = 0; i < ncols; i++) {
		struct have_col *k = have_find(&h, cols[i].name);
		char wt[WH_TYPE_TEXT_MAX];

		if (ch[i] != WH_TYPE_WIDEN)
			continue;
		if (wh_quote(k->name, q, sizeof q) != 0)
			goto bad_name;
		/* types are canonical DDL: letters, digits, spaces, ( ) and , */
		wh_type_canonical(cols[i].sql_type, wt);
		strbuf_addf(&b, "%s MODIFY COLUMN %s %s %s", nwiden > 0 ? "," : "", q,
		            to[i], k->nullable ? "NULL" : "NOT NULL");
		if (strcmp(to[i], wt) != 0)
			strbuf_addf(&b, " COMMENT '" SOURCE_COMMENT "%s'", wt);
		nwiden++;
	}
	if (b.oom) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	if (nwiden > 0 && wh_exec(w, b.p, err, errlen) < 0)
		goto out;
	for (size_t i = 0; fn != NULL && i < ncols; i++) {
		struct have_col *k = have_find(&h, cols[i].name);
		char et[WH_TYPE_TEXT_MAX];

		if (k == NULL) {
			fn(arg, cols[i].name, NULL, cols[i].sql_type);
		} else if (ch[i] == WH_TYPE_WIDEN) {
			wh_type_canonical(k->type, et);
			fn(arg, k->name, et, to[i]);
		}
	}
	rc = nwiden;
	goto out;
bad_name:
	str_errf(err, errlen, "a table or column name is not valid: %s.%s", schema, table);
out:
	strbuf_free(&b);
	free(h.c);
	free(to);
	free(ch);
	return rc;
}
