/* link_load.c - work kind storage_link_load: a table's rows from the
 * datasets linked to it.
 *
 * An item names a table (ref_id), not a link, so the queue runs one load of
 * a table at a time, and a load already queued for it stands for any number
 * of reasons to load (a link, a relink, a new version of a file, a sync).
 * A load rebuilds the table: in one warehouse transaction it deletes every
 * row and streams the file of each active link (tab_read with the dataset's
 * stored parsing options) into wh_batch.  The table then holds exactly its
 * active links' files, or, on any failure, what it held before.  When the
 * warehouse is the service's own server the links' row_count / last_sync /
 * sync_status are written in that same transaction (exactly once, whatever
 * crashes); else right after the commit.
 *
 * Failures that another try cannot fix (a file gone or malformed, a value
 * the column refuses) end the item at once: that link failed and inactive,
 * the others it kept from loading failed with a word why (still active);
 * the others (warehouse unreachable, a deadlock) are retried by the work
 * loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/warehouse.h"
#include "db/wh_evolve.h"
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
	long long rows;                    /* rows of this file read so far */
	long long base;                    /* rows sent before this file */
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
	long long first = wh_batch_rows(L->batch) - L->base + 1;
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

/* One active link of the table being loaded, and what its file gave. */
struct load_link {
	char id[STORAGE_ID_LEN + 1];
	char name[STORAGE_NAME_MAX + 1];
	char file_path[STORAGE_PATH_MAX + 1];
	char format[16];
	char *parsing;                     /* stored parsing options, or NULL */
	char *schema;                      /* its dataset's schema_json, or NULL */
	bool loaded;                       /* its sync_status is done */
	long long rows;
	char note[512];                    /* columns its types widened, or "" */
};

static void load_links_free(struct load_link *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].parsing);
		free(v[i].schema);
	}
	free(v);
}

/* The table's active links, oldest first.  0 (*v NULL when none) or < 0. */
static int load_links_read(struct db *db, const char *customer, const char *table_id,
                           struct load_link **v, size_t *n)
{
	struct db_stmt *st;
	size_t cap = 0;
	int rc;

	*v = NULL;
	*n = 0;
	st = db_query(db, "SELECT l.id, d.file_name, d.file_path, d.format, d.parsing_options, "
	              "l.sync_status = 'done', d.schema_json FROM table_links l "
	              "JOIN datasets d ON d.id = l.dataset_id WHERE l.table_id = ? "
	              "AND l.customer_id = ? AND l.status = 'active' ORDER BY l.created_at, l.id",
	              "ss", table_id, customer);
	if (st == NULL)
		return db_last_err(db);
	while ((rc = db_fetch(st)) == 1) {
		struct load_link *k;

		if (*n == cap) {
			struct load_link *grown = realloc(*v, (cap = cap * 2 + 4) * sizeof **v);

			if (grown == NULL) {
				rc = DB_ERR;
				break;
			}
			*v = grown;
		}
		k = &(*v)[(*n)++];
		memset(k, 0, sizeof *k);
		snprintf(k->id, sizeof k->id, "%s", db_col_str(st, 0));
		snprintf(k->name, sizeof k->name, "%s", db_col_str(st, 1));
		snprintf(k->file_path, sizeof k->file_path, "%s", db_col_str(st, 2));
		snprintf(k->format, sizeof k->format, "%s", db_col_str(st, 3));
		k->parsing = db_col_null(st, 4) ? NULL : strdup(db_col_str(st, 4));
		k->loaded = db_col_ll(st, 5) == 1;
		k->schema = db_col_null(st, 6) ? NULL : strdup(db_col_str(st, 6));
	}
	db_done(st);
	if (rc < 0) {
		load_links_free(*v, *n);
		*v = NULL;
		*n = 0;
	}
	return rc < 0 ? rc : 0;
}

/* A link's load failed: failed with error; inactive too when its own file
 * was the cause (it will not load until linked again), while a link the
 * failure of another kept from loading stays active. */
