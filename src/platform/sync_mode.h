/* sync_mode.h - the load-type rules of jdbc jobs, as plain functions.
 *
 * POST /platform/jobs/jdbc/{jobId}/sync-mode reads the job and the body,
 * asks sync_decide() what to do, and writes what it answers.  Nothing here
 * touches the database or HTTP, so the unit tests cover every rule: the
 * transition table with its state_action, the same-type cases, each
 * error_code, the allowed incremental column types of each database kind, and
 * the warnings that block without "force".  The allowed column types of
 * each database kind are dbkind.h's, which pipeline creation also uses.
 *
 * The checks of PATCH /platform/jobs/{jobId}/input (the bookmark timestamp
 * and the column list) live here too: they are the same job settings. */
#ifndef SLUICE_SYNC_MODE_H
#define SLUICE_SYNC_MODE_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "platform/platform.h"

/* Bounds of the settings (the widths of their jobs columns). */
#define SYNC_NAME_MAX      255     /* a column name */
#define SYNC_TYPE_MAX      64      /* a column type */
#define SYNC_KEYS_MAX      64      /* primary_keys entries */
#define SYNC_INCLUDE_MAX   PLATFORM_COLUMNS_MAX   /* column_include_list entries */
#define SYNC_BOOKMARK_MAX  64      /* an incremental_column_value */

enum sync_load {
	SYNC_LOAD_NONE = -1,           /* missing or not a load type */
	SYNC_FULL_LOAD,
	SYNC_INCREMENTAL,
	SYNC_QUALIFY,                  /* incremental_with_qualify */
};

enum sync_action { SYNC_INITIALIZE, SYNC_PRESERVE, SYNC_RESET };

const char *sync_load_name(enum sync_load t);
enum sync_load sync_load_parse(const char *s);
const char *sync_action_name(enum sync_action a);

struct sync_list {
	const char **v;
	size_t n;
};

/* What the job has now. */
struct sync_job {
	const char *connector;
	const char *plugin;                /* input.plugin, NULL when absent */
	enum sync_load load_type;
	const char *column_name;           /* NULL when unset */
	const char *column_type;
	struct sync_list primary_keys;
	struct sync_list include;          /* column_include_list, n 0 when none */
	bool running;
};

/* What the body asks for; NULL / n 0 for what it leaves out. */
struct sync_request {
	enum sync_load target;
	const char *column_name;
	const char *column_type;
	struct sync_list primary_keys;
	bool force;
	const char *keys[SYNC_KEYS_MAX];   /* storage of primary_keys.v */
};

#define SYNC_ERRORS_MAX   16
#define SYNC_WARNINGS_MAX 8
#define SYNC_MSG_MAX      512

struct sync_error {
	const char *field;
	const char *code;
	char message[SYNC_MSG_MAX];
	char name[VERR_FIELD_MAX + 1];     /* field's storage when not static */
};

struct sync_warning {
	bool blocking;                     /* risks data: needs force */
	char message[SYNC_MSG_MAX];
};

struct sync_result {
	struct sync_error errors[SYNC_ERRORS_MAX];
	size_t nerrors;
	const char *required[3];           /* the target's fields, when any is missing */
	size_t nrequired;
	struct sync_warning warnings[SYNC_WARNINGS_MAX];
	size_t nwarnings;

	/* Valid when nerrors is 0: */
	enum sync_action action;
	bool qualify_task;                 /* the job keeps / gets a .qualify task */
	bool changed;                      /* a jobs column changes */
	bool clear_bookmark;               /* job_state.incremental_column_value = NULL */
	const char *column_type;           /* the allowed spelling to store */
	char effect[SYNC_MSG_MAX];         /* what the next run does, for "message" */
};

/* Fill req from a sync-mode body through its field table.  The first wrong
 * JSON type, unknown field or value over a bound is an error in res
 * (strings in req point into body).  Returns the number of errors. */
size_t sync_request_parse(struct json_object *body, struct sync_request *req,
                          struct sync_result *res);

/* Decide a sync-mode change: validation errors (res->nerrors > 0 means
 * answer 400), or the state action, the task change and the warnings.  res
 * must come from sync_request_parse (or be zeroed); errors add to it. */
void sync_decide(const struct sync_job *job, const struct sync_request *req,
                 struct sync_result *res);

/* The warnings that risk data of job's settings as req would leave them,
 * added to res: the incremental column or a primary key outside a
 * non-empty column_include_list, a RUNNING job.  sync_decide adds them to
 * a change; PATCH of a pipeline checks a new column_include_list. */
void sync_risk_warnings(const struct sync_job *job,
                        const struct sync_request *req,
                        struct sync_result *res);

/* Some warning risks data and the request did not say force: answer 409. */
bool sync_blocked(const struct sync_result *res, const struct sync_request *req);

/* --- PATCH input ----------------------------------------------------------- */

/* 0 when s is a strict ISO 8601 date or date-time: YYYY-MM-DD, optionally
 * followed by THH:MM:SS, a fraction of 1..9 digits, and Z or +HH:MM / -HH:MM;
 * a real calendar date.  -1 otherwise. */
int sync_timestamp_check(const char *s);

/* A JSON array of at most max distinct column names of 1..SYNC_NAME_MAX
 * characters (primary_keys, column_include_list, on create and on change):
 * 0, or -1 with why, a sentence without the field's name. */
int sync_names_check(struct json_object *v, size_t max, char *why, size_t len);

/* A column_include_list value: NULL or [] clears it (*clear set), else
 * 1..SYNC_INCLUDE_MAX distinct non-empty strings of at most SYNC_NAME_MAX
 * characters.  0, or -1 with a reason in why (a sentence without the
 * field's name, for the validator to prefix). */
int sync_include_check(struct json_object *v, bool *clear, char *why,
                       size_t whylen);

#endif
