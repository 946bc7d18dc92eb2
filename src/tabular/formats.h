/* formats.h - the per-format readers behind tab_read and infer_file.
 * Internal to src/tabular: the rest of sluice uses tabular.h. */
#ifndef SLUICE_TABULAR_FORMATS_H
#define SLUICE_TABULAR_FORMATS_H

#include "tabular/tabular.h"

/* CSV and TXT: delimiter, header and encoding detection as tab_opts says. */
int csv_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
             struct tab_stats *stats, char *err, size_t errlen);
/* An array of objects or JSON lines; nested objects flattened to dotted
 * names, arrays kept as JSON text. */
int json_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
              struct tab_stats *stats, char *err, size_t errlen);
int xlsx_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
              struct tab_stats *stats, char *err, size_t errlen);
int xls_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
             struct tab_stats *stats, char *err, size_t errlen);
/* Parquet: columns and exact row count from the footer, no data decoded. */
int parquet_infer(const char *path, struct infer_result *out, char *err, size_t errlen);

#endif
