/* test_tabular_csv.c - the CSV reader: quoting, delimiters, header
 * detection, skipped rows, line ends, ragged rows, limits, encodings, the
 * counting path, and the committed fixtures. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "tabular/internal.h"
#include "tabular/tabular.h"
#include "tabular_test.h"

/* ---- rows as text ---------------------------------------------------- */

struct collect {
	char *out;
	size_t len, cap;
	long long rows;
	int stop_after;           /* answer 1 after this many rows (0: never) */
};

static void put(struct collect *c, const char *s, size_t n)
{
	if (c->len + n + 1 > c->cap) {
		c->cap = (c->len + n + 1) * 2;
		c->out = realloc(c->out, c->cap);
	}
	memcpy(c->out + c->len, s, n);
	c->len += n;
	c->out[c->len] = '\0';
}

static void put_cells(struct collect *c, const struct tab_cell *cells, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(c, "|", 1);
		if (cells[i].kind == TAB_NULL)
			put(c, "~", 1);
		else
			put(c, cells[i].text, cells[i].len);
		CU_ASSERT(strlen(cells[i].text) == cells[i].len);
	}
	put(c, "\n", 1);
}

static int on_header(void *arg, const struct tab_cell *names, size_t n)
{
	struct collect *c = arg;

	put(c, "H:", 2);
	put_cells(c, names, n);
	return 0;
}

static int on_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct collect *c = arg;

	put_cells(c, cells, n);
	c->rows++;
	return c->stop_after > 0 && c->rows >= c->stop_after ? 1 : 0;
}

/* Read data as CSV; the header and rows as "H:a|b\n1|2\n", nulls as '~'.
 * Returns the rc; *out is malloc'd (or NULL). */
static int read_csv(const void *data, size_t len, const struct tab_opts *o, char **out,
                    struct tab_stats *st, char *err, size_t errlen)
{
	struct collect c = { 0 };
	struct tab_sink sink = { on_header, on_row, &c };
	char path[512];
	int rc;

	put(&c, "", 0);
	if (tt_write(path, sizeof path, ".csv", data, len) != 0)
		return -100;
	rc = tab_read(path, TAB_CSV, o, &sink, st, err, errlen);
	unlink(path);
	*out = c.out;
	return rc;
}

struct read_case {
	const char *name, *in, *want;
	char delim;            /* 0: detect */
	long skip, header;     /* header -1: detect */
};

