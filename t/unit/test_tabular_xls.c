/* test_tabular_xls.c - the XLS reader on a BIFF8 workbook written by
 * SheetJS (t/fixtures/storage/binary/types.xls), and on damaged files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "binary_fixtures.h"
#include "tabular_test.h"
#include "tabular/formats.h"

static int read_xls(const char *path, const struct tab_opts *o, struct got *g,
                    struct tab_stats *st, char *err, size_t errlen)
{
	size_t stop = g->stop_after;
	int abort_at = g->abort_at;
	struct tab_sink sink = got_sink(g);

	g->stop_after = stop;
	g->abort_at = abort_at;
	return xls_read(path, o, &sink, st, err, errlen);
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

/* Numbers (integers, decimals, one past 32 bits), text, an empty cell,
 * dates and date-times by number format.  FreeXL reads a BIFF boolean as
 * the number 1 or 0. */
static void test_types(void)
{
	static const char *const want[] = {
		"N:1|T:pen|N:1.25|N:1|D:2024-01-15|S:2024-01-15 10:30:00|N:5000000000",
		"N:2|-|N:10|N:0|D:1999-12-31|S:1999-12-31 23:59:59|N:6",
		"N:3|T:ink|N:0.5|N:1|-|S:2000-01-01 00:00:00|N:-7",
	};
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	CU_ASSERT_EQUAL(g.headers, 1);
	CU_ASSERT_STRING_EQUAL(g.header, "id|name|price|flag|day|at|big");
	expect_rows(&g, want, 3);
	CU_ASSERT_EQUAL(st.rows, 3);
	CU_ASSERT_EQUAL(st.ragged_rows, 0);
	CU_ASSERT(st.has_header);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Items");
}

static void test_sheets(void)
{
	static const char *const other[] = { "T:a|N:1", "T:b|N:2" };
	struct tab_opts o = got_opts("Other");
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "k|v");
	expect_rows(&g, other, 2);
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Other");

	o = got_opts("many");
	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "seq|sq");
	CU_ASSERT_EQUAL(g.nrows, 300);
	CU_ASSERT_EQUAL(st.rows, 300);
	CU_ASSERT_STRING_EQUAL(g.rows[0], "N:1|N:1");
	CU_ASSERT_STRING_EQUAL(g.rows[15], "N:16|N:256");
	CU_ASSERT_STRING_EQUAL(st.sheet_name, "Many");

	o = got_opts("Nope");
	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err),
	                TAB_ERR_OPTION);
	CU_ASSERT_STRING_EQUAL(err, "no sheet named \"Nope\"; sheets: Items, Other, Many");
	CU_ASSERT_EQUAL(g.headers, 0);
}

static void test_skip_and_stop(void)
{
	static const char *const want[] = { "N:3|T:ink|N:0.5|N:1|-|S:2000-01-01 00:00:00|N:-7" };
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	/* the second data row as the header */
	o.skip_rows = 1;
	o.header_row = 1;
	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(g.header, "2||10|0|1999-12-31|1999-12-31 23:59:59|6");
	expect_rows(&g, want, 1);

	o = got_opts("Many");
	g = (struct got){ .stop_after = 5 };
	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_EQUAL(g.nrows, 5);
	g = (struct got){ .abort_at = 2 };
	CU_ASSERT_EQUAL(read_xls(FIXTURE("types.xls"), &o, &g, &st, err, sizeof err),
	                TAB_ERR_STOP);
	CU_ASSERT_EQUAL(g.nrows, 2);
}

static void expect_fail(const char *path, int want_rc, const char *want_in_err)
{
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(read_xls(path, &o, &g, &st, err, sizeof err), want_rc);
	if (strstr(err, want_in_err) == NULL)
		fprintf(stderr, "\n%s: error \"%s\" lacks \"%s\"\n", path, err, want_in_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want_in_err));
	CU_ASSERT_EQUAL(g.nrows, 0);
}

