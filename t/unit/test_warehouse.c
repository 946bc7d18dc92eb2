/* test_warehouse.c - the pure parts of the warehouse: identifier checks and
 * quoting (the last line of defence before a name reaches SQL text). */
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "db/warehouse.h"
#include "db/wh_evolve.h"
#include "util/config.h"

struct ident_case {
	const char *name;
	bool ok;
};

static const struct ident_case ident_cases[] = {
	{ "orders", true },
	{ "a", true },                                          /* 1 character */
	{ "", false },                                          /* 0 characters */
	{ "Orders_2024", true },
	{ "with space", true },
	{ "trailing ", false },
	{ " leading", true },                                   /* MariaDB keeps it */
	{ "back`tick", true },                                  /* quoted by doubling */
	{ "semi;colon", true },
	{ "quote'", true },
	{ "dot.ted", true },
	{ "caf\xc3\xa9", true },                                /* 2-byte UTF-8 */
	{ "\xe6\x97\xa5\xe6\x9c\xac", true },                   /* 3-byte UTF-8 */
	{ "emoji\xf0\x9f\x98\x80", false },                     /* outside the BMP */
	{ "bad\xc3", false },                                   /* truncated sequence */
	{ "bad\x80x", false },                                  /* stray continuation */
	{ "over\xc0\xaflong", false },                          /* overlong '/' */
	{ "sur\xed\xa0\x80rogate", false },                     /* UTF-16 surrogate */
	{ "\xff", false },
	/* 64 characters, the limit */
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true },
	/* 65 characters */
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
};

static void test_ident_ok(void)
{
	for (size_t i = 0; i < sizeof ident_cases / sizeof ident_cases[0]; i++) {
		bool got = wh_ident_ok(ident_cases[i].name);

		if (got != ident_cases[i].ok)
			fprintf(stderr, "\nwh_ident_ok case %zu: got %d\n", i, got);
		CU_ASSERT_EQUAL(got, ident_cases[i].ok);
	}
	CU_ASSERT_FALSE(wh_ident_ok(NULL));
}

/* 64 characters of 3 bytes each: 192 bytes, still one valid identifier. */
static void test_ident_multibyte_limit(void)
{
	char name[64 * 3 + 4];
	size_t o = 0;

	for (int i = 0; i < 64; i++) {
		memcpy(name + o, "\xe6\x97\xa5", 3);
		o += 3;
	}
	name[o] = '\0';
	CU_ASSERT_TRUE(wh_ident_ok(name));
	memcpy(name + o, "\xe6\x97\xa5", 4);                    /* 65 characters */
	CU_ASSERT_FALSE(wh_ident_ok(name));
}

struct quote_case {
	const char *name;
	const char *want;                                       /* NULL = refused */
};

static const struct quote_case quote_cases[] = {
	{ "orders", "`orders`" },
	{ "back`tick", "`back``tick`" },
	{ "``", "``````" },
	{ "a; DROP TABLE x; --", "`a; DROP TABLE x; --`" },
	{ "caf\xc3\xa9", "`caf\xc3\xa9`" },
	{ "", NULL },
	{ "trailing ", NULL },
	{ "emoji\xf0\x9f\x98\x80", NULL },
};

static void test_quote(void)
{
	char buf[2 * WH_IDENT_MAX * 4 + 3];

	for (size_t i = 0; i < sizeof quote_cases / sizeof quote_cases[0]; i++) {
		int rc = wh_quote(quote_cases[i].name, buf, sizeof buf);

		if (quote_cases[i].want == NULL) {
			CU_ASSERT_EQUAL(rc, -1);
		} else {
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			CU_ASSERT_STRING_EQUAL(buf, quote_cases[i].want);
		}
	}
}

