/* jdbc.h - the jdbc connector's source drivers (jdbc_mariadb.c for the
 * mariadb and mysql plugins, jdbc_postgres.c for postgres) and the pure
 * helpers of jdbc.c that the unit tests call.
 *
 * A driver connects, describes a table from its catalog (column names,
 * types mapped to warehouse types), quotes identifiers in its own dialect,
 * and streams the rows of one SELECT as text: never the whole result in
 * memory.  jdbc.c builds the SELECT, decides full or incremental, loads the
 * warehouse and keeps the bookmark. */
#ifndef SLUICE_JDBC_H
#define SLUICE_JDBC_H

#include <stdbool.h>
#include <stddef.h>

#include "db/warehouse.h"

struct job_spec;
struct source_conn;
struct task_env;

/* What the connector needs to know of a column's values. */
enum jdbc_kind {
	JK_INT,           /* integer types: bookmark is a number */
	JK_DATE,          /* bookmark YYYY-MM-DD */
	JK_DATETIME,      /* zone-less date and time: bookmark YYYY-MM-DDTHH:MM:SS[.f] */
	JK_TIMESTAMPTZ,   /* a point in time, read in UTC: bookmark ...Z */
	JK_BOOL,          /* postgres 't'/'f', loaded as 1/0 */
	JK_BYTES,         /* postgres bytea (hex text), loaded as bytes */
	JK_BIT,           /* mariadb BIT, selected as a number */
	JK_OTHER,         /* anything else: text as the source writes it */
};

#define JDBC_TYPE_MAX 64

struct jdbc_col {
	char *name;                       /* as the source catalog spells it */
	char wh_type[JDBC_TYPE_MAX];      /* the warehouse column type */
	enum jdbc_kind kind;
	bool nullable;
};

struct jdbc_src;

struct jdbc_driver {
	const char *name;                 /* for log lines: "MariaDB", "PostgreSQL" */
	/* Connect; on failure err holds the server's message (never the
	 * password). */
	int (*open)(struct jdbc_src **out, const struct source_conn *c,
	            char *err, size_t errlen);
	/* Columns of schema.table (schema NULL/"" = the connection's default),
	 * in table order; *ncols == 0 when there is no such table. */
	int (*describe)(struct jdbc_src *s, const char *schema, const char *table,
	                struct jdbc_col **cols, size_t *ncols, char *err, size_t errlen);
	/* name quoted for this dialect; 0 or -1 (not a valid identifier). */
	int (*quote)(const char *name, char *buf, size_t cap);
	/* The select-list expression of a column (its quoted name, or a
	 * conversion of it), written into buf. */
	int (*select_expr)(const struct jdbc_col *c, const char *qname,
	                   char *buf, size_t cap);
	/* The bound parameter compared with a column of this kind
	 * ("?", "CAST(? AS DATETIME(6))", "$1::timestamptz", ...). */
	const char *(*param_expr)(enum jdbc_kind k);
	const char *order_suffix;         /* after ORDER BY col: NULLs first */
	/* Start streaming sql with at most one bound text parameter (NULL =
	 * none); cols give each result column's kind for value conversion. */
	int (*query)(struct jdbc_src *s, const char *sql, const char *param,
	             const struct jdbc_col *const *cols, size_t ncols,
	             char *err, size_t errlen);
	/* The next row: 1 with vals/lens (NULL value = SQL NULL; valid until
	 * the next fetch), 0 at the end, -1 on error. */
	int (*fetch)(struct jdbc_src *s, const char *const **vals, const size_t **lens,
	             char *err, size_t errlen);
	void (*close)(struct jdbc_src *s);  /* NULL is fine */
};

extern const struct jdbc_driver jdbc_mariadb_driver;
extern const struct jdbc_driver jdbc_postgres_driver;

void jdbc_cols_free(struct jdbc_col *cols, size_t n);
/* How a driver reads its catalog's rows (the query started already). */
struct jdbc_catalog {
	int (*fetch)(struct jdbc_src *s, const char *const **vals, const size_t **lens,
	             char *err, size_t errlen);
	void (*finish)(struct jdbc_src *s);   /* ends the query */
	/* A row's nullability, kind and warehouse type into col (its name,
	 * vals[0], is set); -1 for a type that cannot be loaded. */
	int (*map)(const char *const *vals, struct jdbc_col *col);
};
/* The catalog's rows as columns, in order; the query is finished either
 * way.  0 with *cols and *ncols, or -1 with the reason in err. */