static const struct read_case reads[] = {
	{ "quoted delimiter, newline, doubled quote",
	  "a,b\n\"x,y\",\"line1\nline2\"\n\"say \"\"hi\"\"\",\"\"\n",
	  "H:a|b\nx,y|line1\nline2\nsay \"hi\"|~\n", 0, 0, -1 },
	{ "CRLF line ends, CR inside a quoted field kept",
	  "a,b\r\n1,\"x\ry\"\r\n2,z\r\n", "H:a|b\n1|x\ry\n2|z\n", 0, 0, -1 },
	{ "a lone CR is data", "a,b\n1,x\ry\n", "H:a|b\n1|x\ry\n", 0, 0, -1 },
	{ "no newline at the end", "a,b\n1,2", "H:a|b\n1|2\n", 0, 0, -1 },
	{ "a CR at the very end ends the line", "a,b\n1,2\r", "H:a|b\n1|2\n", 0, 0, -1 },
	{ "a lone CR at the end is no row", "a,b\n1,2\n\r", "H:a|b\n1|2\n", 0, 0, -1 },
	{ "blank lines are skipped", "\n\na,b\n\n1,2\r\n\r\n3,4\n\n", "H:a|b\n1|2\n3|4\n", 0, 0, -1 },
	{ "a quoted empty field is a row", "a\nx\n\"\"\ny\n", "H:a\nx\n~\ny\n", 0, 0, -1 },
	{ "text after a closing quote is kept", "a,b\n\"x\"y,2\n", "H:a|b\nxy|2\n", 0, 0, -1 },
	{ "a quote inside an unquoted field is data", "a,b\n5\" pipe,\"q\"\n",
	  "H:a|b\n5\" pipe|q\n", 0, 0, -1 },
	{ "empty fields are null", "a,b,c\n,,\n1,,3\n", "H:a|b|c\n~|~|~\n1|~|3\n", 0, 0, -1 },
	{ "semicolon", "a;b;c\n1,5;2;x\n3,5;4;y\n", "H:a|b|c\n1,5|2|x\n3,5|4|y\n", 0, 0, -1 },
	{ "tab", "a\tb\n1 2\t3\n", "H:a|b\n1 2|3\n", 0, 0, -1 },
	{ "pipe", "a|b\n1|2\n", "H:a|b\n1|2\n", 0, 0, -1 },
	{ "a delimiter inside quotes does not count",
	  "a,b\n\"1;2;3\",x\n\"4;5;6\",y\n", "H:a|b\n1;2;3|x\n4;5;6|y\n", 0, 0, -1 },
	{ "no candidate: one column, comma", "word\nother\n", "H:word\nother\n", 0, 0, -1 },
	{ "explicit delimiter", "a;b,c\n1;2,3\n", "H:a;b|c\n1;2|3\n", ',', 0, -1 },
	/* header detection: the first record is the header when a value of
	 * it does not fit the type of its column below, or every column
	 * below is text (DuckDB's rule) */
	{ "numbers in the first row: no header", "1,2\n3,4\n", "H:column0|column1\n1|2\n3|4\n", 0, 0, -1 },
	{ "an empty name over numbers: header", "a,,c\n1,2,3\n", "H:a|column1|c\n1|2|3\n", 0, 0, -1 },
	{ "R's row names: an empty first name", "\"\",\"score\",\"note\"\n\"1\",,\"a\"\n\"2\",,\"b\"\n",
	  "H:column0|score|note\n1|~|a\n2|~|b\n", 0, 0, -1 },
	{ "a column empty in every row: header", "id,empty,v\n1,,2\n2,,3\n",
	  "H:id|empty|v\n1|~|2\n2|~|3\n", 0, 0, -1 },
	{ "quoted numbers over quoted numbers: a row", "\"1\",\"2\"\n\"3\",\"4\"\n",
	  "H:column0|column1\n1|2\n3|4\n", 0, 0, -1 },
	{ "quoted numbers over bare ones: names", "\"id\",\"2019\"\n1,5\n2,6\n",
	  "H:id|2019\n1|5\n2|6\n", 0, 0, -1 },
	{ "a ragged table keeps its first rows", "a,b,c\n1,2\n3,4\n5,6,7\n8,9,10\n11,12,13\n",
	  "H:a|b|c\n1|2\n3|4\n5|6|7\n8|9|10\n11|12|13\n", 0, 0, -1 },
	{ "number-like names over numbers", "year,2019,2020\n1,5,6\n", "H:year|2019|2020\n1|5|6\n", 0, 0, -1 },
	{ "a repeated name over text: header", "a,a\nx,y\n", "H:a|a_1\nx|y\n", 0, 0, -1 },
	{ "a date in the first row: no header", "2024-01-01,x\n2024-01-02,y\n",
	  "H:column0|column1\n2024-01-01|x\n2024-01-02|y\n", 0, 0, -1 },
	{ "one record with a boolean: no header", "true,x\n", "H:column0|column1\ntrue|x\n", 0, 0, -1 },
	{ "a marker in the first row fits", "NA,2\n1,3\n", "H:column0|column1\nNA|2\n1|3\n", 0, 0, -1 },
	{ "names are trimmed", "a, cpi ,\xc2\xa0scenario\n1, 2,x\n", "H:a|cpi|scenario\n1| 2|x\n", 0, 0, -1 },
	{ "eleven columns: two digits", "1,2,3,4,5,6,7,8,9,10,11\n",
	  "H:column00|column01|column02|column03|column04|column05|column06|column07|column08|column09|column10\n"
	  "1|2|3|4|5|6|7|8|9|10|11\n", 0, 0, -1 },
	{ "a header of two lines: the last names the columns",
	  "# ppt\n,Ohio,Utah\nTIMESTEP,MEAN(mm),MEAN(mm)\n2024-01-01T00:00:00Z,1.5,2\n2024-02-01T00:00:00Z,3,4.25\n",
	  "H:TIMESTEP|MEAN(mm)|MEAN(mm)_1\n2024-01-01T00:00:00Z|1.5|2\n2024-02-01T00:00:00Z|3|4.25\n", 0, 0, -1 },
	{ "a line of counts over the names (scikit-learn)", "3,2\nx,y\n1.5,2\n2.5,3\n3.5,4\n",
	  "H:x|y\n1.5|2\n2.5|3\n3.5|4\n", 0, 0, -1 },
	{ "names over a line of units keep their names", "v,p\n[m/s],[W]\n1.5,2\n2.5,3\n",
	  "H:v|p\n[m/s]|[W]\n1.5|2\n2.5|3\n", 0, 0, -1 },
	{ "a row that misfits one column is a row", "id,v\n1,2.5\n2,3\n3,4\n",
	  "H:id|v\n1|2.5\n2|3\n3|4\n", 0, 0, -1 },
	/* line ends, comments, preambles, runs of blanks */
	{ "CR-only line ends (old Mac)", "a,b\r1,2\r3,4\r", "H:a|b\n1|2\n3|4\n", 0, 0, -1 },
	{ "CR-only, no final line end", "a,b\r1,2\r3,4", "H:a|b\n1|2\n3|4\n", 0, 0, -1 },
	{ "'#' comments anywhere", "# made by x\n# on a day\na,b\n1,2\n# note\n3,4\n# end",
	  "H:a|b\n1|2\n3|4\n", 0, 0, -1 },
	{ "'#' at a line start is data when it splits like the rest", "c,n\n#f00,1\n#0f0,2\n",
	  "H:c|n\n#f00|1\n#0f0|2\n", 0, 0, -1 },
	{ "a preamble line before the table", "178,13,x\n1,2,3,4\n5,6,7,8\n9,10,11,12\n",
	  "H:column0|column1|column2|column3\n1|2|3|4\n5|6|7|8\n9|10|11|12\n", 0, 0, -1 },
	{ "space-separated numbers", "x y z\n1 2.5 a\n3  4.5 \"b c\"\n",
	  "H:x|y|z\n1|2.5|a\n3|4.5|b c\n", 0, 0, -1 },
	{ "fixed-width numbers, no header", "   1.5    2\r\n  10.0   30  \r\n\n  -2.25  4\r\n",
	  "H:column0|column1\n1.5|2\n10.0|30\n-2.25|4\n", 0, 0, -1 },
	{ "R's write.table: names one short of the row-named rows", "\"x\" \"name\"\n\"1\" 1.5 \"a b\"\n\"2\" 2 \"c\"\n",
	  "H:column0|x|name\n1|1.5|a b\n2|2|c\n", 0, 0, -1 },
	{ "quoted text split by blanks (FreeCAD's footprints_models.csv)",
	  "\"FOOTPRINT\" \"STEP FILE\"\n\"SOT23-R\" \"SOT23.igs\"\n\"SMC\"  \"SMC_DO_214AB.stp\"\n\n\n",
	  "H:FOOTPRINT|STEP FILE\nSOT23-R|SOT23.igs\nSMC|SMC_DO_214AB.stp\n", 0, 0, -1 },
	{ "quoted words with spaces stay one column", "\"city\"\n\"New York\"\n\"Los Angeles\"\n",
	  "H:city\nNew York\nLos Angeles\n", 0, 0, -1 },
	{ "words with spaces stay one column", "city\nNew York\nLos Angeles\n",
	  "H:city\nNew York\nLos Angeles\n", 0, 0, -1 },
	{ "text only: header", "name,city\nann,rome\n", "H:name|city\nann|rome\n", 0, 0, -1 },
	{ "header only", "name,city\n", "H:name|city\n", 0, 0, -1 },
	{ "header_row 0 forces it", "1,2\n3,4\n", "H:1|2\n3|4\n", 0, 0, 0 },
	/* skip_rows and header_row count every line, blank ones too */
	{ "skip_rows", "title\n\nid,v\n1,2\n", "H:id|v\n1|2\n", 0, 2, -1 },
	{ "header_row after skip_rows", "junk\nmore\nid,v\n1,2\n", "H:id|v\n1|2\n", 0, 1, 1 },
	{ "skipped rows may hold quoted newlines", "\"a\nb\"\nid\n1\n", "H:id\n1\n", 0, 1, -1 },
	{ "ragged rows", "a,b\n1\n1,2,3\n", "H:a|b\n1\n1|2|3\n", 0, 0, -1 },
	{ NULL, NULL, NULL, 0, 0, 0 },
};

