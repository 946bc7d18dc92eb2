/* migrate_cmd.c - `sluice migrate`: bring the schema up to date. */
#include <getopt.h>
#include <stdio.h>

#include "admin/admin.h"
#include "db/db.h"
#include "db/migrate.h"
#include "util/config.h"

static const char usage[] =
	"usage: sluice migrate [-c FILE]\n"
	"Apply the numbered sql/NNN_*.sql files not applied yet, in order.\n";

int admin_migrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf = NULL;
	struct config cfg;
	struct db *db;
	char err[512];
	int ch, applied = 0, rc;

	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:  fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if ((rc = admin_load_config(conf, &cfg)) != 0)
		return rc;
	if (config_use_migrate_account(&cfg, err, sizeof err) != 0) {
		fprintf(stderr, "sluice: %s\n", err);
		return EXIT_CONFIG;
	}
	if ((db = admin_connect(&cfg)) == NULL)
		return 1;
	rc = migrate_run(db, cfg.sql_dir, &applied, err, sizeof err);
	db_free(db);
	if (rc != 0) {
		fprintf(stderr, "sluice: migrate: %s\n", err);
		return 1;
	}
	printf("applied %d migration(s)\n", applied);
	return 0;
}
