/* test_db.c - the statement cache of db.c against a real MariaDB: the one
 * of the test stack, whose config file scripts/dev exports as SLUICE_CONF.
 * Without it (a bare `make check`) the suite is reported skipped.
 *
 * What the cache does is read from the server's own session counters:
 * Com_stmt_prepare (statements prepared on this connection) and
 * Com_stmt_close (statements closed, as an eviction does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include "suites.h"
#include "db/db.h"
#include "util/config.h"

static struct config cfg;

static const char COUNTERS_SQL[] =
	"SHOW SESSION STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_close')";

struct counters {
	long long prepares, closes;
};

/* The session's counters, read through the cache itself (so reading them
 * prepares once, the first time, or again after an eviction). */
static int counters(struct db *db, struct counters *c)
{
	struct db_stmt *st = db_query(db, COUNTERS_SQL, "");
	int rc, n = 0;

	if (st == NULL)
		return -1;
	*c = (struct counters){ -1, -1 };
	while ((rc = db_fetch(st)) == 1) {
		if (strcmp(db_col_str(st, 0), "Com_stmt_prepare") == 0)
			c->prepares = db_col_ll(st, 1), n++;
		else if (strcmp(db_col_str(st, 0), "Com_stmt_close") == 0)
			c->closes = db_col_ll(st, 1), n++;
	}
	db_done(st);
	return rc == 0 && n == 2 ? 0 : -1;
}

/* The one value of a query of one column and one row (-1 on error). */
static long long one_value(struct db *db, const char *sql, const char *types, long long arg)
{
	struct db_stmt *st = types[0] != '\0' ? db_query(db, sql, types, arg)
	                                      : db_query(db, sql, "");
	long long v = -1;

	if (st == NULL)
		return -1;
	if (db_fetch(st) == 1)
		v = db_col_ll(st, 0);
	db_done(st);
	return v;
}

/* The API tests run beside this suite and stop MariaDB for a while
 * (04-db-outage.t): wait for it, up to a minute, polling. */
static struct db *connect_db(void)
{
	struct db *db = db_new(&cfg);
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	int rc, tries = 300;

	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	while ((rc = db_ensure(db)) != DB_OK && --tries > 0)
		nanosleep(&pause, NULL);
	CU_ASSERT_EQUAL_FATAL(rc, DB_OK);
	return db;
}

/* The same text from two buffers (the first overwritten in between, as a
 * caller's stack buffer would be) is one statement; other text at the
 * same address is another. */
static void test_key_is_the_text(void)
{
	struct db *db = connect_db();
	struct counters c0, c1, c2, c3;
	char a[64], b[64];

	CU_ASSERT_EQUAL_FATAL(counters(db, &c0), 0);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c0), 0);       /* now cached */

	snprintf(a, sizeof a, "SELECT ? + 1");
	CU_ASSERT_EQUAL(one_value(db, a, "i", 41), 42);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c1), 0);
	CU_ASSERT_EQUAL(c1.prepares, c0.prepares + 1);

	memset(a, 'x', sizeof a - 1);                    /* the old key's bytes gone */
	a[sizeof a - 1] = '\0';
	snprintf(b, sizeof b, "SELECT ? + 1");
	CU_ASSERT_EQUAL(one_value(db, b, "i", 1), 2);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c2), 0);
	CU_ASSERT_EQUAL(c2.prepares, c1.prepares);         /* reused */

	snprintf(b, sizeof b, "SELECT ? * 2");              /* same pointer, new text */
	CU_ASSERT_EQUAL(one_value(db, b, "i", 21), 42);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c3), 0);
	CU_ASSERT_EQUAL(c3.prepares, c2.prepares + 1);
	snprintf(b, sizeof b, "SELECT ? + 1");              /* and back: still cached */
	CU_ASSERT_EQUAL(one_value(db, b, "i", 9), 10);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c3), 0);
	CU_ASSERT_EQUAL(c3.prepares, c2.prepares + 1);
	CU_ASSERT_EQUAL(c3.closes, c0.closes);
	db_free(db);
}

