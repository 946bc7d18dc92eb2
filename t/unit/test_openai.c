/* test_openai.c - the embeddings client without a network: request body,
 * strict response checks, key file, retry policy, and the refusals that
 * happen before any request. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "suites.h"
#include "retrieval/openai.h"
#include "util/config.h"

static int write_temp(char *path, size_t cap, const char *data)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	if ((size_t)snprintf(path, cap, "%s/sluice-key-XXXXXX", dir) >= cap)
		return -1;
	if ((fd = mkstemp(path)) < 0)
		return -1;
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		return -1;
	}
	fputs(data, f);
	return fclose(f);
}

static void test_request_body(void)
{
	const char *texts[] = { "hello", "a \"quoted\" line\nand a tab\t", "caf\xc3\xa9 / x" };
	size_t lens[] = { 5, strlen(texts[1]), strlen(texts[2]) };
	struct json_object *root, *model, *input;
	size_t len = 0;
	char *body;

	body = openai_request_body("text-embedding-3-small", texts, lens, 3, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	CU_ASSERT_EQUAL(len, strlen(body));
	root = json_tokener_parse(body);
	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	CU_ASSERT_EQUAL(json_object_object_length(root), 2);
	CU_ASSERT(json_object_object_get_ex(root, "model", &model));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(model), "text-embedding-3-small");
	CU_ASSERT(json_object_object_get_ex(root, "input", &input));
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(input), 3);
	for (size_t i = 0; i < 3; i++)
		CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(input, i)),
		                       texts[i]);
	/* plain: no pretty-printing, slashes left alone */
	CU_ASSERT_PTR_NULL(strchr(body, '\n'));
	CU_ASSERT_PTR_NOT_NULL(strstr(body, " / x"));
	json_object_put(root);
	free(body);

	/* a length, not a NUL, ends each text */
	lens[0] = 3;
	body = openai_request_body("m", texts, lens, 1, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	CU_ASSERT_STRING_EQUAL(body, "{\"model\":\"m\",\"input\":[\"hel\"]}");
	free(body);
}

static void test_response_ok(void)
{
	/* out of order on purpose: rows go by index */
	const char *body =
		"{\"object\":\"list\",\"data\":["
		"{\"object\":\"embedding\",\"index\":1,\"embedding\":[0.5,-1,2e-3]},"
		"{\"object\":\"embedding\",\"index\":0,\"embedding\":[1,0,-0.25]}],"
		"\"model\":\"m\",\"usage\":{\"prompt_tokens\":2,\"total_tokens\":2}}\n";
	float out[6] = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL_FATAL(openai_parse_response(body, strlen(body), 2, 3, out,
	                                            err, sizeof err), 0);
	CU_ASSERT_DOUBLE_EQUAL(out[0], 1.0, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(out[1], 0.0, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(out[2], -0.25, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(out[3], 0.5, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(out[4], -1.0, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(out[5], 0.002, 1e-7);
}

struct bad_case {
	const char *body;
	size_t n, dim;
	const char *msg;            /* a part of the expected reason */
};

static const struct bad_case bad[] = {
	{ "", 1, 2, "not valid JSON" },
	{ "{\"data\":[", 1, 2, "not valid JSON" },
	{ "{\"data\":[]} x", 0, 2, "JSON" },
	{ "[1,2]", 1, 2, "no \"data\" array" },
	{ "{\"error\":{\"message\":\"nope\"}}", 1, 2, "no \"data\" array" },
	{ "{\"data\":{}}", 1, 2, "no \"data\" array" },
	{ "{\"data\":[]}", 1, 2, "0 embeddings for 1 inputs" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":1,\"embedding\":[1,2]}]}",
	  1, 2, "2 embeddings for 1 inputs" },
	{ "{\"data\":[{\"embedding\":[1,2]}]}", 1, 2, "no integer index" },
	{ "{\"data\":[{\"index\":\"0\",\"embedding\":[1,2]}]}", 1, 2, "no integer index" },
	{ "{\"data\":[{\"index\":0.0,\"embedding\":[1,2]}]}", 1, 2, "no integer index" },
	{ "{\"data\":[{\"index\":1,\"embedding\":[1,2]}]}", 1, 2, "bad index 1" },
	{ "{\"data\":[{\"index\":-1,\"embedding\":[1,2]}]}", 1, 2, "bad index -1" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":0,\"embedding\":[1,2]}]}",
	  2, 2, "repeated index 0" },
	{ "{\"data\":[{\"index\":0}]}", 1, 2, "no embedding array" },
	{ "{\"data\":[{\"index\":0,\"embedding\":\"AAAAAA==\"}]}", 1, 2, "no embedding array" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,2,3]}]}", 1, 2, "has 3 values, expected 2" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1]}]}", 1, 2, "has 1 values, expected 2" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,\"2\"]}]}", 1, 2, "value 1 is not a number" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,null]}]}", 1, 2, "value 1 is not a number" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,[2]]}]}", 1, 2, "value 1 is not a number" },
	/* json-c reads NaN and Infinity even in strict mode: caught as values */
	{ "{\"data\":[{\"index\":0,\"embedding\":[NaN,1]}]}", 1, 2, "not a finite float" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,-Infinity]}]}", 1, 2, "value 1 is not a finite float" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1e300,1]}]}", 1, 2, "not a finite float" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,-1e39]}]}", 1, 2, "value 1 is not a finite float" },
	/* deeper than any real answer */
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,2],\"x\":[[[[[[[1]]]]]]]}]}", 1, 2,
	  "not valid JSON" },
	{ "{\"data\":[{\"index\":0,\"embedding\":[1,2]}],}", 1, 2, "not valid JSON" },
};

