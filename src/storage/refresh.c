/* refresh.c - PUT /storage-explorer/datasets/{datasetId}/refresh-schema.
 *
 * The body's options (all optional) are checked for type and value (400),
 * then against the file's format (422), then the schema is inferred again
 * with them.  Where that runs: in the request when the file is at most
 * refresh_inline_max_bytes (Parquet always: only its footer is read; XLS
 * never: libfreexl is kept out of serve workers), so
 * the worker is held for a short, bounded time; a larger file goes to
 * `sluice work` as a storage_infer item and the worker answers at once with
 * a redirect to the waiter (http/wait.h), which answers the client when the
 * item is done, or 202 when refresh_wait_s ran out (the result then appears
 * on GET /storage-explorer/datasets/{id}).  No worker ever waits for it.  A
 * refresh that fails leaves the dataset as it was.  The options given are
 * stored and used by every later inference of the dataset (a re-upload
 * included). */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "http/wait.h"
#include "storage/storage.h"
#include "tabular/tabular.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/wake.h"

#define ROWS_OPTION_MAX 1000000000LL

/* The encodings a client may name (any case), and what each is stored and
 * passed to the reader as. */
static const char *const encodings[] = {
	"utf-8", "utf8", "utf-16", "utf16", "utf-16le", "utf-16be", "latin-1",
	"latin1", "iso-8859-1", "iso8859-1", "windows-1252", "cp1252", NULL
};
static const char *const encodings_canon[] = {
	"utf-8", "utf-8", "utf-16", "utf-16", "utf-16le", "utf-16be", "latin-1",
	"latin-1", "latin-1", "latin-1", "windows-1252", "windows-1252"
};
_Static_assert(sizeof encodings / sizeof encodings[0] ==
               sizeof encodings_canon / sizeof encodings_canon[0] + 1,
               "one stored name per encoding a client may name");

struct refresh_in {
	const char *sheet_name, *delimiter;
	long long skip_rows, header_row;
	int encoding;                       /* index in encodings */
	struct json_object *null_markers;
};

/* delimiter: stored as the reader takes it (a tab, or a space for runs of
 * spaces and tabs). */
static int delimiter_check(struct json_object *v, void *out, char *msg, size_t len)
{
	const char *s, *d = NULL;

	if (!json_object_is_type(v, json_type_string)) {
		snprintf(msg, len, "must be a string");
		return -1;
	}
	s = json_object_get_string(v);
	if (strcmp(s, ",") == 0 || strcmp(s, ";") == 0 || strcmp(s, "|") == 0)
		d = s;
	else if (strcmp(s, "\t") == 0 || str_eq_nocase(s, "tab"))
		d = "\t";
	else if (strcmp(s, " ") == 0 || str_eq_nocase(s, "space"))
		d = " ";
	if (d == NULL) {
		snprintf(msg, len, "must be one of \",\", \";\", \"|\", a tab (\"\\t\" or "
		         "\"tab\") or a space (\" \" or \"space\")");
		return -1;
	}
	*(const char **)out = d;
	return 0;
}

/* null_markers: an array of at most TAB_MARKERS_MAX strings of 1 to
 * TAB_MARKER_MAX - 1 bytes, no control characters. */
static int null_markers_check(struct json_object *v, void *out, char *msg, size_t len)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) > TAB_MARKERS_MAX) {
		snprintf(msg, len, "must be an array of at most %d strings", TAB_MARKERS_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(v, i);
		const char *s = json_object_is_type(m, json_type_string) ? json_object_get_string(m)
		                                                        : NULL;
		size_t k = s != NULL ? strlen(s) : 0;

		if (s == NULL || k == 0 || k >= TAB_MARKER_MAX ||
		    k != (size_t)json_object_get_string_len(m)) {
			snprintf(msg, len, "must hold strings of 1 to %d bytes", TAB_MARKER_MAX - 1);
			return -1;
		}
		for (size_t c = 0; c < k; c++)
			if ((unsigned char)s[c] < 0x20 || s[c] == 0x7f) {
				snprintf(msg, len, "must not hold control characters");
				return -1;
			}
	}
	*(struct json_object **)out = v;
	return 0;
}