static void link_failed(struct db *db, const char *link_id, const char *error,
                        bool deactivate)
{
	if (db_exec(db, "UPDATE table_links SET sync_status = 'failed', error = ?, "
	            "status = IF(?, 'inactive', status) WHERE id = ?", "sis", error,
	            (long long)deactivate, link_id) < 0)
		log_kv(LOG_ERROR, "link status not recorded", "link=%s status=failed", link_id);
}

/* Stream link k's file into L->batch.  0, or -1 with L->err (and
 * L->permanent when another try would fail the same way). */
static int load_link_rows(struct load *L, int root, struct load_link *k)
{
	struct tab_opts opts;
	struct tab_stats stats;
	struct tab_sink sink = { .header = on_header, .row = on_row, .arg = L };
	enum tab_format fmt;
	struct stat sb;
	char path[64], rerr[400] = "", ferr[400];
	long long first;
	int fd, trc;

	if (tab_format_parse(k->format, &fmt) != 0) {
		snprintf(L->err, sizeof L->err, "the dataset's format cannot be loaded");
		L->permanent = true;
		return -1;
	}
	/* Opened under the customer's root without following links. */
	if ((fd = storage_file_open(root, k->file_path, &sb)) < 0) {
		snprintf(L->err, sizeof L->err, fd == -ENOENT
		         ? "the file is no longer in the storage area"
		         : "the file cannot be read from the storage area");
		L->permanent = true;
		return -1;
	}
	storage_fd_path(fd, path, sizeof path);
	tab_opts_init(&opts);
	if (k->parsing != NULL)
		storage_opts_from_json(k->parsing, &opts);
	L->rows = 0;
	L->base = wh_batch_rows(L->batch);
	trc = tab_read(path, fmt, &opts, &sink, &stats, rerr, sizeof rerr);
	close(fd);
	if (trc == TAB_ERR_STOP)
		return -1;                     /* L->err says why */
	if (trc != TAB_OK) {
		snprintf(L->err, sizeof L->err, "%s", rerr[0] != '\0' ? rerr
		         : "the file could not be read");
		L->permanent = true;
		return -1;
	}
	first = wh_batch_rows(L->batch) - L->base + 1;
	if (wh_batch_flush(L->batch, ferr, sizeof ferr) != 0) {
		batch_error(L, first, L->rows, ferr);
		return -1;
	}
	k->rows = wh_batch_rows(L->batch) - L->base;
	return 0;
}

/* The links' new row_count and last_sync, on the warehouse connection
 * inside its transaction when it is the service's own server. */
