/* config.h - sluice.conf: one "key = value" per line, '#' comments.
 *
 * Every key is documented in docs/operations.md.  Unknown keys and bad values
 * are errors that name the line, so a typo never silently falls back to a
 * default. */
#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "util/aead.h"

#define CONFIG_PATH_MAX 1024
#define CONFIG_STR_MAX 256

struct config {
	/* serve */
	char listen[CONFIG_PATH_MAX];         /* FastCGI unix socket path */
	char wait_listen[CONFIG_PATH_MAX];    /* the waiter's socket; "" = <listen>.wait */
	int listen_mode;                      /* octal permissions of the socket */
	int listen_backlog;
	int workers;                          /* 0 = number of CPUs */
	long max_requests;                    /* recycle a worker after N; 0 = never */
	int shutdown_timeout;                 /* seconds before SIGKILL on stop */
	char pid_file[CONFIG_PATH_MAX];       /* "" = none */
#ifdef SLUICE_TEST_HOOKS
	bool testing_routes;                  /* /_test/... routes (test builds) */
#endif

	/* database */
	char db_host[CONFIG_STR_MAX];
	int db_port;
	char db_socket[CONFIG_PATH_MAX];      /* preferred over host:port when set */
	char db_user[CONFIG_STR_MAX];
	char db_password[CONFIG_STR_MAX];
	char db_name[CONFIG_STR_MAX];
	int db_connect_timeout;               /* seconds */
	char sql_dir[CONFIG_PATH_MAX];        /* migrations */
	/* The account `sluice migrate` connects as (DDL on db_name); empty =
	 * db_user with db_password. */
	char migrate_user[CONFIG_STR_MAX];
	char migrate_password_file[CONFIG_PATH_MAX];  /* "" = no password */

	/* storage */
	char storage_root[CONFIG_PATH_MAX];
	bool render_cache;                    /* keep rendered listings as files */
	char render_cache_dir[CONFIG_PATH_MAX];  /* "" = <storage_root>/.render-cache */
	char host_name[101];                  /* names this host's work processes; "" = gethostname() */

	/* auth */
	char jwt_secret_file[CONFIG_PATH_MAX];
	int jwt_leeway;                       /* seconds of clock skew allowed */
	bool health_auth;                     /* require Basic on GET /health */
	int health_ping_cache_ms;             /* reuse a worker's good ping this long; 0 = never */
	int basic_cache_ttl;                  /* seconds a verified password is cached */
	int pbkdf2_iterations;                /* for newly stored passwords */
	int password_checks_max;              /* workers hashing at once; 0 = a quarter,
	                                       * at most one per CPU */
	/* Failed Basic checks allowed per user name and per client address
	 * before 429; one comes back every basic_fail_refill_s seconds. */
	int basic_fail_per_user;
	int basic_fail_per_address;
	int basic_fail_refill_s;

	/* limits */
	long body_max_bytes;                  /* JSON and other small bodies */
	int json_max_depth;

	/* platform (used by the platform and runner areas) */
	int memory_default_mb;
	int memory_max_mb;
	char connection_key_file[CONFIG_PATH_MAX];   /* AES-256-GCM key, hex */
	int connection_test_timeout_s;        /* POST .../test: connect and read */

	/* warehouse (db/warehouse.c): empty host and socket = the service
	 * database's own server; warehouse_user is the loader account */
	char warehouse_host[CONFIG_STR_MAX];
	int warehouse_port;
	char warehouse_socket[CONFIG_PATH_MAX];
	char warehouse_user[CONFIG_STR_MAX];
	char warehouse_password_file[CONFIG_PATH_MAX];  /* "" = no password */
	char warehouse_default_schema[65];    /* for an empty table_schema */
	long jdbc_commit_rows;                /* rows per commit of an incremental load */

	/* work: the supervisor (src/work/), and each kind's limits */
	int work_poll_ms;                     /* idle wait between queue polls */
	int work_shutdown_grace_s;            /* SIGTERM: children may finish this long */
	int work_rag_question_slots;          /* children of a kind at once */
	int work_rag_question_deadline_s;     /* a child past this is killed */
	int work_rag_ingest_slots;
	int work_rag_ingest_deadline_s;
	int work_storage_infer_slots;
	int work_storage_infer_deadline_s;
	int work_storage_link_load_slots;
	int work_storage_link_load_deadline_s;
	int work_runner_sweep_slots;
	int work_runner_sweep_deadline_s;
	int work_webhook_deliver_slots;
	int work_webhook_deliver_deadline_s;
#ifdef SLUICE_TEST_HOOKS
	int work_test_slots;                  /* the test-only kinds (test builds) */
	int work_test_deadline_s;
#endif

