/* connection_check.c - POST /platform/connections/{connection_id}/test:
 * does the stored connection reach its source?
 *
 * The worker itself connects, so the wait is bounded twice: every step of
 * the connect (TCP, the server's greeting, the login) gives up after
 * connection_test_timeout_s, and at most a quarter of the workers test at
 * once (http/pool.h; past it 429), so hosts that never answer cannot take
 * the pool.  Before it waits, the worker hands the other FastCGI
 * connections it holds to idle workers (req_before_slow_work): requests
 * nginx sends on them meanwhile are not held behind the test.  The clients
 * are the jdbc drivers' own: MariaDB Connector/C for mariadb and mysql,
 * libpq for postgres.  The password is opened into a stack buffer, wiped
 * after the connect, and no answer or log line carries it: a server message
 * that happens to contain it is not passed on. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <errmsg.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/pool.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/dbkind.h"
#include "platform/platform.h"
#include "util/aead.h"
#include "util/config.h"
#include "util/uuid.h"

#define CHECK_PASSWORD_MAX 1024         /* as connections.c accepts */
#define CHECK_MSG_MAX 512

struct source {
	char plugin[64], host[256], database[256], user[256];
	char password[CHECK_PASSWORD_MAX + 1];
	int port;
	unsigned timeout;                   /* seconds, each step */
};

/* What a try found: PLATFORM_SOURCE_* and the client's message, or ok with
 * the server's version. */
struct outcome {
	bool ok;
	enum platform_err err;
	char text[CHECK_MSG_MAX];
};

/* The message of a refusal: "cannot connect to <what> at host:port" and
 * the client library's own words (one line), unless those hold the
 * password. */
static void outcome_fail(struct outcome *o, enum platform_err err,
                         const struct source *s, const char *what,
                         const char *client_msg)
{
	const char *password = s->password;
	char msg[CHECK_MSG_MAX - 320];
	size_t n;

	o->ok = false;
	o->err = err;
	snprintf(msg, sizeof msg, "%s", client_msg != NULL ? client_msg : "");
	for (char *p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == ' ')
		msg[--n] = '\0';
	if (n == 0 || (password[0] != '\0' && strstr(msg, password) != NULL))
		snprintf(o->text, sizeof o->text, "cannot connect to %s at %.255s:%d",
		         what, s->host, s->port);
	else
		snprintf(o->text, sizeof o->text, "cannot connect to %s at %.255s:%d: %s",
		         what, s->host, s->port, msg);
}

/* --- MariaDB and MySQL ------------------------------------------------------ */

static enum platform_err mariadb_err(unsigned code, const char *msg)
{
	bool timed_out = strstr(msg, "(110)") != NULL || strstr(msg, "timed out") != NULL ||
	                 strstr(msg, "timeout") != NULL || strstr(msg, "errno 110") != NULL;

	switch (code) {
	case ER_ACCESS_DENIED_ERROR:
	case ER_DBACCESS_DENIED_ERROR:
	case 1698:                          /* ER_ACCESS_DENIED_NO_PASSWORD_ERROR */
		return PLATFORM_SOURCE_AUTH_REFUSED;
	case ER_BAD_DB_ERROR:
		return PLATFORM_SOURCE_DATABASE_UNKNOWN;
	case CR_UNKNOWN_HOST:
		return PLATFORM_SOURCE_HOST_UNKNOWN;
	case CR_SERVER_LOST:                /* no greeting within the read timeout */
		return timed_out || strstr(msg, "handshake") != NULL
		       ? PLATFORM_SOURCE_TIMEOUT : PLATFORM_SOURCE_UNREACHABLE;
	case CR_CONN_HOST_ERROR:
	case CR_CONNECTION_ERROR:
	case CR_SERVER_GONE_ERROR:
		return timed_out ? PLATFORM_SOURCE_TIMEOUT : PLATFORM_SOURCE_UNREACHABLE;
	default:
		return PLATFORM_SOURCE_FAILED;
	}
}

static void try_mariadb(const struct source *s, struct outcome *o)
{
	unsigned proto = MYSQL_PROTOCOL_TCP, t = s->timeout;
	MYSQL *m = mysql_init(NULL);

	if (m == NULL) {
		outcome_fail(o, PLATFORM_SOURCE_FAILED, s, "the source", "out of memory");
		return;
	}
	/* Always TCP, as the runner connects ("localhost" too). */
	mysql_options(m, MYSQL_OPT_PROTOCOL, &proto);
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &t);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &t);
	mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &t);
	if (mysql_real_connect(m, s->host, s->user, s->password, s->database,
	                       (unsigned)s->port, NULL, 0) == NULL) {
		outcome_fail(o, mariadb_err(mysql_errno(m), mysql_error(m)), s,
		             "MariaDB", mysql_error(m));
	} else {
		o->ok = true;
		snprintf(o->text, sizeof o->text, "%s", mysql_get_server_info(m));
	}
	mysql_close(m);
}

/* --- PostgreSQL ---------------------------------------------------------------- */

/* libpq has no error codes before a session exists: its messages are
 * stable English (the server's come in the client's lc_messages, which
 * the runner leaves at the default). */
static enum platform_err postgres_err(const char *msg)
{
	static const struct {
		const char *needle;
		enum platform_err err;
	} map[] = {
		{ "timeout expired", PLATFORM_SOURCE_TIMEOUT },
		{ "authentication failed", PLATFORM_SOURCE_AUTH_REFUSED },
		{ "no pg_hba.conf entry", PLATFORM_SOURCE_AUTH_REFUSED },
		{ "no password supplied", PLATFORM_SOURCE_AUTH_REFUSED },
		{ "role \"", PLATFORM_SOURCE_AUTH_REFUSED },
		{ "database \"", PLATFORM_SOURCE_DATABASE_UNKNOWN },
		{ "could not translate host name", PLATFORM_SOURCE_HOST_UNKNOWN },
		{ "Connection refused", PLATFORM_SOURCE_UNREACHABLE },
		{ "No route to host", PLATFORM_SOURCE_UNREACHABLE },
		{ "Network is unreachable", PLATFORM_SOURCE_UNREACHABLE },
		{ "server closed the connection", PLATFORM_SOURCE_UNREACHABLE },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strstr(msg, map[i].needle) != NULL)
			return map[i].err;
	return PLATFORM_SOURCE_FAILED;
}

