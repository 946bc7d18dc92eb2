/* fuzz_json_body.c - libFuzzer target: a JSON request body as a handler
 * reads it (req_json_body_or_reply, which calls json_parse_bounded).
 *
 * The first byte picks the nesting limit (1 to 16) and the body limit (the
 * smallest allowed, or the default); the rest is the body.  Checked: the
 * answer agrees with json_parse_bounded on the same text; a refusal is a 400
 * "Malformed JSON: ..." (413 past the body limit); a parsed value nests no
 * deeper than the limit, and its text parses back to an equal value. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "http/request.h"
#include "util/arena.h"
#include "util/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Containers nested in v, v included. */
static int depth_of(struct json_object *v)
{
	int d = 0;

	switch (json_object_get_type(v)) {
	case json_type_object: {
		json_object_object_foreach(v, k, val) {
			int n = depth_of(val);

			(void)k;
			if (n > d)
				d = n;
		}
		return d + 1;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			int n = depth_of(json_object_array_get_idx(v, i));

			if (n > d)
				d = n;
		}
		return d + 1;
	default:
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg;
	static struct arena *a;
	char len_var[64];
	char *env[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/dataset",
	                "CONTENT_TYPE=application/json", len_var, NULL };
	struct json_object *obj, *direct = NULL, *back = NULL;
	const char *body, *text;
	char err[256];
	struct req r;
	int rc;

	if (size < 1)
		return 0;
	if (a == NULL && (a = arena_new()) == NULL)
		abort();
	arena_reset(a);
	config_defaults(&cfg);
	cfg.json_max_depth = 1 + (data[0] & 15);
	if (data[0] & 0x10)
		cfg.body_max_bytes = 1024;
	body = (const char *)data + 1;
	size--;
	snprintf(len_var, sizeof len_var, "CONTENT_LENGTH=%zu", size);
	if (req_init_env(&r, a, &cfg, env) != REQ_OK)
		abort();
	req_set_test_body(&r, body, size);

	obj = req_json_body_or_reply(&r);
	rc = json_parse_bounded(body, size, cfg.json_max_depth, &direct, err, sizeof err);
	if (size > (size_t)cfg.body_max_bytes) {
		if (obj != NULL || r.status != 413)
			abort();
	} else if (size == 0) {
		if (obj != NULL || r.status != 400 || rc == REQ_OK)
			abort();
	} else if (obj == NULL) {
		if (r.status != 400 || rc == REQ_OK || direct != NULL ||
		    strncmp(err, "Malformed JSON: ", 16) != 0)
			abort();
	} else {
		if (r.status != 0 || rc != REQ_OK || !json_object_equal(obj, direct) ||
		    depth_of(obj) > cfg.json_max_depth)
			abort();
		/* What the service writes back of a body must read the same. */
		text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
		if (text == NULL ||
		    json_parse_bounded(text, strlen(text), cfg.json_max_depth, &back,
		                       err, sizeof err) != REQ_OK ||
		    !json_object_equal(obj, back))
			abort();
	}
	json_object_put(direct);
	json_object_put(back);
	req_finish(&r);
	return 0;
}
