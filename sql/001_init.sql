-- 001_init.sql - the sluice schema: platform (pipelines, jobs, runs),
-- storage explorer (uploads, datasets, tables, links), retrieval (datasets,
-- documents, snippets, questions) and the background work queue.
--
-- Conventions, so that later migrations extend this file instead of redoing it:
-- * InnoDB, utf8mb4 / utf8mb4_unicode_ci on every table.  Ids are strings in
--   the table collation, so new foreign-key columns need no charset clause.
--   Storage paths use utf8mb4_bin (Linux paths are case sensitive) and JSON
--   columns use utf8mb4_bin (as the MariaDB JSON alias does).
-- * Time is DATETIME(3) in UTC: every sluice connection sets time_zone +00:00,
--   so CURRENT_TIMESTAMP(3) defaults are UTC.  DATETIME, not TIMESTAMP: no
--   implicit zone conversion and no 2038 limit.
-- * Value sets are VARCHAR plus a named CHECK constraint (tablename_column_chk).
--   A later migration widens one with
--   ALTER TABLE t DROP CONSTRAINT t_c_chk, ADD CONSTRAINT t_c_chk CHECK (...).
-- * JSON is LONGTEXT with a json_valid CHECK that also pins the top-level type.
-- * Foreign keys are named fk_table_column.  Customer-owned rows refuse the
--   customer delete (RESTRICT): a purge must be deliberate.  What hangs below a
--   pipeline, dataset, table or retrieval dataset goes with it (CASCADE).
-- * Long paths are unique through a STORED generated SHA-256 column
--   (BINARY(32)), which the application never writes.
-- * Optional columns are nullable or defaulted, so an INSERT names only what it
--   sets.  Generated columns are never written: always list INSERT columns.


