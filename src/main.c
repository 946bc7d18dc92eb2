/* main.c - one binary, one subcommand per job. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "admin/admin.h"
#include "work/work.h"
#include "serve/serve.h"
#include "util/config.h"
#include "util/log.h"

static const char usage[] =
	"usage: sluice COMMAND [options]\n"
	"\n"
	"  serve     run the FastCGI master and its workers\n"
	"  work      run the background process (schedules, runs, ingestion)\n"
	"  migrate   apply pending schema migrations\n"
	"  customer  add or show a customer\n"
	"  user      add a Basic-auth user or change its password\n"
	"  token     mint a JWT for a customer\n"
	"  infer     print the schema inferred from a data file\n"
	"  version   print the version\n"
	"\n"
	"Every command takes -c FILE (default $SLUICE_CONF, else "
	SLUICE_SYSCONFDIR "/sluice.conf)\nand --help.\n";

/* serve and work share their option parsing: only -c. */
static const char *daemon_options(int argc, char **argv, const char *what,
                                  int *status)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf = NULL;
	int ch;

	*status = -1;
	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'h':
			printf("usage: sluice %s [-c FILE]\n", what);
			*status = 0;
			return NULL;
		default:
			fprintf(stderr, "usage: sluice %s [-c FILE]\n", what);
			*status = EXIT_USAGE;
			return NULL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: sluice %s [-c FILE]\n", what);
		*status = EXIT_USAGE;
		return NULL;
	}
	return admin_config_path(conf);
}

static int cmd_serve(int argc, char **argv)
{
	int status;
	const char *conf = daemon_options(argc, argv, "serve", &status);

	return conf == NULL ? status : serve_main(conf);
}

static int cmd_work(int argc, char **argv)
{
	static struct config cfg;
	enum log_level lvl;
	char err[512];
	int status;
	const char *conf = daemon_options(argc, argv, "work", &status);

	if (conf == NULL)
		return status;
	config_defaults(&cfg);
	if (config_load(conf, &cfg, err, sizeof err) != 0) {
		log_kv(LOG_ERROR, "cannot start", "error=%s", LOG_Q(err));
		return EXIT_CONFIG;
	}
	if (log_level_parse(cfg.log_level, &lvl) == 0)
		log_set_level(lvl);
	return work_main(&cfg);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} cmds[] = {
		{ "serve", cmd_serve },
		{ "work", cmd_work },
		{ "migrate", admin_migrate },
		{ "customer", admin_customer },
		{ "user", admin_user },
		{ "token", admin_token },
		{ "infer", admin_infer },
	};

	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("sluice %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "sluice: unknown command '%s'\n\n%s", argv[1], usage);
	return EXIT_USAGE;
}
