-- 008_confinement.sql - every customer's warehouse tables in databases of
-- its own, and Basic user names compared byte for byte.
--
-- 1. api_users.name compares exactly: 'DEMO', 'demo ' and 'démö' are other
--    users than 'demo'.  NO PAD, because utf8mb4_bin still ignores trailing
--    spaces.  (Customer ids need no change here: the API takes only their
--    canonical form, lower-case letters, digits, '-' and '_', in which the
--    table collation compares exactly.)
--
-- 2. Warehouse databases.  A logical schema now lives in
--    wh_<schema>_<16 hex of SHA-256(customer id, newline, schema)>, the same
--    for pipelines and storage explorer tables (db/warehouse.c,
--    wh_schema_physical), so that the loader account's grant on `wh\_%`
--    covers all of them and nothing else.  Until now a pipeline wrote into
--    its output.raw.table_schema as named, shared by every customer, and a
--    storage table into <schema>_<16 hex>.  Each table found there is moved
--    (RENAME TABLE, data and all) to its customer's new database and the
--    outcome is recorded in warehouse_moves, one row per table:
--      moved      the table is in to_schema now
--      absent     no such table (a pipeline that never ran), or one the
--                 migrating account cannot see
--      exists     to_schema already has a table of that name: both kept
--      protected  the table is in the service database or a MariaDB system
--                 database (a destination the API refuses now): left alone
--      shared     the table was the destination of more than one customer
--                 (or of another customer's storage table): whose rows it
--                 holds is unknown, so it stays where it is
--      failed     MariaDB refused the move (detail says why, e.g. the
--                 migrating account lacks ALTER and DROP on from_schema)
--    Storage explorer rows point at their new database whatever the outcome:
--    it is the only place the loader may write.  Whatever was not moved is
--    moved by hand (RENAME TABLE `from_schema`.`from_table` TO
--    `to_schema`.`to_table`) or dropped; the old databases, empty or not,
--    are left for the operator.  A pipeline's next run loads into its new
--    database either way (a full_load reloads it all, an incremental job
--    continues from its bookmark).  Run this migration as an account that
--    can see, rename and drop the old tables and create the new databases
--    (e.g. root); stop `sluice work` first.

ALTER TABLE api_users MODIFY name VARCHAR(128) COLLATE utf8mb4_nopad_bin NOT NULL;

CREATE TABLE warehouse_moves (
	id           BIGINT       NOT NULL AUTO_INCREMENT,
	customer_id  CHAR(36)     NOT NULL,
	source       VARCHAR(16)  NOT NULL,
	ref_id       VARCHAR(80)  NOT NULL,
	from_schema  VARCHAR(64)  COLLATE utf8mb4_bin NOT NULL,
	from_table   VARCHAR(64)  COLLATE utf8mb4_bin NOT NULL,
	to_schema    VARCHAR(64)  COLLATE utf8mb4_bin NOT NULL,
	to_table     VARCHAR(64)  COLLATE utf8mb4_bin NOT NULL,
	outcome      VARCHAR(16)  NULL,
	detail       TEXT         NULL,
	created_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	KEY warehouse_moves_from_idx (from_schema, from_table),
	CONSTRAINT warehouse_moves_source_chk CHECK (source IN ('storage_table', 'pipeline')),
	CONSTRAINT warehouse_moves_outcome_chk CHECK (outcome IN
		('moved', 'absent', 'exists', 'protected', 'shared', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Storage explorer tables: <prefix>_<16 hex> keeps its hex digits (they are
-- the same hash) behind the new prefix.
INSERT INTO warehouse_moves (customer_id, source, ref_id, from_schema, from_table,
                             to_schema, to_table)
SELECT customer_id, 'storage_table', id, wh_schema, wh_table,
       CONCAT('wh_', LEFT(LOWER(REGEXP_REPLACE(
           LEFT(wh_schema, CHAR_LENGTH(wh_schema) - 17) COLLATE utf8mb4_bin,
           '[^A-Za-z0-9_]', '_')), 44), '_', RIGHT(wh_schema, 16)),
       wh_table
FROM warehouse_tables
WHERE wh_schema IS NOT NULL AND wh_table IS NOT NULL
  AND CHAR_LENGTH(wh_schema) > 17 AND wh_schema NOT LIKE 'wh\_%'
ORDER BY created_at, id;

-- Pipeline destinations: the job's table and, for singer jobs, the tables
-- of its other streams (<table_name>__<stream>).
INSERT INTO warehouse_moves (customer_id, source, ref_id, from_schema, from_table,
                             to_schema, to_table)
SELECT d.customer_id, 'pipeline', d.id, d.sch, d.tbl,
       CONCAT('wh_', LEFT(LOWER(REGEXP_REPLACE(d.sch COLLATE utf8mb4_bin,
           '[^A-Za-z0-9_]', '_')), 44), '_',
           LEFT(SHA2(CONCAT(d.customer_id, CHAR(10), LOWER(d.sch)), 256), 16)),
       d.tbl
FROM (SELECT j.id, p.customer_id,
             JSON_VALUE(j.output, '$.raw.table_schema') AS sch,
             JSON_VALUE(j.output, '$.raw.table_name') AS tbl
      FROM jobs j JOIN pipelines p ON p.id = j.pipeline_id) d
WHERE d.sch <> '' AND d.tbl <> '' AND CHAR_LENGTH(d.sch) <= 64
  AND CHAR_LENGTH(d.tbl) <= 64
ORDER BY d.id;

INSERT INTO warehouse_moves (customer_id, source, ref_id, from_schema, from_table,
                             to_schema, to_table)
SELECT m.customer_id, 'pipeline', m.ref_id, m.from_schema, t.TABLE_NAME,
       m.to_schema, t.TABLE_NAME
FROM warehouse_moves m
JOIN jobs j ON j.id = m.ref_id AND j.connector = 'singer'
JOIN information_schema.TABLES t
  ON BINARY t.TABLE_SCHEMA = BINARY m.from_schema
 AND BINARY LEFT(t.TABLE_NAME, CHAR_LENGTH(m.from_table) + 2)
     = BINARY CONCAT(m.from_table, '__')
WHERE m.source = 'pipeline'
ORDER BY m.id, t.TABLE_NAME;

UPDATE warehouse_moves
SET outcome = 'protected', detail = 'the service database or a MariaDB system database'
WHERE LOWER(from_schema) IN (LOWER(DATABASE()), 'mysql', 'information_schema',
                             'performance_schema', 'sys');

-- A storage table belongs to its customer by its hashed name; a pipeline
-- destination to the only customer that loaded into it, if there is one.
UPDATE warehouse_moves m
JOIN (SELECT from_schema, from_table FROM warehouse_moves
      GROUP BY from_schema, from_table
      HAVING COUNT(DISTINCT customer_id) > 1
          OR SUM(source = 'storage_table') > 0) x
  ON x.from_schema = m.from_schema AND x.from_table = m.from_table
SET m.outcome = 'shared',
    m.detail = 'the destination of more than one customer, or a storage table'
WHERE m.source = 'pipeline' AND m.outcome IS NULL;

BEGIN NOT ATOMIC
	DECLARE done INT DEFAULT 0;
	DECLARE v_id BIGINT;
	DECLARE v_fs, v_ft, v_ts, v_tt VARCHAR(64);
	DECLARE moves CURSOR FOR
		SELECT id, from_schema, from_table, to_schema, to_table
		FROM warehouse_moves WHERE outcome IS NULL ORDER BY id;
	DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;

	OPEN moves;
	each_move: LOOP
		FETCH moves INTO v_id, v_fs, v_ft, v_ts, v_tt;
		IF done THEN
			LEAVE each_move;
		END IF;
		one_move: BEGIN
			DECLARE EXIT HANDLER FOR SQLEXCEPTION
			BEGIN
				GET DIAGNOSTICS CONDITION 1 @sluice_errno = MYSQL_ERRNO,
				    @sluice_msg = MESSAGE_TEXT;
				UPDATE warehouse_moves SET outcome = 'failed',
				    detail = CONCAT(@sluice_errno, ': ', @sluice_msg)
				WHERE id = v_id;
			END;
			IF (SELECT COUNT(*) FROM information_schema.TABLES
			    WHERE BINARY TABLE_SCHEMA = BINARY v_fs
			      AND BINARY TABLE_NAME = BINARY v_ft) = 0 THEN
				UPDATE warehouse_moves SET outcome = 'absent' WHERE id = v_id;
				LEAVE one_move;
			END IF;
			IF (SELECT COUNT(*) FROM information_schema.TABLES
			    WHERE BINARY TABLE_SCHEMA = BINARY v_ts
			      AND BINARY TABLE_NAME = BINARY v_tt) > 0 THEN
				UPDATE warehouse_moves SET outcome = 'exists' WHERE id = v_id;
				LEAVE one_move;
			END IF;
			SET @sluice_sql = CONCAT('CREATE DATABASE IF NOT EXISTS `',
			    REPLACE(v_ts, '`', '``'), '`');
			PREPARE sluice_stmt FROM @sluice_sql;
			EXECUTE sluice_stmt;
			DEALLOCATE PREPARE sluice_stmt;
			SET @sluice_sql = CONCAT('RENAME TABLE `', REPLACE(v_fs, '`', '``'),
			    '`.`', REPLACE(v_ft, '`', '``'), '` TO `', REPLACE(v_ts, '`', '``'),
			    '`.`', REPLACE(v_tt, '`', '``'), '`');
			PREPARE sluice_stmt FROM @sluice_sql;
			EXECUTE sluice_stmt;
			DEALLOCATE PREPARE sluice_stmt;
			UPDATE warehouse_moves SET outcome = 'moved' WHERE id = v_id;
		END one_move;
	END LOOP;
	CLOSE moves;
END;

-- Several jobs of one customer loading one table: the first row moved it.
UPDATE warehouse_moves m
JOIN warehouse_moves k
  ON k.from_schema = m.from_schema AND k.from_table = m.from_table
 AND k.to_schema = m.to_schema AND k.outcome = 'moved' AND k.id < m.id
SET m.outcome = 'moved', m.detail = CONCAT('moved with warehouse_moves row ', k.id)
WHERE m.outcome = 'absent';

UPDATE warehouse_tables t
JOIN warehouse_moves m ON m.source = 'storage_table' AND m.ref_id = t.id
SET t.wh_schema = m.to_schema;
