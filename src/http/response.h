/* response.h - writing the answer.
 *
 * Exactly one resp_* call that writes a status may happen per request; the
 * worker answers 500 itself if a handler returned without answering. */
#ifndef SLUICE_RESPONSE_H
#define SLUICE_RESPONSE_H

#include <stddef.h>
#include <json-c/json.h>

struct req;

/* Add a response header (copied into the arena); call before writing.
 * A value with CR, LF or another control character, a bad name, or Status,
 * Content-Type and Content-Length (written by the calls below) are dropped
 * with a warning in the log. */
void resp_header(struct req *r, const char *name, const char *value);

/* Writes status + headers + body; 0, or -1 when a response was already
 * written (nothing is sent then) or the write failed.  resp_json takes
 * ownership of body, also on failure.  resp_empty sends Content-Length: 0,
 * except for 204 and 304 which have none. */
int resp_json(struct req *r, int status, struct json_object *body);
int resp_raw(struct req *r, int status, const char *content_type,
             const char *body, size_t len);
int resp_empty(struct req *r, int status);

/* {"detail": "..."} - the common error body. */
int resp_detail(struct req *r, int status, const char *detail);

const char *resp_status_text(int status);

/* Unit tests (r->out NULL): everything written so far, NUL-terminated. */
const char *resp_test_output(const struct req *r, size_t *len);

#endif
