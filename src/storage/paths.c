/* paths.c - paths inside a customer's storage area.
 *
 * A path from the API is checked as text first (relative, no "." or ".."
 * segment, no hidden segment, no backslash or control character, UTF-8,
 * bounded), then opened one segment at a time with openat(O_NOFOLLOW) from
 * the customer's root: a symlink anywhere on the way is refused, so nothing
 * reached through these functions can lie outside the root, whatever has
 * been planted in it. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "storage/storage.h"
#include "util/config.h"
#include "util/str.h"

static bool bad_char(unsigned char c)
{
	return c < 0x20 || c == 0x7F || c == '\\';
}

int storage_path_check(const char *in, bool allow_empty,
                       char out[STORAGE_PATH_MAX + 1])
{
	size_t n, depth = 0;
	const char *seg;

	out[0] = '\0';
	if (in == NULL)
		in = "";
	n = strlen(in);
	if (n > STORAGE_PATH_MAX)
		return SPATH_TOO_LONG;
	if (n > 0 && in[0] == '/')
		return SPATH_ABSOLUTE;
	if (n > 0 && in[n - 1] == '/')
		n--;                         /* "a/b/" is "a/b"; "/" stays absolute */
	if (n == 0)
		return allow_empty ? SPATH_OK : SPATH_EMPTY;
	for (size_t i = 0; i < n; i++)
		if (bad_char((unsigned char)in[i]))
			return SPATH_BAD_CHAR;
	if (!str_utf8_valid(in, n))
		return SPATH_BAD_UTF8;
	seg = in;
	for (;;) {
		const char *end = memchr(seg, '/', (size_t)(in + n - seg));
		size_t len = end != NULL ? (size_t)(end - seg) : (size_t)(in + n - seg);

		if (len == 0)
			return SPATH_EMPTY_SEGMENT;
		if (seg[0] == '.') {
			if (len == 1 || (len == 2 && seg[1] == '.'))
				return SPATH_DOTDOT;
			return SPATH_HIDDEN;
		}
		if (len > STORAGE_NAME_MAX)
			return SPATH_TOO_LONG;
		if (++depth > STORAGE_DEPTH_MAX)
			return SPATH_TOO_DEEP;
		if (end == NULL)
			break;
		seg = end + 1;
	}
	memcpy(out, in, n);
	out[n] = '\0';
	return SPATH_OK;
}

const char *storage_path_strerror(int err)
{
	switch (err) {
	case SPATH_OK:
		return "is valid";
	case SPATH_EMPTY:
		return "is empty";
	case SPATH_ABSOLUTE:
		return "must be relative to the storage area, not absolute";
	case SPATH_DOTDOT:
		return "must not contain '.' or '..' segments";
	case SPATH_HIDDEN:
		return "must not name hidden entries (a segment starting with '.')";
	case SPATH_EMPTY_SEGMENT:
		return "must not contain empty segments ('//')";
	case SPATH_BAD_CHAR:
		return "must not contain backslashes or control characters";
	case SPATH_BAD_UTF8:
		return "must be UTF-8";
	case SPATH_TOO_LONG:
		return "is too long (1024 bytes in all, 255 per segment)";
	case SPATH_TOO_DEEP:
		return "is too deep (32 segments at most)";
	default:
		return "is invalid";
	}
}

/* A path sent as a query value, checked into out.  0, or -1 with why. */
static int path_value(struct json_object *v, bool allow_empty, char *out,
                      char *msg, size_t len)
{
	int rc;

	if (!json_object_is_type(v, json_type_string)) {
		snprintf(msg, len, "must be a string");
		return -1;
	}
	if ((rc = storage_path_check(json_object_get_string(v), allow_empty, out)) != SPATH_OK) {
		snprintf(msg, len, "%s", storage_path_strerror(rc));
		return -1;
	}
	return 0;
}

int storage_folder_check(struct json_object *v, void *out, char *msg, size_t len)
{
	struct storage_folder *f = out;

	if (path_value(v, true, f->path, msg, len) != 0)
		return -1;
	f->given = true;
	return 0;
}

int storage_file_check(struct json_object *v, void *out, char *msg, size_t len)
{
	char *path = out;

	path[0] = '\0';
	if (json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 0)
		return 0;
	return path_value(v, false, path, msg, len);
}

