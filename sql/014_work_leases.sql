-- 014_work_leases.sql - exclusive leases of work items, cluster-wide.
--
-- GET_LOCK is local to one server: on a Galera cluster two `sluice work`
-- on different nodes could both hold "the" lock of a dataset.  A lease is a
-- row: taking it writes the row, so two nodes' takes conflict at
-- certification and one of them retries and finds it held.  The holder is
-- a claimed work item (process_id, item_id); the process's heartbeat
-- renews expires_at, the item's outcome deletes the row, and a holder that
-- died (kill -9) loses it when expires_at passes or its claim is taken back.
CREATE TABLE work_leases (
	name        VARCHAR(160) NOT NULL,
	process_id  VARCHAR(128) NOT NULL,
	item_id     BIGINT       NOT NULL,
	expires_at  DATETIME(3)  NOT NULL,
	PRIMARY KEY (name),
	KEY work_leases_holder_idx (process_id, item_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
