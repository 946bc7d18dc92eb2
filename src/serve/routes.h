/* routes.h - the table of every route the service answers.
 *
 * Each API area contributes its own table; routes.c stitches them into the
 * one table the worker dispatches on. */
#ifndef SLUICE_ROUTES_H
#define SLUICE_ROUTES_H

#include <stddef.h>
#include "http/router.h"

struct config;

/* The routes for this configuration (test routes only in a test build
 * with testing_routes = on).
 * The returned table lives until the next call. */
const struct route *routes_table(const struct config *cfg, size_t *n);

/* Handlers of the foundation. */
int health_get(struct req *r);
#ifdef SLUICE_TEST_HOOKS
/* Probes for the API tests (testing.c), in test builds only. */
int testing_pid(struct req *r);
int testing_sleep(struct req *r);
int testing_echo(struct req *r);
int testing_whoami(struct req *r);
int testing_basic(struct req *r);
#endif

#endif
