-- 020_rag_dataset_counts.sql - a processing dataset's counts, reused for a
-- moment by every GET of it.
--
-- GET /dataset/{id} and GET /dataset count a processing dataset's
-- documents by status and its snippets from their indexes: an index entry
-- per document and per snippet, 37-46 ms for 100,000 documents.  Clients
-- poll a dataset while it is ingested, and every poll paid that again, so
-- the cost of a large ingestion's progress grew with the number of
-- clients watching it and with their rate.  A GET that counts stores the
-- counts here; a GET within dataset_counts_cache_ms of that shows them
-- instead of counting, as long as the dataset's index_generation is still
-- the one they were counted at (every POST of documents, delete and retry
-- bumps it, in its own transaction: a client sees its own change at once).
-- A settled dataset never reads this table: it shows the counts stored
-- when it settled.
CREATE TABLE IF NOT EXISTS rag_dataset_counts (
	dataset_id        CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	index_generation  BIGINT      NOT NULL,
	counted_at        DATETIME(6) NOT NULL,
	processing        BIGINT      NOT NULL,
	done              BIGINT      NOT NULL,
	failed            BIGINT      NOT NULL,
	snippets          BIGINT      NOT NULL,
	PRIMARY KEY (dataset_id),
	CONSTRAINT fk_rag_dataset_counts_dataset FOREIGN KEY (dataset_id)
		REFERENCES rag_datasets (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
