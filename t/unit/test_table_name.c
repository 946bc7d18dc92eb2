/* test_table_name.c - the MariaDB + Snowflake name rules of validate-name:
 * every rule at its bounds, both reserved word lists, normalized_name,
 * warnings, and suggestions that are themselves valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "storage/table_name.h"

static struct table_name_check chk;

static void check_str(const char *name)
{
	table_name_check(name, strlen(name), "table_name", &chk);
}

/* True when some error message contains needle. */
static int has_error(const char *needle)
{
	for (size_t i = 0; i < chk.nerrors; i++)
		if (strstr(chk.errors[i], needle) != NULL)
			return 1;
	return 0;
}

static int has_warning(const char *needle)
{
	for (size_t i = 0; i < chk.nwarnings; i++)
		if (strstr(chk.warnings[i], needle) != NULL)
			return 1;
	return 0;
}

/* Every suggestion passes every rule, and there is at least one. */
static void assert_suggestions_valid(const char *what)
{
	CU_ASSERT_FALSE(chk.valid);
	if (chk.nsuggestions == 0)
		fprintf(stderr, "\n  no suggestion for %s\n", what);
	CU_ASSERT(chk.nsuggestions >= 1);
	CU_ASSERT(chk.nsuggestions <= TABLE_NAME_SUGGESTIONS_MAX);
	for (size_t i = 0; i < chk.nsuggestions; i++) {
		struct table_name_check again;

		if (!table_name_valid(chk.suggestions[i]))
			fprintf(stderr, "\n  suggestion '%s' for %s is not valid\n",
			        chk.suggestions[i], what);
		CU_ASSERT(table_name_valid(chk.suggestions[i]));
		table_name_check(chk.suggestions[i], strlen(chk.suggestions[i]),
		                 "table_name", &again);
		CU_ASSERT(again.valid);
		for (size_t k = 0; k < i; k++)
			CU_ASSERT_STRING_NOT_EQUAL(chk.suggestions[i], chk.suggestions[k]);
	}
}

/* ---- the reserved word lists ----------------------------------------------- */

