/* test_filter.c - metadata_filter operators and refused specs. */
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "suites.h"
#include "retrieval/filter.h"

struct bad_case { const char *spec, *err; };

static const struct bad_case bad[] = {
	{ "[]", "must be an object" },
	{ "\"x\"", "must be an object" },
	{ "{\"a\": [1, 2]}", "key 'a': a list needs {\"$in\": [...]}" },
	{ "{\"a\": {\"$gt\": 1}}", "key 'a': unknown operator (use $in or $contains)" },
	{ "{\"a\": {\"$in\": [1], \"$contains\": \"x\"}}",
	  "key 'a': an operator object has exactly one key, $in or $contains" },
	{ "{\"a\": {}}", "key 'a': an operator object has exactly one key, $in or $contains" },
	{ "{\"a\": {\"$in\": 1}}", "key 'a': $in must be an array" },
	{ "{\"a\": {\"$in\": [{}]}}",
	  "key 'a': each $in value must be a string, number, boolean or null" },
	{ "{\"a\": {\"$contains\": [1]}}",
	  "key 'a': $contains must be a string, number, boolean or null" },
	{ "{\"\": 1}", "keys must have 1 to 1024 characters" },
	{ NULL, NULL },
};

static void test_refused(void)
{
	char err[256];

	for (const struct bad_case *t = bad; t->spec != NULL; t++) {
		struct json_object *j = json_tokener_parse(t->spec);
		err[0] = '\0';
		CU_ASSERT_PTR_NULL(meta_filter_parse(j, err, sizeof err));
		if (strcmp(err, t->err) != 0)
			fprintf(stderr, "\nfilter %s: got \"%s\"\n", t->spec, err);
		CU_ASSERT_STRING_EQUAL(err, t->err);
		json_object_put(j);
	}
}

/* Specs at their bounds and one past them. */
static void test_bounds(void)
{
	char err[256], big[1100];
	struct json_object *j = json_object_new_object(), *arr = json_object_new_array();
	struct meta_filter *f;

	for (int i = 0; i < FILTER_MAX_KEYS; i++) {
		snprintf(big, sizeof big, "k%d", i);
		json_object_object_add(j, big, json_object_new_int(i));
	}
	CU_ASSERT_PTR_NOT_NULL(f = meta_filter_parse(j, err, sizeof err));
	meta_filter_free(f);
	json_object_object_add(j, "one-more", json_object_new_int(1));
	CU_ASSERT_PTR_NULL(meta_filter_parse(j, err, sizeof err));
	CU_ASSERT_STRING_EQUAL(err, "has more than 64 keys");
	json_object_put(j);

	for (int i = 0; i < FILTER_MAX_IN; i++)
		json_object_array_add(arr, json_object_new_int(i));
	j = json_object_new_object();
	struct json_object *op = json_object_new_object();
	json_object_object_add(op, "$in", arr);
	json_object_object_add(j, "n", op);
	CU_ASSERT_PTR_NOT_NULL(f = meta_filter_parse(j, err, sizeof err));
	meta_filter_free(f);
	json_object_array_add(arr, json_object_new_int(-1));
	CU_ASSERT_PTR_NULL(meta_filter_parse(j, err, sizeof err));
	CU_ASSERT_STRING_EQUAL(err, "key 'n': $in has more than 1000 values");
	json_object_put(j);

	memset(big, 'x', FILTER_MAX_STRING);
	big[FILTER_MAX_STRING] = '\0';
	j = json_object_new_object();
	json_object_object_add(j, "s", json_object_new_string(big));
	CU_ASSERT_PTR_NOT_NULL(f = meta_filter_parse(j, err, sizeof err));
	meta_filter_free(f);
	big[FILTER_MAX_STRING] = 'x';
	big[FILTER_MAX_STRING + 1] = '\0';
	json_object_object_add(j, "s", json_object_new_string(big));
	CU_ASSERT_PTR_NULL(meta_filter_parse(j, err, sizeof err));
	CU_ASSERT_STRING_EQUAL(err, "key 's': the value is longer than 1024 characters");
	json_object_put(j);
}

struct match_case { const char *spec, *meta; bool want; };

static const struct match_case matches[] = {
	{ "{}", "{}", true },
	{ "{}", "{\"a\": 1}", true },
	{ "{\"lang\": \"en\"}", "{\"lang\": \"en\", \"n\": 1}", true },
	{ "{\"lang\": \"en\"}", "{\"lang\": \"fr\"}", false },
	{ "{\"lang\": \"en\"}", "{\"lang\": \"english\"}", false },
	{ "{\"lang\": \"en\"}", "{}", false },                       /* missing key */
	{ "{\"n\": 1}", "{\"n\": 1.0}", true },
	{ "{\"n\": 1}", "{\"n\": \"1\"}", false },
	{ "{\"n\": 2.5}", "{\"n\": 2.5}", true },
	{ "{\"ok\": true}", "{\"ok\": true}", true },
	{ "{\"ok\": true}", "{\"ok\": 1}", false },
	{ "{\"x\": null}", "{\"x\": null}", true },
	{ "{\"x\": null}", "{}", false },
	{ "{\"lang\": {\"$in\": [\"en\", \"de\"]}}", "{\"lang\": \"de\"}", true },
	{ "{\"lang\": {\"$in\": [\"en\", \"de\"]}}", "{\"lang\": \"fr\"}", false },
	{ "{\"lang\": {\"$in\": []}}", "{\"lang\": \"fr\"}", false },
	{ "{\"src\": {\"$contains\": \"guide\"}}", "{\"src\": \"user-guide.md\"}", true },
	{ "{\"src\": {\"$contains\": \"guide\"}}", "{\"src\": \"notes.md\"}", false },
	{ "{\"tags\": {\"$contains\": \"b\"}}", "{\"tags\": [\"a\", \"b\"]}", true },
	{ "{\"tags\": {\"$contains\": \"b\"}}", "{\"tags\": [\"abc\"]}", false },
	{ "{\"tags\": {\"$contains\": 3}}", "{\"tags\": [1, 3]}", true },
	{ "{\"n\": {\"$contains\": \"1\"}}", "{\"n\": 1}", false },
	{ "{\"a\": 1, \"b\": 2}", "{\"a\": 1, \"b\": 2}", true },    /* AND */
	{ "{\"a\": 1, \"b\": 2}", "{\"a\": 1, \"b\": 3}", false },
	{ "{\"a\": 1}", "[1]", false },
	{ NULL, NULL, false },
};

static void test_match(void)
{
	char err[256];

	for (const struct match_case *t = matches; t->spec != NULL; t++) {
		struct json_object *s = json_tokener_parse(t->spec), *m = json_tokener_parse(t->meta);
		struct meta_filter *f = meta_filter_parse(s, err, sizeof err);
		json_object_put(s);                     /* the filter holds its own reference */
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		if (meta_filter_match(f, m) != t->want)
			fprintf(stderr, "\nfilter %s on %s: want %d\n", t->spec, t->meta, t->want);
		CU_ASSERT_EQUAL(meta_filter_match(f, m), t->want);
		meta_filter_free(f);
		json_object_put(m);
	}
	CU_ASSERT_TRUE(meta_filter_match(NULL, NULL));
}

int suite_filter(void)
{
	static const struct test_case tests[] = {
		{ "bad specs refused with a clear message", test_refused },
		{ "bounds: keys, $in values, string length", test_bounds },
		{ "equality, $in, $contains, AND", test_match },
		{ NULL, NULL },
	};
	return suite_add("filter", tests);
}
