/* pipeline_create.c - POST /platform/pipeline: validate a configuration,
 * then write the pipeline, its jobs, their states and the orchestration
 * tasks in one transaction.
 *
 * Validation collects every problem with its field path ("jobs[2].input.
 * plugin") before answering, so a caller fixes a body in one round trip. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "db/warehouse.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/dbkind.h"
#include "platform/pipelines.h"
#include "platform/platform.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/log.h"
#include "util/str.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/uuid.h"

/* Bounds of a create body; every one is tested at max and max + 1. */
#define PIPELINE_NAME_MAX   255
#define PIPELINE_DESC_MAX   4096
#define PIPELINE_JOBS_MAX   100
#define JOB_NAME_MAX        255
#define JOB_PLUGIN_MAX      64
#define JOB_TEXT_MAX        255       /* table_name, column names */
#define JOB_PREFIX_MAX      1024
#define JOB_KEYS_MAX        64        /* primary_keys entries */
#define JOB_JSON_MAX        16384     /* stored input or output, bytes */
#define WAREHOUSE_NAME_MAX  64        /* MariaDB identifier length */
#define CONNECTION_ID_LEN   36
#define PIPELINE_RETRIES_MAX 5
#define PIPELINE_RUN_TIMEOUT_MIN 5           /* seconds; as the column's CHECK */
#define PIPELINE_RUN_TIMEOUT_MAX 604800

/* ==== validation of a create body ========================================= */

/* A job of a create body, validated; written as a jobs row (runner/connector.h
 * has the job as a run sees it: struct job_spec). */
struct job_new {
	const char *name, *connector, *connection_id;
	const char *input, *output;          /* JSON text to store */
	const char *load_type, *inc_name, *inc_type;
	const char *primary_keys, *columns;  /* JSON array text or NULL */
	long long memory_mb;                 /* 0: not set */
};

struct pipeline_spec {
	const char *name, *description, *cron;
	const char *cron_timezone;           /* NULL: UTC */
	long long retries;                   /* 0..PIPELINE_RETRIES_MAX */
	long long run_timeout_s;             /* 0: the config's runner_run_timeout_s */
	time_t next_run;                     /* 0: none */
	size_t njobs;
	struct job_new jobs[PIPELINE_JOBS_MAX];
};

/* A field's path for messages: "jobs[2].input.plugin". */
struct vpath {
	char prefix[96];
	char buf[128];
};

static const char *vp(struct vpath *p, const char *key)
{
	snprintf(p->buf, sizeof p->buf, "%s%s%s", p->prefix,
	         p->prefix[0] != '\0' ? "." : "", key);
	return p->buf;
}

/* child's prefix = parent's path of key ("jobs[0]" -> "jobs[0].input"). */
static void vp_child(struct vpath *child, struct vpath *parent, const char *key)
{
	if (str_copy(child->prefix, sizeof child->prefix, vp(parent, key)) != 0)
		child->prefix[0] = '\0';       /* keys are ours: never too long */
}

/* The string at key of o, min..max characters.  NULL when absent, null or
 * invalid (an error is recorded unless it is optional and absent/null). */
static const char *want_str(struct platform_verr *v, struct vpath *p,
                            struct json_object *o, const char *key,
                            size_t min, size_t max, int required)
{
	struct json_object *x = NULL;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, key, &x) || x == NULL) {
		if (required) {
			platform_verr_add(v, vp(p, key), "MISSING_FIELD",
			                  "%s is required", vp(p, key));
			platform_verr_require(v, vp(p, key));
		}
		return NULL;
	}
	if (!json_object_is_type(x, json_type_string)) {
		platform_verr_add(v, vp(p, key), "INVALID_TYPE",
		                  "%s must be a string", vp(p, key));
		return NULL;
	}
	s = json_object_get_string(x);
	n = str_utf8_chars(s, strlen(s));
	if (n < min || n > max) {
		platform_verr_add(v, vp(p, key), "INVALID_LENGTH",
		                  "%s must be %zu to %zu characters long (got %zu)",
		                  vp(p, key), min, max, n);
		return NULL;
	}
	return s;
}

