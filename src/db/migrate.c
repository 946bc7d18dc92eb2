/* migrate.c - apply sql/NNN_*.sql once each, in order. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "db/db.h"
#include "db/migrate.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MIGRATION_MAX_BYTES (16L * 1024 * 1024)

static const char SQL_TABLE[] =
	"CREATE TABLE IF NOT EXISTS schema_migrations ("
	" version INT UNSIGNED NOT NULL PRIMARY KEY,"
	" name VARCHAR(255) NOT NULL,"
	" checksum CHAR(64) NOT NULL,"
	" applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";
/* The migrators' lock is a row, not GET_LOCK: GET_LOCK is per server, so
 * on a Galera cluster two migrates on two nodes would both hold it.  Two
 * inserts of the row conflict on every node (a duplicate key, or a
 * certification failure).  The holder names its database session
 * ("user/host:port:boot/connection process"), so a migrate killed mid-way
 * is seen gone at once by the next one on the same server: its connection
 * is no longer in the processlist, or the server has restarted since.  A
 * holder on another node (whose processlist this one cannot see) is taken
 * over once MIGRATE_LOCK_STALE_S old; a migrate renews it after each
 * file. */
#define MIGRATE_LOCK_WAIT_S 60
#define MIGRATE_LOCK_STALE_S 3600
#define MIGRATE_LOCK_POLL_MS 250
static const char SQL_LOCK_TABLE[] =
	"CREATE TABLE IF NOT EXISTS schema_migrations_lock ("
	" id TINYINT UNSIGNED NOT NULL PRIMARY KEY,"
	" holder VARCHAR(160) NOT NULL,"
	" taken_at DATETIME(3) NOT NULL"
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";
static const char SQL_LOCK[] =
	"INSERT INTO schema_migrations_lock (id, holder, taken_at) "
	"VALUES (1, ?, UTC_TIMESTAMP(3))";
static const char SQL_LOCK_STALE[] =
	"UPDATE schema_migrations_lock SET holder = ?, taken_at = UTC_TIMESTAMP(3) "
	"WHERE id = 1 AND taken_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND";
static const char SQL_LOCK_RENEW[] =
	"UPDATE schema_migrations_lock SET taken_at = UTC_TIMESTAMP(3) "
	"WHERE id = 1 AND holder = ?";
static const char SQL_UNLOCK[] =
	"DELETE FROM schema_migrations_lock WHERE id = 1 AND holder = ?";
/* This session as the lock names it, then the process. */
static const char SQL_SESSION[] =
	"SELECT CONCAT(CURRENT_USER(), '/', @@hostname, ':', @@port, ':', "
	"UNIX_TIMESTAMP() - VARIABLE_VALUE, '/', CONNECTION_ID(), ' ', ?) "
	"FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'";
static const char SQL_SESSION_ALIVE[] =
	"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?";
static const char SQL_LOCK_TAKE_OVER[] =
	"UPDATE schema_migrations_lock SET holder = ?, taken_at = UTC_TIMESTAMP(3) "
	"WHERE id = 1 AND holder = ?";
static const char SQL_LOCK_HOLDER[] =
	"SELECT holder, " DB_ISO_MS("taken_at") " FROM schema_migrations_lock WHERE id = 1";
static const char SQL_APPLIED[] =
	"SELECT checksum FROM schema_migrations WHERE version = ?";
static const char SQL_RECORD[] =
	"INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)";

