/* test_jdbc.c - the pure parts of the jdbc connector: type mapping from
 * both source catalogs, bookmarks to and from values, ordering of values,
 * source table names. */
#include <string.h>

#include "suites.h"
#include "runner/connectors/jdbc.h"

struct mdb_case {
	const char *dt, *ct;
	long long prec, scale, clen, dtp;
	int rc;
	enum jdbc_kind kind;
	const char *want;
};

static const struct mdb_case mdb_cases[] = {
	{ "int", "int(11)", 10, 0, -1, -1, 0, JK_INT, "INT" },
	{ "int", "int(10) unsigned", 10, 0, -1, -1, 0, JK_INT, "INT UNSIGNED" },
	{ "bigint", "bigint(20)", 19, 0, -1, -1, 0, JK_INT, "BIGINT" },
	{ "tinyint", "tinyint(1)", 3, 0, -1, -1, 0, JK_INT, "TINYINT" },
	{ "mediumint", "mediumint(9)", 7, 0, -1, -1, 0, JK_INT, "MEDIUMINT" },
	{ "smallint", "smallint(5) unsigned", 5, 0, -1, -1, 0, JK_INT, "SMALLINT UNSIGNED" },
	{ "decimal", "decimal(12,2)", 12, 2, -1, -1, 0, JK_OTHER, "DECIMAL(12,2)" },
	{ "decimal", "decimal(65,30)", 65, 30, -1, -1, 0, JK_OTHER, "DECIMAL(65,30)" },
	{ "double", "double", 22, -1, -1, -1, 0, JK_OTHER, "DOUBLE" },
	{ "float", "float", 12, -1, -1, -1, 0, JK_OTHER, "FLOAT" },
	{ "bit", "bit(5)", 5, -1, -1, -1, 0, JK_BIT, "BIGINT UNSIGNED" },
	{ "varchar", "varchar(255)", -1, -1, 255, -1, 0, JK_OTHER, "VARCHAR(255)" },
	{ "varchar", "varchar(256)", -1, -1, 256, -1, 0, JK_OTHER, "TEXT" },
	{ "varchar", "varchar(20000)", -1, -1, 20000, -1, 0, JK_OTHER, "MEDIUMTEXT" },
	{ "char", "char(10)", -1, -1, 10, -1, 0, JK_OTHER, "CHAR(10)" },
	{ "longtext", "longtext", -1, -1, 4294967295LL, -1, 0, JK_OTHER, "LONGTEXT" },
	{ "varbinary", "varbinary(16)", -1, -1, 16, -1, 0, JK_OTHER, "VARBINARY(16)" },
	{ "blob", "blob", -1, -1, 65535, -1, 0, JK_OTHER, "BLOB" },
	{ "date", "date", -1, -1, -1, -1, 0, JK_DATE, "DATE" },
	{ "datetime", "datetime", -1, -1, -1, 0, 0, JK_DATETIME, "DATETIME(0)" },
	{ "datetime", "datetime(6)", -1, -1, -1, 6, 0, JK_DATETIME, "DATETIME(6)" },
	{ "timestamp", "timestamp(3)", -1, -1, -1, 3, 0, JK_TIMESTAMPTZ, "DATETIME(3)" },
	{ "time", "time", -1, -1, -1, 0, 0, JK_OTHER, "TIME(0)" },
	{ "year", "year(4)", -1, -1, -1, -1, 0, JK_OTHER, "YEAR" },
	{ "enum", "enum('a','b')", -1, -1, 1, -1, 0, JK_OTHER, "VARCHAR(255)" },
	{ "set", "set('a','b')", -1, -1, 3, -1, 0, JK_OTHER, "TEXT" },
	{ "uuid", "uuid", -1, -1, -1, -1, 0, JK_OTHER, "CHAR(36)" },
	{ "point", "point", -1, -1, -1, -1, -1, JK_OTHER, NULL },
	{ "geometry", "geometry", -1, -1, -1, -1, -1, JK_OTHER, NULL },
};