/* The documented worst case fits; one byte less than needed is refused. */
static void test_quote_capacity(void)
{
	char name[WH_IDENT_MAX + 1], buf[2 * WH_IDENT_MAX * 4 + 3];

	memset(name, '`', WH_IDENT_MAX);
	name[WH_IDENT_MAX] = '\0';
	CU_ASSERT_EQUAL(wh_quote(name, buf, sizeof buf), 0);
	CU_ASSERT_EQUAL(strlen(buf), 2 * WH_IDENT_MAX + 2);
	/* needs 2 * 64 + 2 characters and the NUL */
	CU_ASSERT_EQUAL(wh_quote(name, buf, 2 * WH_IDENT_MAX + 3), 0);
	CU_ASSERT_EQUAL(wh_quote(name, buf, 2 * WH_IDENT_MAX + 2), -1);
	CU_ASSERT_EQUAL(wh_quote("ab", buf, 5), 0);
	CU_ASSERT_STRING_EQUAL(buf, "`ab`");
	CU_ASSERT_EQUAL(wh_quote("ab", buf, 4), -1);
	CU_ASSERT_EQUAL(wh_quote("ab", buf, 0), -1);
}

/* The warehouse_* keys: defaults, and a bad value is refused. */
static void test_config_keys(void)
{
	struct config c;
	char err[256];

	config_defaults(&c);
	CU_ASSERT_STRING_EQUAL(c.warehouse_default_schema, "warehouse");
	CU_ASSERT_STRING_EQUAL(c.warehouse_host, "");
	CU_ASSERT_STRING_EQUAL(c.warehouse_socket, "");
	CU_ASSERT_STRING_EQUAL(c.warehouse_user, "sluice_loader");
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_user", "", err, sizeof err), -1);
	CU_ASSERT_EQUAL(c.warehouse_port, 3306);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_port", "3307", err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.warehouse_port, 3307);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_port", "65536", err, sizeof err), -1);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_default_schema", "", err, sizeof err), -1);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_default_schema", "raw", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(c.warehouse_default_schema, "raw");
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_host", "db.example", err, sizeof err), 0);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_user", "wh", err, sizeof err), 0);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_password_file", "/x", err, sizeof err), 0);
	CU_ASSERT_EQUAL(config_set(&c, "warehouse_socket", "/s", err, sizeof err), 0);
}

/* A default schema that is no identifier stops wh_open before connecting. */
static void test_open_bad_schema(void)
{
	struct config c;
	char err[256] = "";

	config_defaults(&c);
	strcpy(c.warehouse_default_schema, "bad ");
	CU_ASSERT_PTR_NULL(wh_open(&c, err, sizeof err));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "warehouse_default_schema"));
}

/* The one mapping of logical schemas to databases: values computed
 * independently (Python's hashlib), the prefix, case folding, and the
 * customer in the hash. */
static void test_schema_physical(void)
{
	static const struct { const char *customer, *logical, *physical; } cases[] = {
		{ "0022bf24-f817-445e-be5a-0468cb69336b", "raw", "wh_raw_fe47fe6a9a617621" },
		{ "0022bf24-f817-445e-be5a-0468cb69336b", "Raw", "wh_raw_fe47fe6a9a617621" },
		{ "other", "raw", "wh_raw_5e769740b4555052" },
		{ "c1", "Caf\xc3\xa9-Data", "wh_caf__data_64f86e3a5e3af8a1" },
		{ "c1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "wh_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_29596b292cc35938" },
	};
	char out[WH_IDENT_MAX + 1], big[300];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CU_ASSERT_EQUAL(wh_schema_physical(cases[i].customer, cases[i].logical, out), 0);
		CU_ASSERT_STRING_EQUAL(out, cases[i].physical);
		CU_ASSERT_TRUE(wh_schema_is_warehouse(out));
		CU_ASSERT_TRUE(strlen(out) <= WH_IDENT_MAX);
	}
	CU_ASSERT_EQUAL(wh_schema_physical("c1", "", out), -1);
	CU_ASSERT_EQUAL(wh_schema_physical("", "raw", out), -1);
	memset(big, 'x', 255);
	big[255] = '\0';
	CU_ASSERT_EQUAL(wh_schema_physical("c1", big, out), 0);
	big[255] = 'x';
	big[256] = '\0';
	CU_ASSERT_EQUAL(wh_schema_physical("c1", big, out), -1);
}

