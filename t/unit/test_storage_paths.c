/* test_storage_paths.c - storage area paths: the text check of folder_path /
 * file_path, upload file names, and opening under a root without following
 * symlinks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "suites.h"
#include "storage/storage.h"

struct path_case {
	const char *in;
	bool allow_empty;
	int rc;
	const char *want;                 /* canonical form when rc == 0 */
};

static char long_seg[300], long_path[1100], max_path[1030], deep[200], deep_ok[200];

/* n segments of len bytes each (the first one first_extra longer), joined by '/' */
static void segments(char *out, int n, int len, int first_extra, char c)
{
	size_t k = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0)
			out[k++] = '/';
		for (int j = 0; j < len + (i == 0 ? first_extra : 0); j++)
			out[k++] = c;
	}
	out[k] = '\0';
}

static void make_long_inputs(void)
{
	memset(long_seg, 'a', 256);               /* 256: one over the segment limit */
	long_seg[256] = '\0';
	segments(max_path, 5, 204, 0, 'b');       /* 5 * 204 + 4 = 1024 bytes */
	segments(long_path, 5, 204, 1, 'a');      /* 1025 */
	segments(deep, 33, 1, 0, 'x');            /* 33 segments */
	segments(deep_ok, 32, 1, 0, 'x');         /* 32 */
}

static const struct path_case cases[] = {
	{ "", true, SPATH_OK, "" },
	{ "", false, SPATH_EMPTY, NULL },
	{ NULL, true, SPATH_OK, "" },
	{ "a", false, SPATH_OK, "a" },
	{ "a/b/c.csv", false, SPATH_OK, "a/b/c.csv" },
	{ "a/b/", true, SPATH_OK, "a/b" },               /* one trailing slash dropped */
	{ "sales 2026/Q1 (final).csv", false, SPATH_OK, "sales 2026/Q1 (final).csv" },
	{ "caf\xc3\xa9/na\xc3\xafve.csv", false, SPATH_OK, "caf\xc3\xa9/na\xc3\xafve.csv" },
	{ "a..b/c", false, SPATH_OK, "a..b/c" },         /* dots inside a name are fine */
	{ "%2e%2e/x", false, SPATH_OK, "%2e%2e/x" },     /* already decoded once: a name */
	{ "/", true, SPATH_ABSOLUTE, NULL },
	{ "/etc/passwd", false, SPATH_ABSOLUTE, NULL },
	{ "//etc", false, SPATH_ABSOLUTE, NULL },
	{ "..", false, SPATH_DOTDOT, NULL },
	{ "../x", false, SPATH_DOTDOT, NULL },
	{ "a/../../x", false, SPATH_DOTDOT, NULL },
	{ "a/..", false, SPATH_DOTDOT, NULL },
	{ "a/../", true, SPATH_DOTDOT, NULL },
	{ ".", true, SPATH_DOTDOT, NULL },
	{ "./a", false, SPATH_DOTDOT, NULL },
	{ "a/./b", false, SPATH_DOTDOT, NULL },
	{ ".hidden", false, SPATH_HIDDEN, NULL },
	{ "a/.sluice-partial-0011", false, SPATH_HIDDEN, NULL },
	{ "a//b", false, SPATH_EMPTY_SEGMENT, NULL },
	{ "a//", true, SPATH_EMPTY_SEGMENT, NULL },
	{ "a\\..\\b", false, SPATH_BAD_CHAR, NULL },
	{ "..\\x", false, SPATH_BAD_CHAR, NULL },
	{ "a\nb", false, SPATH_BAD_CHAR, NULL },
	{ "a\tb", false, SPATH_BAD_CHAR, NULL },
	{ "a\x7f", false, SPATH_BAD_CHAR, NULL },
	{ "caf\xe9", false, SPATH_BAD_UTF8, NULL },      /* Latin-1 */
	{ "\xc0\xaf..", false, SPATH_BAD_UTF8, NULL },   /* overlong '/' */
	{ "\xed\xa0\x80", false, SPATH_BAD_UTF8, NULL }, /* surrogate */
	{ "\xe2\x82", false, SPATH_BAD_UTF8, NULL },     /* truncated */
	{ NULL, false, 0, NULL },
};

static void test_path_check(void)
{
	char out[STORAGE_PATH_MAX + 1];

	for (const struct path_case *c = cases; c->in != NULL || c->rc == SPATH_OK; c++) {
		int rc;

		if (c->in == NULL && c->want == NULL)
			break;
		rc = storage_path_check(c->in, c->allow_empty, out);
		if (rc != c->rc)
			fprintf(stderr, "\npath '%s': rc %d, want %d\n", c->in ? c->in : "(null)",
			        rc, c->rc);
		CU_ASSERT_EQUAL(rc, c->rc);
		if (c->rc == SPATH_OK && rc == SPATH_OK) {
			CU_ASSERT_STRING_EQUAL(out, c->want);
		}
		if (rc != SPATH_OK) {
			CU_ASSERT_STRING_EQUAL(out, "");
		}
	}
}

