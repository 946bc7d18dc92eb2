#!/usr/bin/perl
# POST /storage-explorer/tables/{tableId}/datasets/{datasetId}: the schema
# check (names without regard to case, widening, DECIMAL fit, empty values
# into NOT NULL), 201 Link, 400 details, 404, 409 (linked, not inferred),
# a Parquet dataset linked like any other (its file read by the load), auth,
# and isolation between two customers.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("ln-a-$t");
my ($cid_b, $tok_b) = customer_with_token("ln-b-$t");
my (undef, $reader) = customer_with_token("ln-a-$t", 'STORAGE_EXPLORER.READ');

my $table = create_table($tok, 'payments', [
	{ name => 'id', type => 'INTEGER', nullable => false },
	{ name => 'name', type => 'VARCHAR' },
	{ name => 'amount', type => 'DECIMAL(12,2)' },
	{ name => 'day', type => 'DATE' },
]);
my $tid = $table->{table_id};
my $csv = "id,name,amount,day\n1,a,1.50,2024-01-01\n";

my $exact = seed_dataset($cid, content => $csv, rows => 1, columns => [
	[ 'id', 'INTEGER', 0 ], [ 'name', 'VARCHAR', 0 ], [ 'amount', 'DECIMAL', 0, 12, 2 ],
	[ 'day', 'DATE', 0 ] ]);
my $widened = seed_dataset($cid, content => $csv, rows => 1, columns => [
	[ 'ID', 'INTEGER', 0 ], [ 'Name', 'VARCHAR', 1 ], [ 'day', 'DATE', 0 ],
	[ 'amount', 'DECIMAL', 1, 5, 1 ] ]);
my $bad = seed_dataset($cid, content => $csv, rows => 1, columns => [
	[ 'id', 'BIGINT', 1 ], [ 'name', 'VARCHAR', 0 ], [ 'total', 'DECIMAL', 0, 12, 2 ],
	[ 'day', 'BOOLEAN', 0 ] ]);
my $narrow = seed_dataset($cid, content => $csv, rows => 1, columns => [
	[ 'id', 'DATE', 0 ], [ 'name', 'INTEGER', 0 ], [ 'amount', 'DOUBLE', 0 ],
	[ 'day', 'DATE', 0 ] ]);
my $inferring = seed_dataset($cid, content => $csv, status => 'inferring');
my $pending = seed_dataset($cid, content => $csv, status => 'pending');
my $failed = seed_dataset($cid, content => $csv, status => 'failed');
my $parquet = seed_dataset($cid, file_path => "p/$t.parquet", content => "PAR1", format => 'parquet',
			   rows => 1, columns => [ [ 'id', 'INTEGER', 0 ] ]);
my $b_dataset = seed_dataset($cid_b, content => $csv, rows => 1, columns => [
	[ 'id', 'INTEGER', 0 ], [ 'name', 'VARCHAR', 0 ], [ 'amount', 'DECIMAL', 0, 12, 2 ],
	[ 'day', 'DATE', 0 ] ]);
my $b_table = create_table($tok_b, 'payments', [ { name => 'id', type => 'INTEGER' } ]);

# --- query parameters: none taken, each refused by name ------------------------------------

json_response_is(st(POST => "/storage-explorer/tables/$tid/datasets/$exact?force=true", $tok), 400,
		 { error => 'invalid_query', message => 'force is not a known query parameter' },
		 'link with a query parameter: 400 naming it');
json_response_is(st(GET => "/storage-explorer/tables/$tid/datasets?page=1", $tok), 400,
		 { error => 'invalid_query', message => 'page is not a known query parameter' },
		 'table datasets with a query parameter: 400 naming it');
is(mysql("SELECT COUNT(*) FROM table_links WHERE table_id = '$tid'"), 0, 'nothing linked');

# --- 201 -----------------------------------------------------------------------------------

my $res = link_dataset($tok, $tid, $exact);
json_response_is($res, 201, undef, 'link the same schema');
my $l = $res->{json};
is_deeply([ sort keys %$l ], [ sort qw(link_id table_id dataset_id linked_at status validation) ],
	  'Link keys');
like($l->{link_id}, uuid_re(), 'link_id is a UUID');
is($l->{table_id}, $tid, 'table_id');
is($l->{dataset_id}, $exact, 'dataset_id');
is($l->{status}, 'active', 'status active');
iso_time_ok($l->{linked_at}, 'linked_at');
is_deeply($l->{validation}, { compatible => true, schema_matched => true, warnings => [] },
	  'validation: compatible, matched, no warnings');
my ($row) = mysql("SELECT customer_id, dataset_id, table_id, status, created_by FROM table_links "
	. "WHERE id = '$l->{link_id}'");
is_deeply($row, [ $cid, $exact, $tid, 'active', "ln-a-$t\@example.com" ], 'table_links row');
is(mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'storage_link_load' AND ref_id = "
	 . "'$tid' AND customer_id = '$cid'"), 1, 'a storage_link_load work item for the table');