static void test_schema_reserved(void)
{
	static const char *const reserved[] = {
		"mysql", "MySQL", "information_schema", "INFORMATION_SCHEMA",
		"performance_schema", "sys", "sluice", "Sluice",
	};
	static const char *const free_names[] = {
		"raw", "mysql_", "sluice2", "sys_data", "wh_raw_fe47fe6a9a617621", "",
	};

	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		CU_ASSERT_TRUE(wh_schema_reserved(reserved[i], "sluice"));
	for (size_t i = 0; i < sizeof free_names / sizeof free_names[0]; i++)
		CU_ASSERT_FALSE(wh_schema_reserved(free_names[i], "sluice"));
	CU_ASSERT_FALSE(wh_schema_is_warehouse("sluice"));
	CU_ASSERT_FALSE(wh_schema_is_warehouse("wh_"));
	CU_ASSERT_FALSE(wh_schema_is_warehouse("WH_raw_x"));
	CU_ASSERT_FALSE(wh_schema_is_warehouse("mysql"));
}

/* The account rules config_load applies. */
static void test_config_accounts(void)
{
	struct config c;
	char err[256];

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_accounts_check(&c, err, sizeof err), 0);
	strcpy(c.warehouse_user, c.db_user);
	CU_ASSERT_EQUAL(config_accounts_check(&c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "warehouse_user"));
	strcpy(c.warehouse_host, "wh.example");     /* a server of its own */
	CU_ASSERT_EQUAL(config_accounts_check(&c, err, sizeof err), 0);
	config_defaults(&c);
	strcpy(c.db_name, "WH_sluice");
	CU_ASSERT_EQUAL(config_accounts_check(&c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "db_name"));
}

/* The widening lattice: a column of type existing meets a source of type
 * wanted (existing as information_schema writes it, wanted as DDL). */