static void test_path_bounds(void)
{
	char out[STORAGE_PATH_MAX + 1], seg255[300];

	make_long_inputs();
	memset(seg255, 'a', 255);
	seg255[255] = '\0';
	CU_ASSERT_EQUAL(storage_path_check(seg255, false, out), SPATH_OK);     /* max */
	CU_ASSERT_EQUAL(storage_path_check(long_seg, false, out), SPATH_TOO_LONG); /* max+1 */
	CU_ASSERT_EQUAL(strlen(max_path), 1024);
	CU_ASSERT_EQUAL(storage_path_check(max_path, false, out), SPATH_OK);
	CU_ASSERT_EQUAL(strlen(long_path), 1025);
	CU_ASSERT_EQUAL(storage_path_check(long_path, false, out), SPATH_TOO_LONG);
	CU_ASSERT_EQUAL(storage_path_check(deep_ok, false, out), SPATH_OK);    /* 32 */
	CU_ASSERT_EQUAL(storage_path_check(deep, false, out), SPATH_TOO_DEEP); /* 33 */
	CU_ASSERT_STRING_EQUAL(storage_path_strerror(SPATH_DOTDOT),
	                       "must not contain '.' or '..' segments");
}

static void test_file_name(void)
{
	static const struct { const char *in; int rc; const char *want; } names[] = {
		{ "data.csv", 0, "data.csv" },
		{ "C:\\Users\\me\\data.csv", 0, "data.csv" },  /* a browser's whole path */
		{ "dir/sub/x.json", 0, "x.json" },
		{ "../../etc/x.csv", 0, "x.csv" },
		{ "Umsatz M\xc3\xa4rz.xlsx", 0, "Umsatz M\xc3\xa4rz.xlsx" },
		{ "", -1, NULL },
		{ "dir/", -1, NULL },
		{ "..", -1, NULL },
		{ ".env.csv", -1, NULL },
		{ "a\x01.csv", -1, NULL },
		{ "caf\xe9.csv", -1, NULL },
		{ NULL, 0, NULL },
	};
	char out[STORAGE_NAME_MAX + 1], big[300];
	const char *why;

	for (size_t i = 0; names[i].in != NULL; i++) {
		why = NULL;
		CU_ASSERT_EQUAL(storage_file_name_clean(names[i].in, out, &why), names[i].rc);
		if (names[i].rc == 0) {
			CU_ASSERT_STRING_EQUAL(out, names[i].want);
		} else {
			CU_ASSERT_PTR_NOT_NULL(why);
		}
	}
	memset(big, 'n', 251);
	memcpy(big + 251, ".csv", 5);              /* 255 bytes */
	CU_ASSERT_EQUAL(storage_file_name_clean(big, out, &why), 0);
	memset(big, 'n', 252);
	memcpy(big + 252, ".csv", 5);              /* 256 bytes */
	CU_ASSERT_EQUAL(storage_file_name_clean(big, out, &why), -1);
}

