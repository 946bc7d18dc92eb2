-- 002_runs_connections.sql - room for the largest connection password, and
-- the index the run-log task filter reads.
--
-- password_enc is nonce (12) || tag (16) || ciphertext: a password of the
-- API's maximum 1024 bytes seals to 1052 bytes, more than 001 allowed.
ALTER TABLE connections MODIFY password_enc VARBINARY(1052) NOT NULL;

-- GET .../pipeline_run/{runId}/logs?task_id=... reads one task's lines of a
-- run in line order; (run_id, level) serves the level filter.
ALTER TABLE run_logs ADD KEY run_logs_run_task_line_idx (run_id, task_id, line_no);
