#!/usr/bin/perl
# POST/GET /storage-explorer/tables and GET /storage-explorer/tables/{id}:
# the real table in the warehouse, the name rules, column checks, 409 on a
# taken name, pagination, and isolation between two customers.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("tb-a-$t");
my ($cid_b, $tok_b) = customer_with_token("tb-b-$t");
my (undef, $reader) = customer_with_token("tb-a-$t", 'STORAGE_EXPLORER.READ');

my @cols = (
	{ name => 'id', type => 'BIGINT', nullable => JSON::PP::false },
	{ name => 'amount', type => 'decimal(12, 2)' },
	{ name => 'ratio', type => 'DOUBLE', nullable => JSON::PP::true },
	{ name => 'active', type => 'BOOLEAN' },
	{ name => 'day', type => 'DATE' },
	{ name => 'seen_at', type => 'TIMESTAMP' },
	{ name => 'code', type => 'VARCHAR(16)' },
	{ name => 'Note Text', type => 'VARCHAR' },
	{ name => 'n', type => 'INTEGER' },
);

# --- create --------------------------------------------------------------------------

my $res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'Sales', columns => \@cols });
json_response_is($res, 201, undef, 'create');
my $tb = $res->{json};
is_deeply([ sort keys %$tb ], [ sort qw(table_id table_name schema_name columns warehouse_schema
	warehouse_table created_by created_at) ], 'Table keys');
like($tb->{table_id}, uuid_re(), 'table_id is a UUID');
is($tb->{table_name}, 'Sales', 'table_name as given');
is($tb->{schema_name}, undef, 'schema_name null: the default schema');
is_deeply($tb->{columns}, [
	{ name => 'id', type => 'BIGINT', nullable => false },
	{ name => 'amount', type => 'DECIMAL(12,2)', nullable => true },
	{ name => 'ratio', type => 'DOUBLE', nullable => true },
	{ name => 'active', type => 'BOOLEAN', nullable => true },
	{ name => 'day', type => 'DATE', nullable => true },
	{ name => 'seen_at', type => 'TIMESTAMP', nullable => true },
	{ name => 'code', type => 'VARCHAR(16)', nullable => true },
	{ name => 'Note Text', type => 'VARCHAR', nullable => true },
	{ name => 'n', type => 'INTEGER', nullable => true },
], 'columns in canonical form, nullable by default');
is($tb->{warehouse_schema}, wh_schema($cid, 'warehouse'), 'the customer\'s own database of the default schema');
is($tb->{warehouse_table}, 'Sales', 'warehouse_table is the name');
is($tb->{created_by}, "tb-a-$t\@example.com", 'created_by is the token sub');
iso_time_ok($tb->{created_at}, 'created_at');

# The real table and its columns.
my @ddl = mysql("SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
	. "WHERE TABLE_SCHEMA = '$tb->{warehouse_schema}' AND TABLE_NAME = 'Sales' ORDER BY ORDINAL_POSITION");
is_deeply(\@ddl, [
	[ 'id', 'bigint(20)', 'NO' ], [ 'amount', 'decimal(12,2)', 'YES' ],
	[ 'ratio', 'double', 'YES' ], [ 'active', 'tinyint(1)', 'YES' ],
	[ 'day', 'date', 'YES' ], [ 'seen_at', 'datetime(6)', 'YES' ],
	[ 'code', 'varchar(16)', 'YES' ], [ 'Note Text', 'longtext', 'YES' ],
	[ 'n', 'int(11)', 'YES' ],
], 'the warehouse table has the columns');
my ($row) = mysql("SELECT customer_id, schema_name, table_name, wh_schema, wh_table, created_by "
	. "FROM warehouse_tables WHERE id = '$tb->{table_id}'");
is_deeply($row, [ $cid, '', 'Sales', $tb->{warehouse_schema}, 'Sales', "tb-a-$t\@example.com" ],
	  'the warehouse_tables row');

# With a schema_name.
$res = st(POST => '/storage-explorer/tables', $tok,
	  { table_name => 'orders', schema_name => 'Finance', columns => [ { name => 'id', type => 'INTEGER' } ] });
json_response_is($res, 201, undef, 'create in a schema');
my $fin = $res->{json};
is($fin->{schema_name}, 'Finance', 'schema_name as given');
is($fin->{warehouse_schema}, wh_schema($cid, 'Finance'), 'schema lower-cased with the customer hash');
is(mysql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
	 . "'$fin->{warehouse_schema}' AND TABLE_NAME = 'orders'"), 1, 'real table in that schema');

# Same name, other schema: fine.  Same name, same schema, any case: 409.
$res = st(POST => '/storage-explorer/tables', $tok,
	  { table_name => 'Sales', schema_name => 'finance', columns => [ { name => 'id', type => 'INTEGER' } ] });
