#!/usr/bin/perl
# jdbc faults: with the source MariaDB stopped a run is FAILED with an ERROR
# line carrying the client's message, and the bookmark and the destination
# stay as they were; once the source is back the next run loads what was
# missed.  A load the warehouse refuses half-way rolls back whole (no rows,
# no bookmark).  PostgreSQL stopped, a wrong password and a plugin without a
# driver fail the same way, with no password in any log line.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use JdbcFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "flt_$tag";
my $logical = "t69_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);    # its database

src_sql("CREATE TABLE $src (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL, "
	. "updated_at DATETIME(6) NOT NULL); "
	. "INSERT INTO $src SELECT seq, CONCAT('r', seq), '2024-01-01' + INTERVAL seq SECOND "
	. "FROM seq_1_to_1000");
my $cid = make_connection($token);
my $p = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => $logical, dest_table => 'items', load_type => 'incremental',
	incremental_column_name => 'updated_at', incremental_column_type => 'datetime');
my $dest = "`$schema`.`items`";
my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'set-up run: SUCCESS');
my $bm = job_bookmark($token, $p->{pipeline_id});
ok(defined $bm, "bookmark after the set-up run: $bm");

sub error_lines {
	my ($run_id) = @_;
	return grep { $_->{level} eq 'ERROR' } run_logs($token, $run_id);
}

# --- the source server is stopped ----------------------------------------------------
src_sql("INSERT INTO $src SELECT seq, CONCAT('r', seq), '2024-06-01' + INTERVAL seq SECOND "
	. "FROM seq_1001_to_1200");
my $r = dev('source-stop');
is($r->{exit}, 0, 'source MariaDB stopped') or diag $r->{err};
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'run with the source down: FAILED');
is($run->{rows_loaded}, 0, 'rows_loaded 0');
my @err = error_lines($run->{run_id});
ok((grep { $_->{message} =~ /cannot connect to MariaDB at 127\.0\.0\.1:\d+: Can't connect/ } @err),
   'ERROR line with the client library\'s message') or diag explain \@err;
is(job_bookmark($token, $p->{pipeline_id}), $bm, 'bookmark unchanged');
is(wh_sql("SELECT COUNT(*) FROM $dest"), 1000, 'destination unchanged');
my ($pl) = http(GET => "/platform/pipeline/$p->{pipeline_id}", { token => $token })->{json};
is($pl->{jobs}[0]{job_status}, 'FAILED', 'job_status FAILED');

$r = dev('source-start');
is($r->{exit}, 0, 'source MariaDB started again') or diag $r->{err};
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'the next run: SUCCESS');
is($run->{rows_loaded}, 200, 'it loads the 200 rows the failed run did not');
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $dest"), "1200\t1200",
   'no row lost, none twice');
$bm = job_bookmark($token, $p->{pipeline_id});
(my $want = src_sql("SELECT MAX(updated_at) FROM $src")) =~ s/ /T/;
is($bm, $want, 'bookmark advanced to the largest loaded value');

# --- the warehouse refuses a row half-way: nothing of the run stays ------------------------
# A CHECK on the destination refuses the 50th new row.  (A narrower column
# would not do: a load widens its destination to the source's type first.)
wh_sql("ALTER TABLE $dest ADD CONSTRAINT refuse_long CHECK (name <> 'much too long')");
src_sql("INSERT INTO $src SELECT seq, IF(seq = 1250, 'much too long', 'ok'), "
	. "'2024-07-01' + INTERVAL seq SECOND FROM seq_1201_to_1300");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'a value the warehouse cannot hold: FAILED');
ok((grep { $_->{message} =~ /warehouse load refused .*CONSTRAINT .refuse_long. failed/i } error_lines($run->{run_id})),
   'ERROR line names the warehouse\'s complaint');
is(wh_sql("SELECT COUNT(*) FROM $dest"), 1200, 'no row of the failed run is in the destination');
is(job_bookmark($token, $p->{pipeline_id}), $bm, 'bookmark unchanged');
wh_sql("ALTER TABLE $dest DROP CONSTRAINT refuse_long");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{rows_loaded}, 100, 'after the fix the next run loads the 100 rows');
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $dest"), "1300\t1300", 'all rows, once');

# --- a failure after some commits: ties at a commit boundary -------------------------------
# With a commit every 1000 rows, a run over 3000 new rows (three per
# incremental value) commits twice, between two values, then fails on a row
# the warehouse refuses.  What was committed is exactly the rows up to the
# bookmark, every tie of the bookmark's value included; the next run loads
# the rest: nothing skipped, nothing twice.
my $conf = conf_read();
END { conf_write($conf) if defined $conf; }
conf_write(conf_with($conf, jdbc_commit_rows => 1000));
$r = dev('work-stop');
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work restarted with jdbc_commit_rows = 1000') or diag $r->{err};
my $ties = "${src}_ties";
src_sql("CREATE TABLE $ties (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL, "
	. "updated_at DATETIME(6) NOT NULL); "
	. "INSERT INTO $ties SELECT seq, 'ok', '2024-01-01' + INTERVAL (seq DIV 3) SECOND FROM seq_1_to_300");
my $pt = make_pipeline($token, connection_id => $cid, table => $ties,
	dest_schema => $logical, dest_table => 'ties', load_type => 'incremental',
	incremental_column_name => 'updated_at', incremental_column_type => 'datetime');
