/* test_warehouse.c - the pure parts of the warehouse: identifier checks and
 * quoting (the last line of defence before a name reaches SQL text). */
#include <string.h>

#include "suites.h"
#include "db/warehouse.h"
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
	CU_ASSERT_STRING_EQUAL(c.warehouse_user, "");
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

int suite_warehouse(void)
{
	static const struct test_case tests[] = {
		{ "wh_ident_ok table", test_ident_ok },
		{ "wh_ident_ok 64 multibyte characters", test_ident_multibyte_limit },
		{ "wh_quote table", test_quote },
		{ "wh_quote capacity", test_quote_capacity },
		{ "warehouse_* config keys", test_config_keys },
		{ "wh_open refuses a bad default schema", test_open_bad_schema },
		{ NULL, NULL },
	};
	return suite_add("warehouse", tests);
}