static void test_malformed(void)
{
	expect_fail(FIXTURE("truncated.xls"), TAB_ERR_FORMAT, "not a valid XLS file");
	expect_fail(FIXTURE("empty.xls"), TAB_ERR_FORMAT, "empty file");
	expect_fail(FIXTURE("types.xlsx"), TAB_ERR_FORMAT,
	            "not a valid XLS file: not an XLS file (no OLE2 compound file header)");
	expect_fail(FIXTURE("no-such-file.xls"), TAB_ERR_IO, "cannot open");
}

/* Where types.xls states a length: its directory (sector 2) and its
 * workbook stream (sectors 3 to 28, one run from byte 2048). */
#define TYPES_DIR 1536
#define TYPES_SECTORS 30                          /* 15872 bytes: the header, 30 */
#define TYPES_DIR_START 0x30                      /* the header's directory sector */
#define TYPES_WORKBOOK 2048
#define TYPES_ROOT_NAME_LEN (TYPES_DIR + 0x40)     /* the root entry's name */
/* the FORMAT record "yyyy-mm-dd..." (19 UTF-16 characters, record of 43
 * bytes) at stream offset 388: its character count */
#define TYPES_FORMAT_LEN (TYPES_WORKBOOK + 388 + 4 + 2)
#define TYPES_FORMAT_CHARS 19
/* the LABEL record "id" (2 UTF-16 characters, record of 13 bytes) at
 * stream offset 1107: its character count */
#define TYPES_LABEL_LEN (TYPES_WORKBOOK + 1107 + 4 + 6)
#define TYPES_LABEL_CHARS 2

/* types.xls with the 16-bit length at byte at set to n (32-bit past
 * 65535: the upper half must then be a field of its own). */
static int write_len(char *path, size_t cap, size_t at, unsigned long n)
{
	unsigned char *b = NULL;
	size_t len = 0;
	FILE *f = fopen(FIXTURE("types.xls"), "rb");
	int rc = -1;

	if (f == NULL)
		return -1;
	b = malloc(1 << 16);
	if (b != NULL && (len = fread(b, 1, 1 << 16, f)) > at + 2) {
		for (size_t i = 0; i < (n > 0xFFFF ? 4u : 2u); i++)
			b[at + i] = (unsigned char)(n >> 8 * i);
		rc = tt_write(path, cap, ".xls", b, len);
	}
	free(b);
	fclose(f);
	return rc;
}

/* types.xls with the length at at set to ok (read as before), then to each
 * of bad (refused with why, before FreeXL sees the file). */
static void expect_len_bound(size_t at, unsigned ok, const unsigned *bad, size_t nbad,
                             const char *why)
{
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char path[512], err[256] = "";

	CU_ASSERT_EQUAL_FATAL(write_len(path, sizeof path, at, ok), 0);
	CU_ASSERT_EQUAL(read_xls(path, &o, &g, &st, err, sizeof err), 0);
	CU_ASSERT_EQUAL(g.nrows, 3);
	unlink(path);
	for (size_t i = 0; i < nbad; i++) {
		CU_ASSERT_EQUAL_FATAL(write_len(path, sizeof path, at, bad[i]), 0);
		expect_fail(path, TAB_ERR_FORMAT, why);
		unlink(path);
	}
}

/* FreeXL 1.0.6 reads a directory name by its stated length, past its
 * 64-byte field: such a file is refused before FreeXL sees it. */
static void test_directory_name(void)
{
	static const unsigned bad[] = { 65, 14592 };

	expect_len_bound(TYPES_ROOT_NAME_LEN, 64, bad, 2, "a directory name too long");
}

/* FreeXL 1.0.6 copies a LABEL's or a FORMAT's string by the character
 * count the record states, past its record buffer (the fuzz seeds
 * freexl-label-overread.xls: 65535; freexl-format-overread.xls: 57361):
 * a count one over the record is refused. */