is($res->{status}, 201, 'same name in another schema: 201');
is($res->{json}{warehouse_schema}, $fin->{warehouse_schema}, 'Finance and finance are one schema');

for my $name ('Sales', 'sales', 'SALES') {
	$res = st(POST => '/storage-explorer/tables', $tok, { table_name => $name, columns => \@cols });
	json_response_is($res, 409, { error => 'table_exists', table_id => $tb->{table_id},
		message => 'A table of this name already exists (names are compared without regard to case)' },
		"409 for $name");
}
is(mysql("SELECT COUNT(*) FROM warehouse_tables WHERE customer_id = '$cid'"), 3, 'no row added by 409s');

# --- invalid names ------------------------------------------------------------------------

$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'select', columns => \@cols });
json_response_is($res, 400, { error => 'invalid_table_name',
	message => 'table_name is a reserved word in MariaDB and Snowflake: SELECT',
	errors => [ 'table_name is a reserved word in MariaDB and Snowflake: SELECT' ],
	suggestions => [ 'select_table', 't_select' ] }, 'reserved table name');
$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'x' x 65, columns => \@cols });
is($res->{status}, 400, '65 characters: 400');
is($res->{json}{errors}[0], 'table_name is 65 characters long: MariaDB allows at most 64', '65: message');
$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'x' x 64, columns => [ { name => 'a', type => 'INTEGER' } ] });
is($res->{status}, 201, '64 characters: 201');
# the column bounds at their largest: a name of 64 characters (128 bytes), a type text of 64
# (a customer of its own: the listings below count A's tables)
my (undef, $tok_c) = customer_with_token("tb-c-$t");
$res = st(POST => '/storage-explorer/tables', $tok_c, { table_name => 'col_bounds',
	  columns => [ { name => "\x{e9}" x 64, type => 'VARCHAR(' . (' ' x 52) . '255)' } ] });
is($res->{status}, 201, 'column name of 64 characters, type text of 64: 201') or diag describe($res);
is_deeply($res->{json}{columns}, [ { name => "\x{e9}" x 64, type => 'VARCHAR(255)', nullable => true } ],
	  'stored canonical');
$res = st(POST => '/storage-explorer/tables', $tok,
	  { table_name => 'ok_name', schema_name => 'my-schema', columns => \@cols });
json_response_is($res, 400, { error => 'invalid_schema_name',
	message => "schema_name contains '-': neither MariaDB nor Snowflake allows it in an unquoted "
		 . "name (letters, digits, '_' and '\$' only)",
	errors => [ "schema_name contains '-': neither MariaDB nor Snowflake allows it in an unquoted "
		  . "name (letters, digits, '_' and '\$' only)" ],
	suggestions => [ 'my_schema', 's_my_schema' ] }, 'invalid schema_name');

# --- invalid bodies and columns ---------------------------------------------------------------

my @bad = (
	[ { columns => \@cols }, 'invalid_request', 'table_name is required' ],
	[ { table_name => 7, columns => \@cols }, 'invalid_request', 'table_name must be a string' ],
	[ { table_name => 'a' }, 'invalid_request', 'columns is required' ],
	[ { table_name => 'a', columns => [] }, 'invalid_request', 'columns must have 1 to 1000 elements' ],
	[ { table_name => 'a', columns => {} }, 'invalid_request', 'columns must be an array' ],
	[ { table_name => 'a', columns => [ ({ name => 'c', type => 'INTEGER' }) x 1001 ] },
	  'invalid_request', 'columns must have 1 to 1000 elements' ],
	[ { table_name => 'a', columns => \@cols, owner => 'x' }, 'invalid_request', 'owner is not a known field' ],
	[ { table_name => undef, columns => \@cols }, 'invalid_request', 'table_name is required' ],
	[ { table_name => 'a', schema_name => [], columns => \@cols }, 'invalid_request',
	  'schema_name must be a string' ],
	[ [ 'a' ], 'invalid_request', 'The body must be a JSON object' ],
);
for my $c (@bad) {
	json_response_is(st(POST => '/storage-explorer/tables', $tok, $c->[0]), 400,
			 { error => $c->[1], message => $c->[2] }, "400: $c->[2]");
}

