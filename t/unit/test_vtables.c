/* test_vtables.c - every bound of every route's validation table, at its
 * limit and one past it.
 *
 * test_validate.c proves the validator on a table of its own; this walks the
 * tables the handlers use, so a bound written into a route (a name of 255
 * characters, a limit of 1000 rows) is shown to hold exactly where it says.
 * Each field is sent alone: an error about another field (one that is
 * required) means this one passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "suites.h"
#include "http/request.h"
#include "http/validate.h"
#include "platform/platform.h"
#include "retrieval/retrieval.h"
#include "storage/storage.h"
#include "util/arena.h"
#include "util/config.h"

static const struct vtable {
	const char *name;
	const struct vfield *fields;
	bool query;
} vtables[] = {
#define BODY(t)  { #t, t, false }
#define QUERY(t) { #t, t, true }
	BODY(platform_connection_body), QUERY(platform_connection_query),
	BODY(platform_webhook_body), QUERY(platform_delivery_query),
	BODY(platform_pipeline_body),
	BODY(platform_job_body), BODY(platform_input_body),
	BODY(platform_output_body), BODY(platform_raw_body),
	QUERY(platform_run_query), QUERY(platform_log_query),
	QUERY(platform_pipelines_query),
	BODY(platform_memory_body), BODY(platform_input_patch_body),
	BODY(platform_pipeline_ref_body), BODY(platform_sync_mode_body),
	BODY(platform_job_patch_id),
	BODY(storage_refresh_body), QUERY(storage_download_query),
	QUERY(storage_history_query), QUERY(storage_upload_query),
	BODY(storage_validate_name_body), BODY(storage_column_body),
	BODY(storage_table_body), QUERY(storage_table_query),
	QUERY(storage_dataset_query), QUERY(storage_files_query),
	QUERY(storage_file_delete_query), QUERY(storage_delete_query),
	BODY(rag_question_body), QUERY(rag_question_query), BODY(rag_dataset_body),
	BODY(rag_documents_body), BODY(rag_document_body),
	QUERY(rag_datasets_query), QUERY(rag_documents_query),
#undef BODY
#undef QUERY
};

/* Room for any field's value; a table's fields are typed by the validator
 * into it at their offsets. */
static union {
	char bytes[4096];
	long long align;
} out;

static struct arena *arena;
static struct config cfg;
static int checked;

/* The value of f at limit as JSON (a query sends its text); NULL when f's
 * type has no bound to test or limit is not a size. */
static struct json_object *value_at(const struct vfield *f, double limit)
{
	struct json_object *v;
	char *s;

	switch (f->type) {
	case V_STR:
		if (limit < 0 || limit > 1 << 20)
			return NULL;
		s = calloc(1, (size_t)limit + 1);
		memset(s, 'a', (size_t)limit);
		v = json_object_new_string_len(s, (int)limit);
		free(s);
		return v;
	case V_INT:
		if (fabs(limit) > 9e18)
			return NULL;
		return json_object_new_int64((long long)limit);
	case V_NUM:
		return json_object_new_double(limit);
	case V_ARR:
		if (limit < 0 || limit > 1 << 16)
			return NULL;
		v = json_object_new_array();
		for (double i = 0; i < limit; i++)
			json_object_array_add(v, NULL);
		return v;
	case V_OBJ: {
		/* {"k":"..."} is 8 bytes around the string */
		if (f->max <= 0 || limit < 8 || limit > 1 << 20)
			return NULL;
		s = calloc(1, (size_t)limit - 8 + 1);
		memset(s, 'a', (size_t)limit - 8);
		v = json_object_new_object();
		json_object_object_add(v, "k", json_object_new_string(s));
		free(s);
		return v;
	}
	default:
		return NULL;
	}
}

/* Validate f alone at v; 0 when f passed (any error names another field). */
static int check_one(const struct vtable *t, const struct vfield *f,
                     struct json_object *v, struct verror *e)
{
	int rc;

