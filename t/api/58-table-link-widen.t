#!/usr/bin/perl
# A linked table follows its file: a new version whose column is wider (more
# decimals, longer text) widens the warehouse column before the load, the
# table's stored type follows, the rows are exact, and the link and sluice
# work's log say which column went from what to what.  A version whose text
# no longer fits a numeric column fails the link naming the column, and the
# table keeps its rows and its types.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;
use TablesFixture;

my $t = tag();
my (undef, $tok) = customer_with_token("wd-a-$t");
my $folder = "widen/$t";
my $work_log = env('SLUICE_WORK_LOG');

sub put_file {
	my ($name, $csv) = @_;
	my $res = upload($tok, $folder, [ $name, $csv ]);
	is($res->{status}, 201, "upload $name") or diag describe($res);
	my $ds = $res->{json}{files}[0]{dataset_id};
	is(wait_dataset($tok, $ds)->{status}, 'ready', "$name inferred");
	return $ds;
}

sub wh_types {
	my ($table) = @_;
	return [ mysql("SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
		     . "WHERE TABLE_SCHEMA = '$table->{warehouse_schema}' "
		     . "AND TABLE_NAME = '$table->{warehouse_table}' ORDER BY ORDINAL_POSITION") ];
}

sub api_types {
	my ($tid) = @_;
	my $res = st(GET => "/storage-explorer/tables/$tid", $tok);
	is($res->{status}, 200, 'GET the table') or diag describe($res);
	return [ map { [ $_->{name}, $_->{type} ] } @{ $res->{json}{columns} } ];
}

sub log_since {
	my ($offset) = @_;
	open my $fh, '<:raw', $work_log or return '';
	seek $fh, $offset, 0;
	local $/;
	return <$fh> // '';
}

# --- a first version that fits -------------------------------------------------------------

my $ds = put_file('prices.csv', "id,amount,label\n1,12.50,short\n2,3.25,tiny\n");
my $table = create_table($tok, 'prices', [
	{ name => 'id', type => 'INTEGER', nullable => JSON::PP::false },
	{ name => 'amount', type => 'DECIMAL(6,2)' },
	{ name => 'label', type => 'VARCHAR(10)' },
]);
my $tid = $table->{table_id};
my $wh = "`$table->{warehouse_schema}`.`$table->{warehouse_table}`";
sub wh_rows { [ mysql("SELECT id, amount, label FROM $wh ORDER BY id") ] }

my $res = link_dataset($tok, $tid, $ds);
json_response_is($res, 201, undef, 'link the first version');
my $done = wait_link($tok, $tid, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'loaded') or diag explain $done;
is($done->{error}, undef, 'nothing to say');
is_deeply(wh_rows(), [ [ 1, '12.50', 'short' ], [ 2, '3.25', 'tiny' ] ], 'the first rows');
is_deeply(wh_types($table), [ [ 'id', 'int(11)' ], [ 'amount', 'decimal(6,2)' ],
			      [ 'label', 'varchar(10)' ] ], 'the declared types');
my $schema = st(GET => "/storage-explorer/datasets/$ds", $tok)->{json}{schema};
ok(!grep({ exists $_->{max_length} } @{ $schema->{columns} }),
   'the Schema object shows only its own fields');

# --- a wider version: the table widens --------------------------------------------------------

my $woff = -s $work_log // 0;
is(put_file('prices.csv', "id,amount,label\n1,12.125,short\n2,1234.5,a much longer label\n"), $ds,
   'the same dataset, a new version');
my $e = wait_settled($tok, $tid, $ds);
ok($e, 'its load ended') or BAIL_OUT('the load never ended');
is($e->{sync_status}, 'done', 'the wider version loaded') or diag explain $e;
is($e->{row_count}, 2, 'row_count 2');
is($e->{status}, 'active', 'still active');
is($e->{error}, "column 'amount' widened from DECIMAL(6,2) to DECIMAL(7,3); "
		. "column 'label' widened from VARCHAR(10) to VARCHAR(19)",
   'the link says which columns widened, from what to what');
is_deeply(wh_types($table), [ [ 'id', 'int(11)' ], [ 'amount', 'decimal(7,3)' ],
			      [ 'label', 'varchar(19)' ] ], 'the warehouse columns widened');
is_deeply(wh_rows(), [ [ 1, '12.125', 'short' ], [ 2, '1234.500', 'a much longer label' ] ],
	  'the new rows, exact');
is_deeply(api_types($tid), [ [ 'id', 'INTEGER' ], [ 'amount', 'DECIMAL(7,3)' ],
			     [ 'label', 'VARCHAR(19)' ] ], 'GET shows the new types');
my $log = log_since($woff);
like($log, qr/msg="table column widened".* table=$tid .*column="?amount"? from=DECIMAL\(6,2\) to=DECIMAL\(7,3\)/,
     'a WARNING for amount in the log of sluice work');
