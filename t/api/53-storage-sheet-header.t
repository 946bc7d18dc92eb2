#!/usr/bin/perl
# The header of a spreadsheet found below a title: an XLSX (ExcelJS) whose
# table starts on row 4 under a title and a "Generated" line, and an XLS
# (SheetJS) with a title, give the table's columns, with the skipped rows
# said in the schema's warnings (upload, GET, refresh-schema); header_row
# and skip_rows override the rule and the warning goes; an index column's
# empty name is no title; linking loads the rows under the header, not the
# title.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;
use TablesFixture qw(create_table link_dataset wait_link wh_query fixture_bytes);

my ($tok, $cid) = sx_customer('st-sheet-header');

sub refresh {
	my ($id, $body) = @_;
	return sx(PUT => "/storage-explorer/datasets/$id/refresh-schema", $tok, json => $body);
}

sub names { [ map { $_->{name} } @{ $_[0]{columns} } ] }

my $res = upload($tok, 'sheets', [ 'titled.xlsx', fixture_bytes('titled.xlsx') ],
		 [ 'titled.xls', fixture_bytes('titled.xls') ]);
is($res->{status}, 201, 'upload') or diag describe($res);
my $x = dataset_of($res, 'titled.xlsx');
my $xl = dataset_of($res, 'titled.xls');
my $ds = wait_dataset($tok, $x);
is($ds->{status}, 'ready', 'XLSX inferred') or diag explain $ds;

my $warn4 = 'the header is row 4 of the sheet: 2 non-blank rows above it (a title or notes) '
	. 'were skipped; refresh the schema with header_row to take another row';
is_deeply(names($ds->{schema}), [ qw(region product units revenue) ],
	  'the columns are the table\'s, not the title\'s');
is($ds->{schema}{row_count}, 5, 'the five rows under the header');
is_deeply($ds->{schema}{warnings}, [ $warn4 ], 'the skipped rows are said in schema.warnings');
my %type = map { $_->{name} => $_->{inferred_type} } @{ $ds->{schema}{columns} };
is_deeply([ @type{qw(region units revenue)} ], [ qw(VARCHAR INTEGER DECIMAL) ], 'typed by the rows');

# refresh-schema: header_row 0 takes the first row as it is, without a warning
$res = refresh($x, { header_row => 0 });
json_response_is($res, 200, undef, 'refresh with header_row 0');
is_deeply(names($res->{json}{schema}), [ 'Sales report, third quarter' ],
	  'header_row 0: the title is the header');
ok(!exists $res->{json}{schema}{warnings}, 'header_row given: no warning');
is_deeply(names(sx(GET => "/storage-explorer/datasets/$x", $tok)->{json}{schema}),
	  [ 'Sales report, third quarter' ], 'GET: the refreshed schema');

# skip_rows alone overrides the rule too
$res = refresh($x, { skip_rows => 3 });
is_deeply(names($res->{json}{schema}), [ qw(region product units revenue) ], 'skip_rows 3');
ok(!exists $res->{json}{schema}{warnings}, 'skip_rows given: no warning');

# no options: the rule again, and its warning
$res = refresh($x, {});
is_deeply(names($res->{json}{schema}), [ qw(region product units revenue) ], 'no options: detected');
is_deeply($res->{json}{schema}{warnings}, [ $warn4 ], 'and said again');

# a header whose first name is empty, over an index column: not a title
$res = refresh($x, { sheet_name => 'Indexed' });
is_deeply(names($res->{json}{schema}), [ qw(column0 name score) ], 'index column: kept');
ok(!exists $res->{json}{schema}{warnings}, 'no warning');

# XLS: the same rule
my $xls = wait_dataset($tok, $xl);
is_deeply(names($xls->{schema}), [ qw(sku qty price) ], 'XLS: the table\'s columns');
is_deeply($xls->{schema}{warnings}, [ 'the header is row 3 of the sheet: 1 non-blank row above '
	. 'it (a title or notes) was skipped; refresh the schema with header_row to take '
	. 'another row' ], 'XLS: the warning');

# linking loads the rows under the detected header
$res = refresh($x, {});
my $table = create_table($tok, 'titled_sales', [
	{ name => 'region', type => 'VARCHAR(20)' }, { name => 'product', type => 'VARCHAR(20)' },
	{ name => 'units', type => 'INTEGER' }, { name => 'revenue', type => 'DECIMAL(8,2)' } ]);
$res = link_dataset($tok, $table->{table_id}, $x);
is($res->{status}, 201, 'linked') or diag describe($res);
my $done = wait_link($tok, $table->{table_id}, $res->{json}{link_id});
is($done->{sync_status}, 'done', 'loaded') or diag explain $done;
is($done->{row_count}, 5, 'five rows, no title');
is_deeply([ wh_query("SELECT region, product, units, revenue FROM "
	. "`$table->{warehouse_schema}`.`titled_sales` ORDER BY units") ], [
	[ 'west', 'pad', 1, '2.25' ], [ 'south', 'ink', 3, 'NULL' ], [ 'east', 'NULL', 7, '14.00' ],
	[ 'north', 'pen', 10, '25.50' ], [ 'north', 'ink', 12, '30.00' ] ],
	'the warehouse has the table\'s rows');

done_testing();
