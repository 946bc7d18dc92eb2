/* token.c - `sluice token`: mint an HS256 JWT for a customer. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "auth/identity.h"
#include "auth/jwt.h"
#include "db/db.h"
#include "util/config.h"
#include "util/str.h"
#include "util/timeutil.h"

#define TOKEN_TTL_DEFAULT 3600
#define TOKEN_TTL_MAX (366LL * 24 * 3600)

static const char usage[] =
	"usage: sluice token --customer NAME|ID [--sub EMAIL] [--permissions P1,P2]\n"
	"                    [--ttl SECONDS] [-c FILE]\n"
	"       sluice token --customer-id ID --customer-name NAME [--sub EMAIL]\n"
	"                    [--permissions P1,P2] [--ttl SECONDS] [-c FILE]\n"
	"Print a signed token.  --customer looks the customer up in the database;\n"
	"--customer-id with --customer-name signs without asking it (the customer\n"
	"row is created on its first write).  Permissions: PLATFORM.READ,\n"
	"PLATFORM.WRITE, STORAGE_EXPLORER.READ, STORAGE_EXPLORER.WRITE.  The ttl\n"
	"defaults to 3600 s, at most a year.\n";

static const char *const known_permissions[] = {
	"PLATFORM.READ", "PLATFORM.WRITE",
	"STORAGE_EXPLORER.READ", "STORAGE_EXPLORER.WRITE",
};

static int permission_known(const char *p)
{
	for (size_t i = 0; i < sizeof known_permissions / sizeof *known_permissions; i++)
		if (strcmp(p, known_permissions[i]) == 0)
			return 1;
	return 0;
}

static int split_permissions(const char *list, struct jwt_claims *c)
{
	const char *p = list;

	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		if (n > 0) {
			if (c->npermissions == JWT_MAX_PERMISSIONS ||
			    n >= JWT_MAX_FIELD)
				return -1;
			memcpy(c->permissions[c->npermissions], p, n);
			c->permissions[c->npermissions][n] = '\0';
			if (!permission_known(c->permissions[c->npermissions])) {
				fprintf(stderr, "sluice: unknown permission '%s'\n",
				        c->permissions[c->npermissions]);
				return -1;
			}
			c->npermissions++;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

int admin_token(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "customer", required_argument, NULL, 'C' },
		{ "customer-id", required_argument, NULL, 'I' },
		{ "customer-name", required_argument, NULL, 'N' },
		{ "sub", required_argument, NULL, 's' },
		{ "permissions", required_argument, NULL, 'p' },
		{ "ttl", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct jwt_claims claims;
	const char *conf = NULL, *customer = NULL, *sub = "sluice-admin";
	const char *customer_id = NULL, *customer_name = NULL;
	const char *perms = "";
	long long ttl = TOKEN_TTL_DEFAULT, now;
	struct config cfg;
	struct db *db = NULL;
	struct db_stmt *st;
	char err[512], *token;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 'C': customer = optarg; break;
		case 'I': customer_id = optarg; break;
		case 'N': customer_name = optarg; break;
		case 's': sub = optarg; break;
		case 'p': perms = optarg; break;
		case 't':
			if (str_to_ll(optarg, 1, TOKEN_TTL_MAX, &ttl) != 0) {
				fprintf(stderr, "sluice: --ttl must be 1..%lld seconds\n",
				        TOKEN_TTL_MAX);
				return EXIT_USAGE;
			}
			break;
		case 'h': fputs(usage, stdout); return 0;
		default:  fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	/* Either a lookup (--customer) or both claims given outright. */
	if (optind != argc ||
	    (customer != NULL) == (customer_id != NULL || customer_name != NULL) ||
	    (customer == NULL && (customer_id == NULL || customer_name == NULL))) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (str_copy(claims.sub, sizeof claims.sub, sub) != 0 ||
	    split_permissions(perms, &claims) != 0) {
		fprintf(stderr, "sluice: bad --sub or --permissions\n");
		return EXIT_USAGE;
	}
	if ((rc = admin_load_config(conf, &cfg)) != 0)
		return rc;
	if (config_load_jwt_secret(&cfg, err, sizeof err) != 0) {
		fprintf(stderr, "sluice: %s\n", err);
		return EXIT_CONFIG;
	}
	if (customer == NULL) {
		if (!identity_customer_id_ok(customer_id)) {
			fprintf(stderr, "sluice: --customer-id must be 1..%d lower-case "
			        "letters, digits, '-' or '_'\n", IDENTITY_CUSTOMER_ID_MAX);
			explicit_bzero(cfg.jwt_secret, sizeof cfg.jwt_secret);
			return EXIT_USAGE;
		}
		if (customer_id[0] == '\0' || customer_name[0] == '\0' ||
		    str_copy(claims.customer_id, sizeof claims.customer_id,
		             customer_id) != 0 ||
		    str_copy(claims.customer_name, sizeof claims.customer_name,
		             customer_name) != 0) {
			fprintf(stderr, "sluice: --customer-id and --customer-name "
			        "must be non-empty and short enough\n");
			explicit_bzero(cfg.jwt_secret, sizeof cfg.jwt_secret);
			return EXIT_USAGE;
		}
		goto sign;
	}
	if ((db = admin_connect(&cfg)) == NULL)
		return 1;
	st = db_query(db, "SELECT id, name FROM customers WHERE name = ? OR id = ?",
	              "ss", customer, customer);
	rc = st != NULL ? db_fetch(st) : -1;
	if (rc == 1) {
		str_copy(claims.customer_id, sizeof claims.customer_id,
		         db_col_str(st, 0));
		str_copy(claims.customer_name, sizeof claims.customer_name,
		         db_col_str(st, 1));
	}
	db_done(st);
	db_free(db);
	if (rc != 1) {
		fprintf(stderr, "sluice: no customer '%s'\n", customer);
		return 1;
	}

sign:
	now = time_now_s();
	claims.iat = now;
	claims.exp = now + ttl;
	token = jwt_sign(&claims, cfg.jwt_secret, cfg.jwt_secret_len);
	explicit_bzero(cfg.jwt_secret, sizeof cfg.jwt_secret);
	if (token == NULL) {
		fprintf(stderr, "sluice: cannot sign the token\n");
		return 1;
	}
	printf("%s\n", token);
	free(token);
	return 0;
}
