#!/usr/bin/perl
# POST /storage-explorer/tables/validate-name: MariaDB + Snowflake rules,
# 200 for valid and invalid names alike, suggestions that are valid names,
# 400 without table_name, auth; and the verdicts checked against the real
# MariaDB server of the stack.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use TablesFixture;

my (undef, $tok) = customer_with_token('vn-' . tag());
my (undef, $reader) = customer_with_token('vn-reader-' . tag(), 'STORAGE_EXPLORER.READ');

sub vn {
	my ($body, %o) = @_;
	return st(POST => '/storage-explorer/tables/validate-name', $o{token} // $tok, $body);
}

# --- valid names -----------------------------------------------------------------

my $res = vn({ table_name => 'sales_2024' });
json_response_is($res, 200, { valid => true, table_name => 'sales_2024',
			      normalized_name => 'sales_2024', warnings => [] }, 'plain name');

$res = vn({ table_name => 'SalesData' });
json_response_is($res, 200, { valid => true, table_name => 'SalesData',
	normalized_name => 'sales_data',
	warnings => [ 'table_name has upper-case letters: Snowflake stores an unquoted '
		    . 'name in upper case (SALESDATA) while MariaDB keeps it as written and '
		    . 'compares table names case-sensitively on Linux' ] }, 'case folding warning');

$res = vn({ table_name => 'price$usd' });
is($res->{status}, 200, '$ inside: 200');
is($res->{json}{valid}, true, '$ inside: valid');
is($res->{json}{normalized_name}, 'price_usd', '$ normalized to _');
like($res->{json}{warnings}[0] // '', qr/^table_name contains '\$': MariaDB and Snowflake accept it unquoted/,
     '$ warning');

my $n64 = 'a' x 64;
$res = vn({ table_name => $n64 });
is($res->{json}{valid}, true, '64 characters: valid');
is_deeply($res->{json}{warnings},
	  [ "table_name is 64 characters long, close to MariaDB's limit of 64" ],
	  '64 characters: near-limit warning');
$res = vn({ table_name => 'a' x 56 });
is_deeply($res->{json}{warnings}, [], '56 characters: no warning');
$res = vn({ table_name => 'a' x 57 });
is(scalar @{ $res->{json}{warnings} }, 1, '57 characters: one warning');

$res = vn({ table_name => 'package' });
is($res->{json}{valid}, true, 'Oracle-mode word: valid');
is_deeply($res->{json}{warnings},
	  [ "table_name is a reserved word in MariaDB's Oracle mode (sql_mode=ORACLE): PACKAGE" ],
	  'Oracle-mode word: warning');

$res = vn({ table_name => 'orders', schema_name => 'Finance' });
json_response_is($res, 200, { valid => true, table_name => 'orders', normalized_name => 'orders',
	schema_name => 'Finance', normalized_schema_name => 'finance',
	warnings => [ 'schema_name has upper-case letters: Snowflake stores an unquoted '
		    . 'name in upper case (FINANCE) while MariaDB keeps it as written and '
		    . 'compares table names case-sensitively on Linux' ] }, 'with schema_name');

$res = vn({ table_name => 'orders', schema_name => undef });
json_response_is($res, 200, { valid => true, table_name => 'orders', normalized_name => 'orders',
			      warnings => [] }, 'schema_name null is no schema');

# --- invalid names: errors and suggestions -----------------------------------------

# Every suggestion is itself valid, by the same endpoint.
sub suggestions_valid {
	my ($res, $name) = @_;
	my @s = @{ $res->{json}{suggestions} || [] };
	ok(@s >= 1 && @s <= 3, "$name: 1 to 3 suggestions");
	for my $s (@s) {
		my $again = vn({ table_name => $s });
		is($again->{json}{valid}, true, "$name: suggestion '$s' is valid");
	}
}

my @invalid = (
	[ 'my table', [ "table_name contains ' ' (space): neither MariaDB nor Snowflake allows it "
		      . "in an unquoted name (letters, digits, '_' and '\$' only)" ], 'my_table' ],
	[ '2024_sales', [ 'table_name starts with a digit: Snowflake requires a letter or an '
			. 'underscore first' ], 'sales_2024' ],
	[ '12345', [ 'table_name starts with a digit: Snowflake requires a letter or an underscore first',
		     'table_name consists only of digits: MariaDB does not allow that in an unquoted name' ],
	  't_12345' ],
	[ '$tmp', [ "table_name starts with '\$': Snowflake requires a letter or an underscore first" ],
	  'tmp' ],
	[ 'select', [ 'table_name is a reserved word in MariaDB and Snowflake: SELECT' ], 'select_table' ],
	[ 'Key', [ 'table_name is a reserved word in MariaDB: KEY' ], 'key_table' ],
	[ 'qualify', [ 'table_name is a reserved word in Snowflake: QUALIFY' ], 'qualify_table' ],
	[ "caf\x{e9}", [ "table_name contains '\x{e9}' (U+00E9): MariaDB allows it unquoted but "
		       . "Snowflake allows only ASCII letters, digits, '_' and '\$'" ], 'cafe' ],
	[ 'a' x 65, [ 'table_name is 65 characters long: MariaDB allows at most 64' ], 'a' x 64 ],
	[ 'b' x 256, [ 'table_name is 256 characters long: MariaDB allows at most 64 and Snowflake at most 255' ],
	  'b' x 64 ],
	[ '', [ 'table_name is empty' ], 'new_table' ],
	[ 'sales-eu.2024', [ "table_name contains '-', '.': neither MariaDB nor Snowflake allows these "
			   . "in an unquoted name (letters, digits, '_' and '\$' only)" ], 'sales_eu_2024' ],
);
for my $c (@invalid) {
	my ($name, $errors, $first) = @$c;
	my $label = length $name > 20 ? substr($name, 0, 20) . '...' : $name;
	$res = vn({ table_name => $name });
	is($res->{status}, 200, "'$label': 200");
	is_deeply([ sort keys %{ $res->{json} || {} } ], [qw(errors suggestions table_name valid)],
		  "'$label': invalid body keys");
	is($res->{json}{valid}, false, "'$label': valid false");
	is($res->{json}{table_name}, $name, "'$label': table_name echoed");
	is_deeply($res->{json}{errors}, $errors, "'$label': errors");
	is($res->{json}{suggestions}[0], $first, "'$label': first suggestion");
	suggestions_valid($res, $label);
}

# Reserved words of both pages, any letter case.
for my $w (qw(ACCESSIBLE zerofill Offset row_number vector sql_calc_found_rows
	      master_ssl_verify_server_cert usage limit)) {
	$res = vn({ table_name => $w });
	is_deeply($res->{json}{errors}, [ 'table_name is a reserved word in MariaDB: ' . uc $w ],
		  "MariaDB reserved: $w");
}
for my $w (qw(ilike minus gscluster whenever try_cast account organization tablesample
	      lateral view connection issue some start sample increment)) {
	$res = vn({ table_name => $w });
	is_deeply($res->{json}{errors}, [ 'table_name is a reserved word in Snowflake: ' . uc $w ],
		  "Snowflake reserved: $w");
}
for my $w (qw(table FROM Order current_user localtimestamp regexp rlike window
	      intersect schema database trigger)) {
	$res = vn({ table_name => $w });
	is_deeply($res->{json}{errors},
		  [ 'table_name is a reserved word in MariaDB and Snowflake: ' . uc $w ],
		  "reserved in both: $w");
}
for my $w (qw(date text timestamp users orders selects)) {
	is(vn({ table_name => $w })->{json}{valid}, true, "not reserved: $w");
}

# schema_name checked the same way, its suggestions apart.
$res = vn({ table_name => 'orders', schema_name => 'raw data' });
json_response_is($res, 200, { valid => false, table_name => 'orders', schema_name => 'raw data',
	errors => [ "schema_name contains ' ' (space): neither MariaDB nor Snowflake allows it in "
		  . "an unquoted name (letters, digits, '_' and '\$' only)" ],
	suggestions => [], schema_suggestions => [ 'raw_data', 'raw_data_schema', 's_raw_data' ] },
	'invalid schema_name');
$res = vn({ table_name => 'from', schema_name => 'where' });
is_deeply($res->{json}{errors}, [ 'table_name is a reserved word in MariaDB and Snowflake: FROM',
				  'schema_name is a reserved word in MariaDB and Snowflake: WHERE' ],
	  'both invalid: both named');
is($res->{json}{suggestions}[0], 'from_table', 'table suggestion');
is($res->{json}{schema_suggestions}[0], 'where_schema', 'schema suggestion');

# --- 400 ---------------------------------------------------------------------------------

my @bad = (
	[ {}, 'table_name is required' ],
	[ { schema_name => 'x' }, 'table_name is required' ],
	[ { table_name => undef }, 'table_name is required' ],
	[ { table_name => 5 }, 'table_name must be a string' ],
	[ { table_name => [ 'a' ] }, 'table_name must be a string' ],
	[ { table_name => 'a', schema_name => 5 }, 'schema_name must be a string' ],
	[ { table_name => 'a', extra => 1 }, 'extra is not a known field' ],
	[ [ 'a' ], 'The body must be a JSON object' ],
);
for my $c (@bad) {
	json_response_is(vn($c->[0]), 400, { error => 'invalid_request', message => $c->[1] },
			 '400 ' . json_encode($c->[0]));
}
json_response_is(st(POST => '/storage-explorer/tables/validate-name?strict=1', $tok, { table_name => 'a' }),
		 400, { error => 'invalid_query', message => 'strict is not a known query parameter' },
		 'a query parameter: 400 naming it');
$res = st(POST => '/storage-explorer/tables/validate-name', $tok, undef,
	  body => '{"table_name":', content_type => 'application/json');
is($res->{status}, 400, 'malformed JSON: 400');
$res = st(POST => '/storage-explorer/tables/validate-name', $tok, undef,
	  body => 'table_name=x', content_type => 'application/x-www-form-urlencoded');
is($res->{status}, 415, 'not JSON: 415');

# --- auth ----------------------------------------------------------------------------------

is(http(POST => '/storage-explorer/tables/validate-name', { json => { table_name => 'a' } })->{status},
   401, 'no token: 401');
is(vn({ table_name => 'a' }, token => $reader)->{status}, 403, 'READ only: 403');
my (undef, $platform) = customer_with_token('vn-plat-' . tag(), 'PLATFORM.READ,PLATFORM.WRITE');
is(vn({ table_name => 'a' }, token => $platform)->{status}, 403, 'no storage permission: 403');

# --- the verdicts against the real server ------------------------------------------------
# Valid names create a table unquoted; MariaDB's reserved words are refused.
# (Unqualified: after "schema." MariaDB takes any word as a name.)

my $scratch = 'vn_scratch_' . tag();
mysql("CREATE DATABASE `$scratch`");
for my $name (qw(sales_2024 SalesData price$usd _x date package), 'a' x 64) {
	my $r = run_cmd([ 'sh', '-c', env('SLUICE_MYSQL') . ' -e "$1"', 'sh',
			  "USE $scratch; CREATE TABLE $name (x INT)" ]);
	is($r->{exit}, 0, "MariaDB takes valid $name unquoted") or diag $r->{err};
}
for my $w (qw(select key accessible zerofill usage limit table from order offset row_number)) {
	my $r = run_cmd([ 'sh', '-c', env('SLUICE_MYSQL') . ' -e "$1"', 'sh',
			  "USE $scratch; CREATE TABLE $w (x INT)" ]);
	isnt($r->{exit}, 0, "MariaDB refuses reserved $w unquoted");
	like($r->{err}, qr/syntax/i, "$w: a syntax error");
}
mysql("DROP DATABASE `$scratch`");

done_testing();