static void test_map_mariadb(void)
{
	for (size_t i = 0; i < sizeof mdb_cases / sizeof mdb_cases[0]; i++) {
		const struct mdb_case *c = &mdb_cases[i];
		enum jdbc_kind k;
		char t[JDBC_TYPE_MAX];
		int rc = jdbc_map_mariadb(c->dt, c->ct, c->prec, c->scale, c->clen,
		                          c->dtp, &k, t, sizeof t);

		CU_ASSERT_EQUAL(rc, c->rc);
		if (c->rc == 0 && rc == 0) {
			CU_ASSERT_STRING_EQUAL(t, c->want);
			CU_ASSERT_EQUAL(k, c->kind);
		}
	}
}

struct pg_case {
	const char *dt;
	long long prec, scale, clen, dtp;
	enum jdbc_kind kind;
	const char *want;
};

static const struct pg_case pg_cases[] = {
	{ "integer", 32, 0, -1, -1, JK_INT, "INT" },
	{ "bigint", 64, 0, -1, -1, JK_INT, "BIGINT" },
	{ "smallint", 16, 0, -1, -1, JK_INT, "SMALLINT" },
	{ "numeric", 10, 3, -1, -1, JK_OTHER, "DECIMAL(10,3)" },
	{ "numeric", -1, -1, -1, -1, JK_OTHER, "DECIMAL(65,30)" },   /* unconstrained */
	{ "numeric", 100, 2, -1, -1, JK_OTHER, "DECIMAL(65,30)" },   /* beyond MariaDB's 65 */
	{ "real", 24, -1, -1, -1, JK_OTHER, "FLOAT" },
	{ "double precision", 53, -1, -1, -1, JK_OTHER, "DOUBLE" },
	{ "boolean", -1, -1, -1, -1, JK_BOOL, "BOOLEAN" },
	{ "character varying", -1, -1, 100, -1, JK_OTHER, "VARCHAR(100)" },
	{ "character varying", -1, -1, -1, -1, JK_OTHER, "LONGTEXT" },
	{ "character", -1, -1, 3, -1, JK_OTHER, "CHAR(3)" },
	{ "text", -1, -1, -1, -1, JK_OTHER, "LONGTEXT" },
	{ "jsonb", -1, -1, -1, -1, JK_OTHER, "LONGTEXT" },
	{ "date", -1, -1, -1, 0, JK_DATE, "DATE" },
	{ "timestamp without time zone", -1, -1, -1, 6, JK_DATETIME, "DATETIME(6)" },
	{ "timestamp without time zone", -1, -1, -1, 0, JK_DATETIME, "DATETIME(0)" },
	{ "timestamp with time zone", -1, -1, -1, 3, JK_TIMESTAMPTZ, "DATETIME(3)" },
	{ "time without time zone", -1, -1, -1, 6, JK_OTHER, "TIME(6)" },
	{ "interval", -1, -1, -1, 6, JK_OTHER, "VARCHAR(64)" },
	{ "uuid", -1, -1, -1, -1, JK_OTHER, "CHAR(36)" },
	{ "bytea", -1, -1, -1, -1, JK_BYTES, "LONGBLOB" },
	{ "ARRAY", -1, -1, -1, -1, JK_OTHER, "LONGTEXT" },
	{ "USER-DEFINED", -1, -1, -1, -1, JK_OTHER, "LONGTEXT" },
};

static void test_map_postgres(void)
{
	for (size_t i = 0; i < sizeof pg_cases / sizeof pg_cases[0]; i++) {
		const struct pg_case *c = &pg_cases[i];
		enum jdbc_kind k;
		char t[JDBC_TYPE_MAX];

		CU_ASSERT_EQUAL_FATAL(jdbc_map_postgres(c->dt, c->prec, c->scale, c->clen,
		                                        c->dtp, &k, t, sizeof t), 0);
		CU_ASSERT_STRING_EQUAL(t, c->want);
		CU_ASSERT_EQUAL(k, c->kind);
	}
}

struct bm_case {
	enum jdbc_kind kind;
	const char *value;
	const char *want;                  /* NULL = refused */
};

