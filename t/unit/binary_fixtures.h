/* binary_fixtures.h - what the XLSX, XLS and Parquet reader tests share:
 * the fixture directory, and a sink that writes what a reader passes as
 * one line per row ("id|name" for the header, "N:1|T:alpha|-" for a row:
 * N number, T text, B boolean, D date, S datetime (stamp), - null). */
#ifndef SLUICE_TEST_BINARY_FIXTURES_H
#define SLUICE_TEST_BINARY_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif
