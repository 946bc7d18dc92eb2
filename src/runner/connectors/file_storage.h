/* file_storage.h - the pure parts of the file_storage connector, for the
 * unit tests: which prefixes are accepted, and how a file's header becomes
 * column names.  The connector itself is file_storage_extract_load
 * (runner/connector.h). */
#ifndef SLUICE_FILE_STORAGE_H
#define SLUICE_FILE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "runner/connectors/dest.h"

struct tab_cell;

/* input.prefix: len bytes (a JSON string may hold a NUL), relative, no
 * ".." segment, no backslash, at most 1024 bytes. */
bool file_storage_prefix_ok(const char *p, size_t len);

/* The header's n names as column names into names[0..n): trimmed; cut to
 * 64 characters; "column_N" (N its 1-based position) when empty or not a
 * usable name; "_2", "_3", ... appended to a name already taken (without
 * case), _source_file and _source_row being the connector's own. */
void file_storage_column_names(const struct tab_cell *cells, size_t n,
                               char (*names)[DEST_NAME_MAX]);

#endif
