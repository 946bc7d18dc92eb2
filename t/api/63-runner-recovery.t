#!/usr/bin/perl
# Runs whose work process died: kill -9 of sluice work in the middle of a
# run takes the run's processes down with it, and after a restart the run
# is FAILED with an ERROR line, its task FAILED, its job and pipeline
# FAILED, no state moved and no row loaded; a RUNNING run of another host
# whose heartbeat stopped is failed by whichever work process notices; and
# SIGTERM lets a run finish within runner_shutdown_grace_s, or stops it and
# fails it with a line saying so.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time);

use SluiceTest;
use RunnerFixture;

sub pid_from {
	my ($f) = @_;
	open my $fh, '<', $f or return undef;
	my $p = <$fh> // '';
	$p =~ s/\s+//g;
	return $p =~ /^\d+$/ ? $p : undef;
}

# --- kill -9 of sluice work mid-run -------------------------------------------------------

my $tapfile = tap_pid_file();
my $p = make_pipeline(name => 'recover-kill', jobs => [
	tap_job(config => { generate => 100, sleep_ms => 1000, pid_file => $tapfile }) ]);
my $job = $p->{jobs}[0]{job_id};
my $state_before = mysql('SELECT IFNULL(state, \'NULL\') FROM job_state WHERE job_id = ' . sq($job));
my $run = execute_run($p->{pipeline_id});
ok(wait_until(30, sub { -s $tapfile }), 'the task is running (its tap wrote its pid)');
my $tap = pid_from($tapfile);
ok($tap && proc_alive($tap), "tap process $tap alive");
my $work = work_pid();
ok(kill('KILL', $work), "kill -9 sluice work $work");
ok(wait_until(10, sub { !proc_alive($work) }), 'sluice work is gone');
ok(wait_until(10, sub { !proc_alive($tap) }), 'its run\'s processes went with it (the tap too)');
is(run_row($run)->{status}, 'RUNNING', 'the run still reads RUNNING while nobody is there');

my $r = dev('work-start');
is($r->{exit}, 0, 'sluice work restarted') or diag $r->{err};
my $row = wait_run($run, 30);
is($row->{status}, 'FAILED', 'after the restart the run is FAILED');
like($row->{error} // '', qr/stopped responding or died/, 'its error says why');
my @err = @{ run_logs($run, level => 'ERROR') };
ok((grep { !defined $_->{task_id} && $_->{message} =~
	   /^the work process running this run \(\S+:$work\) stopped responding or died; the run was marked FAILED by \S+:\d+$/ } @err),
   'an ERROR line names the dead process and who noticed') or diag explain \@err;
is(task_rows($run)->{"$job.extract_load"}{status}, 'FAILED', 'the running task FAILED');
my $d = http(GET => "/platform/pipeline/$p->{pipeline_id}", { token => env('SLUICE_DEMO_TOKEN') })->{json};
is($d->{last_status}, 'FAILED', 'pipeline last_status FAILED');
is($d->{jobs}[0]{job_status}, 'FAILED', 'job_status FAILED');
is(mysql('SELECT IFNULL(state, \'NULL\') FROM job_state WHERE job_id = ' . sq($job)), $state_before,
   'the job\'s state did not move');
# A new run goes through, and the destination holds no row twice.
mysql('UPDATE jobs SET input = JSON_SET(JSON_REMOVE(input, \'$.config.sleep_ms\'), '
      . '\'$.config.generate\', 3) WHERE id = ' . sq($job));    # set-up: a quick tap
my $again = execute_run($p->{pipeline_id});
is(wait_run($again, 60)->{status}, 'SUCCESS', 'the next run of the pipeline succeeds');
my $tbl = $p->{jobs}[0]{output}{raw}{table_name};
is(scalar mysql("SELECT COUNT(*) = COUNT(DISTINCT id) AND COUNT(*) >= 3 FROM `" . wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), 'runner_t') . "`.`$tbl`"), 1,
   'the destination holds each record once');

# --- a run's supervisor killed: the work process fails the run ----------------------------

my $sp = make_pipeline(name => 'recover-supervisor', jobs => [
	tap_job(config => { generate => 100, sleep_ms => 1000, pid_file => tap_pid_file() }) ]);
my $suprun = execute_run($sp->{pipeline_id});
ok(wait_until(20, sub { run_row($suprun)->{status} eq 'RUNNING' }), 'a run is RUNNING');
my @sup;
ok(wait_until(10, sub { @sup = grep { children_of($_) } children_of(work_pid()); @sup == 1 }),
   'its supervisor (with a task process) is a child of sluice work');
