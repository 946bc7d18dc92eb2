/* parquet.h - the Parquet footer (FileMetaData, Thrift compact protocol)
 * decoded from a buffer, for parquet_infer and the fuzz target. */
#ifndef SLUICE_TABULAR_PARQUET_H
#define SLUICE_TABULAR_PARQUET_H

#include <stddef.h>

#include "tabular/tabular.h"

/* The largest footer read: a file whose 4-byte footer length is bigger is
 * refused rather than read into memory. */
#define PARQUET_FOOTER_MAX (64u * 1024 * 1024)
/* Schema elements (columns, groups and the root together). */
#define PARQUET_SCHEMA_MAX 100000
/* Thrift structs inside structs (and lists), skipped or not. */
#define PARQUET_DEPTH_MAX 64

/* Decode the len bytes of a FileMetaData (the footer without its length
 * and magic) into out: one column per leaf, row_count = num_rows.  0, or
 * TAB_ERR_FORMAT with the reason in err; out is then empty.  Every read is
 * checked against buf + len.  Free out with infer_result_free. */
int parquet_footer_parse(const unsigned char *buf, size_t len, struct infer_result *out,
                         char *err, size_t errlen);

#endif
