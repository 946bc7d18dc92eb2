-- 007_storage_tables.sql - where a storage explorer table lives in the
-- warehouse.
--
-- Each customer's tables go into warehouse schemas of its own
-- (<schema>_<16 hex digits of SHA-256 over customer id and schema>), so two
-- customers' tables of the same name never meet.  The row keeps the names the
-- table was created under: a later change of warehouse_default_schema must
-- not lose existing tables.  Case-sensitive like the files MariaDB keeps
-- tables in; one row per warehouse table.
ALTER TABLE warehouse_tables
	ADD COLUMN wh_schema VARCHAR(64) COLLATE utf8mb4_bin NULL AFTER table_name,
	ADD COLUMN wh_table VARCHAR(64) COLLATE utf8mb4_bin NULL AFTER wh_schema,
	ADD UNIQUE KEY warehouse_tables_wh_uq (wh_schema, wh_table);