static void test_response_bad(void)
{
	float out[8];
	char err[256];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(openai_parse_response(bad[i].body, strlen(bad[i].body),
		                                      bad[i].n, bad[i].dim, out,
		                                      err, sizeof err), -1);
		if (strstr(err, bad[i].msg) == NULL) {
			fprintf(stderr, "case %zu: expected '%s' in '%s'\n", i, bad[i].msg, err);
			CU_FAIL("reason does not name the fault");
		}
	}
}

/* The body is a length, not a C string: bytes after len are not read. */
static void test_response_length(void)
{
	const char *body = "{\"data\":[{\"index\":0,\"embedding\":[3]}]}GARBAGE";
	float out[1] = { 0 };
	char err[256] = "";

	CU_ASSERT_EQUAL(openai_parse_response(body, strlen(body) - 7, 1, 1, out,
	                                      err, sizeof err), 0);
	CU_ASSERT_DOUBLE_EQUAL(out[0], 3.0, 1e-7);
	CU_ASSERT_EQUAL(openai_parse_response(body, strlen(body), 1, 1, out,
	                                      err, sizeof err), -1);
}

static void test_key_file(void)
{
	char path[256], key[64], err[256];

	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, "  sk-test-123\r\n\n"), 0);
	CU_ASSERT_EQUAL(openai_read_key(path, key, sizeof key, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(key, "sk-test-123");
	unlink(path);

	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, "\n \n"), 0);
	CU_ASSERT_EQUAL(openai_read_key(path, key, sizeof key, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty"));
	unlink(path);

	/* a key that would put a second header line on the wire */
	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, "sk-a\r\nX-Evil: 1"), 0);
	CU_ASSERT_EQUAL(openai_read_key(path, key, sizeof key, err, sizeof err), -1);
	CU_ASSERT_PTR_NULL(strstr(err, "sk-a"));
	unlink(path);

	/* too long for the buffer: refused, never cut */
	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path,
	        "sk-0123456789012345678901234567890123456789012345678901234567890123456789"), 0);
	CU_ASSERT_EQUAL(openai_read_key(path, key, sizeof key, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too long"));
	CU_ASSERT_PTR_NULL(strstr(err, "sk-0"));
	unlink(path);

	CU_ASSERT_EQUAL(openai_read_key("/nonexistent/sluice-key", key, sizeof key,
	                                err, sizeof err), -1);
}

static void test_retry_policy(void)
{
	/* status with a completed transfer (curl code 0) */
	static const struct { long status; int retry; } st[] = {
		{ 200, 0 }, { 400, 0 }, { 401, 0 }, { 403, 0 }, { 404, 0 }, { 408, 1 },
		{ 413, 0 }, { 422, 0 }, { 429, 1 }, { 500, 1 }, { 502, 1 }, { 503, 1 },
		{ 504, 1 }, { 599, 1 },
	};

	for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
		CU_ASSERT_EQUAL(openai_retryable(st[i].status, 0), st[i].retry);
	/* transport: connect refused (7), timeout (28), nothing received (52) */
	CU_ASSERT_TRUE(openai_retryable(0, 7));
	CU_ASSERT_TRUE(openai_retryable(0, 28));
	CU_ASSERT_TRUE(openai_retryable(0, 52));
	/* our own size limit (23, write error) and a malformed URL (3) */
	CU_ASSERT_FALSE(openai_retryable(0, 23));
	CU_ASSERT_FALSE(openai_retryable(0, 3));
}

static void test_backoff(void)
{
	long d;

	/* Retry-After wins, bounded */
	CU_ASSERT_EQUAL(openai_backoff_ms(1, 2000, 12345), 2000);
	CU_ASSERT_EQUAL(openai_backoff_ms(3, 0, 12345), 0);
	CU_ASSERT_EQUAL(openai_backoff_ms(1, 3600000, 1), OPENAI_RETRY_AFTER_MAX_MS);
	/* exponential, within [d/2, d] */
	for (int a = 1; a <= 10; a++) {
		long full = OPENAI_BACKOFF_BASE_MS;
		for (int i = 1; i < a; i++)
			full = full * 2 > OPENAI_BACKOFF_MAX_MS ? OPENAI_BACKOFF_MAX_MS : full * 2;
		for (unsigned r = 0; r < 2000; r += 97) {
			d = openai_backoff_ms(a, -1, r * 2654435761u);
			CU_ASSERT(d >= full / 2 && d <= full);
		}
	}
	CU_ASSERT_EQUAL(openai_backoff_ms(1, -1, 0), OPENAI_BACKOFF_BASE_MS / 2);
	CU_ASSERT(openai_backoff_ms(40, -1, ~0u) <= OPENAI_BACKOFF_MAX_MS);
}

/* Refusals before any request; and an endpoint nobody listens on fails
 * at once with max_retries = 0, saying why without the address. */
static void test_embed_refusals(void)
{
	const char *texts[] = { "x" };
	size_t lens[] = { 1 };
	struct config c;
	float out[4];
	char err[256], path[256];

	config_defaults(&c);
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 0, out, 4, err, sizeof err), 0);
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 1, out, 4, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "openai_base_url"));

	strcpy(c.openai_base_url, "http://127.0.0.1:1/");
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 1, out, 0, err, sizeof err), -1);
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 1, out, OPENAI_DIM_MAX + 1,
	                             err, sizeof err), -1);

	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, "sk-secret-unit\n"), 0);
	strcpy(c.openai_api_key_file, path);
	c.openai_max_retries = 0;
	c.openai_timeout_ms = 2000;
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 1, out, 4, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unreachable"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "after 1 attempt"));
	CU_ASSERT_PTR_NULL(strstr(err, "127.0.0.1"));
	CU_ASSERT_PTR_NULL(strstr(err, "sk-secret"));
	unlink(path);

	/* a key file that cannot be read: refused, naming neither path nor key */
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 1, out, 4, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "API key"));
	CU_ASSERT_PTR_NULL(strstr(err, path));

	/* a scheme other than http(s) is refused by the client itself */
	c.openai_api_key_file[0] = '\0';
	strcpy(c.openai_base_url, "file:///etc");
	CU_ASSERT_EQUAL(openai_embed(&c, texts, lens, 1, out, 4, err, sizeof err), -1);
}

int suite_openai(void)
{
	static const struct test_case tests[] = {
		{ "request body", test_request_body },
		{ "response accepted, placed by index", test_response_ok },
		{ "responses refused with a reason", test_response_bad },
		{ "response read to its length only", test_response_length },
		{ "API key file", test_key_file },
		{ "which failures are retried", test_retry_policy },
		{ "backoff and Retry-After", test_backoff },
		{ "refusals and an unreachable endpoint", test_embed_refusals },
		{ NULL, NULL },
	};

	return suite_add("openai", tests);
}
