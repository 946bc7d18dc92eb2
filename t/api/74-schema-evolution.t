#!/usr/bin/perl
# Destinations that follow their sources.  When a source column widens (a
# longer VARCHAR, a larger DECIMAL precision or scale, INT to BIGINT, DATE
# to DATETIME) the next load widens the warehouse column first, logs a
# WARNING naming the column and both types, and loads the values exactly:
# jdbc from MariaDB and PostgreSQL, file_storage (a later file with more
# decimal places), singer (a SCHEMA with wider types).  A narrowing or an
# incompatible change fails the run naming the column, before any DDL or
# row: the destination keeps its types, its rows and (jdbc) its bookmark,
# and a file whose rows fail leaves no new column behind.

use strict;
use warnings;

use File::Temp qw(tempdir);
use Test::More;

use SluiceTest;
use JdbcFixture;
use ConnectorFixture ();

my $token = env('SLUICE_DEMO_TOKEN');
my $customer = env('SLUICE_DEMO_CUSTOMER_ID');
my $tag = uniq_tag();
my $logical = "t74_$tag";
my $schema = wh_schema($customer, $logical);

sub types {
	my ($table) = @_;
	return { map { $_->[0] => $_->[1] } wh_sql(
		"SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
		. "WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = '$table'") };
}

sub messages {
	my ($run, $level) = @_;
	return map { $_->{message} } grep { $_->{level} eq $level } run_logs($token, $run->{run_id});
}

# ---- jdbc (MariaDB): each kind of widening, one incremental run ------------------
my $src = "evo_$tag";
src_sql(<<"SQL");
CREATE TABLE $src (
	id INT NOT NULL PRIMARY KEY,
	note VARCHAR(200) NULL,
	code VARCHAR(20) NULL,
	amount DECIMAL(10,2) NULL,
	price DECIMAL(10,2) NULL,
	qty INT NULL,
	day DATE NULL
);
INSERT INTO $src VALUES (1, 'short', 'c1', 12345678.90, 1.25, 7, '2024-01-02'),
	(2, NULL, NULL, NULL, NULL, NULL, NULL);
SQL
my $cid = make_connection($token);
my $p = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'evo', load_type => 'incremental',
	incremental_column_name => 'id', incremental_column_type => 'int');
my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'jdbc: first run SUCCESS');
is_deeply(types('evo'), { id => 'int(11)', note => 'varchar(200)', code => 'varchar(20)',
	amount => 'decimal(10,2)', price => 'decimal(10,2)', qty => 'int(11)', day => 'date' },
	'jdbc: the destination has the source\'s types');

my $long = 'x' x 450;
src_sql(<<"SQL");
ALTER TABLE $src MODIFY note VARCHAR(500) NULL, MODIFY code VARCHAR(60) NULL,
	MODIFY amount DECIMAL(14,2) NULL, MODIFY price DECIMAL(10,4) NULL,
	MODIFY qty BIGINT NULL, MODIFY day DATETIME NULL;
INSERT INTO $src VALUES (3, '$long', REPEAT('c', 60), 123456789012.34, 1.2345,
	9000000000, '2024-05-06 07:08:09');
SQL
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'jdbc: the run after the source widened is SUCCESS')
	or diag explain [ run_logs($token, $run->{run_id}) ];
is($run->{rows_loaded}, 1, 'jdbc: the new row is loaded');
is_deeply(types('evo'), { id => 'int(11)', note => 'text', code => 'varchar(60)',
	amount => 'decimal(14,2)', price => 'decimal(12,4)', qty => 'bigint(20)',
	day => 'datetime' },
	'jdbc: every widened column is widened in the destination (DECIMAL(10,2) and '
	. '(10,4) meet at (12,4): the old rows\' integer digits are kept)');
my @warn = messages($run, 'WARNING');
for my $w (['note', 'VARCHAR(200)', 'TEXT'], ['code', 'VARCHAR(20)', 'VARCHAR(60)'],
	   ['amount', 'DECIMAL(10,2)', 'DECIMAL(14,2)'], ['price', 'DECIMAL(10,2)', 'DECIMAL(12,4)'],
	   ['qty', 'INT', 'BIGINT'], ['day', 'DATE', 'DATETIME']) {
	my $want = "column $w->[0] widened from $w->[1] to $w->[2]: the source's type changed";
	ok((grep { $_ eq $want } @warn), "jdbc: WARNING '$want'") or diag explain \@warn;
}
is_deeply([ wh_sql("SELECT id, IFNULL(note, '~'), IFNULL(code, '~'), IFNULL(amount, '~'), "
	. "IFNULL(price, '~'), IFNULL(qty, '~'), IFNULL(day, '~') FROM `$schema`.`evo` ORDER BY id") ], [
	[ 1, 'short', 'c1', '12345678.90', '1.2500', 7, '2024-01-02 00:00:00' ],
	[ 2, '~', '~', '~', '~', '~', '~' ],
	[ 3, $long, 'c' x 60, '123456789012.34', '1.2345', 9000000000, '2024-05-06 07:08:09' ],
], 'jdbc: old and new values exact');
is(job_bookmark($token, $p->{pipeline_id}), '3', 'jdbc: the bookmark moved');
is(wh_sql("SELECT COLUMN_COMMENT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
	. "'$schema' AND TABLE_NAME = 'evo' AND COLUMN_NAME = 'price'"),
   'sluice source type DECIMAL(10,4)',
   'jdbc: a column widened beyond its source\'s type remembers that type');

