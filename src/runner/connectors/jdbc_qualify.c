/* jdbc_qualify.c - the qualify task of a jdbc incremental_with_qualify job:
 * one row per primary key in the destination, the latest by the
 * incremental column.
 *
 * After an incremental run the extract_load task has left the new and
 * changed rows in the destination's increment table (jdbc.h), the bookmark
 * committed with them.  This task applies them in one transaction that
 * touches only the keys they carry:
 *   1. increment rows older than the destination's row of their key go
 *      (rows loaded again after the bookmark was moved back);
 *   2. of the rows left, one per key stays: the latest, and of equals the
 *      last loaded;
 *   3. the destination's rows of those keys are deleted;
 *   4. the increment's rows are inserted.
 * Failed or killed anywhere before the commit, the destination is as it
 * was and the increment waits for the next run's qualify.  The increment
 * table is dropped after the commit; should that not happen, applying it
 * again changes nothing (step 1 keeps a row equal to the destination's, and
 * steps 3 and 4 replace that row by itself).
 *
 * Steps 1 and 3 find the keys through an index on them, built the first
 * time, so the work follows the increment's size, not the destination's.
 *
 * After a full load (first run, reset-state) there is no increment: the
 * whole destination is rebuilt into staging with ROW_NUMBER() and swapped
 * in, at about the cost of the load itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/connectors/jdbc.h"
#include "util/config.h"
#include "util/str.h"
#include "util/test_hooks.h"

#define QUALIFY_RN_COLUMN "_sluice_rn"
#define QUALIFY_INDEX_PREFIX "_sluice_qk_"
#define QUALIFY_INDEX_BYTES 3072        /* InnoDB's longest index key */
#define QUALIFY_INDEX_PARTS 16          /* MariaDB's most columns in one */
#define QUALIFY_PREFIX_CHARS 64         /* of a long text key, in the index */

/* The job's keys, quoted, as the SQL of the task needs them. */
struct qualify {
	struct jdbc_dest d;
	char qs[JDBC_QNAME_MAX], qt[JDBC_QNAME_MAX], qinc[JDBC_QNAME_MAX];
	size_t nk;
	char **key;                     /* quoted key columns */
	char **type;                    /* their COLUMN_TYPE in the destination */
	char *partition;                /* "`a`, `b`" */
	char *match;                    /* "d.`a` <=> i.`a` AND ..." */
	const char *fail;               /* key_type's error */
};

/* The increment's columns but the sequence, quoted: "`a`, `b`". */
struct colbuf {
	char *s;
	size_t len, cap;
	const char *fail;
};

static void qualify_free(struct qualify *q)
{
	for (size_t i = 0; i < q->nk; i++) {
		if (q->key != NULL)
			free(q->key[i]);
		if (q->type != NULL)
			free(q->type[i]);
	}
	free(q->key);
	free(q->type);
	free(q->partition);
	free(q->match);
}

static int qualify_init(const struct job_spec *job, struct task_env *env,
                        struct qualify *q, char *err, size_t errlen)
{
	size_t plen = 0, mlen = 0, pcap, mcap;

	q->nk = job->primary_keys != NULL && json_object_is_type(job->primary_keys,
	        json_type_array) ? json_object_array_length(job->primary_keys) : 0;
	if (q->nk == 0 || job->incremental_column == NULL) {
		str_errf(err, errlen, "qualify needs primary_keys and an incremental column");
		return -1;
	}
	if (jdbc_dest_names(job, env, &q->d, err, errlen) != 0)
		return -1;
	if (wh_quote(q->d.schema, q->qs, sizeof q->qs) != 0 ||
	    wh_quote(q->d.table, q->qt, sizeof q->qt) != 0 ||
	    wh_quote(job->incremental_column, q->qinc, sizeof q->qinc) != 0) {
		str_errf(err, errlen, "invalid column or table name");
		return -1;
	}
	pcap = q->nk * (JDBC_QNAME_MAX + 2) + 1;
	mcap = q->nk * (2 * JDBC_QNAME_MAX + 16) + 1;
	q->key = calloc(q->nk, sizeof *q->key);
	q->type = calloc(q->nk, sizeof *q->type);
	q->partition = malloc(pcap);
	q->match = malloc(mcap);
	if (q->key == NULL || q->type == NULL || q->partition == NULL || q->match == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < q->nk; i++) {
		const char *k = json_object_get_string(json_object_array_get_idx(job->primary_keys, i));
		char qk[JDBC_QNAME_MAX];

		if (k == NULL || wh_quote(k, qk, sizeof qk) != 0) {
			str_errf(err, errlen, "primary key '%.64s' is not a valid column name",
			         k != NULL ? k : "");
			return -1;
		}
		if ((q->key[i] = strdup(qk)) == NULL) {
			str_errf(err, errlen, "out of memory");
			return -1;
		}
		plen += (size_t)snprintf(q->partition + plen, pcap - plen, "%s%s",
		                         i > 0 ? ", " : "", qk);
		mlen += (size_t)snprintf(q->match + mlen, mcap - mlen, "%sd.%s <=> i.%s",
		                         i > 0 ? " AND " : "", qk, qk);
	}
	return 0;
}