like($log, qr/msg="table column widened".* table=$tid .*column="?label"? from=VARCHAR\(10\) to=VARCHAR\(19\)/,
     'and one for label');

# The same version again (a sync): nothing widens, nothing to say.
$res = st(POST => "/storage-explorer/tables/$tid/datasets/$ds/sync", $tok);
is($res->{status}, 202, 'sync') or diag describe($res);
$e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'done', 'synced');
is($e->{error}, undef, 'no column widened this time');

# --- text in the numeric column: refused, the table as it was ----------------------------------------

is(put_file('prices.csv', "id,amount,label\n1,12.5,ok\n2,twelve,ok\n"), $ds, 'a version with text amounts');
$e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'failed', 'its load failed') or diag explain $e;
is($e->{status}, 'inactive', 'the link is inactive');
like($e->{error}, qr/^column 'amount': the file's values are VARCHAR\(\d+\) now, which the table's DECIMAL\(7,3\) column cannot hold/,
     'the error names the column and both types');
is_deeply(wh_rows(), [ [ 1, '12.125', 'short' ], [ 2, '1234.500', 'a much longer label' ] ],
	  'the table keeps its rows');
is_deeply(wh_types($table), [ [ 'id', 'int(11)' ], [ 'amount', 'decimal(7,3)' ],
			      [ 'label', 'varchar(19)' ] ], 'and its types');
is_deeply(api_types($tid), [ [ 'id', 'INTEGER' ], [ 'amount', 'DECIMAL(7,3)' ],
			     [ 'label', 'VARCHAR(19)' ] ], 'GET too');

# Linked again while its file still has text amounts: 400, the column named.
$res = link_dataset($tok, $tid, $ds);
is($res->{status}, 400, 'relink of the text version: 400') or diag describe($res);
is_deeply($res->{json}{details}{type_mismatches},
	  [ { column => 'amount', table_type => 'DECIMAL(7,3)', dataset_type => 'VARCHAR(6)' } ],
	  'the amount column, both types');

# A fixed version with more integer digits: linked again with a warning, widened.
is(put_file('prices.csv', "id,amount,label\n1,123456.5,ok\n"), $ds, 'a fixed version');
$res = link_dataset($tok, $tid, $ds);
json_response_is($res, 201, undef, 'linked again');
is_deeply($res->{json}{validation}{warnings},
	  [ "column 'amount': DECIMAL(7,3) table column widened to DECIMAL(9,3)" ],
	  'the warning says the column will widen');
$done = wait_link($tok, $tid, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'loaded') or diag explain $done;
is($done->{error}, "column 'amount' widened from DECIMAL(7,3) to DECIMAL(9,3)", 'and says so');
is_deeply(wh_rows(), [ [ 1, '123456.500', 'ok' ] ], 'its row');
is_deeply(wh_types($table)->[1], [ 'amount', 'decimal(9,3)' ], 'amount widened to hold both');

# --- a first link of a dataset wider than the table --------------------------------------------------

my $label = 'a label of twenty-one';
my $wide = put_file('wide.csv', "id,amount,label\n1,123.456,$label\n2,1.5,x\n");
my $table2 = create_table($tok, 'narrow', [
	{ name => 'id', type => 'INTEGER', nullable => JSON::PP::false },
	{ name => 'amount', type => 'DECIMAL(5,1)' },
	{ name => 'label', type => 'VARCHAR(10)' },
]);
my $tid2 = $table2->{table_id};
$res = link_dataset($tok, $tid2, $wide);
json_response_is($res, 201, undef, 'a wider dataset: 201');
is_deeply($res->{json}{validation}, {
	compatible => JSON::PP::true, schema_matched => JSON::PP::false,
	warnings => [ "column 'amount': DECIMAL(5,1) table column widened to DECIMAL(7,3)",
		      "column 'label': VARCHAR(10) table column widened to VARCHAR(21)" ] },
	  'the validation says which columns widen, to what');
$done = wait_link($tok, $tid2, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'loaded') or diag explain $done;
is($done->{error}, "column 'amount' widened from DECIMAL(5,1) to DECIMAL(7,3); "
		   . "column 'label' widened from VARCHAR(10) to VARCHAR(21)", 'the link says so');
is_deeply(wh_types($table2), [ [ 'id', 'int(11)' ], [ 'amount', 'decimal(7,3)' ],
			       [ 'label', 'varchar(21)' ] ], 'the warehouse columns widened');
is_deeply([ mysql("SELECT id, amount, label FROM `$table2->{warehouse_schema}`."
		. "`$table2->{warehouse_table}` ORDER BY id") ],
	  [ [ 1, '123.456', $label ], [ 2, '1.500', 'x' ] ], 'the rows, exact');
is_deeply(api_types($tid2), [ [ 'id', 'INTEGER' ], [ 'amount', 'DECIMAL(7,3)' ],
			      [ 'label', 'VARCHAR(21)' ] ], 'GET shows the new types');

done_testing();