$res = link_dataset($tok, uc $tid, uc $widened);
json_response_is($res, 201, undef, 'link with widening, any id case');
is($res->{json}{dataset_id}, $widened, 'ids answered in lower case');
is_deeply($res->{json}{validation}, { compatible => true, schema_matched => false, warnings => [
	"column 'ID' of the dataset is loaded into column 'id' of the table",
	"column 'Name' of the dataset is loaded into column 'name' of the table",
	"column 'amount': DECIMAL(5,1) values widened to DECIMAL(12,2)",
] }, 'validation: warnings for case and widening');

# --- 409 -----------------------------------------------------------------------------------

$res = link_dataset($tok, $tid, $exact);
json_response_is($res, 409, { error => 'already_linked', link_id => $l->{link_id},
	message => 'The dataset is already linked to this table' }, 'linked twice: 409');
for my $c ([ $inferring, 'inferring' ], [ $pending, 'pending' ]) {
	json_response_is(link_dataset($tok, $tid, $c->[0]), 409, { error => 'dataset_not_ready',
		message => "The dataset's schema is not inferred yet (status $c->[1]): link it once "
			 . 'its status is ready' }, "dataset $c->[1]: 409");
}
json_response_is(link_dataset($tok, $tid, $failed), 409, { error => 'dataset_not_ready',
	message => "The dataset's schema inference failed: refresh its schema, then link it" },
	'dataset failed: 409');

# --- Parquet: linked, its rows read by the load -----------------------------------------------

# (this file is no Parquet at all: the load fails with the reader's reason;
# real files load in 58-table-link-parquet.t)
my $ptable = create_table($tok, 'pq', [ { name => 'id', type => 'INTEGER' } ]);
$res = link_dataset($tok, $ptable->{table_id}, $parquet);
json_response_is($res, 201, undef, 'Parquet: 201, no longer refused');
my $plink = wait_link($tok, $ptable->{table_id}, $res->{json}{link_id});
is($plink->{sync_status}, 'failed', 'a file that is no Parquet: the load fails');
is($plink->{error}, 'not a Parquet file: 4 bytes is too short', 'with the reader\'s reason');

# --- 400 -----------------------------------------------------------------------------------

$res = link_dataset($tok, $tid, $bad);
json_response_is($res, 400, {
	error => 'schema_incompatible',
	message => "The dataset's columns do not fit the table: 1 missing, 1 extra, 2 of an incompatible type",
	details => {
		missing_columns => [ 'amount' ],
		extra_columns => [ 'total' ],
		type_mismatches => [
			{ column => 'id', table_type => 'INTEGER NOT NULL', dataset_type => 'BIGINT NULL' },
			{ column => 'day', table_type => 'DATE', dataset_type => 'BOOLEAN' },
		],
	},
}, 'incompatible: 400 with details');
$res = link_dataset($tok, $tid, $narrow);
json_response_is($res, 400, {
	error => 'schema_incompatible',
	message => "The dataset's columns do not fit the table: 0 missing, 0 extra, 2 of an incompatible type",
	details => { missing_columns => [], extra_columns => [], type_mismatches => [
		{ column => 'id', table_type => 'INTEGER', dataset_type => 'DATE' },
		{ column => 'amount', table_type => 'DECIMAL(12,2)', dataset_type => 'DOUBLE' },
	] },
}, 'no type holds both: 400 (an INTEGER name fits VARCHAR)');
is(mysql("SELECT COUNT(*) FROM table_links WHERE dataset_id IN ('$bad', '$narrow', '$inferring', "
	 . "'$pending', '$failed')"), 0, 'no link rows for refusals');

# --- 404 -----------------------------------------------------------------------------------

my $nf_table = { error => 'table_not_found', message => 'Table not found' };
my $nf_dataset = { error => 'dataset_not_found', message => 'Dataset not found' };
my $zero = '00000000-0000-4000-8000-000000000000';
json_response_is(link_dataset($tok, $zero, $exact), 404, $nf_table, 'unknown table');
json_response_is(link_dataset($tok, 'nope', $exact), 404, $nf_table, 'malformed table id');
json_response_is(link_dataset($tok, $tid, $zero), 404, $nf_dataset, 'unknown dataset');
json_response_is(link_dataset($tok, $tid, 'nope'), 404, $nf_dataset, 'malformed dataset id');
# isolation: the other customer's table or dataset is unknown
json_response_is(link_dataset($tok, $b_table->{table_id}, $exact), 404, $nf_table, "B's table for A");
json_response_is(link_dataset($tok, $tid, $b_dataset), 404, $nf_dataset, "B's dataset for A");
json_response_is(link_dataset($tok_b, $tid, $b_dataset), 404, $nf_table, "A's table for B");
json_response_is(link_dataset($tok_b, $b_table->{table_id}, $exact), 404, $nf_dataset, "A's dataset for B");
is(mysql("SELECT COUNT(*) FROM table_links WHERE customer_id = '$cid_b'"), 0, 'B has no links');

# --- auth ------------------------------------------------------------------------------------

is(http(POST => "/storage-explorer/tables/$tid/datasets/$exact")->{status}, 401, 'no token: 401');
is(link_dataset($reader, $tid, $widened)->{status}, 403, 'READ only: 403');
is(http(GET => "/storage-explorer/tables/$tid/datasets/$exact", { token => $tok })->{status}, 405,
   'GET on a link: 405');

done_testing();