/* wh_table_columns of the destination: each key's type. */
static void key_type(void *arg, const char *name, const char *type, bool nullable,
                     const char *comment)
{
	struct qualify *q = arg;
	char qn[JDBC_QNAME_MAX];

	(void)nullable;
	(void)comment;
	if (wh_quote(name, qn, sizeof qn) != 0)
		return;
	for (size_t i = 0; i < q->nk; i++)
		if (q->type[i] == NULL && strcasecmp(q->key[i], qn) == 0 &&
		    (q->type[i] = strdup(type)) == NULL)
			q->fail = "out of memory";
}

/* One key's part of the index ("`k`" or "`k`(64)") and its bytes at most. */
static size_t index_part(const char *key, const char *type, char *out, size_t cap)
{
	static const char *const sized[] = { "varchar(", "char(", "varbinary(", "binary(" };

	if (strstr(type, "text") != NULL || strstr(type, "blob") != NULL) {
		snprintf(out, cap, "%s(%d)", key, QUALIFY_PREFIX_CHARS);
		return 4 * QUALIFY_PREFIX_CHARS;
	}
	for (size_t i = 0; i < sizeof sized / sizeof *sized; i++)
		if (strncmp(type, sized[i], strlen(sized[i])) == 0) {
			long n = strtol(type + strlen(sized[i]), NULL, 10);

			if (n > QUALIFY_PREFIX_CHARS) {
				snprintf(out, cap, "%s(%d)", key, QUALIFY_PREFIX_CHARS);
				return 4 * QUALIFY_PREFIX_CHARS;
			}
			snprintf(out, cap, "%s", key);
			return 4 * (size_t)(n > 0 ? n : 1);
		}
	snprintf(out, cap, "%s", key);
	return 32;                      /* numbers, dates and times */
}

/* An index on the keys (as many of them as one index holds; long texts
 * by their first characters), named after the key list so that a PATCH of
 * primary_keys gets its own.  Built once; a no-op after. */