const struct vfield storage_refresh_body[] = {
	{ "sheet_name", V_STR, V_BYTES, 1, TAB_SHEET_MAX - 1, NULL, NULL,
	  VOFF(struct refresh_in, sheet_name) },
	{ "skip_rows", V_INT, 0, 0, ROWS_OPTION_MAX, NULL, NULL,
	  VOFF(struct refresh_in, skip_rows) },
	{ "header_row", V_INT, 0, 0, ROWS_OPTION_MAX, NULL, NULL,
	  VOFF(struct refresh_in, header_row) },
	{ "encoding", V_ENUM, V_NOCASE, 0, 0, encodings, NULL,
	  VOFF(struct refresh_in, encoding) },
	{ "delimiter", V_CHECK, 0, 0, 0, NULL, delimiter_check,
	  VOFF(struct refresh_in, delimiter) },
	{ "null_markers", V_CHECK, 0, 0, 0, NULL, null_markers_check,
	  VOFF(struct refresh_in, null_markers) },
	VFIELDS_END
};

/* The options given, normalised: what is stored and applied (a new
 * object, the members in the table's order). */
static struct json_object *options_json(const struct refresh_in *in, vgiven given)
{
	struct json_object *o = json_object_new_object();

	if (validate_given(storage_refresh_body, given, "sheet_name"))
		json_object_object_add(o, "sheet_name", json_object_new_string(in->sheet_name));
	if (validate_given(storage_refresh_body, given, "skip_rows"))
		json_object_object_add(o, "skip_rows", json_object_new_int64(in->skip_rows));
	if (validate_given(storage_refresh_body, given, "header_row"))
		json_object_object_add(o, "header_row", json_object_new_int64(in->header_row));
	if (validate_given(storage_refresh_body, given, "encoding"))
		json_object_object_add(o, "encoding",
		                       json_object_new_string(encodings_canon[in->encoding]));
	if (validate_given(storage_refresh_body, given, "delimiter"))
		json_object_object_add(o, "delimiter", json_object_new_string(in->delimiter));
	if (validate_given(storage_refresh_body, given, "null_markers"))
		json_object_object_add(o, "null_markers", json_object_get(in->null_markers));
	return o;
}

/* The body's options (all optional: no body at all is none) into *out (a
 * new object).  0, or the 400 was answered and -1. */
static int options_or_reply(struct req *r, struct json_object **out)
{
	struct refresh_in in = { .sheet_name = NULL };
	vgiven given = 0;

	*out = NULL;
	if ((r->content_length > 0 || r->content_type[0] != '\0') &&
	    storage_body_or_reply(r, storage_refresh_body, &in, &given,
	                          STORAGE_BAD_PARSING_OPTIONS) != 0)
		return -1;
	*out = options_json(&in, given);
	return 0;
}

/* 422 for an option the format does not take. */
static int check_format(struct req *r, enum tab_format f, struct json_object *opts)
{
	static const struct {
		const char *option;
		unsigned formats;            /* bit per enum tab_format that takes it */
	} takes[] = {
		{ "sheet_name", 1u << TAB_XLSX | 1u << TAB_XLS },
		{ "delimiter", 1u << TAB_CSV | 1u << TAB_TXT },
		{ "encoding", 1u << TAB_CSV | 1u << TAB_TXT },
		{ "skip_rows", 1u << TAB_CSV | 1u << TAB_TXT | 1u << TAB_XLSX | 1u << TAB_XLS },
		{ "header_row", 1u << TAB_CSV | 1u << TAB_TXT | 1u << TAB_XLSX | 1u << TAB_XLS },
		{ "null_markers", 1u << TAB_CSV | 1u << TAB_TXT },
	};

	for (size_t i = 0; i < sizeof takes / sizeof takes[0]; i++)
		if (json_object_object_get_ex(opts, takes[i].option, NULL) &&
		    !(takes[i].formats & 1u << f))
			return storage_replyf(r, STORAGE_OPTION_NOT_SUPPORTED,
			                      "%s does not apply to %s files", takes[i].option,
			                      tab_format_name(f));
	return 0;
}

/* The 200 of a refreshed dataset into *body (takes opts).  0, 1 when the
 * dataset is gone, < 0 enum db_err. */
static int answer_json(struct db *db, const struct storage_dataset *ds,
                       struct json_object *opts, struct json_object **body)
{
	struct json_object *o, *schema = NULL, *at = NULL;
	struct db_stmt *st;
	int rc;

