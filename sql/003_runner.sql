-- 003_runner.sql - what the pipeline runner needs: a schedule's time zone,
-- retries, cancel requests and attempts of a run.
--
-- pipelines.cron_timezone: IANA zone the cron is read in (NULL = UTC).
-- pipelines.retries: how many times a failed run is tried again (0..5).
ALTER TABLE pipelines
	ADD COLUMN cron_timezone VARCHAR(64) NULL AFTER cron,
	ADD COLUMN retries INT NOT NULL DEFAULT 0 AFTER memory_allocated_mb,
	ADD CONSTRAINT pipelines_retries_chk CHECK (retries BETWEEN 0 AND 5);

-- pipeline_runs.attempt: 1 for the first try, n + 1 for the n-th retry.
-- not_before: a run waiting for its retry is not claimed before this (NULL:
-- at once).  cancel_requested_at/_by: POST .../cancel on a RUNNING run; the
-- run's supervisor sees it on its next heartbeat.
ALTER TABLE pipeline_runs
	ADD COLUMN attempt INT NOT NULL DEFAULT 1,
	ADD COLUMN not_before DATETIME(3) NULL,
	ADD COLUMN cancel_requested_at DATETIME(3) NULL,
	ADD COLUMN cancel_requested_by VARCHAR(320) NULL,
	ADD CONSTRAINT pipeline_runs_attempt_chk CHECK (attempt >= 1),
	ADD KEY pipeline_runs_claimed_idx (status, claimed_by);

-- The scheduler claims due pipelines in next_run_at order.
ALTER TABLE pipelines ADD KEY pipelines_due_idx (paused, next_run_at);
