/* errors.h - the one place that turns internal failures into HTTP answers.
 *
 * Clients get a short fixed detail; the real cause (which may name tables
 * or hosts) goes to the log only. */
#ifndef SLUICE_ERRORS_H
#define SLUICE_ERRORS_H

struct db;
struct req;

/* The worker's connection, connected; or NULL once a 503 was answered. */
struct db *req_db_or_reply(struct req *r);

/* Answer a failed database call: 503 {"detail":"Database unavailable"}
 * when the server cannot be reached, else 500.  Returns -1. */
int resp_db_error(struct req *r, int db_err);

/* 500 {"detail":"Internal Server Error"} after logging what. Returns -1. */
int resp_internal(struct req *r, const char *what);

#endif
