/* openapi.c - GET /openapi.json: the API's machine-readable contract.
 *
 * The build turns docs/openapi.yaml into openapi_json (scripts/openapi-to-c),
 * so the answer is the document the binary was built from, whatever is
 * installed beside it.  Public like /health: it describes, it reveals no
 * customer's data. */
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "serve/routes.h"

int openapi_get(struct req *r)
{
	struct verror e;

	if (validate_query(vfields_none, r, NULL, NULL, &e) != 0)
		return resp_detail(r, 400, e.message);
	return resp_raw(r, 200, "application/json", openapi_json,
	                openapi_json_len);
}
