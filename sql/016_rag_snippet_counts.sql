-- 016_rag_snippet_counts.sql - a dataset's snippets counted from a small
-- index instead of from its rows.
--
-- GET /dataset/{id} (which clients poll while a dataset is ingested) and
-- GET /dataset counted a dataset's snippets with the primary key's range,
-- that is by reading every row, its embedding and its text: 0.6 s for
-- 100,000 snippets, on every poll, beside the ingestion it watched.
-- rag_snippets_dataset_idx holds (dataset_id, id) only; GET counts from it
-- while a dataset is processing and shows the count stored when it
-- settled otherwise.
--
-- rag_snippets_id_uq goes: no statement looks a snippet up by its id alone
-- (answers name snippets from the index file), the primary key
-- (dataset_id, id) already keeps a dataset's ids unique, and ids are
-- version 7 UUIDs with 62 random bits.  An index fewer to write for every
-- snippet stored pays for the new one.
ALTER TABLE rag_snippets
	DROP INDEX IF EXISTS rag_snippets_id_uq,
	ADD KEY IF NOT EXISTS rag_snippets_dataset_idx (dataset_id);