my @task = children_of($sup[0]);
ok(kill('KILL', $sup[0]), "kill -9 the supervisor $sup[0]");
$row = wait_run($suprun, 20);
is($row->{status}, 'FAILED', 'the run is FAILED by its work process');
ok((grep { /^ERROR - the run's supervisor process killed by signal 9 \(Killed\); the run was stopped$/ }
	log_messages($suprun)), 'with an ERROR line saying so') or diag explain [ log_messages($suprun) ];
ok(wait_until(10, sub { !grep { proc_alive($_) } @task }), 'its task process went with it');
ok(proc_alive(work_pid()), 'sluice work itself carries on');

# --- another host's run with a stale heartbeat ------------------------------------------------

my $q = make_pipeline(name => 'recover-stale');
my $stale = execute_run($q->{pipeline_id});
wait_run($stale, 60);
# Set-up: the run as a process on another host left it, 10 minutes silent.
mysql("UPDATE pipeline_runs SET status = 'RUNNING', finished_at = NULL, error = NULL, "
      . "claimed_by = 'elsewhere.example:4242', heartbeat_at = UTC_TIMESTAMP(3) - INTERVAL 10 MINUTE "
      . 'WHERE id = ' . sq($stale));
$row = wait_run($stale, 20);
is($row->{status}, 'FAILED', 'a stale RUNNING run of another host is FAILED by this one');
ok((grep { /^ERROR - the work process running this run \(elsewhere\.example:4242\) stopped responding/ }
	log_messages($stale)), 'with its ERROR line');
# A live heartbeat is left alone.
my $live = execute_run($q->{pipeline_id});
my $probe = execute_run(make_pipeline(name => 'recover-stale-probe')->{pipeline_id});
wait_run($live, 60);
wait_run($probe, 60);
mysql("UPDATE pipeline_runs SET status = 'RUNNING', finished_at = NULL, "
      . "claimed_by = 'elsewhere.example:4243', heartbeat_at = UTC_TIMESTAMP(3) WHERE id = " . sq($live));
# Set-up, after it: a stale run of another pipeline.  One recovery pass
# reads every RUNNING run, so the pass that fails this one saw the live one.
mysql("UPDATE pipeline_runs SET status = 'RUNNING', finished_at = NULL, "
      . "claimed_by = 'elsewhere.example:4244', heartbeat_at = UTC_TIMESTAMP(3) - INTERVAL 10 MINUTE "
      . 'WHERE id = ' . sq($probe));
is((wait_run($probe, 20) // {})->{status}, 'FAILED', 'a recovery pass ran after the set-up');
is(run_row($live)->{status}, 'RUNNING', 'a RUNNING run with a fresh heartbeat is left alone');
mysql("UPDATE pipeline_runs SET status = 'SUCCESS', finished_at = UTC_TIMESTAMP(3) WHERE id = "
      . sq($live));                                                    # set-up: clean up

# --- SIGTERM: finish within the grace, else stop and fail -------------------------------------

with_work_conf(runner_shutdown_grace_s => 3);
my $short = make_pipeline(name => 'recover-term-short', jobs => [
	tap_job(config => { generate => 4, sleep_ms => 300 }) ]);
my $long = make_pipeline(name => 'recover-term-long', jobs => [
	tap_job(config => { generate => 100, sleep_ms => 1000 }) ]);
my $srun = execute_run($short->{pipeline_id});
my $lrun = execute_run($long->{pipeline_id});
ok(wait_until(20, sub { run_row($srun)->{status} eq 'RUNNING' && run_row($lrun)->{status} eq 'RUNNING' }),
   'both runs RUNNING');
$work = work_pid();
my $t0 = time;
kill 'TERM', $work;
ok(wait_until(30, sub { !proc_alive($work) }), 'sluice work exits on SIGTERM');
my $took = time - $t0;
cmp_ok($took, '>=', 2.5, sprintf('it waited for the grace period (%.1f s)', $took));
cmp_ok($took, '<', 20, 'and not much longer');
is(run_row($srun)->{status}, 'SUCCESS', 'a run that finished within the grace is SUCCESS');
$row = run_row($lrun);
is($row->{status}, 'FAILED', 'a run still going after the grace is FAILED');
ok((grep { /^ERROR \S+ task failed after [\d.]+ s: stopped before it finished: sluice work was shut down$/ }
	log_messages($lrun)), 'with an ERROR line saying sluice work was shut down')
	or diag explain [ log_messages($lrun) ];
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work started again') or diag $r->{err};

done_testing();