	*body = NULL;
	st = db_query(db, "SELECT schema_json, refreshed_at FROM datasets WHERE id = ?",
	              "s", ds->id);
	if (st == NULL) {
		json_object_put(opts);
		return db_last_err(db);
	}
	if ((rc = db_fetch(st)) == 1) {
		schema = db_col_null(st, 0) ? NULL : json_tokener_parse(db_col_str(st, 0));
		at = storage_json_time(db_col_str(st, 1));
	}
	db_done(st);
	if (rc != 1) {
		json_object_put(opts);
		return rc < 0 ? db_last_err(db) : 1;
	}
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds->id));
	json_object_object_add(o, "dataset_name", json_object_new_string(ds->file_name));
	json_object_object_add(o, "status", json_object_new_string("schema_refreshed"));
	json_object_object_add(o, "parsing_options", opts);
	storage_schema_for_api(schema);
	json_object_object_add(o, "schema", schema);
	json_object_object_add(o, "refreshed_at", at);
	*body = o;
	return 0;
}

static int answer(struct req *r, const struct storage_dataset *ds,
                  struct json_object *opts)
{
	struct json_object *o;
	int rc = answer_json(r->db, ds, opts, &o);

	if (rc < 0)
		return resp_db_error(r, rc);
	if (rc == 1)
		return storage_reply(r, STORAGE_DATASET_NOT_FOUND);
	return resp_json(r, 200, o);
}

/* The 400 (the reader refused an option) or 422 (the file could not be
 * read with the options) of a refresh that failed, and its status. */
static struct json_object *refused_json(bool option_err, const char *why, int *status)
{
	char msg[640];

	if (option_err)
		return storage_err_json(STORAGE_BAD_PARSING_OPTIONS, why, status);
	snprintf(msg, sizeof msg, "The file could not be read with these options: %s", why);
	return storage_err_json(STORAGE_REFRESH_FAILED, msg, status);
}

static int refresh_inline(struct req *r, const struct storage_dataset *ds,
                          struct json_object *opts, const struct tab_opts *to)
{
	struct json_object *schema = NULL;
	long long rows, analyzed;
	const char *opts_text = json_object_to_json_string_ext(opts, JSON_C_TO_STRING_PLAIN);
	bool option_err;
	char why[512] = "";
	long long n;
	int status;

	if (storage_infer_dataset(r->cfg, ds, to, &schema, &rows, &analyzed, &option_err,
	                          why, sizeof why) != 0) {
		struct json_object *o = refused_json(option_err, why, &status);

		json_object_put(opts);
		resp_json(r, status, o);
		return -1;
	}
	n = db_exec(r->db, "UPDATE datasets SET status = 'ready', schema_json = ?, "
	            "row_count = ?, analyzed_rows = ?, error = NULL, parsing_options = ?, "
	            "refreshed_at = UTC_TIMESTAMP(3) WHERE id = ?", "siiss",
	            json_object_to_json_string_ext(schema, JSON_C_TO_STRING_PLAIN), rows,
	            analyzed, opts_text, ds->id);
	json_object_put(schema);
	if (n < 0) {
		json_object_put(opts);
		return resp_db_error(r, (int)n);
	}
	return answer(r, ds, opts);
}

/* The 202 of a refresh still running in sluice work. */
static struct json_object *refreshing(const struct storage_dataset *ds,
                                      struct json_object *opts)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "dataset_id", json_object_new_string(ds->id));
	json_object_object_add(o, "dataset_name", json_object_new_string(ds->file_name));
	json_object_object_add(o, "status", json_object_new_string("refreshing"));
	json_object_object_add(o, "parsing_options", opts);
	json_object_object_add(o, "message", json_object_new_string(
	    "The file is large: the schema is being inferred in the background; "
	    "GET /storage-explorer/datasets/{id} shows it once refreshed_at changes"));
	return o;
}

