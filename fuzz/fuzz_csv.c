/* fuzz_csv.c - libFuzzer target: the CSV reader and the inference over it.
 * The first byte picks the options (encoding; delimiter: detected, runs of
 * blanks, comma or semicolon; header; skipped rows); the rest is the file. */
#include <json-c/json.h>

#include "fuzz_tabular.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const encodings[] = { "", "", "", "", "utf-8", "utf-16",
	                                         "latin-1", "windows-1252" };
	static const char delimiters[] = { 0, ' ', ',', ';' };
	struct tab_opts o;
	char path[64];
	int fd;

	tab_opts_init(&o);
	if (size > 0) {
		uint8_t sel = data[0];

		strcpy(o.encoding, encodings[sel & 7]);
		o.delimiter = delimiters[(sel >> 3) & 3];
		o.header_row = (sel & 0x20) ? 0 : -1;
		o.skip_rows = (sel >> 6) & 3;
		data++;
		size--;
	}
	fd = fuzz_file(data, size, path, sizeof path);
	if (fd < 0)
		return 0;
	fuzz_read_and_infer(path, TAB_CSV, &o);
	close(fd);
	return 0;
}