/* "001_init.sql" -> 1; anything else -> -1 (and is ignored). */
static long migration_version(const char *name)
{
	size_t n = strlen(name);
	long v = 0;
	size_t i;

	if (n < 9 || strcmp(name + n - 4, ".sql") != 0)
		return -1;
	for (i = 0; i < 3; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	if (name[3] != '_')
		return -1;
	for (i = 4; i < n - 4; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			return -1;
	return v;
}

static int filter(const struct dirent *d)
{
	return migration_version(d->d_name) >= 0;
}

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf = NULL;

	if (f == NULL || fstat(fileno(f), &st) != 0) {
		snprintf(err, errlen, "%s: cannot read", path);
		goto out;
	}
	if (st.st_size > MIGRATION_MAX_BYTES) {
		snprintf(err, errlen, "%s: larger than %ld bytes", path,
		         MIGRATION_MAX_BYTES);
		goto out;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL ||
	    fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		snprintf(err, errlen, "%s: cannot read", path);
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
out:
	if (f != NULL)
		fclose(f);
	return buf;
}

static void sha256_hex(const char *data, size_t len, char hex[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* 1 when applied with the same checksum, 0 when not applied, -1 on error. */
static int applied_state(struct db *db, long version, const char *sum,
                         const char *name, char *err, size_t errlen)
{
	struct db_stmt *st = db_query(db, SQL_APPLIED, "i", (long long)version);
	int rc;

	if (st == NULL) {
		snprintf(err, errlen, "reading schema_migrations: %s", db_error(db));
		return -1;
	}
	rc = db_fetch(st);
	if (rc == 1 && strcmp(db_col_str(st, 0), sum) != 0) {
		snprintf(err, errlen, "%s was changed after it was applied; "
		         "add a new migration instead", name);
		rc = -1;
	} else if (rc < 0) {
		snprintf(err, errlen, "reading schema_migrations: %s", db_error(db));
	}
	db_done(st);
	return rc;
}

static int apply_one(struct db *db, const char *dir, const char *name,
                     long version, int *applied, char *err, size_t errlen)
{
	char path[4096], sum[65];
	size_t len = 0;
	char *sql;
	int rc = -1;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((sql = read_file(path, &len, err, errlen)) == NULL)
		return -1;
	sha256_hex(sql, len, sum);
	switch (applied_state(db, version, sum, name, err, errlen)) {
	case 1:
		rc = 0;
		goto out;
	case 0:
		break;
	default:
		goto out;
	}
	log_kv(LOG_INFO, "applying migration", "file=%s", name);
	if (db_exec_script(db, sql, len) != DB_OK) {
		snprintf(err, errlen, "%s: %s", name, db_error(db));
		goto out;
	}
	if (db_exec(db, SQL_RECORD, "iss", (long long)version, name, sum) < 0) {
		snprintf(err, errlen, "recording %s: %s", name, db_error(db));
		goto out;
	}
	(*applied)++;
	rc = 0;
out:
	free(sql);
	return rc;
}

/* A holder's session: "user/host:port:boot/connection ...". */
struct session {
	char user[161], server[161];
	long long boot;
	unsigned long long conn;
};

static bool session_parse(const char *s, struct session *out)
{
	char *colon;

	if (sscanf(s, "%160[^/]/%160[^/]/%llu", out->user, out->server, &out->conn) != 3 ||
	    (colon = strrchr(out->server, ':')) == NULL)
		return false;
	out->boot = atoll(colon + 1);
	*colon = '\0';                  /* server: "host:port" */
	return true;
}

/* Is the lock's holder a session of this server, of our account, that is
 * gone?  Only then can its absence be seen here. */
static bool holder_gone(struct db *db, const char *me, const char *holder)
{
	struct session m, h;
	char alive[24] = "";

	if (!session_parse(me, &m) || !session_parse(holder, &h) ||
	    strcmp(m.user, h.user) != 0 || strcmp(m.server, h.server) != 0)
		return false;
	if (llabs(m.boot - h.boot) > 2)
		return true;             /* the server restarted since */
	return db_first_row(db, db_query(db, SQL_SESSION_ALIVE, "i", (long long)h.conn),
	                    &(struct db_text){ alive, sizeof alive }, 1) == 1 &&
	       strcmp(alive, "0") == 0;
}

/* One try at the lock: 1 taken, 0 held by another, < 0 enum db_err. */
static int lock_try(struct db *db, const char *me)
{
	char holder[161] = "";
	long long n = db_exec(db, SQL_LOCK, "s", me);

	if (n != DB_ERR_DUPLICATE && n != DB_ERR_DEADLOCK)
		return n < 0 ? (int)n : n > 0;
	if (db_first_row(db, db_query(db, SQL_LOCK_HOLDER, ""),
	                 &(struct db_text){ holder, sizeof holder }, 1) == 1 &&
	    holder_gone(db, me, holder) &&
	    (n = db_exec(db, SQL_LOCK_TAKE_OVER, "ss", me, holder)) > 0) {
		log_kv(LOG_WARN, "took over the migration lock of a session that is gone",
		       "holder=%s", LOG_Q(holder));
		return 1;
	}
	n = db_exec(db, SQL_LOCK_STALE, "si", me, (long long)MIGRATE_LOCK_STALE_S);
	if (n > 0)
		log_kv(LOG_WARN, "took over a stale migration lock", "holder=%s", LOG_Q(holder));
	if (n == DB_ERR_DEADLOCK)
		n = 0;
	return n < 0 ? (int)n : n > 0;
}

/* The lock, waiting up to MIGRATE_LOCK_WAIT_S for another migrate to
 * finish.  0, or -1 with err naming the holder. */
static int lock_take(struct db *db, const char *me, char *err, size_t errlen)
{
	double until = time_mono_ms() + MIGRATE_LOCK_WAIT_S * 1000.0;
	struct timespec pause = { 0, MIGRATE_LOCK_POLL_MS * 1000000L };
	char holder[160] = "", since[40] = "";
	const struct db_text row[] = {
		{ holder, sizeof holder }, { since, sizeof since },
	};
	int rc;

	while ((rc = lock_try(db, me)) == 0 && time_mono_ms() < until)
		nanosleep(&pause, NULL);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		snprintf(err, errlen, "taking the migration lock: %s", db_error(db));
		return -1;
	}
	db_first_row(db, db_query(db, SQL_LOCK_HOLDER, ""), row, 2);
	snprintf(err, errlen, "another migration holds the lock (%s since %s); if "
	         "none runs, DELETE FROM schema_migrations_lock", holder, since);
	return -1;
}

int migrate_run(struct db *db, const char *dir, int *applied,
                char *err, size_t errlen)
{
	struct dirent **list = NULL;
	char host[100] = "", proc[128], me[161] = "";
	long prev = -1;
	int n = 0, i, rc = -1;

	*applied = 0;
	if (db_exec_script(db, SQL_TABLE, sizeof SQL_TABLE - 1) != DB_OK ||
	    db_exec_script(db, SQL_LOCK_TABLE, sizeof SQL_LOCK_TABLE - 1) != DB_OK) {
		snprintf(err, errlen, "creating schema_migrations: %s", db_error(db));
		return -1;
	}
	gethostname(host, sizeof host - 1);
	snprintf(proc, sizeof proc, "%s:%ld", host, (long)getpid());
	if (db_first_row(db, db_query(db, SQL_SESSION, "s", proc),
	                 &(struct db_text){ me, sizeof me }, 1) != 1) {
		snprintf(err, errlen, "naming this session: %s", db_error(db));
		return -1;
	}
	if (lock_take(db, me, err, errlen) != 0)
		return -1;

	if ((n = scandir(dir, &list, filter, alphasort)) < 0) {
		snprintf(err, errlen, "%s: cannot list migrations", dir);
		goto out;
	}
	for (i = 0; i < n; i++) {
		long v = migration_version(list[i]->d_name);

		if (v == prev) {
			snprintf(err, errlen, "two migrations numbered %03ld", v);
			goto out;
		}
		prev = v;
		if (apply_one(db, dir, list[i]->d_name, v, applied, err, errlen) != 0)
			goto out;
		if (db_exec(db, SQL_LOCK_RENEW, "s", me) <= 0) {
			snprintf(err, errlen, "lost the migration lock: %s", db_error(db));
			goto out;
		}
	}
	rc = 0;
out:
	if (list != NULL) {
		for (i = 0; i < n; i++)
			free(list[i]);
		free(list);
	}
	db_exec(db, SQL_UNLOCK, "s", me);
	return rc;
}
