/* platform.h - the platform area: pipelines, jobs, runs, connections.
 *
 * Each file owns one resource and exports its route table (ended by
 * ROUTES_END); serve/routes.c strings them together.  What several files
 * need lives in common.c (id forms) and errors.c (the area's one error
 * table, so every status and shape of spec/pipelines-api.md is written in
 * one place). */
#ifndef SLUICE_PLATFORM_H
#define SLUICE_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/router.h"
#include "http/validate.h"

struct req;

/* --- route tables, one per file ------------------------------------------ */
extern const struct route platform_pipeline_routes[];    /* pipelines.c */
extern const struct route platform_job_routes[];         /* jobs.c, sync_mode.c */
extern const struct route platform_run_routes[];         /* runs.c */
extern const struct route platform_connection_routes[];  /* connections.c */
extern const struct route platform_run_cancel_routes[];  /* run_cancel.c */
extern const struct route platform_connection_check_routes[]; /* connection_check.c */
extern const struct route platform_webhook_routes[];     /* webhooks.c */

/* --- ids ------------------------------------------------------------------
 * pipeline_id: a UUID written with underscores; paths accept hyphens too.
 * job_id:      {pipeline_id}_{job_index}.
 * run_id:      32 lowercase hex characters. */
#define PIPELINE_ID_LEN 36
#define JOB_ID_MAX      (PIPELINE_ID_LEN + 1 + 10)

/* SQL for a DATETIME column as ISO 8601 UTC with milliseconds (db.h). */
#define ISO_MS(col) DB_ISO_MS(col)

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
/* The {connection_id} of a connection route that takes no query string:
 * 0 with its canonical form (lowercase, hyphens; the path may use '-' or
 * '_') in id, or -1 after answering 400 (a query parameter) or 404 (not a
 * UUID, which answers as an unknown id). */
int platform_connection_ref_or_reply(struct req *r, char id[PIPELINE_ID_LEN + 1]);
/* The {run_id} of the path of a route that takes no query, with the
 * database at hand; or NULL after answering 400 (a query parameter), the
 * PipelineRunNotFound 404 (a malformed id) or a database failure. */
const char *platform_run_ref_or_reply(struct req *r);
/* Fresh random ids from the CSPRNG; 0 or -1. */
int platform_pipeline_id_new(char out[PIPELINE_ID_LEN + 1]);

/* --- answers: errors.c -----------------------------------------------------
 * Every non-2xx answer of the area is a row of one table: its status, the
 * body shape spec/pipelines-api.md gives that answer, and its text.  All
 * return -1 after answering, so a handler can `return platform_reply(...)`. */
enum platform_err {
	PLATFORM_BAD_REQUEST,             /* 400 {"detail"}: a body or query refused */
	PLATFORM_BAD_AMOUNT,              /* 400 {"message", "statusCode"} */
	PLATFORM_PIPELINE_INVALID,        /* 400 ValidationError shape */
	PLATFORM_SYNC_INVALID,
	PLATFORM_INPUT_INVALID,
	PLATFORM_CUSTOMER_NAME_MISSING,   /* 401 {"msg"} */
	PLATFORM_CUSTOMER_NAME_MISMATCH,  /* 403 {"detail"} */
	PLATFORM_CUSTOMER_ID_MISMATCH,
	PLATFORM_PIPELINE_NOT_FOUND,      /* 404 {"detail"} */
	PLATFORM_JOB_NOT_FOUND,
	PLATFORM_CONNECTION_NOT_FOUND,
	PLATFORM_PIPELINE_UNKNOWN,        /* 404 exception object */
	PLATFORM_JOB_UNKNOWN,
	PLATFORM_RUN_UNKNOWN,
	PLATFORM_CONNECTION_EXISTS,       /* 409 {"detail"} */
	PLATFORM_CONNECTION_IN_USE,
	PLATFORM_PIPELINE_BUSY,
	PLATFORM_PIPELINE_BUSY_PATCH,
	PLATFORM_RUN_ACTIVE,
	PLATFORM_RUN_FINISHED,
	PLATFORM_JOB_RUNNING_RESET,
	PLATFORM_JOB_RUNNING_BOOKMARK,
	PLATFORM_SYNC_BLOCKED,            /* 409 MigrationWarning shape */
	PLATFORM_LIST_FAILED,             /* 500 {"msg", "error"} */
	PLATFORM_LIST_UNAVAILABLE,
	PLATFORM_DELETE_FAILED,           /* 500 {"detail"} */
	/* connections: PATCH and POST .../test */
	PLATFORM_CONNECTION_KIND_FIXED,   /* 409 {"detail"} */
	PLATFORM_CONNECTION_TESTS_BUSY,   /* 429 {"detail"} */
	PLATFORM_SOURCE_AUTH_REFUSED,     /* 422 {"detail": {"error", "message"}} */
	PLATFORM_SOURCE_DATABASE_UNKNOWN,
	PLATFORM_SOURCE_HOST_UNKNOWN,
	PLATFORM_SOURCE_UNREACHABLE,
	PLATFORM_SOURCE_TIMEOUT,
	PLATFORM_SOURCE_NO_DRIVER,
	PLATFORM_SOURCE_FAILED,
	/* webhooks */
	PLATFORM_WEBHOOK_URL_PRIVATE,     /* 400 {"detail"} */
	PLATFORM_WEBHOOK_NOT_FOUND,       /* 404 {"detail"} */
	PLATFORM_DELIVERY_NOT_FOUND,
	PLATFORM_WEBHOOKS_FULL,           /* 409 {"detail"} */
	PLATFORM_DELIVERY_PENDING,
};

