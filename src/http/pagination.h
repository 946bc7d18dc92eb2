/* pagination.h - the page and limit of a listing and the Pagination object
 * answered with it (storage-explorer spec, "Pagination object"), shared by
 * every area that pages a listing. */
#ifndef SLUICE_PAGINATION_H
#define SLUICE_PAGINATION_H

#include "http/validate.h"

struct json_object;

/* page >= 1 (default 1), limit 1 .. 100 (default 20). */
#define PAGE_MAX 1000000000LL
#define PAGE_LIMIT_DEFAULT 20
#define PAGE_LIMIT_MAX 100

struct page_query {
	long long page, limit;
};
#define PAGE_QUERY_INIT { .page = 1, .limit = PAGE_LIMIT_DEFAULT }

/* The two rows of a query table for a struct page_query at member of type. */
#define PAGE_QUERY_ROWS(type, member) \
	{ "page", V_INT, 0, 1, PAGE_MAX, NULL, NULL, \
	  VOFF(type, member.page) }, \
	{ "limit", V_INT, 0, 1, PAGE_LIMIT_MAX, NULL, NULL, \
	  VOFF(type, member.limit) }

/* The rows to skip for q: LIMIT q->limit OFFSET page_offset(q). */
static inline long long page_offset(const struct page_query *q)
{
	return (q->page - 1) * q->limit;
}

/* {current_page, total_pages, total_items, items_per_page, has_next,
 * has_previous} of total items shown limit at a time. */
struct json_object *pagination_json(long long page, long long limit, long long total);

#endif
