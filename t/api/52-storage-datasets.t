#!/usr/bin/perl
# GET /storage-explorer/datasets and /storage-explorer/datasets/{id}: the
# Dataset object through its states (pending -> ready, failed with an
# error), the listing's pages and folder filter, 404s, isolation,
# permissions.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;

my ($tok, $cid) = sx_customer('st-datasets');
my ($other, $ocid) = sx_customer('st-datasets-other');
mysql("DELETE FROM work_queue WHERE customer_id = '$cid'");
mysql("DELETE FROM datasets WHERE customer_id = '$cid'");
mysql("DELETE FROM uploads WHERE customer_id = '$cid'");
my $D = '/storage-explorer/datasets';
my $uuid_re = qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

json_response_is(sx(GET => $D, $tok), 200, {
	datasets => [],
	pagination => { current_page => 1, total_pages => 0, total_items => 0, items_per_page => 20,
			has_next => JSON::PP::false, has_previous => JSON::PP::false },
}, 'no datasets yet');

# --- pending while sluice work is stopped, then ready -----------------------------------

my $r = dev('work-stop');
is($r->{exit}, 0, 'sluice work stopped') or diag $r->{err};
my $csv = "city,pop\nBasel,178000\nBern,134000\n";
my $res = upload($tok, 'geo', [ 'cities.csv', $csv ]);
json_response_is($res, 201, undef, 'upload');
my $id = dataset_of($res, 'cities.csv');
my $upload_id = $res->{json}{upload_id};
$res = sx(GET => "$D/$id", $tok);
json_response_is($res, 200, undef, 'GET the pending dataset');
my $ds = $res->{json};
is_deeply([ sort keys %$ds ], [ sort qw(dataset_id dataset_name file_path folder_path file_size_bytes
	file_format file_type status schema parsing_options error upload_id created_at updated_at
	refreshed_at) ], 'Dataset fields');
is($ds->{dataset_id}, $id, 'dataset_id');
is($ds->{dataset_name}, 'cities.csv', 'dataset_name is the file name');
is($ds->{file_path}, 'geo/cities.csv', 'file_path');
is($ds->{folder_path}, 'geo', 'folder_path');
is($ds->{file_size_bytes}, length $csv, 'file_size_bytes');
is($ds->{file_format}, 'csv', 'file_format');
is($ds->{file_type}, 'csv', 'file_type');
is($ds->{status}, 'pending', 'pending: not inferred yet');
is($ds->{schema}, undef, 'no schema yet');
is_deeply($ds->{parsing_options}, {}, 'no parsing options');
is($ds->{error}, undef, 'no error');
iso_time_ok($ds->{created_at}, 'created_at', 120);
is($ds->{refreshed_at}, undef, 'never refreshed');
is($ds->{upload_id}, $upload_id, 'upload_id');
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work started') or diag $r->{err};
$ds = wait_dataset($tok, $id);
is($ds->{status}, 'ready', 'ready once sluice work ran');
is_deeply($ds->{schema}, { columns => [
	{ name => 'city', inferred_type => 'VARCHAR', nullable => JSON::PP::false, position => 0 },
	{ name => 'pop', inferred_type => 'INTEGER', nullable => JSON::PP::false, position => 1 } ],
	row_count => 2, analyzed_rows => 2 }, 'schema') or diag explain $ds->{schema};
is(mysql("SELECT CONCAT(status, ' ', row_count, ' ', analyzed_rows) FROM datasets WHERE id = '$id'"),
   'ready 2 2', 'stored: status, row_count, analyzed_rows');

# --- failed, with the reason -------------------------------------------------------------

