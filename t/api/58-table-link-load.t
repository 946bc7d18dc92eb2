#!/usr/bin/perl
# The load behind a link (sluice work, storage_link_load): the dataset's rows
# really land in the warehouse table with their values converted, row_count
# and last_sync set; GET /storage-explorer/tables/{tableId}/datasets with
# total_rows; a load that fails leaves the table untouched and says why;
# isolation between two customers.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("ld-a-$t");
my ($cid_b, $tok_b) = customer_with_token("ld-b-$t");
my (undef, $reader) = customer_with_token("ld-a-$t", 'STORAGE_EXPLORER.READ');

my $table = create_table($tok, 'events', [
	{ name => 'id', type => 'INTEGER', nullable => false },
	{ name => 'name', type => 'VARCHAR(20)' },
	{ name => 'amount', type => 'DECIMAL(12,2)' },
	{ name => 'active', type => 'BOOLEAN' },
	{ name => 'day', type => 'DATE' },
	{ name => 'seen_at', type => 'TIMESTAMP' },
	{ name => 'score', type => 'DOUBLE' },
]);
my $tid = $table->{table_id};
my $wh = "`$table->{warehouse_schema}`.`$table->{warehouse_table}`";
my @schema = ([ 'id', 'INTEGER', 0 ], [ 'name', 'VARCHAR', 1 ], [ 'amount', 'DECIMAL', 0, 12, 2 ],
	      [ 'active', 'BOOLEAN', 0 ], [ 'day', 'DATE', 0 ], [ 'seen_at', 'TIMESTAMP', 0 ],
	      [ 'score', 'DOUBLE', 1 ]);

# --- a CSV dataset --------------------------------------------------------------------------

my $csv = join "\n",
	'id,name,amount,active,day,seen_at,score',
	'1,alpha,12.50,true,2024-01-15,2024-01-15T10:00:00Z,1.5',
	'2,"beta, inc",-3.25,false,2024-02-29,2024-02-29 23:59:59,2',
	'3,,+0,yes,2024-03-01,2024-03-01T12:30:00.250+02:00,',
	'';
my $ds1 = seed_dataset($cid, file_path => "in/$t/events.csv", content => $csv, rows => 3,
		       columns => \@schema);
my $res = link_dataset($tok, $tid, $ds1);
json_response_is($res, 201, undef, 'link the CSV dataset');
my $l1 = $res->{json};
my $done = wait_link($tok, $tid, $l1->{link_id});
ok($done, 'the load ended') or BAIL_OUT('the link load never ended');
is($done->{sync_status}, 'done', 'sync_status done') or diag explain $done;
is($done->{row_count}, 3, 'row_count 3');
is($done->{status}, 'active', 'still active');
is($done->{error}, undef, 'no error');
iso_time_ok($done->{last_sync}, 'last_sync');

my @rows = mysql("SELECT id, IFNULL(name, 'NULL'), amount, active, day, seen_at, IFNULL(score, 'NULL') "
	       . "FROM $wh ORDER BY id");
is_deeply(\@rows, [
	[ 1, 'alpha', '12.50', 1, '2024-01-15', '2024-01-15 10:00:00.000000', 1.5 ],
	[ 2, 'beta, inc', '-3.25', 0, '2024-02-29', '2024-02-29 23:59:59.000000', 2 ],
	[ 3, 'NULL', '0.00', 1, '2024-03-01', '2024-03-01 10:30:00.250000', 'NULL' ],
], 'the rows are in the warehouse table, converted');
my ($lrow) = mysql("SELECT sync_status, row_count, last_sync IS NOT NULL, error IS NULL FROM table_links "
		 . "WHERE id = '$l1->{link_id}'");
is_deeply($lrow, [ 'done', 3, 1, 1 ], 'table_links row');
is(mysql("SELECT status FROM work_queue WHERE kind = 'storage_link_load' AND ref_id = '$tid'"),
   'done', 'work item (of the table) done');

# --- GET /storage-explorer/tables/{tableId}/datasets ---------------------------------------------

$res = st(GET => "/storage-explorer/tables/$tid/datasets", $tok);
json_response_is($res, 200, undef, 'table datasets');
my $body = $res->{json};
is_deeply([ sort keys %$body ], [ sort qw(table_id table_name datasets total_datasets total_rows) ],
	  'body keys');
