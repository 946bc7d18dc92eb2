/* dbkind.h - the database kinds behind JDBC plugins and the incremental
 * column types each allows (spec: "Allowed incremental column types per
 * database kind").  Used by pipeline creation and by the sync-mode change. */
#ifndef SLUICE_DBKIND_H
#define SLUICE_DBKIND_H

#include <stdbool.h>
#include <stddef.h>

enum dbkind {
	DBKIND_NONE = 0,   /* not a JDBC plugin */
	DBKIND_A,          /* postgres */
	DBKIND_B,          /* mysql, mariadb */
	DBKIND_C,          /* oracle */
	DBKIND_D,          /* sqlserver */
};

/* The kind of a JDBC plugin name (exact, lowercase); DBKIND_NONE when the
 * plugin is not one of postgres, mysql, mariadb, oracle, sqlserver. */
enum dbkind dbkind_of_plugin(const char *plugin);

/* The list's own spelling of type when the kind allows it, else NULL.
 * Compared case-insensitively, as SQL type names are; spaces must match. */
const char *dbkind_type_find(enum dbkind k, const char *type);
bool dbkind_type_allowed(enum dbkind k, const char *type);

/* The allowed types of k, NULL-terminated (an empty list for NONE). */
const char *const *dbkind_types(enum dbkind k);
/* "a, b, c" into buf (cut at cap); returns buf. */
const char *dbkind_types_joined(enum dbkind k, char *buf, size_t cap);

#endif
