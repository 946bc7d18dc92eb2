-- 015_render_versions.sql - a version of each pipeline as the pipelines
-- listing shows it, so that a worker can tell whether a listing it
-- rendered earlier is still the answer without rendering it again
-- (http/body_cache.h): it reads (seq, version) of the customer's pipelines
-- from one index, pipelines_customer_version_idx.
--
-- A pipeline's entry in the list is made of its row, its jobs and their
-- job_state rows.  Triggers bump pipelines.version whenever a column the
-- list shows changes in any of them, in the statement (and so the
-- transaction) that changes it: no write path, the runner's, the loader
-- account's and an operator's hand-written SQL included, can forget it.
-- A pipeline created or deleted changes the set of seqs instead; seq is
-- AUTO_INCREMENT and never used twice, so a pair (seq, version) names one
-- content of one pipeline's entry for ever.
--
-- A job's or a state's trigger writes its pipeline's row after its own:
-- the order the platform's transactions already take (they lock the
-- pipeline row first, which the trigger then finds held).  Strings are
-- compared as bytes: under the tables' case-insensitive collation
-- 'Nightly' = 'NIGHTLY' and 'a' = 'a ', and a rename between them must be
-- seen.  A pause, a resume, a scheduler tick (paused, next_run_at,
-- updated_at) or a Singer state is not shown and bumps nothing.
ALTER TABLE pipelines
	ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0,
	ADD KEY IF NOT EXISTS pipelines_customer_version_idx (customer_id, seq, version);

-- NEW.version, not OLD.version: a job's trigger below sets version + 1 on
-- a row whose shown columns are unchanged, and that bump must stay.
CREATE TRIGGER IF NOT EXISTS pipelines_render_version
BEFORE UPDATE ON pipelines FOR EACH ROW
SET NEW.version = NEW.version + IF(
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
-- insert, update or delete is a new version of its pipeline.
CREATE TRIGGER IF NOT EXISTS jobs_render_insert
AFTER INSERT ON jobs FOR EACH ROW
UPDATE pipelines SET version = version + 1 WHERE id = NEW.pipeline_id;

CREATE TRIGGER IF NOT EXISTS jobs_render_update
AFTER UPDATE ON jobs FOR EACH ROW
UPDATE pipelines SET version = version + 1
WHERE id IN (NEW.pipeline_id, OLD.pipeline_id);

CREATE TRIGGER IF NOT EXISTS jobs_render_delete
AFTER DELETE ON jobs FOR EACH ROW
UPDATE pipelines SET version = version + 1 WHERE id = OLD.pipeline_id;

-- Of a job's state the list shows only the jdbc bookmark.
CREATE TRIGGER IF NOT EXISTS job_state_render_insert
AFTER INSERT ON job_state FOR EACH ROW
UPDATE pipelines SET version = version + 1
WHERE id = (SELECT pipeline_id FROM jobs WHERE id = NEW.job_id);

CREATE TRIGGER IF NOT EXISTS job_state_render_update
AFTER UPDATE ON job_state FOR EACH ROW
UPDATE pipelines SET version = version + 1
WHERE id IN (SELECT pipeline_id FROM jobs WHERE id IN (NEW.job_id, OLD.job_id))
  AND NOT (BINARY NEW.job_id <=> BINARY OLD.job_id AND
           BINARY NEW.incremental_column_value <=> BINARY OLD.incremental_column_value);

CREATE TRIGGER IF NOT EXISTS job_state_render_delete
AFTER DELETE ON job_state FOR EACH ROW
UPDATE pipelines SET version = version + 1
WHERE id = (SELECT pipeline_id FROM jobs WHERE id = OLD.job_id);
