/* pipelines.h - what the pipeline files share: the JSON text the Pipeline
 * and Job objects are written into (pipeline_render.c), the create handler
 * and its checks (pipeline_create.c), which PATCH (pipeline_patch.c) runs
 * again on a changed pipeline, and the lock both PATCH and DELETE take
 * (pipelines.c); all routed by pipelines.c. */
#ifndef SLUICE_PIPELINES_H
#define SLUICE_PIPELINES_H

#include <stddef.h>
#include <time.h>

struct json_object;
struct platform_verr;
struct req;
struct strbuf;

/* The JSON text is a struct strbuf (util/strbuf.h): free it with jb_reply,
 * or strbuf_free on error paths.  jb_buf is the worker's own, emptied,
 * kept between requests (the reads use it); jb_reply keeps it too. */
struct strbuf *jb_buf(void);

/* Answer b as application/json (500 when an append ran out of memory) and
 * free it. */
int jb_reply(struct req *r, int status, struct strbuf *b);
/* The same for a read: 200 with a strong ETag over b's bytes, or 304 when
 * the request's If-None-Match matches it (http/etag.h). */
int jb_reply_etag(struct req *r, struct strbuf *b);

/* The same with k's name as the ETag, keeping b in the render cache. */
struct body_key;
int jb_reply_cached(struct req *r, struct strbuf *b, const struct body_key *k);

/* The caller's pipelines with their jobs as a JSON array: all of them
 * (limit < 0), or limit of them from offset in creation order.  0 or a
 * negative db error. */
int pipelines_render(struct req *r, struct strbuf *b, long long limit,
                     long long offset);

/* The whole list, and the name of this render in *k (http/body_cache.h):
 * a digest of the versions of the rows it was made from. */
int pipelines_render_all(struct req *r, struct strbuf *b, struct body_key *k);

/* The name the caller's whole list has now, from the rows' versions alone
 * (no render).  0 or a negative db error. */
int pipelines_list_key(struct req *r, struct body_key *k);

/* One Pipeline object; with detail also "paused" and "tasks".  1 written,
 * 0 no such pipeline of the caller, or a negative db error. */
int pipeline_render(struct req *r, const char *id, int detail, struct strbuf *b);

/* POST /platform/pipeline. */
int pipeline_create(struct req *r);

/* PATCH /platform/pipeline/{pipeline_id} (pipeline_patch.c). */
int pipeline_patch(struct req *r);

/* A write to the pipeline row that always changes it (updated_at), so that
 * a transaction that only read-locked the row still conflicts, on Galera,
 * with one on another node that writes it (a run starting, a PATCH, a
 * delete, a webhook create): Galera certifies the rows a transaction
 * wrote, and a SELECT ... FOR UPDATE on one node holds back no other
 * node.  0 or a negative db error. */
int pipeline_touch(struct db *db, const char *id);

/* Lock the caller's pipeline row until the transaction ends (written, as
 * pipeline_touch does), then see
 * whether a run is in progress (a run CREATED or RUNNING, or a job
 * RUNNING): PIPELINE_IDLE, PIPELINE_MISSING (no such pipeline of the
 * caller), PIPELINE_ACTIVE, or a negative db error. */
enum { PIPELINE_IDLE = 0, PIPELINE_MISSING = 1, PIPELINE_ACTIVE = 2 };
int pipeline_lock_idle(struct req *r, const char *id);

/* --- the checks of a create body (pipeline_create.c) ----------------------- */

/* platform_pipeline_body's values. */
struct pipeline_in {
	const char *name, *description, *cron, *cron_timezone;
	long long retries, run_timeout_s;
	struct json_object *jobs;
};

/* platform_job_body's values; its memory_allocated_mb row, whose maximum
 * is the config's memory_max_mb, is JOB_MEMORY_ROW. */
struct job_in {
	const char *name;
	struct json_object *input, *output;
	long long memory_mb;
};
#define JOB_MEMORY_ROW 3

/* A job's input and output, validated: what its jobs row holds
 * (runner/connector.h has the job as a run sees it: struct job_spec). */
struct job_new {
	const char *name, *connector, *connection_id;
	const char *input, *output;          /* JSON text to store */
	const char *load_type, *inc_name, *inc_type;
	const char *primary_keys, *columns;  /* JSON array text or NULL */
	long long memory_mb;                 /* 0: not set */
};

/* A job's input and output objects (either may be NULL) checked as create
 * checks them, every refusal added to v under prefix ("jobs[0]" gives
 * "jobs[0].input.plugin"); js gets the values. */
void pipeline_job_check(struct req *r, struct platform_verr *v,
                        const char *prefix, struct json_object *input,
                        struct json_object *output, struct job_new *js);

/* cron and cron_timezone as create checks them (INVALID_TIMEZONE,
 * INVALID_CRON into v; *tz NULL once refused).  *next: the cron's next
 * firing after now in *tz, 0 when there is no cron or it was refused. */
void pipeline_schedule_check(struct platform_verr *v, const char *cron,
                             const char **tz, time_t *next);

/* connection_id must be one of the caller's connections, share-locked so
 * that it is not deleted before the transaction ends.  0; 1 when refused
 * (UNKNOWN_CONNECTION on field, added to v); or a negative db error. */
int pipeline_connection_check(struct req *r, const char *connection_id,
                              const char *field, struct platform_verr *v);

#endif
