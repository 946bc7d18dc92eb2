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
#include "http/validate.h"
#include "platform/dbkind.h"
#include "platform/pipelines.h"
#include "platform/platform.h"
#include "platform/sync_mode.h"
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

static int is_present(struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	return json_object_object_get_ex(o, key, &x) && x != NULL;
}

/* A field the connector or load type requires is absent. */
static void missing(struct platform_verr *v, struct vpath *p, const char *key,
                    const char *code, const char *why)
{
	platform_verr_add(v, vp(p, key), code, "%s is required%s", vp(p, key), why);
	platform_verr_require(v, vp(p, key));
}

/* A list of column names the table let through, as compact JSON text
 * (arena); NULL when absent or its entries are refused. */
static const char *names_text(struct req *r, struct platform_verr *v,
                              struct vpath *p, const char *key,
                              struct json_object *a, size_t max)
{
	char why[160];

	if (a == NULL)
		return NULL;
	if (sync_names_check(a, max, why, sizeof why) != 0) {
		platform_verr_add(v, vp(p, key), "INVALID_VALUE", "%s %s", vp(p, key),
		                  why);
		return NULL;
	}
	return arena_strdup(r->arena,
	    json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* A warehouse identifier: letters, digits and '_', not starting with a
 * digit, so it can be quoted safely (the table bounds its length). */
static int warehouse_name_ok(const char *s)
{
	if (isdigit((unsigned char)s[0]))
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

/* --- the tables --------------------------------------------------------------
 * Input and output objects also carry the connector's own settings, stored
 * as given: their tables list what sluice reads, and other keys pass. */

#define PIN(m) VOFF(struct pipeline_in, m)

const struct vfield platform_pipeline_body[] = {
	{ "name", V_STR, V_REQUIRED, 1, PIPELINE_NAME_MAX, NULL, NULL, PIN(name) },
	{ "description", V_STR, 0, 0, PIPELINE_DESC_MAX, NULL, NULL,
	  PIN(description) },
	{ "cron", V_STR, 0, 1, CRON_EXPR_MAX, NULL, NULL, PIN(cron) },
	{ "cron_timezone", V_STR, 0, 1, CRON_TZ_MAX, NULL, NULL,
	  PIN(cron_timezone) },
	{ "retries", V_INT, 0, 0, PIPELINE_RETRIES_MAX, NULL, NULL, PIN(retries) },
	{ "run_timeout_s", V_INT, 0, PIPELINE_RUN_TIMEOUT_MIN,
	  PIPELINE_RUN_TIMEOUT_MAX, NULL, NULL, PIN(run_timeout_s) },
	{ "jobs", V_ARR, V_REQUIRED, 1, PIPELINE_JOBS_MAX, NULL, NULL, PIN(jobs) },
	VFIELDS_END
};

#define JIN(m) VOFF(struct job_in, m)

/* memory_allocated_mb's maximum is the config's memory_max_mb (row
 * JOB_MEMORY_ROW). */
const struct vfield platform_job_body[] = {
	{ "name", V_STR, 0, 1, JOB_NAME_MAX, NULL, NULL, JIN(name) },
	{ "input", V_OBJ, V_REQUIRED, 0, 0, NULL, NULL, JIN(input) },
	{ "output", V_OBJ, V_REQUIRED, 0, 0, NULL, NULL, JIN(output) },
	{ "memory_allocated_mb", V_INT, V_CFG_MAX, 1, 0, NULL, NULL, JIN(memory_mb) },
	VFIELDS_END
};

struct input_in {
	const char *connector, *plugin, *table_name, *prefix, *connection_id;
	const char *load_type, *inc_name, *inc_type;
	struct json_object *primary_keys, *columns;
};

#define IIN(m) VOFF(struct input_in, m)

const struct vfield platform_input_body[] = {
	{ "connector", V_STR, V_REQUIRED, 1, 32, NULL, NULL, IIN(connector) },
	{ "plugin", V_STR, V_REQUIRED, 1, JOB_PLUGIN_MAX, NULL, NULL, IIN(plugin) },
	{ "table_name", V_STR, 0, 1, JOB_TEXT_MAX, NULL, NULL, IIN(table_name) },
	{ "prefix", V_STR, 0, 0, JOB_PREFIX_MAX, NULL, NULL, IIN(prefix) },
	{ "connection_id", V_STR, 0, 1, CONNECTION_ID_LEN, NULL, NULL,
	  IIN(connection_id) },
	{ "load_type", V_STR, 0, 1, 32, NULL, NULL, IIN(load_type) },
	{ "incremental_column_name", V_STR, 0, 1, JOB_TEXT_MAX, NULL, NULL,
	  IIN(inc_name) },
	{ "incremental_column_type", V_STR, 0, 1, 64, NULL, NULL, IIN(inc_type) },
	{ "primary_keys", V_ARR, 0, 1, JOB_KEYS_MAX, NULL, NULL,
	  IIN(primary_keys) },
	{ "column_include_list", V_ARR, 0, 0, PLATFORM_COLUMNS_MAX, NULL, NULL,
	  IIN(columns) },
	VFIELDS_END
};

struct output_in {
	const char *plugin;
	struct json_object *raw;
};

const struct vfield platform_output_body[] = {
	{ "plugin", V_STR, V_REQUIRED, 1, JOB_PLUGIN_MAX, NULL, NULL,
	  VOFF(struct output_in, plugin) },
	{ "raw", V_OBJ, V_REQUIRED, 0, 0, NULL, NULL, VOFF(struct output_in, raw) },
	VFIELDS_END
};

struct raw_in {
	const char *name[2];               /* table_name, table_schema */
};

const struct vfield platform_raw_body[] = {
	{ "table_name", V_STR, V_REQUIRED, 1, WAREHOUSE_NAME_MAX, NULL, NULL,
	  VOFF(struct raw_in, name[0]) },
	{ "table_schema", V_STR, V_REQUIRED, 1, WAREHOUSE_NAME_MAX, NULL, NULL,
	  VOFF(struct raw_in, name[1]) },
	VFIELDS_END
};

/* --- the rules across fields ------------------------------------------------------ */

static const char *const load_types[] = {
	"full_load", "incremental", "incremental_with_qualify", NULL
};

/* load_type and its settings (jdbc only). */
static void input_load_type(struct platform_verr *v, struct vpath *p,
                            struct json_object *obj, const struct input_in *in,
                            struct job_new *js)
{
	enum dbkind kind = dbkind_of_plugin(in->plugin);
	char allowed[512];

	js->load_type = "full_load";
	if (in->load_type != NULL) {
		const char *const *t;

		for (t = load_types; *t != NULL && strcmp(*t, in->load_type) != 0; t++)
			;
		if (*t == NULL) {
			platform_verr_add(v, vp(p, "load_type"), "INVALID_LOAD_TYPE",
			    "load_type must be one of full_load, incremental, "
			    "incremental_with_qualify");
			return;
		}
		js->load_type = *t;
	}
	if (strcmp(js->load_type, "full_load") == 0) {
		if (is_present(obj, "incremental_column_name") ||
		    is_present(obj, "incremental_column_type"))
			platform_verr_add(v, vp(p, "load_type"), "INVALID_LOAD_TYPE",
			    "incremental_column_name and incremental_column_type "
			    "need an incremental load_type");
		return;
	}
	js->inc_name = in->inc_name;
	if (!is_present(obj, "incremental_column_name"))
		missing(v, p, "incremental_column_name",
		        "MISSING_INCREMENTAL_COLUMN_NAME", " for an incremental load_type");
	if (!is_present(obj, "incremental_column_type"))
		missing(v, p, "incremental_column_type",
		        "MISSING_INCREMENTAL_COLUMN_TYPE", " for an incremental load_type");
	else if (in->inc_type != NULL &&
	         (js->inc_type = dbkind_type_find(kind, in->inc_type)) == NULL)
		platform_verr_add(v, vp(p, "incremental_column_type"),
		    "INVALID_INCREMENTAL_COLUMN_TYPE",
		    "incremental_column_type is not allowed for plugin %s; "
		    "allowed: %s", in->plugin,
		    dbkind_types_joined(kind, allowed, sizeof allowed));
	if (strcmp(js->load_type, "incremental_with_qualify") == 0 &&
	    !is_present(obj, "primary_keys"))
		missing(v, p, "primary_keys", "MISSING_PRIMARY_KEYS",
		        " for load_type incremental_with_qualify");
}

static const char *const jdbc_only_keys[] = {
	"load_type", "incremental_column_name", "incremental_column_type",
	"primary_keys", NULL
};

static const char *const connectors[] = { "jdbc", "singer", "file_storage", NULL };

/* The source's settings: the one of its connector. */
static void input_source(struct platform_verr *v, struct vpath *p,
                         struct json_object *obj, const struct input_in *in,
                         const char *connector)
{
	if (strcmp(connector, "file_storage") == 0) {
		if (!is_present(obj, "prefix"))
			missing(v, p, "prefix", "MISSING_FIELD", "");
		else if (in->prefix != NULL && !prefix_ok(in->prefix))
			platform_verr_add(v, vp(p, "prefix"), "INVALID_VALUE",
			    "prefix must be a relative path without '..' segments");
	} else if (!is_present(obj, "table_name")) {
		missing(v, p, "table_name", "MISSING_FIELD", "");
	}
	/* A singer plugin names a tap file in singer_taps_dir: no path, no
	 * way out of it (the runner checks again before it runs one). */
	if (strcmp(connector, "singer") == 0 && in->plugin != NULL &&
	    !str_file_name_ok(in->plugin, JOB_PLUGIN_MAX))
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		    "singer plugin must be a tap's file name: letters, digits, '.', "
		    "'_', '-', '+', not starting with '.'");
	if (strcmp(connector, "jdbc") == 0 && in->plugin != NULL &&
	    dbkind_of_plugin(in->plugin) == DBKIND_NONE)
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		    "jdbc plugin must be one of postgres, mysql, mariadb, oracle, "
		    "sqlserver");
}

static void job_input(struct req *r, struct platform_verr *v, struct vpath *p,
                      struct json_object *obj, struct job_new *js)
{
	struct input_in in = { 0 };
	const char *const *c;

