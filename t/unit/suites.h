/* suites.h - every CUnit suite registers itself through one function. */
#ifndef SLUICE_TEST_SUITES_H
#define SLUICE_TEST_SUITES_H

#include <CUnit/CUnit.h>

/* Each adds one suite with its tests; returns 0 or -1. */
int suite_jwt(void);
int suite_base64url(void);
int suite_basic(void);
int suite_identity(void);
int suite_router(void);
int suite_config(void);
int suite_request(void);
int suite_validate(void);
int suite_vtables(void);
int suite_str(void);
int suite_etag(void);
int suite_body_cache(void);
int suite_aead(void);
int suite_cron(void);
int suite_sync_mode(void);
int suite_multipart(void);
int suite_doctext(void);
int suite_vec(void);
int suite_embed(void);
int suite_chunk(void);
int suite_bm25(void);
int suite_proximity(void);
int suite_lexical(void);
int suite_mmr(void);
int suite_filter(void);
int suite_index(void);
int suite_rank(void);
int suite_pass_share(void);
int suite_index_checks(void);
int suite_openai(void);
int suite_warehouse(void);
int suite_jdbc(void);
int suite_runner(void);
/* long polls off the workers: waiter redirects, pool shares */
int suite_wait(void);
int suite_dest(void);
int suite_webhooks(void);
/* storage explorer: tables and links */
int suite_table_name(void);
int suite_table_types(void);
int suite_db(void);
int suite_db_classify(void);
int suite_storage_paths(void);
/* tabular: CSV/JSON readers and inference */
int suite_tabular_infer(void);
int suite_tabular_csv(void);
int suite_tabular_json(void);
/* the spreadsheet and Parquet readers */
int suite_tabular_xlsx(void);
int suite_tabular_xls(void);
int suite_tabular_parquet(void);
int suite_tabular_parquet_rows(void);

/* Add a suite and its NULL-terminated test list in one go. */
struct test_case { const char *name; CU_TestFunc fn; };
int suite_add(const char *name, const struct test_case *tests);
/* As suite_add, every test reported skipped (CUnit "inactive") for why. */
int suite_add_skipped(const char *name, const struct test_case *tests, const char *why);

#endif
