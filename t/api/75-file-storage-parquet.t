#!/usr/bin/perl
# file_storage loads .parquet files (no longer skipped): two DuckDB files
# of the same rows (SNAPPY and ZSTD) into one table typed from the first,
# every value in place; a file of the Rust writer (pages v2, DELTA
# encodings, a LIST column) into another; a file with a damaged page fails
# alone, named with its column in the run log, and leaves no row, while
# the files before it stay loaded.

use strict;
use warnings;

use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;
use TablesFixture qw(fixture_bytes);

my ($token, $cid) = customer_token('demo');
my $LOGICAL = 't75_parquet';
my $SCHEMA = wh_schema($cid, $LOGICAL);    # the demo customer's own database
drop_schema($SCHEMA);
my $area = storage_area($cid);
my $base = "$area/t75";
system('rm', '-rf', $base);
my $t0 = time - 1000;

put_file("$base/pq/a.parquet", fixture_bytes('types.parquet'), $t0);
put_file("$base/pq/b.parquet", fixture_bytes('duck-zstd.parquet'), $t0 + 1);
my $T = "`$SCHEMA`.`types`";

my $p = make_pipeline($token, [ {
	input => { connector => 'file_storage', plugin => 'local', prefix => 't75/pq/' },
	table_name => 'types', table_schema => $LOGICAL } ]);
my $run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'two Parquet files: SUCCESS')
	or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 6, '3 rows from each');
my $cols = wh_columns($SCHEMA, 'types');
is_deeply({ map { $_ => $cols->{$_}{type} } qw(i32 d b dt ts dec dec38 v u32) }, {
	i32 => 'bigint(20)', d => 'double', b => 'tinyint(1)', dt => 'date', ts => 'datetime(6)',
	dec => 'decimal(38,6)', dec38 => 'decimal(38,6)', v => 'longtext', u32 => 'bigint(20)' },
	'the table typed from the Parquet schema');
is_deeply([ wh_rows("SELECT _source_file, _source_row, i32, i64, d, f, b, dt, ts, `dec`, dec18, "
	. "dec38, v, small, tiny, u32 FROM $T ORDER BY _source_file, _source_row") ], [
	[ 't75/pq/a.parquet', 1, 1, 10000000000, 1.5, 0.25, 1, '2024-01-15',
	  '2024-01-15 10:30:00.000000', '12.500000', '123456.789000',
	  '1234567890123456789012345678.123456', 'alpha', 1, 2, 3 ],
	[ 't75/pq/a.parquet', 2, 2, (undef) x 13 ],
	[ 't75/pq/a.parquet', 3, 3, -5, -2.25, 1, 0, '1970-01-01', '1970-01-01 00:00:01.000000',
	  '-0.010000', '-1.000000', '0.000000', 'gamma', -3, 255, 4000000000 ],
	[ 't75/pq/b.parquet', 1, 1, 10000000000, 1.5, 0.25, 1, '2024-01-15',
	  '2024-01-15 10:30:00.000000', '12.500000', '123456.789000',
	  '1234567890123456789012345678.123456', 'alpha', 1, 2, 3 ],
	[ 't75/pq/b.parquet', 2, 2, (undef) x 13 ],
	[ 't75/pq/b.parquet', 3, 3, -5, -2.25, 1, 0, '1970-01-01', '1970-01-01 00:00:01.000000',
	  '-0.010000', '-1.000000', '0.000000', 'gamma', -3, 255, 4000000000 ],
], 'every value of both files in place, NULLs as NULL');

# a damaged page: that file fails alone, the others stay
my $bad = fixture_bytes('types.parquet');
substr($bad, 60, 30) = "\xff" x 30;
put_file("$base/pq/c-damaged.parquet", $bad, $t0 + 2);
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'a damaged file: the run fails');
like(log_text($token, $run->{run_id}),
     qr{ERROR t75/pq/c-damaged\.parquet: Parquet column i64: a SNAPPY page is damaged},
     'the log names the file and the column');
is(wh_count($T), 6, 'no row of the damaged file; the others kept');
is(scalar wh_rows("SELECT 1 FROM $T WHERE _source_file = 't75/pq/c-damaged.parquet'"), 0,
   'nothing half-loaded');

# the Rust writer's file: pages v2, DELTA encodings, a LIST as JSON text
put_file("$base/arrow/rows.parquet", fixture_bytes('arrow-v2-delta.parquet'), $t0);
my $p2 = make_pipeline($token, [ {
	input => { connector => 'file_storage', plugin => 'local', prefix => 't75/arrow/' },
	table_name => 'arrow_rows', table_schema => $LOGICAL } ]);
$run = run_pipeline($token, $cid, $p2->{pipeline_id});
is($run->{status}, 'SUCCESS', 'parquet-wasm file: SUCCESS')
	or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 1200, 'all 1200 rows of its three row groups');
is_deeply([ wh_rows("SELECT id, label, n8, u64, day, ts, x, f32, flag, tags FROM "
	. "`$SCHEMA`.`arrow_rows` WHERE id IN (-500, -497, -494, -491) ORDER BY id") ], [
	[ -500, 'alpha', -128, '0.000000', '1999-12-31', undef, -3.5, undef, undef, undef ],
	[ -497, 'beta', -127, undef, '2000-01-01', '2024-01-01 01:00:01.001000', -3.375, 0.5, 0, '[]' ],
	[ -494, 'gamma', -126, '246913578024690.000000', '2000-01-02', '2024-01-01 02:00:02.002000',
	  -3.25, 1, 1, '[2,-2]' ],
	[ -491, "\x{ce}\x{b4}\x{ce}\x{ad}\x{ce}\x{bb}\x{cf}\x{84}\x{ce}\x{b1}", -125,
	  '18000370370367037035.000000', '2000-01-03', '2024-01-01 03:00:03.003000', -3.125, undef,
	  0, '[3,null]' ],
], 'its values, unsigned 64-bit integers and lists included');

done_testing();
