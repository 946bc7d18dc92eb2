#!/usr/bin/perl
# The whole way: a CSV uploaded, its schema inferred by sluice work, a table
# made from that schema, the dataset linked and its rows loaded into the
# warehouse; and the same upload by another customer staying apart.  The
# same for an XLSX and a Parquet file.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("up-a-$t");
my ($cid_b, $tok_b) = customer_with_token("up-b-$t");

sub upload {
	my ($token, $folder, $name, $content) = @_;
	# (content is bytes)
	my $b = "----sluicetables$$";
	my $body = "--$b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"$name\"\r\n"
		 . "Content-Type: text/csv\r\n\r\n$content\r\n--$b--\r\n";
	return st(POST => "/storage-explorer/storage/upload?folder_path=$folder", $token, undef,
		  body => $body, content_type => "multipart/form-data; boundary=$b");
}

sub wait_ready {
	my ($token, $id) = @_;
	my $ds;
	wait_until(30, sub {
		my $res = st(GET => "/storage-explorer/datasets/$id", $token);
		$ds = $res->{json};
		$res->{status} == 200 && $ds->{status} =~ /^(ready|failed)$/;
	}, 0.1);
	return $ds;
}

my $csv = "order_id,customer,total,paid,ordered_on\n"
	. "1001,Ada,19.99,true,2024-07-01\n"
	. "1002,Grace,5.00,false,2024-07-02\n"
	. "1003,Linus,120.50,true,2024-07-03\n"
	. "1004,,0.75,false,2024-07-04\n";

my $res = upload($tok, "orders/$t", 'orders.csv', $csv);
is($res->{status}, 201, 'upload') or diag describe($res);
my $ds_id = $res->{json}{files}[0]{dataset_id};
my $ds = wait_ready($tok, $ds_id);
is($ds->{status}, 'ready', 'inferred') or diag explain $ds;
is($ds->{schema}{row_count}, 4, 'four rows inferred');

my $table = create_table($tok, 'Orders', columns_of($ds->{schema}));
$res = link_dataset($tok, $table->{table_id}, $ds_id);
json_response_is($res, 201, undef, 'link the uploaded dataset');
is_deeply($res->{json}{validation}, { compatible => true, schema_matched => true, warnings => [] },
	  'a table made from the schema matches it');
my $done = wait_link($tok, $table->{table_id}, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'loaded') or diag explain $done;
is($done->{row_count}, 4, 'row_count 4');
my @rows = mysql("SELECT order_id, IFNULL(customer, 'NULL'), total, paid, ordered_on FROM "
	       . "`$table->{warehouse_schema}`.`Orders` ORDER BY order_id");
is_deeply(\@rows, [
	[ 1001, 'Ada', '19.99', 1, '2024-07-01' ],
	[ 1002, 'Grace', '5.00', 0, '2024-07-02' ],
	[ 1003, 'Linus', '120.50', 1, '2024-07-03' ],
	[ 1004, 'NULL', '0.75', 0, '2024-07-04' ],
], 'the uploaded rows are in the warehouse');

$res = st(GET => "/storage-explorer/tables/$table->{table_id}/datasets", $tok);
is($res->{json}{total_rows}, 4, 'total_rows 4');
is($res->{json}{datasets}[0]{file_path}, "orders/$t/orders.csv", 'file_path of the upload');
is($res->{json}{datasets}[0]{dataset_name}, 'orders.csv', 'dataset_name is the file name');
is($res->{json}{datasets}[0]{file_size_bytes}, length $csv, 'file_size_bytes');

# Customer B uploads the same file and makes the same table: its own rows,
# its own schema; neither sees the other's.
$res = upload($tok_b, "orders/$t", 'orders.csv', $csv);
my $b_ds = $res->{json}{files}[0]{dataset_id};
my $b_schema = wait_ready($tok_b, $b_ds)->{schema};
my $b_table = create_table($tok_b, 'Orders', columns_of($b_schema));
isnt($b_table->{warehouse_schema}, $table->{warehouse_schema}, "B's table lives apart");
json_response_is(link_dataset($tok_b, $b_table->{table_id}, $ds_id), 404,
		 { error => 'dataset_not_found', message => 'Dataset not found' }, "A's upload for B: 404");
