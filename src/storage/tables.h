/* tables.h - warehouse tables of the storage explorer, the datasets linked
 * to them, and the background load of a linked dataset's rows.
 *
 *   table_types.c  the column type vocabulary (INTEGER ... VARCHAR(n)), its
 *                  MariaDB DDL, and the dataset -> table compatibility rules
 *   tables.c       POST/GET /storage-explorer/tables[/{id}], validate-name,
 *                  the route table and the area's error bodies for these
 *   links.c        POST /storage-explorer/tables/{tableId}/datasets/{datasetId}
 *                  and GET /storage-explorer/tables/{tableId}/datasets
 *   link_load.c    work kind storage_link_load: the rows into the table */
#ifndef SLUICE_STORAGE_TABLES_H
#define SLUICE_STORAGE_TABLES_H

#include <stdbool.h>
#include <stddef.h>

#include "http/router.h"

struct json_object;
struct req;
struct work_ctx;
struct work_item;

/* validate-name, tables, links (tables.c and links.c). */
extern const struct route storage_table_routes[];

/* --- column types (table_types.c) ------------------------------------------ */

enum table_type_kind {
	TABLE_INTEGER,            /* 32-bit */
	TABLE_BIGINT,
	TABLE_DECIMAL,            /* precision 1..38, scale 0..precision */
	TABLE_DOUBLE,
	TABLE_BOOLEAN,
	TABLE_DATE,
	TABLE_TIMESTAMP,          /* microseconds, no time zone (UTC by convention) */
	TABLE_VARCHAR,            /* length 1..65535, or 0 for no limit */
};

struct table_type {
	enum table_type_kind kind;
	int precision, scale;     /* TABLE_DECIMAL */
	long length;              /* TABLE_VARCHAR; 0 = no limit */
};

#define TABLE_TYPE_TEXT_MAX   32
#define TABLE_DECIMAL_MAX     38       /* Snowflake's NUMBER limit (MariaDB: 65) */
#define TABLE_VARCHAR_MAX     65535L
#define TABLE_COLUMNS_MAX     1000     /* InnoDB allows 1017 */
#define TABLE_ROW_BYTES_MAX   65535L   /* MariaDB's row size limit */

/* The API's type text ("INTEGER", "DECIMAL(12,2)", "VARCHAR(255)", any
 * letter case, spaces allowed inside the parentheses).  0, or -1 with the
 * reason in err. */
int table_type_parse(const char *s, struct table_type *t, char *err, size_t errlen);
/* The canonical API text of t. */
void table_type_name(const struct table_type *t, char buf[TABLE_TYPE_TEXT_MAX]);
/* The MariaDB column type of t: INT, BIGINT, DECIMAL(p,s), DOUBLE, BOOLEAN,
 * DATE, DATETIME(6), VARCHAR(n) up to 1024, TEXT up to 16383, MEDIUMTEXT
 * above, LONGTEXT without a length. */
void table_type_sql(const struct table_type *t, char buf[TABLE_TYPE_TEXT_MAX]);
/* Bytes t takes of MariaDB's 65535-byte row limit (utf8mb4: 4 per char). */
long table_type_row_bytes(const struct table_type *t);
/* A dataset column's type from its schema (inferred_type, precision,
 * scale); 0, or -1 for an unknown inferred_type. */
int table_type_from_inferred(const char *inferred_type, int precision, int scale,
                             struct table_type *t);

/* Can values of a dataset column of type from go into a table column of
 * type to?  0: the same type; 1: yes, widened or with a caveat (said in
 * note); -1: no (the reason in note). */
int table_type_compat(const struct table_type *from, const struct table_type *to,
                      char *note, size_t notelen);

/* Column names compare without regard to ASCII letter case. */
bool table_column_name_eq(const char *a, const char *b);

struct table_column {
	const char *name;
	struct table_type type;
	bool nullable;
};

/* The link compatibility check of a dataset's columns against a table's.
 * The arrays are json-c objects owned by the result. */
struct table_match {
	bool compatible;          /* nothing missing, extra or mismatched */
	bool schema_matched;      /* the same names (exact case), order, types
	                           * and nullability: loaded without any change */
	struct json_object *missing_columns;    /* table columns not in the dataset */
	struct json_object *extra_columns;      /* dataset columns not in the table */
	struct json_object *type_mismatches;    /* [{column, table_type, dataset_type}] */
	struct json_object *warnings;           /* strings */
};

/* 0, or -1 on allocation failure. */
int table_match_columns(const struct table_column *table, size_t nt,
                        const struct table_column *dataset, size_t nd,
                        struct table_match *m);
void table_match_free(struct table_match *m);

/* --- the background load (link_load.c) --------------------------------------- */

int storage_link_load_work(struct work_ctx *w, const struct work_item *it,
                           char *err, size_t errlen);

#endif
