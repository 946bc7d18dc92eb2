/* link_load.c - work kind storage_link_load: a linked dataset's rows into
 * its warehouse table.
 *
 * The file is streamed with tab_read (the dataset's stored parsing
 * options) into wh_batch, all in one warehouse transaction, so a table
 * holds either every row of the dataset or none.  When the warehouse is the
 * service's own server the link's row_count / last_sync / sync_status are
 * written in that same transaction (exactly once, whatever crashes); else
 * right after the commit.
 *
 * Failures that another try cannot fix (a file gone or malformed, a value
 * the column refuses) end the item at once with the link failed and
 * inactive; the others (warehouse unreachable, a deadlock) are retried by
 * the work loop, the link pending meanwhile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/warehouse.h"
#include "db/queue.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "tabular/tabular.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"

#define LOAD_BATCH_ROWS 2000
#define LOAD_STOP_CHECK_ROWS 20000     /* a shutdown is noticed this often */

struct load {
	struct work_ctx *w;
	const struct work_item *it;
	struct storage_table *t;
	struct wh_batch *batch;
	int *map;                          /* table column -> file column, -1 none */
	const char **vals;
	size_t *lens;
	char (*bufs)[TABLE_VALUE_BUF];
	long long rows;                    /* rows read so far */
	bool permanent;                    /* the failure will not go away */
	bool stopped;
	char err[512];
};

static int on_header(void *arg, const struct tab_cell *names, size_t n)
{
	struct load *L = arg;

	for (size_t i = 0; i < L->t->ncols; i++) {
		L->map[i] = -1;
		for (size_t k = 0; k < n; k++) {
			if (names[k].text != NULL &&
			    table_column_name_eq(L->t->cols[i].name, names[k].text)) {
				L->map[i] = (int)k;
				break;
			}
		}
		if (L->map[i] < 0) {
			str_errf(L->err, sizeof L->err, "the file has no column '%s' any "
			         "more: refresh the dataset's schema and link it again",
			         L->t->cols[i].name);
			L->permanent = true;
			return -1;
		}
	}
	return 0;
}

/* A batch of rows first..last (1-based data rows) was refused: say so, and
 * which row when the warehouse named one ("... at row N" of the batch). */
static void batch_error(struct load *L, long long first, long long last,
                        const char *err)
{
	const char *at = strstr(err, " at row ");
	long long n;

	if (at != NULL && str_to_ll(at + 8, 1, last - first + 1, &n) == 0)
		str_errf(L->err, sizeof L->err, "data row %lld: %s", first + n - 1, err);
	else
		str_errf(L->err, sizeof L->err, "data rows %lld to %lld: %s", first, last, err);
	L->permanent = true;
}

static int on_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct load *L = arg;
	long long first = wh_batch_rows(L->batch) + 1;
	char err[400];

	for (size_t i = 0; i < L->t->ncols; i++) {
		size_t k = (size_t)L->map[i];

		if (k >= n) {                  /* a short (ragged) row: the rest empty */
			L->vals[i] = NULL;
			L->lens[i] = 0;
			continue;
		}
		L->vals[i] = table_value(&L->t->cols[i].type, &cells[k], L->bufs[i], &L->lens[i]);
	}
	if (wh_batch_add(L->batch, L->vals, L->lens, err, sizeof err) != 0) {
		/* The batch sent with this row: from the first unsent one. */
		batch_error(L, first, L->rows + 1, err);
		return -1;
	}
	L->rows++;
	if (L->rows % LOAD_STOP_CHECK_ROWS == 0 && work_stopping(L->w)) {
		str_errf(L->err, sizeof L->err, "stopped by the shutdown of sluice work: "
		         "the load starts again");
		L->stopped = true;
		return -1;
	}
	return 0;
}

/* The link settled on the service database: done with rows, or failed
 * (inactive) / pending again with the reason. */
static void record(struct db *db, const char *link_id, const char *sync_status,
                   const char *error, long long rows)
{
	long long rc;

	if (strcmp(sync_status, "done") == 0)
		rc = db_exec(db, "UPDATE table_links SET sync_status = 'done', status = 'active', "
		             "row_count = ?, last_sync = UTC_TIMESTAMP(3), error = NULL "
		             "WHERE id = ?", "is", rows, link_id);
	else if (strcmp(sync_status, "failed") == 0)
		rc = db_exec(db, "UPDATE table_links SET sync_status = 'failed', "
		             "status = 'inactive', error = ? WHERE id = ?", "ss", error, link_id);
	else
		rc = db_exec(db, "UPDATE table_links SET sync_status = ?, error = ? "
		             "WHERE id = ?", "sss", sync_status, error, link_id);
	if (rc < 0)
		log_kv(LOG_ERROR, "link status not recorded", "link=%s status=%s", link_id,
		       sync_status);
}

