/* binary_pending.c - placeholders for the XLSX, XLS and Parquet readers
 * until their real files land; each answers "not built yet".  Deleted when
 * xlsx.c, xls.c and parquet.c are in. */
#include "tabular/formats.h"
#include "util/str.h"

int xlsx_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
              struct tab_stats *stats, char *err, size_t errlen)
{
	(void)path, (void)o, (void)sink, (void)stats;
	str_errf(err, errlen, "xlsx files: not built yet");
	return TAB_ERR_FORMAT;
}

int xls_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
             struct tab_stats *stats, char *err, size_t errlen)
{
	(void)path, (void)o, (void)sink, (void)stats;
	str_errf(err, errlen, "xls files: not built yet");
	return TAB_ERR_FORMAT;
}

int parquet_infer(const char *path, struct infer_result *out, char *err, size_t errlen)
{
	(void)path, (void)out;
	str_errf(err, errlen, "parquet files: not built yet");
	return TAB_ERR_FORMAT;
}
