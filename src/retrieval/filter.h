/* filter.h - metadata_filter: {"k": v} equality, {"k": {"$in": [...]}},
 * {"k": {"$contains": "t"}}; every key must match (AND).
 *
 * Values are JSON scalars (string, number, boolean, null); equality is by
 * type and value (1 equals 1.0, "1" does not equal 1).  $contains matches a
 * substring of a string value, or an element of an array value. */
#ifndef SLUICE_FILTER_H
#define SLUICE_FILTER_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

#define FILTER_MAX_KEYS 64
#define FILTER_MAX_IN 1000
#define FILTER_MAX_STRING 1024

struct meta_filter;
/* NULL with a message in err for a bad spec: the rest of a sentence that
 * begins with the field's name (e.g. "key 'lang': $in must be an array").
 * The filter copies what it needs: spec may be released afterwards. */
struct meta_filter *meta_filter_parse(struct json_object *spec, char *err, size_t errlen);
/* metadata NULL or not an object matches only an empty filter. */
bool meta_filter_match(const struct meta_filter *f, struct json_object *metadata);
void meta_filter_free(struct meta_filter *f);

#endif