static const struct {
	const char *existing, *wanted;
	enum wh_change change;
	const char *to;                /* the column's type after the change */
} change_cases[] = {
	{ "varchar(200)", "VARCHAR(200)", WH_TYPE_SAME, "VARCHAR(200)" },
	{ "varchar(200)", "VARCHAR(500)", WH_TYPE_WIDEN, "VARCHAR(500)" },
	{ "varchar(500)", "VARCHAR(200)", WH_TYPE_NARROWER, "VARCHAR(500)" },
	{ "varchar(255)", "TEXT", WH_TYPE_WIDEN, "TEXT" },
	{ "char(36)", "VARCHAR(45)", WH_TYPE_WIDEN, "VARCHAR(45)" },
	{ "longtext", "VARCHAR(255)", WH_TYPE_NARROWER, "LONGTEXT" },
	{ "int(11)", "INT", WH_TYPE_SAME, "INT" },
	{ "int(11)", "BIGINT", WH_TYPE_WIDEN, "BIGINT" },
	{ "bigint(20)", "INT", WH_TYPE_NARROWER, "BIGINT" },
	{ "int(10) unsigned", "INT", WH_TYPE_WIDEN, "BIGINT" },
	{ "bigint(20) unsigned", "BIGINT", WH_TYPE_WIDEN, "DECIMAL(20,0)" },
	{ "tinyint(1)", "BOOLEAN", WH_TYPE_SAME, "TINYINT" },
	{ "decimal(10,2)", "DECIMAL(12,2)", WH_TYPE_WIDEN, "DECIMAL(12,2)" },
	{ "decimal(10,2)", "DECIMAL(12,4)", WH_TYPE_WIDEN, "DECIMAL(12,4)" },
	{ "decimal(10,2)", "DECIMAL(10,4)", WH_TYPE_WIDEN, "DECIMAL(12,4)" },
	{ "decimal(38,6)", "DECIMAL(38,8)", WH_TYPE_WIDEN, "DECIMAL(40,8)" },
	{ "decimal(12,4)", "DECIMAL(10,2)", WH_TYPE_NARROWER, "DECIMAL(12,4)" },
	{ "decimal(65,30)", "DECIMAL(38,38)", WH_TYPE_INCOMPATIBLE, "DECIMAL(65,30)" },
	{ "int(11)", "DECIMAL(12,2)", WH_TYPE_WIDEN, "DECIMAL(12,2)" },
	{ "int(11)", "DECIMAL(10,2)", WH_TYPE_WIDEN, "DECIMAL(12,2)" },
	{ "bigint(20)", "DECIMAL(38,6)", WH_TYPE_WIDEN, "DECIMAL(38,6)" },
	{ "decimal(9,0)", "INT", WH_TYPE_WIDEN, "INT" },
	{ "int(11)", "DOUBLE", WH_TYPE_WIDEN, "DOUBLE" },
	{ "bigint(20)", "DOUBLE", WH_TYPE_INCOMPATIBLE, "BIGINT" },
	{ "decimal(38,6)", "DOUBLE", WH_TYPE_INCOMPATIBLE, "DECIMAL(38,6)" },
	{ "float", "DOUBLE", WH_TYPE_WIDEN, "DOUBLE" },
	{ "date", "DATETIME(6)", WH_TYPE_WIDEN, "DATETIME(6)" },
	{ "date", "DATETIME", WH_TYPE_WIDEN, "DATETIME" },
	{ "datetime", "DATETIME(3)", WH_TYPE_WIDEN, "DATETIME(3)" },
	{ "datetime(6)", "DATE", WH_TYPE_NARROWER, "DATETIME(6)" },
	{ "time", "TIME(6)", WH_TYPE_WIDEN, "TIME(6)" },
	{ "varchar(500)", "INT", WH_TYPE_NARROWER, "VARCHAR(500)" },
	{ "varchar(11)", "INT", WH_TYPE_NARROWER, "VARCHAR(11)" },
	{ "varchar(10)", "INT", WH_TYPE_INCOMPATIBLE, "VARCHAR(10)" },
	{ "varchar(5)", "INT", WH_TYPE_INCOMPATIBLE, "VARCHAR(5)" },
	{ "longtext", "DATETIME(6)", WH_TYPE_NARROWER, "LONGTEXT" },
	{ "double", "DECIMAL(38,6)", WH_TYPE_NARROWER, "DOUBLE" },
	{ "double", "BIGINT", WH_TYPE_NARROWER, "DOUBLE" },
	{ "int(11)", "VARCHAR(20)", WH_TYPE_INCOMPATIBLE, "INT" },
	{ "date", "BIGINT", WH_TYPE_INCOMPATIBLE, "DATE" },
	{ "varbinary(16)", "BLOB", WH_TYPE_WIDEN, "BLOB" },
	{ "blob", "VARCHAR(10)", WH_TYPE_INCOMPATIBLE, "BLOB" },
	{ "year(4)", "YEAR", WH_TYPE_SAME, "YEAR(4)" },
	{ "enum('a','b')", "VARCHAR(255)", WH_TYPE_INCOMPATIBLE, "ENUM('A','B')" },
};

static void test_type_change(void)
{
	for (size_t i = 0; i < sizeof change_cases / sizeof change_cases[0]; i++) {
		char to[WH_TYPE_TEXT_MAX];
		enum wh_change c = wh_type_change(change_cases[i].existing,
		                                  change_cases[i].wanted, to);

		if (c != change_cases[i].change || strcmp(to, change_cases[i].to) != 0)
			fprintf(stderr, "\n  %s <- %s: %d %s\n", change_cases[i].existing,
			        change_cases[i].wanted, (int)c, to);
		CU_ASSERT_EQUAL(c, change_cases[i].change);
		CU_ASSERT_STRING_EQUAL(to, change_cases[i].to);
	}
}

int suite_warehouse(void)
{
	static const struct test_case tests[] = {
		{ "wh_ident_ok table", test_ident_ok },
		{ "wh_ident_ok 64 multibyte characters", test_ident_multibyte_limit },
		{ "wh_quote table", test_quote },
		{ "wh_quote capacity", test_quote_capacity },
		{ "warehouse_* config keys", test_config_keys },
		{ "wh_open refuses a bad default schema", test_open_bad_schema },
		{ "wh_schema_physical values", test_schema_physical },
		{ "wh_schema_reserved", test_schema_reserved },
		{ "config_accounts_check", test_config_accounts },
		{ "wh_type_change lattice", test_type_change },
		{ NULL, NULL },
	};
	return suite_add("warehouse", tests);
}
