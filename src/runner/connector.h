/* connector.h - one task of a pipeline run, as the run executor hands it to
 * a connector inside the job's child process.
 *
 * The executor (executor.c) claims a run, walks its task graph and forks one
 * child per task with RLIMIT_AS set to the job's memory.  The child opens its
 * own connections (service database, warehouse, source), fills a job_spec,
 * and calls the connector named by the job.  A connector streams rows from
 * its source into the warehouse in batches and saves the state that covers
 * them in the same commit (or after it, never before): a failed or killed
 * task leaves the state where it was. */
#ifndef SLUICE_CONNECTOR_H
#define SLUICE_CONNECTOR_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct db;
struct wh;
struct json_object;
struct run_log;

enum load_type {
	LOAD_FULL,                      /* full_load */
	LOAD_INCREMENTAL,               /* incremental */
	LOAD_INCREMENTAL_QUALIFY,       /* incremental_with_qualify */
};

/* A source database, from the job's connection (connections table). */
struct source_conn {
	char plugin[64];                /* postgres, mysql, mariadb, oracle, sqlserver */
	char host[256];
	int port;
	char database[256];
	char user[256];
	char password[1032];            /* decrypted; wiped by the child when done */
	struct json_object *options;    /* connection options object, or NULL */
};

/* A job as one task of a run sees it.  Everything is owned by the child's
 * set-up and valid for the whole task. */
struct job_spec {
	const char *run_id;
	const char *pipeline_id;
	const char *job_id;
	const char *customer_id;
	const char *task_id;            /* "{job_id}.extract_load" / "{job_id}.qualify" */
	const char *connector;          /* jdbc, singer, file_storage */
	const char *plugin;             /* input.plugin */
	struct json_object *input;      /* the job's input object */
	struct json_object *output;     /* the job's output object */
	const char *dest_schema;        /* the customer's warehouse database of
	                                 * output.raw.table_schema (wh_schema_physical) */
	const char *dest_table;         /* output.raw.table_name */
	enum load_type load_type;
	const char *incremental_column; /* NULL for full_load */
	const char *incremental_column_type;
	struct json_object *primary_keys;        /* array of strings, or NULL */
	struct json_object *column_include_list; /* array of strings, or NULL = all */
	const char *bookmark;           /* job_state.incremental_column_value, NULL = none */
	const char *singer_state;       /* job_state.state JSON text, NULL = none */
	bool has_source;                /* source filled (jdbc; singer when configured) */
	struct source_conn source;
	int memory_mb;
};

/* What a task works with.  db and wh are this process's own connections. */
struct task_env {
	const struct config *cfg;
	const char *run_id;             /* the run and task this child runs */
	const char *task_id;
	struct db *db;                  /* the service's database */
	struct wh *wh;                  /* the warehouse */
	struct run_log *log;            /* this task's log lines */
	long long rows_read;            /* out: rows taken from the source */
	long long rows_loaded;          /* out: rows written to the warehouse */
};

/* Each returns 0, or -1 with a client-safe reason in err (it becomes the
 * task's ERROR log line and the run's error). */
typedef int (*connector_fn)(const struct job_spec *job, struct task_env *env,
                            char *err, size_t errlen);

/* The extract_load task of job->connector (jdbc / singer / file_storage). */
int connector_extract_load(const struct job_spec *job, struct task_env *env,
                           char *err, size_t errlen);
/* The qualify task: keep one row per primary key, the latest by the
 * incremental column (jdbc incremental_with_qualify jobs). */
int connector_qualify(const struct job_spec *job, struct task_env *env,
                      char *err, size_t errlen);

int jdbc_extract_load(const struct job_spec *job, struct task_env *env,
                      char *err, size_t errlen);
int jdbc_qualify(const struct job_spec *job, struct task_env *env,
                 char *err, size_t errlen);
int singer_extract_load(const struct job_spec *job, struct task_env *env,
                        char *err, size_t errlen);
int file_storage_extract_load(const struct job_spec *job, struct task_env *env,
                              char *err, size_t errlen);

/* ---- state that covers loaded rows (state.c) ----------------------------
 * Each writes through the warehouse connection, inside the transaction the
 * caller has open there, when the warehouse shares the service's server
 * (one commit covers rows and state); otherwise through env->db right after
 * the caller's warehouse commit.  The caller calls them between the rows'
 * last batch and wh_commit, and calls state_after_commit after wh_commit. */
int state_save_bookmark(struct task_env *env, const char *job_id,
                        const char *value, char *err, size_t errlen);
int state_save_singer(struct task_env *env, const char *job_id,
                      const char *state_json, char *err, size_t errlen);
int state_save_processed_file(struct task_env *env, const char *job_id,
                              const char *file_path, const char *last_modified_sql,
                              long long size_bytes, char *err, size_t errlen);
/* The task's rows committed so far (what run_task_status.rows_loaded shows
 * should the task die before it reports): saved like the state, so it
 * commits with the rows it counts.  Outside a transaction it is written at
 * once (after a staging swap, say); then call state_after_commit too. */
int state_save_rows(struct task_env *env, long long rows_committed,
                    char *err, size_t errlen);
/* Flush the writes deferred because the warehouse is another server. */
int state_after_commit(struct task_env *env, char *err, size_t errlen);

/* ---- staging tables (staging.c) ------------------------------------------
 * A staging table is registered before it is created and released once
 * swapped in or dropped, so that what a killed task leaves is dropped by its
 * supervisor or the sweep. */
int staging_register(struct task_env *env, const char *schema, const char *table,
                     char *err, size_t errlen);
void staging_release(struct task_env *env, const char *schema, const char *table);

/* ---- run log (run_log.c) -------------------------------------------------
 * Lines of a run as GET .../pipeline_run/{runId}/logs returns them, written
 * as they happen (autocommit, on the service database, never inside a load
 * transaction) so a failed task's lines survive its rollback. */
#define RUN_LOG_LINE_MAX 4000
struct run_log *run_log_new(struct db *db, const char *run_id, const char *task_id);
void run_log_free(struct run_log *l);                /* NULL is fine */
void run_log_info(struct run_log *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void run_log_warning(struct run_log *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The WARNING of a destination column widened to follow its source, as a
 * wh_evolve_fn (db/wh_evolve.h) whose arg is the task's struct run_log;
 * a column the table lacks (from NULL) is not logged here. */
void run_log_widened(void *log, const char *column, const char *from, const char *to);
void run_log_error(struct run_log *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
