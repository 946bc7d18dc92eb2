/* fuzz_xlsx.c - libFuzzer target: arbitrary bytes read as an XLSX
 * workbook (zip, then XML parts through expat).  xlsx_read takes a path,
 * so each input is written to one memfd and read through /proc/self/fd.
 * The first byte picks the options (sheet, skip_rows, header_row) and the
 * mode: with its high bit clear the rest is the file as it is (seeds: the
 * XLSX fixtures); with it set, the rest is XML parts separated by "\n--\n"
 * (sheet, shared strings, styles, workbook) zipped here, so that mutations
 * reach the XML handlers instead of failing the zip's checksums. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zip.h>

#include "tabular/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fd = -1;
static char path[64];

static int count_row(void *arg, const struct tab_cell *c, size_t n)
{
	long long *rows = arg;
	for (size_t i = 0; i < n; i++)
		if (c[i].text == NULL || strlen(c[i].text) != c[i].len)
			__builtin_trap();
	(*rows)++;
	return 0;
}

static const char RELS[] =
	"<Relationships><Relationship Id=\"r\" Type=\"x/officeDocument\" Target=\"xl/workbook.xml\"/>"
	"</Relationships>";
static const char WB_RELS[] =
	"<Relationships><Relationship Id=\"rId1\" Type=\"x/worksheet\" Target=\"worksheets/sheet1.xml\"/>"
	"<Relationship Id=\"rId2\" Type=\"x/sharedStrings\" Target=\"sharedStrings.xml\"/>"
	"<Relationship Id=\"rId3\" Type=\"x/styles\" Target=\"styles.xml\"/></Relationships>";
static const char WORKBOOK[] =
	"<workbook><sheets><sheet name=\"Data\" r:id=\"rId1\"/></sheets></workbook>";

/* The parts of data (separated by "\n--\n") as a stored zip in fd. */
static int write_parts(const uint8_t *data, size_t size)
{
	static const char *const names[] = {
		"xl/worksheets/sheet1.xml", "xl/sharedStrings.xml", "xl/styles.xml", "xl/workbook.xml",
	};
	const char *p = (const char *)data, *end = p + size;
	zip_error_t ze;
	zip_source_t *buf;
	zip_t *z;
	bool have_wb = false;
	int rc = -1;

	zip_error_init(&ze);
	buf = zip_source_buffer_create(NULL, 0, 0, &ze);
	if (buf == NULL)
		return -1;
	zip_source_keep(buf);
	z = zip_open_from_source(buf, ZIP_TRUNCATE, &ze);
	if (z == NULL)
		goto out;
	zip_source_t *r1 = zip_source_buffer(z, RELS, sizeof RELS - 1, 0);
	zip_source_t *r2 = zip_source_buffer(z, WB_RELS, sizeof WB_RELS - 1, 0);
	zip_file_add(z, "_rels/.rels", r1, 0);
	zip_file_add(z, "xl/_rels/workbook.xml.rels", r2, 0);
	for (size_t i = 0; i < 4 && p <= end; i++) {
		const char *sep = memmem(p, (size_t)(end - p), "\n--\n", 4);
		const char *stop = sep ? sep : end;
		zip_source_t *src = zip_source_buffer(z, p, (size_t)(stop - p), 0);
		zip_int64_t idx = zip_file_add(z, names[i], src, 0);
		if (idx >= 0)
			zip_set_file_compression(z, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
		have_wb = have_wb || i == 3;
		p = sep ? sep + 4 : end + 1;
	}
	if (!have_wb)
		zip_file_add(z, "xl/workbook.xml",
		             zip_source_buffer(z, WORKBOOK, sizeof WORKBOOK - 1, 0), 0);
	if (zip_close(z) != 0) {
		zip_discard(z);
		goto out;
	}
	/* the archive written into buf, copied out to the file */
	zip_stat_t st;
	if (zip_source_stat(buf, &st) != 0 || zip_source_open(buf) != 0)
		goto out;
	if (ftruncate(fd, 0) != 0)
		goto close;
	char chunk[4096];
	off_t off = 0;
	zip_int64_t n;
	while ((n = zip_source_read(buf, chunk, sizeof chunk)) > 0) {
		if (pwrite(fd, chunk, (size_t)n, off) != n)
			goto close;
		off += n;
	}
	rc = n == 0 ? 0 : -1;
close:
	zip_source_close(buf);
out:
	zip_source_free(buf);
	zip_error_fini(&ze);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sheets[] = { "", "Data", "Second", "nope" };
	struct tab_opts o;
	struct tab_stats st;
	long long rows = 0;
	struct tab_sink sink = { count_row, count_row, &rows };
	char err[256];

	if (size < 1)
		return 0;
	if (fd < 0) {
		fd = memfd_create("fuzz-xlsx", 0);
		if (fd < 0)
			return 0;
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	tab_opts_init(&o);
	snprintf(o.sheet_name, sizeof o.sheet_name, "%s", sheets[data[0] & 3]);
	o.skip_rows = (data[0] >> 2) & 3;
	o.header_row = (data[0] >> 4) & 1;
	bool parts = data[0] & 0x80;
	data++;
	size--;
	if (parts) {
		if (write_parts(data, size) != 0)
			return 0;
	} else if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
		return 0;
	}
	/* the header comes once, then every data row the stats count */
	if (xlsx_read(path, &o, &sink, &st, err, sizeof err) == 0 && rows != st.rows + 1)
		__builtin_trap();
	return 0;
}
