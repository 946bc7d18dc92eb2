/* common.c - what the platform files share: id forms
 * and the area's error bodies. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>


#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/platform.h"
#include "util/uuid.h"

/* --- ids ------------------------------------------------------------------ */

int platform_pipeline_id_parse(const char *in, char out[PIPELINE_ID_LEN + 1])
{
	static const int dash[] = { 8, 13, 18, 23 };

	if (in == NULL || strlen(in) != PIPELINE_ID_LEN)
		return -1;
	for (int i = 0, d = 0; i < PIPELINE_ID_LEN; i++) {
		unsigned char c = (unsigned char)in[i];

		if (d < 4 && i == dash[d]) {
			if (c != '-' && c != '_')
				return -1;
			out[i] = '_';
			d++;
		} else if (isxdigit(c)) {
			out[i] = (char)tolower(c);
		} else {
			return -1;
		}
	}
	out[PIPELINE_ID_LEN] = '\0';
	return 0;
}

int platform_job_id_parse(const char *in, char out[JOB_ID_MAX + 1],
                          char pipeline_id[PIPELINE_ID_LEN + 1], int *index)
{
	char pid[PIPELINE_ID_LEN + 1];
	const char *p;
	long v = 0;

	if (in == NULL || strlen(in) < PIPELINE_ID_LEN + 2 ||
	    strlen(in) > JOB_ID_MAX)
		return -1;
	memcpy(pid, in, PIPELINE_ID_LEN);
	pid[PIPELINE_ID_LEN] = '\0';
	if (platform_pipeline_id_parse(pid, pid) != 0)
		return -1;
	p = in + PIPELINE_ID_LEN;
	if (*p != '_' && *p != '-')
		return -1;
	p++;
	/* A decimal index without leading zeros: one spelling per job. */
	if (!isdigit((unsigned char)*p) || (p[0] == '0' && p[1] != '\0'))
		return -1;
	for (; *p != '\0'; p++) {
		if (!isdigit((unsigned char)*p) || v > 99999999L)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (pipeline_id != NULL)
		memcpy(pipeline_id, pid, PIPELINE_ID_LEN + 1);
	if (index != NULL)
		*index = (int)v;
	platform_job_id_make(out, pid, (int)v);
	return 0;
}

void platform_job_id_make(char out[JOB_ID_MAX + 1], const char *pipeline_id,
                          int index)
{
	snprintf(out, JOB_ID_MAX + 1, "%s_%d", pipeline_id, index);
}

int platform_run_id_check(const char *in)
{
	if (in == NULL || strlen(in) != RUN_ID_LEN)
		return -1;
	for (const char *p = in; *p != '\0'; p++)
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return -1;
	return 0;
}

int platform_pipeline_id_new(char out[PIPELINE_ID_LEN + 1])
{
	return uuid_v4(out, '_');
}

/* --- error bodies --------------------------------------------------------------- */

int platform_reply_exception(struct req *r, int status,
                             const char *exception_type, const char *msg)
{
	struct json_object *o = json_object_new_object();
	struct json_object *d = json_object_new_object();

	json_object_object_add(d, "status", json_object_new_boolean(0));
	json_object_object_add(d, "exception_type",
	                       json_object_new_string(exception_type));
	json_object_object_add(d, "traceback", json_object_new_string(msg));
	json_object_object_add(d, "data", NULL);
	json_object_object_add(o, "detail", d);
	resp_json(r, status, o);
	return -1;
}

int platform_reply_status_code(struct req *r, const char *msg)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "message", json_object_new_string(msg));
	json_object_object_add(o, "statusCode", json_object_new_int(400));
	resp_json(r, 400, o);
	return -1;
}

int platform_reply_msg(struct req *r, int status, const char *msg,
                       const char *error)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "msg", json_object_new_string(msg));
	if (error != NULL)
		json_object_object_add(o, "error", json_object_new_string(error));
	resp_json(r, status, o);
	return -1;
}

void platform_verr_init(struct platform_verr *v)
{
	v->errors = json_object_new_array();
	v->required = json_object_new_array();
}

void platform_verr_add(struct platform_verr *v, const char *field,
                       const char *error_code, const char *fmt, ...)
{
	struct json_object *e = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_object_object_add(e, "field", json_object_new_string(field));
	json_object_object_add(e, "message", json_object_new_string(msg));
	json_object_object_add(e, "error_code", json_object_new_string(error_code));
	json_object_array_add(v->errors, e);
}

void platform_verr_require(struct platform_verr *v, const char *field)
{
	size_t n = json_object_array_length(v->required);

	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(
		        json_object_array_get_idx(v->required, i)), field) == 0)
			return;
	json_object_array_add(v->required, json_object_new_string(field));
}

size_t platform_verr_count(const struct platform_verr *v)
{
	return json_object_array_length(v->errors);
}

int platform_reply_validation(struct req *r, struct platform_verr *v,
                              const char *message)
{
	struct json_object *o = json_object_new_object();
	struct json_object *d = json_object_new_object();

	json_object_object_add(d, "error", json_object_new_string("ValidationError"));
	json_object_object_add(d, "message", json_object_new_string(
	    message != NULL ? message : "Migration validation failed"));
	json_object_object_add(d, "validation_errors", v->errors);
	json_object_object_add(d, "required_fields", v->required);
	v->errors = v->required = NULL;
	json_object_object_add(o, "detail", d);
	resp_json(r, 400, o);
	return -1;
}

void platform_verr_free(struct platform_verr *v)
{
	json_object_put(v->errors);
	json_object_put(v->required);
	v->errors = v->required = NULL;
}
