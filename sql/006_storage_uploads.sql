-- 006_storage_uploads.sql - the inference state of each uploaded file.
--
-- An upload is settled (completed, or failed with the first file's reason)
-- once none of its files is pending; each file's dataset may meanwhile be
-- uploaded again by a later upload, so the file row keeps its own outcome.
ALTER TABLE upload_files
	ADD COLUMN status VARCHAR(16) NOT NULL DEFAULT 'pending' AFTER dataset_id,
	ADD CONSTRAINT upload_files_status_chk CHECK (status IN ('pending', 'done', 'failed'));
