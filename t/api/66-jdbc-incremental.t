#!/usr/bin/perl
# jdbc incremental from the source MariaDB: the first run extracts all rows
# and sets the bookmark to the largest value; 100 inserted and 10 updated
# rows make the next run load exactly 110, appended, the bookmark moving
# with them; a run with nothing new loads nothing; PATCH of the bookmark
# makes the next run load only the rows above it (equal values included
# never, greater values always); reset-state makes the next run extract
# everything again; an integer column keeps a numeric bookmark.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use JdbcFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "inc_$tag";
my $logical = "t66_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);    # its database

# Four rows share each updated_at value: ties everywhere.
src_sql(<<"SQL");
CREATE TABLE $src (
	id INT NOT NULL PRIMARY KEY,
	name VARCHAR(100) NOT NULL,
	amount DECIMAL(12,2) NULL,
	updated_at DATETIME(6) NOT NULL,
	KEY (updated_at)
);
INSERT INTO $src SELECT seq, CONCAT('row ', seq), seq / 10,
	'2024-01-01' + INTERVAL (seq DIV 4) SECOND FROM seq_1_to_10000;
SQL

my $EXPR = "CONCAT_WS('|', id, name, IFNULL(amount, '~'), updated_at)";
my $iso = sub { (my $v = $_[0]) =~ s/ /T/; return $v };
my $src_max = sub { $iso->(scalar src_sql("SELECT MAX(updated_at) FROM $src")) };

my $cid = make_connection($token);
my $p = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'items', load_type => 'incremental',
	incremental_column_name => 'updated_at', incremental_column_type => 'datetime');
my $dest = "`$schema`.`items`";

# --- first run: everything, bookmark = the largest value --------------------------
is(job_bookmark($token, $p->{pipeline_id}), undef, 'no bookmark before the first run');
my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'first incremental run: SUCCESS');
is($run->{rows_loaded}, 10000, 'first run loads all 10,000 rows');
is(wh_table_sig($dest, $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'the destination equals the source');
my $bm1 = job_bookmark($token, $p->{pipeline_id});
is($bm1, $src_max->(), "bookmark is the largest updated_at in ISO 8601 ($bm1)");
my @logs = run_logs($token, $run->{run_id});
ok((grep { $_->{message} =~ /bookmark before: none/ } @logs), 'log: bookmark before (none)');
ok((grep { $_->{message} eq "bookmark after: $bm1" } @logs), 'log: bookmark after');

# --- 100 inserted + 10 updated rows: exactly 110 loaded -----------------------------
src_sql("INSERT INTO $src SELECT seq, CONCAT('new ', seq), 1, '2024-02-01' + INTERVAL seq SECOND "
	. "FROM seq_10001_to_10100; "
	. "UPDATE $src SET name = CONCAT('updated ', id), updated_at = '2024-03-01 12:00:00' "
	. "WHERE id BETWEEN 501 AND 510");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'second run: SUCCESS');
is($run->{rows_loaded}, 110, 'insert 100 + update 10: the incremental run loads 110');
is(wh_sql("SELECT COUNT(*) FROM $dest"), 10110, 'appended: 10,110 rows in the destination');
is(wh_sql("SELECT COUNT(*) FROM $dest WHERE name LIKE 'updated %'"), 10,
   'the 10 updated rows arrived with their new values');
is(wh_sql("SELECT COUNT(*) FROM $dest WHERE name LIKE 'new %'"), 100, 'the 100 new rows arrived');
my $bm2 = job_bookmark($token, $p->{pipeline_id});
is($bm2, '2024-03-01T12:00:00.000000', 'bookmark moved to the largest loaded value');
@logs = run_logs($token, $run->{run_id});
ok((grep { $_->{message} eq "incremental column updated_at (datetime), bookmark before: $bm1" } @logs),
   'log: bookmark before');
ok((grep { $_->{message} =~ /^query: SELECT .* WHERE `updated_at` > .* ORDER BY `updated_at` \(parameter: / } @logs),
   'log: the query, its bound parameter');
ok((grep { $_->{message} eq "bookmark after: $bm2" } @logs), 'log: bookmark after');

# --- nothing new: nothing loaded, bookmark kept --------------------------------------
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'run with nothing new: SUCCESS');
is($run->{rows_loaded}, 0, 'nothing loaded');
is(job_bookmark($token, $p->{pipeline_id}), $bm2, 'bookmark unchanged');

# --- PATCH of the bookmark: the next run loads only rows above it ----------------------
# A value four rows share: those four are not loaded again, the next ones are.
my $patch = '2024-01-01T00:30:00Z';
my $res = http(PATCH => "/platform/jobs/$p->{job_id}/input", { token => $token,
	json => { connector => 'jdbc', incremental_column_value => $patch } });
is($res->{status}, 200, 'PATCH incremental_column_value: 200') or diag describe($res);
is(job_bookmark($token, $p->{pipeline_id}), $patch, 'the job shows the patched bookmark');
my $above = src_sql("SELECT COUNT(*) FROM $src WHERE updated_at > '2024-01-01 00:30:00'");
my $at = src_sql("SELECT COUNT(*) FROM $src WHERE updated_at = '2024-01-01 00:30:00'");
is($at, 4, 'four source rows hold the patched value itself');
my $before = wh_sql("SELECT COUNT(*) FROM $dest");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'run after PATCH: SUCCESS');
is($run->{rows_loaded}, $above, "it loads exactly the $above rows above the bookmark");
is(wh_sql("SELECT COUNT(*) FROM $dest") - $before, $above, 'appended that many');
is(job_bookmark($token, $p->{pipeline_id}), $src_max->(), 'bookmark back at the largest value');
ok((grep { $_->{message} =~ /bookmark before: \Q$patch\E/ } run_logs($token, $run->{run_id})),
   'log: the patched bookmark was the starting point');

# --- reset-state: the next run extracts everything ----------------------------------------
$res = http(POST => "/platform/jobs/$p->{job_id}/reset-state", { token => $token });
is($res->{status}, 200, 'reset-state: 200') or diag describe($res);
is(job_bookmark($token, $p->{pipeline_id}), undef, 'bookmark cleared');
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'run after reset-state: SUCCESS');
my $total = src_sql("SELECT COUNT(*) FROM $src");
is($run->{rows_loaded}, $total, "it extracts every row ($total)");
is(wh_table_sig($dest, $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'the destination is rebuilt equal to the source (no duplicates)');
is(job_bookmark($token, $p->{pipeline_id}), $src_max->(), 'bookmark set again');

# --- an integer incremental column: numeric bookmark -----------------------------------------
my $pi = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'by_id', load_type => 'incremental',
	incremental_column_name => 'id', incremental_column_type => 'int');
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{rows_loaded}, $total, 'integer column: first run loads all');
is(job_bookmark($token, $pi->{pipeline_id}), '10100', 'bookmark is the largest id, a number');
src_sql("INSERT INTO $src SELECT seq, 'late', NULL, '2020-01-01' FROM seq_10101_to_10105");
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{rows_loaded}, 5, 'the next run loads the 5 rows with larger ids (whatever their dates)');
is(job_bookmark($token, $pi->{pipeline_id}), '10105', 'bookmark 10105');
is(wh_table_sig("`$schema`.`by_id`", $EXPR, 'id'), src_table_sig($src, $EXPR, 'id'),
   'the id-tracked destination equals the source');

wh_sql("DROP SCHEMA `$schema`");
src_sql("DROP TABLE $src");
done_testing();