	memset(&out, 0, sizeof out);
	if (t->query) {
		char qs[8192], *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", qs, NULL };
		struct req r;

		const char *text = json_object_get_string(v);
		size_t n = (size_t)snprintf(qs, sizeof qs, "QUERY_STRING=%s=", f->name);

		/* form encoding: a '+' (of 1e+30) would be a space */
		for (; *text != '\0' && n + 4 < sizeof qs; text++)
			n += (size_t)snprintf(qs + n, sizeof qs - n, *text == '+' ? "%%2B" : "%c", *text);
		CU_ASSERT_EQUAL_FATAL(req_init_env(&r, arena, &cfg, env), REQ_OK);
		rc = validate_query(t->fields, &r, &out, NULL, e);
	} else {
		struct json_object *body = json_object_new_object();

		json_object_object_add(body, f->name, json_object_get(v));
		rc = validate_json(t->fields, body, &out, NULL, e);
		json_object_put(body);
	}
	return rc == 0 || strcmp(e->field, f->name) != 0 ? 0 : -1;
}

/* f at limit passes; one step outside it (toward step) fails on f. */
static void bound(const struct vtable *t, const struct vfield *f, double limit,
                  double step)
{
	double past = f->type == V_NUM ? nextafter(limit, step * INFINITY) : limit + step;
	struct json_object *at = value_at(f, limit), *over = value_at(f, past);
	struct verror e;

	if (t->query && f->type == V_STR && past > 8000)
		goto out;                   /* past what qs below carries */
	if (at != NULL) {
		if (check_one(t, f, at, &e) != 0)
			fprintf(stderr, "\n  %s.%s at %g: %s\n", t->name, f->name, limit,
			        e.message);
		CU_ASSERT_EQUAL(check_one(t, f, at, &e), 0);
		checked++;
	}
	if (over != NULL) {
		int rc = check_one(t, f, over, &e);

		if (rc == 0 || e.code != VERR_RANGE)
			fprintf(stderr, "\n  %s.%s at %g: passed or not a range error\n",
			        t->name, f->name, past);
		CU_ASSERT_EQUAL(rc, -1);
		CU_ASSERT_EQUAL(e.code, VERR_RANGE);
		checked++;
	}
out:
	json_object_put(at);
	json_object_put(over);
}

static void test_every_bound(void)
{
	arena = arena_new();
	memset(&cfg, 0, sizeof cfg);
	checked = 0;
	for (size_t i = 0; i < sizeof vtables / sizeof vtables[0]; i++) {
		struct vfield fields[64];
		struct vtable copy = vtables[i], *t = &copy;
		size_t n = 0;

		/* A configured max stands in as "no limit" so that min can be
		 * tried: the handler sets the real one on a copy the same way. */
		do {
			CU_ASSERT_FATAL(n < 64);
			fields[n] = vtables[i].fields[n];
			if (fields[n].flags & V_CFG_MAX)
				fields[n].max = 1e9;
		} while (vtables[i].fields[n++].name != NULL);
		t->fields = fields;
		CU_ASSERT_PTR_NOT_NULL_FATAL(t->fields[0].name);
		for (const struct vfield *f = t->fields; f->name != NULL; f++) {
			/* a nonblank string of no characters is refused as blank */
			bool min_is_empty = f->type == V_STR && f->min <= 0;

			CU_ASSERT_FATAL((size_t)(f->off) < sizeof out.bytes - 16);
			/* a configured max is the API tests' to hold */
			if (!(f->flags & V_CFG_MAX))
				bound(t, f, f->max, +1);
			if (!min_is_empty && !(f->type == V_OBJ))
				bound(t, f, f->min, -1);
		}
	}
	/* the tables hold well over a hundred bounds; none was skipped by a
	 * table coming out empty */
	CU_ASSERT(checked > 100);
	arena_free(arena);
}

int suite_vtables(void)
{
	static const struct test_case tests[] = {
		{ "every route's bounds at max and max + 1", test_every_bound },
		{ NULL, NULL },
	};

	return suite_add("validation tables", tests);
}
