/* platform.h - the platform area: pipelines, jobs, runs, connections.
 *
 * Each file owns one resource and exports its route table (ended by
 * ROUTES_END); serve/routes.c strings them together.  What several files
 * need lives in common.c: id forms, the caller's customer row, and the
 * area's error bodies, so every status and shape of spec/pipelines-api.md is
 * written in one place. */
#ifndef SLUICE_PLATFORM_H
#define SLUICE_PLATFORM_H

#include <stddef.h>

#include <json-c/json.h>

#include "http/router.h"

struct req;

/* --- route tables, one per file ------------------------------------------ */
extern const struct route platform_pipeline_routes[];    /* pipelines.c */
extern const struct route platform_job_routes[];         /* jobs.c, sync_mode.c */
extern const struct route platform_run_routes[];         /* runs.c */
extern const struct route platform_connection_routes[];  /* connections.c */
extern const struct route platform_run_cancel_routes[];  /* run_cancel.c */

/* --- ids ------------------------------------------------------------------
 * pipeline_id: a UUID written with underscores; paths accept hyphens too.
 * job_id:      {pipeline_id}_{job_index}.
 * run_id:      32 lowercase hex characters. */
#define PIPELINE_ID_LEN 36
#define JOB_ID_MAX      (PIPELINE_ID_LEN + 1 + 10)

/* SQL for a DATETIME column as ISO 8601 UTC with milliseconds
 * ("2026-11-22T10:00:00.123Z"); NULL stays NULL.  Every connection runs in
 * time_zone +00:00.  col is a literal column name, never input. */
#define ISO_MS(col) \
	"CONCAT(LEFT(DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z')"

/* column_include_list: at most this many names, on create and on PATCH. */
#define PLATFORM_COLUMNS_MAX 1024

/* The canonical (underscore, lowercase) pipeline id of in, or -1 when in is
 * not a UUID with '-' or '_' separators. */
int platform_pipeline_id_parse(const char *in, char out[PIPELINE_ID_LEN + 1]);
/* The canonical job id of in and its parts; -1 when malformed. */
int platform_job_id_parse(const char *in, char out[JOB_ID_MAX + 1],
                          char pipeline_id[PIPELINE_ID_LEN + 1], int *index);
/* The job id of a pipeline's job_index. */
void platform_job_id_make(char out[JOB_ID_MAX + 1], const char *pipeline_id,
                          int index);
/* 0, or -1 when the run id is not 32 lowercase hex characters. */
int platform_run_id_check(const char *in);
/* Fresh random ids from the CSPRNG; 0 or -1. */
int platform_pipeline_id_new(char out[PIPELINE_ID_LEN + 1]);

/* --- error bodies of spec/pipelines-api.md ---------------------------------
 * All return -1 after answering, so a handler can `return platform_...`. */

/* {"detail": {"status": false, "exception_type": T, "traceback": msg,
 *  "data": null}} - memory and run-log 404s. */
int platform_reply_exception(struct req *r, int status,
                             const char *exception_type, const char *msg);
/* 400 {"message": msg, "statusCode": 400} - the memory amount error. */
int platform_reply_status_code(struct req *r, const char *msg);
/* {"msg": msg} and, when error is not NULL, "error": error - the list 500
 * and the DELETE 401. */
int platform_reply_msg(struct req *r, int status, const char *msg,
                       const char *error);

/* Validation errors in the sync-mode shape:
 *   400 {"detail": {"error": "ValidationError",
 *                   "message": "Migration validation failed",
 *                   "validation_errors": [{field, message, error_code}],
 *                   "required_fields": [...]}}
 * Collect with platform_verr_add, answer with platform_reply_validation
 * (message overrides "Migration validation failed" when not NULL). */
struct platform_verr {
	struct json_object *errors;     /* array, owned until replied */
	struct json_object *required;   /* array of strings */
};
void platform_verr_init(struct platform_verr *v);
void platform_verr_add(struct platform_verr *v, const char *field,
                       const char *error_code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void platform_verr_require(struct platform_verr *v, const char *field);
size_t platform_verr_count(const struct platform_verr *v);
int platform_reply_validation(struct req *r, struct platform_verr *v,
                              const char *message);
void platform_verr_free(struct platform_verr *v);

#endif