/* The answer of a finished (or, final, still running) refresh item. */
static int refresh_outcome(struct db *db, const struct storage_dataset *ds,
                           long long item_id, bool final, struct json_object *opts,
                           int *status, struct json_object **body)
{
	char st[16] = "", why[512] = "";
	size_t k = strlen(STORAGE_OPTION_ERR);
	int rc = queue_status(db, item_id, st, sizeof st, why, sizeof why, NULL);

	if (rc < 0) {
		json_object_put(opts);
		return rc;
	}
	if (strcmp(st, "done") == 0) {
		*status = 200;
		if ((rc = answer_json(db, ds, opts, body)) == 1) {
			*body = storage_err_json(STORAGE_DATASET_NOT_FOUND, NULL, status);
			rc = 0;
		}
		return rc;
	}
	if (strcmp(st, "failed") == 0) {
		bool option = strncmp(why, STORAGE_OPTION_ERR, k) == 0;

		json_object_put(opts);
		*body = refused_json(option, option ? why + k : why, status);
		return 0;
	}
	if (!final) {
		json_object_put(opts);
		return 1;                     /* not yet */
	}
	*status = 202;
	*body = refreshing(ds, opts);
	return 0;
}

int storage_refresh_result(struct db *db, const char *customer_id,
                           const char *dataset_id, long long item_id, bool final,
                           int *status, struct json_object **body)
{
	struct storage_dataset ds;
	struct json_object *payload = NULL, *opts = NULL;
	char pst[16], perr[8], *text = NULL;
	int rc;

	*body = NULL;
	if ((rc = storage_dataset_load(db, customer_id, dataset_id, &ds)) <= 0) {
		if (rc == 0)
			*body = storage_err_json(STORAGE_DATASET_NOT_FOUND, NULL, status);
		return rc < 0 ? rc : 0;
	}
	/* The options applied are the item's. */
	if ((rc = queue_status(db, item_id, pst, sizeof pst, perr, sizeof perr,
	                       &text)) <= 0)
		return rc < 0 ? rc : DB_ERR;
	payload = text != NULL ? json_tokener_parse(text) : NULL;
	free(text);
	if (payload == NULL || !json_object_object_get_ex(payload, "refresh", &opts))
		opts = NULL;
	opts = opts != NULL ? json_object_get(opts) : json_object_new_object();
	json_object_put(payload);
	return refresh_outcome(db, &ds, item_id, final, opts, status, body);
}

/* Hand the refresh to sluice work; the waiter answers when it is done (or
 * refresh_wait_s passed): the worker does not wait. */
static int refresh_by_worker(struct req *r, const struct storage_dataset *ds,
                             struct json_object *opts)
{
	struct json_object *p = json_object_new_object();
	char item[24];
	long long id;

	json_object_object_add(p, "refresh", json_object_get(opts));
	id = queue_enqueue(r->db, &(struct queue_new){ .kind = "storage_infer",
	    .ref_id = ds->id, .customer_id = ds->customer_id, .max_attempts = 1,
	    .payload = json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN) });
	json_object_put(p);
	if (id < 0) {
		json_object_put(opts);
		return resp_db_error(r, (int)id);
	}
	wake_send(r->cfg, WAKE_WORK, "storage_infer", NULL);
	snprintf(item, sizeof item, "%lld", id);
	if (r->cfg->refresh_wait_s > 0 &&
	    wait_redirect(r, "refresh", ds->customer_id, ds->id, item,
	                  r->cfg->refresh_wait_s * 1000LL) == 0) {
		json_object_put(opts);
		return 0;
	}
	return resp_json(r, 202, refreshing(ds, opts));
}

int storage_refresh_put(struct req *r)
{
	struct storage_dataset ds;
	struct json_object *opts = NULL;
	struct tab_opts to;
	enum tab_format f;

	if (storage_query_or_reply(r, NULL, NULL, NULL) != 0 ||
	    storage_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0 ||
	    options_or_reply(r, &opts) != 0)
		return -1;
	if (tab_format_parse(ds.format, &f) != 0) {
		json_object_put(opts);
		return resp_internal(r, "dataset with an unknown format");
	}
	if (check_format(r, f, opts) != 0) {
		json_object_put(opts);
		return -1;
	}
	storage_opts_from_json(json_object_to_json_string_ext(opts, JSON_C_TO_STRING_PLAIN),
	                       &to);
	/* XLS never in a serve worker: libfreexl can read past its buffers on
	 * a crafted file (docs/operations.md, "Fuzzing"), and a worker's heap
	 * holds other requests' secrets; a work child holds only this item. */
	if (f == TAB_PARQUET || (f != TAB_XLS &&
	    ds.size_bytes <= r->cfg->refresh_inline_max_bytes))
		return refresh_inline(r, &ds, opts, &to);
	return refresh_by_worker(r, &ds, opts);
}