static const struct bm_case from_cases[] = {
	{ JK_INT, "42", "42" },
	{ JK_INT, "-7", "-7" },
	{ JK_INT, "18446744073709551615", "18446744073709551615" },
	{ JK_INT, "4.5", NULL },
	{ JK_INT, "", NULL },
	{ JK_DATE, "2024-02-29", "2024-02-29" },
	{ JK_DATETIME, "2024-01-02 03:04:05", "2024-01-02T03:04:05" },
	{ JK_DATETIME, "2024-01-02 03:04:05.123456", "2024-01-02T03:04:05.123456" },
	{ JK_TIMESTAMPTZ, "2024-01-02 03:04:05.5", "2024-01-02T03:04:05.5Z" },
	{ JK_DATETIME, "2024-01-02", NULL },
	{ JK_OTHER, "x", NULL },
};

static void test_bookmark_from_value(void)
{
	for (size_t i = 0; i < sizeof from_cases / sizeof from_cases[0]; i++) {
		char out[80];
		int rc = jdbc_bookmark_from_value(from_cases[i].kind, from_cases[i].value,
		                                  out, sizeof out);

		if (from_cases[i].want == NULL) {
			CU_ASSERT_EQUAL(rc, -1);
		} else {
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			CU_ASSERT_STRING_EQUAL(out, from_cases[i].want);
		}
	}
}

static const struct bm_case param_cases[] = {
	{ JK_INT, "42", "42" },
	{ JK_INT, "-42", "-42" },
	{ JK_INT, "2024-01-01", NULL },                 /* a date for a number column */
	{ JK_INT, "42; DROP TABLE t", NULL },
	{ JK_DATE, "2024-01-02", "2024-01-02 00:00:00" },
	{ JK_DATETIME, "2024-01-02T03:04:05", "2024-01-02 03:04:05" },
	{ JK_DATETIME, "2024-01-02T03:04:05Z", "2024-01-02 03:04:05" },
	{ JK_DATETIME, "2024-01-02 03:04:05.123456", "2024-01-02 03:04:05.123456" },
	{ JK_TIMESTAMPTZ, "2024-01-02T03:04:05.5Z", "2024-01-02 03:04:05.5" },
	/* offsets become UTC, across a day and a year boundary */
	{ JK_TIMESTAMPTZ, "2024-01-01T01:30:00+02:00", "2023-12-31 23:30:00" },
	{ JK_TIMESTAMPTZ, "2023-12-31T23:00:00-01:30", "2024-01-01 00:30:00" },
	/* nanoseconds: cut to the microseconds both databases keep */
	{ JK_DATETIME, "2024-01-02T03:04:05.123456789Z", "2024-01-02 03:04:05.123456" },
	{ JK_DATETIME, "2024-02-30T00:00:00Z", NULL },
	{ JK_DATETIME, "2024-01-02T24:00:00Z", NULL },
	{ JK_DATETIME, "2024-01-02T03:04", NULL },
	{ JK_DATETIME, "2024-01-02T03:04:05.Z", NULL },
	{ JK_DATETIME, "2024-01-02T03:04:05+2", NULL },
	{ JK_DATETIME, "2024-01-02T03:04:05Zjunk", NULL },
	{ JK_DATETIME, "42", NULL },
	{ JK_OTHER, "2024-01-02", NULL },
};

static void test_bookmark_param(void)
{
	for (size_t i = 0; i < sizeof param_cases / sizeof param_cases[0]; i++) {
		char out[80];
		int rc = jdbc_bookmark_param(param_cases[i].kind, param_cases[i].value,
		                             out, sizeof out);

		if (param_cases[i].want == NULL) {
			if (rc != -1)
				fprintf(stderr, "\nparam case %zu accepted: %s\n", i, out);
			CU_ASSERT_EQUAL(rc, -1);
		} else {
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			CU_ASSERT_STRING_EQUAL(out, param_cases[i].want);
		}
	}
}

/* A bookmark written from a value reads back as that value. */
static void test_bookmark_roundtrip(void)
{
	static const struct { enum jdbc_kind k; const char *v; } rt[] = {
		{ JK_INT, "123456789012" },
		{ JK_DATETIME, "2024-05-06 07:08:09.000001" },
		{ JK_TIMESTAMPTZ, "1999-12-31 23:59:59" },
	};

	for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
		char bm[80], back[80];

		CU_ASSERT_EQUAL_FATAL(jdbc_bookmark_from_value(rt[i].k, rt[i].v, bm, sizeof bm), 0);
		CU_ASSERT_EQUAL_FATAL(jdbc_bookmark_param(rt[i].k, bm, back, sizeof back), 0);
		CU_ASSERT_STRING_EQUAL(back, rt[i].v);
	}
}

