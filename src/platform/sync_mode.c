/* sync_mode.c - the load-type rules of jdbc jobs (see sync_mode.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/validate.h"
#include "platform/dbkind.h"
#include "platform/sync_mode.h"
#include "util/str.h"
#include "util/timeutil.h"

/* --- names ------------------------------------------------------------------ */

static const char *const load_names[] = {
	"full_load", "incremental", "incremental_with_qualify",
};

static const char *const action_names[] = { "initialize", "preserve", "reset" };

const char *sync_load_name(enum sync_load t)
{
	return t >= SYNC_FULL_LOAD && t <= SYNC_QUALIFY ? load_names[t] : "";
}

enum sync_load sync_load_parse(const char *s)
{
	for (int i = SYNC_FULL_LOAD; s != NULL && i <= SYNC_QUALIFY; i++)
		if (strcmp(s, load_names[i]) == 0)
			return (enum sync_load)i;
	return SYNC_LOAD_NONE;
}

const char *sync_action_name(enum sync_action a)
{
	return action_names[a];
}

/* --- result helpers ----------------------------------------------------------- */

static void add_error(struct sync_result *res, const char *field,
                      const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add_error(struct sync_result *res, const char *field,
                      const char *code, const char *fmt, ...)
{
	struct sync_error *e;
	va_list ap;

	if (res->nerrors == SYNC_ERRORS_MAX)
		return;
	e = &res->errors[res->nerrors++];
	e->field = field;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
}

static void add_warning(struct sync_result *res, bool blocking,
                        const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_warning(struct sync_result *res, bool blocking,
                        const char *fmt, ...)
{
	struct sync_warning *w;
	va_list ap;

	if (res->nwarnings == SYNC_WARNINGS_MAX)
		return;
	w = &res->warnings[res->nwarnings++];
	w->blocking = blocking;
	va_start(ap, fmt);
	vsnprintf(w->message, sizeof w->message, fmt, ap);
	va_end(ap);
}

static bool list_has(const struct sync_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

static bool list_equal(const struct sync_list *a, const struct sync_list *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

/* Lengths are characters, not bytes: the jobs columns are VARCHAR(n) of
 * utf8mb4 (the request body is valid UTF-8 by then). */
static size_t utf8_len(const char *s)
{
	return str_utf8_chars(s, strlen(s));
}

/* --- parsing the body ----------------------------------------------------------- */

/* The body as the table stores it. */
struct sync_in {
	int target;                        /* index in load_names */
	const char *column_name, *column_type;
	struct json_object *keys;          /* primary_keys */
	bool force;
};

int sync_names_check(struct json_object *v, size_t max, char *why, size_t len)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array)) {
		snprintf(why, len, "must be an array of column names");
		return -1;
	}
	n = json_object_array_length(v);
	if (n > max) {
		snprintf(why, len, "may name at most %zu columns", max);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		const char *s = json_object_get_string(e);

		if (!json_object_is_type(e, json_type_string) || s[0] == '\0' ||
		    utf8_len(s) > SYNC_NAME_MAX) {
			snprintf(why, len, "entry %zu must be a column name of 1..%d "
			         "characters", i, SYNC_NAME_MAX);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(s, json_object_get_string(
			        json_object_array_get_idx(v, j))) == 0) {
				snprintf(why, len, "names '%.64s' twice", s);
				return -1;
			}
	}
	return 0;
}

static int check_keys(struct json_object *v, void *out, char *msg, size_t len)
{
	if (sync_names_check(v, SYNC_KEYS_MAX, msg, len) != 0)
		return -1;
	*(struct json_object **)out = v;
	return 0;
}

static const char *const load_choices[] = {
	"full_load", "incremental", "incremental_with_qualify", NULL
};

const struct vfield platform_sync_mode_body[] = {
	{ "target_load_type", V_ENUM, V_REQUIRED, 0, 0, load_choices, NULL,
	  VOFF(struct sync_in, target) },
	{ "incremental_column_name", V_STR, 0, 0, SYNC_NAME_MAX, NULL, NULL,
	  VOFF(struct sync_in, column_name) },
	{ "incremental_column_type", V_STR, 0, 0, SYNC_TYPE_MAX, NULL, NULL,
	  VOFF(struct sync_in, column_type) },
	{ "primary_keys", V_CHECK, 0, 0, 0, NULL, check_keys,
	  VOFF(struct sync_in, keys) },
	{ "force", V_BOOL, 0, 0, 0, NULL, NULL, VOFF(struct sync_in, force) },
	VFIELDS_END
};

/* A refusal of the table as an error of res; target_load_type keeps the
 * codes of its own. */
static void add_verror(struct sync_result *res, const struct verror *e)
{
	const char *code = platform_verr_code(e->code);
	struct sync_error *se;

	if (strcmp(e->field, "target_load_type") == 0)
		code = e->code == VERR_REQUIRED ? "MISSING_TARGET_LOAD_TYPE"
		                                : "INVALID_TARGET_LOAD_TYPE";
	add_error(res, "", code, "%s", e->message);
	se = &res->errors[res->nerrors - 1];
	snprintf(se->name, sizeof se->name, "%s", e->field[0] != '\0' ? e->field
	                                                               : "body");
	se->field = se->name;
}

size_t sync_request_parse(struct json_object *body, struct sync_request *req,
                          struct sync_result *res)
{
	struct sync_in in = { -1, NULL, NULL, NULL, false };
	struct verror e;
	size_t n;

	memset(req, 0, sizeof *req);
	req->target = SYNC_LOAD_NONE;
	req->primary_keys.v = req->keys;
	if (validate_json(platform_sync_mode_body, body, &in, NULL, &e) != 0) {
		add_verror(res, &e);
		return res->nerrors;
	}
	/* Strings in req live as long as body. */
	req->target = (enum sync_load)in.target;
	req->column_name = in.column_name != NULL && in.column_name[0] != '\0'
	                   ? in.column_name : NULL;
	req->column_type = in.column_type != NULL && in.column_type[0] != '\0'
	                   ? in.column_type : NULL;
	n = in.keys != NULL ? json_object_array_length(in.keys) : 0;
	for (size_t i = 0; i < n; i++)
		req->keys[i] = json_object_get_string(json_object_array_get_idx(in.keys, i));
	req->primary_keys.n = n;
	req->force = in.force;
	return res->nerrors;
}

/* --- the decision ----------------------------------------------------------------- */

static void check_column_type(const struct sync_job *job,
                              const struct sync_request *req,
                              struct sync_result *res)
{
	enum dbkind k = dbkind_of_plugin(job->plugin);
	char allowed[256];

	if (k == DBKIND_NONE) {
		add_error(res, "plugin", "INVALID_CONNECTOR_TYPE",
		          "Plugin '%.64s' is not a supported JDBC database "
		          "(postgres, mysql, mariadb, oracle, sqlserver)",
		          job->plugin != NULL ? job->plugin : "");
		return;
	}
	res->column_type = dbkind_type_find(k, req->column_type);
	if (res->column_type != NULL)
		return;
	dbkind_types_joined(k, allowed, sizeof allowed);
	add_error(res, "incremental_column_type", "INVALID_INCREMENTAL_COLUMN_TYPE",
	          "Incremental column type '%.64s' is not allowed for plugin %s; "
	          "allowed types: %s", req->column_type, job->plugin, allowed);
}

/* The settings each target requires (spec: "Load types").  A field whose
 * The body passed the parse. */
static void check_required(const struct sync_job *job,
                           const struct sync_request *req,
                           struct sync_result *res)
{
	bool missing = false;

	if (req->target == SYNC_FULL_LOAD)
		return;
	if (req->column_name == NULL) {
		add_error(res, "incremental_column_name", "MISSING_INCREMENTAL_COLUMN_NAME",
		          "incremental_column_name is required for %s",
		          sync_load_name(req->target));
		missing = true;
	}
	if (req->column_type != NULL) {
		check_column_type(job, req, res);
	} else {
		add_error(res, "incremental_column_type", "MISSING_INCREMENTAL_COLUMN_TYPE",
		          "incremental_column_type is required for %s",
		          sync_load_name(req->target));
		missing = true;
	}
	if (req->target == SYNC_QUALIFY && req->primary_keys.n == 0) {
		add_error(res, "primary_keys", "MISSING_PRIMARY_KEYS",
		          "primary_keys is required for incremental_with_qualify");
		missing = true;
	}
	if (!missing)
		return;
	res->required[res->nrequired++] = "incremental_column_name";
	res->required[res->nrequired++] = "incremental_column_type";
	if (req->target == SYNC_QUALIFY)
		res->required[res->nrequired++] = "primary_keys";
}

/* The transition table of the spec; same type preserves. */
static enum sync_action table_action(enum sync_load from, enum sync_load to)
{
	if (from == to)
		return SYNC_PRESERVE;
	if (from == SYNC_FULL_LOAD)
		return SYNC_INITIALIZE;
	if (to == SYNC_FULL_LOAD)
		return SYNC_RESET;
	return SYNC_PRESERVE;            /* between the two incremental types */
}

static const char *table_effect(enum sync_load from, enum sync_load to)
{
	static const char *const effect[3][3] = {
		{ NULL,
		  "The next run does a full extraction, then tracks new rows incrementally.",
		  "The next run does a full extraction with deduplication, then tracks "
		  "new rows incrementally." },
		{ "Incremental state cleared; every run extracts all rows.",
		  NULL,
		  "Bookmark kept; deduplication task added to the pipeline's "
		  "orchestration graph." },
		{ "Incremental state cleared; deduplication task removed from the "
		  "pipeline's orchestration graph.",
		  "Bookmark kept; deduplication task removed from the pipeline's "
		  "orchestration graph.",
		  NULL },
	};
	return effect[from][to];
}

static bool column_changes(const struct sync_job *job,
                           const struct sync_request *req,
                           const struct sync_result *res)
{
	if (job->load_type == SYNC_FULL_LOAD || req->target == SYNC_FULL_LOAD)
		return false;
	return job->column_name == NULL || job->column_type == NULL ||
	       strcmp(job->column_name, req->column_name) != 0 ||
	       strcasecmp(job->column_type, res->column_type) != 0;
}

static void ignored_fields(const struct sync_request *req,
                           struct sync_result *res)
{
	if (req->target == SYNC_FULL_LOAD &&
	    (req->column_name != NULL || req->column_type != NULL ||
	     req->primary_keys.n > 0))
		add_warning(res, false, "full_load uses no incremental column or primary "
		            "keys: the given ones were ignored and the job's are cleared");
	else if (req->target == SYNC_INCREMENTAL && req->primary_keys.n > 0)
		add_warning(res, false, "incremental does not deduplicate: primary_keys "
		            "were ignored");
}

void sync_risk_warnings(const struct sync_job *job,
                        const struct sync_request *req,
                        struct sync_result *res)
{
	char missing[SYNC_MSG_MAX / 2];
	size_t len = 0;

	if (job->include.n > 0 && req->target != SYNC_FULL_LOAD &&
	    !list_has(&job->include, req->column_name))
		add_warning(res, true, "Incremental column '%.64s' is not in the job's "
		            "column_include_list: the bookmark cannot be tracked",
		            req->column_name);
	missing[0] = '\0';
	for (size_t i = 0; req->target == SYNC_QUALIFY && job->include.n > 0 &&
	     i < req->primary_keys.n && len < sizeof missing; i++)
		if (!list_has(&job->include, req->primary_keys.v[i]))
			len += (size_t)snprintf(missing + len, sizeof missing - len,
			                        "%s'%.64s'", len > 0 ? ", " : "",
			                        req->primary_keys.v[i]);
	if (len > 0)
		add_warning(res, true, "Primary key columns not in the job's "
		            "column_include_list: %s; deduplication cannot use them",
		            missing);
	if (job->running)
		add_warning(res, true, "The job is RUNNING: the running extraction ends "
		            "in the old mode and may overwrite the job's state");
}

static void decide_same_type(const struct sync_job *job,
                             const struct sync_request *req,
                             struct sync_result *res, bool col_changed)
{
	const char *name = sync_load_name(req->target);

	if (col_changed) {
		res->action = SYNC_RESET;
		res->changed = true;
		add_warning(res, false, "Incremental column changed from '%.64s' to "
		            "'%.64s': the bookmark is cleared",
		            job->column_name != NULL ? job->column_name : "",
		            req->column_name);
		snprintf(res->effect, sizeof res->effect, "Load type unchanged (%s); "
		         "the incremental column changed, so the next run does a full "
		         "extraction, then tracks new rows incrementally.", name);
		return;
	}
	res->action = SYNC_PRESERVE;
	if (req->target == SYNC_QUALIFY &&
	    !list_equal(&job->primary_keys, &req->primary_keys)) {
		res->changed = true;
		add_warning(res, false, "The job is already %s: primary_keys updated, "
		            "bookmark kept", name);
		snprintf(res->effect, sizeof res->effect, "Load type unchanged (%s); "
		         "primary_keys updated, bookmark kept.", name);
		return;
	}
	add_warning(res, false, "The job is already %s with these settings: nothing "
	            "changed", name);
	snprintf(res->effect, sizeof res->effect, "Nothing changed.");
}

void sync_decide(const struct sync_job *job_in, const struct sync_request *req,
                 struct sync_result *res)
{
	struct sync_job copy = *job_in, *job = &copy;
	bool col_changed;

	/* The table's CHECK rules out other values; the tables below are
	 * indexed by the type, so an unknown one counts as the default. */
	if (job->load_type < SYNC_FULL_LOAD || job->load_type > SYNC_QUALIFY)
		job->load_type = SYNC_FULL_LOAD;

	if (job->connector == NULL || strcmp(job->connector, "jdbc") != 0) {
		add_error(res, "plugin", "INVALID_CONNECTOR_TYPE",
		          "Sync mode applies to jdbc jobs only; this job uses the "
		          "%.32s connector", job->connector != NULL ? job->connector : "");
		return;
	}
	if (res->nerrors > 0)
		return;                  /* the body was refused by the parse */
	check_required(job, req, res);
	if (res->nerrors > 0)
		return;
	if (req->target == SYNC_FULL_LOAD)
		res->column_type = NULL;
	col_changed = column_changes(job, req, res);
	res->qualify_task = req->target == SYNC_QUALIFY;
	ignored_fields(req, res);
	if (job->load_type == req->target) {
		decide_same_type(job, req, res, col_changed);
	} else {
		res->changed = true;
		res->action = table_action(job->load_type, req->target);
		snprintf(res->effect, sizeof res->effect, "%s",
		         table_effect(job->load_type, req->target));
		if (res->action == SYNC_PRESERVE && col_changed) {
			res->action = SYNC_RESET;
			add_warning(res, false, "Incremental column changed from '%.64s' to "
			            "'%.64s': the bookmark is cleared instead of kept",
			            job->column_name != NULL ? job->column_name : "",
			            req->column_name);
		}
	}
	res->clear_bookmark = res->action != SYNC_PRESERVE;
	if (res->changed)
		sync_risk_warnings(job, req, res);
}

bool sync_blocked(const struct sync_result *res, const struct sync_request *req)
{
	if (req->force)
		return false;
	for (size_t i = 0; i < res->nwarnings; i++)
		if (res->warnings[i].blocking)
			return true;
	return false;
}

/* --- PATCH input ------------------------------------------------------------------- */

int sync_timestamp_check(const char *s)
{
	struct time_iso t;

	if (s == NULL || strlen(s) > SYNC_BOOKMARK_MAX)
		return -1;
	return time_iso_parse(s, 0, &t);
}

int sync_include_check(struct json_object *v, bool *clear, char *why,
                       size_t whylen)
{
	*clear = v == NULL || (json_object_is_type(v, json_type_array) &&
	                       json_object_array_length(v) == 0);
	if (*clear)
		return 0;
	return sync_names_check(v, SYNC_INCLUDE_MAX, why, whylen);
}
