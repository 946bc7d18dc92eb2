/* tables.h - warehouse tables of the storage explorer, the datasets linked
 * to them, and the background load of a linked dataset's rows.
 *
 *   table_types.c  the column type vocabulary (INTEGER ... VARCHAR(n)), its
 *                  MariaDB DDL, and the dataset -> table compatibility rules
 *   tables.c       POST/GET /storage-explorer/tables[/{id}], validate-name,
 *                  the route table of these and of links.c
 *   links.c        POST and DELETE /storage-explorer/tables/{tableId}/datasets/{datasetId},
 *                  POST .../{datasetId}/sync and GET /storage-explorer/tables/{tableId}/datasets
 *   link_load.c    work kind storage_link_load: a table's rows from its links
 *   table_delete.c DELETE /storage-explorer/tables/{tableId} (the warehouse
 *                  table dropped) */
#ifndef SLUICE_STORAGE_TABLES_H
#define SLUICE_STORAGE_TABLES_H

#include <stdbool.h>
#include <stddef.h>

#include "http/router.h"
#include "storage/table_name.h"

struct db;
struct db_stmt;
struct json_object;
struct req;
struct tab_cell;
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

/* Does a table column of type col follow a dataset column of type src
 * (db/wh_evolve.h's lattice)?  0: it holds src's values as it is (also
 * for a VARCHAR src without a length: unknown, loaded as it is); 1: it is
 * to widen, to the API type *to; -1: no type holds both. */
int table_type_widen(const struct table_type *col, const struct table_type *src,
                     struct table_type *to);

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

/* The text to load for one cell into a column of type t, or NULL for SQL
 * NULL (an empty cell; blank text for a non-VARCHAR column).  Booleans
 * become 1 / 0 (true/false, t/f, yes/no, y/n, 1/0 in any case), timestamps
 * "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC (a 'T', a 'Z' or an offset as in ISO
 * 8601 accepted), numbers lose surrounding blanks and a leading '+'.
 * Anything else goes as it is and the warehouse refuses what does not fit.
 * The result points into c->text or buf; *len is its length. */
#define TABLE_VALUE_BUF 64
const char *table_value(const struct table_type *t, const struct tab_cell *c,
                        char buf[TABLE_VALUE_BUF], size_t *len);

/* --- a customer's table (tables.c, used by links.c and link_load.c) ---------- */

#define STORAGE_TABLE_ID_LEN 36

struct storage_table {
	char id[STORAGE_TABLE_ID_LEN + 1];
	char table_name[TABLE_NAME_BUF];
	char schema_name[TABLE_NAME_BUF];         /* "" = the default schema */
	char wh_schema[TABLE_NAME_BUF];           /* where it is in the warehouse */
	char wh_table[TABLE_NAME_BUF];
	struct table_column *cols;                /* ncols; names point into json */
	size_t ncols;
	struct json_object *columns_json;         /* [{name, type, nullable}] */
};

/* The canonical (lower-case) form of a UUID path id; -1 when in is not one. */
int storage_uuid_parse(const char *in, char out[STORAGE_TABLE_ID_LEN + 1]);

/* The table raw_id names when it belongs to customer_id.  1 found, 0 not
 * (also for a malformed id), or a negative enum db_err.  Free with
 * storage_table_free (also after 0 or an error). */
int storage_table_load(struct db *db, const char *customer_id, const char *raw_id,
                       struct storage_table *t);
void storage_table_free(struct storage_table *t);
/* The same for a handler: 0, or 404 / 503 answered and -1. */
int storage_table_of_caller(struct req *r, const char *customer_id,
                            const char *raw_id, struct storage_table *t);
/* Parse columns_json (as stored) into t->cols.  0 or -1. */
int storage_table_columns_parse(const char *columns_json, struct storage_table *t);

/* The columns of a dataset's stored schema ({"columns": [{"name",
 * "inferred_type", "nullable", "precision"?, "scale"?, "max_length"?}]}):
 * a VARCHAR with its longest value's length, else unbounded (length 0).
 * *cols points into *schema, which the caller puts (also after -1).  0, or
 * -1 when unreadable. */
int storage_dataset_columns(const char *schema_json, struct json_object **schema,
                            struct table_column **cols, size_t *n);

/* Handlers of links.c, routed by tables.c's table. */
int storage_link_post(struct req *r);
int storage_link_delete(struct req *r);
int storage_link_sync_post(struct req *r);
int storage_table_datasets_get(struct req *r);
/* A link's state into o from st's columns col .. col + 4: status,
 * sync_status, row_count, last_sync, error (as table_links has them). */
void storage_link_state_json(struct json_object *o, struct db_stmt *st, unsigned col);
/* table_delete.c */
int storage_table_delete(struct req *r);

/* --- the background load (link_load.c) --------------------------------------- */

int storage_link_load_work(struct work_ctx *w, const struct work_item *it,
                           char *err, size_t errlen);
/* Its give-up: the table's active links not loaded yet failed with reason. */
int storage_link_load_give_up(struct work_ctx *w, const struct work_item *it,
                              const char *reason);
/* Queue a load of the customer's table, unless one is queued already (it
 * reads the links and files when it runs, so it serves this reason too).
 * Inside the caller's transaction.  0 or < 0 enum db_err. */
int storage_table_load_queue(struct db *db, const char *customer_id, const char *table_id);
/* A new version of the dataset is inferred: its active links pending and a
 * load queued for each of their tables.  0 or < 0 enum db_err. */
int storage_dataset_tables_queue(struct db *db, const char *customer_id,
                                 const char *dataset_id);

#endif
