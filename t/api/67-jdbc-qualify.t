#!/usr/bin/perl
# jdbc incremental_with_qualify from the source MariaDB: after the
# extract_load task appends new and updated rows, the qualify task leaves
# exactly one row per primary key, the one with the latest incremental
# value, so the destination equals the source; rows loaded twice (a PATCH
# of the bookmark to an earlier value) are deduplicated too; composite keys;
# column_include_list limits the columns while the key and the incremental
# column are still loaded (with a WARNING saying so).

use strict;
use warnings;

use Test::More;

use SluiceTest;
use JdbcFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "qual_$tag";
my $logical = "t67_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);    # its database

src_sql(<<"SQL");
CREATE TABLE $src (
	id INT NOT NULL PRIMARY KEY,
	name VARCHAR(100) NOT NULL,
	val INT NOT NULL,
	updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
INSERT INTO $src SELECT seq, CONCAT('row ', seq), seq, '2024-01-01' + INTERVAL seq SECOND
FROM seq_1_to_10000;
SQL

my $EXPR = "CONCAT_WS('|', id, name, val, updated_at)";
my $cid = make_connection($token);
my $p = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'items', load_type => 'incremental_with_qualify',
	incremental_column_name => 'updated_at', incremental_column_type => 'timestamp',
	primary_keys => [ 'id' ]);
my $dest = "`$schema`.`items`";

my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'first run: SUCCESS');
is($run->{rows_loaded}, 10000, 'first run loads 10,000 rows');
is(job_bookmark($token, $p->{pipeline_id}), '2024-01-01T02:46:40.000000Z',
   'a TIMESTAMP column keeps a UTC bookmark ending in Z');
my @logs = run_logs($token, $run->{run_id});
ok((grep { ($_->{task_id} // '') eq "$p->{job_id}.qualify" } @logs),
   'the qualify task ran and logged under its task id');

# --- 10 updated + 100 new rows: one row per key, with the updated values --------------
src_sql("UPDATE $src SET name = CONCAT('updated ', id), val = -id, updated_at = '2024-05-01 00:00:00' "
	. "WHERE id % 1000 = 7; "
	. "INSERT INTO $src SELECT seq, 'new', seq, '2024-05-02' + INTERVAL seq SECOND FROM seq_10001_to_10100");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'second run: SUCCESS');
is($run->{rows_loaded}, 110, 'extract_load loaded the 110 changed rows');
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $dest"), "10100\t10100",
   'exactly one row per primary key');
is(wh_sql("SELECT GROUP_CONCAT(CONCAT(id, '=', name, '/', val) ORDER BY id) FROM $dest WHERE id % 1000 = 7 AND id <= 10000"),
   join(',', map { my $i = $_ * 1000 + 7; "$i=updated $i/-$i" } 0 .. 9),
   'the kept rows carry the updated values');
is(wh_table_sig($dest, $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'the destination equals the source');
@logs = run_logs($token, $run->{run_id});
ok((grep { $_->{message} eq "qualify applied the increment to $schema.items: 110 rows inserted, "
	. "10 older rows of their keys replaced" } @logs),
   'log: the increment\'s keys applied, not the whole table');
is(scalar(grep { $_->{level} eq 'ERROR' } @logs), 0, 'no ERROR line');

# --- rows loaded a second time are deduplicated as well ---------------------------------
my $res = http(PATCH => "/platform/jobs/$p->{job_id}/input", { token => $token,
	json => { connector => 'jdbc', incremental_column_value => '2024-01-01T02:00:00Z' } });
is($res->{status}, 200, 'PATCH the bookmark back') or diag describe($res);
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'run over already-loaded rows: SUCCESS');
ok($run->{rows_loaded} > 2000, "it loaded $run->{rows_loaded} rows again");
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $dest"), "10100\t10100",
   'still exactly one row per key');
is(wh_table_sig($dest, $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'and the destination still equals the source');

# --- reset-state: qualify still runs after the full extraction ----------------------------
$res = http(POST => "/platform/jobs/$p->{job_id}/reset-state", { token => $token });
is($res->{status}, 200, 'reset-state: 200');
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{rows_loaded}, 10100, 'after reset-state every row is extracted');
ok((grep { ($_->{task_id} // '') eq "$p->{job_id}.qualify" } run_logs($token, $run->{run_id})),
   'and the qualify task still runs');
is(wh_table_sig($dest, $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'destination equals the source');

# --- composite keys ----------------------------------------------------------------------------
src_sql("CREATE TABLE ${src}_c (a INT NOT NULL, b VARCHAR(10) NOT NULL, v INT NOT NULL, "
	. "ts DATETIME(3) NOT NULL, PRIMARY KEY (a, b)); "
	. "INSERT INTO ${src}_c SELECT seq DIV 3, CHAR(97 + seq % 3), seq, '2024-01-01' + INTERVAL seq MINUTE "
	. "FROM seq_1_to_300");
my $pc = make_pipeline($token, connection_id => $cid, table => "${src}_c",
	dest_schema => $logical, dest_table => 'composite', load_type => 'incremental_with_qualify',
	incremental_column_name => 'ts', incremental_column_type => 'datetime',
	primary_keys => [ 'a', 'b' ]);
run_and_wait($token, $pc->{pipeline_id});
src_sql("UPDATE ${src}_c SET v = v + 1000, ts = ts + INTERVAL 1 YEAR WHERE a < 10");
$run = run_and_wait($token, $pc->{pipeline_id});
is($run->{rows_loaded}, src_sql("SELECT COUNT(*) FROM ${src}_c WHERE a < 10"),
   'composite keys: the updated rows are loaded');
my $cexpr = "CONCAT_WS('|', a, b, v, ts)";
is(wh_table_sig("`$schema`.`composite`", $cexpr, 'a, b'), src_table_sig("${src}_c", $cexpr, 'a, b'),
   'one row per (a, b), equal to the source');

# --- column_include_list without the key and the column: both still loaded ------------------
my $pn = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'narrow', load_type => 'incremental_with_qualify',
	incremental_column_name => 'updated_at', incremental_column_type => 'timestamp',
	primary_keys => [ 'id' ], column_include_list => [ 'id', 'name', 'updated_at' ]);
$res = http(PATCH => "/platform/jobs/$pn->{job_id}/input", { token => $token,
	json => { column_include_list => [ 'name' ] } });
is($res->{status}, 200, 'PATCH column_include_list to [name]') or diag describe($res);
$run = run_and_wait($token, $pn->{pipeline_id});
is($run->{status}, 'SUCCESS', 'run with a narrow include list: SUCCESS');
is(wh_sql("SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS "
	. "WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = 'narrow'"), 'id,name,updated_at',
   'the listed column, the key and the incremental column are loaded, nothing else');
@logs = run_logs($token, $run->{run_id});
ok((grep { $_->{level} eq 'WARNING' && $_->{message} =~ /incremental column updated_at is not in column_include_list/ } @logs),
   'WARNING: the incremental column was added');
ok((grep { $_->{level} eq 'WARNING' && $_->{message} =~ /primary key id is not in column_include_list/ } @logs),
   'WARNING: the key was added');
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM `$schema`.`narrow`"), "10100\t10100",
   'one row per key');

wh_sql("DROP SCHEMA `$schema`");
src_sql("DROP TABLE $src, ${src}_c");
done_testing();
