/* migrate.h - numbered schema migrations (sql/NNN_name.sql).
 *
 * Each file is applied once, in order, and recorded with its SHA-256 in
 * schema_migrations.  A file that changed after it was applied is an error:
 * migrations are history, and history is not rewritten.  A lock row
 * (schema_migrations_lock) keeps two migrators from racing, on one server
 * or on the nodes of a Galera cluster: the second waits for the first. */
#ifndef SLUICE_MIGRATE_H
#define SLUICE_MIGRATE_H

#include <stddef.h>

struct db;

/* Apply what is missing from dir.  *applied gets the count applied now.
 * Returns 0, or -1 with a message in err. */
int migrate_run(struct db *db, const char *dir, int *applied,
                char *err, size_t errlen);

#endif