int storage_file_name_clean(const char *sent, char out[STORAGE_NAME_MAX + 1],
                            const char **why)
{
	const char *base = sent != NULL ? sent : "";
	size_t n;

	out[0] = '\0';
	/* Browsers on some systems send a whole path: keep the last part. */
	for (const char *c = base; *c != '\0'; c++)
		if (*c == '/' || *c == '\\')
			base = c + 1;
	n = strlen(base);
	if (n == 0) {
		*why = "the file name is empty";
		return -1;
	}
	if (n > STORAGE_NAME_MAX) {
		*why = "the file name is longer than 255 bytes";
		return -1;
	}
	if (base[0] == '.') {
		*why = "file names starting with '.' are not stored";
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (bad_char((unsigned char)base[i])) {
			*why = "the file name contains control characters";
			return -1;
		}
	if (!str_utf8_valid(base, n)) {
		*why = "the file name is not UTF-8";
		return -1;
	}
	memcpy(out, base, n + 1);
	return 0;
}

/* openat a directory without following a symlink, making it when asked. */
static int dir_step(int fd, const char *name, bool create, bool *made)
{
	int d;

	*made = false;
	d = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d >= 0 || errno != ENOENT || !create)
		return d >= 0 ? d : -errno;
	if (mkdirat(fd, name, 0750) == 0)
		*made = true;
	else if (errno != EEXIST)
		return -errno;
	d = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return d >= 0 ? d : -errno;
}

int storage_root_open(const struct config *cfg, const char *customer_id, bool create)
{
	int top, cust, root;
	bool made;

	/* storage_root is the operator's: it may be reached through links. */
	top = open(cfg->storage_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0 && errno == ENOENT && create && mkdir(cfg->storage_root, 0750) == 0)
		top = open(cfg->storage_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return -errno;
	cust = dir_step(top, "customers", create, &made);
	close(top);
	if (cust < 0)
		return cust;
	root = dir_step(cust, customer_id, create, &made);
	close(cust);
	return root;
}

int storage_dir_open(int rootfd, const char *rel, struct storage_made_dirs *made)
{
	char seg[STORAGE_NAME_MAX + 1];
	const char *p = rel;
	int fd;

	if (made != NULL)
		made->n = 0;
	fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (*p != '\0') {
		const char *end = strchr(p, '/');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		bool did = false;
		int next;

		if (len == 0 || len > STORAGE_NAME_MAX) {
			close(fd);
			return -EINVAL;
		}
		memcpy(seg, p, len);
		seg[len] = '\0';
		next = dir_step(fd, seg, made != NULL, &did);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
		if (did && made != NULL && made->n < STORAGE_DEPTH_MAX) {
			size_t upto = (size_t)(p - rel) + len;

			memcpy(made->rel[made->n], rel, upto);
			made->rel[made->n][upto] = '\0';
			made->n++;
		}
		p = end != NULL ? end + 1 : p + len;
	}
	return fd;
}

void storage_dir_unmake(int rootfd, const struct storage_made_dirs *made)
{
	for (int i = made->n - 1; i >= 0; i--)
		if (unlinkat(rootfd, made->rel[i], AT_REMOVEDIR) != 0)
			break;                  /* not empty (another upload): keep the rest */
}

int storage_file_open(int rootfd, const char *rel, struct stat *st)
{
	char folder[STORAGE_PATH_MAX + 1];
	const char *slash = strrchr(rel, '/');
	const char *name = slash != NULL ? slash + 1 : rel;
	int dfd, fd, e;

	if (slash != NULL) {
		memcpy(folder, rel, (size_t)(slash - rel));
		folder[slash - rel] = '\0';
	} else {
		folder[0] = '\0';
	}
	dfd = storage_dir_open(rootfd, folder, NULL);
	if (dfd < 0)
		return dfd == -ELOOP || dfd == -ENOTDIR ? -ENOENT : dfd;
	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) != 0) {
		e = errno;
		close(dfd);
		return e == ENOTDIR || e == ELOOP ? -ENOENT : -e;
	}
	if (S_ISLNK(st->st_mode) || S_ISDIR(st->st_mode)) {
		close(dfd);
		return -ENOENT;
	}
	if (!S_ISREG(st->st_mode)) {
		close(dfd);
		return -EINVAL;
	}
	/* O_NONBLOCK: should it have become a FIFO since, open must not hang. */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	e = errno;
	close(dfd);
	if (fd < 0)
		return e == ELOOP || e == ENOENT ? -ENOENT : -e;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

void storage_fd_path(int fd, char *buf, size_t cap)
{
	snprintf(buf, cap, "/proc/self/fd/%d", fd);
}
