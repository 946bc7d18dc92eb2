/* filter.c - metadata_filter parsing and matching (see filter.h).
 *
 * The parsed filter holds a reference to the spec (json_object_get) and
 * one clause per key pointing into it: no copies, one owner, released in
 * meta_filter_free. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "retrieval/filter.h"

enum clause_op { OP_EQ, OP_IN, OP_CONTAINS };

struct clause {
	const char *key;
	enum clause_op op;
	struct json_object *arg;        /* scalar (EQ, CONTAINS) or array (IN) */
};

struct meta_filter {
	struct json_object *spec;
	size_t n;
	struct clause c[FILTER_MAX_KEYS];
};

static bool is_scalar(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
	case json_type_boolean:
	case json_type_double:
	case json_type_int:
	case json_type_string:
		return true;
	default:
		return false;
	}
}

/* A scalar operand: strings bounded. */
static int check_scalar(struct json_object *v, const char *key, const char *what,
                        char *err, size_t errlen)
{
	if (!is_scalar(v)) {
		snprintf(err, errlen, "key '%s': %s must be a string, number, boolean or null",
		         key, what);
		return -1;
	}
	if (json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > FILTER_MAX_STRING) {
		snprintf(err, errlen, "key '%s': %s is longer than %d characters",
		         key, what, FILTER_MAX_STRING);
		return -1;
	}
	if (json_object_is_type(v, json_type_double) && !isfinite(json_object_get_double(v))) {
		snprintf(err, errlen, "key '%s': %s is not a finite number", key, what);
		return -1;
	}
	return 0;
}

static int parse_operator(struct clause *c, struct json_object *v, char *err, size_t errlen)
{
	if (json_object_object_length(v) != 1) {
		snprintf(err, errlen, "key '%s': an operator object has exactly one "
		         "key, $in or $contains", c->key);
		return -1;
	}
	json_object_object_foreach(v, op, arg) {
		if (strcmp(op, "$in") == 0) {
			if (!json_object_is_type(arg, json_type_array)) {
				snprintf(err, errlen, "key '%s': $in must be an array", c->key);
				return -1;
			}
			size_t n = json_object_array_length(arg);
			if (n > FILTER_MAX_IN) {
				snprintf(err, errlen, "key '%s': $in has more than %d values",
				         c->key, FILTER_MAX_IN);
				return -1;
			}
			for (size_t i = 0; i < n; i++)
				if (check_scalar(json_object_array_get_idx(arg, i), c->key,
				                 "each $in value", err, errlen) != 0)
					return -1;
			c->op = OP_IN;
		} else if (strcmp(op, "$contains") == 0) {
			if (check_scalar(arg, c->key, "$contains", err, errlen) != 0)
				return -1;
			c->op = OP_CONTAINS;
		} else {
			snprintf(err, errlen, "key '%s': unknown operator (use $in or $contains)",
			         c->key);
			return -1;
		}
		c->arg = arg;
	}
	return 0;
}

struct meta_filter *meta_filter_parse(struct json_object *spec, char *err, size_t errlen)
{
	struct meta_filter *f;

	if (!json_object_is_type(spec, json_type_object)) {
		snprintf(err, errlen, "must be an object");
		return NULL;
	}
	if (json_object_object_length(spec) > FILTER_MAX_KEYS) {
		snprintf(err, errlen, "has more than %d keys", FILTER_MAX_KEYS);
		return NULL;
	}
	if ((f = calloc(1, sizeof *f)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_object_object_foreach(spec, key, v) {
		struct clause *c = &f->c[f->n++];
		c->key = key;
		if (strlen(key) == 0 || strlen(key) > FILTER_MAX_STRING) {
			snprintf(err, errlen, "keys must have 1 to %d characters",
			         FILTER_MAX_STRING);
			goto bad;
		}
		if (json_object_is_type(v, json_type_object)) {
			if (parse_operator(c, v, err, errlen) != 0)
				goto bad;
		} else if (json_object_is_type(v, json_type_array)) {
			snprintf(err, errlen, "key '%s': a list needs {\"$in\": [...]}", key);
			goto bad;
		} else {
			if (check_scalar(v, key, "the value", err, errlen) != 0)
				goto bad;
			c->op = OP_EQ;
			c->arg = v;
		}
	}
	f->spec = json_object_get(spec);
	return f;
bad:
	free(f);
	return NULL;
}

void meta_filter_free(struct meta_filter *f)
{
	if (f == NULL)
		return;
	json_object_put(f->spec);
	free(f);
}

/* ---- matching ----------------------------------------------------------------- */

static bool is_number(struct json_object *v)
{
	return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* Equality of two scalars by type and value; numbers compare as numbers
 * (1 == 1.0), exactly when both are integers. */
static bool scalar_eq(struct json_object *a, struct json_object *b)
{
	if (is_number(a) && is_number(b)) {
		if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int))
			return json_object_get_int64(a) == json_object_get_int64(b);
		return json_object_get_double(a) == json_object_get_double(b);
	}
	if (json_object_get_type(a) != json_object_get_type(b))
		return false;
	switch (json_object_get_type(a)) {
	case json_type_null:
		return true;
	case json_type_boolean:
		return json_object_get_boolean(a) == json_object_get_boolean(b);
	case json_type_string: {
		size_t la = (size_t)json_object_get_string_len(a);
		return la == (size_t)json_object_get_string_len(b) &&
		       memcmp(json_object_get_string(a), json_object_get_string(b), la) == 0;
	}
	default:
		return false;
	}
}

static bool clause_match(const struct clause *c, struct json_object *v)
{
	switch (c->op) {
	case OP_EQ:
		return scalar_eq(v, c->arg);
	case OP_IN:
		for (size_t i = 0; i < json_object_array_length(c->arg); i++)
			if (scalar_eq(v, json_object_array_get_idx(c->arg, i)))
				return true;
		return false;
	case OP_CONTAINS:
		if (json_object_is_type(v, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(v); i++)
				if (scalar_eq(json_object_array_get_idx(v, i), c->arg))
					return true;
			return false;
		}
		if (json_object_is_type(v, json_type_string) &&
		    json_object_is_type(c->arg, json_type_string))
			return memmem(json_object_get_string(v), (size_t)json_object_get_string_len(v),
			              json_object_get_string(c->arg),
			              (size_t)json_object_get_string_len(c->arg)) != NULL;
		return false;
	}
	return false;
}

bool meta_filter_match(const struct meta_filter *f, struct json_object *metadata)
{
	if (f == NULL || f->n == 0)
		return true;
	if (!json_object_is_type(metadata, json_type_object))
		return false;
	for (size_t i = 0; i < f->n; i++) {
		struct json_object *v;
		if (!json_object_object_get_ex(metadata, f->c[i].key, &v))
			return false;            /* a missing key matches nothing */
		if (!clause_match(&f->c[i], v))
			return false;
	}
	return true;
}
