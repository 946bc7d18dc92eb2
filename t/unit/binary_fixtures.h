/* binary_fixtures.h - what the XLSX, XLS and Parquet reader tests share:
 * the fixture directory, and a sink that writes what a reader passes as
 * one line per row ("id|name" for the header, "N:1|T:alpha|-" for a row:
 * N number, T text, B boolean, D date, S datetime (stamp), - null). */
#ifndef SLUICE_TEST_BINARY_FIXTURES_H
#define SLUICE_TEST_BINARY_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <json-c/json.h>

#include "tabular/tabular.h"

#ifndef SLUICE_TOP_SRCDIR
#define SLUICE_TOP_SRCDIR "."
#endif
#define FIXTURE(name) SLUICE_TOP_SRCDIR "/t/fixtures/storage/binary/" name

#define GOT_ROWS 16
#define GOT_LINE 512

struct got {
	char header[GOT_LINE];
	int headers;                    /* times the header callback came */
	char rows[GOT_ROWS][GOT_LINE];
	size_t nrows;                   /* all rows, kept or not */
	size_t stop_after;              /* row returns 1 after this many; 0 never */
	int abort_at;                   /* row returns -1 at this row (1-based); 0 never */
};

static inline void got_line(char *buf, const struct tab_cell *c, size_t n, int header)
{
	static const char kinds[] = { '-', 'T', 'N', 'B', 'D', 'S' };
	size_t l = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && l < GOT_LINE; i++) {
		int w;
		if (header)
			w = snprintf(buf + l, GOT_LINE - l, "%s%s", i ? "|" : "", c[i].text);
		else if (c[i].kind == TAB_NULL)
			w = snprintf(buf + l, GOT_LINE - l, "%s-", i ? "|" : "");
		else
			w = snprintf(buf + l, GOT_LINE - l, "%s%c:%s", i ? "|" : "", kinds[c[i].kind],
			             c[i].text);
		if (w < 0)
			break;
		l += (size_t)w;
	}
}

static inline int got_header(void *arg, const struct tab_cell *c, size_t n)
{
	struct got *g = arg;
	g->headers++;
	got_line(g->header, c, n, 1);
	return 0;
}

static inline int got_row(void *arg, const struct tab_cell *c, size_t n)
{
	struct got *g = arg;
	g->nrows++;
	if (g->abort_at > 0 && g->nrows == (size_t)g->abort_at)
		return -1;
	if (g->nrows <= GOT_ROWS)
		got_line(g->rows[g->nrows - 1], c, n, 0);
	return g->stop_after > 0 && g->nrows >= g->stop_after ? 1 : 0;
}

static inline struct tab_sink got_sink(struct got *g)
{
	memset(g, 0, sizeof *g);
	return (struct tab_sink){ got_header, got_row, g };
}

/* Default options with a sheet name (NULL: the first). */
static inline struct tab_opts got_opts(const char *sheet)
{
	struct tab_opts o;
	tab_opts_init(&o);
	if (sheet)
		snprintf(o.sheet_name, sizeof o.sheet_name, "%s", sheet);
	return o;
}

/* One expected column of an inferred schema. */
struct want_col {
	const char *name;
	enum infer_type type;
	int precision, scale;
	bool nullable;
};

static inline void expect_cols(const struct infer_result *r, const struct want_col *w, size_t n)
{
	CU_ASSERT_EQUAL_FATAL(r->ncols, n);
	for (size_t i = 0; i < n; i++) {
		const struct infer_column *c = &r->cols[i];
		if (strcmp(c->name, w[i].name) != 0 || c->type != w[i].type ||
		    c->precision != w[i].precision || c->scale != w[i].scale ||
		    c->nullable != w[i].nullable)
			fprintf(stderr, "\ncolumn %zu: got %s %s(%d,%d) %s, want %s %s(%d,%d) %s\n", i,
			        c->name, infer_type_name(c->type), c->precision, c->scale,
			        c->nullable ? "null" : "not null", w[i].name,
			        infer_type_name(w[i].type), w[i].precision, w[i].scale,
			        w[i].nullable ? "null" : "not null");
		CU_ASSERT_STRING_EQUAL(c->name, w[i].name);
		CU_ASSERT_EQUAL(c->type, w[i].type);
		CU_ASSERT_EQUAL(c->precision, w[i].precision);
		CU_ASSERT_EQUAL(c->scale, w[i].scale);
		CU_ASSERT_EQUAL(c->nullable, w[i].nullable);
	}
}

/* infer_file on a fixture with a sheet (NULL: the first); the columns and
 * counts as wanted. */
static inline void expect_schema(const char *path, enum tab_format f, const char *sheet,
                                 const struct want_col *w, size_t n, long long rows)
{
	struct tab_opts o;
	struct infer_result r;
	char err[256] = "";

	tab_opts_init(&o);
	if (sheet)
		snprintf(o.sheet_name, sizeof o.sheet_name, "%s", sheet);
	CU_ASSERT_EQUAL_FATAL(infer_file(path, f, &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	expect_cols(&r, w, n);
	CU_ASSERT_EQUAL(r.row_count, rows);
	CU_ASSERT_EQUAL(r.analyzed_rows, rows);
	CU_ASSERT_EQUAL(r.stats.rows, rows);
	infer_result_free(&r);
}

/* The schema object of a sheet (header_row -1: detected) has the warning
 * want (NULL: no "warnings" at all) and a header of names. */
static inline void expect_sheet_header(const char *path, enum tab_format f, const char *sheet,
                                       long header_row, const char *names, const char *want)
{
	struct tab_opts o;
	struct infer_result r;
	struct json_object *j, *w = NULL;
	char err[256] = "", got[512] = "";
	size_t l = 0;

	tab_opts_init(&o);
	o.header_row = header_row;
	if (sheet)
		snprintf(o.sheet_name, sizeof o.sheet_name, "%s", sheet);
	CU_ASSERT_EQUAL_FATAL(infer_file(path, f, &o, &r, err, sizeof err), 0);
	for (size_t i = 0; i < r.ncols && l < sizeof got; i++)
		l += (size_t)snprintf(got + l, sizeof got - l, "%s%s", i ? "|" : "", r.cols[i].name);
	CU_ASSERT_STRING_EQUAL(got, names);
	j = infer_result_json(&r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	if (want == NULL) {
		CU_ASSERT_FALSE(json_object_object_get_ex(j, "warnings", &w));
	} else {
		CU_ASSERT_FATAL(json_object_object_get_ex(j, "warnings", &w));
		CU_ASSERT_EQUAL(json_object_array_length(w), 1);
		CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(w, 0)), want);
	}
	json_object_put(j);
	infer_result_free(&r);
}

#endif
