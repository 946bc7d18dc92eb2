-- 012_rag_index_generation.sql - removing a document from a dataset.
--
-- rag_datasets.index_generation: bumped by every change that makes the
-- dataset's index file stale without leaving a document processing (a
-- document deleted).  An ingestion notes it before it builds the index and
-- marks the dataset success only if it is unchanged, so an index built
-- while a document was being deleted is never taken for the current one.
ALTER TABLE rag_datasets
	ADD COLUMN index_generation BIGINT NOT NULL DEFAULT 0 AFTER snippet_count;
