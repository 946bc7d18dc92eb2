/* errors.c - every non-2xx answer of the platform area: one table of
 * status, body shape and text, and the validation-error list of the
 * sync-mode shape.
 *
 * spec/pipelines-api.md gives different operations different error bodies
 * (a detail string, an exception object, {"msg", "error"}, {"message",
 * "statusCode"}, the ValidationError object); the shape is a column here,
 * so a handler names what went wrong and never how it is written. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/platform.h"

enum shape {
	SHAPE_DETAIL,        /* {"detail": text} */
	SHAPE_EXCEPTION,     /* {"detail": {status false, exception_type, traceback, data null}} */
	SHAPE_MSG,           /* {"msg": text} and "error" when the row has one */
	SHAPE_STATUS_CODE,   /* {"message": text, "statusCode": status} */
	SHAPE_VALIDATION,    /* {"detail": {"error": "ValidationError", ...}} */
	SHAPE_WARNING,       /* {"detail": {"error": "MigrationWarning", ...}} */
	SHAPE_ERROR,         /* {"detail": {"error": kind, "message": text}} */
};

static const struct {
	int status;
	enum shape shape;
	const char *kind;    /* exception_type (EXCEPTION) or error (MSG, ERROR) */
	const char *text;
} rows[] = {
	[PLATFORM_BAD_REQUEST] = { 400, SHAPE_DETAIL, NULL,
	    "The request is not valid" },
	[PLATFORM_BAD_AMOUNT] = { 400, SHAPE_STATUS_CODE, NULL,
	    "amount must be an integer number of megabytes" },
	[PLATFORM_PIPELINE_INVALID] = { 400, SHAPE_VALIDATION, NULL,
	    "Pipeline validation failed" },
	[PLATFORM_SYNC_INVALID] = { 400, SHAPE_VALIDATION, NULL,
	    "Migration validation failed" },
	[PLATFORM_INPUT_INVALID] = { 400, SHAPE_VALIDATION, NULL,
	    "Input validation failed" },
	[PLATFORM_CUSTOMER_NAME_MISSING] = { 401, SHAPE_MSG, NULL,
	    "customer_name header is required" },
	[PLATFORM_CUSTOMER_NAME_MISMATCH] = { 403, SHAPE_DETAIL, NULL,
	    "customer_name does not match the token's customer" },
	[PLATFORM_CUSTOMER_ID_MISMATCH] = { 403, SHAPE_DETAIL, NULL,
	    "customer_id does not match the token's customer" },
	[PLATFORM_PIPELINE_NOT_FOUND] = { 404, SHAPE_DETAIL, NULL,
	    "Pipeline not found" },
	[PLATFORM_JOB_NOT_FOUND] = { 404, SHAPE_DETAIL, NULL, "Job not found" },
	[PLATFORM_CONNECTION_NOT_FOUND] = { 404, SHAPE_DETAIL, NULL,
	    "Connection not found" },
	[PLATFORM_PIPELINE_UNKNOWN] = { 404, SHAPE_EXCEPTION, "PipelineNotFound",
	    "Pipeline not found" },
	[PLATFORM_JOB_UNKNOWN] = { 404, SHAPE_EXCEPTION, "JobNotFound",
	    "Job not found" },
	[PLATFORM_RUN_UNKNOWN] = { 404, SHAPE_EXCEPTION, "PipelineRunNotFound",
	    "Pipeline run not found" },
	[PLATFORM_CONNECTION_EXISTS] = { 409, SHAPE_DETAIL, NULL,
	    "A connection with this name already exists" },
	[PLATFORM_CONNECTION_IN_USE] = { 409, SHAPE_DETAIL, NULL,
	    "The connection is used by a job: change or delete that job's "
	    "pipeline first" },
	[PLATFORM_PIPELINE_BUSY] = { 409, SHAPE_DETAIL, NULL,
	    "Pipeline has a run in progress; wait for it to finish before "
	    "deleting" },
	[PLATFORM_PIPELINE_BUSY_PATCH] = { 409, SHAPE_DETAIL, NULL,
	    "Pipeline has a run in progress; change it after the run ends, so "
	    "that no run works with half-changed settings" },
	[PLATFORM_RUN_ACTIVE] = { 409, SHAPE_DETAIL, NULL,
	    "A run of this pipeline is already CREATED or RUNNING" },
	[PLATFORM_RUN_FINISHED] = { 409, SHAPE_DETAIL, NULL,
	    "The run has already finished" },
	[PLATFORM_JOB_RUNNING_RESET] = { 409, SHAPE_DETAIL, NULL,
	    "The job is RUNNING: reset its state after the run ends, or the run "
	    "would overwrite it when it finishes" },
	[PLATFORM_JOB_RUNNING_BOOKMARK] = { 409, SHAPE_DETAIL, NULL,
	    "The job is RUNNING: set incremental_column_value after the run "
	    "ends, or the run would overwrite it when it finishes" },
	[PLATFORM_SYNC_BLOCKED] = { 409, SHAPE_WARNING, NULL,
	    "The change risks data; send \"force\": true to make it anyway" },
	[PLATFORM_LIST_FAILED] = { 500, SHAPE_MSG, "Database error",
	    "Failed to retrieve pipelines" },
	[PLATFORM_LIST_UNAVAILABLE] = { 500, SHAPE_MSG, "Database unavailable",
	    "Failed to retrieve pipelines" },
	[PLATFORM_DELETE_FAILED] = { 500, SHAPE_DETAIL, NULL,
	    "Database error while deleting the pipeline; nothing was deleted" },
	[PLATFORM_CONNECTION_KIND_FIXED] = { 409, SHAPE_DETAIL, NULL,
	    "A connection's database kind cannot change (its jobs are built "
	    "for its dialect): create a new connection instead" },
	[PLATFORM_CONNECTION_TESTS_BUSY] = { 429, SHAPE_DETAIL, NULL,
	    "Too many connection tests at once; try again shortly" },
	[PLATFORM_SOURCE_AUTH_REFUSED] = { 422, SHAPE_ERROR, "auth_refused",
	    "The source database refused the user name or password" },
	[PLATFORM_SOURCE_DATABASE_UNKNOWN] = { 422, SHAPE_ERROR, "database_unknown",
	    "The source server has no such database" },
	[PLATFORM_SOURCE_HOST_UNKNOWN] = { 422, SHAPE_ERROR, "host_unknown",
	    "The source host name does not resolve" },
	[PLATFORM_SOURCE_UNREACHABLE] = { 422, SHAPE_ERROR, "host_unreachable",
	    "The source host refused or dropped the connection" },
	[PLATFORM_SOURCE_TIMEOUT] = { 422, SHAPE_ERROR, "timeout",
	    "The source did not answer in time" },
	[PLATFORM_SOURCE_NO_DRIVER] = { 422, SHAPE_ERROR, "driver_unavailable",
	    "This plugin has no driver, so it cannot be tested" },
	[PLATFORM_SOURCE_FAILED] = { 422, SHAPE_ERROR, "connect_failed",
	    "The source refused the connection" },
	[PLATFORM_WEBHOOK_URL_PRIVATE] = { 400, SHAPE_DETAIL, NULL,
	    "url must not point at a loopback, private or link-local address" },
	[PLATFORM_WEBHOOK_NOT_FOUND] = { 404, SHAPE_DETAIL, NULL,
	    "Webhook not found" },
	[PLATFORM_DELIVERY_NOT_FOUND] = { 404, SHAPE_DETAIL, NULL,
	    "Delivery not found" },
	[PLATFORM_WEBHOOKS_FULL] = { 409, SHAPE_DETAIL, NULL,
	    "A pipeline has at most 10 webhooks" },
	[PLATFORM_DELIVERY_PENDING] = { 409, SHAPE_DETAIL, NULL,
	    "The delivery is still pending" },
};