	platform_verr_validate(v, p->prefix, platform_input_body, obj, &in, false);
	if (in.connector == NULL)
		return;
	for (c = connectors; *c != NULL && strcmp(*c, in.connector) != 0; c++)
		;
	if (*c == NULL) {
		platform_verr_add(v, vp(p, "connector"), "INVALID_CONNECTOR_TYPE",
		    "connector must be one of jdbc, singer, file_storage");
		return;
	}
	js->connector = *c;
	input_source(v, p, obj, &in, *c);
	if (in.connection_id != NULL && !uuid_ok(in.connection_id))
		platform_verr_add(v, vp(p, "connection_id"), "UNKNOWN_CONNECTION",
		                  "connection_id is not a connection of this customer");
	else
		js->connection_id = in.connection_id;
	js->columns = names_text(r, v, p, "column_include_list", in.columns,
	                         PLATFORM_COLUMNS_MAX);
	js->primary_keys = names_text(r, v, p, "primary_keys", in.primary_keys,
	                              JOB_KEYS_MAX);
	if (is_present(obj, "incremental_column_value"))
		platform_verr_add(v, vp(p, "incremental_column_value"),
		    "INVALID_FIELD", "incremental_column_value is job state: set it "
		    "with PATCH /platform/jobs/{jobId}/input");
	if (strcmp(*c, "jdbc") == 0 && in.plugin != NULL) {
		input_load_type(v, p, obj, &in, js);
	} else {
		for (const char *const *k = jdbc_only_keys; *k != NULL; k++)
			if (is_present(obj, *k))
				platform_verr_add(v, vp(p, *k), "INVALID_CONNECTOR_TYPE",
				                  "%s applies to jdbc jobs only", *k);
		js->load_type = "full_load";
	}
	js->input = input_stored(r, obj);
	if (strlen(js->input) > JOB_JSON_MAX)
		platform_verr_add(v, p->prefix, "OUT_OF_RANGE",
		                  "%s is larger than %d bytes", p->prefix, JOB_JSON_MAX);
}

static void job_output(struct req *r, struct platform_verr *v, struct vpath *p,
                       struct json_object *obj, struct job_new *js)
{
	struct output_in out = { NULL, NULL };
	struct raw_in raw = { { NULL, NULL } };
	struct vpath rp;

