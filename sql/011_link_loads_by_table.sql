-- A storage_link_load item now names the table it loads (all of its active
-- links at once), not one link: items waiting from before are re-pointed.
UPDATE work_queue q JOIN table_links l ON l.id = q.ref_id
SET q.ref_id = l.table_id
WHERE q.kind = 'storage_link_load' AND q.status IN ('queued', 'running');