static void assert_list_sorted(int target, size_t want)
{
	const char *const *w;
	size_t n = table_name_reserved_list(target, &w);

	CU_ASSERT_EQUAL(n, want);
	for (size_t i = 0; i < n; i++) {
		for (const char *p = w[i]; *p != '\0'; p++)
			CU_ASSERT((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_');
		if (i > 0 && strcmp(w[i - 1], w[i]) >= 0) {
			fprintf(stderr, "\n  list %d not sorted at %s, %s\n", target, w[i - 1], w[i]);
			CU_FAIL("reserved list not strictly sorted");
		}
	}
}

static void test_lists_sorted(void)
{
	/* MariaDB "Reserved Words": 248 words plus OFFSET, ROW_NUMBER and
	 * VECTOR (reserved from 10.6, 10.7 and 11.7 on).  Snowflake "Reserved
	 * & limited keywords": 92. */
	assert_list_sorted(TABLE_NAME_MARIADB, 251);
	assert_list_sorted(TABLE_NAME_SNOWFLAKE, 92);
	CU_ASSERT_EQUAL(table_name_reserved_list(0, &(const char *const *){ NULL }), 0);
}

/* Every listed word is refused, in any letter case, naming the right
 * target(s), with valid suggestions. */
static void assert_every_word_refused(int target)
{
	const char *const *w;
	size_t n = table_name_reserved_list(target, &w);

	for (size_t i = 0; i < n; i++) {
		char lower[64], mixed[64];
		int t = table_name_reserved(w[i], strlen(w[i]));
		size_t len = strlen(w[i]);

		CU_ASSERT(t & target);
		for (size_t k = 0; k <= len; k++) {
			char c = w[i][k];

			lower[k] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
			mixed[k] = k % 2 ? lower[k] : c;
		}
		CU_ASSERT_EQUAL(table_name_reserved(lower, len), t);
		CU_ASSERT_EQUAL(table_name_reserved(mixed, len), t);

		check_str(lower);
		CU_ASSERT_FALSE(chk.valid);
		CU_ASSERT_FALSE(table_name_valid(mixed));
		{
			char want[160];

			snprintf(want, sizeof want, "is a reserved word in %s: %s",
			         t == 3 ? "MariaDB and Snowflake"
			                : t == TABLE_NAME_MARIADB ? "MariaDB" : "Snowflake",
			         w[i]);
			if (!has_error(want))
				fprintf(stderr, "\n  no '%s' for %s\n", want, lower);
			CU_ASSERT(has_error(want));
		}
		assert_suggestions_valid(w[i]);
	}
}

static void test_every_mariadb_word(void)
{
	assert_every_word_refused(TABLE_NAME_MARIADB);
}

static void test_every_snowflake_word(void)
{
	assert_every_word_refused(TABLE_NAME_SNOWFLAKE);
}

/* Samples from each page, checked by name so that a list edit that drops
 * one shows up here. */
static void test_reserved_samples(void)
{
	static const struct { const char *word; int targets; } cases[] = {
		/* both */
		{ "SELECT", 3 }, { "table", 3 }, { "Order", 3 }, { "from", 3 },
		{ "CURRENT_USER", 3 }, { "localtimestamp", 3 }, { "regexp", 3 },
		{ "Rlike", 3 }, { "window", 3 }, { "ROWS", 3 }, { "trigger", 3 },
		{ "intersect", 3 }, { "schema", 3 }, { "database", 3 },
		/* MariaDB only */
		{ "ACCESSIBLE", 1 }, { "key", 1 }, { "ZEROFILL", 1 }, { "offset", 1 },
		{ "row_number", 1 }, { "vector", 1 }, { "sql_calc_found_rows", 1 },
		{ "MASTER_SSL_VERIFY_SERVER_CERT", 1 }, { "int1", 1 }, { "float8", 1 },
		{ "asc", 1 }, { "desc", 1 }, { "limit", 1 }, { "usage", 1 },
		{ "delete_domain_id", 1 }, { "xor", 1 }, { "year_month", 1 },
		/* Snowflake only */
		{ "QUALIFY", 2 }, { "ilike", 2 }, { "minus", 2 }, { "gscluster", 2 },
		{ "whenever", 2 }, { "try_cast", 2 }, { "account", 2 },
		{ "organization", 2 }, { "tablesample", 2 }, { "lateral", 2 },
		{ "view", 2 }, { "connection", 2 }, { "issue", 2 }, { "some", 2 },
		/* neither */
		{ "users", 0 }, { "orders", 0 }, { "date", 0 }, { "text", 0 },
		{ "timestamp", 0 }, { "package", 0 }, { "selects", 0 }, { "sel", 0 },
		{ "a", 0 }, { "_select", 0 }, { "select_", 0 }, { "ROW_NUMBERS", 0 },
		{ NULL, 0 },
	};

	for (size_t i = 0; cases[i].word != NULL; i++) {
		int got = table_name_reserved(cases[i].word, strlen(cases[i].word));

		if (got != cases[i].targets)
			fprintf(stderr, "\n  %s: reserved %d, want %d\n", cases[i].word,
			        got, cases[i].targets);
		CU_ASSERT_EQUAL(got, cases[i].targets);
		CU_ASSERT_EQUAL(table_name_valid(cases[i].word), cases[i].targets == 0);
	}
	/* Not a word at all: NUL inside, too long, empty. */
	CU_ASSERT_EQUAL(table_name_reserved("SEL\0ECT", 7), 0);
	CU_ASSERT_EQUAL(table_name_reserved("", 0), 0);
	CU_ASSERT_EQUAL(table_name_reserved("SELECTSELECTSELECTSELECTSELECTSELECTSELECT", 42), 0);
	/* A prefix of the buffer is the word. */
	CU_ASSERT_EQUAL(table_name_reserved("SELECTED", 6), 3);
}

static void test_oracle_and_exceptions(void)
{
	static const char *const oracle[] = { "BODY", "elsif", "goto", "history",
	    "minus", "others", "package", "period", "raise", "rownum", "rowtype",
	    "sysdate", "system", "system_time", "versioning", "without", NULL };
	static const char *const exceptions[] = { "action", "bit", "date", "enum",
	    "no", "text", "time", "timestamp", NULL };

	for (size_t i = 0; oracle[i] != NULL; i++)
		CU_ASSERT(table_name_oracle_reserved(oracle[i], strlen(oracle[i])));
	for (size_t i = 0; exceptions[i] != NULL; i++) {
		CU_ASSERT(table_name_mariadb_exception(exceptions[i], strlen(exceptions[i])));
		check_str(exceptions[i]);
		CU_ASSERT(chk.valid);
		CU_ASSERT(has_warning("allowed unquoted only for historical reasons"));
	}
	check_str("package");
	CU_ASSERT(chk.valid);
	CU_ASSERT(has_warning("reserved word in MariaDB's Oracle mode (sql_mode=ORACLE): PACKAGE"));
	/* MINUS: Snowflake reserves it (error); Oracle mode too (no warning
	 * for an invalid name). */
	check_str("minus");
	CU_ASSERT_FALSE(chk.valid);
	CU_ASSERT_EQUAL(chk.nwarnings, 0);
	CU_ASSERT_FALSE(table_name_oracle_reserved("users", 5));
	CU_ASSERT_FALSE(table_name_mariadb_exception("users", 5));
}

/* ---- the character and length rules ---------------------------------------- */

struct rule_case {
	const char *name;
	size_t len;                       /* 0: strlen */
	int valid;
	const char *error;                /* substring of one error, when invalid */
};

static const struct rule_case rule_cases[] = {
	{ "sales", 0, 1, NULL },
	{ "Sales_2024", 0, 1, NULL },
	{ "_", 0, 1, NULL },
	{ "_1", 0, 1, NULL },
	{ "_2024_sales", 0, 1, NULL },
	{ "a1", 0, 1, NULL },
	{ "a$", 0, 1, NULL },
	{ "x$y$z", 0, 1, NULL },
	{ "Z", 0, 1, NULL },
	{ "", 0, 0, "table_name is empty" },
	/* first character (Snowflake) */
	{ "1a", 0, 0, "starts with a digit: Snowflake requires a letter or an underscore first" },
	{ "2024_sales", 0, 0, "starts with a digit" },
	{ "$a", 0, 0, "starts with '$': Snowflake requires a letter or an underscore first" },
	/* only digits (MariaDB) */
	{ "1", 0, 0, "consists only of digits: MariaDB does not allow that" },
	{ "0123456789", 0, 0, "consists only of digits" },
	/* characters neither allows unquoted */
	{ "my table", 0, 0, "contains ' ' (space): neither MariaDB nor Snowflake allows it" },
	{ "sales-2024", 0, 0, "contains '-': neither" },
	{ "a.b", 0, 0, "contains '.': neither" },
	{ "a`b", 0, 0, "contains '`': neither" },
	{ "a\"b", 0, 0, "contains '\"': neither" },
	{ "a'b", 0, 0, "contains ''': neither" },
	{ "a;b", 0, 0, "contains ';': neither" },
	{ "a/b", 0, 0, "contains '/': neither" },
	{ "a\tb", 0, 0, "contains U+0009: neither" },
	{ "a\x7f" "b", 0, 0, "contains U+007F: neither" },
	{ "a\0b", 3, 0, "contains U+0000: neither" },
	{ "trailing ", 0, 0, "contains ' ' (space)" },
	{ "a-b c", 0, 0, "contains '-', ' ' (space): neither MariaDB nor Snowflake allows these" },
	{ "a!b@c#d%e^f&g", 0, 0, "contains '!', '@', '#', '%', '^' and more" },
	{ "x\xf0\x9f\x98\x80", 0, 0, "contains '\xf0\x9f\x98\x80' (U+1F600): neither" },
	/* U+0080..U+FFFF: MariaDB yes, Snowflake no */
	{ "caf\xc3\xa9", 0, 0, "contains '\xc3\xa9' (U+00E9): MariaDB allows it unquoted but Snowflake allows only ASCII" },
	{ "\xe6\x97\xa5\xe6\x9c\xac", 0, 0, "MariaDB allows these unquoted but Snowflake" },
	{ "a\xc2\xa0" "b", 0, 0, "contains U+00A0: MariaDB allows it" },
	{ "\xef\xbf\xbf", 0, 0, "(U+FFFF): MariaDB allows it" },
	/* not UTF-8 */
	{ "a\xff", 0, 0, "is not valid UTF-8" },
	{ "a\xc3", 0, 0, "is not valid UTF-8" },             /* truncated */
	{ "\xc0\xaf", 0, 0, "is not valid UTF-8" },          /* overlong '/' */
	{ "\xe0\x80\xaf", 0, 0, "is not valid UTF-8" },      /* overlong */
	{ "\xed\xa0\x80", 0, 0, "is not valid UTF-8" },      /* surrogate */
	{ "\xf4\x90\x80\x80", 0, 0, "is not valid UTF-8" },  /* > U+10FFFF */
	{ "\x80", 0, 0, "is not valid UTF-8" },              /* stray continuation */
	{ NULL, 0, 0, NULL },
};

static void test_rules(void)
{
	for (const struct rule_case *c = rule_cases; c->name != NULL; c++) {
		size_t len = c->len ? c->len : strlen(c->name);

		table_name_check(c->name, len, "table_name", &chk);
		if (chk.valid != (c->valid != 0))
			fprintf(stderr, "\n  '%s': valid %d, want %d\n", c->name, chk.valid, c->valid);
		CU_ASSERT_EQUAL(chk.valid, c->valid != 0);
		if (c->valid) {
			CU_ASSERT_EQUAL(chk.nerrors, 0);
			CU_ASSERT_EQUAL(chk.nsuggestions, 0);
			CU_ASSERT(table_name_valid(chk.normalized));
			continue;
		}
		CU_ASSERT(chk.nerrors >= 1);
		CU_ASSERT_EQUAL(chk.normalized[0], '\0');
		CU_ASSERT_EQUAL(chk.nwarnings, 0);
		if (!has_error(c->error)) {
			fprintf(stderr, "\n  '%s': no error containing \"%s\"; got:\n", c->name, c->error);
			for (size_t i = 0; i < chk.nerrors; i++)
				fprintf(stderr, "    %s\n", chk.errors[i]);
		}
		CU_ASSERT(has_error(c->error));
		assert_suggestions_valid(c->name);
	}
}

/* Several rules broken at once: each is named. */
static void test_several_errors(void)
{
	check_str("12 3");
	CU_ASSERT(has_error("starts with a digit"));
	CU_ASSERT(has_error("contains ' ' (space)"));
	CU_ASSERT_FALSE(has_error("consists only of digits"));
	CU_ASSERT_EQUAL(chk.nerrors, 2);

	check_str("123");
	CU_ASSERT_EQUAL(chk.nerrors, 2);                /* digit first, digits only */

	table_name_check("caf\xc3\xa9-1", 7, "schema_name", &chk);
	CU_ASSERT(has_error("schema_name contains '-'"));
	CU_ASSERT(has_error("schema_name contains '\xc3\xa9' (U+00E9)"));
	assert_suggestions_valid("schema");
	CU_ASSERT_STRING_EQUAL(chk.suggestions[0], "cafe_1");
}

static void test_length_bounds(void)
{
	char name[400];

	/* 64 characters: valid (MariaDB's maximum); warned, being > 56. */
	memset(name, 'a', 64);
	name[64] = '\0';
	check_str(name);
	CU_ASSERT(chk.valid);
	CU_ASSERT(has_warning("is 64 characters long, close to MariaDB's limit of 64"));

	/* 65: invalid, MariaDB only. */
	memset(name, 'a', 65);
	name[65] = '\0';
	check_str(name);
	CU_ASSERT_FALSE(chk.valid);
	CU_ASSERT(has_error("table_name is 65 characters long: MariaDB allows at most 64"));
	CU_ASSERT_FALSE(has_error("Snowflake at most 255"));
	assert_suggestions_valid("65 a");
	CU_ASSERT_EQUAL(strlen(chk.suggestions[0]), 64);

	/* 255: still only MariaDB's limit; 256: Snowflake's too. */
	memset(name, 'b', 255);
	name[255] = '\0';
	check_str(name);
	CU_ASSERT_FALSE(has_error("Snowflake at most 255"));
	memset(name, 'b', 256);
	name[256] = '\0';
	check_str(name);
	CU_ASSERT(has_error("is 256 characters long: MariaDB allows at most 64 and Snowflake at most 255"));
	assert_suggestions_valid("256 b");

	/* 56: no warning; 57: warning. */
	memset(name, 'c', 56);
	name[56] = '\0';
	check_str(name);
	CU_ASSERT(chk.valid);
	CU_ASSERT_FALSE(has_warning("close to"));
	memset(name, 'c', 57);
	name[57] = '\0';
	check_str(name);
	CU_ASSERT(chk.valid);
	CU_ASSERT(has_warning("is 57 characters long, close to MariaDB's limit of 64"));

	/* Characters, not bytes: 64 two-byte characters are 64 long (and
	 * refused for Snowflake's ASCII rule, not for length). */
	for (int i = 0; i < 64; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[128] = '\0';
	check_str(name);
	CU_ASSERT_FALSE(has_error("characters long"));
	CU_ASSERT(has_error("(U+00E9)"));
	for (int i = 64; i < 65; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[130] = '\0';
	check_str(name);
	CU_ASSERT(has_error("is 65 characters long"));
}

/* ---- warnings of valid names ------------------------------------------------- */

static void test_warnings(void)
{
	check_str("sales");
	CU_ASSERT(chk.valid);
	CU_ASSERT_EQUAL(chk.nwarnings, 0);

	check_str("SalesData");
	CU_ASSERT(chk.valid);
	CU_ASSERT(has_warning("upper-case letters: Snowflake stores an unquoted name in "
	                      "upper case (SALESDATA) while MariaDB keeps it as written"));
	CU_ASSERT_EQUAL(chk.nwarnings, 1);

	check_str("price$usd");
	CU_ASSERT(chk.valid);
	CU_ASSERT(has_warning("contains '$'"));
	CU_ASSERT_EQUAL(chk.nwarnings, 1);

	table_name_check("Raw", 3, "schema_name", &chk);
	CU_ASSERT(has_warning("schema_name has upper-case letters"));
}

/* ---- normalized_name ----------------------------------------------------------- */

static void test_normalize(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "sales", "sales" },
		{ "Sales", "sales" },
		{ "SALES", "sales" },
		{ "SalesData", "sales_data" },
		{ "salesData2024", "sales_data2024" },
		{ "sales2024Q1", "sales2024_q1" },
		{ "HTTPServerLog", "http_server_log" },
		{ "customerID", "customer_id" },
		{ "Sales_2024_EU", "sales_2024_eu" },
		{ "Sales__Data", "sales_data" },
		{ "sales_", "sales" },
		{ "_private", "_private" },
		{ "__Private", "_private" },
		{ "_", "_" },
		{ "price$usd", "price_usd" },
		{ "a$", "a" },
		{ "Order$", "order_table" },            /* "order" is reserved */
		{ "Select_", "select_table" },
		{ NULL, NULL },
	};
	char out[TABLE_NAME_BUF];

	for (size_t i = 0; cases[i].in != NULL; i++) {
		CU_ASSERT_EQUAL(table_name_normalize(cases[i].in, out), 0);
		if (strcmp(out, cases[i].want) != 0)
			fprintf(stderr, "\n  normalize(%s) = %s, want %s\n", cases[i].in, out,
			        cases[i].want);
		CU_ASSERT_STRING_EQUAL(out, cases[i].want);
		CU_ASSERT(table_name_valid(out));
		check_str(cases[i].in);
		CU_ASSERT_STRING_EQUAL(chk.normalized, cases[i].want);
	}
	CU_ASSERT_EQUAL(table_name_normalize("select", out), -1);
	CU_ASSERT_EQUAL(table_name_normalize("1a", out), -1);
	CU_ASSERT_EQUAL(table_name_normalize("", out), -1);

	/* 64 capitals make 64 lower-case letters (no '_' between capitals). */
	{
		char name[65];

		memset(name, 'A', 64);
		name[64] = '\0';
		CU_ASSERT_EQUAL(table_name_normalize(name, out), 0);
		CU_ASSERT_EQUAL(strlen(out), 64);
		/* aB repeated: 64 characters become 95 with '_': cut to 64. */
		for (int i = 0; i < 64; i++)
			name[i] = i % 2 ? 'B' : 'a';
		CU_ASSERT_EQUAL(table_name_normalize(name, out), 0);
		CU_ASSERT(strlen(out) <= 64);
		CU_ASSERT(table_name_valid(out));
		CU_ASSERT(out[strlen(out) - 1] != '_');
	}
}

/* ---- suggestions ------------------------------------------------------------------ */

static void test_suggestions(void)
{
	static const struct { const char *in, *first; } cases[] = {
		{ "my table", "my_table" },
		{ "Sales-Data 2024", "sales_data_2024" },
		{ "2024_sales", "sales_2024" },
		{ "2024 Sales", "sales_2024" },
		{ "123", "t_123" },
		{ "select", "select_table" },
		{ "ORDER", "order_table" },
		{ "caf\xc3\xa9", "cafe" },
		{ "\xc3\x9c" "bersicht", "ubersicht" },
		{ "Stra\xc3\x9f" "e", "strasse" },
		{ "$x", "x" },
		{ "-", "new_table" },
		{ "\xe6\x97\xa5\xe6\x9c\xac", "new_table" },
		{ "", "new_table" },
		{ "a\xff", "a" },
		{ NULL, NULL },
	};

	for (size_t i = 0; cases[i].in != NULL; i++) {
		check_str(cases[i].in);
		assert_suggestions_valid(cases[i].in);
		if (chk.nsuggestions > 0 && strcmp(chk.suggestions[0], cases[i].first) != 0)
			fprintf(stderr, "\n  first suggestion for '%s' is %s, want %s\n",
			        cases[i].in, chk.suggestions[0], cases[i].first);
		CU_ASSERT(chk.nsuggestions > 0 &&
		          strcmp(chk.suggestions[0], cases[i].first) == 0);
	}
	table_name_check("", 0, "schema_name", &chk);
	CU_ASSERT_STRING_EQUAL(chk.suggestions[0], "new_schema");
}

/* Random bytes: never a crash, always a verdict; valid names have a valid
 * normalized form, invalid ones valid suggestions. */
static void test_random_names(void)
{
	static const char alphabet[] = "aZ_$09 -.\xc3\xa9\xff";
	unsigned seed = 12345;

	for (int round = 0; round < 20000; round++) {
		char name[80];
		size_t len;

		seed = seed * 1103515245u + 12345u;
		len = (seed >> 16) % 70;
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			name[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
		}
		name[len] = '\0';
		table_name_check(name, len, "table_name", &chk);
		if (chk.valid) {
			CU_ASSERT(table_name_valid(chk.normalized));
			CU_ASSERT_EQUAL(chk.nerrors, 0);
		} else {
			CU_ASSERT(chk.nerrors >= 1);
			assert_suggestions_valid("random");
		}
	}
}

int suite_table_name(void)
{
	static const struct test_case tests[] = {
		{ "reserved lists sorted, sizes", test_lists_sorted },
		{ "every MariaDB reserved word refused", test_every_mariadb_word },
		{ "every Snowflake reserved word refused", test_every_snowflake_word },
		{ "reserved samples from both pages", test_reserved_samples },
		{ "Oracle mode and historical exceptions", test_oracle_and_exceptions },
		{ "character and first-character rules", test_rules },
		{ "several errors at once", test_several_errors },
		{ "length bounds 56/57, 64/65, 255/256", test_length_bounds },
		{ "warnings of valid names", test_warnings },
		{ "normalized_name", test_normalize },
		{ "suggestions", test_suggestions },
		{ "random names", test_random_names },
		{ NULL, NULL },
	};

	return suite_add("table_name", tests);
}
