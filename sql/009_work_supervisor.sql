-- 009_work_supervisor.sql - what `sluice work` needs to run every item in a
-- deadlined child process, fairly across customers, and what pipeline runs
-- need for their time limit and their staging tables.

-- work_queue.tenant: whose item this is, for fair claiming (a customer id,
-- or "user:<id>" for a retrieval user); '' when nobody's.
-- work_queue.give_up_reason: set when an item ran out of attempts without
-- its own code saying why (its process crashed, hung past its deadline or
-- died): the next claim settles the item's own rows as failed with this
-- reason instead of running it again.
ALTER TABLE work_queue
	ADD COLUMN tenant VARCHAR(80) NOT NULL DEFAULT '' AFTER customer_id,
	ADD COLUMN give_up_reason TEXT NULL AFTER error,
	ADD KEY work_queue_fair_idx (status, kind, tenant, available_at, id),
	ADD KEY work_queue_served_idx (kind, tenant, claimed_at);

UPDATE work_queue SET tenant = customer_id WHERE customer_id IS NOT NULL;
UPDATE work_queue q JOIN rag_datasets d ON d.id = q.ref_id
	SET q.tenant = CONCAT('user:', d.owner_user_id)
	WHERE q.kind = 'rag_ingest' AND d.owner_user_id IS NOT NULL;
UPDATE work_queue q JOIN rag_questions x ON x.id = q.ref_id
	SET q.tenant = CONCAT('user:', x.asked_by_user_id)
	WHERE q.kind = 'rag_question' AND x.asked_by_user_id IS NOT NULL;

-- pipelines.run_timeout_s: a run still going after this many seconds is
-- stopped and failed (NULL: the runner_run_timeout_s of the config).
ALTER TABLE pipelines
	ADD COLUMN run_timeout_s INT NULL AFTER retries,
	ADD CONSTRAINT pipelines_run_timeout_chk CHECK (run_timeout_s BETWEEN 5 AND 604800);

-- run_staging: a staging table a task is filling, registered before it is
-- created and removed once it is swapped in or dropped.  What a killed,
-- cancelled, timed-out or failed task leaves here is dropped by its run's
-- supervisor, and by the sweep of `sluice work` when even that died.
CREATE TABLE run_staging (
	wh_schema   VARCHAR(64)  NOT NULL,
	wh_table    VARCHAR(64)  NOT NULL,
	run_id      CHAR(32)     NOT NULL,
	task_id     VARCHAR(128) NOT NULL,
	created_at  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (wh_schema, wh_table),
	KEY run_staging_run_idx (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Ingestion takes a dataset's processing documents oldest first, one at a
-- time: an index seek, not a sort of what is left, for each of them.
ALTER TABLE rag_documents
	ADD KEY rag_documents_pending_idx (dataset_id, status, created_at, id);
