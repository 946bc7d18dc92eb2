/* table_delete.c - DELETE /storage-explorer/tables/{tableId}[?force=true]:
 * the table's row, its links and the warehouse table itself.
 *
 * One service transaction holds the table's row (FOR UPDATE: a link being
 * made waits for it, its foreign key needs the row), checks the active
 * links, drops the warehouse table and only then deletes the row, whose
 * links go with it (ON DELETE CASCADE).  A drop that fails rolls the rows
 * back: nothing is lost.  A crash after the drop and before the commit
 * leaves the row naming a table that is gone; the same DELETE, repeated,
 * finishes (DROP TABLE IF EXISTS).
 *
 * Loads of the table (work items named by the table's id): a queued one
 * finds the table gone when it starts and ends without touching the
 * warehouse (link_load.c; a load never creates its table).  A running one
 * holds the table in its transaction, so the delete answers 409 table_busy
 * rather than wait: the work queue says so first, and the drop waits at
 * most TABLE_DROP_LOCK_WAIT_S for a load that started meanwhile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "db/warehouse.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/log.h"

#define TABLE_DROP_LOCK_WAIT_S 5

enum table_drop_outcome {
	TABLE_DROP_GONE,                   /* no such table of the customer */
	TABLE_DROP_LINKED,
	TABLE_DROP_BUSY,
	TABLE_DROP_FAILED,                 /* the warehouse refused: rolled back */
	TABLE_DROP_DONE,
};

struct table_drop {
	const char *customer;
	const struct storage_table *t;
	struct wh *wh;
	bool force;
	enum table_drop_outcome outcome;
	long long active, links;
	char err[512];
};

static long long count_of(struct db *db, struct db_stmt *st)
{
	char n[24] = "0";
	int rc = db_first_row(db, st, &(struct db_text){ n, sizeof n }, 1);

	return rc < 0 ? rc : strtoll(n, NULL, 10);
}

static int table_drop_tx(struct db *db, void *arg)
{
	struct table_drop *x = arg;
	char id[STORAGE_TABLE_ID_LEN + 1];
	long long n;
	int rc;

	x->outcome = TABLE_DROP_GONE;
	x->active = x->links = 0;
	rc = db_first_row(db, db_query(db, "SELECT id FROM warehouse_tables WHERE id = ? "
	                  "AND customer_id = ? FOR UPDATE", "ss", x->t->id, x->customer),
	                  &(struct db_text){ id, sizeof id }, 1);
	if (rc <= 0)
		return rc;
	if ((x->active = storage_links_active(db, x->customer, STORAGE_LINKS_OF_TABLE,
	                                      x->t->id)) < 0)
		return (int)x->active;
	if (x->active > 0 && !x->force) {
		x->outcome = TABLE_DROP_LINKED;
		return 0;
	}
	/* A load item names its table (link_load.c). */
	if ((n = count_of(db, db_query(db, "SELECT COUNT(*) FROM work_queue WHERE "
	    "kind = 'storage_link_load' AND status = 'running' AND ref_id = ? AND "
	    "customer_id = ?", "ss", x->t->id, x->customer))) != 0) {
		x->outcome = TABLE_DROP_BUSY;
		return n < 0 ? (int)n : 0;
	}
	if ((x->links = count_of(db, db_query(db, "SELECT COUNT(*) FROM table_links WHERE "
	    "table_id = ? AND customer_id = ?", "ss", x->t->id, x->customer))) < 0)
		return (int)x->links;
	x->err[0] = '\0';
	if (wh_table_drop(x->wh, x->t->wh_schema, x->t->wh_table, x->err, sizeof x->err) != 0) {
		x->outcome = TABLE_DROP_FAILED;
		return DB_ERR;                 /* the rows stay */
	}
	if ((n = db_exec(db, "DELETE FROM warehouse_tables WHERE id = ? AND customer_id = ?",
	                 "ss", x->t->id, x->customer)) < 0)
		return (int)n;
	x->outcome = TABLE_DROP_DONE;
	return 0;
}

static int drop_or_reply(struct req *r, struct table_drop *x)
{
	struct json_object *o;
	int rc;

	rc = db_tx(r->db, "storage table delete", table_drop_tx, x);
	if (x->outcome == TABLE_DROP_FAILED) {
		log_kv(LOG_ERROR, "warehouse table not dropped", "table=%s schema=%s error=%s",
		       x->t->id, x->t->wh_schema, LOG_Q(x->err));
		return storage_reply(r, STORAGE_WAREHOUSE_DROP_FAILED);
	}
	if (rc < 0)
		return resp_db_error(r, rc);
	switch (x->outcome) {
	case TABLE_DROP_GONE:
		return storage_reply(r, STORAGE_TABLE_NOT_FOUND);
	case TABLE_DROP_LINKED:
		o = json_object_new_object();
		json_object_object_add(o, "table_id", json_object_new_string(x->t->id));
		json_object_object_add(o, "active_links", json_object_new_int64(x->active));
		return storage_reply_with(r, STORAGE_TABLE_LINKED, NULL, o);
	case TABLE_DROP_BUSY:
		return storage_reply(r, STORAGE_TABLE_BUSY);
	default:
		break;
	}
	log_kv(LOG_INFO, "storage table deleted", "table=%s schema=%s name=%s links=%lld "
	       "customer=%s", x->t->id, x->t->wh_schema, LOG_Q(x->t->wh_table), x->links,
	       x->customer);
	o = json_object_new_object();
	json_object_object_add(o, "table_id", json_object_new_string(x->t->id));
	json_object_object_add(o, "table_name", json_object_new_string(x->t->table_name));
	json_object_object_add(o, "deleted", json_object_new_boolean(true));
	json_object_object_add(o, "links_removed", json_object_new_int64(x->links));
	return resp_json(r, 200, o);
}

int storage_table_delete(struct req *r)
{
	struct storage_table t = { .cols = NULL };
	struct table_drop x = { .t = &t };
	char err[512], sql[64];
	int rc = -1;

	if ((x.customer = auth_customer_or_reply(r)) == NULL ||
	    storage_query_or_reply(r, storage_delete_query, &x.force, NULL) != 0)
		return -1;
	if (storage_table_of_caller(r, x.customer, req_param(r, "table_id"), &t) != 0)
		goto out;
	if ((x.wh = wh_open(r->cfg, err, sizeof err)) == NULL) {
		log_kv(LOG_ERROR, "warehouse unavailable", "error=%s", LOG_Q(err));
		storage_reply(r, STORAGE_WAREHOUSE_UNAVAILABLE);
		goto out;
	}
	/* A load that started after the check holds the table: wait briefly,
	 * never as long as the load may take. */
	snprintf(sql, sizeof sql, "SET SESSION lock_wait_timeout = %d", TABLE_DROP_LOCK_WAIT_S);
	if (wh_exec(x.wh, sql, err, sizeof err) < 0) {
		log_kv(LOG_ERROR, "warehouse session not set", "error=%s", LOG_Q(err));
		storage_reply(r, STORAGE_WAREHOUSE_UNAVAILABLE);
		goto out;
	}
	rc = drop_or_reply(r, &x);
out:
	wh_close(x.wh);
	storage_table_free(&t);
	return rc;
}
