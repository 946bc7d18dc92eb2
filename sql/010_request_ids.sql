-- 010_request_ids.sql - the id of the request that asked for a piece of
-- work, so that its log lines in sluice work carry the request's
-- request_id (the X-Request-Id its answer had).  NULL: no request asked for
-- it (a schedule, a sweep), or it was queued before this migration.
ALTER TABLE work_queue ADD COLUMN request_id VARCHAR(64) NULL;
ALTER TABLE pipeline_runs ADD COLUMN request_id VARCHAR(64) NULL;