	platform_verr_validate(v, p->prefix, platform_output_body, obj, &out, false);
	if (out.plugin != NULL && strcmp(out.plugin, "mariadb") != 0)
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		                  "output plugin must be mariadb");
	vp_child(&rp, p, "raw");
	if (out.raw != NULL)
		platform_verr_validate(v, rp.prefix, platform_raw_body, out.raw, &raw, false);
	for (int i = 0; i < 2; i++) {
		const char *key = platform_raw_body[i].name, *s = raw.name[i];

		if (s != NULL && !warehouse_name_ok(s))
			platform_verr_add(v, vp(&rp, key), "INVALID_VALUE",
			    "%s may hold letters, digits and '_' and must not "
			    "start with a digit", vp(&rp, key));
		else if (s != NULL && i == 1 && wh_schema_reserved(s, r->cfg->db_name))
			platform_verr_add(v, vp(&rp, key), "RESERVED_SCHEMA",
			    "%s '%s' is reserved: it names the service database "
			    "or a MariaDB system database", vp(&rp, key), s);
	}
	js->output = arena_strdup(r->arena,
	    json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	if (strlen(js->output) > JOB_JSON_MAX)
		platform_verr_add(v, p->prefix, "OUT_OF_RANGE",
		                  "%s is larger than %d bytes", p->prefix, JOB_JSON_MAX);
}

void pipeline_job_check(struct req *r, struct platform_verr *v,
                        const char *prefix, struct json_object *input,
                        struct json_object *output, struct job_new *js)
{
	struct vpath p, sub;