/* An object at key (required); NULL with an error otherwise. */
static struct json_object *want_obj(struct platform_verr *v, struct vpath *p,
                                    struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	if (!json_object_object_get_ex(o, key, &x) || x == NULL) {
		platform_verr_add(v, vp(p, key), "MISSING_FIELD", "%s is required",
		                  vp(p, key));
		platform_verr_require(v, vp(p, key));
		return NULL;
	}
	if (!json_object_is_type(x, json_type_object)) {
		platform_verr_add(v, vp(p, key), "INVALID_TYPE",
		                  "%s must be an object", vp(p, key));
		return NULL;
	}
	return x;
}

/* An array of min..max non-empty strings of up to JOB_TEXT_MAX characters,
 * as compact JSON text (arena); NULL when absent or invalid. */
static const char *want_str_array(struct req *r, struct platform_verr *v,
                                  struct vpath *p, struct json_object *o,
                                  const char *key, size_t min, size_t max)
{
	struct json_object *x = NULL;
	size_t n;

	if (!json_object_object_get_ex(o, key, &x) || x == NULL)
		return NULL;
	if (!json_object_is_type(x, json_type_array)) {
		platform_verr_add(v, vp(p, key), "INVALID_TYPE",
		                  "%s must be an array of strings", vp(p, key));
		return NULL;
	}
	n = json_object_array_length(x);
	if (n < min || n > max) {
		platform_verr_add(v, vp(p, key), "INVALID_LENGTH",
		                  "%s must have %zu to %zu entries (got %zu)",
		                  vp(p, key), min, max, n);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(x, i);
		size_t len;

		if (!json_object_is_type(e, json_type_string) ||
		    (len = str_utf8_chars(json_object_get_string(e),
		                             (size_t)json_object_get_string_len(e))) == 0 ||
		    len > JOB_TEXT_MAX) {
			platform_verr_add(v, vp(p, key), "INVALID_VALUE",
			                  "%s[%zu] must be a string of 1 to %d characters",
			                  vp(p, key), i, JOB_TEXT_MAX);
			return NULL;
		}
	}
	return arena_strdup(r->arena,
	    json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Unknown keys of o are errors: a typo must not be silently dropped. */
static void reject_unknown(struct platform_verr *v, struct vpath *p,
                           struct json_object *o, const char *const *known)
{
	json_object_object_foreach(o, key, val) {
		const char *const *k;

		(void)val;
		for (k = known; *k != NULL && strcmp(*k, key) != 0; k++)
			;
		if (*k == NULL)
			platform_verr_add(v, vp(p, key), "UNKNOWN_FIELD",
			                  "%s is not a known field", vp(p, key));
	}
}

static int is_present(struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	return json_object_object_get_ex(o, key, &x) && x != NULL;
}

/* A warehouse identifier: letters, digits and '_', not starting with a
 * digit, at most 64 bytes, so it can be quoted safely. */
static int warehouse_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > WAREHOUSE_NAME_MAX || isdigit((unsigned char)s[0]))
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* A relative path prefix: no leading '/', no ".." segment, no '\\'. */
static int prefix_ok(const char *s)
{
	if (s[0] == '/' || strchr(s, '\\') != NULL)
		return 0;
	for (const char *seg = s; seg != NULL; seg = strchr(seg, '/')) {
		if (*seg == '/')
			seg++;
		if (strncmp(seg, "..", 2) == 0 && (seg[2] == '/' || seg[2] == '\0'))
			return 0;
	}
	return 1;
}

static int uuid_ok(const char *s)
{
	char canonical[UUID_STR_LEN];

	return uuid_parse(s, canonical) == 0;
}

static const char *const input_column_keys[] = {
	"load_type", "incremental_column_name", "incremental_column_type",
	"primary_keys", "column_include_list", "incremental_column_value", NULL
};

/* The input object without the keys the job's columns hold, as JSON text. */
static const char *input_stored(struct req *r, struct json_object *in)
{
	struct json_object *o = json_object_new_object();
	const char *text;

	json_object_object_foreach(in, key, val) {
		const char *const *k;

		for (k = input_column_keys; *k != NULL && strcmp(*k, key) != 0; k++)
			;
		if (*k == NULL)
			json_object_object_add(o, key, json_object_get(val));
	}
	text = arena_strdup(r->arena,
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

static const char *const load_types[] = {
	"full_load", "incremental", "incremental_with_qualify", NULL
};

/* load_type and its settings (jdbc only). */
static void input_load_type(struct req *r, struct platform_verr *v,
                            struct vpath *p, struct json_object *in,
                            const char *plugin, struct job_new *js)
{
	enum dbkind kind = dbkind_of_plugin(plugin);
	const char *lt;
	int incremental;
	char allowed[512];

	js->load_type = "full_load";
	lt = want_str(v, p, in, "load_type", 1, 32, 0);
	if (lt != NULL) {
		const char *const *t;

		for (t = load_types; *t != NULL && strcmp(*t, lt) != 0; t++)
			;
		if (*t == NULL) {
			platform_verr_add(v, vp(p, "load_type"), "INVALID_LOAD_TYPE",
			    "load_type must be one of full_load, incremental, "
			    "incremental_with_qualify");
			return;
		}
		js->load_type = *t;
	}
	incremental = strcmp(js->load_type, "full_load") != 0;
	js->inc_name = want_str(v, p, in, "incremental_column_name", 1,
	                        JOB_TEXT_MAX, 0);
	js->inc_type = want_str(v, p, in, "incremental_column_type", 1, 64, 0);
	js->primary_keys = want_str_array(r, v, p, in, "primary_keys", 1,
	                                  JOB_KEYS_MAX);
	if (!incremental) {
		if (is_present(in, "incremental_column_name") ||
		    is_present(in, "incremental_column_type"))
			platform_verr_add(v, vp(p, "load_type"), "INVALID_LOAD_TYPE",
			    "incremental_column_name and incremental_column_type "
			    "need an incremental load_type");
		js->inc_name = js->inc_type = NULL;
		return;
	}
	if (!is_present(in, "incremental_column_name")) {
		platform_verr_add(v, vp(p, "incremental_column_name"),
		    "MISSING_INCREMENTAL_COLUMN_NAME",
		    "incremental_column_name is required for load_type %s",
		    js->load_type);
		platform_verr_require(v, vp(p, "incremental_column_name"));
	}
	if (!is_present(in, "incremental_column_type")) {
		platform_verr_add(v, vp(p, "incremental_column_type"),
		    "MISSING_INCREMENTAL_COLUMN_TYPE",
		    "incremental_column_type is required for load_type %s",
		    js->load_type);
		platform_verr_require(v, vp(p, "incremental_column_type"));
	} else if (js->inc_type != NULL &&
	           (js->inc_type = dbkind_type_find(kind, js->inc_type)) == NULL) {
		platform_verr_add(v, vp(p, "incremental_column_type"),
		    "INVALID_INCREMENTAL_COLUMN_TYPE",
		    "incremental_column_type is not allowed for plugin %s; "
		    "allowed: %s", plugin,
		    dbkind_types_joined(kind, allowed, sizeof allowed));
	}
	if (strcmp(js->load_type, "incremental_with_qualify") == 0 &&
	    !is_present(in, "primary_keys")) {
		platform_verr_add(v, vp(p, "primary_keys"), "MISSING_PRIMARY_KEYS",
		    "primary_keys is required for load_type incremental_with_qualify");
		platform_verr_require(v, vp(p, "primary_keys"));
	}
}

static const char *const jdbc_only_keys[] = {
	"load_type", "incremental_column_name", "incremental_column_type",
	"primary_keys", NULL
};

static const char *const connectors[] = { "jdbc", "singer", "file_storage", NULL };

static void job_input(struct req *r, struct platform_verr *v, struct vpath *p,
                      struct json_object *in, struct job_new *js)
{
	const char *plugin, *cid;
	const char *const *c;

	js->connector = want_str(v, p, in, "connector", 1, 32, 1);
	plugin = want_str(v, p, in, "plugin", 1, JOB_PLUGIN_MAX, 1);
	if (js->connector == NULL)
		return;
	for (c = connectors; *c != NULL && strcmp(*c, js->connector) != 0; c++)
		;
	if (*c == NULL) {
		platform_verr_add(v, vp(p, "connector"), "INVALID_CONNECTOR_TYPE",
		    "connector must be one of jdbc, singer, file_storage");
		js->connector = NULL;
		return;
	}
	js->connector = *c;
	if (strcmp(*c, "file_storage") == 0) {
		const char *pre = want_str(v, p, in, "prefix", 0, JOB_PREFIX_MAX, 1);

		if (pre != NULL && !prefix_ok(pre))
			platform_verr_add(v, vp(p, "prefix"), "INVALID_VALUE",
			    "prefix must be a relative path without '..' segments");
	} else {
		want_str(v, p, in, "table_name", 1, JOB_TEXT_MAX, 1);
	}
	/* A singer plugin names a tap file in singer_taps_dir: no path, no
	 * way out of it (the runner checks again before it runs one). */
	if (strcmp(*c, "singer") == 0 && plugin != NULL &&
	    !str_file_name_ok(plugin, JOB_PLUGIN_MAX))
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		    "singer plugin must be a tap's file name: letters, digits, '.', "
		    "'_', '-', '+', not starting with '.'");
	if (strcmp(*c, "jdbc") == 0 && plugin != NULL &&
	    dbkind_of_plugin(plugin) == DBKIND_NONE)
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		    "jdbc plugin must be one of postgres, mysql, mariadb, oracle, "
		    "sqlserver");
	cid = want_str(v, p, in, "connection_id", 1, CONNECTION_ID_LEN, 0);
	if (cid != NULL && !uuid_ok(cid))
		platform_verr_add(v, vp(p, "connection_id"), "UNKNOWN_CONNECTION",
		                  "connection_id is not a connection of this customer");
	else
		js->connection_id = cid;
	js->columns = want_str_array(r, v, p, in, "column_include_list", 0,
	                             PLATFORM_COLUMNS_MAX);
	if (is_present(in, "incremental_column_value"))
		platform_verr_add(v, vp(p, "incremental_column_value"),
		    "INVALID_FIELD", "incremental_column_value is job state: set it "
		    "with PATCH /platform/jobs/{jobId}/input");
	if (strcmp(*c, "jdbc") == 0 && plugin != NULL) {
		input_load_type(r, v, p, in, plugin, js);
	} else {
		for (const char *const *k = jdbc_only_keys; *k != NULL; k++)
			if (is_present(in, *k))
				platform_verr_add(v, vp(p, *k), "INVALID_CONNECTOR_TYPE",
				                  "%s applies to jdbc jobs only", *k);
		js->load_type = "full_load";
	}
	js->input = input_stored(r, in);
	if (strlen(js->input) > JOB_JSON_MAX)
		platform_verr_add(v, p->prefix, "INVALID_LENGTH",
		                  "%s is larger than %d bytes", p->prefix, JOB_JSON_MAX);
}

static void job_output(struct req *r, struct platform_verr *v, struct vpath *p,
                       struct json_object *out, struct job_new *js)
{
	const char *plugin = want_str(v, p, out, "plugin", 1, JOB_PLUGIN_MAX, 1);
	struct json_object *raw;

	if (plugin != NULL && strcmp(plugin, "mariadb") != 0)
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		                  "output plugin must be mariadb");
	if ((raw = want_obj(v, p, out, "raw")) != NULL) {
		struct vpath rp;
		const char *keys[] = { "table_name", "table_schema" };

		vp_child(&rp, p, "raw");
		for (int i = 0; i < 2; i++) {
			const char *s = want_str(v, &rp, raw, keys[i], 1,
			                         WAREHOUSE_NAME_MAX, 1);

			if (s != NULL && !warehouse_name_ok(s))
				platform_verr_add(v, vp(&rp, keys[i]), "INVALID_VALUE",
				    "%s may hold letters, digits and '_' and must not "
				    "start with a digit", vp(&rp, keys[i]));
			else if (s != NULL && i == 1 &&
			         wh_schema_reserved(s, r->cfg->db_name))
				platform_verr_add(v, vp(&rp, keys[i]), "RESERVED_SCHEMA",
				    "%s '%s' is reserved: it names the service database "
				    "or a MariaDB system database", vp(&rp, keys[i]), s);
		}
	}
	js->output = arena_strdup(r->arena,
	    json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	if (strlen(js->output) > JOB_JSON_MAX)
		platform_verr_add(v, p->prefix, "INVALID_LENGTH",
		                  "%s is larger than %d bytes", p->prefix, JOB_JSON_MAX);
}

static void job_validate(struct req *r, struct platform_verr *v, size_t i,
                         struct json_object *jo, struct job_new *js)
{
	static const char *const known[] = {
		"name", "input", "output", "memory_allocated_mb", NULL
	};
	struct json_object *in, *out, *mem = NULL;
	struct vpath p;

	snprintf(p.prefix, sizeof p.prefix, "jobs[%zu]", i);
	if (!json_object_is_type(jo, json_type_object)) {
		platform_verr_add(v, p.prefix, "INVALID_TYPE", "%s must be an object",
		                  p.prefix);
		return;
	}
	reject_unknown(v, &p, jo, known);
	js->name = want_str(v, &p, jo, "name", 1, JOB_NAME_MAX, 0);
	if (json_object_object_get_ex(jo, "memory_allocated_mb", &mem) &&
	    mem != NULL) {
		long long mb = json_object_get_int64(mem);

		if (!json_object_is_type(mem, json_type_int) || mb < 1 ||
		    mb > r->cfg->memory_max_mb)
			platform_verr_add(v, vp(&p, "memory_allocated_mb"),
			    "INVALID_VALUE", "memory_allocated_mb must be an integer "
			    "from 1 to %d", r->cfg->memory_max_mb);
		else
			js->memory_mb = mb;
	}
	if ((in = want_obj(v, &p, jo, "input")) != NULL) {
		struct vpath ip;

		vp_child(&ip, &p, "input");
		job_input(r, v, &ip, in, js);
	}
	if ((out = want_obj(v, &p, jo, "output")) != NULL) {
		struct vpath op;

		vp_child(&op, &p, "output");
		job_output(r, v, &op, out, js);
	}
}

static void pipeline_validate(struct req *r, struct platform_verr *v,
                              struct json_object *body,
                              struct pipeline_spec *ps)
{
	static const char *const known[] = {
		"name", "description", "cron", "cron_timezone", "retries",
		"run_timeout_s", "jobs", NULL
	};
	struct json_object *jobs = NULL, *rt = NULL;
	struct vpath p = { "", "" };
	char err[160];

	if (!json_object_is_type(body, json_type_object)) {
		platform_verr_add(v, "body", "INVALID_TYPE",
		                  "the body must be a JSON object");
		return;
	}
	reject_unknown(v, &p, body, known);
	ps->name = want_str(v, &p, body, "name", 1, PIPELINE_NAME_MAX, 1);
	ps->description = want_str(v, &p, body, "description", 0,
	                           PIPELINE_DESC_MAX, 0);
	ps->cron = want_str(v, &p, body, "cron", 1, CRON_EXPR_MAX, 0);
	ps->cron_timezone = want_str(v, &p, body, "cron_timezone", 1, CRON_TZ_MAX, 0);
	if (ps->cron_timezone != NULL && !cron_tz_valid(ps->cron_timezone)) {
		platform_verr_add(v, "cron_timezone", "INVALID_TIMEZONE",
		                  "cron_timezone must name a zone of the IANA time "
		                  "zone database, such as Europe/Berlin");
		ps->cron_timezone = NULL;
	}
	if (ps->cron != NULL) {
		struct cron c;

		if (cron_parse(ps->cron, &c, err, sizeof err) != 0)
			platform_verr_add(v, "cron", "INVALID_CRON",
			                  "cron is not valid: %s", err);
		else if (cron_next_tz(&c, ps->cron_timezone, time(NULL),
		                      &ps->next_run) != 0)
			platform_verr_add(v, "cron", "INVALID_CRON",
			                  "cron never fires");
	}
	if (json_object_object_get_ex(body, "retries", &rt) && rt != NULL) {
		if (!json_object_is_type(rt, json_type_int) ||
		    json_object_get_int64(rt) < 0 ||
		    json_object_get_int64(rt) > PIPELINE_RETRIES_MAX)
			platform_verr_add(v, "retries", "INVALID_VALUE",
			                  "retries must be an integer from 0 to %d",
			                  PIPELINE_RETRIES_MAX);
		else
			ps->retries = json_object_get_int64(rt);
	}
	if (json_object_object_get_ex(body, "run_timeout_s", &rt) && rt != NULL) {
		if (!json_object_is_type(rt, json_type_int) ||
		    json_object_get_int64(rt) < PIPELINE_RUN_TIMEOUT_MIN ||
		    json_object_get_int64(rt) > PIPELINE_RUN_TIMEOUT_MAX)
			platform_verr_add(v, "run_timeout_s", "INVALID_VALUE",
			                  "run_timeout_s must be an integer from %d to %d "
			                  "(seconds)", PIPELINE_RUN_TIMEOUT_MIN,
			                  PIPELINE_RUN_TIMEOUT_MAX);
		else
			ps->run_timeout_s = json_object_get_int64(rt);
	}
	if (!json_object_object_get_ex(body, "jobs", &jobs) || jobs == NULL) {
		platform_verr_add(v, "jobs", "MISSING_FIELD", "jobs is required");
		platform_verr_require(v, "jobs");
		return;
	}
	if (!json_object_is_type(jobs, json_type_array)) {
		platform_verr_add(v, "jobs", "INVALID_TYPE", "jobs must be an array");
		return;
	}
	ps->njobs = json_object_array_length(jobs);
	if (ps->njobs < 1 || ps->njobs > PIPELINE_JOBS_MAX) {
		platform_verr_add(v, "jobs", "INVALID_LENGTH",
		                  "jobs must have 1 to %d entries (got %zu)",
		                  PIPELINE_JOBS_MAX, ps->njobs);
		ps->njobs = 0;
		return;
	}
	for (size_t i = 0; i < ps->njobs; i++)
		job_validate(r, v, i, json_object_array_get_idx(jobs, i),
		             &ps->jobs[i]);
}

/* ==== writing ============================================================= */


/* Every connection_id must be a connection of the caller; the shared lock
 * keeps it from being deleted before the jobs reference it.  0, 1 when an
 * error was recorded, or a negative db error. */
static int connections_check(struct req *r, struct pipeline_spec *ps,
                             struct platform_verr *v)
{
	for (size_t i = 0; i < ps->njobs; i++) {
		struct db_stmt *st;
		char field[64];
		int rc;

		if (ps->jobs[i].connection_id == NULL)
			continue;
		st = db_query(r->db, "SELECT 1 FROM connections WHERE id = ? "
		              "AND customer_id = ? LOCK IN SHARE MODE", "ss",
		              ps->jobs[i].connection_id, r->id.customer_id);
		if (st == NULL)
			return db_last_err(r->db);
		rc = db_fetch(st);
		db_done(st);
		if (rc < 0)
			return db_last_err(r->db);
		if (rc == 0) {
			snprintf(field, sizeof field, "jobs[%zu].input.connection_id", i);
			platform_verr_add(v, field, "UNKNOWN_CONNECTION",
			    "connection_id is not a connection of this customer");
		}
	}
	return platform_verr_count(v) > 0;
}

static int job_insert(struct req *r, const char *pid, size_t i,
                      const struct job_new *js)
{
	char jid[JOB_ID_MAX + 1], mem[24], task[JOB_ID_MAX + 32];
	char upstream[JOB_ID_MAX + 40];
	const char *name = js->name;
	long long rc;

	platform_job_id_make(jid, pid, (int)i);
	snprintf(mem, sizeof mem, "%lld", js->memory_mb);
	if (name == NULL)
		name = jid;
	rc = db_exec(r->db, "INSERT INTO jobs (id, pipeline_id, job_index, name, "
	    "connector, input, output, load_type, incremental_column_name, "
	    "incremental_column_type, primary_keys, column_include_list, "
	    "memory_allocated_mb) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	    "ssissssssssss", jid, pid, (long long)i, name, js->connector,
	    js->input, js->output, js->load_type, js->inc_name, js->inc_type,
	    js->primary_keys, js->columns, js->memory_mb > 0 ? mem : NULL);
	if (rc < 0)
		return (int)rc;
	rc = db_exec(r->db, "INSERT INTO job_state (job_id) VALUES (?)", "s", jid);
	if (rc < 0)
		return (int)rc;
	snprintf(task, sizeof task, "%s.extract_load", jid);
	rc = db_exec(r->db, "INSERT INTO orchestration_tasks (pipeline_id, "
	    "task_id, job_id, kind, upstream_task_ids, position) "
	    "VALUES (?, ?, ?, 'extract_load', '[]', ?)", "sssi", pid, task, jid,
	    (long long)(2 * i));
	if (rc < 0 || strcmp(js->load_type, "incremental_with_qualify") != 0)
		return rc < 0 ? (int)rc : 0;
	snprintf(upstream, sizeof upstream, "[\"%s\"]", task);
	snprintf(task, sizeof task, "%s.qualify", jid);
	rc = db_exec(r->db, "INSERT INTO orchestration_tasks (pipeline_id, "
	    "task_id, job_id, kind, upstream_task_ids, position) "
	    "VALUES (?, ?, ?, 'qualify', ?, ?)", "ssssi", pid, task, jid,
	    upstream, (long long)(2 * i + 1));
	return rc < 0 ? (int)rc : 0;
}

/* The pipeline, its jobs, job states and tasks in one transaction.
 * 0; 1 when a connection check failed (recorded in v); or a db error. */
static int pipeline_insert(struct req *r, struct pipeline_spec *ps,
                           const char *pid, struct platform_verr *v)
{
	char next[TIME_SQL_LEN];
	long long n;
	int rc;

	if ((rc = db_begin(r->db)) != 0)
		return rc;
	if ((rc = connections_check(r, ps, v)) != 0)
		goto out;
	n = db_exec(r->db, "INSERT INTO pipelines (id, customer_id, created_by, "
	    "name, description, cron, cron_timezone, retries, run_timeout_s, "
	    "next_run_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, 0), ?)",
	    "sssssssiis", pid, r->id.customer_id, r->id.sub, ps->name,
	    ps->description != NULL ? ps->description : "", ps->cron,
	    ps->cron_timezone, ps->retries, ps->run_timeout_s,
	    time_sql(next, ps->next_run));
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	for (size_t i = 0; i < ps->njobs; i++)
		if ((rc = job_insert(r, pid, i, &ps->jobs[i])) != 0)
			goto out;
	rc = db_commit(r->db);
out:
	if (rc != 0)
		db_rollback(r->db);
	return rc;
}

/* ==== handler ============================================================= */

int pipeline_create(struct req *r)
{
	struct json_object *body = req_json_body_or_reply(r);
	struct pipeline_spec *ps;
	struct platform_verr v;
	char id[PIPELINE_ID_LEN + 1];
	struct strbuf b = { 0 };
	int rc;

	if (body == NULL)
		return -1;
	ps = arena_alloc(r->arena, sizeof *ps);
	platform_verr_init(&v);
	pipeline_validate(r, &v, body, ps);
	if (platform_verr_count(&v) > 0)
		return platform_reply_validation(r, &v, "Pipeline validation failed");
	if (auth_customer_ensure_or_reply(r) == NULL ||
	    platform_pipeline_id_new(id) != 0) {
		platform_verr_free(&v);
		return r->status != 0 ? -1 : resp_internal(r, "pipeline id");
	}
	rc = pipeline_insert(r, ps, id, &v);
	if (rc == 1)
		return platform_reply_validation(r, &v, "Pipeline validation failed");
	platform_verr_free(&v);
	if (rc != 0)
		return resp_db_error(r, rc);
	if ((rc = pipeline_render(r, id, 0, &b)) != 1) {
		strbuf_free(&b);
		return rc == 0 ? resp_internal(r, "created pipeline vanished")
		               : resp_db_error(r, rc);
	}
	return jb_reply(r, 201, &b);
}
