/* pipelines.h - what the pipeline files share: the JSON text the Pipeline
 * and Job objects are written into (pipeline_render.c) and the create
 * handler (pipeline_create.c), routed by pipelines.c. */
#ifndef SLUICE_PIPELINES_H
#define SLUICE_PIPELINES_H

#include <stddef.h>

struct req;
struct strbuf;

/* The JSON text is a struct strbuf (util/strbuf.h): free it with jb_reply,
 * or strbuf_free on error paths. */

/* Answer b as application/json (500 when an append ran out of memory) and
 * free it. */
int jb_reply(struct req *r, int status, struct strbuf *b);

/* The caller's pipelines with their jobs as a JSON array: all of them
 * (limit < 0), or limit of them from offset in creation order.  0 or a
 * negative db error. */
int pipelines_render(struct req *r, struct strbuf *b, long long limit,
                     long long offset);

/* One Pipeline object; with detail also "paused" and "tasks".  1 written,
 * 0 no such pipeline of the caller, or a negative db error. */
int pipeline_render(struct req *r, const char *id, int detail, struct strbuf *b);

/* POST /platform/pipeline. */
int pipeline_create(struct req *r);

#endif