static int key_index_ensure(struct task_env *env, struct qualify *q,
                            char *err, size_t errlen)
{
	char name[WH_IDENT_MAX + 1], part[JDBC_QNAME_MAX + 8];
	size_t cap = 2 * JDBC_QNAME_MAX + 96 + q->nk * (JDBC_QNAME_MAX + 10);
	size_t len, bytes = 0, parts = 0;
	char *sql;
	int rc = -1;

	if (wh_table_columns(env->wh, q->d.schema, q->d.table, key_type, q, err, errlen) < 0)
		return -1;
	if (q->fail != NULL) {
		str_errf(err, errlen, "%s", q->fail);
		return -1;
	}
	for (size_t i = 0; i < q->nk; i++)
		if (q->type[i] == NULL) {
			str_errf(err, errlen, "primary key %.200s is not a column of %.64s.%.64s",
			         q->key[i], q->d.schema, q->d.table);
			return -1;
		}
	jdbc_work_table(QUALIFY_INDEX_PREFIX, q->d.table, q->partition, name);
	if ((sql = malloc(cap)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	len = (size_t)snprintf(sql, cap, "CREATE INDEX IF NOT EXISTS `%s` ON %s.%s (",
	                       name, q->qs, q->qt);
	for (size_t i = 0; i < q->nk && parts < QUALIFY_INDEX_PARTS; i++) {
		size_t b = index_part(q->key[i], q->type[i], part, sizeof part);

		if (parts > 0 && bytes + b > QUALIFY_INDEX_BYTES)
			break;
		len += (size_t)snprintf(sql + len, cap - len, "%s%s", parts > 0 ? ", " : "", part);
		bytes += b;
		parts++;
	}
	snprintf(sql + len, cap - len, ")");
	rc = wh_exec(env->wh, sql, err, errlen) < 0 ? -1 : 0;
	free(sql);
	return rc;
}

/* wh_table_columns of the increment: its columns but the sequence. */
static void increment_column(void *arg, const char *name, const char *type,
                             bool nullable, const char *comment)
{
	struct colbuf *c = arg;
	char qn[JDBC_QNAME_MAX];
	size_t need;

	(void)type;
	(void)nullable;
	(void)comment;
	if (strcmp(name, JDBC_SEQ_COLUMN) == 0 || c->fail != NULL)
		return;
	if (wh_quote(name, qn, sizeof qn) != 0) {
		c->fail = "invalid column name in the increment table";
		return;
	}
	need = c->len + strlen(qn) + 3;
	if (need > c->cap) {
		size_t ncap = need * 2;
		char *n = realloc(c->s, ncap);

		if (n == NULL) {
			c->fail = "out of memory";
			return;
		}
		c->s = n;
		c->cap = ncap;
	}
	c->len += (size_t)snprintf(c->s + c->len, c->cap - c->len, "%s%s",
	                           c->len > 0 ? ", " : "", qn);
}

/* The increment's column list into c (free c->s).  0, or -1 with err. */
static int increment_columns(struct task_env *env, const struct jdbc_dest *d,
                             struct colbuf *c, char *err, size_t errlen)
{
	if (wh_table_columns(env->wh, d->schema, d->increment, increment_column, c,
	                     err, errlen) < 0)
		return -1;
	if (c->fail != NULL || c->s == NULL) {
		str_errf(err, errlen, "%s", c->fail != NULL ? c->fail : "the increment "
		         "table has no columns");
		return -1;
	}
	return 0;
}

/* Steps 1 to 4 of the header, in the caller's transaction. */
static int increment_apply(struct task_env *env, struct qualify *q, const char *cols,
                           long long *replaced, long long *inserted,
                           char *err, size_t errlen)
{
	char qi[JDBC_QNAME_MAX];
	size_t cap;
	char *sql;
	int rc = -1;

	if (wh_quote(q->d.increment, qi, sizeof qi) != 0) {
		str_errf(err, errlen, "invalid increment table name");
		return -1;
	}
	cap = 6 * JDBC_QNAME_MAX + strlen(q->match) + strlen(q->partition) +
	      2 * strlen(cols) + 512;
	if ((sql = malloc(cap)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	/* MariaDB resolves a multi-table DELETE's aliases only with a
	 * default database ("No database selected" otherwise). */
	snprintf(sql, cap, "USE %s", q->qs);
	if (wh_exec(env->wh, sql, err, errlen) < 0)
		goto out;
	snprintf(sql, cap, "DELETE i FROM %s.%s i JOIN %s.%s d ON %s WHERE d.%s > i.%s",
	         q->qs, qi, q->qs, q->qt, q->match, q->qinc, q->qinc);
	if (wh_exec(env->wh, sql, err, errlen) < 0)
		goto out;
	snprintf(sql, cap, "DELETE i FROM %s.%s i JOIN (SELECT `" JDBC_SEQ_COLUMN "` AS s, "
	         "ROW_NUMBER() OVER (PARTITION BY %s ORDER BY %s DESC, `" JDBC_SEQ_COLUMN
	         "` DESC) AS rn FROM %s.%s) w ON w.s = i.`" JDBC_SEQ_COLUMN "` WHERE w.rn > 1",
	         q->qs, qi, q->partition, q->qinc, q->qs, qi);
	if (wh_exec(env->wh, sql, err, errlen) < 0)
		goto out;
	snprintf(sql, cap, "DELETE d FROM %s.%s d JOIN %s.%s i ON %s",
	         q->qs, q->qt, q->qs, qi, q->match);
	if ((*replaced = wh_exec(env->wh, sql, err, errlen)) < 0)
		goto out;
	snprintf(sql, cap, "INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s",
	         q->qs, q->qt, cols, cols, q->qs, qi);
	if ((*inserted = wh_exec(env->wh, sql, err, errlen)) < 0)
		goto out;
	rc = 0;
out:
	free(sql);
	return rc;
}

static int qualify_increment(struct task_env *env, struct qualify *q,
                             char *err, size_t errlen)
{
	long long replaced = 0, inserted = 0;
	struct colbuf c = { 0 };
	int rc = -1;

	if (increment_columns(env, &q->d, &c, err, errlen) != 0)
		goto out;
	if (wh_begin(env->wh) != 0) {
		str_errf(err, errlen, "warehouse: %s", wh_error(env->wh));
		goto out;
	}
	if (increment_apply(env, q, c.s, &replaced, &inserted, err, errlen) != 0) {
		wh_rollback(env->wh);
		goto out;
	}
#ifdef SLUICE_TEST_HOOKS
	/* Applied but not committed: where a test kills the task. */
	if (env->cfg != NULL && env->cfg->runner_test_qualify_delay_ms > 0)
		run_log_info(env->log, "qualify: applied, not committed yet");
	if (env->cfg != NULL)
		TEST_HOOK_PAUSE(env->cfg, runner_test_qualify_delay_ms);
#endif
	if (wh_commit(env->wh) != 0) {
		str_errf(err, errlen, "warehouse commit failed: %s", wh_error(env->wh));
		goto out;
	}
	/* Applied: should the drop not happen, applying it again is harmless. */
	if (wh_table_drop(env->wh, q->d.schema, q->d.increment, err, errlen) != 0)
		goto out;
	run_log_info(env->log, "qualify applied the increment to %s.%s: %lld rows "
	             "inserted, %lld older rows of their keys replaced", q->d.schema,
	             q->d.table, inserted, replaced);
	rc = 0;
out:
	free(c.s);
	return rc;
}

/* The whole destination into staging, one row per key, swapped in. */
static int qualify_rebuild(struct task_env *env, struct qualify *q,
                           char *err, size_t errlen)
{
	char qst[JDBC_QNAME_MAX];
	size_t cap = 6 * JDBC_QNAME_MAX + strlen(q->partition) + 512;
	char *sql;
	long long kept;
	int rc = -1;

	if (wh_quote(q->d.staging, qst, sizeof qst) != 0) {
		str_errf(err, errlen, "invalid staging table name");
		return -1;
	}
	if ((sql = malloc(cap)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	if (staging_register(env, q->d.schema, q->d.staging, err, errlen) != 0 ||
	    wh_table_drop(env->wh, q->d.schema, q->d.staging, err, errlen) != 0)
		goto out;
	/* LIKE copies the key index too. */
	snprintf(sql, cap, "CREATE TABLE %s.%s LIKE %s.%s", q->qs, qst, q->qs, q->qt);
	if (wh_exec(env->wh, sql, err, errlen) < 0)
		goto out;
	/* The row number rides in an extra last column of staging, so that
	 * d.* needs no column list; it is dropped before the swap. */
	snprintf(sql, cap, "ALTER TABLE %s.%s ADD COLUMN `" QUALIFY_RN_COLUMN "` BIGINT",
	         q->qs, qst);
	if (wh_exec(env->wh, sql, err, errlen) < 0)
		goto fail;
	snprintf(sql, cap, "INSERT INTO %s.%s SELECT * FROM (SELECT d.*, ROW_NUMBER() "
	         "OVER (PARTITION BY %s ORDER BY %s DESC) AS `" QUALIFY_RN_COLUMN "` "
	         "FROM %s.%s d) x WHERE x.`" QUALIFY_RN_COLUMN "` = 1",
	         q->qs, qst, q->partition, q->qinc, q->qs, q->qt);
	run_log_info(env->log, "query: %s", sql);
	if ((kept = wh_exec(env->wh, sql, err, errlen)) < 0)
		goto fail;
	snprintf(sql, cap, "ALTER TABLE %s.%s DROP COLUMN `" QUALIFY_RN_COLUMN "`", q->qs, qst);
	if (wh_exec(env->wh, sql, err, errlen) < 0)
		goto fail;
	if (wh_table_swap(env->wh, q->d.schema, q->d.table, q->d.staging, err, errlen) != 0)
		goto fail;
	staging_release(env, q->d.schema, q->d.staging);
	/* Rows kept are not rows loaded: the run's count stays the extract's. */
	run_log_info(env->log, "qualify kept %lld rows in %s.%s (one per key)", kept,
	             q->d.schema, q->d.table);
	rc = 0;
	goto out;
fail:
	{
		char e2[256];

		if (wh_table_drop(env->wh, q->d.schema, q->d.staging, e2, sizeof e2) == 0)
			staging_release(env, q->d.schema, q->d.staging);
	}
out:
	free(sql);
	return rc;
}

int jdbc_qualify(const struct job_spec *job, struct task_env *env,
                 char *err, size_t errlen)
{
	struct qualify q;
	int ex, rc = -1;

	memset(&q, 0, sizeof q);
	if (qualify_init(job, env, &q, err, errlen) != 0)
		goto out;
	if ((ex = wh_table_exists(env->wh, q.d.schema, q.d.table, err, errlen)) < 0)
		goto out;
	if (ex == 0) {
		run_log_info(env->log, "qualify: %s.%s does not exist yet; nothing to do",
		             q.d.schema, q.d.table);
		rc = 0;
		goto out;
	}
	if (key_index_ensure(env, &q, err, errlen) != 0 ||
	    (ex = wh_table_exists(env->wh, q.d.schema, q.d.increment, err, errlen)) < 0)
		goto out;
	rc = ex == 1 ? qualify_increment(env, &q, err, errlen)
	             : qualify_rebuild(env, &q, err, errlen);
out:
	qualify_free(&q);
	return rc;
}

int jdbc_increment_append(struct task_env *env, const struct jdbc_dest *d,
                          char *err, size_t errlen)
{
	char qs[JDBC_QNAME_MAX], qt[JDBC_QNAME_MAX], qi[JDBC_QNAME_MAX];
	struct colbuf c = { 0 };
	long long n;
	char *sql = NULL;
	size_t cap;
	int ex, rc = -1;

	if ((ex = wh_table_exists(env->wh, d->schema, d->increment, err, errlen)) <= 0)
		return ex;
	if (wh_quote(d->schema, qs, sizeof qs) != 0 || wh_quote(d->table, qt, sizeof qt) != 0 ||
	    wh_quote(d->increment, qi, sizeof qi) != 0) {
		str_errf(err, errlen, "invalid destination name");
		return -1;
	}
	if (increment_columns(env, d, &c, err, errlen) != 0)
		goto out;
	cap = 4 * JDBC_QNAME_MAX + 2 * strlen(c.s) + 64;
	if ((sql = malloc(cap)) == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	/* The rows move in one transaction, so none is appended twice. */
	if (wh_begin(env->wh) != 0) {
		str_errf(err, errlen, "warehouse: %s", wh_error(env->wh));
		goto out;
	}
	snprintf(sql, cap, "INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s ORDER BY `"
	         JDBC_SEQ_COLUMN "`", qs, qt, c.s, c.s, qs, qi);
	if ((n = wh_exec(env->wh, sql, err, errlen)) < 0) {
		wh_rollback(env->wh);
		goto out;
	}
	snprintf(sql, cap, "DELETE FROM %s.%s", qs, qi);
	if (wh_exec(env->wh, sql, err, errlen) < 0) {
		wh_rollback(env->wh);
		goto out;
	}
	if (wh_commit(env->wh) != 0) {
		str_errf(err, errlen, "warehouse commit failed: %s", wh_error(env->wh));
		goto out;
	}
	if (wh_table_drop(env->wh, d->schema, d->increment, err, errlen) != 0)
		goto out;
	run_log_warning(env->log, "%lld rows a failed qualify task left pending were "
	                "appended to %s.%s", n, d->schema, d->table);
	rc = 0;
out:
	free(sql);
	free(c.s);
	return rc;
}