my @bad_cols = (
	[ [ 'id' ], 'columns[0] must be an object {"name", "type", "nullable"}' ],
	[ [ { type => 'INTEGER' } ], 'columns[0].name is required' ],
	[ [ { name => 5, type => 'INTEGER' } ], 'columns[0].name must be a string' ],
	[ [ { name => '', type => 'INTEGER' } ], 'columns[0].name must be 1 to 64 characters long' ],
	[ [ { name => 'x' x 65, type => 'INTEGER' } ], 'columns[0].name must be 1 to 64 characters long' ],
	[ [ { name => "\x{e9}" x 65, type => 'INTEGER' } ], 'columns[0].name must be 1 to 64 characters long' ],
	[ [ { name => ' x', type => 'INTEGER' } ], 'columns[0].name must not start or end with a space' ],
	[ [ { name => "a\tb", type => 'INTEGER' } ], 'columns[0].name must not contain control characters' ],
	[ [ { name => 'id', type => 'INTEGER' }, { name => 'ID', type => 'BIGINT' } ],
	  "columns[1].name 'ID' repeats columns[0].name 'id' (names are compared without regard to case)" ],
	[ [ { name => 'a' } ], 'columns[0].type is required' ],
	[ [ { name => 'a', type => 5 } ], 'columns[0].type must be a string' ],
	[ [ { name => 'a', type => 'x' x 65 } ], 'columns[0].type must be 1 to 64 characters long' ],
	[ [ { name => 'a', type => 'FLOAT' } ], "columns[0].type 'FLOAT': unknown type: use one of INTEGER, "
	  . 'BIGINT, DECIMAL(p,s), DOUBLE, BOOLEAN, DATE, TIMESTAMP, VARCHAR or VARCHAR(n)' ],
	[ [ { name => 'a', type => 'DECIMAL(39,2)' } ],
	  "columns[0].type 'DECIMAL(39,2)': DECIMAL(p,s) needs p from 1 to 38 and s from 0 to p" ],
	[ [ { name => 'a', type => 'DECIMAL' } ],
	  "columns[0].type 'DECIMAL': DECIMAL needs a precision and a scale: DECIMAL(p,s) with p 1 to 38" ],
	[ [ { name => 'a', type => 'VARCHAR(65536)' } ],
	  "columns[0].type 'VARCHAR(65536)': VARCHAR(n) needs n from 1 to 65535" ],
	[ [ { name => 'a', type => 'INTEGER', nullable => 'yes' } ], 'columns[0].nullable must be a boolean' ],
	[ [ { name => 'a', type => 'INTEGER', default => 1 } ], 'columns[0].default is not a known field' ],
	[ [ map { { name => "c$_", type => 'VARCHAR(1024)' } } 1 .. 16 ],
	  "the columns take 65568 bytes of MariaDB's 65535-byte row limit (a VARCHAR(n) up to 1024 takes "
	  . '4n bytes): use VARCHAR without a length, or VARCHAR above 1024, for long text' ],
);
for my $c (@bad_cols) {
	$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'cols_t', columns => $c->[0] });
	json_response_is($res, 400, { error => 'invalid_columns', message => $c->[1], errors => [ $c->[1] ] },
			 "columns: $c->[1]");
}
# A table already in the warehouse at that place (made by hand): 409, no row.
mysql("CREATE TABLE `$tb->{warehouse_schema}`.`by_hand` (x INT)");
$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'by_hand', columns => \@cols });
json_response_is($res, 409, { error => 'table_exists',
	message => "The warehouse already has a table $tb->{warehouse_schema}.by_hand" },
	'warehouse table exists: 409');
is(mysql("SELECT COUNT(*) FROM warehouse_tables WHERE table_name = 'by_hand'"), 0, 'no row for it');
is(mysql("SELECT COUNT(*) FROM `$tb->{warehouse_schema}`.`by_hand`"), 0, 'the hand-made table kept');

# Several wrong columns: every one named.
$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'cols_t',
	  columns => [ { name => 'a', type => 'X' }, { name => 'b', type => 'INTEGER' }, { name => 'B', type => 'Y' } ] });
is(scalar @{ $res->{json}{errors} || [] }, 3, 'three column errors listed');
# Bounds: 1000 columns are fine.
$res = st(POST => '/storage-explorer/tables', $tok, { table_name => 'wide_t',
	  columns => [ map { { name => "c$_", type => 'INTEGER' } } 1 .. 1000 ] });
is($res->{status}, 201, '1000 columns: 201') or diag describe($res);
is(mysql("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
	 . "'$res->{json}{warehouse_schema}' AND TABLE_NAME = 'wide_t'"), 1000, '1000 real columns');
is(mysql("SELECT COUNT(*) FROM warehouse_tables WHERE customer_id = '$cid' AND table_name = 'cols_t'"),
   0, 'no row for refused bodies');

# --- GET ---------------------------------------------------------------------------------------

$res = st(GET => '/storage-explorer/tables', $tok);
json_response_is($res, 200, undef, 'list');
is_deeply([ map { $_->{table_name} } @{ $res->{json}{tables} } ],
	  [ 'Sales', 'orders', 'Sales', 'x' x 64, 'wide_t' ], 'list in creation order');