is(run_and_wait($token, $pt->{pipeline_id})->{rows_loaded}, 300, 'ties: set-up run loads 300');
wh_sql("ALTER TABLE `$schema`.`ties` ADD CONSTRAINT refuse_long CHECK (name <> 'much too long')");
src_sql("INSERT INTO $ties SELECT seq, IF(seq = 2800, 'much too long', 'ok'), "
	. "'2024-02-01' + INTERVAL (seq DIV 3) SECOND FROM seq_301_to_3300");
$run = run_and_wait($token, $pt->{pipeline_id});
is($run->{status}, 'FAILED', 'ties: the run fails on row 2800');
my $tbm = job_bookmark($token, $pt->{pipeline_id});
(my $tbm_sql = $tbm) =~ s/T/ /;
my $have = wh_sql("SELECT COUNT(*) FROM `$schema`.`ties`");
ok($have > 300, "ties: rows committed before the failure stay ($have)");
is($run->{rows_loaded}, $have - 300, 'ties: the failed run counts only its committed rows');
is($have, src_sql("SELECT COUNT(*) FROM $ties WHERE updated_at <= '$tbm_sql'"),
   "ties: exactly the source rows up to the bookmark $tbm, all ties included");
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`ties` WHERE updated_at > '$tbm_sql'"), 0,
   'ties: nothing beyond the bookmark was kept');
ok((grep { $_->{message} =~ /^committed \d+ rows so far, bookmark \Q$tbm\E/ } run_logs($token, $run->{run_id})),
   'ties: log line of the commit with its bookmark');
wh_sql("ALTER TABLE `$schema`.`ties` DROP CONSTRAINT refuse_long");
$run = run_and_wait($token, $pt->{pipeline_id});
is($run->{status}, 'SUCCESS', 'ties: the next run succeeds');
is($run->{rows_loaded}, 3300 - $have, 'ties: it loads exactly the rows not yet loaded');
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM `$schema`.`ties`"), "3300\t3300",
   'ties: every source row once');
conf_write($conf);
$r = dev('work-stop');
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work restarted with the default commit size') or diag $r->{err};

# --- a wrong password -------------------------------------------------------------------------
my $bad_pw = 'wrong-' . $tag;
my $cbad = make_connection($token, password => $bad_pw);
my $pb = make_pipeline($token, connection_id => $cbad, table => $src,
	dest_schema => $logical, dest_table => 'never', load_type => 'full_load');
$run = run_and_wait($token, $pb->{pipeline_id});
is($run->{status}, 'FAILED', 'wrong password: FAILED');
my @logs = run_logs($token, $run->{run_id});
ok((grep { $_->{level} eq 'ERROR' && $_->{message} =~ /Access denied for user 'source'/ } @logs),
   'ERROR line with the server\'s message');
ok(!(grep { index($_->{message}, $bad_pw) >= 0 } @logs), 'the password is in no log line');
is(wh_sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$schema' "
	. "AND TABLE_NAME = 'never'"), 0, 'no destination table was made');

# --- PostgreSQL stopped ---------------------------------------------------------------------
my $pgc = make_connection($token, plugin => 'postgres');
pg_sql("CREATE TABLE public.$src (id int PRIMARY KEY, ts timestamptz NOT NULL); "
	. "INSERT INTO public.$src SELECT g, now() FROM generate_series(1, 10) g");
my $pp = make_pipeline($token, plugin => 'postgres', connection_id => $pgc,
	table => "public.$src", dest_schema => $logical, dest_table => 'pg',
	load_type => 'incremental', incremental_column_name => 'ts',
	incremental_column_type => 'timestamp with time zone');
is(run_and_wait($token, $pp->{pipeline_id})->{status}, 'SUCCESS', 'PostgreSQL set-up run: SUCCESS');
my $pgbm = job_bookmark($token, $pp->{pipeline_id});
$r = dev('pg-stop');
is($r->{exit}, 0, 'PostgreSQL stopped') or diag $r->{err};
$run = run_and_wait($token, $pp->{pipeline_id});
is($run->{status}, 'FAILED', 'run with PostgreSQL down: FAILED');
ok((grep { $_->{message} =~ /cannot connect to PostgreSQL at 127\.0\.0\.1:\d+: .*(refused|failed)/ } error_lines($run->{run_id})),
   'ERROR line with libpq\'s message');
is(job_bookmark($token, $pp->{pipeline_id}), $pgbm, 'bookmark unchanged');
$r = dev('pg-start');
is($r->{exit}, 0, 'PostgreSQL started again') or diag $r->{err};
is(run_and_wait($token, $pp->{pipeline_id})->{status}, 'SUCCESS', 'and the next run succeeds');

# --- a plugin without a driver ------------------------------------------------------------------
my $co = make_connection($token, plugin => 'oracle');
my $po = make_pipeline($token, plugin => 'oracle', connection_id => $co, table => 'SCOTT.EMP',
	dest_schema => $logical, dest_table => 'ora', load_type => 'full_load');
$run = run_and_wait($token, $po->{pipeline_id});
is($run->{status}, 'FAILED', 'oracle: FAILED');
ok((grep { $_->{message} =~ /driver not available: oracle/ } error_lines($run->{run_id})),
   'ERROR line: driver not available');

wh_sql("DROP SCHEMA `$schema`");
src_sql("DROP TABLE $src, ${src}_ties");
pg_sql("DROP TABLE public.$src");
done_testing();
