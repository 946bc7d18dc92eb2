/* fuzz_json.c - libFuzzer target: the JSON reader and the inference over
 * it.  The whole input is the file. */
#include <json-c/json.h>

#include "fuzz_tabular.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tab_opts o;
	char path[64];
	int fd;

	tab_opts_init(&o);
	fd = fuzz_file(data, size, path, sizeof path);
	if (fd < 0)
		return 0;
	fuzz_read_and_infer(path, TAB_JSON, &o);
	close(fd);
	return 0;
}
