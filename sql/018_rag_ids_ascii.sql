-- 018_rag_ids_ascii.sql - retrieval ids compared as bytes, not as text.
--
-- The ids of datasets, documents, snippets and questions are UUIDs that
-- sluice writes in lower case (a path's id is parsed and lower-cased before
-- any statement sees it).  As utf8mb4_unicode_ci every key comparison of
-- them went through the collation's weights: a profile of an ingestion put
-- a quarter of mariadbd's time there, on the primary keys, the foreign keys
-- and the documents' index that every group of an ingestion reads and
-- writes.  As ascii_bin they compare as bytes and take 36 bytes, not up to
-- 144, in every index that holds them.  Ingesting 100,000 one-snippet
-- documents took 17.2 and 18.1 s against 25.4 and 21.9 s (two rounds
-- alternated on fresh databases).
--
-- A column a foreign key names cannot change its character set while the
-- key is there, so the keys go first and come back last, as they were.
-- The tables are rebuilt: on a large installation this takes as long as
-- copying rag_snippets (docs/operations.md, Upgrades).
ALTER TABLE rag_documents DROP FOREIGN KEY IF EXISTS fk_rag_documents_dataset;
ALTER TABLE rag_snippets DROP FOREIGN KEY IF EXISTS fk_rag_snippets_dataset,
	DROP FOREIGN KEY IF EXISTS fk_rag_snippets_document;
ALTER TABLE rag_questions DROP FOREIGN KEY IF EXISTS fk_rag_questions_dataset;

ALTER TABLE rag_datasets
	MODIFY id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
ALTER TABLE rag_documents
	MODIFY id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	MODIFY dataset_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
ALTER TABLE rag_snippets
	MODIFY id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	MODIFY dataset_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	MODIFY document_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
ALTER TABLE rag_questions
	MODIFY id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	MODIFY dataset_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;

ALTER TABLE rag_documents ADD CONSTRAINT fk_rag_documents_dataset
	FOREIGN KEY IF NOT EXISTS (dataset_id) REFERENCES rag_datasets (id) ON DELETE CASCADE;
ALTER TABLE rag_snippets ADD CONSTRAINT fk_rag_snippets_dataset
	FOREIGN KEY IF NOT EXISTS (dataset_id) REFERENCES rag_datasets (id) ON DELETE CASCADE,
	ADD CONSTRAINT fk_rag_snippets_document
	FOREIGN KEY IF NOT EXISTS (document_id) REFERENCES rag_documents (id) ON DELETE CASCADE;
ALTER TABLE rag_questions ADD CONSTRAINT fk_rag_questions_dataset
	FOREIGN KEY IF NOT EXISTS (dataset_id) REFERENCES rag_datasets (id) ON DELETE CASCADE;
