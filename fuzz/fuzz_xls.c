/* fuzz_xls.c - libFuzzer target: the XLS reader (BIFF through libfreexl)
 * and the inference over it.
 *
 * The first byte picks the options (sheet, skip_rows, header_row); the rest
 * is the file (seeds: the XLS fixtures). */
#include "fuzz_tabular.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sheets[] = { "", "Sheet1", "Data", "nope" };
	struct tab_opts o;
	char path[64];
	int fd;

	if (size < 1)
		return 0;
	fuzz_sheet_opts(&o, data[0], sheets);
	fd = fuzz_file(data + 1, size - 1, path, sizeof path);
	if (fd < 0)
		return 0;
	fuzz_read_and_infer(path, TAB_XLS, &o);
	close(fd);
	return 0;
}