is($body->{table_id}, $tid, 'table_id');
is($body->{table_name}, 'events', 'table_name');
is($body->{total_datasets}, 1, 'total_datasets 1');
is($body->{total_rows}, 3, 'total_rows 3');
my $d = $body->{datasets}[0];
is_deeply([ sort keys %$d ], [ sort qw(dataset_id dataset_name file_path file_size_bytes file_format
	linked_at row_count status last_sync sync_status error) ], 'Dataset keys');
is_deeply({ %$d, linked_at => 'x', last_sync => 'x' }, {
	dataset_id => $ds1, dataset_name => 'events.csv', file_path => "in/$t/events.csv",
	file_size_bytes => length $csv, file_format => 'csv', linked_at => 'x', row_count => 3,
	status => 'active', last_sync => 'x', sync_status => 'done', error => undef },
	'the Dataset as listed under the table');
is($d->{linked_at}, $l1->{linked_at}, 'linked_at is the link time');
is($d->{last_sync}, $done->{last_sync}, 'last_sync');

# --- a second dataset adds its rows (JSON lines, other column order and case) --------------------------

my $jsonl = '{"ID": 4, "Name": "delta", "amount": 7, "active": false, "day": "2024-04-01", '
	  . '"seen_at": "2024-04-01 08:00:00", "score": 0.25}' . "\n"
	  . '{"ID": 5, "Name": null, "amount": 1.1, "active": true, "day": "2024-05-01", '
	  . '"seen_at": "2024-05-01T00:00:00-01:00", "score": null}' . "\n";
my $ds2 = seed_dataset($cid, file_path => "in/$t/more.jsonl", content => $jsonl, format => 'json', rows => 2,
	columns => [ [ 'ID', 'INTEGER', 0 ], [ 'Name', 'VARCHAR', 1 ], [ 'amount', 'DECIMAL', 0, 2, 1 ],
		     [ 'active', 'BOOLEAN', 0 ], [ 'day', 'DATE', 0 ], [ 'seen_at', 'TIMESTAMP', 0 ],
		     [ 'score', 'DOUBLE', 1 ] ]);
$res = link_dataset($tok, $tid, $ds2);
is($res->{status}, 201, 'link the JSON dataset') or diag describe($res);
my $done2 = wait_link($tok, $tid, $res->{json}{link_id});
is($done2->{sync_status}, 'done', 'second load done') or diag explain $done2;
is($done2->{row_count}, 2, 'second row_count 2');
@rows = mysql("SELECT id, IFNULL(name, 'NULL'), amount, active, seen_at FROM $wh WHERE id > 3 ORDER BY id");
is_deeply(\@rows, [ [ 4, 'delta', '7.00', 0, '2024-04-01 08:00:00.000000' ],
		    [ 5, 'NULL', '1.10', 1, '2024-05-01 01:00:00.000000' ] ], 'JSON rows added');
$res = st(GET => "/storage-explorer/tables/$tid/datasets", $tok);
is($res->{json}{total_datasets}, 2, 'total_datasets 2');
is($res->{json}{total_rows}, 5, 'total_rows is the sum');
is_deeply([ map { $_->{dataset_id} } @{ $res->{json}{datasets} } ], [ $ds1, $ds2 ], 'in link order');
is($res->{json}{datasets}[1]{file_format}, 'json', 'file_format json');
is(wh_count($table), 5, 'five rows in the warehouse');

# --- a failing load: nothing half-written -----------------------------------------------------

my $bad_csv = "id,name,amount,active,day,seen_at,score\n"
	    . "6,ok,1.00,true,2024-06-01,2024-06-01 00:00:00,1\n"
	    . "7,bad,not-a-number,true,2024-06-02,2024-06-02 00:00:00,1\n";
my $ds3 = seed_dataset($cid, file_path => "in/$t/bad.csv", content => $bad_csv, rows => 2,
		       columns => \@schema);
