/* response.h - writing the answer.
 *
 * Exactly one resp_* call that writes a status may happen per request; the
 * worker answers 500 itself if a handler returned without answering. */
#ifndef SLUICE_RESPONSE_H
#define SLUICE_RESPONSE_H

#include <stddef.h>
#include <json-c/json.h>

struct req;

/* Add a response header (copied into the arena); call before writing. */
void resp_header(struct req *r, const char *name, const char *value);

/* Writes status + headers + body.  resp_json takes ownership of body. */
int resp_json(struct req *r, int status, struct json_object *body);
int resp_raw(struct req *r, int status, const char *content_type,
             const char *body, size_t len);
int resp_empty(struct req *r, int status);

/* {"detail": "..."} - the common error body. */
int resp_detail(struct req *r, int status, const char *detail);

const char *resp_status_text(int status);

#endif
