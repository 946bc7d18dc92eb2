#!/usr/bin/perl
# jdbc full_load from the source MariaDB: a 10,000-row table executed through
# the API lands whole in the warehouse (SUCCESS, rows_loaded, every value),
# with columns typed from the source; a second run after the source changed
# leaves the destination equal to the source, through a staging table that
# does not stay behind; the run's log says what it connected to, the query
# and the counts, and never the password.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use JdbcFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "full_$tag";
my $logical = "t65_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);    # its database

src_sql(<<"SQL");
CREATE TABLE $src (
	id INT NOT NULL PRIMARY KEY,
	name VARCHAR(100) NULL,
	amount DECIMAL(12,2) NULL,
	ratio DOUBLE NULL,
	flags BIT(4) NULL,
	updated_at DATETIME(6) NOT NULL,
	seen TIMESTAMP(3) NULL,
	note TEXT NULL,
	raw VARBINARY(16) NULL,
	day DATE NULL,
	big BIGINT UNSIGNED NULL
);
INSERT INTO $src SELECT seq, CONCAT('name ', seq, IF(seq % 7 = 0, '\\ttab\\nline\\\\', '')),
	seq / 100, seq / 3e0, seq % 16, '2024-01-01' + INTERVAL seq SECOND,
	'2024-06-01' + INTERVAL seq MINUTE, IF(seq % 3 = 0, NULL, REPEAT('x', seq % 50)),
	IF(seq % 5 = 0, UNHEX('00FF0A5C09'), NULL), '2024-01-01' + INTERVAL (seq % 400) DAY,
	18446744073709551615 - seq
FROM seq_1_to_10000;
SQL
is(src_sql("SELECT COUNT(*) FROM $src"), 10000, 'source table has 10,000 rows');

my $EXPR = "CONCAT_WS('|', id, IFNULL(name, '~'), IFNULL(amount, '~'), IFNULL(ratio, '~'), "
	. "IFNULL(flags + 0, '~'), updated_at, IFNULL(seen, '~'), IFNULL(note, '~'), "
	. "IFNULL(HEX(raw), '~'), IFNULL(day, '~'), IFNULL(big, '~'))";

my $cid = make_connection($token);
my $p = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'items', load_type => 'full_load');

# --- first run -----------------------------------------------------------------
my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'full_load run: SUCCESS');
is($run->{rows_loaded}, 10000, 'rows_loaded 10000');
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`items`"), 10000,
   'the destination holds 10,000 rows');
is(wh_table_sig("`$schema`.`items`", $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'every value equals the source (text, tabs, newlines, backslashes, NULLs, bytes, dates, numbers)');

# The destination's columns come from the source's types.
my %type = map { $_->[0] => $_->[1] } wh_sql(
	"SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
	. "WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = 'items'");
is_deeply(\%type, {
	id => 'int(11)', name => 'varchar(100)', amount => 'decimal(12,2)',
	ratio => 'double', flags => 'bigint(20) unsigned', updated_at => 'datetime(6)',
	seen => 'datetime(3)', note => 'text', raw => 'varbinary(16)', day => 'date',
	big => 'bigint(20) unsigned',
}, 'destination column types map the source types');

my ($pl) = http(GET => "/platform/pipeline/$p->{pipeline_id}", { token => $token })->{json};
is($pl->{last_status}, 'SUCCESS', 'pipeline last_status SUCCESS');
is($pl->{jobs}[0]{job_status}, 'SUCCESS', 'job_status SUCCESS');

my @logs = run_logs($token, $run->{run_id});
my @el = grep { ($_->{task_id} // '') eq "$p->{job_id}.extract_load" } @logs;
ok(scalar(@el), 'log lines carry the extract_load task id');
ok((grep { $_->{level} eq 'INFO' && $_->{message} =~ /connecting to MariaDB at 127\.0\.0\.1:\d+, database source, as source/ } @el),
   'log: what it connected to');
ok((grep { $_->{message} =~ /^query: SELECT .*FROM `\Q$src\E`/ } @el), 'log: the query');
ok((grep { $_->{message} =~ /rows read: 10000, rows written: 10000/ } @el),
   'log: rows read and written');
my $pw = env('SLUICE_SOURCE_PASSWORD');
ok(!(grep { index($_->{message}, $pw) >= 0 } @logs), 'the source password is in no log line');
ok(!(grep { $_->{level} eq 'ERROR' } @logs), 'no ERROR line');

# --- the source changes; a second run replaces the destination ------------------
src_sql("DELETE FROM $src WHERE id % 10 = 0; UPDATE $src SET name = 'changed' WHERE id % 10 = 1; "
	. "INSERT INTO $src (id, name, updated_at) SELECT seq, 'new', NOW() FROM seq_20001_to_20050");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'second full_load run: SUCCESS');
is($run->{rows_loaded}, 9050, 'rows_loaded 9050');
is(wh_table_sig("`$schema`.`items`", $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'after two full loads the destination equals the source');
is(wh_sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$schema'"),
   1, 'no staging or old table is left beside the destination');

# --- column_include_list limits the columns --------------------------------------
my $p2 = make_pipeline($token, connection_id => $cid, table => "source.$src",
	dest_schema => $logical, dest_table => 'narrow', load_type => 'full_load',
	column_include_list => [ 'id', 'name' ]);
$run = run_and_wait($token, $p2->{pipeline_id});
is($run->{status}, 'SUCCESS', 'full_load with column_include_list (schema.table name): SUCCESS');
is(wh_sql("SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS "
	. "WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = 'narrow'"), 'id,name',
   'only the listed columns are loaded');
is(wh_table_sig("`$schema`.`narrow`", "CONCAT_WS('|', id, IFNULL(name, '~'))", 'id'),
   src_table_sig($src, "CONCAT_WS('|', id, IFNULL(name, '~'))", 'id'), 'their values equal the source');

# --- an empty source table ----------------------------------------------------------
src_sql("CREATE TABLE ${src}_empty LIKE $src");
my $p3 = make_pipeline($token, connection_id => $cid, table => "${src}_empty",
	dest_schema => $logical, dest_table => 'empty', load_type => 'full_load');
$run = run_and_wait($token, $p3->{pipeline_id});
is($run->{status}, 'SUCCESS', 'full_load of an empty table: SUCCESS');
is($run->{rows_loaded}, 0, 'rows_loaded 0');
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`empty`"), 0, 'the destination exists, empty');

# --- a table that is not there fails the run with the reason ------------------------
my $p4 = make_pipeline($token, connection_id => $cid, table => "no_such_$tag",
	dest_schema => $logical, dest_table => 'nothing', load_type => 'full_load');
$run = run_and_wait($token, $p4->{pipeline_id});
is($run->{status}, 'FAILED', 'a missing source table: FAILED');
ok((grep { $_->{level} eq 'ERROR' && $_->{message} =~ /no_such_\Q$tag\E not found/ }
    run_logs($token, $run->{run_id})), 'ERROR line names the missing table');

wh_sql("DROP SCHEMA `$schema`");
src_sql("DROP TABLE $src, ${src}_empty");
done_testing();
