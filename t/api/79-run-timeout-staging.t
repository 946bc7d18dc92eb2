#!/usr/bin/perl
# Runs that hang or die leave nothing behind:
#   - a run past its pipeline's run_timeout_s is stopped (its tap killed),
#     FAILED with the reason, not retried, and its rows_loaded counts the
#     rows committed before it stopped, exactly what the warehouse holds;
#   - a cancelled full_load drops its staging table;
#   - a full_load whose sluice work is killed -9 leaves a staging table
#     that the next sluice work drops once it has failed the run.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time);

use JdbcFixture qw(src_sql wh_sql make_connection uniq_tag);
use RunnerFixture;
use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $WH = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), 'runner_t');   # its database

# --- run_timeout_s on create ----------------------------------------------------------
for my $bad (4, 604801, 'x', 1.5) {
	my $res = http(POST => '/platform/pipeline', { token => $token, json => {
		name => 'bad timeout', run_timeout_s => $bad, jobs => [ tap_job() ] } });
	is($res->{status}, 400, "run_timeout_s = $bad: 400");
	is($res->{json}{detail}{validation_errors}[0]{field}, 'run_timeout_s', '... naming the field');
}

# --- a hung tap, stopped by the run's timeout -----------------------------------------
with_work_conf(singer_commit_rows => 10);
my $tapfile = tap_pid_file();
my $p = make_pipeline(name => 'hangs', run_timeout_s => 5, retries => 2, jobs => [
	tap_job(table => "hang_$$", config => { generate => 1000, state_every => 10,
		hang_after => 35, pid_file => $tapfile }) ]);
is(http(GET => "/platform/pipeline/$p->{pipeline_id}", { token => $token })->{json}{run_timeout_s},
   5, 'the pipeline shows its run_timeout_s');
my $t0 = time;
my $run = execute_run($p->{pipeline_id});
my $row = wait_run($run, 30);
is($row->{status}, 'FAILED', 'the hung run FAILED');
my $took = time - $t0;
cmp_ok($took, '<', 15, 'soon after its 5 s');
like($row->{error}, qr/the run timed out after 5 s \(run_timeout_s\)/, 'the error says it timed out');
is($row->{attempt}, 1, 'not retried (retries = 2 notwithstanding)');
my $tap = do { open my $fh, '<', $tapfile; my $x = <$fh> // ''; $x =~ s/\s+//g; $x };
ok($tap && wait_until(5, sub { !proc_alive($tap) }), 'the hung tap was killed');
my $in_wh = wh_sql("SELECT COUNT(*) FROM `$WH`.hang_$$");
cmp_ok($in_wh, '>=', 30, 'rows committed before the hang are in the warehouse');
is($row->{rows_loaded}, $in_wh, 'rows_loaded counts exactly what was committed');
my @m = log_messages($run);
ok((grep { /stopped: the run timed out after 5 s/ } @m), 'the task\'s ERROR line says why');
ok((grep { /^WARNING .*\Q$in_wh\E rows committed before the task stopped stay loaded/ } @m),
   'a WARNING line says what stays loaded') or diag explain \@m;
ok((grep { /^ERROR - run finished: FAILED after [\d.]+ s, \Q$in_wh\E rows loaded:/ } @m),
   'the run\'s last line counts the committed rows');
ok(!(grep { /rows loaded in/ && /SUCCESS/ } @m), 'and never claims a success');

# --- a full_load cancelled mid-way drops its staging table ------------------------------
my $big = 'big_' . uniq_tag();
src_sql("CREATE TABLE $big (id INT PRIMARY KEY, v VARCHAR(64)); "
	. "INSERT INTO $big SELECT seq, REPEAT('x', 60) FROM seq_1_to_600000");
my $conn = make_connection($token);

sub staging_tables {
	return map { $_->[0] } wh_sql("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM "
		. "information_schema.TABLES WHERE TABLE_NAME LIKE '\\_sluice\\_stage\\_%'");
}
my @before = staging_tables();

my $fp = JdbcFixture::make_pipeline($token, connection_id => $conn, table => $big,
	dest_schema => 'runner_t', dest_table => "full_$$");
$run = execute_run($fp->{pipeline_id});
my @stage;
ok(wait_until(60, sub { @stage = grep { my $s = $_; !grep { $_ eq $s } @before } staging_tables() }),
   'the full_load fills a staging table') or diag 'staging: none';
is(mysql("SELECT COUNT(*) FROM run_staging WHERE run_id = '$run'"), 1, 'registered for its run');
is(http(POST => "/platform/pipeline_run/$run/cancel", { token => $token })->{status}, 200,
   'cancel it');
is(wait_run($run, 30)->{status}, 'FAILED', 'the run FAILED');
ok(wait_until(20, sub { !grep { $_ eq $stage[0] } staging_tables() }),
   'its staging table is dropped') or diag "still there: $stage[0]";
is(mysql("SELECT COUNT(*) FROM run_staging WHERE run_id = '$run'"), 0, 'and unregistered');
ok((grep { /staging table .* dropped/ } log_messages($run)), 'with a line in the run log');
is(wh_sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$WH' "
	  . "AND TABLE_NAME = 'full_$$'"), 0, 'the destination was never half-replaced');

# --- sluice work killed -9 mid-load: the next one sweeps the orphan ---------------------
$run = execute_run($fp->{pipeline_id});
ok(wait_until(60, sub { @stage = grep { my $s = $_; !grep { $_ eq $s } @before } staging_tables() }),
   'again a staging table fills');
ok(kill('KILL', work_pid()), 'kill -9 sluice work (its children die with it)');
my $r = dev('work-start');
is($r->{exit}, 0, 'sluice work started again');
is(wait_run($run, 60)->{status}, 'FAILED', 'the run of the dead process is FAILED');
ok(wait_until(60, sub { !grep { $_ eq $stage[0] } staging_tables() }),
   'the orphaned staging table is swept') or diag "still there: $stage[0]";
is(mysql("SELECT COUNT(*) FROM run_staging WHERE run_id = '$run'"), 0, 'and unregistered');

src_sql("DROP TABLE $big");
done_testing;