	/* pipeline runner (in sluice work) */
	int runner_max_runs;                  /* runs supervised at once per process */
	int runner_heartbeat_s;               /* run heartbeat and cancel check period */
	int runner_stale_s;                   /* a run without heartbeat this long is dead */
	int runner_shutdown_grace_s;          /* SIGTERM: runs may finish this long */
	int runner_retry_base_s;              /* first retry delay; doubles each time */
	int runner_run_timeout_s;             /* a run's time limit, unless its pipeline's */
	int runner_sweep_interval_s;          /* orphaned staging tables swept this often */
	/* webhooks (platform/webhooks.c, platform/webhook_deliver.c) */
	bool webhook_allow_private;           /* loopback/private/link-local URLs allowed */
	int webhook_timeout_s;                /* connect and total time of one attempt */
	int webhook_max_attempts;             /* attempts before a delivery is FAILED */
	int webhook_retry_base_s;             /* first retry delay; doubles each time */
	char webhook_ca_file[CONFIG_PATH_MAX];  /* "" = the system's CA bundle */
#ifdef SLUICE_TEST_HOOKS
	/* Test builds only (util/test_hooks.h): a pause before each task's
	 * connector, and memory a task allocates first (MB); a pause of the
	 * qualify task between applying an increment and its commit. */
	int runner_test_task_delay_ms;
	int runner_test_task_alloc_mb;
	int runner_test_qualify_delay_ms;
	/* A worker woken waits this long before it takes what is ready, so
	 * that a test can make two events meet in one wait. */
	int serve_test_collect_delay_ms;
#endif

	/* retrieval */
	char embedding_provider[16];          /* "builtin" or "openai" */
	int embedding_dimensions;             /* of new datasets */
	char openai_base_url[CONFIG_PATH_MAX];  /* "" = not configured */
	char openai_model[CONFIG_STR_MAX];
	char openai_api_key_file[CONFIG_PATH_MAX];  /* "" = no key sent */
	int openai_timeout_ms;
	int openai_batch_size;                /* texts per /v1/embeddings call */
	int openai_max_retries;
	int chunk_size;                       /* characters per snippet */
	int chunk_overlap;                    /* characters shared by neighbours */
	char rag_index_dir[CONFIG_PATH_MAX];  /* "" = <storage_root>/.rag-index */
	int question_wait_max_s;              /* largest ?wait= of GET question */
	int question_inline_max_snippets;     /* a worker ranks an index up to this */
	int question_inline_budget_ms;        /* ... whose last ranking took this much
	                                       * CPU time at most */
	bool question_shared_passes;          /* workers share exact passes */
	int dataset_counts_cache_ms;          /* a processing dataset's counts are
	                                       * shown again this long; 0 = never */
#ifdef SLUICE_TEST_HOOKS
	/* Test builds only (util/test_hooks.h): a pause before a worker
	 * answers a question / before each ingested document, so a test can
	 * kill the process doing it; before and after an ingestion builds
	 * the index file, so a test can change the dataset meanwhile. */
	int rag_test_question_delay_ms;
	int rag_test_ingest_delay_ms;
	int rag_test_index_delay_ms;
	int rag_test_give_up_delay_ms;  /* before an ingestion gives up */
	int storage_test_unlink_delay_ms; /* after a file's removal committed */
	int rag_test_batch_delay_ms;    /* after sluice work took a question's riders */
	int rag_test_rank_delay_ms;     /* inside a ranking: a core taken away */
	int rag_test_rank_spin_first_ms; /* CPU burnt in a process's first ranking */
	int rag_test_pass_pause_ms;     /* in a shared pass, its questions taken */
	int rag_test_redirect_delay_ms; /* before a GET's redirect to the waiter */
	int rag_test_nudge_poll_ms;     /* a lingering question child's own poll */
	int rag_test_linger_ms;         /* how long it lingers with no questions */
	bool wait_test_tick_blind;      /* the waiter's tick keeps only deadlines */
#endif

