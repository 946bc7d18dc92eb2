/* body_cache.c - rendered answers kept as files and sent by nginx.
 *
 * Races, and why they are harmless:
 * - Two workers render the same name at once: each writes its own
 *   temporary file and renames it over the other's; the bytes are equal.
 * - A worker stats a file that another is about to remove: removal waits
 *   until a file is BODY_CACHE_KEEP_S old, and a worker that sends a file
 *   older than half that first sets its time to now, so nginx opens it
 *   well within the time it is kept.
 * - A crash mid-write leaves a temporary file (a dot name nothing asks
 *   for), removed like an old one; the data is on disk before the rename,
 *   so a name never holds a short file after a power loss. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "http/body_cache.h"
#include "http/request.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/log.h"
#include "util/proc.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

static void hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* A string with its length first, so that no two sequences of strings
 * digest alike. */
static void digest_str(struct body_digest *d, const char *s)
{
	size_t n = strlen(s);

	if (d->md == NULL)
		return;
	body_digest_ll(d, (long long)n);
	if (EVP_DigestUpdate(d->md, s, n) != 1) {
		EVP_MD_CTX_free(d->md);
		d->md = NULL;
	}
}

int body_digest_init(struct body_digest *d, const char *format,
                     const char *owner)
{
	d->md = EVP_MD_CTX_new();
	if (d->md == NULL || EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(d->md);
		d->md = NULL;
		return -1;
	}
	digest_str(d, PACKAGE_VERSION);
	digest_str(d, format);
	digest_str(d, owner);
	return d->md != NULL ? 0 : -1;
}

void body_digest_ll(struct body_digest *d, long long v)
{
	unsigned char b[8];

	if (d->md == NULL)
		return;
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((unsigned long long)v >> (8 * i));
	if (EVP_DigestUpdate(d->md, b, sizeof b) != 1) {
		EVP_MD_CTX_free(d->md);
		d->md = NULL;
	}
}

void body_digest_key(struct body_digest *d, const char *owner,
                     struct body_key *k)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	memset(k, 0, sizeof *k);
	if (EVP_Digest(owner, strlen(owner), md, &len, EVP_sha256(), NULL) == 1)
		hex(md, 8, k->dir);
	if (d->md != NULL && EVP_DigestFinal_ex(d->md, md, &len) == 1 &&
	    k->dir[0] != '\0') {
		hex(md, 16, k->name);
		snprintf(k->etag, sizeof k->etag, "\"%s\"", k->name);
	}
	EVP_MD_CTX_free(d->md);
	d->md = NULL;
}

/* <render_cache_dir>/<dir>[/<file>] into the arena; NULL when too long. */
static const char *cache_path(struct req *r, const struct body_key *k,
                              const char *file)
{
	char root[CONFIG_PATH_MAX];

	if (config_render_cache_dir(r->cfg, root, sizeof root) != 0)
		return NULL;
	return file == NULL ? arena_printf(r->arena, "%s/%s", root, k->dir)
	                    : arena_printf(r->arena, "%s/%s/%s", root, k->dir, file);
}

static int usable(struct req *r, const struct body_key *k)
{
	return r->cfg->render_cache && k->name[0] != '\0';
}

int body_cache_send(struct req *r, const struct body_key *k,
                    const char *content_type)
{
	const char *path;
	struct stat st;

	if (k->name[0] == '\0')
		return 0;
	if (etag_none_match(req_header(r, "If-None-Match"), k->etag)) {
		resp_header(r, "ETag", k->etag);
		return resp_empty(r, 304) == 0 ? 1 : -1;
	}
	if (!usable(r, k) || (path = cache_path(r, k, k->name)) == NULL ||
	    stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	if (st.st_mtime < time(NULL) - BODY_CACHE_KEEP_S / 2)
		utimensat(AT_FDCWD, path, NULL, 0);   /* in use: keep it */
	resp_header(r, "ETag", k->etag);
	resp_header(r, "X-Accel-Redirect", arena_printf(r->arena, BODY_CACHE_URI
	            "%s/%s", k->dir, k->name));
	return resp_raw(r, 200, content_type, "", 0) == 0 ? 1 : -1;
}

/* Remove the owner's files (and temporary files) not used for
 * BODY_CACHE_KEEP_S, but keep. */
static void prune(const char *dir, const char *keep)
{
	time_t old = time(NULL) - BODY_CACHE_KEEP_S;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	if ((d = opendir(dir)) == NULL)
		return;
	fd = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, keep) == 0)
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_mtime < old)
			unlinkat(fd, e->d_name, 0);
	}
	closedir(d);
}

/* 0 stored, -1 not (errno set). */
static int store(struct req *r, const struct body_key *k, const char *body,
                 size_t len)
{
	const char *dir = cache_path(r, k, NULL), *path, *tmp;
	char root[CONFIG_PATH_MAX];
	int fd, rc = -1;

	if (dir == NULL || config_render_cache_dir(r->cfg, root, sizeof root) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	path = cache_path(r, k, k->name);
	tmp = arena_printf(r->arena, "%s/.%s.%ld", dir, k->name, (long)getpid());
	/* Made like the storage area's folders, so nginx's group may read. */
	if ((mkdir(root, 0750) != 0 && errno != EEXIST) ||
	    (mkdir(dir, 0750) != 0 && errno != EEXIST))
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -1;
	if (proc_write_all(fd, body, len) == 0 && fdatasync(fd) == 0)
		rc = 0;
	if (close(fd) != 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0) {
		int e = errno;

		unlink(tmp);
		errno = e;
		return -1;
	}
	prune(dir, k->name);
	return 0;
}

int body_cache_reply(struct req *r, const struct body_key *k,
                     const char *content_type, const char *body, size_t len)
{
	if (usable(r, k) && store(r, k, body, len) != 0)
		log_kv(LOG_WARN, "render cache: not stored", "error=%s",
		       LOG_Q(strerror(errno)));
	if (k->name[0] == '\0')
		return resp_raw_etag(r, content_type, body, len);
	resp_header(r, "ETag", k->etag);
	if (etag_none_match(req_header(r, "If-None-Match"), k->etag))
		return resp_empty(r, 304);
	return resp_raw(r, 200, content_type, body, len);
}
