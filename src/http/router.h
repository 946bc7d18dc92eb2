/* router.h - method + path pattern matching with {named} parameters.
 *
 * Patterns are literal segments and whole-segment parameters:
 *   "/platform/pipeline/{pipeline_id}/memory"
 * A single trailing slash on the request path is ignored; empty segments
 * never match a parameter.  The table is scanned in order, first match wins,
 * so put literal routes before parameterised ones that overlap. */
#ifndef SLUICE_ROUTER_H
#define SLUICE_ROUTER_H

#include <stddef.h>

#define ROUTE_MAX_PARAMS 8

struct req;
typedef int (*route_handler)(struct req *r);

enum route_auth {
	ROUTE_AUTH_NONE,      /* public */
	ROUTE_AUTH_JWT,       /* bearer/raw JWT, with permission when set */
	ROUTE_AUTH_BASIC,     /* HTTP Basic (retrieval area) */
	ROUTE_AUTH_HEALTH,    /* Basic only when the config asks for it */
};

struct route {
	const char *method;
	const char *pattern;
	route_handler handler;
	enum route_auth auth;
	const char *permission;   /* ROUTE_AUTH_JWT: required permission or NULL */
};

struct route_param {
	const char *name;         /* points into the pattern */
	size_t name_len;
	const char *value;        /* points into the matched path */
	size_t value_len;
};

struct route_match {
	const struct route *route;
	size_t nparams;
	struct route_param params[ROUTE_MAX_PARAMS];
	char allow[96];           /* "GET, POST" when the path matched, the method not */
};

/* Ends a route table that is walked without knowing its length. */
#define ROUTES_END { NULL, NULL, NULL, ROUTE_AUTH_NONE, NULL }

enum route_status { ROUTE_FOUND, ROUTE_NOT_FOUND, ROUTE_BAD_METHOD };

/* path must stay valid while m is used. */
enum route_status router_match(const struct route *routes, size_t nroutes,
                               const char *method, const char *path,
                               struct route_match *m);

#endif