static void test_string_lengths(void)
{
	static const unsigned label_bad[] = { TYPES_LABEL_CHARS + 1, 65535 };
	static const unsigned format_bad[] = { TYPES_FORMAT_CHARS + 1, 57361 };

	expect_len_bound(TYPES_LABEL_LEN, TYPES_LABEL_CHARS, label_bad, 2,
	                 "a string longer than its record");
	expect_len_bound(TYPES_FORMAT_LEN, TYPES_FORMAT_CHARS, format_bad, 2,
	                 "a string longer than its record");
}

/* A BIFF4 file (no compound file, a bare record stream): BOF, DIMENSION,
 * a LABEL "ab" of a record of 10 bytes stating n characters, EOF.  FreeXL
 * copies n bytes from its record buffer here too. */
static int write_biff4(char *path, size_t cap, unsigned n)
{
	const unsigned char b[] = {
		0x09, 0x04, 6, 0, 0x00, 0x00, 0x10, 0x00, 0, 0,            /* BOF */
		0x00, 0x02, 10, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,           /* DIMENSION */
		0x04, 0x02, 10, 0, 0, 0, 0, 0, 0, 0,                       /* LABEL */
		(unsigned char)(n & 0xFF), (unsigned char)(n >> 8), 'a', 'b',
		0x0A, 0x00, 0, 0,                                          /* EOF */
	};

	return tt_write(path, cap, ".xls", b, sizeof b);
}

static void test_biff4_label(void)
{
	struct tab_opts o = got_opts(NULL);
	struct tab_stats st;
	struct got g = { 0 };
	char path[512], err[256] = "";

	CU_ASSERT_EQUAL_FATAL(write_biff4(path, sizeof path, 2), 0);
	read_xls(path, &o, &g, &st, err, sizeof err);      /* FreeXL's to judge */
	CU_ASSERT_PTR_NULL(strstr(err, "longer than its record"));
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(write_biff4(path, sizeof path, 3), 0);
	expect_fail(path, TAB_ERR_FORMAT, "a string longer than its record");
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(write_biff4(path, sizeof path, 65535), 0);
	expect_fail(path, TAB_ERR_FORMAT, "a string longer than its record");
	unlink(path);
}

/* The fuzzer's inputs themselves (a first byte of options, then the file):
 * both are also cut short, so their workbook chains leave the file. */