$res = upload($tok, 'geo', [ 'empty.csv', '' ], [ 'bad.json', '{"a": [1, 2' ]);
json_response_is($res, 201, undef, 'upload of an empty CSV and a broken JSON file');
for my $name (qw(empty.csv bad.json)) {
	my $f = wait_dataset($tok, dataset_of($res, $name));
	is($f->{status}, 'failed', "$name: failed");
	like($f->{error} // '', qr/\S/, "$name: error says why");
	is($f->{schema}, undef, "$name: no schema");
}

# --- listing: pages, folder ------------------------------------------------------------------

upload($tok, undef, [ 'top.csv', "a\n1\n" ]);
upload($tok, 'geo/deeper', [ 'low.csv', "a\n1\n" ]);
$res = sx(GET => $D, $tok);
json_response_is($res, 200, undef, 'list');
is($res->{json}{pagination}{total_items}, 5, '5 datasets');
is_deeply([ map { $_->{dataset_name} } @{ $res->{json}{datasets} } ],
	  [ 'low.csv', 'top.csv', 'bad.json', 'empty.csv', 'cities.csv' ], 'newest first')
	or diag explain [ map { "$_->{dataset_name} $_->{created_at}" } @{ $res->{json}{datasets} } ];
my %by = map { $_->{dataset_name} => $_ } @{ $res->{json}{datasets} };
is_deeply($by{'cities.csv'}, sx(GET => "$D/$id", $tok)->{json}, 'a listed dataset is the full Dataset object');
for my $f ([ 'geo', [ 'bad.json', 'cities.csv', 'empty.csv' ] ], [ 'geo/deeper', [ 'low.csv' ] ],
	   [ '', [ 'top.csv' ] ], [ 'ge', [] ]) {
	my $l = sx(GET => "$D?folder_path=$f->[0]", $tok)->{json};
	is_deeply([ sort map { $_->{dataset_name} } @{ $l->{datasets} } ], $f->[1],
		  "folder_path=$f->[0]: the files directly in it");
}
$res = sx(GET => "$D?limit=2&page=3", $tok);
is_deeply([ map { $_->{dataset_name} } @{ $res->{json}{datasets} } ], [ 'cities.csv' ], 'page 3 of 2');
is_deeply($res->{json}{pagination}, { current_page => 3, total_pages => 3, total_items => 5,
	items_per_page => 2, has_next => JSON::PP::false, has_previous => JSON::PP::true }, 'pagination');
is_deeply(sx(GET => "$D?page=4&limit=2", $tok)->{json}{datasets}, [], 'past the end: empty');
sx_error_is(sx(GET => "$D?limit=0", $tok), 400, 'invalid_query', 'limit must be an integer from 1 to 100',
	    'limit=0');
sx_error_is(sx(GET => "$D?limit=101", $tok), 400, 'invalid_query', 'limit must be an integer from 1 to 100',
	    'limit=101');
sx_error_is(sx(GET => "$D?page=0", $tok), 400, 'invalid_query', 'page must be an integer from 1 to 1000000000',
	    'page=0');
sx_error_is(sx(GET => "$D?page=1000000001", $tok), 400, 'invalid_query',
	    'page must be an integer from 1 to 1000000000', 'page=1000000001');
is(sx(GET => "$D?page=1000000000", $tok)->{status}, 200, 'page=1000000000 (the largest): 200');
is(sx(GET => "$D?limit=100", $tok)->{status}, 200, 'limit=100 (the largest): 200');
sx_error_is(sx(GET => "$D?status=ready", $tok), 400, 'invalid_query', 'status is not a known query parameter',
	    'an unknown parameter is named');
sx_error_is(sx(GET => "$D?limit=5&limit=6", $tok), 400, 'invalid_query', 'limit is given more than once',
	    'a repeated parameter is named');
sx_error_is(sx(GET => "$D?folder_path=../x", $tok), 400, 'invalid_folder_path',
	    "folder_path must not contain '.' or '..' segments", 'folder_path=../x');

# --- 404s and isolation ----------------------------------------------------------------------------

my $nf = { error => 'dataset_not_found', message => 'Dataset not found' };
json_response_is(sx(GET => "$D/00000000-0000-4000-8000-000000000000", $tok), 404, $nf, 'unknown id');
json_response_is(sx(GET => "$D/not-a-uuid", $tok), 404, $nf, 'malformed id');
sx_error_is(sx(GET => "$D/$id?fields=schema", $tok), 400, 'invalid_query', 'fields is not a known query parameter',
	    'GET dataset with a query parameter: 400 naming it');
json_response_is(sx(GET => "$D/$id", $other), 404, $nf, "another customer's dataset: 404 as unknown");
is_deeply(sx(GET => $D, $other)->{json}{datasets}, [], 'another customer lists none of them');
json_response_is(sx(GET => "$D/" . uc($id), $tok), 200, undef, 'the id in capitals is the same id');

is(http(GET => $D)->{status}, 401, 'list without a token: 401');
is(http(GET => "$D/$id")->{status}, 401, 'GET without a token: 401');
my $wo = token(customer => 'st-datasets', permissions => 'STORAGE_EXPLORER.WRITE');
json_response_is(http(GET => "$D/$id", { token => $wo }), 403,
		 { detail => 'Missing permission STORAGE_EXPLORER.READ' }, 'WRITE only: 403');
json_response_is(http(GET => $D, { token => $wo }), 403,
		 { detail => 'Missing permission STORAGE_EXPLORER.READ' }, 'list, WRITE only: 403');

done_testing;