/* Killed by the server (KILL from a second connection): the next query
 * finds the connection dead before sending, so db.c reconnects, prepares
 * again and answers right; the caller sees no error. */
static void test_survives_kill(void)
{
	struct db *db = connect_db(), *killer = connect_db();
	long long id, left = 1, v;
	struct counters c;

	CU_ASSERT_EQUAL(one_value(db, "SELECT ? + 1", "i", 1), 2);
	id = one_value(db, "SELECT CONNECTION_ID()", "", 0);
	CU_ASSERT_FATAL(id > 0);
	CU_ASSERT_EQUAL(db_exec(killer, "KILL CONNECTION ?", "i", id), 0);
	/* KILL returns before the session is gone: poll until it is (10 s) */
	for (int i = 0; i < 1000 && left != 0; i++) {
		left = one_value(killer,
		                 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?",
		                 "i", id);
		if (left != 0)
			nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	CU_ASSERT_EQUAL_FATAL(left, 0);

	v = one_value(db, "SELECT ? + 1", "i", 2);
	CU_ASSERT_EQUAL(v, 3);
	CU_ASSERT_EQUAL(db_last_err(db), DB_OK);
	CU_ASSERT_TRUE(db_connected(db));
	CU_ASSERT_NOT_EQUAL(one_value(db, "SELECT CONNECTION_ID()", "", 0), id);
	/* a new session: its counters start again, the statement prepared anew */
	CU_ASSERT_EQUAL_FATAL(counters(db, &c), 0);
	CU_ASSERT_EQUAL(c.prepares, 3);        /* SELECT ? + 1, CONNECTION_ID, these */
	CU_ASSERT_EQUAL(c.closes, 0);
	db_free(killer);
	db_free(db);
}

/* DB_STMT_CACHE statements stay prepared; the next one closes the oldest,
 * which is prepared again when it is next used, and every answer is right. */
static void test_bound_evicts(void)
{
	struct db *db = connect_db();
	struct counters c0, c;
	char sql[64];
	int k;

	CU_ASSERT_EQUAL_FATAL(counters(db, &c0), 0);       /* slot 0: the counters */
	CU_ASSERT_EQUAL(c0.closes, 0);
	for (k = 1; k < DB_STMT_CACHE; k++) {              /* slots 1 .. bound - 1 */
		snprintf(sql, sizeof sql, "SELECT ? + %d", k);
		CU_ASSERT_EQUAL(one_value(db, sql, "i", 1000), 1000 + k);
	}
	CU_ASSERT_EQUAL_FATAL(counters(db, &c), 0);        /* full, nothing closed */
	CU_ASSERT_EQUAL(c.prepares, c0.prepares + DB_STMT_CACHE - 1);
	CU_ASSERT_EQUAL(c.closes, 0);

	snprintf(sql, sizeof sql, "SELECT ? + %d", k);     /* closes the counters' */
	CU_ASSERT_EQUAL(one_value(db, sql, "i", 1000), 1000 + k);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c), 0);        /* ... which close slot 1 */
	CU_ASSERT_EQUAL(c.prepares, c0.prepares + DB_STMT_CACHE + 1);
	CU_ASSERT_EQUAL(c.closes, 2);

	snprintf(sql, sizeof sql, "SELECT ? + %d", 2);     /* still cached */
	CU_ASSERT_EQUAL(one_value(db, sql, "i", 7), 9);
	snprintf(sql, sizeof sql, "SELECT ? + %d", 1);     /* evicted: prepared again */
	CU_ASSERT_EQUAL(one_value(db, sql, "i", 7), 8);
	CU_ASSERT_EQUAL_FATAL(counters(db, &c), 0);
	CU_ASSERT_EQUAL(c.prepares, c0.prepares + DB_STMT_CACHE + 2);
	CU_ASSERT_EQUAL(c.closes, 3);
	db_free(db);
}

/* db_exec_params past the DB_MAX_PARAMS of a type string: every value of
 * every type reaches the server in its place (read back from a session
 * variable), NULL binds NULL, and a count that does not match the SQL is
 * refused without running anything. */