$res = link_dataset($tok_b, $b_table->{table_id}, $b_ds);
$done = wait_link($tok_b, $b_table->{table_id}, $res->{json}{link_id});
is($done->{row_count}, 4, "B's load: 4 rows");
is(wh_count($table), 4, "A's table still has its 4 rows");
is(wh_count($b_table), 4, "B's table has its own 4");

# --- a spreadsheet (ExcelJS fixture): typed cells into typed columns ------------------

$res = upload($tok, "sheets/$t", 'types.xlsx', fixture_bytes('types.xlsx'));
is($res->{status}, 201, 'upload the XLSX') or diag describe($res);
my $x_id = $res->{json}{files}[0]{dataset_id};
my $x = wait_ready($tok, $x_id);
is($x->{status}, 'ready', 'XLSX inferred') or diag explain $x;
my %xt = map { $_->{name} => $_->{inferred_type} } @{ $x->{schema}{columns} };
is_deeply([ @xt{qw(id name flag day at)} ], [ qw(INTEGER VARCHAR BOOLEAN DATE TIMESTAMP) ],
	  'XLSX column types') or diag explain $x->{schema};
my $x_table = create_table($tok, 'sheet_rows', columns_of($x->{schema}));
$res = link_dataset($tok, $x_table->{table_id}, $x_id);
is($res->{status}, 201, 'link the XLSX dataset') or diag describe($res);
$done = wait_link($tok, $x_table->{table_id}, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'XLSX loaded') or diag explain $done;
is($done->{row_count}, $x->{schema}{row_count}, 'every row of the sheet');
@rows = mysql("SELECT id, IFNULL(name, 'NULL'), CAST(amount AS DOUBLE), flag, day, at FROM "
	    . "`$x_table->{warehouse_schema}`.`sheet_rows` WHERE id <= 5 ORDER BY id");
is_deeply(\@rows, [
	[ 1, 'alpha', '12.5', 1, '2024-01-15', '2024-01-15 10:30:00.000000' ],
	[ 2, 'beta', '3.25', 0, '2000-02-29', '2000-02-29 23:59:59.000000' ],
	[ 3, 'NULL', '-7.125', 1, '1970-01-01', '1970-01-01 00:00:01.000000' ],
	[ 4, 'delta, "quoted"', '100', 0, '2038-01-19', '2038-01-19 03:14:07.000000' ],
	[ 5, "\x{c3}\x{a9}psilon \x{e2}\x{98}\x{83}", '0.01', 1, '2024-02-29', '2024-02-29 12:00:00.000000' ],
], 'the spreadsheet rows are in the warehouse, typed');

# A real Parquet file (DuckDB): its schema is read and its rows loaded,
# every type of it into a table made from that schema.
$res = upload($tok, "pq/$t", 'types.parquet', fixture_bytes('types.parquet'));
my $pq = $res->{json}{files}[0]{dataset_id};
my $pq_ds = wait_ready($tok, $pq);
is($pq_ds->{status}, 'ready', 'Parquet schema read');
my $pq_table = create_table($tok, 'pq_types', columns_of($pq_ds->{schema}));
$res = link_dataset($tok, $pq_table->{table_id}, $pq);
json_response_is($res, 201, undef, 'Parquet link: 201');
$done = wait_link($tok, $pq_table->{table_id}, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'Parquet loaded') or diag explain $done;
is($done->{row_count}, 3, 'Parquet: 3 rows');
@rows = mysql('SELECT * FROM ' . "`$pq_table->{warehouse_schema}`.`pq_types` ORDER BY i32");
is_deeply(\@rows, [
	[ 1, 10000000000, 1.5, 0.25, 1, '2024-01-15', '2024-01-15 10:30:00.000000', '12.50',
	  '123456.7890', '1234567890123456789012345678.123456', 'alpha', 1, 2, 3 ],
	[ 2, ('NULL') x 13 ],
	[ 3, -5, -2.25, 1, 0, '1970-01-01', '1970-01-01 00:00:01.000000', '-0.01', '-1.0000',
	  '0.000000', 'gamma', -3, 255, 4000000000 ],
], 'the Parquet rows are in the warehouse, typed: decimals to their scale, NULLs');

done_testing();
