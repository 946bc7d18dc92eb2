#!/usr/bin/perl
# Inferred schemas of files as other programs write them, uploaded through
# the API and read back with GET /storage-explorer/datasets/{id}: R's NA and
# row names, TRUE/FALSE, CR-only line ends, a header over a column empty in
# every row, names with spaces around them, space-separated numbers,
# '#' comments, headerless files (DuckDB's column0.. names); refresh-schema's
# delimiter "space", null_markers replacing the markers (200, 400, 422); and a
# linked load that puts a marker in a typed column as NULL.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;

my ($tok, $cid) = sx_customer('st-writers');
my $F = JSON::PP::false;
my $T = JSON::PP::true;

my %files = (
	'r_write_csv.csv' => qq{"","x","flag","s"\n"1",1,TRUE,"a"\n"2",NA,FALSE,NA\n"3",3.5,NA,"b"\n},
	'old_mac.csv'     => "id,v\r1,a\r2,b\r3,c\r",
	'empty_col.csv'   => "id,empty,v\n1,,2.5\n2,,3\n",
	'spaced.csv'      => "a, cpi , scenario\n1, 2.5 ,x\n2,3,y\n",
	'numbers.txt'     => "0.7 1.0 0.17\n0.6 0.0 0.23\n1.4 1.0 0.07\n",
	'stan.csv'        => "# Samples\n# seed=1\nlp__,theta\n-7.1,0.2\n# Adaptation\n-7.3,0.3\n",
	'stata.csv'       => "a,b,c\n1,.,NaN\n2,5,Inf\n3,.,-inf\n",
	'names.txt'       => "first last\nann lee\nbob ray\n",
	'r_write_table.txt' => qq{"x" "name"\n"1" 1.5 "a b"\n"2" 2 "c"\n},
);
my $res = upload($tok, 'writers', map { [ $_, $files{$_} ] } sort keys %files);
is($res->{status}, 201, 'upload') or diag describe($res);
my %id = map { $_->{file_name} => $_->{dataset_id} } @{ $res->{json}{files} };

sub col {
	my ($name, $type, $nullable, @ps) = @_;
	return { name => $name, inferred_type => $type, nullable => $nullable ? $T : $F,
		 @ps ? (precision => $ps[0], scale => $ps[1]) : () };
}

sub schema_is {
	my ($file, $rows, @cols) = @_;
	my $ds = wait_dataset($tok, $id{$file});
	is($ds->{status}, 'ready', "$file: ready") or diag explain $ds;
	my $i = 0;
	$_->{position} = $i++ for @cols;
	is_deeply($ds->{schema}, { columns => \@cols, row_count => $rows, analyzed_rows => $rows },
		  "$file: schema and exact row count") or diag explain $ds->{schema};
}

schema_is('r_write_csv.csv', 3, col('column0', 'INTEGER', 0), col('x', 'DECIMAL', 1, 2, 1),
	  col('flag', 'BOOLEAN', 1), col('s', 'VARCHAR', 0));
schema_is('old_mac.csv', 3, col('id', 'INTEGER', 0), col('v', 'VARCHAR', 0));
schema_is('empty_col.csv', 2, col('id', 'INTEGER', 0), col('empty', 'VARCHAR', 1),
	  col('v', 'DECIMAL', 0, 2, 1));
schema_is('spaced.csv', 2, col('a', 'INTEGER', 0), col('cpi', 'DECIMAL', 0, 2, 1),
	  col('scenario', 'VARCHAR', 0));
schema_is('numbers.txt', 3, col('column0', 'DECIMAL', 0, 2, 1), col('column1', 'DECIMAL', 0, 2, 1),
	  col('column2', 'DECIMAL', 0, 2, 2));
schema_is('stan.csv', 2, col('lp__', 'DECIMAL', 0, 2, 1), col('theta', 'DECIMAL', 0, 1, 1));
schema_is('stata.csv', 3, col('a', 'INTEGER', 0), col('b', 'INTEGER', 1), col('c', 'DOUBLE', 0));
schema_is('names.txt', 2, col('first last', 'VARCHAR', 0));   # words: no numbers, no split
schema_is('r_write_table.txt', 2, col('column0', 'INTEGER', 0), col('x', 'DECIMAL', 0, 2, 1),
	  col('name', 'VARCHAR', 0));                           # row names: no name of their own

# --- null_markers: the list replaces the default one --------------------------------

sub refresh {
	my ($id, $body) = @_;
	return sx(PUT => "/storage-explorer/datasets/$id/refresh-schema", $tok, json => $body);
}