static struct json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

/* The row's body with text; extra is the validation list or the warnings
 * (taken), NULL for the other shapes. */
static struct json_object *body_of(enum platform_err err, const char *text,
                                   struct platform_verr *v,
                                   struct json_object *warnings)
{
	struct json_object *o = json_object_new_object(), *d;

	switch (rows[err].shape) {
	case SHAPE_DETAIL:
		json_object_object_add(o, "detail", jstr(text));
		return o;
	case SHAPE_MSG:
		json_object_object_add(o, "msg", jstr(text));
		if (rows[err].kind != NULL)
			json_object_object_add(o, "error", jstr(rows[err].kind));
		return o;
	case SHAPE_STATUS_CODE:
		json_object_object_add(o, "message", jstr(text));
		json_object_object_add(o, "statusCode",
		                       json_object_new_int(rows[err].status));
		return o;
	case SHAPE_EXCEPTION:
		d = json_object_new_object();
		json_object_object_add(d, "status", json_object_new_boolean(0));
		json_object_object_add(d, "exception_type", jstr(rows[err].kind));
		json_object_object_add(d, "traceback", jstr(text));
		json_object_object_add(d, "data", NULL);
		break;
	case SHAPE_VALIDATION:
		d = json_object_new_object();
		json_object_object_add(d, "error", jstr("ValidationError"));
		json_object_object_add(d, "message", jstr(text));
		json_object_object_add(d, "validation_errors", v != NULL ? v->errors
		                       : json_object_new_array());
		json_object_object_add(d, "required_fields", v != NULL ? v->required
		                       : json_object_new_array());
		if (v != NULL)
			v->errors = v->required = NULL;
		break;
	case SHAPE_ERROR:
		d = json_object_new_object();
		json_object_object_add(d, "error", jstr(rows[err].kind));
		json_object_object_add(d, "message", jstr(text));
		break;
	case SHAPE_WARNING:
	default:
		d = json_object_new_object();
		json_object_object_add(d, "error", jstr("MigrationWarning"));
		json_object_object_add(d, "message", jstr(text));
		json_object_object_add(d, "warnings", warnings != NULL ? warnings
		                       : json_object_new_array());
		break;
	}
	json_object_object_add(o, "detail", d);
	return o;
}