	if (str_copy(p.prefix, sizeof p.prefix, prefix) != 0)
		return;                    /* ours: never too long */
	if (input != NULL) {
		vp_child(&sub, &p, "input");
		job_input(r, v, &sub, input, js);
	}
	if (output != NULL) {
		vp_child(&sub, &p, "output");
		job_output(r, v, &sub, output, js);
	}
}

static void job_validate(struct req *r, struct platform_verr *v, size_t i,
                         struct json_object *jo, struct job_new *js)
{
	struct vfield fields[sizeof platform_job_body / sizeof platform_job_body[0]];
	struct job_in in = { NULL, NULL, NULL, 0 };
	char prefix[32];

	memcpy(fields, platform_job_body, sizeof fields);
	fields[JOB_MEMORY_ROW].max = r->cfg->memory_max_mb;
	snprintf(prefix, sizeof prefix, "jobs[%zu]", i);
	platform_verr_validate(v, prefix, fields, jo, &in, true);
	js->name = in.name;
	js->memory_mb = in.memory_mb;
	pipeline_job_check(r, v, prefix, in.input, in.output, js);
}

void pipeline_schedule_check(struct platform_verr *v, const char *cron,
                             const char **tz, time_t *next)
{
	char err[160];
	struct cron c;

	*next = 0;
	if (*tz != NULL && !cron_tz_valid(*tz)) {
		platform_verr_add(v, "cron_timezone", "INVALID_TIMEZONE",
		                  "cron_timezone must name a zone of the IANA time "
		                  "zone database, such as Europe/Berlin");
		*tz = NULL;
	}
	if (cron == NULL)
		return;
	if (cron_parse(cron, &c, err, sizeof err) != 0)
		platform_verr_add(v, "cron", "INVALID_CRON", "cron is not valid: %s",
		                  err);
	else if (cron_next_tz(&c, *tz, time(NULL), next) != 0)
		platform_verr_add(v, "cron", "INVALID_CRON", "cron never fires");
}

static void pipeline_validate(struct req *r, struct platform_verr *v,
                              struct json_object *body,
                              struct pipeline_spec *ps)
{
	struct pipeline_in in = { 0 };