/* What the item finds of its link when it starts. */
enum link_item {
	LINK_ITEM_UNREADABLE,        /* the database did not answer */
	LINK_ITEM_GONE,              /* unlinked, or its table dropped, meanwhile */
	LINK_ITEM_TO_LOAD,
	LINK_ITEM_LOADED,            /* done already: a repeated item */
	LINK_ITEM_BAD_FORMAT,        /* the dataset's format is not one we load */
};

int storage_link_load_work(struct work_ctx *w, const struct work_item *it,
                           char *err, size_t errlen)
{
	struct storage_table t = { .cols = NULL };
	struct load L;
	struct tab_opts opts;
	struct tab_stats stats;
	struct tab_sink sink;
	struct wh *wh = NULL;
	struct db_stmt *st;
	struct stat sb;
	enum tab_format fmt;
	char customer[STORAGE_ID_LEN + 1], file_path[STORAGE_PATH_MAX + 1];
	char *parsing = NULL, path[64];
	const char **names = NULL;
	int root = -1, fd = -1, rc = -1;
	enum link_item state;
	bool committed = false;

	memset(&L, 0, sizeof L);
	L.w = w;
	L.it = it;
	L.t = &t;
	if (it->customer_id == NULL || str_copy(customer, sizeof customer, it->customer_id) != 0) {
		str_errf(err, errlen, "the work item names no customer");
		return 0;                      /* nothing to retry */
	}

	st = db_query(w->db, "SELECT l.table_id, l.sync_status, d.file_path, d.format, "
	              "d.parsing_options FROM table_links l JOIN datasets d ON d.id = l.dataset_id "
	              "WHERE l.id = ? AND l.customer_id = ?", "ss", it->ref_id, customer);
	if (st == NULL) {
		str_errf(err, errlen, "database unavailable");
		return -1;
	}
	state = LINK_ITEM_UNREADABLE;
	switch (db_fetch(st)) {
	case 1: {
		char table_id[STORAGE_TABLE_ID_LEN + 1];
		int trc;

		state = LINK_ITEM_TO_LOAD;
		snprintf(table_id, sizeof table_id, "%s", db_col_str(st, 0));
		if (strcmp(db_col_str(st, 1), "done") == 0)
			state = LINK_ITEM_LOADED;  /* a repeated item */
		snprintf(file_path, sizeof file_path, "%s", db_col_str(st, 2));
		if (tab_format_parse(db_col_str(st, 3), &fmt) != 0)
			state = LINK_ITEM_BAD_FORMAT;
		parsing = db_col_null(st, 4) ? NULL : strdup(db_col_str(st, 4));
		db_done(st);
		if (state != LINK_ITEM_TO_LOAD)
			break;
		trc = storage_table_load(w->db, customer, table_id, &t);
		state = trc < 0 ? LINK_ITEM_UNREADABLE : trc == 0 ? LINK_ITEM_GONE
		      : LINK_ITEM_TO_LOAD;
		break;
	}
	case 0:
		state = LINK_ITEM_GONE;
		/* fall through */
	default:
		db_done(st);
	}
	switch (state) {
	case LINK_ITEM_UNREADABLE:
		str_errf(err, errlen, "database unavailable");
		goto out;
	case LINK_ITEM_GONE:                   /* unlinked meanwhile */
	case LINK_ITEM_LOADED:
		rc = 0;
		goto out;
	case LINK_ITEM_BAD_FORMAT:
		snprintf(L.err, sizeof L.err, "the dataset's format cannot be loaded");
		L.permanent = true;
		goto fail;
	case LINK_ITEM_TO_LOAD:
		break;
	}
	record(w->db, it->ref_id, "running", NULL, 0);

	/* The file, opened under the customer's root without following links. */
	if ((root = storage_root_open(w->cfg, customer, false)) < 0 ||
	    (fd = storage_file_open(root, file_path, &sb)) < 0) {
		snprintf(L.err, sizeof L.err, fd == -ENOENT || root < 0
		         ? "the file is no longer in the storage area"
		         : "the file cannot be read from the storage area");
		L.permanent = true;
		goto fail;
	}
	storage_fd_path(fd, path, sizeof path);
	tab_opts_init(&opts);
	if (parsing != NULL)
		storage_opts_from_json(parsing, &opts);

	L.map = calloc(t.ncols, sizeof *L.map);
	L.vals = calloc(t.ncols, sizeof *L.vals);
	L.lens = calloc(t.ncols, sizeof *L.lens);
	L.bufs = calloc(t.ncols, sizeof *L.bufs);
	names = calloc(t.ncols, sizeof *names);
	if (L.map == NULL || L.vals == NULL || L.lens == NULL || L.bufs == NULL || names == NULL) {
		snprintf(L.err, sizeof L.err, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < t.ncols; i++)
		names[i] = t.cols[i].name;

	if ((wh = wh_open(w->cfg, L.err, sizeof L.err)) == NULL || wh_begin(wh) != 0) {
		if (wh != NULL)
			snprintf(L.err, sizeof L.err, "%s", wh_error(wh));
		goto fail;                     /* retried */
	}
	L.batch = wh_batch_new(wh, t.wh_schema, t.wh_table, names, t.ncols, LOAD_BATCH_ROWS,
	                       L.err, sizeof L.err);
	if (L.batch == NULL) {
		L.permanent = true;            /* the table is gone or changed */
		goto fail;
	}
	sink.header = on_header;
	sink.row = on_row;
	sink.arg = &L;
	{
		char rerr[400] = "";
		int trc = tab_read(path, fmt, &opts, &sink, &stats, rerr, sizeof rerr);

		if (trc == TAB_ERR_STOP)
			goto fail;                 /* L.err says why */
		if (trc != TAB_OK) {
			snprintf(L.err, sizeof L.err, "%s", rerr[0] != '\0' ? rerr
			         : "the file could not be read");
			L.permanent = true;
			goto fail;
		}
	}
	{
		long long first = wh_batch_rows(L.batch) + 1;
		char ferr[400];

		if (wh_batch_flush(L.batch, ferr, sizeof ferr) != 0) {
			batch_error(&L, first, L.rows, ferr);
			goto fail;
		}
	}
	L.rows = wh_batch_rows(L.batch);

	if (wh_shares_app_server(wh)) {
		char tbl[2 * WH_IDENT_MAX * 4 + 8], sql[800], rows[32];
		const char *params[2] = { rows, it->ref_id };

		snprintf(rows, sizeof rows, "%lld", L.rows);
		if (wh_app_table(wh, "table_links", tbl, sizeof tbl) != 0) {
			snprintf(L.err, sizeof L.err, "service database name too long");
			goto fail;
		}
		snprintf(sql, sizeof sql, "UPDATE %s SET sync_status = 'done', status = 'active', "
		         "row_count = ?, last_sync = UTC_TIMESTAMP(3), error = NULL WHERE id = ?",
		         tbl);
		if (wh_exec_bound(wh, sql, params, 2, L.err, sizeof L.err) < 0)
			goto fail;
		if (wh_commit(wh) != 0) {
			snprintf(L.err, sizeof L.err, "%s", wh_error(wh));
			goto fail;
		}
		committed = true;
	} else {
		if (wh_commit(wh) != 0) {
			snprintf(L.err, sizeof L.err, "%s", wh_error(wh));
			goto fail;
		}
		committed = true;
		record(w->db, it->ref_id, "done", NULL, L.rows);
	}
	log_kv(LOG_INFO, "link loaded", "link=%s rows=%lld schema=%s table=%s", it->ref_id,
	       L.rows, t.wh_schema, LOG_Q(t.wh_table));
	rc = 0;
	goto out;

fail:
	if (wh != NULL && !committed)
		wh_rollback(wh);
	if (L.permanent || (it->attempts >= it->max_attempts && !L.stopped)) {
		record(w->db, it->ref_id, "failed", L.err, 0);
		log_kv(LOG_WARN, "link load failed", "link=%s error=%s", it->ref_id, LOG_Q(L.err));
		str_errf(err, errlen, "%s", L.err);
		/* Recorded on the link; another try would fail the same way. */
		rc = L.permanent ? 0 : -1;
	} else {
		record(w->db, it->ref_id, "pending", L.err, 0);
		str_errf(err, errlen, "%s", L.err);
		rc = -1;
	}
out:
	wh_batch_free(L.batch);
	wh_close(wh);
	if (fd >= 0)
		close(fd);
	if (root >= 0)
		close(root);
	free(L.map);
	free(L.vals);
	free(L.lens);
	free(L.bufs);
	free(names);
	free(parsing);
	storage_table_free(&t);
	return rc;
}

int storage_link_load_give_up(struct work_ctx *w, const struct work_item *it,
                              const char *reason)
{
	record(w->db, it->ref_id, "failed", reason, 0);
	return db_connected(w->db) ? 0 : -1;
}
