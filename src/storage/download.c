/* download.c - GET /storage-explorer/storage/download?file_path=...
 *
 * sluice checks the permission and the path, opens the file the way every
 * storage access does (no symlink followed, see paths.c) to be sure it is a
 * readable regular file under the caller's root, and then hands the
 * transfer to nginx: the answer carries X-Accel-Redirect to the internal
 * location that aliases storage_root, so the bytes never pass through a
 * worker.  nginx sets Content-Length; the internal location refuses
 * symlinks too (disable_symlinks), so a link planted after the check is
 * not followed either. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "storage/storage.h"
#include "util/arena.h"
#include "util/log.h"

/* The internal nginx location that aliases storage_root (nginx/). */
#define ACCEL_PREFIX "/_protected_storage/customers/"

/* The spec's 404: {"error", "file_path"}. */
static int not_found(struct req *r, const char *file_path)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "file_path", json_object_new_string(file_path));
	return storage_reply_with(r, STORAGE_FILE_NOT_FOUND, NULL, o);
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encode s into the arena, keeping '/' when keep_slash. */
static char *pct(struct arena *a, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = arena_alloc(a, strlen(s) * 3 + 1), *o = out;

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (unreserved(*p) || (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

/* attachment; filename="ascii"[; filename*=UTF-8''pct] (RFC 6266). */
static char *disposition(struct arena *a, const char *name)
{
	size_t n = strlen(name), k = 0;
	char *ascii = arena_alloc(a, n + 1);
	bool plain = true;

	/* one '_' per character that is not plain ASCII */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c >= 0x80 && c < 0xC0) {
			continue;               /* a UTF-8 continuation byte */
		} else if (c >= 0x80 || c == '"' || c == '\\' || c < 0x20 || c == 0x7F) {
			ascii[k++] = '_';
			if (c >= 0x80)
				plain = false;
		} else {
			ascii[k++] = (char)c;
		}
	}
	ascii[k] = '\0';
	if (plain)
		return arena_printf(a, "attachment; filename=\"%s\"", ascii);
	return arena_printf(a, "attachment; filename=\"%s\"; filename*=UTF-8''%s", ascii,
	                    pct(a, name, false));
}

struct download_query {
	char path[STORAGE_PATH_MAX + 1];
};

const struct vfield storage_download_query[] = {
	{ "file_path", V_CHECK, 0, 0, 0, NULL, storage_file_check,
	  VOFF(struct download_query, path) },
	VFIELDS_END
};

int storage_download_get(struct req *r)
{
	struct download_query q = { "" };
	const char *customer, *given, *name, *path = q.path;
	struct stat st;
	int root, fd;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_download_query, &q, NULL) != 0)
		return -1;
	/* absent or empty alike */
	if (path[0] == '\0')
		return storage_reply(r, STORAGE_FILE_PATH_REQUIRED);
	given = req_query(r, "file_path", NULL);      /* the 404 echoes it as sent */

	root = storage_root_open(r->cfg, customer, false);
	if (root == -ENOENT)
		return not_found(r, given);     /* nothing uploaded yet */
	if (root < 0) {
		log_kv(LOG_ERROR, "storage root unavailable", "errno=%d", -root);
		return storage_reply(r, STORAGE_FILE_UNREADABLE);
	}
	fd = storage_file_open(root, path, &st);
	close(root);
	if (fd == -ENOENT)
		return not_found(r, given);
	if (fd < 0) {
		log_kv(LOG_WARN, "download refused", "errno=%d", -fd);
		return storage_reply(r, STORAGE_FILE_UNREADABLE);
	}
	close(fd);

	name = strrchr(path, '/');
	name = name != NULL ? name + 1 : path;
	resp_header(r, "X-Accel-Redirect", arena_printf(r->arena, ACCEL_PREFIX "%s/%s",
	            pct(r->arena, customer, false), pct(r->arena, path, true)));
	resp_header(r, "Content-Disposition", disposition(r->arena, name));
	return resp_raw(r, 200, "application/octet-stream", "", 0);
}