$res = link_dataset($tok, $tid, $ds3);
is($res->{status}, 201, 'a dataset whose values do not fit links');
my $l3 = $res->{json};
my $f = wait_link($tok, $tid, $l3->{link_id});
is($f->{sync_status}, 'failed', 'load failed');
is($f->{status}, 'inactive', 'link inactive');
is($f->{row_count}, 0, 'row_count 0');
is($f->{last_sync}, undef, 'no last_sync');
like($f->{error} // '', qr/^data row 2: .*not-a-number/, 'error names the data row and value');
is(wh_count($table), 5, 'the table is untouched (one transaction)');
$res = st(GET => "/storage-explorer/tables/$tid/datasets", $tok);
is($res->{json}{total_rows}, 5, 'total_rows unchanged');
is($res->{json}{datasets}[2]{status}, 'inactive', 'listed as inactive');

# The file went away before the load.
my $ds4 = seed_dataset($cid, file_path => "in/$t/gone.csv", rows => 1, columns => \@schema);
$res = link_dataset($tok, $tid, $ds4);
$f = wait_link($tok, $tid, $res->{json}{link_id});
is($f->{sync_status}, 'failed', 'missing file: failed');
is($f->{error}, 'the file is no longer in the storage area', 'missing file: reason');

# The file lost a column since its schema was inferred.
my $ds5 = seed_dataset($cid, file_path => "in/$t/short.csv", content => "id,name\n8,x\n", rows => 1,
		       columns => \@schema);
$res = link_dataset($tok, $tid, $ds5);
$f = wait_link($tok, $tid, $res->{json}{link_id});
is($f->{sync_status}, 'failed', 'changed file: failed');
is($f->{error}, "the file has no column 'amount' any more: refresh the dataset's schema and link it again",
   'changed file: reason');
is(wh_count($table), 5, 'still five rows');

# A failed (inactive) link may be linked again once its file is fixed: the
# same link, checked and loaded anew.  An active one stays a 409.
{
	open my $fh, '>', storage_root() . "/customers/$cid/in/$t/bad.csv" or die $!;
	print {$fh} "id,name,amount,active,day,seen_at,score\n"
		  . "6,ok,1.00,true,2024-06-01,2024-06-01 00:00:00,1\n"
		  . "7,fixed,2.00,true,2024-06-02,2024-06-02 00:00:00,1\n";
	close $fh;
}
$res = link_dataset($tok, $tid, $ds3);
json_response_is($res, 201, undef, 'an inactive link is linked again');
is($res->{json}{link_id}, $l3->{link_id}, 'the same link');
is($res->{json}{status}, 'active', 'active again');
is_deeply($res->{json}{validation}, { compatible => true, schema_matched => false,
	warnings => [ "column 'name': a value longer than 20 characters makes the load fail" ] },
	'checked again');
$f = wait_link($tok, $tid, $l3->{link_id});
is($f->{sync_status}, 'done', 'loaded this time') or diag explain $f;
is($f->{row_count}, 2, 'its 2 rows');
is($f->{error}, undef, 'the old error is gone');
is(wh_count($table), 7, 'seven rows now');
json_response_is(link_dataset($tok, $tid, $ds3), 409, { error => 'already_linked',
	link_id => $l3->{link_id}, message => 'The dataset is already linked to this table' },
	'active again: 409');
is(mysql("SELECT COUNT(*) FROM table_links WHERE dataset_id = '$ds3'"), 1, 'one link row');

# --- isolation and auth ----------------------------------------------------------------------------

json_response_is(st(GET => "/storage-explorer/tables/$tid/datasets", $tok_b), 404,
		 { error => 'table_not_found', message => 'Table not found' }, "A's table for B: 404");
json_response_is(st(GET => '/storage-explorer/tables/00000000-0000-4000-8000-000000000000/datasets', $tok),
		 404, { error => 'table_not_found', message => 'Table not found' }, 'unknown table: 404');
json_response_is(st(GET => '/storage-explorer/tables/x/datasets', $tok),
		 404, { error => 'table_not_found', message => 'Table not found' }, 'malformed id: 404');
my $b_table = create_table($tok_b, 'events', [ { name => 'id', type => 'INTEGER' } ]);
$res = st(GET => "/storage-explorer/tables/$b_table->{table_id}/datasets", $tok_b);
json_response_is($res, 200, { table_id => $b_table->{table_id}, table_name => 'events', datasets => [],
			      total_datasets => 0, total_rows => 0 }, "B's own empty table");
is(st(GET => "/storage-explorer/tables/$tid/datasets", $reader)->{status}, 200, 'READ may list');
is(http(GET => "/storage-explorer/tables/$tid/datasets")->{status}, 401, 'no token: 401');
my (undef, $plat) = customer_with_token("ld-a-$t", 'PLATFORM.READ');
is(st(GET => "/storage-explorer/tables/$tid/datasets", $plat)->{status}, 403, 'no storage READ: 403');

done_testing();