static void test_reads(void)
{
	for (const struct read_case *t = reads; t->name != NULL; t++) {
		struct tab_opts o;
		struct tab_stats st;
		char err[256] = "", *out = NULL;
		int rc;

		tab_opts_init(&o);
		o.delimiter = t->delim;
		o.skip_rows = t->skip;
		o.header_row = t->header;
		rc = read_csv(t->in, strlen(t->in), &o, &out, &st, err, sizeof err);
		if (rc != 0 || out == NULL || strcmp(out, t->want) != 0)
			fprintf(stderr, "\n%s: rc %d (%s), got:\n%s\nwant:\n%s\n", t->name, rc, err,
			        out ? out : "(null)", t->want);
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT(out != NULL && strcmp(out, t->want) == 0);
		free(out);
	}
}

static void test_stats(void)
{
	struct tab_stats st;
	char err[256], *out = NULL;
	const char *in = "a;b\n1;2\n3\n4;5\n6;7;8\n";

	CU_ASSERT_EQUAL(read_csv(in, strlen(in), NULL, &out, &st, err, sizeof err), 0);
	free(out);
	CU_ASSERT_EQUAL(st.rows, 4);
	CU_ASSERT_EQUAL(st.ragged_rows, 2);
	CU_ASSERT_EQUAL(st.first_ragged_row, 2);
	CU_ASSERT_EQUAL(st.delimiter, ';');
	CU_ASSERT(st.has_header);
	CU_ASSERT_STRING_EQUAL(st.encoding, "utf-8");

	in = "1\t2\n";
	CU_ASSERT_EQUAL(read_csv(in, strlen(in), NULL, &out, &st, err, sizeof err), 0);
	free(out);
	CU_ASSERT_EQUAL(st.rows, 1);
	CU_ASSERT_EQUAL(st.ragged_rows, 0);
	CU_ASSERT_EQUAL(st.first_ragged_row, 0);
	CU_ASSERT_EQUAL(st.delimiter, '\t');
	CU_ASSERT(!st.has_header);
}

