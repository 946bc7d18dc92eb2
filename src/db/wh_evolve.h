/* wh_evolve.h - destinations that follow their sources: the one widening
 * lattice of warehouse column types, and the table change it implies.
 *
 * Every load into an existing warehouse table (jdbc appends, singer,
 * file_storage, storage explorer links) compares the type its source now
 * has with the column's type in the table:
 *
 *   same          nothing to do;
 *   widen         the column is altered to a type that holds both (a longer
 *                 VARCHAR or TEXT, a larger DECIMAL precision or scale,
 *                 INT -> BIGINT, an integer into a DECIMAL with the digits,
 *                 FLOAT -> DOUBLE, DATE -> DATETIME, more fractional
 *                 seconds): existing rows keep their values;
 *   narrower      the column already holds every value of the source's type
 *                 (VARCHAR(500) in the table, VARCHAR(200) in the source);
 *   incompatible  no type holds both without converting values (text and
 *                 numbers, dates and numbers, exact and approximate numbers
 *                 wider than 53 bits).
 *
 * wh_table_evolve refuses an incompatible change (and, with
 * WH_EVOLVE_NARROWING_FAILS, a narrower one) for every column before it
 * runs any DDL, then widens all the columns that need it in one ALTER
 * TABLE.  A widening is harmless to the rows already there, so it may
 * commit (DDL commits implicitly in MariaDB) before the load's own
 * transaction, which then adds every row or none. */
#ifndef SLUICE_WH_EVOLVE_H
#define SLUICE_WH_EVOLVE_H

#include <stdbool.h>
#include <stddef.h>

struct wh;
struct wh_column;

#define WH_TYPE_TEXT_MAX 40

enum wh_change {
	WH_TYPE_SAME,
	WH_TYPE_WIDEN,
	WH_TYPE_NARROWER,
	WH_TYPE_INCOMPATIBLE,
};

/* How a column of type existing (MariaDB's COLUMN_TYPE, "varchar(200)",
 * "int(11)", or DDL text, "DECIMAL(38,6)") meets a source whose values
 * have type wanted.  For WH_TYPE_WIDEN the type to alter the column to is
 * in to (upper-case DDL text).  Types are compared in their canonical
 * upper-case form without integer display widths. */
enum wh_change wh_type_change(const char *existing, const char *wanted,
                              char to[WH_TYPE_TEXT_MAX]);
/* The canonical text of a type ("int(11)" -> "INT", "varchar(200)" ->
 * "VARCHAR(200)"), for messages. */
void wh_type_canonical(const char *sql_type, char out[WH_TYPE_TEXT_MAX]);

enum {
	WH_EVOLVE_NARROWING_FAILS = 1,   /* the source declares its types */
};

/* Told once per column: widened (from and to set), or absent from the
 * table (from NULL: the caller adds it, if it adds columns). */
typedef void (*wh_evolve_fn)(void *arg, const char *column, const char *from,
                             const char *to);

/* Make schema.table's columns hold cols' types, as above.  The number of
 * columns widened (>= 0), or -1 with the reason in err naming the column
 * and both types (nothing altered then).  No transaction may be open. */
int wh_table_evolve(struct wh *w, const char *schema, const char *table,
                    const struct wh_column *cols, size_t ncols, int flags,
                    wh_evolve_fn fn, void *arg, char *err, size_t errlen);

#endif
