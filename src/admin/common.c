/* common.c - what every admin subcommand needs: config, database, stdin. */
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "admin/admin.h"
#include "db/db.h"
#include "util/config.h"

#ifndef SLUICE_SYSCONFDIR
#define SLUICE_SYSCONFDIR "/usr/local/etc"
#endif

const char *admin_config_path(const char *opt)
{
	const char *env = getenv("SLUICE_CONF");

	if (opt != NULL)
		return opt;
	if (env != NULL && env[0] != '\0')
		return env;
	return SLUICE_SYSCONFDIR "/sluice.conf";
}

int admin_load_config(const char *opt, struct config *c)
{
	char err[512];

	config_defaults(c);
	if (config_load(admin_config_path(opt), c, err, sizeof err) != 0) {
		fprintf(stderr, "sluice: %s\n", err);
		return EXIT_CONFIG;
	}
	return 0;
}

struct db *admin_connect(const struct config *c)
{
	struct db *db;

	if (mysql_library_init(0, NULL, NULL) != 0 || (db = db_new(c)) == NULL) {
		fprintf(stderr, "sluice: cannot initialise the database client\n");
		return NULL;
	}
	if (db_ensure(db) != DB_OK) {
		fprintf(stderr, "sluice: cannot connect to the database: %s\n",
		        db_error(db));
		db_free(db);
		return NULL;
	}
	return db;
}

int admin_read_secret(char *buf, size_t cap)
{
	size_t n;

	if (fgets(buf, (int)cap, stdin) == NULL) {
		fprintf(stderr, "sluice: expected the password on standard input\n");
		return -1;
	}
	n = strlen(buf);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	else if (!feof(stdin)) {
		fprintf(stderr, "sluice: password longer than %zu bytes\n", cap - 2);
		return -1;
	}
	if (n > 0 && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (n == 0) {
		fprintf(stderr, "sluice: empty password\n");
		return -1;
	}
	return 0;
}

int admin_verb_name(int argc, char **argv, const char *const *verbs,
                    const char *usage, const char **verb, const char **name)
{
	if (argc - optind == 2)
		for (size_t i = 0; verbs[i] != NULL; i++)
			if (strcmp(argv[optind], verbs[i]) == 0) {
				*verb = argv[optind];
				*name = argv[optind + 1];
				return 0;
			}
	fputs(usage, stderr);
	return EXIT_USAGE;
}
