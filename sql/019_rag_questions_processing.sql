-- 019_rag_questions_processing.sql - the questions still being answered,
-- found by an index.
--
-- A question a worker ranks after its answer no longer gets a work_queue
-- row at POST (its insert and settling were a quarter of MariaDB's time per
-- question).  Should the worker die before it stores the result, sluice work
-- finds the question still processing RAG_QUESTION_FALLBACK_S later and
-- queues it; this index keeps that look-up to the few processing rows.
ALTER TABLE rag_questions ADD KEY rag_questions_status_idx (status, created_at);