is_deeply($res->{json}{pagination}, { current_page => 1, total_pages => 1, total_items => 5,
	items_per_page => 20, has_next => false, has_previous => false }, 'pagination');
is_deeply($res->{json}{tables}[0], $tb, 'list entry is the Table object');

$res = st(GET => '/storage-explorer/tables?page=2&limit=2', $tok);
is_deeply([ map { $_->{table_name} } @{ $res->{json}{tables} } ], [ 'Sales', 'x' x 64 ], 'page 2 of 2');
is_deeply($res->{json}{pagination}, { current_page => 2, total_pages => 3, total_items => 5,
	items_per_page => 2, has_next => true, has_previous => true }, 'pagination page 2');
$res = st(GET => '/storage-explorer/tables?page=9', $tok);
is_deeply($res->{json}{tables}, [], 'past the end: empty');
for my $q ([ 'limit=0', 'limit must be an integer from 1 to 100' ],
	   [ 'limit=101', 'limit must be an integer from 1 to 100' ],
	   [ 'page=0', 'page must be an integer from 1 to 1000000000' ],
	   [ 'page=1000000001', 'page must be an integer from 1 to 1000000000' ],
	   [ 'page=x', 'page must be an integer' ],
	   [ 'folder_path=a', 'folder_path is not a known query parameter' ]) {
	json_response_is(st(GET => "/storage-explorer/tables?$q->[0]", $tok), 400,
			 { error => 'invalid_query', message => $q->[1] }, "$q->[0]: 400");
}
is(st(GET => '/storage-explorer/tables?limit=100', $tok)->{status}, 200, 'limit=100: 200');
is(st(GET => '/storage-explorer/tables?page=1000000000', $tok)->{status}, 200, 'page=1000000000: 200');

$res = st(GET => "/storage-explorer/tables/$tb->{table_id}", $tok);
json_response_is($res, 200, { %$tb, links => [] }, 'GET one: Table with links');
$res = st(GET => '/storage-explorer/tables/' . uc $tb->{table_id}, $tok);
is($res->{status}, 200, 'upper-case id: same table');
$res = st(GET => '/storage-explorer/tables/not-a-uuid', $tok);
json_response_is($res, 404, { error => 'table_not_found', message => 'Table not found' }, 'malformed id: 404');
$res = st(GET => '/storage-explorer/tables/00000000-0000-4000-8000-000000000000', $tok);
json_response_is($res, 404, { error => 'table_not_found', message => 'Table not found' }, 'unknown id: 404');
is(st(GET => '/storage-explorer/tables', $reader)->{status}, 200, 'READ may list');
is(st(POST => '/storage-explorer/tables', $reader, { table_name => 'r', columns => \@cols })->{status},
   403, 'READ may not create');
is(http(GET => '/storage-explorer/tables')->{status}, 401, 'no token: 401');
is(http(POST => '/storage-explorer/tables', { json => {} })->{status}, 401, 'no token (POST): 401');
is(http(PUT => '/storage-explorer/tables', { token => $tok, json => {} })->{status}, 405, 'PUT: 405');

# --- isolation -----------------------------------------------------------------------------------

$res = st(GET => '/storage-explorer/tables', $tok_b);
is_deeply($res->{json}{tables}, [], "B sees none of A's tables");
is($res->{json}{pagination}{total_items}, 0, 'B counts none');
json_response_is(st(GET => "/storage-explorer/tables/$tb->{table_id}?links=0", $tok), 400,
		 { error => 'invalid_query', message => 'links is not a known query parameter' },
		 'GET table with a query parameter: 400 naming it');
json_response_is(st(POST => '/storage-explorer/tables?dry_run=1', $tok, { table_name => 'q_t', columns => \@cols }),
		 400, { error => 'invalid_query', message => 'dry_run is not a known query parameter' },
		 'create with a query parameter: 400 naming it');
$res = st(GET => "/storage-explorer/tables/$tb->{table_id}", $tok_b);
json_response_is($res, 404, { error => 'table_not_found', message => 'Table not found' },
		 "A's table for B: 404 as unknown");
$res = st(POST => '/storage-explorer/tables', $tok_b, { table_name => 'Sales', columns => \@cols });
is($res->{status}, 201, 'B may have a Sales too');
isnt($res->{json}{warehouse_schema}, $tb->{warehouse_schema}, "B's Sales lives apart");
is($res->{json}{warehouse_schema}, wh_schema($cid_b, 'warehouse'), "B's schema: its own database");
is(scalar @{ st(GET => '/storage-explorer/tables', $tok)->{json}{tables} }, 5, 'A still has 5');

done_testing();
