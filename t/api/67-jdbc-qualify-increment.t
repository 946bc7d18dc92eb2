#!/usr/bin/perl
# jdbc incremental_with_qualify applies an increment to the keys it touched
# only: the extract_load task leaves the new rows in the destination's
# increment table (the bookmark committed with them), the qualify task
# replaces those keys' rows in one transaction.
#   - an increment that updates existing keys, adds new ones and carries a
#     key twice gives exactly one row per key, the latest;
#   - the qualify task killed (kill -9) after it applied the increment and
#     before its commit leaves the destination as it was, with the
#     increment kept for the next run, which applies it;
#   - a second customer's table of the same names is untouched.
# The source table has no key of its own, so one extraction can hold a key
# twice; the expected destination is computed from it with ROW_NUMBER().

use strict;
use warnings;

use Test::More;

use SluiceTest;
use JdbcFixture;
use RunnerFixture qw(work_pid with_work_conf children_of);

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "qinc_$tag";
my $logical = "t67i_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);
my $dest = "`$schema`.`items`";

src_sql(<<"SQL");
CREATE TABLE $src (
	id INT NOT NULL,
	name VARCHAR(100) NOT NULL,
	val INT NOT NULL,
	updated_at DATETIME(6) NOT NULL,
	KEY (updated_at)
);
INSERT INTO $src SELECT seq, CONCAT('row ', seq), seq, '2024-01-01' + INTERVAL seq SECOND
FROM seq_1_to_2000;
SQL

my $EXPR = "CONCAT_WS('|', id, name, val, updated_at)";
# The source as qualify should leave it: per id, the row of the latest updated_at.
my $QUALIFIED = "(SELECT * FROM (SELECT s.*, ROW_NUMBER() OVER (PARTITION BY id "
	. "ORDER BY updated_at DESC) AS rn FROM $src s) x WHERE rn = 1) q";
sub expected { src_table_sig($QUALIFIED, $EXPR, 'id') }
sub actual { wh_table_sig($_[0] // $dest, $EXPR, 'id') }
sub work_tables {
	my ($db) = @_;
	return scalar wh_sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' "
		. "AND TABLE_NAME LIKE '\\_sluice\\_%'");
}
sub pipeline_for {
	my ($tok, $cid) = @_;
	return make_pipeline($tok, connection_id => $cid, table => $src,
		dest_schema => $logical, dest_table => 'items', load_type => 'incremental_with_qualify',
		incremental_column_name => 'updated_at', incremental_column_type => 'datetime',
		primary_keys => [ 'id' ]);
}

my $p = pipeline_for($token, make_connection($token));
my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'first run (full load, then qualify): SUCCESS');
is(actual(), expected(), 'one row per key, equal to the source');
is(scalar wh_sql("SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS "
	. "WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = 'items' AND INDEX_NAME LIKE '\\_sluice\\_qk\\_%' "
	. "AND COLUMN_NAME = 'id'"), 1, 'the destination has an index on its key');

# --- a second customer, the same logical names: its own database -------------------------
my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'qualify-other', '--if-missing',
		  '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'second customer exists') or diag $r->{err};
my $other = token(customer => 'qualify-other', permissions => 'PLATFORM.READ,PLATFORM.WRITE');
my $other_id = jwt_payload($other)->{customer_id};
my $other_schema = wh_schema($other_id, $logical);
my $other_dest = "`$other_schema`.`items`";
my $po = pipeline_for($other, make_connection($other));
my $res = http(POST => '/platform/pipeline/execute', { token => $other, json => {
	pipeline_id => $po->{pipeline_id}, customer_id => $other_id } });
is($res->{status}, 200, 'the other customer runs its pipeline') or diag describe($res);
is(wait_run($other, $po->{pipeline_id}, $res->{json}{data}{run_id})->{status}, 'SUCCESS',
   'and it succeeds');
my $other_sig = actual($other_dest);
is($other_sig, expected(), 'the other customer\'s table holds the source too');

# --- updates of existing keys, new keys, keys twice in one increment -----------------------
src_sql("INSERT INTO $src SELECT seq, CONCAT('updated ', seq), -seq, '2025-01-01' + INTERVAL seq SECOND FROM seq_1_to_40; "
	. "INSERT INTO $src SELECT seq, CONCAT('twice a ', seq), -seq, '2025-02-01' + INTERVAL seq SECOND FROM seq_41_to_45; "
	. "INSERT INTO $src SELECT seq, CONCAT('twice b ', seq), -seq, '2025-03-01' + INTERVAL seq SECOND FROM seq_41_to_45; "
	. "INSERT INTO $src SELECT seq, 'new', seq, '2025-01-01' + INTERVAL seq SECOND FROM seq_3001_to_3020; "
	. "INSERT INTO $src SELECT seq, 'new twice a', seq, '2025-02-01' + INTERVAL seq SECOND FROM seq_3021_to_3025; "
	. "INSERT INTO $src SELECT seq, 'new twice b', seq, '2025-03-01' + INTERVAL seq SECOND FROM seq_3021_to_3025");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'increment run: SUCCESS');