static void try_postgres(const struct source *s, struct outcome *o)
{
	char port[16], timeout[16];
	const char *keys[] = { "host", "port", "dbname", "user", "password",
	                       "connect_timeout", "application_name", NULL };
	const char *vals[] = { s->host, port, s->database, s->user, s->password,
	                       timeout, "sluice", NULL };
	PGconn *c;

	snprintf(port, sizeof port, "%d", s->port);
	snprintf(timeout, sizeof timeout, "%u", s->timeout);
	/* expand_dbname 0: a database name is a name, never a conninfo. */
	c = PQconnectdbParams(keys, vals, 0);
	if (c == NULL) {
		outcome_fail(o, PLATFORM_SOURCE_FAILED, s, "the source", "out of memory");
		return;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		outcome_fail(o, postgres_err(PQerrorMessage(c)), s,
		             "PostgreSQL", PQerrorMessage(c));
	} else {
		const char *v = PQparameterStatus(c, "server_version");

		o->ok = true;
		snprintf(o->text, sizeof o->text, "%s", v != NULL ? v : "");
	}
	PQfinish(c);
}

/* --- the handler --------------------------------------------------------------- */

/* The caller's connection with its password opened into s: 0, or -1 after
 * answering (404 for an unknown id or another customer's). */
static int source_load_or_reply(struct req *r, const char *id, struct source *s)
{
	unsigned char sealed[CHECK_PASSWORD_MAX + AEAD_OVERHEAD];
	struct db_stmt *st;
	size_t n;
	int rc;

	st = db_query(r->db, "SELECT plugin, host, port, database_name, user_name,"
	              " password_enc FROM connections WHERE id = ? AND customer_id = ?",
	              "ss", id, r->id.customer_id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	if ((rc = db_fetch(st)) <= 0) {
		db_done(st);
		return rc < 0 ? resp_db_error(r, db_last_err(r->db))
		              : platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND);
	}
	snprintf(s->plugin, sizeof s->plugin, "%s", db_col_str(st, 0));
	snprintf(s->host, sizeof s->host, "%s", db_col_str(st, 1));
	s->port = (int)db_col_ll(st, 2);
	snprintf(s->database, sizeof s->database, "%s", db_col_str(st, 3));
	snprintf(s->user, sizeof s->user, "%s", db_col_str(st, 4));
	n = db_col_len(st, 5);
	if (n >= AEAD_OVERHEAD && n <= sizeof sealed)
		memcpy(sealed, db_col_str(st, 5), n);
	db_done(st);
	if (n < AEAD_OVERHEAD || n > sizeof sealed ||
	    aead_open(r->cfg->connection_key, id, strlen(id), sealed, n,
	              (unsigned char *)s->password) != 0)
		return resp_internal(r, "the stored password does not open");
	s->password[n - AEAD_OVERHEAD] = '\0';
	return 0;
}

/* At most this many workers wait on a source at once. */
static int check_slots(const struct config *cfg)
{
	int n = config_worker_count(cfg) / 4;

	return n > 0 ? n : 1;
}

static int conn_check(struct req *r)
{
	struct source s = { .timeout = 0 };
	struct outcome o = { .ok = false };
	char id[UUID_STR_LEN];
	struct json_object *out;
	enum dbkind kind;

	if (platform_connection_ref_or_reply(r, id) != 0)
		return -1;
	if (!r->cfg->connection_key_loaded)
		return resp_internal(r, "connection key not loaded");
	if (req_db_or_reply(r) == NULL)
		return -1;
	if (source_load_or_reply(r, id, &s) != 0)
		return -1;
	s.timeout = (unsigned)r->cfg->connection_test_timeout_s;
	kind = dbkind_of_plugin(s.plugin);
	if (kind != DBKIND_A && kind != DBKIND_B) {
		explicit_bzero(s.password, sizeof s.password);
		snprintf(o.text, sizeof o.text, "driver not available: %s, so the "
		         "connection cannot be tested", s.plugin);
		return platform_reply_text(r, PLATFORM_SOURCE_NO_DRIVER, o.text);
	}
	if (!pool_take(POOL_CONNECTION_TESTS, check_slots(r->cfg))) {
		explicit_bzero(s.password, sizeof s.password);
		return platform_reply(r, PLATFORM_CONNECTION_TESTS_BUSY);
	}
	req_before_slow_work(r);        /* seconds, on a host that never answers */
	if (kind == DBKIND_B)
		try_mariadb(&s, &o);
	else
		try_postgres(&s, &o);
	pool_give(POOL_CONNECTION_TESTS);
	explicit_bzero(s.password, sizeof s.password);
	if (!o.ok)
		return platform_reply_text(r, o.err, o.text);
	out = json_object_new_object();
	json_object_object_add(out, "connection_id", json_object_new_string(id));
	json_object_object_add(out, "status", json_object_new_string("CONNECTED"));
	json_object_object_add(out, "plugin", json_object_new_string(s.plugin));
	json_object_object_add(out, "server_version", json_object_new_string(o.text));
	return resp_json(r, 200, out);
}

const struct route platform_connection_check_routes[] = {
	{ "POST", "/platform/connections/{connection_id}/test", conn_check,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