static void test_value_cmp(void)
{
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_INT, "9", "10"), -1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_INT, "10", "9"), 1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_INT, "-10", "-9"), -1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_INT, "-1", "0"), -1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_INT, "42", "42"), 0);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_INT, "18446744073709551615",
	                               "9223372036854775807"), 1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_DATETIME, "2024-01-02 03:04:05",
	                               "2024-01-02 03:04:05.5"), -1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_DATETIME, "2024-01-02 03:04:05.5",
	                               "2024-01-02 03:04:05.123"), 1);
	CU_ASSERT_EQUAL(jdbc_value_cmp(JK_DATE, "2023-12-31", "2024-01-01"), -1);
}

static void test_split_table(void)
{
	char s[64], t[64];

	CU_ASSERT_EQUAL(jdbc_split_table("orders", s, sizeof s, t, sizeof t), 0);
	CU_ASSERT_STRING_EQUAL(s, "");
	CU_ASSERT_STRING_EQUAL(t, "orders");
	CU_ASSERT_EQUAL(jdbc_split_table("public.orders", s, sizeof s, t, sizeof t), 0);
	CU_ASSERT_STRING_EQUAL(s, "public");
	CU_ASSERT_STRING_EQUAL(t, "orders");
	CU_ASSERT_EQUAL(jdbc_split_table(".orders", s, sizeof s, t, sizeof t), -1);
	CU_ASSERT_EQUAL(jdbc_split_table("public.", s, sizeof s, t, sizeof t), -1);
	CU_ASSERT_EQUAL(jdbc_split_table("", s, sizeof s, t, sizeof t), -1);
	CU_ASSERT_EQUAL(jdbc_split_table(NULL, s, sizeof s, t, sizeof t), -1);
}

static void test_driver_for(void)
{
	CU_ASSERT_PTR_EQUAL(jdbc_driver_for("mariadb"), &jdbc_mariadb_driver);
	CU_ASSERT_PTR_EQUAL(jdbc_driver_for("mysql"), &jdbc_mariadb_driver);
	CU_ASSERT_PTR_EQUAL(jdbc_driver_for("postgres"), &jdbc_postgres_driver);
	CU_ASSERT_PTR_NULL(jdbc_driver_for("oracle"));
	CU_ASSERT_PTR_NULL(jdbc_driver_for("sqlserver"));
	CU_ASSERT_PTR_NULL(jdbc_driver_for(NULL));
}

/* Source identifiers in each dialect. */
static void test_quote(void)
{
	char b[300];

	CU_ASSERT_EQUAL(jdbc_postgres_driver.quote("my \"col\"", b, sizeof b), 0);
	CU_ASSERT_STRING_EQUAL(b, "\"my \"\"col\"\"\"");
	CU_ASSERT_EQUAL(jdbc_mariadb_driver.quote("a`b", b, sizeof b), 0);
	CU_ASSERT_STRING_EQUAL(b, "`a``b`");
	/* 64 bytes: MariaDB yes, PostgreSQL (63) no */
	CU_ASSERT_EQUAL(jdbc_mariadb_driver.quote(
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", b, sizeof b), 0);
	CU_ASSERT_EQUAL(jdbc_postgres_driver.quote(
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", b, sizeof b), -1);
	CU_ASSERT_EQUAL(jdbc_postgres_driver.quote("", b, sizeof b), -1);
}

int suite_jdbc(void)
{
	static const struct test_case tests[] = {
		{ "MariaDB type mapping", test_map_mariadb },
		{ "PostgreSQL type mapping", test_map_postgres },
		{ "bookmark from a value", test_bookmark_from_value },
		{ "bookmark to a parameter", test_bookmark_param },
		{ "bookmark round trip", test_bookmark_roundtrip },
		{ "incremental value order", test_value_cmp },
		{ "source table names", test_split_table },
		{ "driver per plugin", test_driver_for },
		{ "source identifier quoting", test_quote },
		{ NULL, NULL },
	};
	return suite_add("jdbc", tests);
}