	/* runner: singer and file_storage connectors */
	char singer_taps_dir[CONFIG_PATH_MAX];  /* where input.plugin taps live */
	long singer_line_max_bytes;           /* longest tap output line */
	int singer_commit_rows;               /* commit at a STATE after this many rows */
	/* storage explorer: uploads and schema refresh */
	long upload_max_bytes;                /* one upload request; nginx's
	                                       * client_max_body_size for it matches */
	long refresh_inline_max_bytes;        /* refresh-schema infers in the request
	                                       * up to this file size, else in work */
	int refresh_wait_s;                   /* how long refresh-schema waits for work */

	/* logging */
	char log_level[16];

	/* loaded from jwt_secret_file, not a config key */
	unsigned char jwt_secret[256];
	size_t jwt_secret_len;

	/* loaded from connection_key_file, not a config key */
	unsigned char connection_key[AEAD_KEY_LEN];
	bool connection_key_loaded;
};

void config_defaults(struct config *c);

/* Load path over the defaults.  On error returns -1 and writes a message such
 * as "sluice.conf:12: unknown key 'wokers'" into err. */
int config_load(const char *path, struct config *c, char *err, size_t errlen);

/* The checks config_load makes of the database accounts: db_name outside
 * the warehouse namespace, a loader account apart from db_user.  0, or -1
 * with the reason in err. */
int config_accounts_check(const struct config *c, char *err, size_t errlen);

/* Parse one "key = value" pair (used by config_load and by tests). */
int config_set(struct config *c, const char *key, const char *value,
               char *err, size_t errlen);

/* The name of key i of the key table, or NULL past its end: what the
 * sample configuration and the manual must cover. */
const char *config_key_name(size_t i);

/* The first key whose value differs between a and b, or NULL when none
 * does. */
const char *config_key_differing(const struct config *a, const struct config *b);

/* Read the JWT secret file named by the config (needed by serve and token).
 * Refuses a missing file, an empty secret or one shorter than 32 bytes. */
int config_load_jwt_secret(struct config *c, char *err, size_t errlen);

/* Read the connection password key named by connection_key_file (needed
 * by serve and work): see aead_key_load for what the file must hold. */
int config_load_connection_key(struct config *c, char *err, size_t errlen);
/* The directory of the rendered listings (http/body_cache.h):
 * render_cache_dir, or <storage_root>/.render-cache when that is empty.
 * 0, or -1 when too long. */
int config_render_cache_dir(const struct config *c, char *buf, size_t cap);

/* The directory of the retrieval index files: rag_index_dir, or
 * <storage_root>/.rag-index when that is empty.  0, or -1 when too long. */
int config_rag_index_dir(const struct config *c, char *buf, size_t cap);

/* A password kept in a file of its own (one line; a trailing newline is
 * not part of it) into buf; an empty path is no password.  key names the
 * setting in messages.  0, or -1 with the reason in err. */
int config_read_password_file(const char *key, const char *path, char *buf,
                              size_t cap, char *err, size_t errlen);
/* Make c's database account the migrate account (migrate_user and its
 * password file), when one is set.  0, or -1 with the reason in err. */
int config_use_migrate_account(struct config *c, char *err, size_t errlen);

/* The number of workers to start: c->workers, or WORKERS_PER_CPU per CPU
 * (at least WORKERS_MIN) when 0: handlers wait on MariaDB, not on the CPU,
 * and a worker whose question is in a shared pass waits for the pass (with
 * four a CPU, those waiting left too few to keep the CPUs busy).  At most
 * WORKERS_DEFAULT_MAX: a reload's two sets of workers, a connection each,
 * then stay under MariaDB's default max_connections (151). */
#define WORKERS_PER_CPU 8
#define WORKERS_MIN 8
#define WORKERS_DEFAULT_MAX 64
int config_worker_count(const struct config *c);
/* How many workers may hash a password at once (http/pool.h):
 * c->password_checks_max, or when 0 a quarter of the workers, no more than
 * the CPUs (more hashes would only share them with every other request),
 * at least 1. */
int config_password_checks(const struct config *c);

/* The waiter's socket: wait_listen, or <listen>.wait when that is empty. */
int config_wait_listen(const struct config *c, char *buf, size_t cap);

#endif