static int links_done_in_wh(struct wh *wh, const struct load_link *v, size_t n,
                            char *err, size_t errlen)
{
	char tbl[2 * WH_IDENT_MAX * 4 + 8], sql[800], rows[32];

	if (wh_app_table(wh, "table_links", tbl, sizeof tbl) != 0) {
		snprintf(err, errlen, "service database name too long");
		return -1;
	}
	snprintf(sql, sizeof sql, "UPDATE %s SET sync_status = 'done', row_count = ?, "
	         "last_sync = UTC_TIMESTAMP(3), error = NULLIF(?, '') WHERE id = ?", tbl);
	for (size_t i = 0; i < n; i++) {
		const char *params[3] = { rows, v[i].note, v[i].id };

		snprintf(rows, sizeof rows, "%lld", v[i].rows);
		if (wh_exec_bound(wh, sql, params, 3, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static void links_done(struct db *db, const struct load_link *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (db_exec(db, "UPDATE table_links SET sync_status = 'done', row_count = ?, "
		            "last_sync = UTC_TIMESTAMP(3), error = NULLIF(?, '') WHERE id = ?",
		            "iss", v[i].rows, v[i].note, v[i].id) < 0)
			log_kv(LOG_ERROR, "link status not recorded", "link=%s status=done",
			       v[i].id);
}

/* --- the table follows its datasets' types ---------------------------------- */

/* What the widening of one link's columns needs to know. */
struct widen {
	struct load *L;
	struct load_link *k;
	const struct table_type *to;       /* per table column: its new type */
	bool changed;                      /* a stored type changed */
};

static void on_widen(void *arg, const char *column, const char *from, const char *sql)
{
	struct widen *x = arg;
	struct storage_table *t = x->L->t;
	char was[TABLE_TYPE_TEXT_MAX], now[TABLE_TYPE_TEXT_MAX];
	size_t used;

	if (from == NULL)                  /* a link never adds a column */
		return;
	for (size_t i = 0; i < t->ncols; i++) {
		if (!table_column_name_eq(t->cols[i].name, column))
			continue;
		table_type_name(&t->cols[i].type, was);
		table_type_name(&x->to[i], now);
		log_kv(LOG_WARN, "table column widened", "table=%s link=%s column=%s from=%s "
		       "to=%s sql=%s", t->id, x->k->id, LOG_Q(t->cols[i].name), was, now, sql);
		used = strlen(x->k->note);
		snprintf(x->k->note + used, sizeof x->k->note - used, "%scolumn '%s' widened "
		         "from %s to %s", used > 0 ? "; " : "", t->cols[i].name, was, now);
		/* The load's values (a DECIMAL's scale) and the stored columns. */
		t->cols[i].type = x->to[i];
		json_object_object_add(json_object_array_get_idx(t->columns_json, i), "type",
		                       json_object_new_string(now));
		x->changed = true;
		return;
	}
}

/* The table's columns made to hold link k's dataset as its schema now is
 * (db/wh_evolve.h): a wider type widens the column before the rows'
 * transaction (the ALTER commits by itself, harmless to the rows there),
 * a type no column type holds with the table's fails the link.  A column
 * whose type the schema does not tell (text of unknown length) loads as it
 * is.  0, or -1 with L->err. */
static int load_link_widen(struct load *L, struct wh *wh, struct load_link *k,
                           bool *changed)
{
	struct storage_table *t = L->t;
	struct json_object *schema = NULL;
	struct table_column *dcols = NULL;
	struct wh_column *wc = calloc(t->ncols + 1, sizeof *wc);
	struct table_type *to = calloc(t->ncols + 1, sizeof *to);
	char (*sql)[TABLE_TYPE_TEXT_MAX] = calloc(t->ncols + 1, sizeof *sql);
	struct widen x = { .L = L, .k = k, .to = to };
	size_t nd = 0, n = 0;
	int rc = -1;

	if (wc == NULL || to == NULL || sql == NULL) {
		snprintf(L->err, sizeof L->err, "out of memory");
		goto out;
	}
	if (k->schema == NULL || storage_dataset_columns(k->schema, &schema, &dcols, &nd) != 0) {
		rc = 0;                        /* nothing to follow: loaded as it is */
		goto out;
	}
	for (size_t i = 0; i < t->ncols; i++) {
		const struct table_column *dc = NULL;
		char tn[TABLE_TYPE_TEXT_MAX], dn[TABLE_TYPE_TEXT_MAX];
		int c;

		for (size_t j = 0; j < nd && dc == NULL; j++)
			if (table_column_name_eq(t->cols[i].name, dcols[j].name))
				dc = &dcols[j];
		if (dc == NULL)
			continue;              /* the header check says so */
		c = table_type_widen(&t->cols[i].type, &dc->type, &to[i]);
		if (c == 0)
			continue;              /* held as it is: nothing to alter */
		if (c < 0) {
			table_type_name(&t->cols[i].type, tn);
			table_type_name(&dc->type, dn);
			str_errf(L->err, sizeof L->err, "column '%s': the file's values are %s "
			         "now, which the table's %s column cannot hold and no wider "
			         "type holds both: link a file of the table's types",
			         t->cols[i].name, dn, tn);
			L->permanent = true;
			goto out;
		}
		table_type_sql(&dc->type, sql[n]);
		wc[n].name = t->cols[i].name;
		wc[n].sql_type = sql[n];
		wc[n].nullable = true;
		n++;
	}
	if (n > 0 && wh_table_evolve(wh, t->wh_schema, t->wh_table, wc, n, 0, on_widen, &x,
	                             L->err, sizeof L->err) < 0)
		goto out;                      /* retried: the table was judged above */
	*changed = *changed || x.changed;
	rc = 0;
out:
	json_object_put(schema);
	free(dcols);
	free(wc);
	free(to);
	free(sql);
	return rc;
}

/* The stored columns as the warehouse now has them (after load_link_widen,
 * which altered it already, whether or not the rows then load). */
static void table_columns_store(struct db *db, const struct storage_table *t)
{
	if (db_exec(db, "UPDATE warehouse_tables SET columns_json = ? WHERE id = ?", "ss",
	            json_object_to_json_string_ext(t->columns_json, JSON_C_TO_STRING_PLAIN),
	            t->id) < 0)
		log_kv(LOG_ERROR, "widened column types not recorded", "table=%s", t->id);
}

int storage_link_load_work(struct work_ctx *w, const struct work_item *it,
                           char *err, size_t errlen)
{
	struct storage_table t = { .cols = NULL };
	struct load L;
	struct load_link *links = NULL;
	struct wh *wh = NULL;
	char customer[STORAGE_ID_LEN + 1], qtable[2 * 2 * WH_IDENT_MAX * 4 + 16];
	char qs[2 * WH_IDENT_MAX * 4 + 3], qt[2 * WH_IDENT_MAX * 4 + 3], sql[sizeof qtable + 32];
	const char **names = NULL;
	size_t nlinks = 0, failing = 0;
	int root = -1, rc = -1, trc;
	bool committed = false, widened = false;

	memset(&L, 0, sizeof L);
	L.w = w;
	L.it = it;
	L.t = &t;
	if (it->customer_id == NULL || str_copy(customer, sizeof customer, it->customer_id) != 0) {
		str_errf(err, errlen, "the work item names no customer");
		return 0;                      /* nothing to retry */
	}
	if ((trc = storage_table_load(w->db, customer, it->ref_id, &t)) == 0) {
		rc = 0;                        /* the table was dropped meanwhile */
		goto out;
	}
	if (trc < 0 || load_links_read(w->db, customer, t.id, &links, &nlinks) != 0) {
		str_errf(err, errlen, "database unavailable");
		goto out;
	}
	if (nlinks == 0) {                     /* all unlinked meanwhile: rows stay */
		rc = 0;
		goto out;
	}
	failing = nlinks;                      /* no link's own failure yet */

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
	if ((root = storage_root_open(w->cfg, customer, false)) < 0) {
		snprintf(L.err, sizeof L.err, "the file is no longer in the storage area");
		L.permanent = true;
		goto fail;
	}

	if ((wh = wh_open(w->cfg, L.err, sizeof L.err)) == NULL)
		goto fail;                     /* retried */
	for (failing = 0; failing < nlinks; failing++)
		if (load_link_widen(&L, wh, &links[failing], &widened) != 0)
			break;
	if (widened)
		table_columns_store(w->db, &t);
	if (failing < nlinks)
		goto fail;
	if (wh_begin(wh) != 0) {
		snprintf(L.err, sizeof L.err, "%s", wh_error(wh));
		goto fail;                     /* retried */
	}
	if (wh_quote(t.wh_schema, qs, sizeof qs) != 0 || wh_quote(t.wh_table, qt, sizeof qt) != 0) {
		snprintf(L.err, sizeof L.err, "the table's name cannot be written");
		L.permanent = true;
		goto fail;
	}
	snprintf(qtable, sizeof qtable, "%s.%s", qs, qt);
	snprintf(sql, sizeof sql, "DELETE FROM %s", qtable);
	if (wh_exec(wh, sql, L.err, sizeof L.err) < 0) {
		L.permanent = true;            /* the table is gone or changed */
		goto fail;
	}
	L.batch = wh_batch_new(wh, t.wh_schema, t.wh_table, names, t.ncols, LOAD_BATCH_ROWS,
	                       L.err, sizeof L.err);
	if (L.batch == NULL) {
		L.permanent = true;
		goto fail;
	}
	for (failing = 0; failing < nlinks; failing++)
		if (load_link_rows(&L, root, &links[failing]) != 0)
			goto fail;

	if (wh_shares_app_server(wh) &&
	    links_done_in_wh(wh, links, nlinks, L.err, sizeof L.err) != 0)
		goto fail;
	if (wh_commit(wh) != 0) {
		snprintf(L.err, sizeof L.err, "%s", wh_error(wh));
		goto fail;
	}
	committed = true;
	if (!wh_shares_app_server(wh))
		links_done(w->db, links, nlinks);
	log_kv(LOG_INFO, "table loaded", "table=%s links=%zu rows=%lld schema=%s name=%s",
	       t.id, nlinks, wh_batch_rows(L.batch), t.wh_schema, LOG_Q(t.wh_table));
	rc = 0;
	goto out;

fail:
	if (wh != NULL && !committed)
		wh_rollback(wh);
	str_errf(err, errlen, "%s", L.err);
	if (L.permanent || (it->attempts >= it->max_attempts && !L.stopped)) {
		char why[600];

		/* The link whose file failed, when one did, and every link this
		 * load was to bring in for the first time. */
		if (L.permanent && failing < nlinks) {
			link_failed(w->db, links[failing].id, L.err, true);
			snprintf(why, sizeof why, "not loaded: the table's load failed on "
			         "dataset '%s'", links[failing].name);
		} else {
			snprintf(why, sizeof why, "%s", L.err);
		}
		for (size_t i = 0; i < nlinks; i++)
			if (!L.permanent || (i != failing && !links[i].loaded))
				link_failed(w->db, links[i].id, why, false);
		log_kv(LOG_WARN, "table load failed", "table=%s error=%s", t.id, LOG_Q(L.err));
		/* Recorded on the links; another try would fail the same way. */
		rc = L.permanent ? 0 : -1;
	}
out:
	wh_batch_free(L.batch);
	wh_close(wh);
	if (root >= 0)
		close(root);
	free(L.map);
	free(L.vals);
	free(L.lens);
	free(L.bufs);
	free(names);
	load_links_free(links, nlinks);
	storage_table_free(&t);
	return rc;
}

int storage_link_load_give_up(struct work_ctx *w, const struct work_item *it,
                              const char *reason)
{
	if (it->customer_id != NULL &&
	    db_exec(w->db, "UPDATE table_links SET sync_status = 'failed', error = ? "
	            "WHERE table_id = ? AND customer_id = ? AND status = 'active' "
	            "AND sync_status <> 'done'", "sss", reason, it->ref_id,
	            it->customer_id) < 0)
		return -1;
	return db_connected(w->db) ? 0 : -1;
}

/* --- what queues a load ------------------------------------------------------ */

int storage_table_load_queue(struct db *db, const char *customer_id, const char *table_id)
{
	long long rc = queue_pending(db, "storage_link_load", table_id);

	if (rc == 0)                           /* none waiting: one for this */
		rc = queue_enqueue(db, &(struct queue_new){ .kind = "storage_link_load",
		                   .ref_id = table_id, .customer_id = customer_id });
	return rc < 0 ? (int)rc : 0;
}

int storage_dataset_tables_queue(struct db *db, const char *customer_id,
                                 const char *dataset_id)
{
	char (*tables)[STORAGE_TABLE_ID_LEN + 1] = NULL;
	struct db_stmt *st;
	size_t n = 0, cap = 0;
	int rc;

	st = db_query(db, "SELECT table_id FROM table_links WHERE dataset_id = ? "
	              "AND customer_id = ? AND status = 'active'", "ss", dataset_id, customer_id);
	if (st == NULL)
		return db_last_err(db);
	while ((rc = db_fetch(st)) == 1) {
		if (n == cap) {
			void *grown = realloc(tables, (cap = cap * 2 + 4) * sizeof *tables);

			if (grown == NULL) {
				rc = DB_ERR;
				break;
			}
			tables = grown;
		}
		snprintf(tables[n++], sizeof tables[0], "%s", db_col_str(st, 0));
	}
	db_done(st);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		long long m = db_exec(db, "UPDATE table_links SET sync_status = 'pending' "
		                      "WHERE dataset_id = ? AND table_id = ? AND status = 'active'",
		                      "ss", dataset_id, tables[i]);

		rc = m < 0 ? (int)m : storage_table_load_queue(db, customer_id, tables[i]);
	}
	free(tables);
	return rc;
}