static void expect_seed_refused(const char *name)
{
	char src[512], path[512];
	unsigned char *b = malloc(1 << 16);
	size_t len = 0;
	FILE *f;

	snprintf(src, sizeof src, "%s/fuzz/seeds/xls/%s", SLUICE_TOP_SRCDIR, name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	f = fopen(src, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	len = fread(b, 1, 1 << 16, f);
	fclose(f);
	CU_ASSERT_FATAL(len > 8);
	CU_ASSERT_EQUAL_FATAL(tt_write(path, sizeof path, ".xls", b + 1, len - 1), 0);
	free(b);
	expect_fail(path, TAB_ERR_FORMAT, "not a valid XLS file: damaged");
	unlink(path);
}

static void test_fuzz_reproducers(void)
{
	expect_seed_refused("freexl-label-overread.xls");
	expect_seed_refused("freexl-format-overread.xls");
	expect_seed_refused("freexl-dir-outside-file.xls");
	expect_seed_refused("freexl-biff4-label-overread.xls");
}

/* FreeXL places sector id at (id + 1) x 512 in 32 bits: a directory past
 * the file wraps round to the header (0xFEFFFFFF: the fuzzer's seed
 * freexl-dir-outside-file.xls), whose bytes it then reads as a directory.
 * The last sector of the file is FreeXL's to judge (no workbook there). */
static void test_directory_place(void)
{
	char path[512];

	CU_ASSERT_EQUAL_FATAL(write_len(path, sizeof path, TYPES_DIR_START, TYPES_SECTORS - 1), 0);
	expect_fail(path, TAB_ERR_FORMAT, "not a valid XLS file: no workbook stream in the file");
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(write_len(path, sizeof path, TYPES_DIR_START, TYPES_SECTORS), 0);
	expect_fail(path, TAB_ERR_FORMAT, "its directory outside the file");
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(write_len(path, sizeof path, TYPES_DIR_START, 0xFEFFFFFFul), 0);
	expect_fail(path, TAB_ERR_FORMAT, "its directory outside the file");
	unlink(path);
}

/* A workbook chain longer than the stream's size (FreeXL would move its
 * end of sector past its buffer) or running out of the file is refused. */
static void test_chain_length(void)
{
	static const unsigned bad[] = { 13312 - 1024, 13312 + 512 };

	/* 26 sectors of 512 hold 12801 to 13312 bytes: 13071 as written */
	expect_len_bound(TYPES_DIR + 128 * 2 + 0x78, 13312, bad, 2,
	                 "a sector chain not as long as its stream");
}

static void test_infer(void)
{
	static const struct want_col items[] = {
		{ "id", INFER_INTEGER, 0, 0, false },
		{ "name", INFER_VARCHAR, 0, 0, true },
		{ "price", INFER_DECIMAL, 4, 2, false },      /* 1.25, 10, 0.5 */
		{ "flag", INFER_INTEGER, 0, 0, false },       /* booleans as 1 and 0 */
		{ "day", INFER_DATE, 0, 0, true },
		{ "at", INFER_TIMESTAMP, 0, 0, false },
		{ "big", INFER_BIGINT, 0, 0, false },
	};
	static const struct want_col other[] = {
		{ "k", INFER_VARCHAR, 0, 0, false },
		{ "v", INFER_INTEGER, 0, 0, false },
	};
	static const struct want_col many[] = {
		{ "seq", INFER_INTEGER, 0, 0, false },
		{ "sq", INFER_INTEGER, 0, 0, false },
	};
	struct infer_result r;
	char err[256] = "";

	expect_schema(FIXTURE("types.xls"), TAB_XLS, NULL, items, 7, 3);
	expect_schema(FIXTURE("types.xls"), TAB_XLS, "Other", other, 2, 2);
	expect_schema(FIXTURE("types.xls"), TAB_XLS, "Many", many, 2, 300);
	CU_ASSERT_EQUAL(infer_file(FIXTURE("truncated.xls"), TAB_XLS, NULL, &r, err, sizeof err),
	                TAB_ERR_FORMAT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a valid XLS file"));
}

/* The header rule holds for XLS too; header_row overrides it. */
static void test_header_rule(void)
{
	expect_sheet_header(FIXTURE("titled.xls"), TAB_XLS, NULL, -1, "sku|qty|price",
	                    "the header is row 3 of the sheet: 1 non-blank row above it (a title "
	                    "or notes) was skipped; refresh the schema with header_row to take "
	                    "another row");
	expect_sheet_header(FIXTURE("titled.xls"), TAB_XLS, NULL, 0, "Inventory", NULL);
}

int suite_tabular_xls(void)
{
	static const struct test_case tests[] = {
		{ "SheetJS BIFF8: numbers, text, blanks, dates by format", test_types },
		{ "sheets by name, any case; an unknown name", test_sheets },
		{ "skip_rows, header_row; the sink stops or aborts", test_skip_and_stop },
		{ "truncated, empty and foreign files", test_malformed },
		{ "a directory name longer than its field", test_directory_name },
		{ "a LABEL or FORMAT string longer than its record", test_string_lengths },
		{ "the fuzzer's over-reads: LABEL, FORMAT, directory", test_fuzz_reproducers },
		{ "a directory sector outside the file", test_directory_place },
		{ "a BIFF4 LABEL longer than its record", test_biff4_label },
		{ "a workbook chain longer or shorter than its stream", test_chain_length },
		{ "inferred schemas of the fixtures", test_infer },
		{ "the header found below a title", test_header_rule },
		{ NULL, NULL },
	};
	return suite_add("tabular_xls", tests);
}