/* A callback's answers: 1 stops without error, -1 aborts. */
static int abort_row(void *arg, const struct tab_cell *cells, size_t n)
{
	(void)arg, (void)cells, (void)n;
	return -1;
}

static void test_callbacks(void)
{
	struct collect c = { .stop_after = 2 };
	struct tab_sink sink = { on_header, on_row, &c };
	struct tab_stats st;
	char path[512], err[256];
	const char *in = "a\n1\n2\n3\n4\n";

	CU_ASSERT_FATAL(tt_write(path, sizeof path, ".csv", in, strlen(in)) == 0);
	CU_ASSERT_EQUAL(tab_read(path, TAB_CSV, NULL, &sink, &st, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.rows, 2);
	CU_ASSERT_EQUAL(st.rows, 2);
	sink.row = abort_row;
	CU_ASSERT_EQUAL(tab_read(path, TAB_CSV, NULL, &sink, &st, err, sizeof err), TAB_ERR_STOP);
	free(c.out);
	unlink(path);
}

struct fail_case { const char *name, *in; int rc; const char *msg; };

static const struct fail_case fails[] = {
	{ "empty file", "", TAB_ERR_FORMAT, "file is empty" },
	{ "only blank lines", "\n\r\n\n", TAB_ERR_FORMAT, "only empty lines" },
	{ "an open quote at the end", "a,b\n1,\"abc\n2,3\n", TAB_ERR_FORMAT,
	  "line 2: a quoted field is not closed" },
	{ "an open quote in the header", "\"a,b\n", TAB_ERR_FORMAT, "not closed" },
	{ "skip_rows past the end", "a\n", TAB_ERR_OPTION, "only 1 rows to skip" },
	{ "invalid UTF-8 with C1 bytes", "a,b\nx,\xc3\x28\x85\n", TAB_ERR_FORMAT,
	  "invalid UTF-8 at byte 6" },
	{ "a NUL byte", "a,b\n1,\0002\n", TAB_ERR_FORMAT, "NUL byte at byte 6" },
	{ "UTF-8 cut at the end", "a\n\xe2\x82", TAB_ERR_FORMAT, "invalid UTF-8 at byte 2" },
	{ NULL, NULL, 0, NULL },
};

static void test_failures(void)
{
	for (const struct fail_case *t = fails; t->name != NULL; t++) {
		struct tab_opts o;
		struct infer_result r;
		char err[256] = "";
		size_t len = strlen(t->in);
		int rc;

		if (strcmp(t->name, "a NUL byte") == 0)
			len = 10;
		tab_opts_init(&o);
		if (strcmp(t->name, "skip_rows past the end") == 0)
			o.skip_rows = 5;
		rc = tt_infer(TAB_CSV, t->in, len, &o, &r, err, sizeof err);
		if (rc != t->rc || strstr(err, t->msg) == NULL)
			fprintf(stderr, "\n%s: rc %d err '%s', want %d '%s'\n", t->name, rc, err, t->rc,
			        t->msg);
		CU_ASSERT_EQUAL(rc, t->rc);
		CU_ASSERT(strstr(err, t->msg) != NULL);
		CU_ASSERT_PTR_NULL(r.cols);
	}
}

/* The limits: a record of TAB_ROW_MAX bytes, fields up to TAB_COLUMNS_MAX. */
static void test_limits(void)
{
	size_t n = TAB_ROW_MAX + 64;
	char *big = malloc(n);
	char err[256] = "";
	struct infer_result r;
	size_t o = 0;

	CU_ASSERT_FATAL(big != NULL);
	/* a quoted field just under the limit: fine */
	o = (size_t)sprintf(big, "a,b\n1,\"");
	memset(big + o, 'x', TAB_ROW_MAX - 16);
	o += TAB_ROW_MAX - 16;
	o += (size_t)sprintf(big + o, "\"\n2,y\n");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, big, o, NULL, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(r.row_count, 2);
	CU_ASSERT_EQUAL(r.cols[1].max_len, TAB_ROW_MAX - 16);
	infer_result_free(&r);

	/* over it: an error naming the line */
	o = (size_t)sprintf(big, "a,b\n1,\"");
	memset(big + o, 'x', TAB_ROW_MAX + 8);
	o += TAB_ROW_MAX + 8;
	o += (size_t)sprintf(big + o, "\"\n");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, big, o, NULL, &r, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "line 2: a record longer than") != NULL);

	/* the same past max_analyze_rows (the counting path) */
	{
		struct tab_opts opt;
		tab_opts_init(&opt);
		opt.max_analyze_rows = 1;
		o = (size_t)sprintf(big, "a,b\n0,0\n1,\"");
		memset(big + o, 'x', TAB_ROW_MAX + 8);
		o += TAB_ROW_MAX + 8;
		o += (size_t)sprintf(big + o, "\"\n");
		CU_ASSERT_EQUAL(tt_infer(TAB_CSV, big, o, &opt, &r, err, sizeof err), TAB_ERR_FORMAT);
		CU_ASSERT(strstr(err, "a record longer than") != NULL);
	}

	/* TAB_COLUMNS_MAX fields, then one more */
	o = 0;
	for (int i = 0; i < TAB_COLUMNS_MAX; i++)
		o += (size_t)sprintf(big + o, "%sc%d", i ? "," : "", i);
	big[o++] = '\n';
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, big, o, NULL, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(r.ncols, TAB_COLUMNS_MAX);
	infer_result_free(&r);
	o--;
	o += (size_t)sprintf(big + o, ",extra\n");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, big, o, NULL, &r, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "more than 16384 fields") != NULL);
	free(big);
}

