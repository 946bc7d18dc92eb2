/* test_tabular_xlsx.c - the XLSX reader on workbooks written by ExcelJS and
 * SheetJS (t/fixtures/storage/binary), on damaged ones, and on small
 * workbooks built here to reach one rule at a time; Excel's number formats
 * and date serials. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zip.h>

#include "suites.h"
#include "binary_fixtures.h"
#include "tabular/formats.h"
#include "tabular/sheet.h"

static int read_x(const char *path, const struct tab_opts *o, struct got *g,
                  struct tab_stats *st, char *err, size_t errlen)
{
	struct tab_sink sink;
	int stop = (int)g->stop_after, abort_at = g->abort_at;

	sink = got_sink(g);
	g->stop_after = (size_t)stop;
	g->abort_at = abort_at;
	return xlsx_read(path, o, &sink, st, err, errlen);
}

static void expect_rows(const struct got *g, const char *const *want, size_t n)
{
	CU_ASSERT_EQUAL(g->nrows, n);
	for (size_t i = 0; i < n && i < g->nrows && i < GOT_ROWS; i++) {
		if (strcmp(g->rows[i], want[i]) != 0)
			fprintf(stderr, "\nrow %zu: got  %s\n        want %s\n", i + 1, g->rows[i],
			        want[i]);
		CU_ASSERT_STRING_EQUAL(g->rows[i], want[i]);
	}
}

/* ExcelJS: shared strings, numbers, booleans, dates by custom and built-in
 * formats, a number format that is not a date, empty cells, a blank row. */
static void test_types(void)
{
	static const char *const want[] = {
		"N:1|T:alpha|N:12.5|N:5000000000|N:0.5|B:true|D:2024-01-15|S:2024-01-15 10:30:00|D:1999-12-31|T:x",
		"N:2|T:beta|N:3.25|N:7|N:1e-10|B:false|D:2000-02-29|S:2000-02-29 23:59:59|D:1900-03-01|-",
		"N:3|-|N:-7.125|N:-12|N:3.14159|B:true|D:1970-01-01|S:1970-01-01 00:00:01|D:2024-12-31|-",
		"N:4|T:delta, \"quoted\"|N:100|N:0|N:-2.5|B:false|D:2038-01-19|S:2038-01-19 03:14:07|D:2001-09-09|T:y",
		"N:5|T:\xc3\xa9psilon \xe2\x98\x83|N:0.01|N:1|N:6.02e+23|B:true|D:2024-02-29|S:2024-02-29 12:00:00|D:2020-02-02|-",
		/* row 7 is blank: skipped; row 8 has two cells, padded with NULLs */
		"N:6|T:after a blank row|-|-|-|-|-|-|-|-",
	};
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	CU_ASSERT_EQUAL(g.headers, 1);
	CU_ASSERT_STRING_EQUAL(g.header, "id|name|amount|big|ratio|flag|day|at|us_day|sparse");
	expect_rows(&g, want, 6);
	CU_ASSERT_EQUAL(st.rows, 6);
	CU_ASSERT_EQUAL(st.ragged_rows, 0);
	CU_ASSERT(st.has_header);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Data");
}

static void test_sheets(void)
{
	static const char *const second[] = { "T:A-1|N:10", "T:B-2|N:20", "T:C-3|N:30" };
	struct tab_opts o = got_opts("Second");
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "code|qty");
	expect_rows(&g, second, 3);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Second");

	/* Excel's sheet names ignore case; the name read is the sheet's own */
	o = got_opts("SECOND");
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	expect_rows(&g, second, 3);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Second");

	/* an empty sheet: a header of no columns, no rows */
	o = got_opts("Empty");
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_EQUAL(g.headers, 1);
	CU_ASSERT_STRING_EQUAL(g.header, "");
	CU_ASSERT_EQUAL(g.nrows, 0);
	CU_ASSERT_EQUAL(st.rows, 0);
	CU_ASSERT_FALSE(st.has_header);

	o = got_opts("nope");
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err),
	                TAB_ERR_OPTION);
	CU_ASSERT_STRING_EQUAL(err, "no sheet named \"nope\"; sheets: Data, Second, With title, Empty");
	CU_ASSERT_EQUAL(g.headers, 0);
}

