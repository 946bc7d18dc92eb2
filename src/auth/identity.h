/* identity.h - the canonical forms of the identities sluice compares.
 *
 * Ownership rests on two identities: the customer id a token carries and
 * the name of a Basic user.  Both are compared byte for byte: an id or name
 * that differs in case, spacing or accents is another identity.  Customer
 * ids are taken only in their canonical form, checked here at the edge, in
 * which the database's collation compares exactly too; user names are
 * compared exactly by their column's binary collation (migration 008). */
#ifndef SLUICE_IDENTITY_H
#define SLUICE_IDENTITY_H

#include <stdbool.h>

#define IDENTITY_CUSTOMER_ID_MAX 36     /* customers.id, CHAR(36) */
#define IDENTITY_USER_NAME_MAX 128      /* api_users.name */

/* 1..36 characters of a-z, 0-9, '-' and '_': what `sluice customer add`
 * makes (a lower-case UUID), an integer's digits, or an id of that shape. */
bool identity_customer_id_ok(const char *id);
/* 1..128 bytes with no space, control character or ':' (a colon would end
 * the user name in a Basic header). */
bool identity_user_name_ok(const char *name);

#endif
