/* fuzz_parquet.c - libFuzzer target: a Parquet footer (the Thrift compact
 * FileMetaData between the column chunks and the footer length) decoded
 * from arbitrary bytes, and the schema object made of it.  Seeds: the
 * footers of the Parquet fixtures. */
#include <json-c/json.h>

#include "fuzz_tabular.h"
#include "tabular/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct infer_result r;
	char err[256];

	err[0] = '\0';
	if (parquet_footer_parse(data, size, &r, err, sizeof err) != 0) {
		if (err[0] == '\0' || r.cols != NULL || r.ncols != 0)
			abort();               /* a reason, and nothing kept */
		return 0;
	}
	if (r.row_count < 0 || r.analyzed_rows != r.row_count)
		abort();
	for (size_t i = 0; i < r.ncols; i++)
		if (r.cols[i].name[0] == '\0' || (unsigned)r.cols[i].type > INFER_VARCHAR ||
		    strlen(r.cols[i].name) >= INFER_NAME_MAX ||
		    tab_utf8_invalid_at((const unsigned char *)r.cols[i].name,
		                        strlen(r.cols[i].name)) != strlen(r.cols[i].name))
			abort();
	struct json_object *j = infer_result_json(&r);
	if (j == NULL)
		abort();
	json_object_put(j);
	infer_result_free(&r);
	return 0;
}
