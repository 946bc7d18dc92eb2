/* title.c - a document's title from its metadata (title.h). */
#include <ctype.h>
#include <json-c/json.h>
#include <string.h>

#include "retrieval/title.h"

/* The string member key of o, or NULL. */
static const char *string_member(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	       ? json_object_get_string(v) : NULL;
}

/* A file name's extension: a final dot, not the name's first character,
 * followed by 1 to 5 letters or digits ("md", "html", "1"). */
static size_t without_extension(const char *name, size_t len)
{
	const char *dot = memrchr(name, '.', len);
	size_t ext;

	if (dot == NULL || dot == name || (ext = len - (size_t)(dot - name) - 1) == 0 || ext > 5)
		return len;
	for (const char *c = dot + 1; c < name + len; c++)
		if (!isalnum((unsigned char)*c))   /* the C locale: ASCII only */
			return len;
	return (size_t)(dot - name);
}

size_t doc_title(const char *meta, char *out, size_t cap)
{
	struct json_object *o;
	const char *t, *slash;
	size_t len = 0;

	out[0] = '\0';
	if (meta == NULL || (strstr(meta, "\"title\"") == NULL && strstr(meta, "\"source\"") == NULL))
		return 0;   /* most snippets: no parse */
	if ((o = json_tokener_parse(meta)) == NULL)
		return 0;
	if (json_object_is_type(o, json_type_object)) {
		if ((t = string_member(o, "title")) != NULL) {
			len = strlen(t);
		} else if ((t = string_member(o, "source")) != NULL) {
			if ((slash = strrchr(t, '/')) != NULL)
				t = slash + 1;
			len = without_extension(t, strlen(t));
		}
	}
	if (len > 0) {
		if (len > DOC_TITLE_MAX)   /* cut before a character's continuation bytes */
			for (len = DOC_TITLE_MAX; len > 0 && ((unsigned char)t[len] & 0xC0) == 0x80; len--)
				;
		if (len >= cap)
			len = 0;
		memcpy(out, t, len);
		out[len] = '\0';
	}
	json_object_put(o);
	return len;
}