/* A title on row 1, a blank row 2, the header on row 3. */
static void test_skip_rows(void)
{
	static const char *const data[] = { "T:north|N:1.5", "T:south|N:2.25" };
	struct tab_opts o = got_opts("With title");
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	/* as it is: the title over the table is skipped, the header found */
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "region|total");
	CU_ASSERT_EQUAL(g.nrows, 2);
	CU_ASSERT_STRING_EQUAL(g.rows[0], data[0]);
	CU_ASSERT_EQUAL(st.ragged_rows, 0);
	CU_ASSERT_EQUAL(st.preamble_rows, 1);
	CU_ASSERT_EQUAL(st.header_line, 3);

	/* header_row 0 overrides the rule: the title is the header, the wider
	 * rows under it ragged */
	o.header_row = 0;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "Quarterly report");
	CU_ASSERT_EQUAL(g.nrows, 3);
	CU_ASSERT_STRING_EQUAL(g.rows[0], "T:region|T:total");
	CU_ASSERT_EQUAL(st.ragged_rows, 3);
	CU_ASSERT_EQUAL(st.first_ragged_row, 1);
	CU_ASSERT_EQUAL(st.preamble_rows, 0);
	CU_ASSERT_EQUAL(st.header_line, 1);
	o.header_row = -1;

	/* skip_rows counts the sheet's rows, blank or not */
	o.skip_rows = 2;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "region|total");
	expect_rows(&g, data, 2);
	CU_ASSERT_EQUAL(st.ragged_rows, 0);

	/* header_row counts after skip_rows */
	o.skip_rows = 1;
	o.header_row = 1;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "region|total");
	expect_rows(&g, data, 2);

	/* skipping one row: the blank row 2 is not a header, row 3 is */
	o.skip_rows = 1;
	o.header_row = 0;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "region|total");
	expect_rows(&g, data, 2);

	/* everything skipped: a header of no columns; past the end: refused */
	o.skip_rows = 5;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_EQUAL(g.headers, 1);
	CU_ASSERT_STRING_EQUAL(g.header, "");
	CU_ASSERT_EQUAL(g.nrows, 0);
	o.skip_rows = 6;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err),
	                TAB_ERR_OPTION);
	CU_ASSERT_STRING_EQUAL(err, "the sheet has only 5 rows to skip (skip_rows 6)");
	o.skip_rows = 2;
	o.header_row = 4;
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err),
	                TAB_ERR_OPTION);
	CU_ASSERT_STRING_EQUAL(err, "the sheet has only 5 rows to skip (skip_rows 2, header_row 4)");
	CU_ASSERT_EQUAL(g.headers, 0);
}

/* ExcelJS's streaming writer: inline rich strings of several runs,
 * formula-string cells, error cells, the built-in date format 14. */