$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'jdbc: the next run (types unchanged) SUCCESS');
is(scalar(grep { /widened/ } messages($run, 'WARNING')), 0, 'jdbc: no widening the second time');

# ---- jdbc: a narrowing fails, before any DDL or row --------------------------------
my $nsrc = "evon_$tag";
src_sql(<<"SQL");
CREATE TABLE $nsrc (id INT NOT NULL PRIMARY KEY, note VARCHAR(500) NULL, qty INT NULL,
	label VARCHAR(30) NULL);
INSERT INTO $nsrc VALUES (1, REPEAT('n', 400), 5, 'a'), (2, 'b', 6, 'b');
SQL
my $pn = make_pipeline($token, connection_id => $cid, table => $nsrc,
	dest_schema => $logical, dest_table => 'evon', load_type => 'incremental',
	incremental_column_name => 'id', incremental_column_type => 'int');
$run = run_and_wait($token, $pn->{pipeline_id});
is($run->{status}, 'SUCCESS', 'narrowing: first run SUCCESS');
my $before = types('evon');
src_sql("UPDATE $nsrc SET note = LEFT(note, 10); "
	. "ALTER TABLE $nsrc MODIFY note VARCHAR(20) NULL, MODIFY label VARCHAR(60) NULL; "
	. "INSERT INTO $nsrc VALUES (3, 'new', 7, REPEAT('l', 60))");