int platform_reply_text(struct req *r, enum platform_err err, const char *text)
{
	resp_json(r, rows[err].status,
	          body_of(err, text != NULL ? text : rows[err].text, NULL, NULL));
	return -1;
}

int platform_reply(struct req *r, enum platform_err err)
{
	return platform_reply_text(r, err, NULL);
}

int platform_reply_verror(struct req *r, const struct verror *e)
{
	return platform_reply_text(r, PLATFORM_BAD_REQUEST, e->message);
}

int platform_query_or_reply(struct req *r, const struct vfield *fields, void *out)
{
	struct verror e;

	if (validate_query(fields != NULL ? fields : vfields_none, r, out, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	return 0;
}

int platform_reply_warnings(struct req *r, enum platform_err err,
                            struct json_object *warnings)
{
	resp_json(r, rows[err].status, body_of(err, rows[err].text, NULL, warnings));
	return -1;
}

int platform_reply_validation(struct req *r, enum platform_err err,
                              struct platform_verr *v)
{
	resp_json(r, rows[err].status, body_of(err, rows[err].text, v, NULL));
	return -1;
}

/* --- the validation list ------------------------------------------------------- */

const char *platform_verr_code(enum verr_code code)
{
	switch (code) {
	case VERR_REQUIRED:   return "MISSING_FIELD";
	case VERR_UNKNOWN:    return "UNKNOWN_FIELD";
	case VERR_NOT_OBJECT:
	case VERR_TYPE:       return "INVALID_TYPE";
	case VERR_RANGE:      return "OUT_OF_RANGE";
	default:              return "INVALID_VALUE";
	}
}

void platform_verr_init(struct platform_verr *v)
{
	v->errors = json_object_new_array();
	v->required = json_object_new_array();
}

static void verr_push(struct platform_verr *v, const char *field,
                      const char *error_code, const char *msg)
{
	struct json_object *e = json_object_new_object();

	json_object_object_add(e, "field", jstr(field));
	json_object_object_add(e, "message", jstr(msg));
	json_object_object_add(e, "error_code", jstr(error_code));
	json_object_array_add(v->errors, e);
}

void platform_verr_add(struct platform_verr *v, const char *field,
                       const char *error_code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	verr_push(v, field, error_code, msg);
}

void platform_verr_add_verror(struct platform_verr *v, const char *prefix,
                              const struct verror *e, const char *code)
{
	struct verror at = *e;

	if (prefix[0] != '\0')
		verror_nest(&at, "%s", prefix);
	verr_push(v, at.field[0] != '\0' ? at.field : "body",
	          code != NULL ? code : platform_verr_code(e->code), at.message);
	if (e->code == VERR_REQUIRED)
		platform_verr_require(v, at.field);
}

struct collect {
	struct platform_verr *v;
	const char *prefix;
};

static int collect_one(const struct verror *e, void *arg)
{
	const struct collect *c = arg;

	platform_verr_add_verror(c->v, c->prefix, e, NULL);
	return 0;
}

int platform_verr_validate_given(struct platform_verr *v, const char *prefix,
                                 const struct vfield *fields,
                                 struct json_object *obj, void *out,
                                 bool strict, vgiven *given)
{
	struct collect c = { v, prefix };

	return validate_json_each(fields, obj, out, strict ? 0 : VALIDATE_OPEN,
	                          given, collect_one, &c) > 0 ? -1 : 0;
}

int platform_verr_validate(struct platform_verr *v, const char *prefix,
                           const struct vfield *fields,
                           struct json_object *obj, void *out, bool strict)
{
	return platform_verr_validate_given(v, prefix, fields, obj, out, strict,
	                                    NULL);
}

void platform_verr_require(struct platform_verr *v, const char *field)
{
	size_t n = json_object_array_length(v->required);

	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(
		        json_object_array_get_idx(v->required, i)), field) == 0)
			return;
	json_object_array_add(v->required, jstr(field));
}

size_t platform_verr_count(const struct platform_verr *v)
{
	return json_object_array_length(v->errors);
}

void platform_verr_free(struct platform_verr *v)
{
	json_object_put(v->errors);
	json_object_put(v->required);
	v->errors = v->required = NULL;
}