static void test_params_array(void)
{
	enum { N = 3 * DB_MAX_PARAMS + 1 };
	struct db *db = connect_db();
	struct db_param ps[N];
	char sql[32 + 3 * N], want[16 * N], texts[N][16];
	size_t len = 0, wlen = 0;
	struct db_stmt *st;

	len += (size_t)snprintf(sql, sizeof sql, "SET @p = CONCAT_WS(',', ?");
	for (size_t i = 1; i < N; i++)
		len += (size_t)snprintf(sql + len, sizeof sql - len, ", ?");
	snprintf(sql + len, sizeof sql - len, ")");
	for (size_t i = 0; i < N; i++) {
		snprintf(texts[i], sizeof texts[i], "s%zu", i);
		switch (i % 5) {
		case 0: ps[i] = (struct db_param){ .type = 's', .p = texts[i] }; break;
		case 1: ps[i] = (struct db_param){ .type = 'i', .i = (long long)i * 1000 }; break;
		case 2: ps[i] = (struct db_param){ .type = 'd', .d = (double)i + 0.5 }; break;
		case 3: ps[i] = (struct db_param){ .type = 'b', .p = texts[i], .len = 2 }; break;
		default: ps[i] = (struct db_param){ .type = 's', .p = NULL }; break;
		}
		if (i % 5 == 4)
			continue;                  /* CONCAT_WS skips NULL */
		wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "%s",
		                         wlen == 0 ? "" : ",");
		if (i % 5 == 0)
			wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "s%zu", i);
		else if (i % 5 == 1)
			wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "%zu", i * 1000);
		else if (i % 5 == 2)
			wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "%zu.5", i);
		else
			wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "%.2s", texts[i]);
	}
	if (db_exec_params(db, sql, ps, N) != 0) {
		fprintf(stderr, "db_exec_params: %s\n", db_error(db));
		CU_FAIL("db_exec_params of every type");
	}
	st = db_query(db, "SELECT @p", "");
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(db_fetch(st), 1);
	CU_ASSERT_STRING_EQUAL(db_col_str(st, 0), want);
	db_done(st);

	CU_ASSERT_EQUAL(db_exec(db, "SET @p = 'unchanged'", ""), 0);
	CU_ASSERT_EQUAL(db_exec_params(db, sql, ps, N - 1), DB_ERR);
	st = db_query(db, "SELECT @p", "");
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(db_fetch(st), 1);
	CU_ASSERT_STRING_EQUAL(db_col_str(st, 0), "unchanged");
	db_done(st);
	CU_ASSERT_TRUE(db_connected(db));
	db_free(db);
}

/* db_exec_rows: 101 rows reach a table (as 64 + 32 + 4 + 1), each in its
 * place with its own values; no rows sends nothing; a failing row fails
 * the call with the server's class.  In a transaction rolled back: the
 * table is the migrations' own, which the service's account may write. */
#define ROWS_INSERT "INSERT INTO schema_migrations (version, name, checksum) VALUES "
static void test_exec_rows(void)
{
	enum { N = 101, COLS = 3, BASE = 900000 };
	struct db *db = connect_db();
	struct db_param ps[N * COLS];
	char names[N][16], sums[N][16];
	struct db_stmt *st;

	for (size_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "row%zu", i);
		snprintf(sums[i], sizeof sums[i], "c%zu", i);
		ps[i * COLS] = (struct db_param){ .type = 'i', .i = BASE + (long long)i };
		ps[i * COLS + 1] = (struct db_param){ .type = 's', .p = names[i] };
		ps[i * COLS + 2] = (struct db_param){ .type = 's', .p = sums[i] };
	}
	CU_ASSERT_EQUAL_FATAL(db_begin(db), DB_OK);
	CU_ASSERT_EQUAL(db_exec_rows(db, ROWS_INSERT, "(?, ?, ?)", COLS, ps, 0), 0);
	CU_ASSERT_EQUAL(db_exec_rows(db, ROWS_INSERT, "(?, ?, ?)", COLS, ps, N), 0);
	st = db_query(db, "SELECT COUNT(*), SUM(version - ?), "
	              "SUM(name = CONCAT('row', version - ?)), "
	              "SUM(checksum = CONCAT('c', version - ?)) FROM schema_migrations "
	              "WHERE version >= ?", "iiii", (long long)BASE, (long long)BASE,
	              (long long)BASE, (long long)BASE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(db_fetch(st), 1);
	CU_ASSERT_EQUAL(db_col_ll(st, 0), N);
	CU_ASSERT_EQUAL(db_col_ll(st, 1), N * (N - 1) / 2);
	CU_ASSERT_EQUAL(db_col_ll(st, 2), N);
	CU_ASSERT_EQUAL(db_col_ll(st, 3), N);
	db_done(st);
	/* Row 0 again: a duplicate key. */
	CU_ASSERT_EQUAL(db_exec_rows(db, ROWS_INSERT, "(?, ?, ?)", COLS, ps, 1), DB_ERR_DUPLICATE);
	db_rollback(db);
	CU_ASSERT_EQUAL(db_first_row(db, db_query(db, "SELECT 1 FROM schema_migrations WHERE "
	                "version >= ?", "i", (long long)BASE), NULL, 0), 0);
	CU_ASSERT_TRUE(db_connected(db));
	db_free(db);
}

