-- 015_render_versions.sql - versions of the rows the pipelines listing
-- shows, so that a worker can tell whether a listing it rendered earlier
-- is still the answer without rendering it again (http/body_cache.h).
--
-- The listing is made of pipelines, their jobs and the jobs' job_state.
-- Each of those rows carries a version that a trigger bumps whenever a
-- column the listing shows changes, in the statement (and so the
-- transaction) that changes it: no write path, the runner's and an
-- operator's hand-written UPDATE included, can forget it.  A row that is
-- inserted or deleted changes the set of row ids instead; ids come from
-- AUTO_INCREMENT (job_state gains one) and are never used twice, so a pair
-- (id, version) names one content of one row for ever.
--
-- A worker reads the pairs from one index per table, (customer_id, seq,
-- version), without a join: jobs and job_state gain the customer_id of
-- their pipeline, set by a BEFORE INSERT trigger from the parent row.
--
-- Each trigger changes only its own row (NEW.version, NEW.customer_id): no
-- trigger writes another table's rows.  Strings are compared as bytes:
-- under the tables' case-insensitive collation 'Nightly' = 'NIGHTLY' and
-- 'a' = 'a ', and a rename between them must be seen.  A pause, a resume or a scheduler tick
-- (paused, next_run_at, updated_at) is not shown and bumps nothing.
ALTER TABLE pipelines
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0,
	ADD KEY IF NOT EXISTS pipelines_customer_version_idx (customer_id, seq, version);
ALTER TABLE jobs
	ADD COLUMN IF NOT EXISTS customer_id CHAR(36) NULL,
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0;
UPDATE jobs j JOIN pipelines p ON p.id = j.pipeline_id
	SET j.customer_id = p.customer_id;
ALTER TABLE jobs
	ADD KEY IF NOT EXISTS jobs_customer_version_idx (customer_id, seq, version);
ALTER TABLE job_state
	ADD COLUMN IF NOT EXISTS customer_id CHAR(36) NULL,
	ADD COLUMN IF NOT EXISTS seq BIGINT NOT NULL AUTO_INCREMENT,
	ADD UNIQUE KEY IF NOT EXISTS job_state_seq_uq (seq),
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0;
UPDATE job_state s JOIN jobs j ON j.id = s.job_id
	SET s.customer_id = j.customer_id;
ALTER TABLE job_state
	ADD KEY IF NOT EXISTS job_state_customer_version_idx (customer_id, seq, version);

-- A job and a state belong to the customer of their pipeline, whoever
-- inserts them (the loader account upserts bookmarks).
CREATE TRIGGER IF NOT EXISTS jobs_customer
BEFORE INSERT ON jobs FOR EACH ROW
SET NEW.customer_id = (SELECT customer_id FROM pipelines WHERE id = NEW.pipeline_id);

CREATE TRIGGER IF NOT EXISTS job_state_customer
BEFORE INSERT ON job_state FOR EACH ROW
SET NEW.customer_id = (SELECT customer_id FROM jobs WHERE id = NEW.job_id);

CREATE TRIGGER IF NOT EXISTS pipelines_render_version
BEFORE UPDATE ON pipelines FOR EACH ROW
SET NEW.version = OLD.version + IF(
	BINARY NEW.id <=> BINARY OLD.id AND
	BINARY NEW.customer_id <=> BINARY OLD.customer_id AND
	BINARY NEW.created_by <=> BINARY OLD.created_by AND
	BINARY NEW.name <=> BINARY OLD.name AND
	BINARY NEW.description <=> BINARY OLD.description AND
	BINARY NEW.cron <=> BINARY OLD.cron AND
	BINARY NEW.cron_timezone <=> BINARY OLD.cron_timezone AND
	BINARY NEW.last_status <=> BINARY OLD.last_status AND
	NEW.retries <=> OLD.retries AND
	NEW.run_timeout_s <=> OLD.run_timeout_s AND
	NEW.seq <=> OLD.seq, 0, 1);

-- Every column of a job but its timestamps is shown or names it: any
-- update is a new version.  (Which also keeps customer_id from being
-- changed unseen: a row that left the customer's index changes the set.)
CREATE TRIGGER IF NOT EXISTS jobs_render_version
BEFORE UPDATE ON jobs FOR EACH ROW
SET NEW.version = OLD.version + 1;

-- Of a job's state the listing shows only the jdbc bookmark; a Singer
-- state written after each run bumps nothing.
CREATE TRIGGER IF NOT EXISTS job_state_render_version
BEFORE UPDATE ON job_state FOR EACH ROW
SET NEW.version = OLD.version + IF(
	BINARY NEW.job_id <=> BINARY OLD.job_id AND
	BINARY NEW.customer_id <=> BINARY OLD.customer_id AND
	BINARY NEW.incremental_column_value <=> BINARY OLD.incremental_column_value
	AND NEW.seq <=> OLD.seq, 0, 1);