is($run->{rows_loaded}, 80, 'extract_load loaded the 80 rows of the increment');
is(scalar wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $dest"), "2025\t2025",
   '2,025 keys, one row each');
is(actual(), expected(), 'each key has its latest row: equal to the qualified source');
is(scalar wh_sql("SELECT GROUP_CONCAT(name ORDER BY id) FROM $dest WHERE id IN (41, 3021)"),
   'twice b 41,new twice b',
   'a key twice in the increment keeps its later row');
my @logs = run_logs($token, $run->{run_id});
ok((grep { $_->{message} eq "qualify applied the increment to $schema.items: 70 rows inserted, "
	. "45 older rows of their keys replaced" } @logs),
   'log: the 70 keys of the increment applied, 45 of them replacing a row')
	or diag explain [ map { $_->{message} } @logs ];
is(work_tables($schema), 0, 'no increment or staging table is left');

# --- qualify killed between applying and committing: the table as it was -------------------
# Run the pipeline with the qualify task paused before its commit, and kill it there.
sub kill_mid_qualify {
	my ($what) = @_;
	with_work_conf(runner_test_qualify_delay_ms => 60000);
	my $run_id = execute_run($token, $p->{pipeline_id});
	ok(wait_until(60, sub { grep { $_->{message} eq 'qualify: applied, not committed yet' }
		run_logs($token, $run_id) }), "$what: the qualify task applied the increment and waits before its commit");
	my @task;
	ok(wait_until(10, sub { @task = map { children_of($_) } children_of(work_pid()); @task == 1 }),
	   "$what: its task process is found");
	ok(kill('KILL', $task[0]), "$what: kill -9 the qualify task $task[0]");
	is(wait_run($token, $p->{pipeline_id}, $run_id, 60)->{status}, 'FAILED', "$what: the run is FAILED");
	with_work_conf(runner_test_qualify_delay_ms => undef);
}
src_sql("INSERT INTO $src SELECT seq, CONCAT('killed ', seq), 0, '2025-06-01' + INTERVAL seq SECOND FROM seq_1_to_10; "
	. "INSERT INTO $src SELECT seq, 'killed new', 0, '2025-06-01' + INTERVAL seq SECOND FROM seq_4001_to_4005");
my $before = actual();
my $bookmark = job_bookmark($token, $p->{pipeline_id});
kill_mid_qualify('killed');
is(actual(), $before, 'the destination is as it was: nothing of the increment applied');
isnt(job_bookmark($token, $p->{pipeline_id}), $bookmark,
     'the bookmark moved with the rows extract_load committed to the increment table');
is(work_tables($schema), 1, 'the increment table waits for the next run');

$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'the next run: SUCCESS');
is($run->{rows_loaded}, 0, 'it extracts nothing new');
is(actual(), expected(), 'and its qualify applies the kept increment: equal to the qualified source');
is(scalar wh_sql("SELECT COUNT(*) FROM $dest WHERE name LIKE 'killed%'"), 15,
   'the 15 rows of the killed run are there once each');
is(work_tables($schema), 0, 'the increment table is gone');

# --- an increment left pending, then the job made incremental: appended once ---------------
src_sql("INSERT INTO $src SELECT seq, 'pending', 0, '2025-07-01' + INTERVAL seq SECOND FROM seq_5001_to_5003");
kill_mid_qualify('pending');
$res = http(POST => "/platform/jobs/jdbc/$p->{job_id}/sync-mode", { token => $token, json => {
	target_load_type => 'incremental', incremental_column_name => 'updated_at',
	incremental_column_type => 'datetime' } });
is($res->{status}, 200, 'sync-mode to incremental') or diag describe($res);
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'the incremental run: SUCCESS');
ok((grep { $_->{level} eq 'WARNING' && $_->{message} eq "3 rows a failed qualify task left "
	. "pending were appended to $schema.items" } run_logs($token, $run->{run_id})),
   'WARNING: the pending rows were appended');
is(scalar wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $dest WHERE id BETWEEN 5001 AND 5003"),
   "3\t3", 'each of them once');
is(work_tables($schema), 0, 'and the increment table is gone');

# --- the other customer's table was not touched ---------------------------------------------
is(actual($other_dest), $other_sig, 'the other customer\'s table is exactly as its own run left it');

wh_sql("DROP SCHEMA `$schema`; DROP SCHEMA `$other_schema`");
src_sql("DROP TABLE $src");
done_testing();
