/* fuzz_parquet_pages.c - libFuzzer target: Parquet pages, decoded.
 *
 * With the high bit of the first byte set, the rest is a whole file read
 * through tab_read (footer, row groups, pages, values, nested columns as
 * JSON; seeds: Parquet fixtures of DuckDB and parquet-wasm).  With it
 * clear, the first four bytes describe a column (physical type, maximum
 * definition and repetition levels, codec, FIXED_LEN_BYTE_ARRAY length)
 * and the rest is its column chunk, read entry by entry through the page
 * cursor (seeds: column chunks cut from the fixtures). */
#include "fuzz_tabular.h"
#include "tabular/formats.h"
#include "tabular/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void whole_file(const uint8_t *data, size_t size)
{
	struct fuzz_seen seen = { 0 };
	struct tab_sink sink = { fuzz_header, fuzz_row, &seen };
	struct tab_stats st;
	struct infer_result r;
	char path[64], err[512] = "";
	int fd = fuzz_file(data, size, path, sizeof path), rc;

	if (fd < 0)
		return;
	rc = tab_read(path, TAB_PARQUET, NULL, &sink, &st, err, sizeof err);
	if (rc != 0 && err[0] == '\0')
		abort();                       /* every failure has a reason */
	if (rc == 0 && st.rows != seen.rows)
		abort();
	/* a file read whole has as many rows and columns as its footer says */
	if (parquet_infer(path, &r, err, sizeof err) == 0) {
		if (rc == 0 && (r.row_count != seen.rows || r.ncols != seen.ncols))
			abort();
		infer_result_free(&r);
	} else if (rc == 0) {
		abort();
	}
	close(fd);
}

static void one_chunk(const uint8_t *data, size_t size)
{
	static const int codecs[] = { CODEC_UNCOMPRESSED, CODEC_SNAPPY, CODEC_GZIP, CODEC_ZSTD };
	struct pq_src src = { .fd = -1, .mem = data + 4, .size = size - 4 };
	struct pq_leaf_desc d = {
		.name = "fuzz", .type = data[0] & 7, .type_length = 1 + (data[3] & 31),
		.max_def = data[1] & 3, .max_rep = (data[1] >> 2) & 3,
		.chunk = { .start = 0, .size = size - 4, .num_values = 4096,
		           .codec = codecs[data[2] & 3] },
	};
	struct pq_budget budget = { 0 };
	struct pq_cursor *c = NULL;
	struct pq_entry e;
	char err[512] = "";
	long n = 0;
	int rc;

	if (pq_cursor_open(&c, &src, &d, &budget, err, sizeof err) != 0) {
		if (err[0] == '\0')
			abort();
		return;
	}
	while ((rc = pq_cursor_next(c, &e, err, sizeof err)) == 1) {
		if (e.def > d.max_def || e.rep > d.max_rep || e.present != (e.def == d.max_def) ||
		    ++n > 4096)
			abort();
		/* byte values are readable to their end (ASan checks) */
		if (e.present && e.n > 0) {
			volatile uint8_t ends = (uint8_t)(e.b[0] ^ e.b[e.n - 1]);
			(void)ends;
		}
	}
	if (rc < 0 && err[0] == '\0')
		abort();
	pq_cursor_free(c);
	if (budget.held != 0)
		abort();                       /* every buffer given back */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 0x80)
		whole_file(data + 1, size - 1);
	else if (size >= 4)
		one_chunk(data, size);
	return 0;
}