static void test_inline(void)
{
	static const char *const want[] = {
		"T:one|D:2024-07-04|N:1|-",
		"T:two|D:2024-07-05|N:2|-",
		"T:three & <four>|-|N:3|-",
	};
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(FIXTURE("inline.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "label|when|n|oops");
	expect_rows(&g, want, 3);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Only");
}

/* The 1904 date system: serial 0 is 1904-01-01. */
static void test_date1904(void)
{
	static const char *const want[] = {
		"T:epoch|S:1904-01-01 00:00:00",
		"T:later|S:2024-07-04 06:00:00",
		"T:none|-",
	};
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(FIXTURE("date1904.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "label|when");
	expect_rows(&g, want, 3);
}

/* SheetJS: ISO dates as t="d" (shown by a date format), booleans, errors,
 * a formula with a string result; the empty header cell of an all-error
 * column is still a column. */
static void test_sheetjs(void)
{
	static const char *const want[] = {
		"T:a|B:true|-|D:2023-05-06|N:1.5",
		"T:b|B:false|-|D:2023-05-07|N:2",
	};
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(FIXTURE("sheetjs-dates.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "txt|ok|err|when|num");
	expect_rows(&g, want, 2);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "S");
}

static void test_sink_stops(void)
{
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { .stop_after = 2 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_EQUAL(g.nrows, 2);
	g = (struct got){ .abort_at = 3 };
	CU_ASSERT_EQUAL(read_x(FIXTURE("types.xlsx"), &o, &g, &st, err, sizeof err), TAB_ERR_STOP);
	CU_ASSERT_EQUAL(g.nrows, 3);
}

static void expect_fail(const char *path, int want_rc, const char *want_in_err)
{
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_x(path, &o, &g, &st, err, sizeof err), want_rc);
	if (strstr(err, want_in_err) == NULL)
		fprintf(stderr, "\n%s: error \"%s\" lacks \"%s\"\n", path, err, want_in_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want_in_err));
	CU_ASSERT_EQUAL(g.nrows, 0);
}

static void test_malformed_files(void)
{
	expect_fail(FIXTURE("truncated.xlsx"), TAB_ERR_FORMAT, "truncated or damaged");
	expect_fail(FIXTURE("empty.xlsx"), TAB_ERR_FORMAT, "empty file");
	expect_fail(FIXTURE("types.parquet"), TAB_ERR_FORMAT, "not a valid XLSX file");
	expect_fail(FIXTURE("types.xls"), TAB_ERR_FORMAT, "OLE2 compound file");
	expect_fail(FIXTURE("no-such-file.xlsx"), TAB_ERR_IO, "cannot open");
}

/* ---- workbooks built here, one rule each ------------------------------ */

struct part { const char *name, *text; };

static const char WB_RELS[] =
	"<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">"
	"<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/>"
	"</Relationships>";
static const char WORKBOOK[] =
	"<workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" "
	"xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\">"
	"<sheets><sheet name=\"One\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>";
static const char WORKBOOK_RELS[] =
	"<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">"
	"<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"/xl/worksheets/../worksheets/s.xml\"/>"
	"<Relationship Id=\"rId2\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings\" Target=\"sharedStrings.xml\"/>"
	"<Relationship Id=\"rId3\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles\" Target=\"styles.xml\"/>"
	"</Relationships>";
static const char SST[] =
	"<sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">"
	"<si><t>a</t></si>"
	"<si><r><t>b</t></r><r><t xml:space=\"preserve\"> c</t></r><rPh><t>PHONETIC</t></rPh></si>"
	"<si><t>line_x000D__x000A_two_x005F_x0041_</t></si>"
	"<si><t></t></si>"
	"<si><t>out</t><si><t>er</t></si></si>"      /* nested: one string */
	"</sst>";
static const char STYLES[] =
	"<styleSheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">"
	"<numFmts><numFmt numFmtId=\"14\" formatCode=\"0.00\"/>"
	"<numFmt numFmtId=\"200\" formatCode=\"yyyy\"/><numFmt numFmtId=\"200\" formatCode=\"&quot;day&quot; 0\"/>"
	"<numFmt numFmtId=\"201\" formatCode=\"[h]:mm:ss\"/></numFmts>"
	"<cellStyleXfs><xf numFmtId=\"22\"/></cellStyleXfs>"
	"<cellXfs><xf numFmtId=\"0\"/><xf numFmtId=\"14\"/><xf numFmtId=\"200\"/>"
	"<xf numFmtId=\"201\"/><xf numFmtId=\"20\"/><xf numFmtId=\"22\"/></cellXfs></styleSheet>";

#define SHEET(rows) \
	"<worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><sheetData>" \
	rows "</sheetData></worksheet>"

/* Write a zip of parts (NULL-terminated) to a temporary file; its path in
 * path (a "/tmp/...XXXXXX" buffer). */
static int make_zip(char *path, const struct part *parts)
{
	int fd = mkstemp(path), ze;
	zip_t *z;

	if (fd < 0)
		return -1;
	close(fd);
	z = zip_open(path, ZIP_TRUNCATE, &ze);
	if (z == NULL)
		return -1;
	for (; parts->name != NULL; parts++) {
		zip_source_t *src = zip_source_buffer(z, parts->text, strlen(parts->text), 0);
		if (src == NULL || zip_file_add(z, parts->name, src, ZIP_FL_ENC_UTF_8) < 0) {
			zip_source_free(src);
			zip_discard(z);
			return -1;
		}
	}
	return zip_close(z);
}

static int read_parts(const char *sheet_xml, const char *styles, struct got *g,
                      struct tab_stats *st, char *err, size_t errlen)
{
	char path[] = "/tmp/sluice-xlsx-XXXXXX";
	struct part parts[] = {
		{ "_rels/.rels", WB_RELS },
		{ "xl/workbook.xml", WORKBOOK },
		{ "xl/_rels/workbook.xml.rels", WORKBOOK_RELS },
		{ "xl/sharedStrings.xml", SST },
		{ "xl/worksheets/s.xml", sheet_xml },
		{ styles ? "xl/styles.xml" : NULL, styles },
		{ NULL, NULL },
	};
	struct tab_opts o = got_opts(NULL);
	int rc;

	CU_ASSERT_FATAL(make_zip(path, parts) == 0);
	rc = read_x(path, &o, g, st, err, errlen);
	unlink(path);
	return rc;
}

/* Cell references place cells; a missing r follows the previous cell;
 * rows without r follow the previous row. */
static void test_sparse(void)
{
	static const char *const want[] = {
		"-|-|T:a|-",
		"N:1|-|-|N:4",
		"N:5|N:6|-|-",
		"-|-|-|-|N:9",
	};
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";
	const char *xml = SHEET(
		"<row r=\"2\"><c r=\"A2\" t=\"s\"><v>0</v></c><c t=\"s\"><v>1</v></c><c r=\"D2\"><v>x</v></c></row>"
		"<row r=\"3\"><c r=\"C3\" t=\"s\"><v>0</v></c></row>"
		"<row r=\"5\"><c r=\"A5\"><v>1</v></c><c r=\"D5\"><v>4</v></c></row>"
		"<row><c><v>5</v></c><c><v>6</v></c></row>"
		"<row r=\"9\"><c r=\"E9\"><v>9</v></c></row>");

	CU_ASSERT_EQUAL(read_parts(xml, NULL, &g, &st, err, sizeof err), 0);
	/* the header row: a, "b c" (runs joined, the phonetic run left out), x */
	CU_ASSERT_STRING_EQUAL(g.header, "a|b c||x");     /* tab_read names the empty one */
	expect_rows(&g, want, 4);
	CU_ASSERT_EQUAL(st.ragged_rows, 1);
	CU_ASSERT_EQUAL(st.first_ragged_row, 4);
}

/* _xHHHH_ escapes, empty strings as NULL, booleans, styles: a custom format
 * replacing built-in 14 is not a date, quoted "day" is no date token, an
 * elapsed format, built-in 20 (h:mm) and 22 (m/d/yyyy h:mm). */
static void test_values(void)
{
	static const char *const want[] = {
		"T:line\r\ntwo_x0041_|-|B:true|B:false|T:maybe|T:outer",
		"N:45306|N:45306|T:36:00:00|T:10:30:00|S:2024-01-15 10:30:00",
		"N:-1|T:NaN|N:1e3|S:1900-01-01 00:00:00|S:9999-12-31 00:00:00",
		"N:2958466|-|-|-|-",
	};
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";
	const char *xml = SHEET(
		"<row r=\"1\"><c r=\"A1\" t=\"str\"><v>h1</v></c><c r=\"B1\" t=\"str\"><v>h2</v></c>"
		"<c r=\"C1\" t=\"str\"><v>h3</v></c><c r=\"D1\" t=\"str\"><v>h4</v></c><c r=\"E1\" t=\"str\"><v>h5</v></c></row>"
		"<row r=\"2\"><c r=\"A2\" t=\"s\"><v>2</v></c><c r=\"B2\" t=\"s\"><v>3</v></c>"
		"<c r=\"C2\" t=\"b\"><v>1</v></c><c r=\"D2\" t=\"b\"><v>0</v></c><c r=\"E2\" t=\"b\"><v>maybe</v></c>"
		"<c r=\"F2\" t=\"s\"><v>4</v></c></row>"
		"<row r=\"3\"><c r=\"A3\" s=\"1\"><v>45306</v></c><c r=\"B3\" s=\"2\"><v>45306</v></c>"
		"<c r=\"C3\" s=\"3\"><v>1.5</v></c><c r=\"D3\" s=\"4\"><v>45306.4375</v></c><c r=\"E3\" s=\"5\"><v>45306.4375</v></c></row>"
		"<row r=\"4\"><c r=\"A4\" s=\"5\"><v>-1</v></c><c r=\"B4\" s=\"5\"><v>NaN</v></c><c r=\"C4\" s=\"99\"><v>1e3</v></c>"
		"<c r=\"D4\" s=\"5\"><v>1</v></c><c r=\"E4\" s=\"5\"><v>2958465</v></c></row>"
		"<row r=\"5\"><c r=\"A5\" s=\"5\"><v>2958466</v></c><c r=\"B5\" s=\"5\"/><c r=\"C5\" t=\"e\"><v>#N/A</v></c></row>");

	CU_ASSERT_EQUAL(read_parts(xml, STYLES, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	CU_ASSERT_STRING_EQUAL(g.header, "h1|h2|h3|h4|h5");
	expect_rows(&g, want, 4);
}

static void expect_parts_fail(const char *xml, const char *want_in_err)
{
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_parts(xml, NULL, &g, &st, err, sizeof err), TAB_ERR_FORMAT);
	if (strstr(err, want_in_err) == NULL)
		fprintf(stderr, "\nerror \"%s\" lacks \"%s\"\n", err, want_in_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want_in_err));
}

/* The first sheet is a chart sheet: the first worksheet is read; naming the
 * chart sheet is an error. */
static void test_chartsheet_first(void)
{
	static const char wb[] =
		"<workbook xmlns:r=\"r\"><sheets><sheet name=\"Chart\" r:id=\"rId9\"/>"
		"<sheet name=\"One\" r:id=\"rId1\"/></sheets></workbook>";
	static const char rels[] =
		"<Relationships>"
		"<Relationship Id=\"rId9\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/chartsheet\" Target=\"chartsheets/c.xml\"/>"
		"<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/s.xml\"/>"
		"</Relationships>";
	char path[] = "/tmp/sluice-xlsx-XXXXXX", err[256] = "";
	struct part parts[] = {
		{ "_rels/.rels", WB_RELS }, { "xl/workbook.xml", wb },
		{ "xl/_rels/workbook.xml.rels", rels },
		{ "xl/chartsheets/c.xml", "<chartsheet/>" },
		{ "xl/worksheets/s.xml", SHEET("<row><c t=\"str\"><v>h</v></c></row><row><c><v>1</v></c></row>") },
		{ NULL, NULL },
	};
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };

	CU_ASSERT_FATAL(make_zip(path, parts) == 0);
	CU_ASSERT_EQUAL(read_x(path, &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "One");
	CU_ASSERT_STRING_EQUAL(g.header, "h");
	CU_ASSERT_EQUAL(g.nrows, 1);
	o = got_opts("chart");
	CU_ASSERT_EQUAL(read_x(path, &o, &g, &st, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT_STRING_EQUAL(err, "sheet \"Chart\" is a chartsheet, not a worksheet");
	unlink(path);
}

static void test_malformed_parts(void)
{
	expect_parts_fail(SHEET("<row><c t=\"s\"><v>5</v></c></row>"),
	                  "shared string index \"5\" out of range (5 strings)");
	expect_parts_fail(SHEET("<row><c t=\"s\"><v>-1</v></c></row>"), "out of range");
	expect_parts_fail(SHEET("<row><c r=\"XFE1\"><v>1</v></c></row>"), "bad cell reference");
	expect_parts_fail(SHEET("<row><c r=\"A0\"><v>1</v></c></row>"), "bad cell reference");
	expect_parts_fail(SHEET("<row><c r=\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1\"><v>1</v></c></row>"),
	                  "bad cell reference");
	expect_parts_fail(SHEET("<row><c r=\"A99999999999999999999999999\"><v>1</v></c></row>"),
	                  "bad cell reference");
	expect_parts_fail(SHEET("<row r=\"1048577\"><c><v>1</v></c></row>"), "bad row number");
	expect_parts_fail(SHEET("<row><c t=\"zz\"><v>1</v></c></row>"), "unknown type");
	expect_parts_fail(SHEET("<row><c><v>1</v></c>"), "XML error at line 1");
	expect_parts_fail("<!DOCTYPE x [<!ENTITY a \"aaaa\">]><worksheet/>", "DOCTYPE is not allowed");
}

/* A part that inflates past its cap is refused before it is read: here the
 * workbook, whose cap is 64 MiB, as 65 MiB of blanks (64 KiB compressed). */
static void test_zip_bomb(void)
{
	size_t n = 65u * 1024 * 1024;
	char *big = malloc(n + 1), path[] = "/tmp/sluice-xlsx-XXXXXX", err[256] = "";
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };

	CU_ASSERT_FATAL(big != NULL);
	memset(big, ' ', n);
	memcpy(big, "<workbook>", 10);
	big[n] = '\0';
	struct part parts[] = {
		{ "_rels/.rels", WB_RELS }, { "xl/workbook.xml", big }, { NULL, NULL },
	};
	CU_ASSERT_FATAL(make_zip(path, parts) == 0);
	free(big);
	CU_ASSERT_EQUAL(read_x(path, &o, &g, &st, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "xl/workbook.xml inflates to 68157440 bytes, over the limit"));
	unlink(path);
}

/* The shared strings table is kept in memory: past 128 MiB of text it is
 * refused with a reason (here one string of 129 MiB, 130 KiB compressed). */
static void test_sst_cap(void)
{
	size_t n = 129u * 1024 * 1024;
	const char head[] = "<sst><si><t>", tail[] = "</t></si></sst>";
	char *big = malloc(sizeof head + n + sizeof tail), path[] = "/tmp/sluice-xlsx-XXXXXX";
	char err[256] = "";
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };

	CU_ASSERT_FATAL(big != NULL);
	memcpy(big, head, sizeof head - 1);
	memset(big + sizeof head - 1, 'a', n);
	memcpy(big + sizeof head - 1 + n, tail, sizeof tail);
	struct part parts[] = {
		{ "_rels/.rels", WB_RELS }, { "xl/workbook.xml", WORKBOOK },
		{ "xl/_rels/workbook.xml.rels", WORKBOOK_RELS }, { "xl/sharedStrings.xml", big },
		{ "xl/worksheets/s.xml", SHEET("<row><c t=\"s\"><v>0</v></c></row>") },
		{ NULL, NULL },
	};
	CU_ASSERT_FATAL(make_zip(path, parts) == 0);
	free(big);
	CU_ASSERT_EQUAL(read_x(path, &o, &g, &st, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT_STRING_EQUAL(err, "the shared strings table holds more than 128 MiB of text");
	CU_ASSERT_EQUAL(g.headers, 0);
	unlink(path);
}

/* ---- number formats and serials ------------------------------------- */

static void test_format_kinds(void)
{
	static const struct { const char *code; enum sheet_datefmt want; } cases[] = {
		{ "yyyy-mm-dd", SHEET_FMT_DATE },
		{ "d-mmm-yy", SHEET_FMT_DATE },
		{ "mmm-yy", SHEET_FMT_DATE },           /* m alone is a month */
		{ "[$-409]mmmm d, yyyy;@", SHEET_FMT_DATE },
		{ "yyyy-mm-dd hh:mm:ss", SHEET_FMT_DATETIME },
		{ "m/d/yy h:mm AM/PM", SHEET_FMT_DATETIME },
		{ "h:mm AM/PM", SHEET_FMT_TIME },       /* the M of AM/PM is no month */
		{ "mm:ss.0", SHEET_FMT_TIME },          /* m with s is minutes */
		{ "[h]:mm:ss", SHEET_FMT_ELAPSED },
		{ "[mm]:ss", SHEET_FMT_ELAPSED },
		{ "General", SHEET_FMT_NONE },
		{ "#,##0.00", SHEET_FMT_NONE },
		{ "0.00E+00", SHEET_FMT_NONE },
		{ "[Red]0.00;[Blue]-0.00", SHEET_FMT_NONE },
		{ "\"days\" 0", SHEET_FMT_NONE },       /* quoted text */
		{ "0\\d", SHEET_FMT_NONE },             /* an escaped character */
		{ "_(* #,##0_);_(* (#,##0);_(* \"-\"_);_(@_)", SHEET_FMT_NONE },
		{ "0;\"yyyy\"", SHEET_FMT_NONE },       /* only the first section counts */
		{ "@", SHEET_FMT_NONE },
		{ "", SHEET_FMT_NONE },
		{ "\"unterminated", SHEET_FMT_NONE },
		{ "[unterminated", SHEET_FMT_NONE },
		{ NULL, SHEET_FMT_NONE },
	};
	for (size_t i = 0; cases[i].code != NULL; i++) {
		if (sheet_format_kind(cases[i].code) != cases[i].want)
			fprintf(stderr, "\nformat \"%s\": got %d\n", cases[i].code,
			        (int)sheet_format_kind(cases[i].code));
		CU_ASSERT_EQUAL(sheet_format_kind(cases[i].code), cases[i].want);
	}
	for (long id = 0; id < 200; id++) {
		enum sheet_datefmt want = SHEET_FMT_NONE;
		if (id >= 14 && id <= 17)
			want = SHEET_FMT_DATE;
		else if (id == 22)
			want = SHEET_FMT_DATETIME;
		else if ((id >= 18 && id <= 21) || id == 45 || id == 47)
			want = SHEET_FMT_TIME;
		else if (id == 46)
			want = SHEET_FMT_ELAPSED;
		CU_ASSERT_EQUAL(sheet_builtin_kind(id), want);
	}
}

static void test_serials(void)
{
	static const struct {
		double serial;
		bool d1904;
		enum sheet_datefmt kind;
		int want_kind;
		const char *want;
	} cases[] = {
		{ 1, false, SHEET_FMT_DATE, TAB_DATE, "1900-01-01" },
		{ 0, false, SHEET_FMT_DATE, TAB_DATE, "1899-12-31" },      /* "1900-01-00" */
		{ 59, false, SHEET_FMT_DATE, TAB_DATE, "1900-02-28" },
		{ 60, false, SHEET_FMT_DATE, TAB_DATE, "1900-02-28" },     /* the phantom 29th */
		{ 61, false, SHEET_FMT_DATE, TAB_DATE, "1900-03-01" },
		{ 25569, false, SHEET_FMT_DATE, TAB_DATE, "1970-01-01" },
		{ 45306.99, false, SHEET_FMT_DATE, TAB_DATE, "2024-01-15" },
		{ 2958465, false, SHEET_FMT_DATE, TAB_DATE, "9999-12-31" },
		{ 2958466, false, SHEET_FMT_DATE, -1, NULL },
		{ -1, false, SHEET_FMT_DATE, -1, NULL },
		{ 0, true, SHEET_FMT_DATE, TAB_DATE, "1904-01-01" },
		{ 60, true, SHEET_FMT_DATE, TAB_DATE, "1904-03-01" },      /* no bug in 1904 */
		{ 44015.25, true, SHEET_FMT_DATETIME, TAB_DATETIME, "2024-07-04 06:00:00" },
		{ 45306.4375, false, SHEET_FMT_DATETIME, TAB_DATETIME, "2024-01-15 10:30:00" },
		{ 36585.99998842592, false, SHEET_FMT_DATETIME, TAB_DATETIME, "2000-02-29 23:59:59" },
		{ 1.5 / 86400000, false, SHEET_FMT_DATETIME, TAB_DATETIME, "1899-12-31 00:00:00.002" },
		{ 0.99999999999, false, SHEET_FMT_DATETIME, TAB_DATETIME, "1900-01-01 00:00:00" },
		{ 0.5, false, SHEET_FMT_TIME, TAB_TEXT, "12:00:00" },
		{ 45306.75, false, SHEET_FMT_TIME, TAB_TEXT, "18:00:00" },
		{ 1.5, false, SHEET_FMT_ELAPSED, TAB_TEXT, "36:00:00" },
		{ 0.25 + 0.5 / 86400, false, SHEET_FMT_TIME, TAB_TEXT, "6:00:00.500" },
		{ -1, false, SHEET_FMT_NONE, 0, NULL },
	};
	char buf[64];

	for (size_t i = 0; cases[i].kind != SHEET_FMT_NONE; i++) {
		buf[0] = '\0';
		int k = sheet_serial_text(cases[i].serial, cases[i].d1904, cases[i].kind, buf,
		                          sizeof buf);
		CU_ASSERT_EQUAL(k, cases[i].want_kind);
		if (cases[i].want != NULL) {
			if (strcmp(buf, cases[i].want) != 0)
				fprintf(stderr, "\nserial %.17g: got \"%s\"\n", cases[i].serial, buf);
			CU_ASSERT_STRING_EQUAL(buf, cases[i].want);
		}
	}
	CU_ASSERT_EQUAL(sheet_serial_text(NAN, false, SHEET_FMT_DATE, buf, sizeof buf), -1);
}

/* ---- the schema inferred from each fixture --------------------------- */

#define NW(a) (sizeof(a) / sizeof((a)[0]))

static void test_infer(void)
{
	static const struct want_col data[] = {
		{ "id", INFER_INTEGER, 0, 0, false },
		{ "name", INFER_VARCHAR, 0, 0, true },
		{ "amount", INFER_DECIMAL, 6, 3, true },      /* 100 and -7.125 */
		{ "big", INFER_BIGINT, 0, 0, true },
		{ "ratio", INFER_DOUBLE, 0, 0, true },        /* 1e-10 */
		{ "flag", INFER_BOOLEAN, 0, 0, true },
		{ "day", INFER_DATE, 0, 0, true },
		{ "at", INFER_TIMESTAMP, 0, 0, true },
		{ "us_day", INFER_DATE, 0, 0, true },         /* built-in format 14 */
		{ "sparse", INFER_VARCHAR, 0, 0, true },
	};
	static const struct want_col second[] = {
		{ "code", INFER_VARCHAR, 0, 0, false },
		{ "qty", INFER_INTEGER, 0, 0, false },
	};
	static const struct want_col titled[] = {
		{ "region", INFER_VARCHAR, 0, 0, false },
		{ "total", INFER_DECIMAL, 3, 2, false },
	};
	static const struct want_col inl[] = {
		{ "label", INFER_VARCHAR, 0, 0, false },
		{ "when", INFER_DATE, 0, 0, true },
		{ "n", INFER_INTEGER, 0, 0, false },
		{ "oops", INFER_VARCHAR, 0, 0, true },        /* only error cells */
	};
	static const struct want_col d1904[] = {
		{ "label", INFER_VARCHAR, 0, 0, false },
		{ "when", INFER_TIMESTAMP, 0, 0, true },
	};
	static const struct want_col sjs[] = {
		{ "txt", INFER_VARCHAR, 0, 0, false },
		{ "ok", INFER_BOOLEAN, 0, 0, false },
		{ "err", INFER_VARCHAR, 0, 0, true },
		{ "when", INFER_DATE, 0, 0, false },
		{ "num", INFER_DECIMAL, 2, 1, false },
	};
	struct tab_opts o;
	struct infer_result r;
	char err[256] = "";

	expect_schema(FIXTURE("types.xlsx"), TAB_XLSX, NULL, data, NW(data), 6);
	expect_schema(FIXTURE("types.xlsx"), TAB_XLSX, "Second", second, NW(second), 3);
	expect_schema(FIXTURE("inline.xlsx"), TAB_XLSX, NULL, inl, NW(inl), 3);
	expect_schema(FIXTURE("date1904.xlsx"), TAB_XLSX, NULL, d1904, NW(d1904), 3);
	expect_schema(FIXTURE("sheetjs-dates.xlsx"), TAB_XLSX, NULL, sjs, NW(sjs), 2);
	expect_schema(FIXTURE("types.xlsx"), TAB_XLSX, "Empty", NULL, 0, 0);

	/* options through infer_file: the header on the sheet's row 3 */
	tab_opts_init(&o);
	strcpy(o.sheet_name, "With title");
	o.skip_rows = 2;
	CU_ASSERT_EQUAL_FATAL(infer_file(FIXTURE("types.xlsx"), TAB_XLSX, &o, &r, err, sizeof err), 0);
	expect_cols(&r, titled, NW(titled));
	CU_ASSERT_EQUAL(r.row_count, 2);
	CU_ASSERT_STRING_EQUAL(r.stats.sheet_name, "With title");
	infer_result_free(&r);

	/* analysed rows capped, every row still counted */
	tab_opts_init(&o);
	o.max_analyze_rows = 2;
	CU_ASSERT_EQUAL_FATAL(infer_file(FIXTURE("types.xlsx"), TAB_XLSX, &o, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(r.row_count, 6);
	CU_ASSERT_EQUAL(r.analyzed_rows, 2);
	infer_result_free(&r);

	/* a reader's failure comes out of infer_file with its reason */
	tab_opts_init(&o);
	strcpy(o.sheet_name, "nope");
	CU_ASSERT_EQUAL(infer_file(FIXTURE("types.xlsx"), TAB_XLSX, &o, &r, err, sizeof err),
	                TAB_ERR_OPTION);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no sheet named \"nope\""));
	CU_ASSERT_EQUAL(infer_file(FIXTURE("truncated.xlsx"), TAB_XLSX, NULL, &r, err, sizeof err),
	                TAB_ERR_FORMAT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "truncated"));
	CU_ASSERT_EQUAL(infer_file(FIXTURE("empty.xlsx"), TAB_XLSX, NULL, &r, err, sizeof err),
	                TAB_ERR_FORMAT);
	CU_ASSERT_STRING_EQUAL(err, "empty file");
}

/* The header rule: a title and a "Generated" line over a four-column
 * table are skipped and the schema says so; header_row overrides the rule;
 * a header with an empty first name over an index column (pandas), or
 * names over a wider table of numbers, is the header; a plain table has no
 * warning. */
static void test_header_rule(void)
{
	const char *path = FIXTURE("titled.xlsx");

	expect_sheet_header(path, TAB_XLSX, "Report", -1, "region|product|units|revenue",
	                    "the header is row 4 of the sheet: 2 non-blank rows above it (a title "
	                    "or notes) were skipped; refresh the schema with header_row to take "
	                    "another row");
	expect_sheet_header(path, TAB_XLSX, "Report", 0, "Sales report, third quarter", NULL);
	expect_sheet_header(path, TAB_XLSX, "Report", 3, "region|product|units|revenue", NULL);
	expect_sheet_header(path, TAB_XLSX, "Indexed", -1, "column0|name|score", NULL);
	/* two names over rows of four numbers: the names are the header */
	expect_sheet_header(path, TAB_XLSX, "Short header", -1, "a|b", NULL);
	expect_sheet_header(path, TAB_XLSX, "Plain", -1, "k|v", NULL);
	expect_sheet_header(FIXTURE("types.xlsx"), TAB_XLSX, "With title", -1, "region|total",
	                    "the header is row 3 of the sheet: 1 non-blank row above it (a title "
	                    "or notes) was skipped; refresh the schema with header_row to take "
	                    "another row");
}

int suite_tabular_xlsx(void)
{
	static const struct test_case tests[] = {
		{ "ExcelJS: strings, numbers, booleans, dates by format, blanks", test_types },
		{ "sheets by name, any case; an empty sheet; an unknown name", test_sheets },
		{ "skip_rows and header_row count sheet rows", test_skip_rows },
		{ "inline rich strings, formula strings, error cells", test_inline },
		{ "the 1904 date system", test_date1904 },
		{ "SheetJS: t=\"d\" dates, booleans, errors", test_sheetjs },
		{ "the sink stops or aborts", test_sink_stops },
		{ "truncated, empty and foreign files", test_malformed_files },
		{ "cell references, sparse rows, rows without numbers", test_sparse },
		{ "escapes, empty strings, booleans, styles over built-ins", test_values },
		{ "the first worksheet after a chart sheet", test_chartsheet_first },
		{ "bad indexes, references, types, XML and DOCTYPEs", test_malformed_parts },
		{ "a part past its inflated size cap", test_zip_bomb },
		{ "shared strings past their cap", test_sst_cap },
		{ "number format codes: date, time, elapsed or not", test_format_kinds },
		{ "serials: 1900 with its leap bug, 1904, times, limits", test_serials },
		{ "inferred schemas of the fixtures; options; failures", test_infer },
		{ "the header found below a title, and said so", test_header_rule },
		{ NULL, NULL },
	};
	return suite_add("tabular_xlsx", tests);
}
