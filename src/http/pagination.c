/* pagination.c - the Pagination object of a listing. */
#include <json-c/json.h>

#include "http/pagination.h"

struct json_object *pagination_json(long long page, long long limit, long long total)
{
	struct json_object *o = json_object_new_object();
	long long pages = (total + limit - 1) / limit;

	json_object_object_add(o, "current_page", json_object_new_int64(page));
	json_object_object_add(o, "total_pages", json_object_new_int64(pages));
	json_object_object_add(o, "total_items", json_object_new_int64(total));
	json_object_object_add(o, "items_per_page", json_object_new_int64(limit));
	json_object_object_add(o, "has_next", json_object_new_boolean(page < pages));
	json_object_object_add(o, "has_previous", json_object_new_boolean(page > 1));
	return o;
}
