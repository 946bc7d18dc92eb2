/* validate.c - tables of fields checked against a JSON body or a query. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "http/request.h"
#include "http/validate.h"
#include "util/str.h"

static int fail(struct verror *e, enum verr_code code, const char *field,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Fill *e; returns -1.  fmt follows the field's name: "%s must be ...". */
static int fail(struct verror *e, enum verr_code code, const char *field,
                const char *fmt, ...)
{
	va_list ap;
	int n;

	e->code = code;
	snprintf(e->field, sizeof e->field, "%s", field);
	n = snprintf(e->message, sizeof e->message, "%s ", e->field);
	va_start(ap, fmt);
	vsnprintf(e->message + n, sizeof e->message - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* The row of fields named name, or NULL. */
static const struct vfield *row(const struct vfield *fields, const char *name)
{
	for (const struct vfield *f = fields; f->name != NULL; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

static void *slot(void *out, const struct vfield *f)
{
	return (char *)out + f->off;
}

static const char *type_name(enum vtype t)
{
	switch (t) {
	case V_STR:   return "a string";
	case V_INT:   return "an integer";
	case V_NUM:   return "a number";
	case V_BOOL:  return "a boolean";
	case V_ENUM:  return "a string";
	case V_OBJ:   return "an object";
	case V_ARR:   return "an array";
	case V_CHECK: return "valid";
	}
	return "valid";
}

/* --- one value ------------------------------------------------------------ */

static int check_str(const struct vfield *f, const char *s, size_t len,
                     void *out, struct verror *e)
{
	size_t count;
	bool blank = true;

	/* Values are bound as C strings: an embedded NUL would cut them short. */
	if (memchr(s, '\0', len) != NULL)
		return fail(e, VERR_NUL, f->name, "must not contain NUL characters");
	count = (f->flags & V_BYTES) ? len : str_utf8_chars(s, len);
	if (f->flags & V_NONBLANK) {
		for (size_t i = 0; i < len && blank; i++)
			blank = strchr(" \t\r\n\f\v", s[i]) != NULL;
		if (blank && len >= (size_t)f->min)
			return fail(e, VERR_BLANK, f->name, "must not be blank");
	}
	if ((double)count < f->min || (double)count > f->max)
		return fail(e, VERR_RANGE, f->name, "must be %.0f to %.0f %s long",
		            f->min, f->max, (f->flags & V_BYTES) ? "bytes" : "characters");
	*(const char **)slot(out, f) = s;
	return 0;
}

static int check_int(const struct vfield *f, long long v, void *out,
                     struct verror *e)
{
	if ((double)v < f->min || (double)v > f->max)
		return fail(e, VERR_RANGE, f->name, "must be an integer from %.0f to %.0f",
		            f->min, f->max);
	*(long long *)slot(out, f) = v;
	return 0;
}

static int check_num(const struct vfield *f, double v, void *out,
                     struct verror *e)
{
	if (!isfinite(v) || v < f->min || v > f->max)
		return fail(e, VERR_RANGE, f->name, "must be a number from %g to %g",
		            f->min, f->max);
	*(double *)slot(out, f) = v;
	return 0;
}

static int check_enum(const struct vfield *f, const char *s, void *out,
                      struct verror *e)
{
	char list[160];
	size_t n = 0;

	for (int i = 0; f->choices[i] != NULL; i++)
		if ((f->flags & V_NOCASE) ? strcasecmp(s, f->choices[i]) == 0
		                          : strcmp(s, f->choices[i]) == 0) {
			*(int *)slot(out, f) = i;
			return 0;
		}
	list[0] = '\0';
	for (int i = 0; f->choices[i] != NULL && n < sizeof list; i++)
		n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
		                      i > 0 ? ", " : "", f->choices[i]);
	return fail(e, VERR_CHOICE, f->name, "must be one of %s", list);
}

static int check_fn(const struct vfield *f, struct json_object *v, void *out,
                    struct verror *e)
{
	char msg[VERR_MESSAGE_MAX - VERR_FIELD_MAX - 2];

	msg[0] = '\0';
	if (f->check(v, slot(out, f), msg, sizeof msg) == 0)
		return 0;
	return fail(e, VERR_INVALID, f->name, "%s", msg[0] != '\0' ? msg : "is not valid");
}

/* One JSON value against its row. */
static int check_json(const struct vfield *f, struct json_object *v, void *out,
                      struct verror *e)
{
	enum json_type t = json_object_get_type(v);

	switch (f->type) {
	case V_STR:
		if (t != json_type_string)
			break;
		return check_str(f, json_object_get_string(v),
		                 (size_t)json_object_get_string_len(v), out, e);
	case V_INT:
		if (t != json_type_int)
			break;
		/* json-c saturates past int64, which is out of every bound. */
		return check_int(f, json_object_get_int64(v), out, e);
	case V_NUM:
		if (t != json_type_double && t != json_type_int)
			break;
		return check_num(f, json_object_get_double(v), out, e);
	case V_BOOL:
		if (t != json_type_boolean)
			break;
		*(bool *)slot(out, f) = json_object_get_boolean(v);
		return 0;
	case V_ENUM:
		if (t != json_type_string)
			break;
		return check_enum(f, json_object_get_string(v), out, e);
	case V_OBJ:
		if (t != json_type_object)
			break;
		if (f->max > 0 && (double)strlen(json_object_to_json_string_ext(
		        v, JSON_C_TO_STRING_PLAIN)) > f->max)
			return fail(e, VERR_RANGE, f->name,
			            "is too large (at most %.0f bytes of JSON)", f->max);
		*(struct json_object **)slot(out, f) = v;
		return 0;
	case V_ARR: {
		size_t n;

		if (t != json_type_array)
			break;
		n = json_object_array_length(v);
		if ((double)n < f->min || (double)n > f->max)
			return fail(e, VERR_RANGE, f->name, "must have %.0f to %.0f elements",
			            f->min, f->max);
		*(struct json_object **)slot(out, f) = v;
		return 0;
	}
	case V_CHECK:
		return check_fn(f, v, out, e);
	}
	return fail(e, VERR_TYPE, f->name, "must be %s", type_name(f->type));
}

/* One query value (a decoded string) against its row. */
static int check_text(const struct vfield *f, const char *s, void *out,
                      struct verror *e)
{
	switch (f->type) {
	case V_STR:
		return check_str(f, s, strlen(s), out, e);
	case V_INT: {
		long long v = LLONG_MAX;      /* past long long: out of range */
		int rc = str_to_ll(s, LLONG_MIN, LLONG_MAX, &v);

		if (rc == -1)
			break;
		return check_int(f, v, out, e);
	}
	case V_NUM: {
		char *end;
		double v;

		errno = 0;
		v = strtod(s, &end);
		if (s[0] == '\0' || *end != '\0' || errno != 0 || strchr(" \t+", s[0]))
			break;
		return check_num(f, v, out, e);
	}
	case V_BOOL:
		if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
			*(bool *)slot(out, f) = true;
		else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
			*(bool *)slot(out, f) = false;
		else
			return fail(e, VERR_TYPE, f->name, "must be true or false");
		return 0;
	case V_ENUM:
		return check_enum(f, s, out, e);
	case V_CHECK: {
		struct json_object *v = json_object_new_string(s);
		int rc = check_fn(f, v, out, e);

		json_object_put(v);
		return rc;
	}
	case V_OBJ:
	case V_ARR:
		break;
	}
	return fail(e, VERR_TYPE, f->name, "must be %s", type_name(f->type));
}

/* --- tables ----------------------------------------------------------------- */

const struct vfield vfields_none[] = { VFIELDS_END };

static int required_given(const struct vfield *fields, vgiven seen,
                          struct verror *e)
{
	for (size_t i = 0; fields[i].name != NULL; i++)
		if ((fields[i].flags & V_REQUIRED) && !(seen & ((vgiven)1 << i)))
			return fail(e, VERR_REQUIRED, fields[i].name, "is required");
	return 0;
}

/* One field of obj against its row: 0 when absent or accepted (*given
 * set when present), else -1 with *e filled. */
static int check_row(const struct vfield *f, struct json_object *obj,
                     void *out, bool *given, struct verror *e)
{
	struct json_object *v;

	*given = false;
	if (!json_object_object_get_ex(obj, f->name, &v))
		return 0;
	if (v == NULL && !(f->flags & V_NULL))
		return 0;      /* null is "not given" */
	if (v == NULL && f->type != V_CHECK) {
		if (f->type != V_STR && f->type != V_OBJ && f->type != V_ARR)
			return fail(e, VERR_TYPE, f->name, "must be %s", type_name(f->type));
		*(void **)slot(out, f) = NULL;
	} else if (check_json(f, v, out, e) != 0) {
		return -1;
	}
	*given = true;
	return 0;
}

size_t validate_json_each(const struct vfield *fields, struct json_object *obj,
                          void *out, unsigned opts, vgiven *given,
                          verror_fn fn, void *arg)
{
	struct verror e;
	vgiven seen = 0;
	size_t n = 0;

	if (given != NULL)
		*given = 0;
	memset(&e, 0, sizeof e);
	if (!json_object_is_type(obj, json_type_object)) {
		e.code = VERR_NOT_OBJECT;
		snprintf(e.message, sizeof e.message, "The body must be a JSON object");
		fn(&e, arg);
		return 1;
	}
	if (!(opts & VALIDATE_OPEN)) {
		json_object_object_foreach(obj, key, val) {
			(void)val;
			if (row(fields, key) == NULL) {
				fail(&e, VERR_UNKNOWN, key, "is not a known field");
				n++;
				if (fn(&e, arg) != 0)
					return n;
			}
		}
	}
	/* In table order, so the order does not depend on the keys'. */
	for (size_t i = 0; fields[i].name != NULL; i++) {
		bool here;
		int rc = check_row(&fields[i], obj, out, &here, &e);

		if (rc == 0 && !here && (fields[i].flags & V_REQUIRED))
			rc = fail(&e, VERR_REQUIRED, fields[i].name, "is required");
		if (rc != 0) {
			n++;
			if (fn(&e, arg) != 0)
				return n;
		}
		if (here)
			seen |= (vgiven)1 << i;
	}
	if (given != NULL)
		*given = seen;
	return n;
}

/* validate_json's choice among them: an unknown key or a bad value before
 * an absent required field, each the first in table order. */
struct first {
	struct verror *bad, missing;
	bool have_bad, have_missing;
};

static int keep_first(const struct verror *e, void *arg)
{
	struct first *f = arg;

	if (e->code == VERR_REQUIRED) {
		if (!f->have_missing)
			f->missing = *e;
		f->have_missing = true;
		return 0;
	}
	*f->bad = *e;
	f->have_bad = true;
	return -1;
}

int validate_json(const struct vfield *fields, struct json_object *obj,
                  void *out, vgiven *given, struct verror *e)
{
	struct first first = { .bad = e };

	memset(e, 0, sizeof *e);
	validate_json_each(fields, obj, out, 0, given, keep_first, &first);
	if (!first.have_bad && first.have_missing)
		*e = first.missing;
	if (first.have_bad || first.have_missing) {
		if (given != NULL)
			*given = 0;
		return -1;
	}
	return 0;
}

/* s = prefix "." s, cut to cap bytes; tmp has room for cap. */
static void prepend(char *s, size_t cap, const char *prefix, char *tmp)
{
	size_t p = strnlen(prefix, cap - 1), n;

	memcpy(tmp, prefix, p);
	if (p + 1 < cap)
		tmp[p++] = '.';
	n = strnlen(s, cap - 1 - p);
	memcpy(tmp + p, s, n);
	tmp[p + n] = '\0';
	memcpy(s, tmp, p + n + 1);
}

void verror_nest(struct verror *e, const char *fmt, ...)
{
	char prefix[VERR_FIELD_MAX + 1], msg[VERR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	if (e->field[0] == '\0') {
		/* the object itself */
		if (e->code == VERR_NOT_OBJECT)
			snprintf(e->message, sizeof e->message, "%s must be an object", prefix);
		memcpy(e->field, prefix, sizeof prefix);
		return;
	}
	/* The message starts with the field's name: the path goes before it. */
	prepend(e->message, sizeof e->message, prefix, msg);
	prepend(e->field, sizeof e->field, prefix, msg);
}

int validate_query(const struct vfield *fields, const struct req *r,
                   void *out, vgiven *given, struct verror *e)
{
	const char *cursor = NULL, *name, *value;
	vgiven seen = 0;
	int rc;

	memset(e, 0, sizeof *e);
	if (given != NULL)
		*given = 0;
	while ((rc = req_query_next(r, &cursor, &name, &value)) != 0) {
		const struct vfield *f;
		vgiven bit;

		if (rc != 1 && name == NULL)
			break;
		if ((f = row(fields, name)) == NULL)
			return fail(e, VERR_UNKNOWN, name, "is not a known query parameter");
		if (rc != 1)
			return fail(e, VERR_MALFORMED, name,
			            "has a malformed percent escape or a NUL character");
		bit = (vgiven)1 << (f - fields);
		if (seen & bit)
			return fail(e, VERR_DUPLICATE, name, "is given more than once");
		if (check_text(f, value, out, e) != 0)
			return -1;
		seen |= bit;
	}
	if (rc != 0) {
		e->code = VERR_MALFORMED;
		snprintf(e->message, sizeof e->message,
		         "The query string has a malformed percent escape");
		return -1;
	}
	if (given != NULL)
		*given = seen;
	return required_given(fields, seen, e);
}

bool validate_given(const struct vfield *fields, vgiven given, const char *name)
{
	const struct vfield *f = row(fields, name);

	return f != NULL && (given & ((vgiven)1 << (f - fields))) != 0;
}

const char *verr_code_name(enum verr_code code)
{
	static const char *const names[] = {
		[VERR_NONE] = "none",
		[VERR_NOT_OBJECT] = "not_an_object",
		[VERR_UNKNOWN] = "unknown_field",
		[VERR_DUPLICATE] = "duplicate",
		[VERR_REQUIRED] = "required",
		[VERR_TYPE] = "invalid_type",
		[VERR_RANGE] = "out_of_range",
		[VERR_NUL] = "nul_character",
		[VERR_BLANK] = "blank",
		[VERR_CHOICE] = "invalid_choice",
		[VERR_MALFORMED] = "malformed_query",
		[VERR_INVALID] = "invalid_value",
	};

	return (size_t)code < sizeof names / sizeof names[0] ? names[code] : "invalid";
}