/* One column, a million rows: exact count, flat memory. */
static void test_million_rows(void)
{
	size_t cap = 8 * 1000000 + 16, o = 0;
	char *data = malloc(cap);
	struct infer_result r;
	char err[256], buf[64];

	CU_ASSERT_FATAL(data != NULL);
	o += (size_t)sprintf(data, "n\n");
	for (int i = 0; i < 1000000; i++)
		o += (size_t)sprintf(data + o, "%d\n", i);
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, data, o, NULL, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "n:INTEGER");
	CU_ASSERT_EQUAL(r.row_count, 1000000);
	CU_ASSERT_EQUAL(r.analyzed_rows, 100000);
	infer_result_free(&r);
	free(data);
}

/* ---- encodings ----------------------------------------------------------- */

/* UTF-16 of an ASCII/Latin-1 string (code points < 256), with a BOM. */
static size_t utf16(const char *s, bool le, bool bom, unsigned char *out)
{
	size_t o = 0;

	if (bom) {
		out[o++] = le ? 0xFF : 0xFE;
		out[o++] = le ? 0xFE : 0xFF;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		out[o++] = le ? c : 0;
		out[o++] = le ? 0 : c;
	}
	return o;
}

static void test_encodings(void)
{
	/* "name,city\nJos\xe9,M\xfcnchen\n" in Latin-1 */
	const char *latin = "name,city\nJos\xe9,M\xfcnchen\n";
	const char *want = "H:name|city\nJos\xc3\xa9|M\xc3\xbcnchen\n";
	unsigned char u16[256];
	struct tab_opts o;
	struct tab_stats st;
	char err[256], *out = NULL;
	size_t n;

	/* Latin-1 detected */
	CU_ASSERT_EQUAL(read_csv(latin, strlen(latin), NULL, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_STRING_EQUAL(st.encoding, "latin-1");
	free(out);

	/* UTF-8 with and without a BOM */
	const char *u8 = "\xef\xbb\xbfname,city\nJos\xc3\xa9,M\xc3\xbcnchen\n";
	CU_ASSERT_EQUAL(read_csv(u8, strlen(u8), NULL, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_STRING_EQUAL(st.encoding, "utf-8");
	free(out);
	CU_ASSERT_EQUAL(read_csv(u8 + 3, strlen(u8) - 3, NULL, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	free(out);

	/* UTF-16LE and BE with a BOM (detected), and without (given) */
	n = utf16(latin, true, true, u16);
	CU_ASSERT_EQUAL(read_csv(u16, n, NULL, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_STRING_EQUAL(st.encoding, "utf-16le");
	free(out);
	n = utf16(latin, false, true, u16);
	CU_ASSERT_EQUAL(read_csv(u16, n, NULL, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_STRING_EQUAL(st.encoding, "utf-16be");
	free(out);
	tab_opts_init(&o);
	strcpy(o.encoding, "UTF-16");
	n = utf16(latin, true, false, u16);
	CU_ASSERT_EQUAL(read_csv(u16, n, &o, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_STRING_EQUAL(st.encoding, "utf-16le");
	free(out);
	n = utf16(latin, false, false, u16);
	CU_ASSERT_EQUAL(read_csv(u16, n, &o, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_STRING_EQUAL(st.encoding, "utf-16be");
	free(out);
	strcpy(o.encoding, "utf-16le");
	n = utf16(latin, true, true, u16);          /* its BOM is dropped */
	CU_ASSERT_EQUAL(read_csv(u16, n, &o, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	free(out);
	/* UTF-16 without a BOM, not given: the zero bytes are refused */
	n = utf16(latin, true, false, u16);
	CU_ASSERT_EQUAL(read_csv(u16, n, NULL, &out, &st, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "NUL byte at byte 1") != NULL);
	free(out);
	/* an odd byte count in UTF-16 */
	n = utf16(latin, true, true, u16);
	CU_ASSERT_EQUAL(read_csv(u16, n - 1, NULL, &out, &st, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "utf-16le text cut short") != NULL);
	free(out);

	/* UTF-8 forced on Latin-1 text */
	strcpy(o.encoding, "utf-8");
	CU_ASSERT_EQUAL(read_csv(latin, strlen(latin), &o, &out, &st, err, sizeof err),
	                TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "invalid UTF-8 at byte 13") != NULL);
	free(out);
	/* Latin-1 given on UTF-8 text: read as Latin-1, as asked */
	strcpy(o.encoding, "latin-1");
	CU_ASSERT_EQUAL(read_csv("a\n\xc3\xa9\n", 5, &o, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, "H:a\n\xc3\x83\xc2\xa9\n");
	free(out);
	/* windows-1252: 0x80 is the euro sign */
	strcpy(o.encoding, "windows-1252");
	CU_ASSERT_EQUAL(read_csv("p\n\x80" "5\n", 5, &o, &out, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(out, "H:p\n\xe2\x82\xac" "5\n");
	CU_ASSERT_STRING_EQUAL(st.encoding, "windows-1252");
	free(out);
	/* undetected windows-1252 (C1 bytes) is an error */
	CU_ASSERT_EQUAL(read_csv("p\n\x80" "5\n", 5, NULL, &out, &st, err, sizeof err),
	                TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "invalid UTF-8 at byte 2") != NULL);
	free(out);
	/* overlong and surrogate encodings are invalid UTF-8 */
	CU_ASSERT_EQUAL(tab_utf8_invalid_at((const unsigned char *)"a\xc0\xaf", 3), 1);
	CU_ASSERT_EQUAL(tab_utf8_invalid_at((const unsigned char *)"ab\xed\xa0\x80", 5), 2);
	CU_ASSERT_EQUAL(tab_utf8_invalid_at((const unsigned char *)"\xf4\x90\x80\x80", 4), 0);
	CU_ASSERT_EQUAL(tab_utf8_invalid_at((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
	CU_ASSERT_EQUAL(tab_utf8_invalid_at((const unsigned char *)"xy\xf0\x9f\x98", 5), 2);
}

/* Detection decides at the first non-ASCII byte, wherever it is: past the
 * first read, and with a UTF-8 sequence cut by the read. */
static void test_encoding_far(void)
{
	size_t pad = TAB_READ_CHUNK + 100, n;
	char *data = malloc(pad + 64);
	struct infer_result r;
	char err[256];

	CU_ASSERT_FATAL(data != NULL);
	n = (size_t)sprintf(data, "a\n");
	while (n < pad)
		n += (size_t)sprintf(data + n, "x\n");
	n += (size_t)sprintf(data + n, "caf\xe9\n");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, data, n, NULL, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(r.stats.encoding, "latin-1");
	infer_result_free(&r);

	/* a 3-byte UTF-8 sequence cut by the end of the first read */
	n = (size_t)sprintf(data, "a\n");
	while (n < TAB_READ_CHUNK - 1)
		data[n++] = 'x';
	memcpy(data + n - 1, "\xe2\x82\xac\n", 4);
	n += 3;
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, data, n, NULL, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(r.stats.encoding, "utf-8");
	CU_ASSERT_EQUAL(r.row_count, 1);
	infer_result_free(&r);

	/* Latin-1 decided in a read made after the buffer grew for a long
	 * record (reads never outgrow the decoder's own buffer) */
	{
		size_t big = 8 * TAB_READ_CHUNK, m = 0, ny = 0;
		char *d2 = malloc(big);

		CU_ASSERT_FATAL(d2 != NULL);
		m = (size_t)sprintf(d2, "a\n\"");
		memset(d2 + m, 'x', 3 * TAB_READ_CHUNK);
		m += 3 * TAB_READ_CHUNK;
		m += (size_t)sprintf(d2 + m, "\"\n");
		/* ASCII past what the record's last read brought, then the first
		 * Latin-1 byte, then more than one read's worth after it */
		while (m < 5 * TAB_READ_CHUNK) {
			m += (size_t)sprintf(d2 + m, "y\n");
			ny++;
		}
		m += (size_t)sprintf(d2 + m, "caf\xe9\n");
		while (m < 7 * TAB_READ_CHUNK) {
			m += (size_t)sprintf(d2 + m, "y\n");
			ny++;
		}
		{
			struct tab_opts o1;

			tab_opts_init(&o1);
			o1.max_analyze_rows = 1;   /* the rest read by the counting path */
			CU_ASSERT_EQUAL(tt_infer(TAB_CSV, d2, m, &o1, &r, err, sizeof err), 0);
		}
		CU_ASSERT_STRING_EQUAL(r.stats.encoding, "latin-1");
		CU_ASSERT_EQUAL(r.row_count, (long long)(2 + ny));
		infer_result_free(&r);
		free(d2);
	}

	/* Latin-1 bytes after UTF-8 was decided: invalid, with the offset */
	n = (size_t)sprintf(data, "a\n\xc3\xa9\n");
	while (n < pad)
		n += (size_t)sprintf(data + n, "x\n");
	size_t at = n;
	n += (size_t)sprintf(data + n, "caf\xe9\n");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, data, n, NULL, &r, err, sizeof err), TAB_ERR_FORMAT);
	{
		char want[64];
		snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", at + 3);
		CU_ASSERT(strstr(err, want) != NULL);
	}
	free(data);
}

/* ---- the counting path agrees with the full parse ------------------------ */

static uint64_t rng_state = 88172645463325252ULL;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* Random CSV: quoted fields with delimiters, newlines and doubled quotes,
 * blank lines, CRLF, stray quotes, ragged rows. */
static size_t random_csv(char *buf, size_t target)
{
	size_t o = (size_t)sprintf(buf, "a,b,c\n");

	while (o < target) {
		int fields = 1 + (int)rnd(4);
		if (rnd(20) == 0) {
			buf[o++] = '\n';
			continue;
		}
		for (int f = 0; f < fields; f++) {
			if (f)
				buf[o++] = ',';
			switch (rnd(6)) {
			case 0: {
				buf[o++] = '"';
				int len = (int)rnd(12);
				for (int i = 0; i < len; i++) {
					static const char pool[] = "ab,\n\r\" ";
					char ch = pool[rnd(sizeof pool - 1)];
					buf[o++] = ch;
					if (ch == '"')
						buf[o++] = '"';
				}
				buf[o++] = '"';
				break;
			}
			case 1:
				o += (size_t)sprintf(buf + o, "x\"y");
				break;
			case 2:
				break;
			default:
				o += (size_t)sprintf(buf + o, "%u", rnd(100000));
			}
		}
		if (rnd(3) == 0)
			buf[o++] = '\r';
		buf[o++] = '\n';
	}
	return o;
}

static void test_count_path(void)
{
	size_t cap = 3 * TAB_READ_CHUNK + 4096;
	char *data = malloc(cap);
	char err[256];

	CU_ASSERT_FATAL(data != NULL);
	for (int round = 0; round < 6; round++) {
		size_t n = random_csv(data, round < 3 ? 2000 + (size_t)round * 5000
		                                      : 3 * TAB_READ_CHUNK - (size_t)round * 7);
		struct tab_opts o;
		struct infer_result full, counted, one;

		tab_opts_init(&o);
		o.delimiter = ',';
		o.header_row = 0;
		o.max_analyze_rows = 1LL << 40;
		CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, data, n, &o, &full, err, sizeof err), 0);
		CU_ASSERT_EQUAL(full.analyzed_rows, full.row_count);
		o.max_analyze_rows = 7;
		CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, data, n, &o, &counted, err, sizeof err), 0);
		o.max_analyze_rows = 1;
		CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, data, n, &o, &one, err, sizeof err), 0);
		if (full.row_count != counted.row_count || full.row_count != one.row_count)
			fprintf(stderr, "\nround %d: full %lld, counted %lld, one %lld\n", round,
			        full.row_count, counted.row_count, one.row_count);
		CU_ASSERT_EQUAL(full.row_count, counted.row_count);
		CU_ASSERT_EQUAL(full.row_count, one.row_count);
		CU_ASSERT_EQUAL(counted.analyzed_rows, 7);
		infer_result_free(&full);
		infer_result_free(&counted);
		infer_result_free(&one);
	}
	/* an open quote found by the counting path */
	{
		const char *in = "a\n1\n2\n\"3\n4\n";
		struct tab_opts o;
		struct infer_result r;

		tab_opts_init(&o);
		o.max_analyze_rows = 1;
		CU_ASSERT_EQUAL(tt_infer(TAB_CSV, in, strlen(in), &o, &r, err, sizeof err),
		                TAB_ERR_FORMAT);
		CU_ASSERT(strstr(err, "line 4: a quoted field is not closed") != NULL);
	}
	free(data);
}

/* ---- fixtures made by a third-party writer (t/fixtures/storage/gen-csv) -- */

struct fixture_case {
	const char *file;
	const char *schema;
	long long rows;
	const char *encoding;
	char delimiter;
};

/* Every fixture holds the same table; see gen-csv. */
#define SAME "id:INTEGER|name:VARCHAR|city:VARCHAR|amount:DECIMAL(8,2)|" \
	"ratio:DOUBLE|active:BOOLEAN|born:DATE|updated:TIMESTAMP|big:BIGINT|" \
	"code:VARCHAR|note:VARCHAR?"

static const struct fixture_case fixtures[] = {
	{ "utf8-comma.csv", SAME, 6, "utf-8", ',' },
	{ "utf8-bom-semicolon.csv", SAME, 6, "utf-8", ';' },
	{ "utf16le-bom-tab.txt", SAME, 6, "utf-16le", '\t' },
	{ "latin1-pipe.txt", SAME, 6, "latin-1", '|' },
	{ "utf8-crlf-comma.csv", SAME, 6, "utf-8", ',' },
	{ "latin1-semicolon.csv", SAME, 6, "latin-1", ';' },
	{ NULL, NULL, 0, NULL, 0 },
};

static void test_fixtures(void)
{
	for (const struct fixture_case *t = fixtures; t->file != NULL; t++) {
		char path[1024], err[256] = "", buf[1024];
		struct infer_result r;
		enum tab_format f;
		int rc;

		tt_fixture(t->file, path, sizeof path);
		CU_ASSERT_EQUAL_FATAL(tab_format_from_name(path, &f), 0);
		rc = infer_file(path, f, NULL, &r, err, sizeof err);
		if (rc != 0)
			fprintf(stderr, "\n%s: %s\n", t->file, err);
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		tt_schema(&r, buf, sizeof buf);
		if (strcmp(buf, t->schema) != 0)
			fprintf(stderr, "\n%s: %s\n", t->file, buf);
		CU_ASSERT_STRING_EQUAL(buf, t->schema);
		CU_ASSERT_EQUAL(r.row_count, t->rows);
		CU_ASSERT_EQUAL(r.analyzed_rows, t->rows);
		CU_ASSERT_STRING_EQUAL(r.stats.encoding, t->encoding);
		CU_ASSERT_EQUAL(r.stats.delimiter, t->delimiter);
		CU_ASSERT(r.stats.has_header);
		CU_ASSERT_EQUAL(r.stats.ragged_rows, 0);
		infer_result_free(&r);
	}
}

/* The values themselves survive every encoding and quoting. */
static void test_fixture_values(void)
{
	const char *files[] = { "utf8-comma.csv", "utf8-bom-semicolon.csv", "utf16le-bom-tab.txt",
	                        "latin1-pipe.txt", "utf8-crlf-comma.csv", "latin1-semicolon.csv" };
	char *first = NULL;

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct collect c = { 0 };
		struct tab_sink sink = { on_header, on_row, &c };
		char path[1024], err[256];
		enum tab_format f;

		tt_fixture(files[i], path, sizeof path);
		CU_ASSERT_EQUAL_FATAL(tab_format_from_name(path, &f), 0);
		put(&c, "", 0);
		CU_ASSERT_EQUAL(tab_read(path, f, NULL, &sink, NULL, err, sizeof err), 0);
		CU_ASSERT(strstr(c.out, "Fran\xc3\xa7oise \"Fran\" M\xc3\xbcller") != NULL);
		CU_ASSERT(strstr(c.out, "line one\nline two") != NULL);
		if (first == NULL) {
			first = c.out;
		} else {
			if (strcmp(first, c.out) != 0)
				fprintf(stderr, "\n%s differs:\n%s\n---\n%s\n", files[i], c.out, first);
			CU_ASSERT_STRING_EQUAL(c.out, first);
			free(c.out);
		}
	}
	free(first);
}

int suite_tabular_csv(void)
{
	static const struct test_case tests[] = {
		{ "quoting, line ends, delimiters, header, skip rows", test_reads },
		{ "stats: rows, ragged rows, delimiter, header", test_stats },
		{ "callbacks stop and abort", test_callbacks },
		{ "malformed files: reasons", test_failures },
		{ "limits: record size, field count", test_limits },
		{ "one column, a million rows", test_million_rows },
		{ "encodings: BOMs, UTF-16, Latin-1, windows-1252, invalid", test_encodings },
		{ "encoding detection past the first read", test_encoding_far },
		{ "the counting path agrees with the full parse", test_count_path },
		{ "fixtures: schemas", test_fixtures },
		{ "fixtures: values", test_fixture_values },
		{ NULL, NULL },
	};
	return suite_add("tabular_csv", tests);
}
