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
-- Each trigger changes only its own row (BEFORE UPDATE, NEW.version): no
-- trigger takes a lock on another table's rows, so no new lock order and
-- no new deadlock.  Strings are compared as bytes: under the tables'
-- case-insensitive collation 'Nightly' = 'NIGHTLY' and 'a' = 'a ', and a
-- rename between them must be seen.  A pause, a resume or a scheduler tick
-- (paused, next_run_at, updated_at) is not shown and bumps nothing.
ALTER TABLE pipelines
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0,
	ADD KEY IF NOT EXISTS pipelines_customer_version_idx (customer_id, seq, version);
ALTER TABLE jobs
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE job_state
	ADD COLUMN IF NOT EXISTS seq BIGINT NOT NULL AUTO_INCREMENT,
	ADD UNIQUE KEY IF NOT EXISTS job_state_seq_uq (seq),
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0;

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
-- update is a new version.
CREATE TRIGGER IF NOT EXISTS jobs_render_version
BEFORE UPDATE ON jobs FOR EACH ROW
SET NEW.version = OLD.version + 1;

-- Of a job's state the listing shows only the jdbc bookmark; a Singer
-- state written after each run bumps nothing.
CREATE TRIGGER IF NOT EXISTS job_state_render_version
BEFORE UPDATE ON job_state FOR EACH ROW
SET NEW.version = OLD.version + IF(
	BINARY NEW.job_id <=> BINARY OLD.job_id AND
	BINARY NEW.incremental_column_value <=> BINARY OLD.incremental_column_value
	AND NEW.seq <=> OLD.seq, 0, 1);
