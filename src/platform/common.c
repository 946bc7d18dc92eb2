/* common.c - what the platform files share: id forms and the body that
 * names a pipeline. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "db/db.h"
#include "http/request.h"
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

int platform_connection_ref_or_reply(struct req *r, char id[UUID_STR_LEN])
{
	struct verror e;

	if (validate_query(vfields_none, r, NULL, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	/* A pipeline id's forms, written back with hyphens. */
	if (platform_pipeline_id_parse(req_param(r, "connection_id"), id) != 0)
		return platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND);
	for (char *p = id; *p != '\0'; p++)
		if (*p == '_')
			*p = '-';
	return 0;
}

int platform_pipeline_id_new(char out[PIPELINE_ID_LEN + 1])
{
	return uuid_v4(out, '_');
}

/* --- {"customer_id", "pipeline_id"} ------------------------------------------- */

struct pipeline_ref {
	const char *customer_id, *pipeline_id;
};

const struct vfield platform_pipeline_ref_body[] = {
	{ "customer_id", V_STR, V_REQUIRED, 1, 255, NULL, NULL,
	  VOFF(struct pipeline_ref, customer_id) },
	{ "pipeline_id", V_STR, V_REQUIRED, 1, 255, NULL, NULL,
	  VOFF(struct pipeline_ref, pipeline_id) },
	VFIELDS_END
};

int platform_pipeline_ref_or_reply(struct req *r, enum platform_err not_found,
                                   char id[PIPELINE_ID_LEN + 1])
{
	struct json_object *body = req_json_body_or_reply(r);
	struct pipeline_ref in = { NULL, NULL };
	struct verror e;

	if (body == NULL)
		return -1;
	if (validate_json(platform_pipeline_ref_body, body, &in, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	if (r->id.customer_id == NULL || strcmp(in.customer_id, r->id.customer_id) != 0)
		return platform_reply(r, PLATFORM_CUSTOMER_ID_MISMATCH);
	/* A malformed id answers as an unknown one. */
	if (platform_pipeline_id_parse(in.pipeline_id, id) != 0)
		return platform_reply(r, not_found);
	return 0;
}