/* The body {"customer_id", "pipeline_id"} of execute, pause and resume
 * (common.c): 0 with the canonical pipeline id in id, or -1 after answering
 * 400 (the body), 403 (not the token's customer) or not_found (a malformed
 * id answers as an unknown one). */
int platform_pipeline_ref_or_reply(struct req *r, enum platform_err not_found,
                                   char id[PIPELINE_ID_LEN + 1]);

/* The row's answer with its own text. */
int platform_reply(struct req *r, enum platform_err err);
/* The row's status and shape with text (a sentence built by the caller,
 * e.g. naming a configured bound) instead of the row's. */
int platform_reply_text(struct req *r, enum platform_err err, const char *text);
/* A body or query the validator refused: 400 {"detail": e->message}. */
int platform_reply_verror(struct req *r, const struct verror *e);
/* The query string against fields (NULL: the route takes none, so any
 * parameter is refused); 0, or -1 after the 400 naming the parameter. */
int platform_query_or_reply(struct req *r, const struct vfield *fields, void *out);
/* The MigrationWarning row with its warnings (array of strings, taken). */
int platform_reply_warnings(struct req *r, enum platform_err err,
                            struct json_object *warnings);

/* Validation errors in the sync-mode shape:
 *   400 {"detail": {"error": "ValidationError", "message": the row's text,
 *                   "validation_errors": [{field, message, error_code}],
 *                   "required_fields": [...]}}
 * Collect with platform_verr_add, answer with platform_reply_validation. */
struct platform_verr {
	struct json_object *errors;     /* array, owned until replied */
	struct json_object *required;   /* array of strings */
};
void platform_verr_init(struct platform_verr *v);
void platform_verr_add(struct platform_verr *v, const char *field,
                       const char *error_code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A validator's error, its field under prefix ("jobs[0].input" + "plugin";
 * "" for none), with code, or platform_verr_code(e->code) when NULL.  A
 * required field is also added to required_fields. */
void platform_verr_add_verror(struct platform_verr *v, const char *prefix,
                              const struct verror *e, const char *code);
/* Check obj against fields, each field on its own, adding every refusal
 * under prefix; keys not in fields are refused when strict (else left to
 * the caller: connector settings).  0, or -1 when some error was added. */
int platform_verr_validate(struct platform_verr *v, const char *prefix,
                           const struct vfield *fields,
                           struct json_object *obj, void *out, bool strict);
/* The same, telling which rows were given (a PATCH's fields). */
int platform_verr_validate_given(struct platform_verr *v, const char *prefix,
                                 const struct vfield *fields,
                                 struct json_object *obj, void *out,
                                 bool strict, vgiven *given);
void platform_verr_require(struct platform_verr *v, const char *field);
size_t platform_verr_count(const struct platform_verr *v);
int platform_reply_validation(struct req *r, enum platform_err err,
                              struct platform_verr *v);
void platform_verr_free(struct platform_verr *v);

/* The error_code of a validator's refusal in validation_errors:
 * MISSING_FIELD, UNKNOWN_FIELD, INVALID_TYPE, OUT_OF_RANGE, INVALID_VALUE. */
const char *platform_verr_code(enum verr_code code);

/* --- validation tables -----------------------------------------------------
 * Each route's body and query fields (http/validate.h), defined beside its
 * handler; t/unit/test_vtables.c checks every bound of each at max and
 * max + 1. */
extern const struct vfield platform_connection_body[];
extern const struct vfield platform_connection_query[];
extern const struct vfield platform_pipeline_body[];
extern const struct vfield platform_job_body[];
extern const struct vfield platform_input_body[];
extern const struct vfield platform_output_body[];
extern const struct vfield platform_raw_body[];
extern const struct vfield platform_run_query[];
extern const struct vfield platform_pipelines_query[];
extern const struct vfield platform_log_query[];
extern const struct vfield platform_memory_body[];
extern const struct vfield platform_input_patch_body[];
extern const struct vfield platform_pipeline_ref_body[];
extern const struct vfield platform_sync_mode_body[];
extern const struct vfield platform_job_patch_id[];
extern const struct vfield platform_webhook_body[];
extern const struct vfield platform_delivery_query[];

#endif
