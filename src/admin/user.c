/* user.c - `sluice user add|passwd NAME`: HTTP Basic credentials.
 *
 * The password is read from standard input, never from the command line
 * (where `ps` and shell history would show it), and stored as a salted
 * PBKDF2-HMAC-SHA256 hash. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "auth/basic.h"
#include "auth/identity.h"
#include "db/db.h"
#include "util/config.h"

static const char usage[] =
	"usage: sluice user add NAME [--customer CUSTOMER] [--if-missing] [-c FILE]\n"
	"       sluice user passwd NAME [-c FILE]\n"
	"The password is the first line of standard input.\n";

int admin_user(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "customer", required_argument, NULL, 'C' },
		{ "if-missing", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const verbs[] = { "add", "passwd", NULL };
	const char *conf = NULL, *customer = NULL, *verb, *name;
	char password[BASIC_MAX_PASSWORD + 2];
	char *customer_id = NULL, *hash = NULL;
	bool if_missing = false;
	struct config cfg;
	struct db *db = NULL;
	long long n;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 'C': customer = optarg; break;
		case 'm': if_missing = true; break;
		case 'h': fputs(usage, stdout); return 0;
		default:  fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (admin_verb_name(argc, argv, verbs, usage, &verb, &name) != 0)
		return EXIT_USAGE;
	if (!identity_user_name_ok(name)) {
		fprintf(stderr, "sluice: user name must be 1..%d characters without "
		        "spaces or ':'\n", BASIC_MAX_USER);
		return EXIT_USAGE;
	}
	if ((rc = admin_load_config(conf, &cfg)) != 0)
		return rc;
	if (admin_read_secret(password, sizeof password) != 0)
		return 1;
	rc = 1;
	if ((db = admin_connect(&cfg)) == NULL)
		goto out;

	if (customer != NULL) {
		struct db_stmt *st = db_query(db,
		    "SELECT id FROM customers WHERE name = ? OR id = ?",
		    "ss", customer, customer);

		if (st != NULL && db_fetch(st) == 1)
			customer_id = strdup(db_col_str(st, 0));
		db_done(st);
		if (customer_id == NULL) {
			fprintf(stderr, "sluice: no customer '%s'\n", customer);
			goto out;
		}
	}
	if ((hash = basic_password_hash(password,
	                                (unsigned)cfg.pbkdf2_iterations)) == NULL) {
		fprintf(stderr, "sluice: cannot hash the password\n");
		goto out;
	}

	if (strcmp(verb, "passwd") == 0) {
		n = db_exec(db, "UPDATE api_users SET password_hash = ? "
		                "WHERE name = ?", "ss", hash, name);
		if (n == 0)
			fprintf(stderr, "sluice: no user '%s'\n", name);
	} else {
		n = db_exec(db, "INSERT INTO api_users (name, password_hash, "
		                "customer_id) VALUES (?, ?, ?)",
		            "sss", name, hash, customer_id);
		if (n == DB_ERR_DUPLICATE && if_missing)
			n = 1;
		else if (n == DB_ERR_DUPLICATE)
			fprintf(stderr, "sluice: user '%s' exists\n", name);
	}
	if (n < 0 && n != DB_ERR_DUPLICATE)
		fprintf(stderr, "sluice: %s\n", db_error(db));
	rc = n > 0 ? 0 : 1;
out:
	explicit_bzero(password, sizeof password);
	free(hash);
	free(customer_id);
	db_free(db);
	return rc;
}
