/* main.c - the CUnit runner for every unit suite. */
#include <stdio.h>
#include <CUnit/Basic.h>

#include "suites.h"

/* Skipped tests, listed after the run so that a skip never reads as a pass. */
#define SKIPS_MAX 32
static struct skip { const char *suite, *test, *why; } skips[SKIPS_MAX];
static size_t nskips;

static int add(const char *name, const struct test_case *tests, const char *skip_why)
{
	CU_pSuite s = CU_add_suite(name, NULL, NULL);
	if (s == NULL)
		return -1;
	for (; tests->name != NULL; tests++) {
		CU_pTest t = CU_add_test(s, tests->name, tests->fn);
		if (t == NULL)
			return -1;
		if (skip_why == NULL)
			continue;
		if (nskips == SKIPS_MAX || CU_set_test_active(t, CU_FALSE) != CUE_SUCCESS)
			return -1;
		skips[nskips++] = (struct skip){ name, tests->name, skip_why };
	}
	return 0;
}

int suite_add(const char *name, const struct test_case *tests)
{
	return add(name, tests, NULL);
}

int suite_add_skipped(const char *name, const struct test_case *tests, const char *why)
{
	return add(name, tests, why);
}

int main(void)
{
	int (*suites[])(void) = {
		suite_str, suite_base64url, suite_config, suite_router,
		suite_request, suite_validate, suite_vtables, suite_jwt, suite_basic, suite_identity, suite_aead, suite_cron,
		suite_sync_mode,
		suite_multipart, suite_doctext,
		suite_vec, suite_embed, suite_chunk, suite_bm25, suite_proximity, suite_lexical, suite_mmr,
		suite_filter, suite_index, suite_rank, suite_pass_share, suite_index_checks,
		suite_openai,
		suite_warehouse,
		suite_jdbc,
		suite_runner,
		suite_wait,
		suite_dest, suite_webhooks,
		suite_etag, suite_body_cache,
		suite_storage_paths,
		suite_tabular_infer, suite_tabular_csv, suite_tabular_json,
		suite_tabular_xlsx, suite_tabular_xls, suite_tabular_parquet,
		suite_tabular_parquet_rows,
		/* storage explorer: tables and links */
		suite_table_name, suite_table_types,
		/* the statement cache, against the test stack's MariaDB */
		suite_db,
		suite_db_classify,
	};
	unsigned failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
		if (suites[i]() != 0) {
			fprintf(stderr, "cannot register suite %zu\n", i);
			CU_cleanup_registry();
			return 1;
		}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_set_fail_on_inactive(CU_FALSE);     /* a skip is reported, not failed */
	CU_basic_run_tests();
	for (size_t i = 0; i < nskips; i++)
		printf("SKIPPED: %s: %s (%s)\n", skips[i].suite, skips[i].test, skips[i].why);
	fflush(stdout);
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed == 0 ? 0 : 1;
}
