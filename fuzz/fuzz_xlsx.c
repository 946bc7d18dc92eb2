/* fuzz_xlsx.c - libFuzzer target: the XLSX reader (zip, then XML parts
 * through expat) and the inference over it.
 *
 * The first byte picks the options (sheet, skip_rows, header_row) and the
 * mode.  With its high bit clear the rest is the file as it is (seeds: the
 * XLSX fixtures).  With it set, the rest is XML parts separated by
 * "\n--\n" (sheet, shared strings, styles, workbook), zipped here without
 * compression, so that mutations reach the XML handlers instead of
 * failing the zip's checksums. */
#include <stdbool.h>
#include <zip.h>

#include "fuzz_tabular.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char RELS[] =
	"<Relationships><Relationship Id=\"r\" Type=\"x/officeDocument\" Target=\"xl/workbook.xml\"/>"
	"</Relationships>";
static const char WB_RELS[] =
	"<Relationships><Relationship Id=\"rId1\" Type=\"x/worksheet\" Target=\"worksheets/sheet1.xml\"/>"
	"<Relationship Id=\"rId2\" Type=\"x/sharedStrings\" Target=\"sharedStrings.xml\"/>"
	"<Relationship Id=\"rId3\" Type=\"x/styles\" Target=\"styles.xml\"/></Relationships>";
static const char WORKBOOK[] =
	"<workbook><sheets><sheet name=\"Data\" r:id=\"rId1\"/></sheets></workbook>";

static bool add(zip_t *z, const char *name, const void *p, size_t n)
{
	zip_source_t *src = zip_source_buffer(z, p, n, 0);
	zip_int64_t idx;

	if (src == NULL)
		return false;
	idx = zip_file_add(z, name, src, 0);
	if (idx < 0) {
		zip_source_free(src);
		return false;
	}
	zip_set_file_compression(z, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
	return true;
}

/* The parts of data as a zip in a memory file; its descriptor or -1. */
static int zip_parts(const uint8_t *data, size_t size, char *path, size_t cap)
{
	static const char *const names[] = {
		"xl/worksheets/sheet1.xml", "xl/sharedStrings.xml", "xl/styles.xml", "xl/workbook.xml",
	};
	const char *p = (const char *)data, *end = p + size;
	zip_error_t ze;
	zip_source_t *buf;
	zip_t *z;
	zip_stat_t st;
	char *bytes = NULL;
	size_t i;
	int fd = -1;
	bool ok = true;

	zip_error_init(&ze);
	buf = zip_source_buffer_create(NULL, 0, 0, &ze);
	if (buf == NULL)
		goto out;
	zip_source_keep(buf);
	z = zip_open_from_source(buf, ZIP_TRUNCATE, &ze);
	if (z == NULL)
		goto out;
	ok = add(z, "_rels/.rels", RELS, sizeof RELS - 1) &&
	     add(z, "xl/_rels/workbook.xml.rels", WB_RELS, sizeof WB_RELS - 1);
	for (i = 0; ok && i < 4 && p <= end; i++) {
		const char *sep = memmem(p, (size_t)(end - p), "\n--\n", 4);
		const char *stop = sep ? sep : end;
		ok = add(z, names[i], p, (size_t)(stop - p));
		p = sep ? sep + 4 : end + 1;
	}
	if (ok && i < 4)
		ok = add(z, "xl/workbook.xml", WORKBOOK, sizeof WORKBOOK - 1);
	if (!ok || zip_close(z) != 0) {
		zip_discard(z);
		goto out;
	}
	/* the archive now in buf, out to a memory file */
	zip_stat_init(&st);
	if (zip_source_stat(buf, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) ||
	    zip_source_open(buf) != 0)
		goto out;
	bytes = malloc(st.size ? st.size : 1);
	if (bytes != NULL && zip_source_read(buf, bytes, st.size) == (zip_int64_t)st.size)
		fd = fuzz_file((const uint8_t *)bytes, st.size, path, cap);
	zip_source_close(buf);
out:
	free(bytes);
	zip_source_free(buf);
	zip_error_fini(&ze);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sheets[] = { "", "Data", "second", "nope" };
	struct tab_opts o;
	char path[64];
	bool parts;
	int fd;

	if (size < 1)
		return 0;
	fuzz_sheet_opts(&o, data[0], sheets);
	parts = data[0] & 0x80;
	data++;
	size--;
	fd = parts ? zip_parts(data, size, path, sizeof path) : fuzz_file(data, size, path, sizeof path);
	if (fd < 0)
		return 0;
	fuzz_read_and_infer(path, TAB_XLSX, &o);
	close(fd);
	return 0;
}
