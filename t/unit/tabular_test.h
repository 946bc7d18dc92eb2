/* tabular_test.h - helpers of the tabular suites: data into a temporary
 * file, a file through infer_file or tab_read, and the fixture folder. */
#ifndef SLUICE_TABULAR_TEST_H
#define SLUICE_TABULAR_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tabular/tabular.h"

/* Write len bytes to a new temporary file (suffix names its format);
 * path receives its name.  0 or -1. */
static inline int tt_write(char *path, size_t cap, const char *suffix, const void *data,
                           size_t len)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	if ((size_t)snprintf(path, cap, "%s/sluice-tab-XXXXXX%s", dir, suffix) >= cap)
		return -1;
	fd = mkstemps(path, (int)strlen(suffix));
	if (fd < 0)
		return -1;
	f = fdopen(fd, "wb");
	if (f == NULL) {
		close(fd);
		return -1;
	}
	if (len > 0 && fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

/* Infer the schema of len bytes of data as format f with options o (NULL:
 * defaults).  The rc; err receives the reason. */
static inline int tt_infer(enum tab_format f, const void *data, size_t len,
                           const struct tab_opts *o, struct infer_result *r, char *err,
                           size_t errlen)
{
	char path[512];
	int rc;

	memset(r, 0, sizeof *r);
	if (tt_write(path, sizeof path, f == TAB_JSON ? ".json" : ".csv", data, len) != 0)
		return -100;
	rc = infer_file(path, f, o, r, err, errlen);
	unlink(path);
	return rc;
}

static inline int tt_infer_str(enum tab_format f, const char *text, struct infer_result *r,
                               char *err, size_t errlen)
{
	return tt_infer(f, text, strlen(text), NULL, r, err, errlen);
}

/* The schema as "name:TYPE[(p,s)][?]|..." (? = nullable), for compact
 * comparisons. */
static inline const char *tt_schema(const struct infer_result *r, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->ncols && o < cap; i++) {
		const struct infer_column *c = &r->cols[i];
		int n;

		if (c->type == INFER_DECIMAL)
			n = snprintf(buf + o, cap - o, "%s%s:DECIMAL(%d,%d)%s", i ? "|" : "", c->name,
			             c->precision, c->scale, c->nullable ? "?" : "");
		else
			n = snprintf(buf + o, cap - o, "%s%s:%s%s", i ? "|" : "", c->name,
			             infer_type_name(c->type), c->nullable ? "?" : "");
		if (n < 0)
			break;
		o += (size_t)n;
	}
	return buf;
}

/* The path of a file under t/fixtures/storage. */
static inline const char *tt_fixture(const char *name, char *buf, size_t cap)
{
	const char *top = getenv("srcdir");

	if (top == NULL || top[0] == '\0')
		top = SLUICE_TOP_SRCDIR;
	snprintf(buf, cap, "%s/t/fixtures/storage/%s", top, name);
	return buf;
}

#endif
