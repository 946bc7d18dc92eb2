/* routes.c - one table for the whole service, put together from the
 * areas' own tables.  First match wins, so within a table literal routes
 * come before parameterised ones that overlap. */
#include <stdbool.h>

#include "platform/platform.h"
#include "retrieval/retrieval.h"
#include "serve/routes.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/config.h"
#include "util/log.h"

static const struct route service_routes[] = {
	{ "GET", "/health", health_get, ROUTE_AUTH_HEALTH, NULL },
	{ "GET", "/openapi.json", openapi_get, ROUTE_AUTH_NONE, NULL },
	ROUTES_END
};

#ifdef SLUICE_TEST_HOOKS
/* Probes for the API tests (testing.c): test builds only, and there only
 * with testing_routes = on. */
static const struct route testing_routes[] = {
	{ "GET",  "/_test/pid",    testing_pid,    ROUTE_AUTH_NONE,  NULL },
	{ "GET",  "/_test/sleep",  testing_sleep,  ROUTE_AUTH_NONE,  NULL },
	{ "POST", "/_test/echo",   testing_echo,   ROUTE_AUTH_JWT,   "PLATFORM.WRITE" },
	{ "GET",  "/_test/whoami", testing_whoami, ROUTE_AUTH_JWT,   "PLATFORM.READ" },
	{ "GET",  "/_test/basic",  testing_basic,  ROUTE_AUTH_BASIC, NULL },
	{ "GET",  "/_test/passes", testing_passes, ROUTE_AUTH_NONE,  NULL },
	ROUTES_END
};
#endif

static const struct route *const area_tables[] = {
	service_routes,
	platform_pipeline_routes,
	platform_job_routes,
	platform_run_routes,
	platform_connection_routes,
	platform_connection_check_routes,
	platform_run_cancel_routes,
	platform_webhook_routes,
	retrieval_routes,
	storage_routes,
	storage_table_routes,
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define ROUTES_MAX 256

static struct route table[ROUTES_MAX];

static void append(size_t *k, const struct route *t)
{
	for (; t->pattern != NULL; t++) {
		if (*k == ROUTES_MAX) {
			log_error("route table full: raise ROUTES_MAX");
			return;
		}
		table[(*k)++] = *t;
	}
}

const struct route *routes_table(const struct config *cfg, size_t *n)
{
	size_t k = 0;

	for (size_t i = 0; i < NELEM(area_tables); i++)
		append(&k, area_tables[i]);
#ifdef SLUICE_TEST_HOOKS
	if (cfg->testing_routes)
		append(&k, testing_routes);
#else
	(void)cfg;
#endif
	*n = k;
	return table;
}
