/* table_name.h - warehouse table and schema names that work in both
 * targets of the storage explorer: MariaDB and Snowflake.
 *
 * A name is valid when it is a valid unquoted identifier in both:
 *   MariaDB    at most 64 characters of [0-9a-zA-Z$_] and U+0080..U+FFFF,
 *              may start with a digit but not be digits only, not one of the
 *              reserved words of the MariaDB "Reserved Words" page;
 *   Snowflake  at most 255 characters, starts with a letter or '_', then
 *              letters, digits, '_' and '$' (ASCII only), not one of the
 *              reserved keywords of Snowflake's "Reserved & limited keywords"
 *              page.
 * So in practice: [A-Za-z_][A-Za-z0-9_$]{0,63}, no reserved word of either,
 * compared case-insensitively.
 *
 * Everything here is pure (no I/O, no allocation): the unit tests and the
 * HTTP handlers call the same functions. */
#ifndef SLUICE_TABLE_NAME_H
#define SLUICE_TABLE_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define TABLE_NAME_MAX_MARIADB    64
#define TABLE_NAME_MAX_SNOWFLAKE  255
/* A valid name longer than this gets a "close to the limit" warning. */
#define TABLE_NAME_NEAR_LIMIT     56

#define TABLE_NAME_MSG_MAX        320
#define TABLE_NAME_ERRORS_MAX     8
#define TABLE_NAME_WARNINGS_MAX   6
#define TABLE_NAME_SUGGESTIONS_MAX 3
#define TABLE_NAME_BUF            (TABLE_NAME_MAX_MARIADB + 1)

/* Which targets reserve a word (a bit mask). */
enum {
	TABLE_NAME_MARIADB = 1,
	TABLE_NAME_SNOWFLAKE = 2,
};

struct table_name_check {
	bool valid;
	size_t nerrors, nwarnings, nsuggestions;
	char errors[TABLE_NAME_ERRORS_MAX][TABLE_NAME_MSG_MAX];       /* invalid */
	char warnings[TABLE_NAME_WARNINGS_MAX][TABLE_NAME_MSG_MAX];   /* valid */
	char normalized[TABLE_NAME_BUF];                              /* valid */
	char suggestions[TABLE_NAME_SUGGESTIONS_MAX][TABLE_NAME_BUF]; /* invalid */
};

/* Check len bytes of name (which may hold NUL bytes: they are an error).
 * what names the field in messages ("table_name", "schema_name").  Fills
 * every member of out: errors and suggestions when invalid (at least one
 * suggestion, each itself valid), normalized_name and warnings when valid. */
void table_name_check(const char *name, size_t len, const char *what,
                      struct table_name_check *out);

/* True when the NUL-terminated name passes every rule. */
bool table_name_valid(const char *name);

/* The targets (TABLE_NAME_MARIADB | TABLE_NAME_SNOWFLAKE) whose reserved
 * word list holds len bytes of word, compared without regard to ASCII case;
 * 0 for none. */
int table_name_reserved(const char *word, size_t len);

/* True for MariaDB's extra reserved words in Oracle mode (sql_mode=ORACLE),
 * and for the keywords MariaDB allows unquoted only for historical reasons;
 * both are warnings, not errors. */
bool table_name_oracle_reserved(const char *word, size_t len);
bool table_name_mariadb_exception(const char *word, size_t len);

/* The reserved word lists themselves (upper case, sorted), for tests. */
size_t table_name_reserved_list(int target, const char *const **words);

/* The lower snake case form of a valid name ("SalesData$EU" ->
 * "sales_data_eu"), itself valid, into out (TABLE_NAME_BUF bytes).  0, or
 * -1 when name is not valid. */
int table_name_normalize(const char *name, char out[TABLE_NAME_BUF]);

#endif