$run = run_and_wait($token, $pn->{pipeline_id});
is($run->{status}, 'FAILED', 'narrowing: VARCHAR(500) -> VARCHAR(20) fails the run');
my @err = messages($run, 'ERROR');
ok((grep { /column note: the source's type VARCHAR\(20\) is narrower than .*TEXT in the destination/ } @err),
   'narrowing: the ERROR names the column and both types') or diag explain \@err;
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`evon`"), 2, 'narrowing: no row loaded');
is_deeply(types('evon'), $before,
	'narrowing: no column altered, not even label, whose widening came with it');
is(wh_sql("SELECT LENGTH(note) FROM `$schema`.`evon` WHERE id = 1"), 400,
   'narrowing: the long value already loaded is intact');
is(job_bookmark($token, $pn->{pipeline_id}), '2', 'narrowing: the bookmark did not move');

# ---- jdbc: an incompatible change fails, naming the column ---------------------------
my $isrc = "evoi_$tag";
src_sql(<<"SQL");
CREATE TABLE $isrc (id INT NOT NULL PRIMARY KEY, qty INT NULL);
INSERT INTO $isrc VALUES (1, 5), (2, 6);
SQL
my $pi = make_pipeline($token, connection_id => $cid, table => $isrc,
	dest_schema => $logical, dest_table => 'evoi', load_type => 'incremental',
	incremental_column_name => 'id', incremental_column_type => 'int');
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{status}, 'SUCCESS', 'incompatible: first run SUCCESS');
src_sql("ALTER TABLE $isrc MODIFY qty VARCHAR(20) NULL; INSERT INTO $isrc VALUES (3, 'many')");
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{status}, 'FAILED', 'incompatible: INT -> VARCHAR with text in it fails the run');
@err = messages($run, 'ERROR');
ok((grep { /column qty: the source's type VARCHAR\(20\) does not fit INT in the destination/ } @err),
   'incompatible: the ERROR names the column and both types') or diag explain \@err;
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`evoi`"), 2, 'incompatible: no row loaded');
is(types('evoi')->{qty}, 'int(11)', 'incompatible: the column keeps its type');

# ---- jdbc (PostgreSQL): the same widenings from another kind of source -----------------
my $psrc = "evop_$tag";
pg_sql(<<"SQL");
CREATE TABLE public.$psrc (id integer PRIMARY KEY, note varchar(100), amount numeric(10,2),
	qty integer, day date);
INSERT INTO public.$psrc VALUES (1, 'p', 1.25, 3, '2024-01-02');
SQL
my $pgc = make_connection($token, plugin => 'postgres');
my $pp = make_pipeline($token, plugin => 'postgres', connection_id => $pgc,
	table => "public.$psrc", dest_schema => $logical, dest_table => 'evop',
	load_type => 'incremental', incremental_column_name => 'id',
	incremental_column_type => 'integer');
$run = run_and_wait($token, $pp->{pipeline_id});
is($run->{status}, 'SUCCESS', 'PostgreSQL: first run SUCCESS');
pg_sql("ALTER TABLE public.$psrc ALTER note TYPE varchar(200), ALTER amount TYPE numeric(12,4), "
	. "ALTER qty TYPE bigint, ALTER day TYPE timestamp; "
	. "INSERT INTO public.$psrc VALUES (2, repeat('q', 200), 12345678.1234, 9000000000, "
	. "'2024-05-06 07:08:09.5')");
$run = run_and_wait($token, $pp->{pipeline_id});
is($run->{status}, 'SUCCESS', 'PostgreSQL: the run after the source widened is SUCCESS')
	or diag explain [ run_logs($token, $run->{run_id}) ];
is_deeply(types('evop'), { id => 'int(11)', note => 'varchar(200)', amount => 'decimal(12,4)',
	qty => 'bigint(20)', day => 'datetime(6)' }, 'PostgreSQL: the destination is widened');
@warn = messages($run, 'WARNING');
ok((grep { $_ eq "column day widened from DATE to DATETIME(6): the source's type changed" } @warn),
   'PostgreSQL: WARNING for DATE -> DATETIME(6)') or diag explain \@warn;
is_deeply([ wh_sql("SELECT id, note, amount, qty, day FROM `$schema`.`evop` ORDER BY id") ], [
	[ 1, 'p', '1.2500', 3, '2024-01-02 00:00:00.000000' ],
	[ 2, 'q' x 200, '12345678.1234', 9000000000, '2024-05-06 07:08:09.500000' ],
], 'PostgreSQL: values exact');

# ---- file_storage: a later file with more decimal places ------------------------------
my $area = ConnectorFixture::storage_area($customer);
my $dir = "t74_$tag";
my $t0 = time - 1000;
ConnectorFixture::put_file("$area/$dir/a.csv", "id,amount,day\n1,1.25,2024-01-02\n2,2.5,2024-01-03\n", $t0);
my $pf = ConnectorFixture::make_pipeline($token, [ {
	input => { connector => 'file_storage', plugin => 'local', prefix => "$dir/" },
	table_name => 'files', table_schema => $logical } ]);
my $pfid = $pf->{pipeline_id};
$run = ConnectorFixture::run_pipeline($token, $customer, $pfid);
is($run->{status}, 'SUCCESS', 'file_storage: first file SUCCESS');
is(types('files')->{amount}, 'decimal(38,6)', 'file_storage: amount typed from the first file');

ConnectorFixture::put_file("$area/$dir/b.csv",
	"id,amount,day,extra\n3,3.12345678,2024-01-04 05:06:07,x\n", $t0 + 1);
$run = ConnectorFixture::run_pipeline($token, $customer, $pfid);
is($run->{status}, 'SUCCESS', 'file_storage: a file with 8 decimal places and times loads')
	or diag(ConnectorFixture::log_text($token, $run->{run_id}));
my $ft = types('files');
is($ft->{amount}, 'decimal(40,8)', 'file_storage: amount widened to hold 8 places and 32 integer digits');
is($ft->{day}, 'datetime(6)', 'file_storage: a DATE column with times widened to DATETIME');
is($ft->{extra}, 'longtext', 'file_storage: the new column added');
@warn = messages($run, 'WARNING');
ok((grep { $_ eq "column amount widened from DECIMAL(38,6) to DECIMAL(40,8): the source's type changed" } @warn),
   'file_storage: WARNING for amount') or diag explain \@warn;
ok((grep { $_ eq "column day widened from DATE to DATETIME(6): the source's type changed" } @warn),
   'file_storage: WARNING for day') or diag explain \@warn;
is_deeply([ wh_sql("SELECT id, amount, day, IFNULL(extra, '~') FROM `$schema`.`files` ORDER BY id") ], [
	[ 1, '1.25000000', '2024-01-02 00:00:00.000000', '~' ],
	[ 2, '2.50000000', '2024-01-03 00:00:00.000000', '~' ],
	[ 3, '3.12345678', '2024-01-04 05:06:07.000000', 'x' ],
], 'file_storage: values exact, none rounded');

# A file whose amount is text: refused before any DDL; its new column never appears.
ConnectorFixture::put_file("$area/$dir/c.csv", "id,amount,other\n4,lots,y\n", $t0 + 2);
$run = ConnectorFixture::run_pipeline($token, $customer, $pfid);
is($run->{status}, 'FAILED', 'file_storage: a text amount fails the run');
@err = messages($run, 'ERROR');
ok((grep { /c\.csv: column amount: the source's type LONGTEXT does not fit DECIMAL\(40,8\)/ } @err),
   'file_storage: the ERROR names the file and the column') or diag explain \@err;
is_deeply(types('files'), $ft, 'file_storage: the table unchanged (no column other)');
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`files`"), 3, 'file_storage: no row of it');
unlink "$area/$dir/c.csv";

# A file whose new column fails late (a value after the rows types are
# inferred from): its rows roll back and the column it added is dropped.
my $csv = "id,amount,late\n" . join('', map { "$_,1.5,$_\n" } 10 .. 10010) . "10011,1.5,oops\n";
ConnectorFixture::put_file("$area/$dir/d.csv", $csv, $t0 + 3);
$run = ConnectorFixture::run_pipeline($token, $customer, $pfid);
is($run->{status}, 'FAILED', 'file_storage: a value the new column refuses fails the run');
@err = messages($run, 'ERROR');
ok((grep { /d\.csv: .*late/ } @err), 'file_storage: the ERROR names the file and the column')
	or diag explain \@err;
is_deeply(types('files'), $ft, 'file_storage: the failed file\'s new column is gone again');
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`files`"), 3, 'file_storage: none of its rows stay');
unlink "$area/$dir/d.csv";

# ---- singer: a SCHEMA with wider types ---------------------------------------------
my $tmp = tempdir(CLEANUP => 1);
chmod 0755, $tmp;
sub singer_pipeline {
	my ($name, $props, @recs) = @_;
	my $file = "$tmp/$name.jsonl";
	open my $fh, '>', $file or die "$file: $!";
	print {$fh} json_encode($_), "\n" for @recs;
	close $fh;
	chmod 0644, $file;
	return ConnectorFixture::make_pipeline($token, [ {
		input => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
			   config => { source => $file, schema => { type => 'object',
				properties => { id => { type => 'integer' }, %$props } } } },
		table_name => 'sing', table_schema => $logical } ])->{pipeline_id};
}
my $s1 = singer_pipeline('v1', { amount => { type => 'number', multipleOf => 0.01 },
	day => { type => 'string', format => 'date' } },
	{ id => 1, amount => 1.25, day => '2024-01-02' });
$run = ConnectorFixture::run_pipeline($token, $customer, $s1);
is($run->{status}, 'SUCCESS', 'singer: first schema SUCCESS')
	or diag(ConnectorFixture::log_text($token, $run->{run_id}));
is(types('sing')->{amount}, 'decimal(38,2)', 'singer: amount DECIMAL(38,2) from multipleOf 0.01');
my $s2 = singer_pipeline('v2', { amount => { type => 'number', multipleOf => 0.0001 },
	day => { type => 'string', format => 'date-time' } },
	{ id => 2, amount => 2.1234, day => '2024-01-03T04:05:06Z' });
$run = ConnectorFixture::run_pipeline($token, $customer, $s2);
is($run->{status}, 'SUCCESS', 'singer: a wider schema SUCCESS')
	or diag(ConnectorFixture::log_text($token, $run->{run_id}));
is(types('sing')->{amount}, 'decimal(40,4)', 'singer: amount widened');
is(types('sing')->{day}, 'datetime(6)', 'singer: day widened');
@warn = messages($run, 'WARNING');
ok((grep { $_ eq "column amount widened from DECIMAL(38,2) to DECIMAL(40,4): the source's type changed" } @warn),
   'singer: WARNING for amount') or diag explain \@warn;
is_deeply([ wh_sql("SELECT id, amount, day FROM `$schema`.`sing` ORDER BY id") ], [
	[ 1, '1.2500', '2024-01-02 00:00:00.000000' ],
	[ 2, '2.1234', '2024-01-03 04:05:06.000000' ],
], 'singer: values exact');
my $s3 = singer_pipeline('v3', { amount => { type => 'string' } }, { id => 3, amount => 'lots' });
$run = ConnectorFixture::run_pipeline($token, $customer, $s3);
is($run->{status}, 'FAILED', 'singer: a string amount fails the run');
@err = messages($run, 'ERROR');
ok((grep { /column amount: the source's type LONGTEXT does not fit DECIMAL\(40,4\)/ } @err),
   'singer: the ERROR names the column') or diag explain \@err;
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`sing`"), 2, 'singer: no row loaded');

system('rm', '-rf', "$area/$dir");
wh_sql("DROP SCHEMA `$schema`");
src_sql("DROP TABLE $src, $nsrc, $isrc");
pg_sql("DROP TABLE public.$psrc");
done_testing();