	platform_verr_validate(v, "", platform_pipeline_body, body, &in, true);
	ps->name = in.name;
	ps->description = in.description;
	ps->cron = in.cron;
	ps->cron_timezone = in.cron_timezone;
	ps->retries = in.retries;
	ps->run_timeout_s = in.run_timeout_s;
	pipeline_schedule_check(v, ps->cron, &ps->cron_timezone, &ps->next_run);
	ps->njobs = in.jobs != NULL ? json_object_array_length(in.jobs) : 0;
	for (size_t i = 0; i < ps->njobs; i++)
		job_validate(r, v, i, json_object_array_get_idx(in.jobs, i),
		             &ps->jobs[i]);
}

/* ==== writing ============================================================= */


int pipeline_connection_check(struct req *r, const char *connection_id,
                              const char *field, struct platform_verr *v)
{
	int rc = db_first_row(r->db, db_query(r->db, "SELECT 1 FROM connections "
	    "WHERE id = ? AND customer_id = ? LOCK IN SHARE MODE", "ss",
	    connection_id, r->id.customer_id), NULL, 0);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	platform_verr_add(v, field, "UNKNOWN_CONNECTION",
	                  "connection_id is not a connection of this customer");
	return 1;
}

/* Every connection_id of the jobs.  0, 1 when an error was recorded, or a
 * negative db error. */
static int connections_check(struct req *r, const struct pipeline_spec *ps,
                             struct platform_verr *v)
{
	for (size_t i = 0; i < ps->njobs; i++) {
		char field[64];
		int rc;

		if (ps->jobs[i].connection_id == NULL)
			continue;
		snprintf(field, sizeof field, "jobs[%zu].input.connection_id", i);
		if ((rc = pipeline_connection_check(r, ps->jobs[i].connection_id,
		                                    field, v)) < 0)
			return rc;
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

struct pipeline_insert {
	struct req *r;
	const struct pipeline_spec *ps;
	const char *pid;
	struct platform_verr *v;
};

/* One attempt: the pipeline, its jobs, job states and tasks.  0; 1 when a
 * connection check failed (recorded in v, which every attempt starts
 * afresh); or a db error. */
static int pipeline_insert_body(struct db *db, void *arg)
{
	const struct pipeline_insert *x = arg;
	const struct pipeline_spec *ps = x->ps;
	struct req *r = x->r;
	char next[TIME_SQL_LEN];
	long long n;
	int rc;

	platform_verr_free(x->v);
	platform_verr_init(x->v);
	if ((rc = connections_check(r, ps, x->v)) != 0)
		return rc;
	n = db_exec(db, "INSERT INTO pipelines (id, customer_id, created_by, "
	    "name, description, cron, cron_timezone, retries, run_timeout_s, "
	    "next_run_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, 0), ?)",
	    "sssssssiis", x->pid, r->id.customer_id, r->id.sub, ps->name,
	    ps->description != NULL ? ps->description : "", ps->cron,
	    ps->cron_timezone, ps->retries, ps->run_timeout_s,
	    time_sql(next, ps->next_run));
	if (n < 0)
		return (int)n;
	for (size_t i = 0; i < ps->njobs; i++)
		if ((rc = job_insert(r, x->pid, i, &ps->jobs[i])) != 0)
			return rc;
	return 0;
}

/* ==== handler ============================================================= */

int pipeline_create(struct req *r)
{
	struct json_object *body;
	struct pipeline_spec *ps;
	struct platform_verr v;
	char id[PIPELINE_ID_LEN + 1];
	struct strbuf b = { 0 };
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    (body = req_json_body_or_reply(r)) == NULL)
		return -1;
	ps = arena_alloc(r->arena, sizeof *ps);
	platform_verr_init(&v);
	pipeline_validate(r, &v, body, ps);
	if (platform_verr_count(&v) > 0)
		return platform_reply_validation(r, PLATFORM_PIPELINE_INVALID, &v);
	if (auth_customer_ensure_or_reply(r) == NULL ||
	    platform_pipeline_id_new(id) != 0) {
		platform_verr_free(&v);
		return r->status != 0 ? -1 : resp_internal(r, "pipeline id");
	}
	rc = db_tx(r->db, "pipeline create", pipeline_insert_body,
	           &(struct pipeline_insert){ r, ps, id, &v });
	if (rc == 1)
		return platform_reply_validation(r, PLATFORM_PIPELINE_INVALID, &v);
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
