/* test_sync_mode.c - the load-type rules of jdbc jobs: every row of the
 * transition table, the same-type cases, each error_code, each database
 * kind's allowed and refused column types, the warnings and force, and the
 * PATCH input checks (a bookmark PATCH accepts is one the jdbc run reads). */
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "platform/dbkind.h"
#include "platform/sync_mode.h"
#include "runner/connectors/jdbc.h"

/* ---- helpers ------------------------------------------------------------- */

static const char *include_ts[] = { "id", "updated_at", "name" };
static const char *keys_id[] = { "id" };
static const char *keys_other[] = { "id", "region" };

/* A jdbc postgres job of the given type with column updated_at. */
static struct sync_job job_of(enum sync_load t)
{
	struct sync_job j = { .connector = "jdbc", .plugin = "postgres",
	                      .load_type = t };

	if (t != SYNC_FULL_LOAD) {
		j.column_name = "updated_at";
		j.column_type = "timestamp without time zone";
	}
	if (t == SYNC_QUALIFY)
		j.primary_keys = (struct sync_list){ keys_id, 1 };
	return j;
}

/* Decide from a JSON body text; the body object is kept in *bodyp. */
static void decide(const struct sync_job *job, const char *json,
                   struct sync_request *req, struct sync_result *res,
                   struct json_object **bodyp)
{
	*bodyp = json_tokener_parse(json);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*bodyp);
	memset(res, 0, sizeof *res);
	sync_request_parse(*bodyp, req, res);
	sync_decide(job, req, res);
}

static bool has_error(const struct sync_result *res, const char *field,
                      const char *code)
{
	for (size_t i = 0; i < res->nerrors; i++)
		if (strcmp(res->errors[i].field, field) == 0 &&
		    strcmp(res->errors[i].code, code) == 0)
			return true;
	return false;
}

static bool has_warning(const struct sync_result *res, const char *part,
                        bool blocking)
{
	for (size_t i = 0; i < res->nwarnings; i++)
		if (strstr(res->warnings[i].message, part) != NULL &&
		    res->warnings[i].blocking == blocking)
			return true;
	return false;
}

static const char *BODY_FULL = "{\"target_load_type\": \"full_load\"}";
static const char *BODY_INCR =
	"{\"target_load_type\": \"incremental\", \"incremental_column_name\": "
	"\"updated_at\", \"incremental_column_type\": \"timestamp without time zone\"}";
static const char *BODY_QUAL =
	"{\"target_load_type\": \"incremental_with_qualify\", "
	"\"incremental_column_name\": \"updated_at\", \"incremental_column_type\": "
	"\"timestamp without time zone\", \"primary_keys\": [\"id\"]}";

/* ---- the transition table --------------------------------------------------- */

struct transition {
	enum sync_load from;
	const char **body;
	enum sync_action action;
	bool qualify_task, clear_bookmark, changed;
};

static const struct transition transitions[] = {
	/* the six rows of the spec */
	{ SYNC_FULL_LOAD,   &BODY_INCR, SYNC_INITIALIZE, false, true,  true },
	{ SYNC_FULL_LOAD,   &BODY_QUAL, SYNC_INITIALIZE, true,  true,  true },
	{ SYNC_INCREMENTAL, &BODY_FULL, SYNC_RESET,      false, true,  true },
	{ SYNC_INCREMENTAL, &BODY_QUAL, SYNC_PRESERVE,   true,  false, true },
	{ SYNC_QUALIFY,     &BODY_INCR, SYNC_PRESERVE,   false, false, true },
	{ SYNC_QUALIFY,     &BODY_FULL, SYNC_RESET,      false, true,  true },
	/* same type, same settings: preserve, nothing changes */
	{ SYNC_FULL_LOAD,   &BODY_FULL, SYNC_PRESERVE,   false, false, false },
	{ SYNC_INCREMENTAL, &BODY_INCR, SYNC_PRESERVE,   false, false, false },
	{ SYNC_QUALIFY,     &BODY_QUAL, SYNC_PRESERVE,   true,  false, false },
};

