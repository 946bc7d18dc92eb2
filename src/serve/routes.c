/* routes.c - one table for the whole service. */
#include <stdbool.h>

#include "serve/routes.h"
#include "util/config.h"

/* Literal routes before parameterised ones that overlap: first match wins. */
static const struct route service_routes[] = {
	{ "GET", "/health", health_get, ROUTE_AUTH_HEALTH, NULL },
};

/* Only with testing_routes = on: probes the API tests need to observe the
 * worker pool from outside (which pid answered, a request that takes time). */
static const struct route testing_routes[] = {
	{ "GET",  "/_test/pid",    testing_pid,    ROUTE_AUTH_NONE,  NULL },
	{ "GET",  "/_test/sleep",  testing_sleep,  ROUTE_AUTH_NONE,  NULL },
	{ "POST", "/_test/echo",   testing_echo,   ROUTE_AUTH_JWT,   "PLATFORM.WRITE" },
	{ "GET",  "/_test/whoami", testing_whoami, ROUTE_AUTH_JWT,   "PLATFORM.READ" },
	{ "GET",  "/_test/basic",  testing_basic,  ROUTE_AUTH_BASIC, NULL },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct route table[NELEM(service_routes) + NELEM(testing_routes)];

const struct route *routes_table(const struct config *cfg, size_t *n)
{
	size_t k = 0;

	for (size_t i = 0; i < NELEM(service_routes); i++)
		table[k++] = service_routes[i];
	if (cfg->testing_routes)
		for (size_t i = 0; i < NELEM(testing_routes); i++)
			table[k++] = testing_routes[i];
	*n = k;
	return table;
}
