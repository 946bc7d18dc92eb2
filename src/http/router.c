/* router.c - match a method and a path against the route table.
 *
 * Nothing is allocated: parameters point into the pattern and the path. */
#include <stdbool.h>
#include <string.h>

#include "http/router.h"

/* A "/"-separated view of a path or pattern, without the leading slash. */
struct segs {
	const char *p, *end;
	bool done;
};

static void segs_init(struct segs *s, const char *str, size_t len)
{
	/* Both start with '/'; "/" alone has no segments at all. */
	s->p = str + 1;
	s->end = str + len;
	s->done = len <= 1;
}

static bool segs_next(struct segs *s, const char **seg, size_t *seglen)
{
	const char *slash;

	if (s->done)
		return false;
	slash = memchr(s->p, '/', (size_t)(s->end - s->p));
	*seg = s->p;
	if (slash == NULL) {
		*seglen = (size_t)(s->end - s->p);
		s->done = true;
	} else {
		*seglen = (size_t)(slash - s->p);
		s->p = slash + 1;
	}
	return true;
}

static bool is_param(const char *seg, size_t len)
{
	return len >= 3 && seg[0] == '{' && seg[len - 1] == '}';
}

/* Does path[0..plen) have the shape of pattern?  Fills params on success. */
static bool path_matches(const char *pattern, const char *path, size_t plen,
                         struct route_param *params, size_t *nparams)
{
	struct segs ps, qs;
	const char *pseg, *qseg;
	size_t pl, ql, n = 0;
	bool havep, haveq;

	if (pattern == NULL || pattern[0] != '/')
		return false;
	segs_init(&ps, pattern, strlen(pattern));
	segs_init(&qs, path, plen);
	for (;;) {
		havep = segs_next(&ps, &pseg, &pl);
		haveq = segs_next(&qs, &qseg, &ql);
		if (!havep || !haveq)
			break;
		if (is_param(pseg, pl)) {
			if (ql == 0 || n == ROUTE_MAX_PARAMS)
				return false;
			params[n].name = pseg + 1;
			params[n].name_len = pl - 2;
			params[n].value = qseg;
			params[n].value_len = ql;
			n++;
		} else if (pl != ql || memcmp(pseg, qseg, pl) != 0) {
			return false;
		}
	}
	if (havep || haveq)
		return false;          /* one has more segments than the other */
	*nparams = n;
	return true;
}

/* Append method to the Allow list unless it is there already. */
static void allow_add(char *allow, size_t cap, const char *method)
{
	size_t used = strlen(allow), mlen = strlen(method);
	const char *p = allow;

	while (*p != '\0') {
		const char *comma = strstr(p, ", ");
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == mlen && memcmp(p, method, mlen) == 0)
			return;
		if (comma == NULL)
			break;
		p = comma + 2;
	}
	/* A method that does not fit is left out rather than cut in half. */
	if (used + (used ? 2 : 0) + mlen + 1 > cap)
		return;
	if (used) {
		memcpy(allow + used, ", ", 2);
		used += 2;
	}
	memcpy(allow + used, method, mlen + 1);
}

enum route_status router_match(const struct route *routes, size_t nroutes,
                               const char *method, const char *path,
                               struct route_match *m)
{
	struct route_param params[ROUTE_MAX_PARAMS];
	size_t plen, nparams;
	bool path_seen = false;

	memset(m, 0, sizeof *m);
	if (path == NULL || path[0] != '/')
		return ROUTE_NOT_FOUND;
	plen = strlen(path);
	/* "/a/" is "/a", but "/" stays the root and "//" stays two empty
	 * segments. */
	if (plen >= 2 && path[plen - 1] == '/' && path[plen - 2] != '/')
		plen--;

	for (size_t i = 0; i < nroutes; i++) {
		const struct route *rt = &routes[i];

		if (!path_matches(rt->pattern, path, plen, params, &nparams))
			continue;
		if (method != NULL && rt->method != NULL &&
		    strcmp(rt->method, method) == 0) {
			m->route = rt;
			m->nparams = nparams;
			memcpy(m->params, params, nparams * sizeof params[0]);
			m->allow[0] = '\0';
			return ROUTE_FOUND;
		}
		path_seen = true;
		if (rt->method != NULL)
			allow_add(m->allow, sizeof m->allow, rt->method);
	}
	if (!path_seen)
		return ROUTE_NOT_FOUND;
	return ROUTE_BAD_METHOD;
}