int jdbc_catalog_cols(struct jdbc_src *s, const struct jdbc_catalog *cat,
                      struct jdbc_col **cols, size_t *ncols, char *err, size_t errlen);
/* A number column of a catalog query: its value, or -1 when NULL. */
long long jdbc_catalog_num(const char *v);

/* ---- pure helpers (jdbc.c), unit-tested ---------------------------------- */

/* The driver of a plugin name, or NULL (oracle, sqlserver, unknown). */
const struct jdbc_driver *jdbc_driver_for(const char *plugin);

/* Type mapping from the source catalog to a warehouse type.  Numbers are
 * -1 when the catalog has none.  0, or -1 for a type that cannot be
 * loaded (the column is then refused with its name). */
int jdbc_map_mariadb(const char *data_type, const char *column_type,
                     long long precision, long long scale, long long char_len,
                     long long dt_precision, enum jdbc_kind *kind,
                     char *wh_type, size_t cap);
int jdbc_map_postgres(const char *data_type, long long precision, long long scale,
                      long long char_len, long long dt_precision,
                      enum jdbc_kind *kind, char *wh_type, size_t cap);

/* A bookmark from a loaded value of the incremental column (the driver's
 * text: "2024-01-02 03:04:05.5", "2024-01-02", "42").  0 or -1. */
int jdbc_bookmark_from_value(enum jdbc_kind k, const char *v, char *out, size_t cap);
/* The bound parameter for a stored bookmark: an integer for JK_INT; for
 * dates and times the ISO 8601 text (date, or date and time with optional
 * fraction and Z or +hh:mm offset) normalised to UTC as
 * "YYYY-MM-DD HH:MM:SS[.ffffff]".  0, or -1 when the bookmark does not fit
 * the column's kind. */
int jdbc_bookmark_param(enum jdbc_kind k, const char *bookmark, char *out, size_t cap);
/* Order of two values of the incremental column as the source orders
 * them (numbers numerically, dates and times by their fixed-width text). */
int jdbc_value_cmp(enum jdbc_kind k, const char *a, const char *b);
/* "schema.table" or "table" into its parts (schema "" when absent). */
int jdbc_split_table(const char *in, char *schema, size_t scap, char *table,
                     size_t tcap);

/* A quoted warehouse name at its longest (wh_quote). */
#define JDBC_QNAME_MAX (2 * WH_IDENT_MAX * 4 + 3)

/* A destination and its work tables, ours by their prefix and one per
 * destination (an FNV-1a hash of schema and name):
 *   staging    a full load's rows, or the qualify task's rebuild, until
 *              swapped in; registered while it exists (runner/staging.c);
 *   increment  a qualify job's appended rows until the qualify task has
 *              applied them; it outlives a failed run (the bookmark is
 *              past its rows), so it is never swept. */
#define JDBC_STAGING_PREFIX "_sluice_stage_"
#define JDBC_INCREMENT_PREFIX "_sluice_incr_"
#define JDBC_SEQ_COLUMN "_sluice_seq"   /* the increment's load order and key */

struct jdbc_dest {
	const char *schema, *table;
	char staging[WH_IDENT_MAX + 1];
	char increment[WH_IDENT_MAX + 1];
};

/* prefix + 16 hex digits of the destination's hash into out. */
void jdbc_work_table(const char *prefix, const char *schema, const char *table,
                     char out[WH_IDENT_MAX + 1]);
/* The job's destination (output.raw, the default schema when it names
 * none) and its work tables.  0, or -1 with err for a name the warehouse
 * cannot hold. */
int jdbc_dest_names(const struct job_spec *job, struct task_env *env,
                    struct jdbc_dest *d, char *err, size_t errlen);
/* An increment a failed qualify task left, when the job is incremental
 * now (its sync mode changed): its rows appended to the destination as
 * they are, and the table dropped.  0 (also when there is none), or -1. */
int jdbc_increment_append(struct task_env *env, const struct jdbc_dest *d,
                          char *err, size_t errlen);

#endif