/* A root with a folder, a file, a FIFO and symlinks out of it. */
static void test_open_no_symlinks(void)
{
	char tmpl[] = "/tmp/sluice-paths-XXXXXX", p[512];
	struct storage_made_dirs made;
	struct stat st;
	char *top = mkdtemp(tmpl);
	int root, fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(top);
	snprintf(p, sizeof p, "%s/root", top);
	CU_ASSERT_EQUAL_FATAL(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/outside.csv", top);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "secret\n", 7), 7);
	close(fd);
	snprintf(p, sizeof p, "%s/root", top);
	root = open(p, O_RDONLY | O_DIRECTORY);
	CU_ASSERT_TRUE_FATAL(root >= 0);

	/* folders made on demand, and recorded */
	fd = storage_dir_open(root, "a/b/c", &made);
	CU_ASSERT_TRUE(fd >= 0);
	CU_ASSERT_EQUAL(made.n, 3);
	CU_ASSERT_STRING_EQUAL(made.rel[0], "a");
	CU_ASSERT_STRING_EQUAL(made.rel[2], "a/b/c");
	close(fd);
	fd = storage_dir_open(root, "a/b", &made);
	CU_ASSERT_TRUE(fd >= 0);
	CU_ASSERT_EQUAL(made.n, 0);                 /* nothing new */
	close(fd);
	fd = openat(root, "a/b/in.csv", O_WRONLY | O_CREAT, 0644);
	CU_ASSERT_TRUE(fd >= 0);
	close(fd);

	CU_ASSERT_EQUAL(symlinkat("../outside.csv", root, "link.csv"), 0);
	CU_ASSERT_EQUAL(symlinkat("..", root, "up"), 0);
	CU_ASSERT_EQUAL(symlinkat("a", root, "alias"), 0);          /* inside, still refused */
	CU_ASSERT_EQUAL(mkfifoat(root, "pipe.csv", 0644), 0);

	fd = storage_file_open(root, "a/b/in.csv", &st);
	CU_ASSERT_TRUE(fd >= 0);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL(storage_file_open(root, "link.csv", &st), -ENOENT);
	CU_ASSERT_EQUAL(storage_file_open(root, "up/outside.csv", &st), -ENOENT);
	CU_ASSERT_EQUAL(storage_file_open(root, "alias/b/in.csv", &st), -ENOENT);
	CU_ASSERT_EQUAL(storage_file_open(root, "a/b", &st), -ENOENT);     /* a folder */
	CU_ASSERT_EQUAL(storage_file_open(root, "missing.csv", &st), -ENOENT);
	CU_ASSERT_EQUAL(storage_file_open(root, "a/b/in.csv/x", &st), -ENOENT);
	CU_ASSERT_EQUAL(storage_file_open(root, "pipe.csv", &st), -EINVAL); /* not readable as a file */
	CU_ASSERT_TRUE(storage_dir_open(root, "up", NULL) < 0);
	CU_ASSERT_TRUE(storage_dir_open(root, "up/x", &made) < 0);          /* no mkdir through it */
	CU_ASSERT_TRUE(storage_dir_open(root, "link.csv", NULL) < 0);

	/* unmake removes only what is empty */
	fd = storage_dir_open(root, "x/y", &made);
	CU_ASSERT_TRUE(fd >= 0);
	close(fd);
	storage_dir_unmake(root, &made);
	CU_ASSERT_EQUAL(faccessat(root, "x", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	made.n = 1;
	snprintf(made.rel[0], sizeof made.rel[0], "a");
	storage_dir_unmake(root, &made);
	CU_ASSERT_EQUAL(faccessat(root, "a/b/in.csv", F_OK, 0), 0);

	close(root);
	snprintf(p, sizeof p, "rm -rf '%s'", top);
	CU_ASSERT_EQUAL(system(p), 0);
}

/* folder_path and file_path as rows of a validation table: what a query
 * value becomes, and the message a refusal carries. */
struct path_query {
	struct storage_folder folder;
	char file[STORAGE_PATH_MAX + 1];
};

static const struct vfield path_fields[] = {
	STORAGE_FOLDER_ROW(struct path_query, folder),
	{ "file_path", V_CHECK, 0, 0, 0, NULL, storage_file_check,
	  VOFF(struct path_query, file) },
	VFIELDS_END
};

static int check_paths(const char *json, struct path_query *q, struct verror *e)
{
	struct json_object *o = json_tokener_parse(json);
	int rc;

	memset(q, 0, sizeof *q);
	rc = validate_json(path_fields, o, q, NULL, e);
	json_object_put(o);
	return rc;
}

static void test_path_rows(void)
{
	struct path_query q;
	struct verror e;

	CU_ASSERT_EQUAL(check_paths("{}", &q, &e), 0);
	CU_ASSERT_FALSE(q.folder.given);
	CU_ASSERT_EQUAL(check_paths("{\"folder_path\": \"\", \"file_path\": \"\"}", &q, &e), 0);
	CU_ASSERT_TRUE(q.folder.given);                   /* the root, asked for */
	CU_ASSERT_STRING_EQUAL(q.folder.path, "");
	CU_ASSERT_STRING_EQUAL(q.file, "");               /* empty: the caller's "required" */
	CU_ASSERT_EQUAL(check_paths("{\"folder_path\": \"a/b/\", \"file_path\": \"a/x.csv\"}",
	                            &q, &e), 0);
	CU_ASSERT_STRING_EQUAL(q.folder.path, "a/b");
	CU_ASSERT_STRING_EQUAL(q.file, "a/x.csv");

	CU_ASSERT_EQUAL(check_paths("{\"folder_path\": \"../a\"}", &q, &e), -1);
	CU_ASSERT_EQUAL(e.code, VERR_INVALID);
	CU_ASSERT_STRING_EQUAL(e.field, "folder_path");
	CU_ASSERT_STRING_EQUAL(e.message, "folder_path must not contain '.' or '..' segments");
	CU_ASSERT_FALSE(q.folder.given);
	CU_ASSERT_EQUAL(check_paths("{\"file_path\": \"/etc/passwd\"}", &q, &e), -1);
	CU_ASSERT_STRING_EQUAL(e.message,
	                       "file_path must be relative to the storage area, not absolute");
	CU_ASSERT_EQUAL(check_paths("{\"file_path\": 5}", &q, &e), -1);
	CU_ASSERT_STRING_EQUAL(e.message, "file_path must be a string");
}

int suite_storage_paths(void)
{
	static const struct test_case tests[] = {
		{ "path check table", test_path_check },
		{ "path bounds at max and max + 1", test_path_bounds },
		{ "upload file names", test_file_name },
		{ "open under a root, no symlinks", test_open_no_symlinks },
		{ "folder_path and file_path table rows", test_path_rows },
		{ NULL, NULL },
	};

	return suite_add("storage_paths", tests);
}