static void test_transitions(void)
{
	for (size_t i = 0; i < sizeof transitions / sizeof transitions[0]; i++) {
		const struct transition *t = &transitions[i];
		struct sync_job job = job_of(t->from);
		struct sync_request req;
		struct sync_result res;
		struct json_object *body;

		decide(&job, *t->body, &req, &res, &body);
		if (res.nerrors != 0 || res.action != t->action)
			fprintf(stderr, "\n  row %zu: %zu errors, action %s", i,
			        res.nerrors, sync_action_name(res.action));
		CU_ASSERT_EQUAL(res.nerrors, 0);
		CU_ASSERT_EQUAL(res.action, t->action);
		CU_ASSERT_EQUAL(res.qualify_task, t->qualify_task);
		CU_ASSERT_EQUAL(res.clear_bookmark, t->clear_bookmark);
		CU_ASSERT_EQUAL(res.changed, t->changed);
		CU_ASSERT_FALSE(sync_blocked(&res, &req));
		/* Only the same-type no-op says nothing changed. */
		CU_ASSERT_EQUAL(has_warning(&res, "nothing changed", false), !t->changed);
		CU_ASSERT(res.effect[0] != '\0');
		json_object_put(body);
	}
}

static void test_same_type_column_change(void)
{
	struct sync_job job = job_of(SYNC_INCREMENTAL);
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;

	/* Another column: the bookmark means nothing for it, so reset. */
	decide(&job, "{\"target_load_type\": \"incremental\", "
	       "\"incremental_column_name\": \"created_at\", "
	       "\"incremental_column_type\": \"date\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 0);
	CU_ASSERT_EQUAL(res.action, SYNC_RESET);
	CU_ASSERT_TRUE(res.changed && res.clear_bookmark);
	CU_ASSERT_TRUE(has_warning(&res, "changed from 'updated_at' to 'created_at'",
	                           false));
	json_object_put(body);

	/* Same name, another type: also a different column. */
	decide(&job, "{\"target_load_type\": \"incremental\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"bigint\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.action, SYNC_RESET);
	json_object_put(body);

	/* The type in other case is the same column. */
	decide(&job, "{\"target_load_type\": \"incremental\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"TIMESTAMP WITHOUT TIME ZONE\"}",
	       &req, &res, &body);
	CU_ASSERT_EQUAL(res.action, SYNC_PRESERVE);
	CU_ASSERT_FALSE(res.changed);
	CU_ASSERT_STRING_EQUAL(res.column_type, "timestamp without time zone");
	json_object_put(body);

	/* incremental -> qualify on another column: reset, not preserve. */
	decide(&job, "{\"target_load_type\": \"incremental_with_qualify\", "
	       "\"incremental_column_name\": \"id\", \"incremental_column_type\": "
	       "\"bigint\", \"primary_keys\": [\"id\"]}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.action, SYNC_RESET);
	CU_ASSERT_TRUE(res.qualify_task && res.clear_bookmark);
	json_object_put(body);
}

static void test_same_type_keys_change(void)
{
	struct sync_job job = job_of(SYNC_QUALIFY);
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;

	decide(&job, "{\"target_load_type\": \"incremental_with_qualify\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"timestamp without time zone\", "
	       "\"primary_keys\": [\"id\", \"region\"]}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 0);
	CU_ASSERT_EQUAL(res.action, SYNC_PRESERVE);
	CU_ASSERT_TRUE(res.changed);
	CU_ASSERT_FALSE(res.clear_bookmark);
	CU_ASSERT_TRUE(has_warning(&res, "primary_keys updated", false));
	json_object_put(body);
	(void)keys_other;
}

/* ---- error codes ------------------------------------------------------------------ */

static void test_missing_fields(void)
{
	struct sync_job job = job_of(SYNC_FULL_LOAD);
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;

	decide(&job, "{\"target_load_type\": \"incremental\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 2);
	CU_ASSERT_TRUE(has_error(&res, "incremental_column_name",
	                         "MISSING_INCREMENTAL_COLUMN_NAME"));
	CU_ASSERT_TRUE(has_error(&res, "incremental_column_type",
	                         "MISSING_INCREMENTAL_COLUMN_TYPE"));
	CU_ASSERT_EQUAL(res.nrequired, 2);
	CU_ASSERT_STRING_EQUAL(res.required[0], "incremental_column_name");
	CU_ASSERT_STRING_EQUAL(res.required[1], "incremental_column_type");
	json_object_put(body);

	/* "" counts as missing. */
	decide(&job, "{\"target_load_type\": \"incremental\", "
	       "\"incremental_column_name\": \"\", \"incremental_column_type\": "
	       "\"date\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 1);
	CU_ASSERT_TRUE(has_error(&res, "incremental_column_name",
	                         "MISSING_INCREMENTAL_COLUMN_NAME"));
	json_object_put(body);

	decide(&job, "{\"target_load_type\": \"incremental_with_qualify\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"date\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 1);
	CU_ASSERT_TRUE(has_error(&res, "primary_keys", "MISSING_PRIMARY_KEYS"));
	CU_ASSERT_EQUAL(res.nrequired, 3);
	CU_ASSERT_STRING_EQUAL(res.required[2], "primary_keys");
	json_object_put(body);

	decide(&job, "{\"target_load_type\": \"incremental_with_qualify\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"date\", \"primary_keys\": []}",
	       &req, &res, &body);
	CU_ASSERT_TRUE(has_error(&res, "primary_keys", "MISSING_PRIMARY_KEYS"));
	json_object_put(body);

	/* An invalid type alone requires nothing more. */
	decide(&job, "{\"target_load_type\": \"incremental\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"varchar\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 1);
	CU_ASSERT_EQUAL(res.nrequired, 0);
	json_object_put(body);
}

static void test_connector(void)
{
	static const char *connectors[] = { "singer", "file_storage" };
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;

	for (size_t i = 0; i < 2; i++) {
		struct sync_job job = { .connector = connectors[i],
		                        .plugin = "tap-postgres",
		                        .load_type = SYNC_FULL_LOAD };

		decide(&job, BODY_INCR, &req, &res, &body);
		CU_ASSERT_EQUAL(res.nerrors, 1);
		CU_ASSERT_TRUE(has_error(&res, "plugin", "INVALID_CONNECTOR_TYPE"));
		CU_ASSERT_PTR_NOT_NULL(strstr(res.errors[0].message, connectors[i]));
		json_object_put(body);
	}
	/* A jdbc plugin of no known kind cannot check a column type. */
	{
		struct sync_job job = job_of(SYNC_FULL_LOAD);

		job.plugin = "db2";
		decide(&job, BODY_INCR, &req, &res, &body);
		CU_ASSERT_TRUE(has_error(&res, "plugin", "INVALID_CONNECTOR_TYPE"));
		json_object_put(body);
		decide(&job, BODY_FULL, &req, &res, &body);
		CU_ASSERT_EQUAL(res.nerrors, 0);
		json_object_put(body);
	}
}

static void test_parse_errors(void)
{
	static const struct { const char *json, *field, *code; } cases[] = {
		{ "{}", "target_load_type", "MISSING_TARGET_LOAD_TYPE" },
		{ "{\"target_load_type\": \"append\"}", "target_load_type",
		  "INVALID_TARGET_LOAD_TYPE" },
		{ "{\"target_load_type\": 1}", "target_load_type",
		  "INVALID_TARGET_LOAD_TYPE" },
		{ "{\"target_load_type\": \"full_load\", \"mode\": 1}", "mode",
		  "UNKNOWN_FIELD" },
		{ "{\"target_load_type\": \"full_load\", \"force\": \"yes\"}", "force",
		  "INVALID_TYPE" },
		{ "{\"target_load_type\": \"full_load\", \"primary_keys\": \"id\"}",
		  "primary_keys", "INVALID_VALUE" },
		{ "{\"target_load_type\": \"full_load\", \"primary_keys\": [\"\"]}",
		  "primary_keys", "INVALID_VALUE" },
		{ "{\"target_load_type\": \"full_load\", \"primary_keys\": [1]}",
		  "primary_keys", "INVALID_VALUE" },
		{ "{\"target_load_type\": \"full_load\", \"primary_keys\": [\"a\", \"a\"]}",
		  "primary_keys", "INVALID_VALUE" },
		{ "{\"target_load_type\": \"full_load\", \"incremental_column_name\": 5}",
		  "incremental_column_name", "INVALID_TYPE" },
		{ "[]", "body", "INVALID_TYPE" },
		{ NULL, NULL, NULL },
	};
	struct sync_job job = job_of(SYNC_FULL_LOAD);

	for (size_t i = 0; cases[i].json != NULL; i++) {
		struct sync_request req;
		struct sync_result res;
		struct json_object *body;

		decide(&job, cases[i].json, &req, &res, &body);
		if (!has_error(&res, cases[i].field, cases[i].code))
			fprintf(stderr, "\n  %s: no %s on %s", cases[i].json,
			        cases[i].code, cases[i].field);
		CU_ASSERT_TRUE(has_error(&res, cases[i].field, cases[i].code));
		json_object_put(body);
	}
}

static void test_parse_bounds(void)
{
	struct sync_job job = job_of(SYNC_FULL_LOAD);
	char name[SYNC_NAME_MAX + 2], json[4096];
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;
	size_t len;

	memset(name, 'c', sizeof name);
	name[SYNC_NAME_MAX] = '\0';                           /* max */
	snprintf(json, sizeof json, "{\"target_load_type\": \"incremental\", "
	         "\"incremental_column_name\": \"%s\", \"incremental_column_type\": "
	         "\"date\"}", name);
	decide(&job, json, &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 0);
	json_object_put(body);
	name[SYNC_NAME_MAX] = 'c';                            /* max + 1 */
	name[SYNC_NAME_MAX + 1] = '\0';
	snprintf(json, sizeof json, "{\"target_load_type\": \"incremental\", "
	         "\"incremental_column_name\": \"%s\", \"incremental_column_type\": "
	         "\"date\"}", name);
	decide(&job, json, &req, &res, &body);
	CU_ASSERT_TRUE(has_error(&res, "incremental_column_name",
	                         "OUT_OF_RANGE"));
	json_object_put(body);

	/* SYNC_KEYS_MAX primary keys, then one more. */
	for (int extra = 0; extra <= 1; extra++) {
		len = (size_t)snprintf(json, sizeof json, "{\"target_load_type\": "
		      "\"incremental_with_qualify\", \"incremental_column_name\": \"u\", "
		      "\"incremental_column_type\": \"date\", \"primary_keys\": [");
		for (int i = 0; i < SYNC_KEYS_MAX + extra; i++)
			len += (size_t)snprintf(json + len, sizeof json - len, "%s\"k%d\"",
			                        i > 0 ? ", " : "", i);
		snprintf(json + len, sizeof json - len, "]}");
		decide(&job, json, &req, &res, &body);
		if (res.nerrors != (size_t)extra)
			fprintf(stderr, "\n  extra %d: %zu errors, first %s", extra,
			        res.nerrors, res.nerrors ? res.errors[0].code : "");
		CU_ASSERT_EQUAL(res.nerrors, (size_t)extra);
		if (extra == 0)
			CU_ASSERT_EQUAL(req.primary_keys.n, SYNC_KEYS_MAX);
		json_object_put(body);
	}
}

/* ---- database kinds ------------------------------------------------------------------ */

struct kind_case {
	const char *plugin;
	enum dbkind kind;
	const char *allowed[9];
	const char *refused[5];
};

static const struct kind_case kinds[] = {
	{ "postgres", DBKIND_A,
	  { "timestamp with time zone", "timestamp without time zone", "date",
	    "integer", "bigint", "smallint", "serial", "bigserial", NULL },
	  { "datetime", "int", "varchar", "NUMBER", NULL } },
	{ "mysql", DBKIND_B,
	  { "datetime", "timestamp", "date", "int", "bigint", "smallint",
	    "mediumint", "tinyint", NULL },
	  { "integer", "serial", "datetime2", "varchar", NULL } },
	{ "mariadb", DBKIND_B,
	  { "datetime", "timestamp", "date", "int", "bigint", "smallint",
	    "mediumint", "tinyint", NULL },
	  { "timestamp with time zone", "NUMBER", "text", NULL } },
	{ "oracle", DBKIND_C,
	  { "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH LOCAL TIME ZONE",
	    "DATE", "NUMBER", NULL },
	  { "int", "datetime", "bigint", "VARCHAR2", NULL } },
	{ "sqlserver", DBKIND_D,
	  { "datetime", "datetime2", "smalldatetime", "date", "int", "bigint",
	    "smallint", "tinyint", NULL },
	  { "timestamp", "datetimeoffset", "mediumint", "NUMBER", NULL } },
};

static void test_kinds(void)
{
	CU_ASSERT_EQUAL(dbkind_of_plugin("db2"), DBKIND_NONE);
	CU_ASSERT_EQUAL(dbkind_of_plugin(NULL), DBKIND_NONE);
	CU_ASSERT_PTR_NULL(dbkind_types(DBKIND_NONE)[0]);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const struct kind_case *k = &kinds[i];
		const char *const *types = dbkind_types(k->kind);
		size_t n = 0;

		CU_ASSERT_EQUAL(dbkind_of_plugin(k->plugin), k->kind);
		for (; k->allowed[n] != NULL; n++) {
			CU_ASSERT_PTR_NOT_NULL(dbkind_type_find(k->kind, k->allowed[n]));
			CU_ASSERT_STRING_EQUAL(types[n], k->allowed[n]);
		}
		CU_ASSERT_PTR_NULL(types[n]);               /* exactly these */
		for (size_t r = 0; k->refused[r] != NULL; r++)
			CU_ASSERT_PTR_NULL(dbkind_type_find(k->kind, k->refused[r]));
	}
}

/* Through sync_decide: each kind's allowed types pass, refused ones are
 * INVALID_INCREMENTAL_COLUMN_TYPE with the kind's list in the message. */
static void test_kinds_decide(void)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const struct kind_case *k = &kinds[i];
		struct sync_job job = job_of(SYNC_FULL_LOAD);
		struct sync_request req;
		struct sync_result res;
		struct json_object *body;
		char json[512];

		job.plugin = k->plugin;
		for (size_t a = 0; k->allowed[a] != NULL; a++) {
			snprintf(json, sizeof json, "{\"target_load_type\": \"incremental\", "
			         "\"incremental_column_name\": \"c\", "
			         "\"incremental_column_type\": \"%s\"}", k->allowed[a]);
			decide(&job, json, &req, &res, &body);
			CU_ASSERT_EQUAL(res.nerrors, 0);
			CU_ASSERT_EQUAL(res.action, SYNC_INITIALIZE);
			json_object_put(body);
		}
		for (size_t r = 0; k->refused[r] != NULL; r++) {
			snprintf(json, sizeof json, "{\"target_load_type\": \"incremental\", "
			         "\"incremental_column_name\": \"c\", "
			         "\"incremental_column_type\": \"%s\"}", k->refused[r]);
			decide(&job, json, &req, &res, &body);
			CU_ASSERT_EQUAL(res.nerrors, 1);
			CU_ASSERT_TRUE(has_error(&res, "incremental_column_type",
			                         "INVALID_INCREMENTAL_COLUMN_TYPE"));
			for (size_t a = 0; k->allowed[a] != NULL; a++)
				CU_ASSERT_PTR_NOT_NULL(strstr(res.errors[0].message,
				                              k->allowed[a]));
			json_object_put(body);
		}
	}
}

/* ---- warnings and force ------------------------------------------------------------------ */

static void test_warnings(void)
{
	struct sync_job job = job_of(SYNC_FULL_LOAD);
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;

	/* The incremental column outside the include list blocks. */
	job.include = (struct sync_list){ include_ts, 1 };     /* "id" only */
	decide(&job, BODY_INCR, &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 0);
	CU_ASSERT_TRUE(has_warning(&res, "'updated_at' is not in", true));
	CU_ASSERT_TRUE(sync_blocked(&res, &req));
	json_object_put(body);

	/* ... unless forced. */
	decide(&job, "{\"target_load_type\": \"incremental\", "
	       "\"incremental_column_name\": \"updated_at\", "
	       "\"incremental_column_type\": \"date\", \"force\": true}",
	       &req, &res, &body);
	CU_ASSERT_FALSE(sync_blocked(&res, &req));
	CU_ASSERT_TRUE(has_warning(&res, "'updated_at' is not in", true));
	json_object_put(body);

	/* Keys outside the list block; the column inside does not. */
	job.include = (struct sync_list){ include_ts + 1, 2 }; /* updated_at, name */
	decide(&job, BODY_QUAL, &req, &res, &body);
	CU_ASSERT_FALSE(has_warning(&res, "'updated_at' is not in", true));
	CU_ASSERT_TRUE(has_warning(&res, "Primary key columns not in", true));
	CU_ASSERT_TRUE(has_warning(&res, "'id'", true));
	CU_ASSERT_TRUE(sync_blocked(&res, &req));
	json_object_put(body);

	/* Everything inside a non-empty list: no warning. */
	job.include = (struct sync_list){ include_ts, 3 };
	decide(&job, BODY_QUAL, &req, &res, &body);
	CU_ASSERT_EQUAL(res.nwarnings, 0);
	json_object_put(body);

	/* An empty list includes every column. */
	job.include = (struct sync_list){ NULL, 0 };
	decide(&job, BODY_QUAL, &req, &res, &body);
	CU_ASSERT_EQUAL(res.nwarnings, 0);
	json_object_put(body);

	/* RUNNING blocks a change... */
	job.running = true;
	decide(&job, BODY_INCR, &req, &res, &body);
	CU_ASSERT_TRUE(has_warning(&res, "RUNNING", true));
	CU_ASSERT_TRUE(sync_blocked(&res, &req));
	json_object_put(body);

	/* ... but not a no-op, whose warning is informational. */
	decide(&job, BODY_FULL, &req, &res, &body);
	CU_ASSERT_EQUAL(res.nwarnings, 1);
	CU_ASSERT_TRUE(has_warning(&res, "nothing changed", false));
	CU_ASSERT_FALSE(sync_blocked(&res, &req));
	json_object_put(body);
}

static void test_ignored_fields(void)
{
	struct sync_job job = job_of(SYNC_INCREMENTAL);
	struct sync_request req;
	struct sync_result res;
	struct json_object *body;

	decide(&job, "{\"target_load_type\": \"full_load\", "
	       "\"incremental_column_name\": \"x\"}", &req, &res, &body);
	CU_ASSERT_EQUAL(res.nerrors, 0);
	CU_ASSERT_EQUAL(res.action, SYNC_RESET);
	CU_ASSERT_PTR_NULL(res.column_type);
	CU_ASSERT_TRUE(has_warning(&res, "ignored", false));
	CU_ASSERT_FALSE(sync_blocked(&res, &req));
	json_object_put(body);
}

/* ---- PATCH input checks --------------------------------------------------------------------- */

/* The bookmarks of test_timestamp. */
static const char *ts_good[] = {
	"2024-01-31", "2024-02-29", "2000-02-29", "2024-01-31T23:59:59",
	"2024-01-31T23:59:59Z", "2024-01-31T00:00:00.5Z",
	"2024-01-31T00:00:00.123456789Z", "2024-01-31T10:00:00+02:00",
	"2024-01-31T10:00:00-05:30", "0001-01-01", NULL,
};
static const char *ts_bad[] = {
	"", "2024", "2024-1-31", "2024-01-32", "2024-02-30", "2023-02-29",
	"1900-02-29", "2024-13-01", "2024-00-10", "0000-01-01",
	"2024-01-31 10:00:00", "2024-01-31T24:00:00", "2024-01-31T10:60:00",
	"2024-01-31T10:00:60", "2024-01-31T10:00", "2024-01-31T10:00:00.Z",
	"2024-01-31T10:00:00.1234567890Z", "2024-01-31T10:00:00ZZ",
	"2024-01-31T10:00:00+0200", "2024-01-31T10:00:00+24:00",
	"2024-01-31T10:00:00+02:00x", "2024-01-31T", "2024-01-31x",
	"yesterday", "1706745600", " 2024-01-31", NULL,
};

static void test_timestamp(void)
{
	const char **good = ts_good, **bad = ts_bad;

	for (size_t i = 0; good[i] != NULL; i++) {
		if (sync_timestamp_check(good[i]) != 0)
			fprintf(stderr, "\n  refused '%s'", good[i]);
		CU_ASSERT_EQUAL(sync_timestamp_check(good[i]), 0);
	}
	for (size_t i = 0; bad[i] != NULL; i++) {
		if (sync_timestamp_check(bad[i]) == 0)
			fprintf(stderr, "\n  accepted '%s'", bad[i]);
		CU_ASSERT_EQUAL(sync_timestamp_check(bad[i]), -1);
	}
	CU_ASSERT_EQUAL(sync_timestamp_check(NULL), -1);
}

/* The same strings through the jdbc run's reading of a bookmark, for every
 * date and time column kind: what PATCH accepts, the run accepts; what
 * PATCH refuses, the run refuses too (but for the SQL form with a space,
 * which stored values may have). */
static void test_timestamp_at_run_time(void)
{
	static const enum jdbc_kind col[] = { JK_DATE, JK_DATETIME, JK_TIMESTAMPTZ };

	for (size_t k = 0; k < sizeof col / sizeof col[0]; k++) {
		char out[80];

		for (size_t i = 0; ts_good[i] != NULL; i++) {
			int rc = jdbc_bookmark_param(col[k], ts_good[i], out, sizeof out);

			if (rc != 0)
				fprintf(stderr, "\n  run refused '%s' (kind %zu)", ts_good[i], k);
			CU_ASSERT_EQUAL(rc, 0);
		}
		for (size_t i = 0; ts_bad[i] != NULL; i++) {
			int rc = jdbc_bookmark_param(col[k], ts_bad[i], out, sizeof out);

			if (strcmp(ts_bad[i], "2024-01-31 10:00:00") == 0) {
				CU_ASSERT_EQUAL(rc, 0);
				continue;
			}
			if (rc == 0)
				fprintf(stderr, "\n  run accepted '%s' (kind %zu)", ts_bad[i], k);
			CU_ASSERT_EQUAL(rc, -1);
		}
	}
}

static int include_json(const char *json, bool *clear)
{
	struct json_object *v = json_tokener_parse(json);
	char why[160];
	int rc = sync_include_check(v, clear, why, sizeof why);

	json_object_put(v);
	return rc;
}

static void test_include(void)
{
	static char big[SYNC_INCLUDE_MAX * 8 + 64];
	char name[SYNC_NAME_MAX + 8];
	bool clear;
	size_t len;

	CU_ASSERT_EQUAL(include_json("null", &clear), 0);
	CU_ASSERT_TRUE(clear);
	CU_ASSERT_EQUAL(include_json("[]", &clear), 0);
	CU_ASSERT_TRUE(clear);
	CU_ASSERT_EQUAL(include_json("[\"id\", \"name\"]", &clear), 0);
	CU_ASSERT_FALSE(clear);
	CU_ASSERT_EQUAL(include_json("\"id\"", &clear), -1);
	CU_ASSERT_EQUAL(include_json("{}", &clear), -1);
	CU_ASSERT_EQUAL(include_json("[\"\"]", &clear), -1);
	CU_ASSERT_EQUAL(include_json("[1]", &clear), -1);
	CU_ASSERT_EQUAL(include_json("[null]", &clear), -1);
	CU_ASSERT_EQUAL(include_json("[\"a\", \"a\"]", &clear), -1);

	memset(name, 'n', sizeof name);
	snprintf(big, sizeof big, "[\"%.*s\"]", SYNC_NAME_MAX, name);
	CU_ASSERT_EQUAL(include_json(big, &clear), 0);           /* name max */
	snprintf(big, sizeof big, "[\"%.*s\"]", SYNC_NAME_MAX + 1, name);
	CU_ASSERT_EQUAL(include_json(big, &clear), -1);          /* max + 1 */

	/* Characters, not bytes: 255 two-byte characters fit. */
	for (int extra = 0; extra <= 1; extra++) {
		len = (size_t)snprintf(big, sizeof big, "[\"");
		for (int i = 0; i < SYNC_NAME_MAX + extra; i++)
			len += (size_t)snprintf(big + len, sizeof big - len, "\xc3\xa9");
		snprintf(big + len, sizeof big - len, "\"]");
		CU_ASSERT_EQUAL(include_json(big, &clear), extra ? -1 : 0);
	}

	for (int extra = 0; extra <= 1; extra++) {
		len = (size_t)snprintf(big, sizeof big, "[");
		for (int i = 0; i < SYNC_INCLUDE_MAX + extra; i++)
			len += (size_t)snprintf(big + len, sizeof big - len, "%s\"c%d\"",
			                        i > 0 ? "," : "", i);
		snprintf(big + len, sizeof big - len, "]");
		CU_ASSERT_EQUAL(include_json(big, &clear), extra ? -1 : 0);
	}
}

static void test_names(void)
{
	CU_ASSERT_EQUAL(sync_load_parse("full_load"), SYNC_FULL_LOAD);
	CU_ASSERT_EQUAL(sync_load_parse("incremental"), SYNC_INCREMENTAL);
	CU_ASSERT_EQUAL(sync_load_parse("incremental_with_qualify"), SYNC_QUALIFY);
	CU_ASSERT_EQUAL(sync_load_parse("Full_Load"), SYNC_LOAD_NONE);
	CU_ASSERT_EQUAL(sync_load_parse(NULL), SYNC_LOAD_NONE);
	CU_ASSERT_STRING_EQUAL(sync_load_name(SYNC_QUALIFY), "incremental_with_qualify");
	CU_ASSERT_STRING_EQUAL(sync_action_name(SYNC_INITIALIZE), "initialize");
	CU_ASSERT_STRING_EQUAL(sync_action_name(SYNC_PRESERVE), "preserve");
	CU_ASSERT_STRING_EQUAL(sync_action_name(SYNC_RESET), "reset");
}

/* The ValidationError list: every field's problem at once, each under its
 * path, a missing field also in required_fields; unknown keys refused only
 * when strict. */
struct verr_in {
	const char *name;
	long long n;
};

static const struct vfield verr_fields[] = {
	{ "name", V_STR, V_REQUIRED, 1, 3, NULL, NULL, VOFF(struct verr_in, name) },
	{ "n", V_INT, V_REQUIRED, 0, 9, NULL, NULL, VOFF(struct verr_in, n) },
	VFIELDS_END
};

static const char *verr_at(struct platform_verr *v, size_t i, const char *key)
{
	return json_object_get_string(json_object_object_get(
	    json_object_array_get_idx(v->errors, i), key));
}

static void test_verr_validate(void)
{
	struct json_object *o = json_tokener_parse("{\"name\": \"abcd\", \"x\": 1}");
	struct verr_in in = { NULL, 0 };
	struct platform_verr v;

	platform_verr_init(&v);
	CU_ASSERT_EQUAL(platform_verr_validate(&v, "jobs[1].input", verr_fields, o,
	                                       &in, true), -1);
	CU_ASSERT_EQUAL(platform_verr_count(&v), 3);
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 0, "field"), "jobs[1].input.x");
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 0, "error_code"), "UNKNOWN_FIELD");
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 1, "field"), "jobs[1].input.name");
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 1, "error_code"), "OUT_OF_RANGE");
	CU_ASSERT_PTR_NOT_NULL(strstr(verr_at(&v, 1, "message"),
	                              "jobs[1].input.name must be 1 to 3"));
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 2, "error_code"), "MISSING_FIELD");
	CU_ASSERT_EQUAL(json_object_array_length(v.required), 1);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(
	    json_object_array_get_idx(v.required, 0)), "jobs[1].input.n");
	platform_verr_free(&v);

	/* Not strict: other keys are the caller's; max passes. */
	platform_verr_init(&v);
	json_object_object_add(o, "name", json_object_new_string("abc"));
	json_object_object_add(o, "n", json_object_new_int(9));
	CU_ASSERT_EQUAL(platform_verr_validate(&v, "", verr_fields, o, &in, false), 0);
	CU_ASSERT_EQUAL(platform_verr_count(&v), 0);
	CU_ASSERT_STRING_EQUAL(in.name, "abc");
	CU_ASSERT_EQUAL(in.n, 9);
	platform_verr_free(&v);
	json_object_put(o);

	/* Not an object: one error on the path (or body). */
	platform_verr_init(&v);
	o = json_tokener_parse("[1]");
	CU_ASSERT_EQUAL(platform_verr_validate(&v, "jobs[0]", verr_fields, o, &in,
	                                       true), -1);
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 0, "field"), "jobs[0]");
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 0, "error_code"), "INVALID_TYPE");
	CU_ASSERT_STRING_EQUAL(verr_at(&v, 0, "message"), "jobs[0] must be an object");
	platform_verr_free(&v);
	json_object_put(o);
}

int suite_sync_mode(void)
{
	static const struct test_case tests[] = {
		{ "transition table and same type", test_transitions },
		{ "same type, column change resets", test_same_type_column_change },
		{ "same type, primary keys change", test_same_type_keys_change },
		{ "missing fields and required_fields", test_missing_fields },
		{ "INVALID_CONNECTOR_TYPE", test_connector },
		{ "body parse errors", test_parse_errors },
		{ "body bounds", test_parse_bounds },
		{ "database kinds: allowed and refused types", test_kinds },
		{ "database kinds through sync_decide", test_kinds_decide },
		{ "warnings and force", test_warnings },
		{ "ignored fields", test_ignored_fields },
		{ "ISO 8601 bookmark", test_timestamp },
		{ "ISO 8601 bookmark: PATCH and the run agree", test_timestamp_at_run_time },
		{ "column_include_list", test_include },
		{ "names", test_names },
		{ "validation list of the platform", test_verr_validate },
		{ NULL, NULL },
	};
	return suite_add("sync_mode", tests);
}
