/* fuzz_parquet.c - libFuzzer target: a Parquet footer (the Thrift compact
 * FileMetaData between the column chunks and the footer length) decoded
 * from arbitrary bytes.  Seeds: the footers of the Parquet fixtures. */
#include <stddef.h>
#include <stdint.h>

#include "tabular/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct infer_result r;
	char err[256];

	if (parquet_footer_parse(data, size, &r, err, sizeof err) == 0) {
		/* a decoded footer names each column and says its type */
		for (size_t i = 0; i < r.ncols; i++)
			if (r.cols[i].name[0] == '\0' && r.cols[i].type > INFER_VARCHAR)
				__builtin_trap();
		if (r.row_count < 0)
			__builtin_trap();
	}
	infer_result_free(&r);
	return 0;
}