/* db_exec_in: ids in lists of DB_IN_BATCH (0, 1, 16, then 33 as
 * 16 + 16 + 1, the last list padded), the head parameter in its place,
 * each id's row changed once and no other, the rows affected summed. */
static void test_exec_in(void)
{
	enum { N = 50, COLS = 3, BASE = 910000 };
	static const char in[] = "UPDATE schema_migrations SET name = ? WHERE version IN "
	                         "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
	struct db *db = connect_db();
	struct db_param ps[N * COLS];
	long long ids[N], absent = BASE + 1000;
	struct db_stmt *st;

	for (size_t i = 0; i < N; i++) {
		ids[i] = BASE + (long long)i;
		ps[i * COLS] = (struct db_param){ .type = 'i', .i = ids[i] };
		ps[i * COLS + 1] = (struct db_param){ .type = 's', .p = "before" };
		ps[i * COLS + 2] = (struct db_param){ .type = 's', .p = "c" };
	}
	CU_ASSERT_EQUAL_FATAL(db_begin(db), DB_OK);
	CU_ASSERT_EQUAL_FATAL(db_exec_rows(db, ROWS_INSERT, "(?, ?, ?)", COLS, ps, N), 0);
	CU_ASSERT_EQUAL(db_exec_in(db, in, &(struct db_param){ .type = 's', .p = "none" }, 1,
	                           ids, 0), 0);
	CU_ASSERT_EQUAL(db_exec_in(db, in, &(struct db_param){ .type = 's', .p = "one" }, 1,
	                           ids, 1), 1);
	CU_ASSERT_EQUAL(db_exec_in(db, in, &(struct db_param){ .type = 's', .p = "sixteen" },
	                           1, ids + 1, 16), 16);
	CU_ASSERT_EQUAL(db_exec_in(db, in, &(struct db_param){ .type = 's', .p = "many" }, 1,
	                           ids + 17, N - 17), N - 17);
	CU_ASSERT_EQUAL(db_exec_in(db, in, &(struct db_param){ .type = 's', .p = "absent" },
	                           1, &absent, 1), 0);
	st = db_query(db, "SELECT COUNT(*), SUM(name = 'none' OR name = 'absent'), "
	              "SUM(name = 'one' AND version = ?), "
	              "SUM(name = 'sixteen' AND version BETWEEN ? AND ?), "
	              "SUM(name = 'many' AND version BETWEEN ? AND ?) "
	              "FROM schema_migrations WHERE version >= ?", "iiiiii",
	              (long long)BASE, (long long)BASE + 1, (long long)BASE + 16,
	              (long long)BASE + 17, (long long)BASE + N - 1, (long long)BASE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL_FATAL(db_fetch(st), 1);
	CU_ASSERT_EQUAL(db_col_ll(st, 0), N);
	CU_ASSERT_EQUAL(db_col_ll(st, 1), 0);
	CU_ASSERT_EQUAL(db_col_ll(st, 2), 1);
	CU_ASSERT_EQUAL(db_col_ll(st, 3), 16);
	CU_ASSERT_EQUAL(db_col_ll(st, 4), N - 17);
	db_done(st);
	db_rollback(db);
	CU_ASSERT_TRUE(db_connected(db));
	db_free(db);
}

/* A transaction that meets a row lock held by another connection: the
 * lock wait timeout (1 s here) is a DB_ERR_DEADLOCK, as a Galera
 * certification failure is, and db_tx runs the body again.  The holder
 * lets go during the second attempt, which commits: db_tx answers the
 * body's value and counts one retry. */
struct held {
	struct db *holder;
	int attempts;
	bool release_on_second;
};

static const char LOCK_ROW_SQL[] =
	"SELECT version FROM schema_migrations ORDER BY version LIMIT 1 FOR UPDATE";

static int hold_row(struct db *db)
{
	return db_begin(db) == DB_OK &&
	       db_first_row(db, db_query(db, LOCK_ROW_SQL, ""), NULL, 0) == 1 ? 0 : -1;
}

static int locked_body(struct db *db, void *arg)
{
	struct held *h = arg;
	int rc;

	if (++h->attempts == 2 && h->release_on_second)
		db_rollback(h->holder);
	rc = db_first_row(db, db_query(db, LOCK_ROW_SQL, ""), NULL, 0);
	return rc < 0 ? rc : 7;
}

static struct db *impatient_db(void)
{
	struct db *db = connect_db();

	CU_ASSERT_EQUAL_FATAL(db_exec(db, "SET SESSION innodb_lock_wait_timeout = 1",
	                              ""), 0);
	return db;
}

static void test_tx_retries_a_lock_conflict(void)
{
	struct db *db = impatient_db();
	struct held h = { connect_db(), 0, true };
	unsigned long long before = db_tx_retries();

	CU_ASSERT_EQUAL_FATAL(hold_row(h.holder), 0);
	CU_ASSERT_EQUAL(db_tx(db, "unit test", locked_body, &h), 7);
	CU_ASSERT_EQUAL(h.attempts, 2);
	CU_ASSERT_EQUAL(db_tx_retries(), before + 1);
	db_free(h.holder);
	db_free(db);
}

/* A conflict that outlasts every attempt: DB_ERR_DEADLOCK (the API's 503),
 * after exactly DB_TX_ATTEMPTS runs of the body, each one after the first
 * counted as a retry. */
static void test_tx_gives_up_bounded(void)
{
	struct db *db = impatient_db();
	struct held h = { connect_db(), 0, false };
	unsigned long long before = db_tx_retries();

	CU_ASSERT_EQUAL_FATAL(hold_row(h.holder), 0);
	CU_ASSERT_EQUAL(db_tx(db, "unit test", locked_body, &h), DB_ERR_DEADLOCK);
	CU_ASSERT_EQUAL(h.attempts, DB_TX_ATTEMPTS);
	CU_ASSERT_EQUAL(db_tx_retries(), before + DB_TX_ATTEMPTS - 1);
	/* Nothing is left open: the connection serves the next statement. */
	CU_ASSERT_EQUAL(one_value(db, "SELECT ? + 1", "i", 1), 2);
	db_rollback(h.holder);
	db_free(h.holder);
	db_free(db);
}

/* A lock wait longer than DB_TX_BUDGET_MS is not tried again: a request
 * must not still be retrying when nginx has given its client an error. */
static void test_tx_budget(void)
{
	struct db *db = connect_db();
	struct held h = { connect_db(), 0, false };
	unsigned long long before = db_tx_retries();
	char set[80];

	/* A session variable takes no placeholder: the constant is written in. */
	snprintf(set, sizeof set, "SET SESSION innodb_lock_wait_timeout = %d",
	         (int)(DB_TX_BUDGET_MS / 1000.0) + 1);
	CU_ASSERT_EQUAL_FATAL(db_exec(db, set, ""), 0);
	CU_ASSERT_EQUAL_FATAL(hold_row(h.holder), 0);
	CU_ASSERT_EQUAL(db_tx(db, "unit test", locked_body, &h), DB_ERR_DEADLOCK);
	CU_ASSERT_EQUAL(h.attempts, 1);
	CU_ASSERT_EQUAL(db_tx_retries(), before);
	db_rollback(h.holder);
	db_free(h.holder);
	db_free(db);
}

static void test_require_stack(void)
{
	CU_FAIL("SLUICE_REQUIRE_API=1 but SLUICE_CONF (the test stack's config) is not set");
}

int suite_db(void)
{
	static const struct test_case tests[] = {
		{ "the cache's key is the SQL text, not its address", test_key_is_the_text },
		{ "the server killing the connection: rebuilt", test_survives_kill },
		{ "the cache's bound closes the oldest statement", test_bound_evicts },
		{ "an array of parameters past the type string's bound", test_params_array },
		{ "multi-row INSERTs of any number of rows", test_exec_rows },
		{ "a statement per DB_IN_BATCH ids", test_exec_in },
		{ "db_tx runs a body again after a lock conflict", test_tx_retries_a_lock_conflict },
		{ "db_tx gives up after DB_TX_ATTEMPTS", test_tx_gives_up_bounded },
		{ "db_tx tries no more once DB_TX_BUDGET_MS have gone", test_tx_budget },
		{ NULL, NULL },
	};
	static const struct test_case required[] = {
		{ "the test stack is there", test_require_stack },
		{ NULL, NULL },
	};
	const char *conf = getenv("SLUICE_CONF");
	const char *require = getenv("SLUICE_REQUIRE_API");
	char err[256];

	if (conf == NULL || conf[0] == '\0') {
		if (require != NULL && strcmp(require, "1") == 0)
			return suite_add("db statement cache", required);
		return suite_add_skipped("db statement cache", tests,
		                         "no MariaDB: SLUICE_CONF unset (scripts/dev test sets it)");
	}
	config_defaults(&cfg);
	if (config_load(conf, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "test_db: %s: %s\n", conf, err);
		return -1;
	}
	return suite_add("db statement cache", tests);
}

/* The error numbers a Galera cluster adds to a single server's, in the
 * classes callers act on: a node that cannot serve is a server that is
 * down (503, the work loop waits); a certification failure is a deadlock
 * (the transaction runs again). */
static void test_classify(void)
{
	static const struct { unsigned int no; int want; } cases[] = {
		{ ER_UNKNOWN_COM_ERROR, DB_ERR_UNAVAILABLE },  /* 1047: no quorum, not synced */
		{ CR_SERVER_GONE_ERROR, DB_ERR_UNAVAILABLE },
		{ CR_SERVER_LOST, DB_ERR_UNAVAILABLE },
		{ ER_CONNECTION_KILLED, DB_ERR_UNAVAILABLE },
		{ ER_SERVER_SHUTDOWN, DB_ERR_UNAVAILABLE },
		{ ER_QUERY_INTERRUPTED, DB_ERR_UNAVAILABLE },
		{ ER_LOCK_DEADLOCK, DB_ERR_DEADLOCK },          /* 1213: also certification */
		{ ER_LOCK_WAIT_TIMEOUT, DB_ERR_DEADLOCK },      /* 1205 */
		{ ER_DUP_ENTRY, DB_ERR_DUPLICATE },
		{ ER_NO_REFERENCED_ROW_2, DB_ERR_FOREIGN_KEY },
		{ ER_ACCESS_DENIED_ERROR, DB_ERR_ACCESS },
		{ ER_PARSE_ERROR, DB_ERR },
		{ ER_NO_SUCH_TABLE, DB_ERR },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (db_classify(cases[i].no) != cases[i].want)
			fprintf(stderr, "db_classify(%u) = %d, want %d\n", cases[i].no,
			        db_classify(cases[i].no), cases[i].want);
		CU_ASSERT_EQUAL(db_classify(cases[i].no), cases[i].want);
	}
}

int suite_db_classify(void)
{
	static const struct test_case tests[] = {
		{ "error numbers to classes, Galera's included", test_classify },
		{ NULL, NULL },
	};

	return suite_add("db error classes", tests);
}
