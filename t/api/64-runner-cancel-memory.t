#!/usr/bin/perl
# POST /platform/pipeline_run/{runId}/cancel: a RUNNING run is stopped
# within a heartbeat (its task process killed) and FAILED with a
# "cancelled by <sub>" line; a CREATED run is FAILED at once; 409 once
# finished; 404 for unknown, malformed and other customers' runs; 401/403.
# Memory: a task over its job's memory (RLIMIT_AS) fails with the line
# "the task exceeded its memory limit of N MB": a tap that allocates past
# it, and (test-only setting) the task process itself allocating past it.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time sleep);

use SluiceTest;
use RunnerFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $sub = jwt_payload($token)->{sub};
my $reader = token(customer => 'demo', permissions => 'PLATFORM.READ');
my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'cancel-other', '--if-missing',
		  '-c', env('SLUICE_CONF') ]);
(my $other_id = $r->{out}) =~ s/\s+\z//;
my $other = token(customer => 'cancel-other', permissions => 'PLATFORM.READ,PLATFORM.WRITE');

sub cancel {
	my ($run, $tok) = @_;
	return http(POST => "/platform/pipeline_run/$run/cancel", { token => $tok // $token });
}

my $rnf = { detail => { status => JSON::PP::false(), exception_type => 'PipelineRunNotFound',
			traceback => 'Pipeline run not found', data => undef } };

# --- a RUNNING run ---------------------------------------------------------------------

my $tapfile = tap_pid_file();
my $p = make_pipeline(name => 'cancel-running', jobs => [
	tap_job(config => { generate => 100, sleep_ms => 1000, pid_file => $tapfile }),
	tap_job(config => { generate => 2 }) ]);
my @jobs = map { $_->{job_id} } @{ $p->{jobs} };
my $run = execute_run($p->{pipeline_id});
ok(wait_until(30, sub { -s $tapfile }), 'the first task is running');
my $res = cancel($run);
json_response_is($res, 200, { status => JSON::PP::true(), data => { run_id => $run, status => 'RUNNING' } },
		 'cancel of a RUNNING run: 200, still RUNNING until the runner stops it');
my $t0 = time;
my $row = wait_run($run, 20);
is($row->{status}, 'FAILED', 'the run is FAILED');
cmp_ok(time - $t0, '<', 6, 'within a few heartbeats (runner_heartbeat_s = 1)');
is($row->{cancel_requested_by}, $sub, 'cancel_requested_by is the token\'s sub');
like($row->{error} // '', qr/cancelled by \Q$sub\E$/, 'its error says who cancelled');
my $tap = do { open my $fh, '<', $tapfile; my $x = <$fh> // ''; $x =~ s/\s+//g; $x };
ok($tap && wait_until(5, sub { !proc_alive($tap) }), 'the task\'s processes were killed');
my $tr = task_rows($run);
is($tr->{"$jobs[0].extract_load"}{status}, 'FAILED', 'the running task FAILED');
is($tr->{"$jobs[0].extract_load"}{error}, "cancelled by $sub", 'as cancelled');
is($tr->{"$jobs[1].extract_load"}{status}, 'SKIPPED', 'the task not started is SKIPPED');
my @m = log_messages($run);
ok((grep { $_ eq "WARNING - cancel requested by $sub" } @m), 'a WARNING line for the request');
ok((grep { $_ eq "ERROR $jobs[0].extract_load cancelled by $sub" } @m), 'the task\'s ERROR line')
	or diag explain \@m;
ok((grep { $_ eq "ERROR - cancelled by $sub" } @m), 'a run-level "cancelled by" ERROR line');
my $d = http(GET => "/platform/pipeline/$p->{pipeline_id}", { token => $token })->{json};
is($d->{last_status}, 'FAILED', 'pipeline last_status FAILED');

json_response_is(cancel($run), 409, { detail => 'The run has already finished (FAILED)' },
		 'cancel again: 409');
my $ok = make_pipeline(name => 'cancel-done', jobs => [ tap_job(config => { generate => 1 }) ]);
my $done = execute_run($ok->{pipeline_id});
is(wait_run($done, 60)->{status}, 'SUCCESS', 'set-up: a finished run');
json_response_is(cancel($done), 409, { detail => 'The run has already finished (SUCCESS)' },
		 'cancel of a SUCCESS run: 409');
is(run_row($done)->{cancel_requested_by}, undef, 'nothing recorded');

# --- a CREATED run: failed at once ----------------------------------------------------------

{
	my $w = dev('work-stop');
	is($w->{exit}, 0, 'set-up: sluice work stopped, so the run stays CREATED');
	my $c = make_pipeline(name => 'cancel-created');
	my $crun = execute_run($c->{pipeline_id});
	json_response_is(cancel($crun), 200, { status => JSON::PP::true(),
		data => { run_id => $crun, status => 'FAILED' } }, 'cancel of a CREATED run: 200 FAILED');
	$row = run_row($crun);
	is($row->{status}, 'FAILED', 'FAILED in the database');
	is($row->{error}, "cancelled by $sub", 'error');
	ok(defined $row->{finished_at}, 'finished_at set');
	is_deeply([ log_messages($crun) ], [ "ERROR - cancelled by $sub" ], 'its one log line');
	is(http(GET => "/platform/pipeline/$c->{pipeline_id}", { token => $token })->{json}{last_status},
	   'FAILED', 'pipeline last_status FAILED');
	is(execute_run($c->{pipeline_id}) =~ /^[0-9a-f]{32}$/ ? 1 : 0, 1,
	   'the pipeline can be executed again (no active run left)');
	$w = dev('work-start');
	is($w->{exit}, 0, 'sluice work started again');
}

# --- 404, 401, 403 -----------------------------------------------------------------------------

my $q = make_pipeline(name => 'cancel-foreign', token => $other, jobs => [ tap_job(config => { generate => 1 }) ]);
my $foreign = execute_run($q->{pipeline_id}, token => $other, customer_id => $other_id);
json_response_is(cancel($foreign), 404, $rnf, 'another customer\'s run: 404 as unknown');
is(run_row($foreign)->{cancel_requested_by}, undef, '... and nothing recorded on it');
json_response_is(cancel('0123456789abcdef0123456789abcdef'), 404, $rnf, 'unknown run: 404');
json_response_is(cancel('not-a-run'), 404, $rnf, 'malformed id: 404');
json_response_is(cancel('0123456789ABCDEF0123456789ABCDEF'), 404, $rnf, 'upper-case hex: 404');
is(cancel($foreign, $reader)->{status}, 403, 'PLATFORM.READ only: 403');
is(http(POST => "/platform/pipeline_run/$foreign/cancel")->{status}, 401, 'no token: 401');
is(http(GET => "/platform/pipeline_run/$foreign/cancel", { token => $token })->{status}, 405,
   'GET: 405');
wait_run($foreign, 60);

# --- memory -------------------------------------------------------------------------------------------

# A tap that allocates 400 MB under a 200 MB job.
my $m = make_pipeline(name => 'memory-tap', jobs => [
	tap_job(memory => 200, config => { generate => 3, alloc_mb => 400 }) ]);
my $mjob = $m->{jobs}[0]{job_id};
my $mrun = execute_run($m->{pipeline_id});
$row = wait_run($mrun, 60);
is($row->{status}, 'FAILED', 'a tap over the job\'s memory: FAILED');
is(task_rows($mrun)->{"$mjob.extract_load"}{error}, 'the task exceeded its memory limit of 200 MB',
   'the task\'s error');
ok((grep { ($_->{task_id} // '') eq "$mjob.extract_load" && $_->{level} eq 'ERROR' &&
	   $_->{message} =~ /: the task exceeded its memory limit of 200 MB$/ }
    @{ run_logs($mrun, level => 'ERROR') }), 'an ERROR line says it exceeded its memory limit')
	or diag explain [ log_messages($mrun) ];
# The same tap within its memory succeeds.
is(http(PUT => "/platform/jobs/$mjob/memory", { token => $token, json => { amount => 1200 } })->{status},
   200, 'job memory 1200 MB');
my $mrun2 = execute_run($m->{pipeline_id});
is(wait_run($mrun2, 60)->{status}, 'SUCCESS', 'with enough memory the same job succeeds')
	or diag explain [ log_messages($mrun2) ];

# The task process itself allocating past its limit (test-only setting).
with_work_conf(runner_test_task_alloc_mb => 300);
my $s = make_pipeline(name => 'memory-self', jobs => [ tap_job(memory => 250) ]);
my $sjob = $s->{jobs}[0]{job_id};
my $srun = execute_run($s->{pipeline_id});
$row = wait_run($srun, 60);
is($row->{status}, 'FAILED', 'a task process over its memory: FAILED');
like($row->{error} // '', qr/\Q$sjob\E\.extract_load: the task exceeded its memory limit of 250 MB$/,
     'the run\'s error');
ok((grep { /^ERROR \Q$sjob\E\.extract_load task failed after [\d.]+ s: the task exceeded its memory limit of 250 MB$/ }
    log_messages($srun)), 'the ERROR line');
is(http(PUT => "/platform/jobs/$sjob/memory", { token => $token, json => { amount => 2048 } })->{status},
   200, 'job memory 2048 MB');
my $srun2 = execute_run($s->{pipeline_id});
is(wait_run($srun2, 60)->{status}, 'SUCCESS', 'the same allocation within the limit succeeds');

done_testing();