$res = refresh($id{'names.txt'}, { delimiter => 'space' });
json_response_is($res, 200, undef, 'delimiter "space"');
is_deeply($res->{json}{parsing_options}, { delimiter => ' ' }, 'stored as a space');
is_deeply([ map { $_->{name} } @{ $res->{json}{schema}{columns} } ], [qw(first last)],
	  'runs of blanks split the words');

$res = refresh($id{'r_write_csv.csv'}, { null_markers => [] });
json_response_is($res, 200, undef, 'null_markers []');
is_deeply($res->{json}{parsing_options}, { null_markers => [] }, 'stored as given');
is_deeply([ map { $_->{inferred_type} } @{ $res->{json}{schema}{columns} } ],
	  [qw(INTEGER VARCHAR VARCHAR VARCHAR)], 'no markers: NA is text, x and flag VARCHAR');
is_deeply(sx(GET => "/storage-explorer/datasets/$id{'r_write_csv.csv'}", $tok)->{json}{schema},
	  $res->{json}{schema}, 'GET dataset: the refreshed schema');

$res = refresh($id{'stata.csv'}, { null_markers => [ '1', '.' ] });
json_response_is($res, 200, undef, 'null_markers ["1", "."]');
is_deeply([ map { "$_->{name}:$_->{inferred_type}:" . ($_->{nullable} ? 1 : 0) }
	    @{ $res->{json}{schema}{columns} } ], [ 'a:INTEGER:1', 'b:INTEGER:1', 'c:DOUBLE:0' ],
	  'a sentinel number as a marker makes its column nullable');

for my $bad ([ 'NA', 'must be an array of at most 16 strings' ],
	     [ [ ('x') x 17 ], 'must be an array of at most 16 strings' ],
	     [ [ 'NA', 5 ], 'null_markers must hold strings of 1 to 31 bytes' ],
	     [ [ '' ], 'null_markers must hold strings of 1 to 31 bytes' ],
	     [ [ 'x' x 32 ], 'null_markers must hold strings of 1 to 31 bytes' ],
	     [ [ "N\tA" ], 'null_markers must not hold control characters' ]) {
	$res = refresh($id{'stata.csv'}, { null_markers => $bad->[0] });
	sx_error_is($res, 400, 'invalid_parsing_options', qr/\Q$bad->[1]\E/,
		    'null_markers refused: ' . json_encode($bad->[0]));
}
$res = refresh($id{'stata.csv'}, { null_markers => [ ('x') x 16 ] });
json_response_is($res, 200, undef, '16 markers (the most) are taken');
$res = refresh($id{'stata.csv'}, { null_markers => [ 'x' x 31 ] });
json_response_is($res, 200, undef, 'a marker of 31 bytes (the longest) is taken');

$res = upload($tok, 'writers', [ 'doc.json', '[{"a": "NA"}]' ]);
is($res->{status}, 201, 'upload a JSON file') or diag describe($res);
my $json_id = dataset_of($res, 'doc.json');
wait_dataset($tok, $json_id);
sx_error_is(refresh($json_id, { null_markers => ['NA'] }), 422, 'option_not_supported',
	    'null_markers does not apply to json files', 'null_markers on JSON: 422');

# --- a linked load: a marker in a typed column is NULL, NaN too ------------------------

$res = refresh($id{'stata.csv'}, {});
json_response_is($res, 200, undef, 'back to the default markers');
$res = sx(POST => '/storage-explorer/tables', $tok, json => { table_name => 'stata_t',
	  columns => [ { name => 'a', type => 'INTEGER' }, { name => 'b', type => 'INTEGER' },
		       { name => 'c', type => 'DOUBLE' } ] });
is($res->{status}, 201, 'create a table') or diag describe($res);
my $table = $res->{json};
$res = sx(POST => "/storage-explorer/tables/$table->{table_id}/datasets/$id{'stata.csv'}", $tok);
is($res->{status}, 201, 'link the dataset') or diag describe($res);
my $link = $res->{json}{link_id};
my $done;
wait_until(30, sub {
	my $t = sx(GET => "/storage-explorer/tables/$table->{table_id}", $tok)->{json};
	($done) = grep { $_->{link_id} eq $link } @{ $t->{links} || [] };
	$done && $done->{sync_status} =~ /^(done|failed)$/;
}, 0.1);
is($done && $done->{sync_status}, 'done', 'the load is done') or diag explain $done;
is_deeply([ mysql("SELECT a, IFNULL(b, 'NULL'), IFNULL(c, 'NULL') FROM "
		  . "`$table->{warehouse_schema}`.`$table->{warehouse_table}` ORDER BY a") ],
	  [ [ 1, 'NULL', 'NULL' ], [ 2, 5, 'NULL' ], [ 3, 'NULL', 'NULL' ] ],
	  'markers and NaN/Inf are NULL in the warehouse');

done_testing();
