/* customer.c - `sluice customer add NAME`: the tenants tokens are minted for. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "admin/admin.h"
#include "db/db.h"
#include "util/config.h"
#include "util/uuid.h"

#define CUSTOMER_NAME_MAX 255

static const char usage[] =
	"usage: sluice customer add NAME [--if-missing] [-c FILE]\n"
	"       sluice customer show NAME [-c FILE]\n"
	"add prints the new customer's id; with --if-missing an existing\n"
	"customer is not an error and its id is printed.\n";

/* Print the id of customer name; 1 printed, 0 unknown, < 0 error. */
static int show(struct db *db, const char *name)
{
	struct db_stmt *st = db_query(db,
	    "SELECT id FROM customers WHERE name = ?", "s", name);
	int rc;

	if (st == NULL)
		return -1;
	if ((rc = db_fetch(st)) == 1)
		printf("%s\n", db_col_str(st, 0));
	db_done(st);
	return rc;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CUSTOMER_NAME_MAX)
		return false;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

int admin_customer(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "if-missing", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const verbs[] = { "add", "show", NULL };
	const char *conf = NULL, *verb, *name;
	bool if_missing = false;
	char id[UUID_STR_LEN];
	struct config cfg;
	struct db *db = NULL;
	long long n;
	int ch, rc = 1;

	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 'm': if_missing = true; break;
		case 'h': fputs(usage, stdout); return 0;
		default:  fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (admin_verb_name(argc, argv, verbs, usage, &verb, &name) != 0)
		return EXIT_USAGE;
	if (!name_ok(name)) {
		fprintf(stderr, "sluice: customer name must be 1..%d printable "
		        "characters\n", CUSTOMER_NAME_MAX);
		return EXIT_USAGE;
	}
	if ((rc = admin_load_config(conf, &cfg)) != 0)
		return rc;
	if ((db = admin_connect(&cfg)) == NULL)
		return 1;

	if (strcmp(verb, "show") == 0) {
		rc = show(db, name);
		if (rc == 0)
			fprintf(stderr, "sluice: no customer named '%s'\n", name);
		rc = rc == 1 ? 0 : 1;
		goto out;
	}
	if (uuid_v4(id, '-') != 0) {
		fprintf(stderr, "sluice: no randomness available\n");
		rc = 1;
		goto out;
	}
	n = db_exec(db, "INSERT INTO customers (id, name) VALUES (?, ?)",
	            "ss", id, name);
	if (n == DB_ERR_DUPLICATE && if_missing) {
		rc = show(db, name) == 1 ? 0 : 1;
	} else if (n == DB_ERR_DUPLICATE) {
		fprintf(stderr, "sluice: customer '%s' exists\n", name);
		rc = 1;
	} else if (n < 0) {
		fprintf(stderr, "sluice: %s\n", db_error(db));
		rc = 1;
	} else {
		printf("%s\n", id);
		rc = 0;
	}
out:
	db_free(db);
	return rc;
}