-- customers: one row per tenant, the root of customer scoping. Children refuse
-- its deletion (RESTRICT): the API never deletes a customer.
CREATE TABLE customers (
	id          CHAR(36)     NOT NULL,
	name        VARCHAR(255) NOT NULL,
	created_at  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY customers_name_uq (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- api_users: HTTP Basic users (retrieval routes), password_hash a self-describing
-- PBKDF2-HMAC-SHA256 string. Users are disabled, not deleted.
CREATE TABLE api_users (
	id             BIGINT       NOT NULL AUTO_INCREMENT,
	name           VARCHAR(128) NOT NULL,
	password_hash  VARCHAR(255) NOT NULL,
	customer_id    CHAR(36)     NULL,
	disabled       TINYINT(1)   NOT NULL DEFAULT 0,
	created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY api_users_name_uq (name),
	KEY api_users_customer_idx (customer_id),
	CONSTRAINT fk_api_users_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT api_users_disabled_chk CHECK (disabled IN (0, 1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- connections: source credentials, used by jobs via input.connection_id.
-- password_enc = AES-256-GCM nonce||tag||ct (key outside the DB), never returned.
CREATE TABLE connections (
	id             CHAR(36)       NOT NULL,
	customer_id    CHAR(36)       NOT NULL,
	name           VARCHAR(255)   NOT NULL,
	plugin         VARCHAR(64)    NOT NULL,
	host           VARCHAR(255)   NOT NULL,
	port           INT            NOT NULL,
	database_name  VARCHAR(255)   NOT NULL,
	user_name      VARCHAR(255)   NOT NULL,
	password_enc   VARBINARY(1024) NOT NULL,
	options        LONGTEXT COLLATE utf8mb4_bin NULL,
	created_at     DATETIME(3)    NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at     DATETIME(3)    NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY connections_customer_name_uq (customer_id, name),
	CONSTRAINT fk_connections_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT connections_port_chk CHECK (port BETWEEN 1 AND 65535),
	CONSTRAINT connections_password_enc_chk CHECK (LENGTH(password_enc) >= 28),
	CONSTRAINT connections_options_chk CHECK (json_valid(options) AND json_type(options) = 'OBJECT')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- pipelines: id = UUID with underscores, seq = the integer id the API shows.
-- next_run_at = next cron firing (NULL: no cron or paused), claimed by schedulers.
CREATE TABLE pipelines (
	id                   VARCHAR(64)  NOT NULL,
	seq                  BIGINT       NOT NULL AUTO_INCREMENT,
	customer_id          CHAR(36)     NOT NULL,
	created_by           VARCHAR(320) NULL,
	name                 VARCHAR(255) NOT NULL,
	description          TEXT         NOT NULL DEFAULT '',
	cron                 VARCHAR(255) NULL,
	paused               TINYINT(1)   NOT NULL DEFAULT 0,
	memory_allocated_mb  INT          NULL,
	last_status          VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
	next_run_at          DATETIME(3)  NULL,
	created_at           DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at           DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY pipelines_seq_uq (seq),
	KEY pipelines_customer_idx (customer_id, created_at),
	KEY pipelines_next_run_idx (next_run_at),
	CONSTRAINT fk_pipelines_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT pipelines_paused_chk CHECK (paused IN (0, 1)),
	CONSTRAINT pipelines_memory_chk CHECK (memory_allocated_mb > 0),
	CONSTRAINT pipelines_last_status_chk CHECK (last_status IN
		('PENDING', 'CREATED', 'RUNNING', 'SUCCESS', 'FAILED'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- jobs: id = pipeline_id _ job_index, seq = the integer id the API shows. The DB
-- derives connection_id from input so a connection in use cannot be deleted.
CREATE TABLE jobs (
	id                       VARCHAR(80)  NOT NULL,
	seq                      BIGINT       NOT NULL AUTO_INCREMENT,
	pipeline_id              VARCHAR(64)  NOT NULL,
	job_index                INT          NOT NULL,
	name                     VARCHAR(255) NOT NULL,
	connector                VARCHAR(32)  NOT NULL,
	input                    LONGTEXT COLLATE utf8mb4_bin NOT NULL,
	output                   LONGTEXT COLLATE utf8mb4_bin NOT NULL,
	connection_id            CHAR(36)
		AS (json_unquote(json_extract(input, '$.connection_id'))) STORED,
	load_type                VARCHAR(32)  NOT NULL DEFAULT 'full_load',
	incremental_column_name  VARCHAR(255) NULL,
	incremental_column_type  VARCHAR(64)  NULL,
	primary_keys             LONGTEXT COLLATE utf8mb4_bin NULL,
	column_include_list      LONGTEXT COLLATE utf8mb4_bin NULL,
	memory_allocated_mb      INT          NULL,
	job_status               VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
	created_at               DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at               DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY jobs_seq_uq (seq),
	UNIQUE KEY jobs_pipeline_index_uq (pipeline_id, job_index),
	KEY jobs_connection_idx (connection_id),
	CONSTRAINT fk_jobs_pipeline FOREIGN KEY (pipeline_id)
		REFERENCES pipelines (id) ON DELETE CASCADE,
	CONSTRAINT fk_jobs_connection FOREIGN KEY (connection_id)
		REFERENCES connections (id) ON DELETE RESTRICT,
	CONSTRAINT jobs_job_index_chk CHECK (job_index >= 0),
	CONSTRAINT jobs_connector_chk CHECK (connector IN ('jdbc', 'singer', 'file_storage')),
	CONSTRAINT jobs_input_chk CHECK (json_valid(input) AND json_type(input) = 'OBJECT'),
	CONSTRAINT jobs_output_chk CHECK (json_valid(output) AND json_type(output) = 'OBJECT'),
	CONSTRAINT jobs_load_type_chk CHECK (load_type IN
		('full_load', 'incremental', 'incremental_with_qualify')),
	-- The required settings of each load type, as the sync-mode rules state.
	CONSTRAINT jobs_incremental_chk CHECK (load_type = 'full_load' OR
		(incremental_column_name IS NOT NULL AND incremental_column_type IS NOT NULL)),
	CONSTRAINT jobs_qualify_chk CHECK (load_type <> 'incremental_with_qualify' OR
		primary_keys IS NOT NULL),
	CONSTRAINT jobs_primary_keys_chk CHECK (json_valid(primary_keys) AND
		json_type(primary_keys) = 'ARRAY'),
	CONSTRAINT jobs_column_include_list_chk CHECK (json_valid(column_include_list) AND
		json_type(column_include_list) = 'ARRAY'),
	CONSTRAINT jobs_memory_chk CHECK (memory_allocated_mb > 0),
	CONSTRAINT jobs_job_status_chk CHECK (job_status IN
		('PENDING', 'CREATED', 'RUNNING', 'SUCCESS', 'FAILED'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- job_state: incremental state, apart from the job so reset-state is one statement.
-- JDBC bookmark in incremental_column_value, Singer state file in state.
CREATE TABLE job_state (
	job_id                    VARCHAR(80)  NOT NULL,
	incremental_column_value  VARCHAR(255) NULL,
	state                     LONGTEXT COLLATE utf8mb4_bin NULL,
	updated_at                DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (job_id),
	CONSTRAINT fk_job_state_job FOREIGN KEY (job_id)
		REFERENCES jobs (id) ON DELETE CASCADE,
	CONSTRAINT job_state_state_chk CHECK (json_valid(state) AND json_type(state) = 'OBJECT')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- file_storage_processed: file_storage connector state, one row per processed file
-- with its last-modified time. Reset-state deletes the rows of the job.
CREATE TABLE file_storage_processed (
	id             BIGINT        NOT NULL AUTO_INCREMENT,
	job_id         VARCHAR(80)   NOT NULL,
	file_path      VARCHAR(1024) COLLATE utf8mb4_bin NOT NULL,
	path_hash      BINARY(32) AS (UNHEX(SHA2(file_path, 256))) STORED,
	last_modified  DATETIME(3)   NOT NULL,
	size_bytes     BIGINT        NULL,
	processed_at   DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY file_storage_processed_job_path_uq (job_id, path_hash),
	CONSTRAINT fk_file_storage_processed_job FOREIGN KEY (job_id)
		REFERENCES jobs (id) ON DELETE CASCADE,
	CONSTRAINT file_storage_processed_size_chk CHECK (size_bytes >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- orchestration_tasks: the graph of a pipeline (job_id.extract_load, job_id.qualify
-- tasks), upstream_task_ids a JSON array of task ids, position the order.
CREATE TABLE orchestration_tasks (
	pipeline_id        VARCHAR(64)  NOT NULL,
	task_id            VARCHAR(128) NOT NULL,
	job_id             VARCHAR(80)  NOT NULL,
	kind               VARCHAR(32)  NOT NULL,
	upstream_task_ids  LONGTEXT COLLATE utf8mb4_bin NOT NULL DEFAULT '[]',
	position           INT          NOT NULL,
	PRIMARY KEY (pipeline_id, task_id),
	KEY orchestration_tasks_job_idx (job_id),
	KEY orchestration_tasks_position_idx (pipeline_id, position),
	CONSTRAINT fk_orchestration_tasks_pipeline FOREIGN KEY (pipeline_id)
		REFERENCES pipelines (id) ON DELETE CASCADE,
	CONSTRAINT fk_orchestration_tasks_job FOREIGN KEY (job_id)
		REFERENCES jobs (id) ON DELETE CASCADE,
	CONSTRAINT orchestration_tasks_kind_chk CHECK (kind IN ('extract_load', 'qualify')),
	CONSTRAINT orchestration_tasks_upstream_chk CHECK (json_valid(upstream_task_ids) AND
		json_type(upstream_task_ids) = 'ARRAY'),
	CONSTRAINT orchestration_tasks_position_chk CHECK (position >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- pipeline_runs: id = 32 lowercase hex. The unique generated active_pipeline_id
-- allows one CREATED/RUNNING run per pipeline (duplicate key = 409, race free).
CREATE TABLE pipeline_runs (
	id                  CHAR(32)     NOT NULL,
	pipeline_id         VARCHAR(64)  NOT NULL,
	customer_id         CHAR(36)     NOT NULL,
	status              VARCHAR(16)  NOT NULL DEFAULT 'CREATED',
	trigger_type        VARCHAR(16)  NOT NULL DEFAULT 'manual',
	requested_by        VARCHAR(320) NULL,
	active_pipeline_id  VARCHAR(64)
		AS (IF(status IN ('CREATED', 'RUNNING'), pipeline_id, NULL)) STORED,
	created_at          DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	started_at          DATETIME(3)  NULL,
	finished_at         DATETIME(3)  NULL,
	rows_loaded         BIGINT       NOT NULL DEFAULT 0,
	log_lines           INT          NOT NULL DEFAULT 0,
	error               TEXT         NULL,
	claimed_by          VARCHAR(128) NULL,
	claimed_at          DATETIME(3)  NULL,
	heartbeat_at        DATETIME(3)  NULL,
	PRIMARY KEY (id),
	UNIQUE KEY pipeline_runs_active_uq (active_pipeline_id),
	KEY pipeline_runs_pipeline_created_idx (pipeline_id, created_at DESC),
	KEY pipeline_runs_status_idx (status, created_at),
	KEY pipeline_runs_customer_idx (customer_id),
	CONSTRAINT fk_pipeline_runs_pipeline FOREIGN KEY (pipeline_id)
		REFERENCES pipelines (id) ON DELETE CASCADE,
	CONSTRAINT fk_pipeline_runs_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT pipeline_runs_id_chk CHECK (id COLLATE utf8mb4_bin REGEXP '^[0-9a-f]{32}$'),
	CONSTRAINT pipeline_runs_status_chk CHECK (status IN
		('CREATED', 'RUNNING', 'SUCCESS', 'FAILED')),
	CONSTRAINT pipeline_runs_trigger_type_chk CHECK (trigger_type IN ('manual', 'schedule')),
	CONSTRAINT pipeline_runs_rows_chk CHECK (rows_loaded >= 0 AND log_lines >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- run_task_status: status of each task in a run. task_id has no foreign key: the
-- history outlives graph changes. SKIPPED = an upstream task failed.
CREATE TABLE run_task_status (
	run_id       CHAR(32)     NOT NULL,
	task_id      VARCHAR(128) NOT NULL,
	status       VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
	started_at   DATETIME(3)  NULL,
	finished_at  DATETIME(3)  NULL,
	rows_loaded  BIGINT       NOT NULL DEFAULT 0,
	error        TEXT         NULL,
	PRIMARY KEY (run_id, task_id),
	CONSTRAINT fk_run_task_status_run FOREIGN KEY (run_id)
		REFERENCES pipeline_runs (id) ON DELETE CASCADE,
	CONSTRAINT run_task_status_status_chk CHECK (status IN
		('PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'SKIPPED')),
	CONSTRAINT run_task_status_rows_chk CHECK (rows_loaded >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- run_logs: numbered lines of a run (unique line_no from 1), the next number taken
-- with UPDATE pipeline_runs SET log_lines = LAST_INSERT_ID(log_lines + 1).
CREATE TABLE run_logs (
	id        BIGINT       NOT NULL AUTO_INCREMENT,
	run_id    CHAR(32)     NOT NULL,
	line_no   INT          NOT NULL,
	ts        DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	level     VARCHAR(8)   NOT NULL DEFAULT 'INFO',
	task_id   VARCHAR(128) NULL,
	message   TEXT         NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY run_logs_run_line_uq (run_id, line_no),
	KEY run_logs_run_level_idx (run_id, level),
	CONSTRAINT fk_run_logs_run FOREIGN KEY (run_id)
		REFERENCES pipeline_runs (id) ON DELETE CASCADE,
	CONSTRAINT run_logs_line_no_chk CHECK (line_no >= 1),
	CONSTRAINT run_logs_level_chk CHECK (level IN ('DEBUG', 'INFO', 'WARNING', 'ERROR'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- uploads: upload history. created_at = uploaded_at, created_by = uploaded_by,
-- folder_path relative to the customer root, folder_hash for the folder filter.
CREATE TABLE uploads (
	id           CHAR(36)      NOT NULL,
	customer_id  CHAR(36)      NOT NULL,
	folder_path  VARCHAR(1024) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
	folder_hash  BINARY(32) AS (UNHEX(SHA2(folder_path, 256))) STORED,
	file_count   INT           NOT NULL DEFAULT 0,
	total_bytes  BIGINT        NOT NULL DEFAULT 0,
	status       VARCHAR(16)   NOT NULL DEFAULT 'processing',
	error        TEXT          NULL,
	created_at   DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	created_by   VARCHAR(320)  NULL,
	finished_at  DATETIME(3)   NULL,
	PRIMARY KEY (id),
	KEY uploads_customer_created_idx (customer_id, created_at DESC),
	KEY uploads_customer_folder_idx (customer_id, folder_hash, created_at DESC),
	CONSTRAINT fk_uploads_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT uploads_counts_chk CHECK (file_count >= 0 AND total_bytes >= 0),
	CONSTRAINT uploads_status_chk CHECK (status IN ('processing', 'completed', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- datasets: one per stored file, unique per customer by path_hash (case sensitive).
-- parsing_options keeps the last refresh-schema options for later reads.
CREATE TABLE datasets (
	id               CHAR(36)      NOT NULL,
	customer_id      CHAR(36)      NOT NULL,
	upload_id        CHAR(36)      NULL,
	file_path        VARCHAR(1024) COLLATE utf8mb4_bin NOT NULL,
	path_hash        BINARY(32) AS (UNHEX(SHA2(file_path, 256))) STORED,
	file_name        VARCHAR(255)  NOT NULL,
	format           VARCHAR(16)   NOT NULL,
	size_bytes       BIGINT        NOT NULL DEFAULT 0,
	status           VARCHAR(16)   NOT NULL DEFAULT 'pending',
	schema_json      LONGTEXT COLLATE utf8mb4_bin NULL,
	parsing_options  LONGTEXT COLLATE utf8mb4_bin NULL,
	row_count        BIGINT        NULL,
	analyzed_rows    BIGINT        NULL,
	error            TEXT          NULL,
	refreshed_at     DATETIME(3)   NULL,
	created_at       DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at       DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY datasets_customer_path_uq (customer_id, path_hash),
	KEY datasets_customer_created_idx (customer_id, created_at),
	KEY datasets_upload_idx (upload_id),
	CONSTRAINT fk_datasets_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT fk_datasets_upload FOREIGN KEY (upload_id)
		REFERENCES uploads (id) ON DELETE SET NULL,
	CONSTRAINT datasets_format_chk CHECK (format IN
		('csv', 'txt', 'json', 'xlsx', 'xls', 'parquet')),
	CONSTRAINT datasets_status_chk CHECK (status IN ('pending', 'inferring', 'ready', 'failed')),
	CONSTRAINT datasets_size_chk CHECK (size_bytes >= 0),
	CONSTRAINT datasets_counts_chk CHECK (row_count >= 0 AND analyzed_rows >= 0),
	CONSTRAINT datasets_schema_json_chk CHECK (json_valid(schema_json) AND
		json_type(schema_json) = 'OBJECT'),
	CONSTRAINT datasets_parsing_options_chk CHECK (json_valid(parsing_options) AND
		json_type(parsing_options) = 'OBJECT')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- upload_files: the files of an upload as uploaded, so history stays true when a
-- dataset is later replaced or deleted (dataset_id then NULL).
CREATE TABLE upload_files (
	upload_id   CHAR(36)      NOT NULL,
	position    INT           NOT NULL,
	file_name   VARCHAR(255)  NOT NULL,
	file_path   VARCHAR(1024) COLLATE utf8mb4_bin NOT NULL,
	format      VARCHAR(16)   NOT NULL,
	size_bytes  BIGINT        NOT NULL DEFAULT 0,
	dataset_id  CHAR(36)      NULL,
	error       TEXT          NULL,
	PRIMARY KEY (upload_id, position),
	KEY upload_files_dataset_idx (dataset_id),
	CONSTRAINT fk_upload_files_upload FOREIGN KEY (upload_id)
		REFERENCES uploads (id) ON DELETE CASCADE,
	CONSTRAINT fk_upload_files_dataset FOREIGN KEY (dataset_id)
		REFERENCES datasets (id) ON DELETE SET NULL,
	CONSTRAINT upload_files_position_chk CHECK (position >= 0),
	CONSTRAINT upload_files_format_chk CHECK (format IN
		('csv', 'txt', 'json', 'xlsx', 'xls', 'parquet')),
	CONSTRAINT upload_files_size_chk CHECK (size_bytes >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- warehouse_tables: tables made through the storage explorer, schema_name empty
-- for the default schema. Deleting a row does not drop the real table.
CREATE TABLE warehouse_tables (
	id            CHAR(36)     NOT NULL,
	customer_id   CHAR(36)     NOT NULL,
	schema_name   VARCHAR(255) NOT NULL DEFAULT '',
	table_name    VARCHAR(255) NOT NULL,
	columns_json  LONGTEXT COLLATE utf8mb4_bin NOT NULL,
	created_by    VARCHAR(320) NULL,
	created_at    DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at    DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY warehouse_tables_name_uq (customer_id, schema_name, table_name),
	CONSTRAINT fk_warehouse_tables_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT warehouse_tables_columns_chk CHECK (json_valid(columns_json) AND
		json_type(columns_json) = 'ARRAY')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- table_links: dataset linked to table. status is the API link status,
-- sync_status the background row load that sets last_sync and row_count.
CREATE TABLE table_links (
	id           CHAR(36)     NOT NULL,
	customer_id  CHAR(36)     NOT NULL,
	dataset_id   CHAR(36)     NOT NULL,
	table_id     CHAR(36)     NOT NULL,
	status       VARCHAR(16)  NOT NULL DEFAULT 'active',
	sync_status  VARCHAR(16)  NOT NULL DEFAULT 'pending',
	validation   LONGTEXT COLLATE utf8mb4_bin NULL,
	last_sync    DATETIME(3)  NULL,
	row_count    BIGINT       NULL,
	error        TEXT         NULL,
	created_by   VARCHAR(320) NULL,
	created_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	UNIQUE KEY table_links_dataset_table_uq (dataset_id, table_id),
	KEY table_links_table_idx (table_id, created_at),
	KEY table_links_customer_idx (customer_id),
	CONSTRAINT fk_table_links_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT fk_table_links_dataset FOREIGN KEY (dataset_id)
		REFERENCES datasets (id) ON DELETE CASCADE,
	CONSTRAINT fk_table_links_table FOREIGN KEY (table_id)
		REFERENCES warehouse_tables (id) ON DELETE CASCADE,
	CONSTRAINT table_links_status_chk CHECK (status IN ('active', 'inactive')),
	CONSTRAINT table_links_sync_status_chk CHECK (sync_status IN
		('pending', 'running', 'done', 'failed')),
	CONSTRAINT table_links_row_count_chk CHECK (row_count >= 0),
	CONSTRAINT table_links_validation_chk CHECK (json_valid(validation) AND
		json_type(validation) = 'OBJECT')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- work_queue: background work for sluice work, kind = handler, ref_id = its row.
-- Claimed in (status, available_at, id) order with FOR UPDATE SKIP LOCKED.
CREATE TABLE work_queue (
	id            BIGINT       NOT NULL AUTO_INCREMENT,
	kind          VARCHAR(64)  NOT NULL,
	ref_id        VARCHAR(80)  NOT NULL,
	customer_id   CHAR(36)     NULL,
	payload       LONGTEXT COLLATE utf8mb4_bin NULL,
	status        VARCHAR(16)  NOT NULL DEFAULT 'queued',
	attempts      INT          NOT NULL DEFAULT 0,
	max_attempts  INT          NOT NULL DEFAULT 3,
	available_at  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	claimed_by    VARCHAR(128) NULL,
	claimed_at    DATETIME(3)  NULL,
	heartbeat_at  DATETIME(3)  NULL,
	finished_at   DATETIME(3)  NULL,
	error         TEXT         NULL,
	created_at    DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	KEY work_queue_claim_idx (status, available_at, id),
	KEY work_queue_ref_idx (kind, ref_id),
	KEY work_queue_claimed_by_idx (claimed_by, status),
	KEY work_queue_customer_idx (customer_id),
	CONSTRAINT fk_work_queue_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE CASCADE,
	CONSTRAINT work_queue_status_chk CHECK (status IN ('queued', 'running', 'done', 'failed')),
	CONSTRAINT work_queue_attempts_chk CHECK (attempts >= 0 AND max_attempts >= 1),
	CONSTRAINT work_queue_payload_chk CHECK (json_valid(payload))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- work_processes: live sluice work processes (id = host:pid) and heartbeats.
-- claimed_by columns hold these ids without a foreign key, claims outlive rows.
CREATE TABLE work_processes (
	id            VARCHAR(128) NOT NULL,
	host          VARCHAR(255) NOT NULL,
	pid           INT          NOT NULL,
	started_at    DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	heartbeat_at  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	KEY work_processes_heartbeat_idx (heartbeat_at),
	CONSTRAINT work_processes_pid_chk CHECK (pid > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- rag_datasets: retrieval datasets. embedder and dimensions pin how snippets
-- were embedded. NULL owner or customer never means public.
CREATE TABLE rag_datasets (
	id              CHAR(36)     NOT NULL,
	customer_id     CHAR(36)     NULL,
	owner_user_id   BIGINT       NULL,
	name            VARCHAR(255) NOT NULL,
	status          VARCHAR(16)  NOT NULL DEFAULT 'processing',
	error           TEXT         NULL,
	document_count  INT          NOT NULL DEFAULT 0,
	snippet_count   INT          NOT NULL DEFAULT 0,
	embedder        VARCHAR(64)  NOT NULL,
	dimensions      INT          NOT NULL,
	created_at      DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at      DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	KEY rag_datasets_customer_idx (customer_id, created_at),
	KEY rag_datasets_owner_idx (owner_user_id, created_at),
	CONSTRAINT fk_rag_datasets_customer FOREIGN KEY (customer_id)
		REFERENCES customers (id) ON DELETE RESTRICT,
	CONSTRAINT fk_rag_datasets_owner FOREIGN KEY (owner_user_id)
		REFERENCES api_users (id) ON DELETE SET NULL,
	CONSTRAINT rag_datasets_status_chk CHECK (status IN ('processing', 'success', 'failed')),
	CONSTRAINT rag_datasets_counts_chk CHECK (document_count >= 0 AND snippet_count >= 0),
	CONSTRAINT rag_datasets_dimensions_chk CHECK (dimensions BETWEEN 1 AND 16383)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- rag_documents: submitted documents (text, metadata) before chunking, source =
-- file name for uploads, empty otherwise.
CREATE TABLE rag_documents (
	id          CHAR(36)      NOT NULL,
	dataset_id  CHAR(36)      NOT NULL,
	source      VARCHAR(1024) NOT NULL DEFAULT '',
	metadata    LONGTEXT COLLATE utf8mb4_bin NOT NULL DEFAULT '{}',
	text        LONGTEXT      NOT NULL,
	status      VARCHAR(16)   NOT NULL DEFAULT 'processing',
	error       TEXT          NULL,
	created_at  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	KEY rag_documents_dataset_idx (dataset_id, status),
	CONSTRAINT fk_rag_documents_dataset FOREIGN KEY (dataset_id)
		REFERENCES rag_datasets (id) ON DELETE CASCADE,
	CONSTRAINT rag_documents_metadata_chk CHECK (json_valid(metadata) AND
		json_type(metadata) = 'OBJECT'),
	CONSTRAINT rag_documents_status_chk CHECK (status IN ('processing', 'success', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- rag_snippets: chunks with float32 little-endian embeddings and their L2 norm.
-- Primary key starts with dataset_id so a question reads one contiguous range.
CREATE TABLE rag_snippets (
	id            CHAR(36)    NOT NULL,
	dataset_id    CHAR(36)    NOT NULL,
	document_id   CHAR(36)    NOT NULL,
	position      INT         NOT NULL,
	page_content  TEXT        NOT NULL,
	metadata      LONGTEXT COLLATE utf8mb4_bin NOT NULL DEFAULT '{}',
	embedding     BLOB        NOT NULL,
	norm          DOUBLE      NOT NULL,
	token_count   INT         NOT NULL DEFAULT 0,
	PRIMARY KEY (dataset_id, id),
	UNIQUE KEY rag_snippets_id_uq (id),
	UNIQUE KEY rag_snippets_document_position_uq (document_id, position),
	CONSTRAINT fk_rag_snippets_dataset FOREIGN KEY (dataset_id)
		REFERENCES rag_datasets (id) ON DELETE CASCADE,
	CONSTRAINT fk_rag_snippets_document FOREIGN KEY (document_id)
		REFERENCES rag_documents (id) ON DELETE CASCADE,
	CONSTRAINT rag_snippets_position_chk CHECK (position >= 0),
	CONSTRAINT rag_snippets_metadata_chk CHECK (json_valid(metadata) AND
		json_type(metadata) = 'OBJECT'),
	CONSTRAINT rag_snippets_embedding_chk CHECK (LENGTH(embedding) > 0 AND
		LENGTH(embedding) % 4 = 0),
	CONSTRAINT rag_snippets_norm_chk CHECK (norm >= 0),
	CONSTRAINT rag_snippets_token_count_chk CHECK (token_count >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- rag_questions: questions with their resolved params, relevant_documents
-- (ranked snippets) filled in when status becomes success.
CREATE TABLE rag_questions (
	id                  CHAR(36)      NOT NULL,
	dataset_id          CHAR(36)      NOT NULL,
	asked_by_user_id    BIGINT        NULL,
	question_text       VARCHAR(1000) NOT NULL,
	params              LONGTEXT COLLATE utf8mb4_bin NOT NULL DEFAULT '{}',
	status              VARCHAR(16)   NOT NULL DEFAULT 'processing',
	relevant_documents  LONGTEXT COLLATE utf8mb4_bin NULL,
	error               TEXT          NULL,
	created_at          DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	finished_at         DATETIME(3)   NULL,
	PRIMARY KEY (id),
	KEY rag_questions_dataset_idx (dataset_id, created_at),
	KEY rag_questions_user_idx (asked_by_user_id),
	CONSTRAINT fk_rag_questions_dataset FOREIGN KEY (dataset_id)
		REFERENCES rag_datasets (id) ON DELETE CASCADE,
	CONSTRAINT fk_rag_questions_user FOREIGN KEY (asked_by_user_id)
		REFERENCES api_users (id) ON DELETE SET NULL,
	CONSTRAINT rag_questions_text_chk CHECK (CHAR_LENGTH(question_text) > 0),
	CONSTRAINT rag_questions_params_chk CHECK (json_valid(params) AND
		json_type(params) = 'OBJECT'),
	CONSTRAINT rag_questions_status_chk CHECK (status IN ('processing', 'success', 'failed')),
	CONSTRAINT rag_questions_relevant_chk CHECK (json_valid(relevant_documents) AND
		json_type(relevant_documents) = 'ARRAY')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
