#!/usr/bin/perl
# The executor: an executed run is claimed, RUNNING, then SUCCESS with its
# rows, each task's status, every job's job_status and the pipeline's
# last_status; log lines per task through GET .../logs (claimed by,
# started, finished with rows and duration); a failing task fails its run
# with an ERROR line while an independent job still succeeds; a failed
# extract_load skips its qualify task; jdbc oracle/sqlserver fail with
# "driver not available"; the source password never reaches the logs;
# retries with backoff (runner_retry_base_s = 1 for this file).

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RunnerFixture;

my $token = env('SLUICE_DEMO_TOKEN');

with_work_conf(runner_retry_base_s => 1);

# --- a run that succeeds ----------------------------------------------------------------

my $p = make_pipeline(name => 'exec-ok', jobs => [
	tap_job(config => { generate => 25 }), tap_job(config => { generate => 7 }, memory => 512) ]);
my $pid = $p->{pipeline_id};
my @jobs = map { $_->{job_id} } @{ $p->{jobs} };
my $run = execute_run($pid);
my $row = wait_run($run, 90);
ok($row, 'the run finished') or BAIL_OUT('the runner does not run runs');
is($row->{status}, 'SUCCESS', 'SUCCESS') or diag explain [ log_messages($run) ];
is($row->{rows_loaded}, 32, 'rows_loaded is the sum of the jobs\' rows');
like($row->{claimed_by}, qr/^.+:\d+$/, 'claimed_by names the work process (host:pid)');
ok(defined $row->{started_at} && defined $row->{finished_at}, 'started_at and finished_at set');
is($row->{error}, undef, 'no error');
is_deeply(task_rows($run), {
	"$jobs[0].extract_load" => { status => 'SUCCESS', rows_loaded => 25, error => '' },
	"$jobs[1].extract_load" => { status => 'SUCCESS', rows_loaded => 7, error => '' },
}, 'each task SUCCESS with its rows');
my $d = http(GET => "/platform/pipeline/$pid", { token => $token })->{json};
is($d->{last_status}, 'SUCCESS', 'pipeline last_status SUCCESS');
is_deeply([ map { $_->{job_status} } @{ $d->{jobs} } ], [ 'SUCCESS', 'SUCCESS' ],
	  'every job_status SUCCESS');
my $listing = http(GET => "/platform/pipeline/$pid/pipeline_run", { token => $token });
is_deeply([ map { [ $_->{run_id}, $_->{status}, $_->{rows_loaded} ] } @{ $listing->{json}{data}{runs} } ],
	  [ [ $run, 'SUCCESS', 32 ] ], 'the run listing');
iso_time_ok($listing->{json}{data}{runs}[0]{finished_at}, 'finished_at', 120);

my @lines = @{ run_logs($run) };
ok(@lines >= 5, 'log lines were written') or diag explain \@lines;
my @msgs = log_messages($run);
like($msgs[0], qr/^INFO - run claimed by \S+:\d+ \(trigger manual, attempt 1 of 1\)$/,
     'first line: claimed by whom');
for my $j (@jobs) {
	my $task = "$j.extract_load";
	my @t = grep { ($_->{task_id} // '') eq $task } @lines;
	ok(@t >= 2, "$task has its lines");
	like($t[0]{message}, qr/^task started on \S+:\d+: extract_load \(memory limit \d+ MB\)$/,
	     "$task: started, with its memory limit");
	like($t[-1]{message}, qr/^task finished: SUCCESS, \d+ rows read, \d+ rows loaded in [\d.]+ s/,
	     "$task: finished with rows and duration");
	is(scalar(grep { $_->{level} !~ /^(INFO|WARNING|ERROR)$/ } @t), 0, "$task: levels");
	iso_time_ok($t[0]{timestamp}, "$task first line timestamp", 120);
}
like($msgs[-1], qr/^INFO - run finished: SUCCESS, 32 rows loaded in [\d.]+ s$/, 'last line');
is(scalar(@{ run_logs($run, task_id => "$jobs[1].extract_load") }),
   scalar(grep { ($_->{task_id} // '') eq "$jobs[1].extract_load" } @lines),
   'the task_id filter selects one task\'s lines');
ok(grep({ $_ =~ /memory limit 512 MB/ } @msgs), 'the job\'s own memory is its limit');
my $pmem = make_pipeline(name => 'exec-pmem', jobs => [ tap_job(config => { generate => 1 }) ]);
is(http(PUT => "/platform/pipeline/$pmem->{pipeline_id}/memory",
	{ token => $token, json => { amount => 700 } })->{status}, 200, 'pipeline memory 700');
my $prun = execute_run($pmem->{pipeline_id});
wait_run($prun, 60);
ok(grep({ /memory limit 700 MB/ } log_messages($prun)), 'the pipeline\'s memory is the job\'s limit');

# --- a failing task ---------------------------------------------------------------------------

my $f = make_pipeline(name => 'exec-fail', jobs => [
	tap_job(config => { generate => 10, fail_after => 3, exit_code => 7 }),
	tap_job(config => { generate => 2 }) ]);
my @fj = map { $_->{job_id} } @{ $f->{jobs} };
my $frun = execute_run($f->{pipeline_id});
$row = wait_run($frun, 60);
is($row->{status}, 'FAILED', 'a run with a failing task is FAILED');
like($row->{error} // '', qr/^\Q$fj[0].extract_load\E: \S/, 'its error names the task');
my $tr = task_rows($frun);
is($tr->{"$fj[0].extract_load"}{status}, 'FAILED', 'the failing task FAILED');
is($tr->{"$fj[1].extract_load"}{status}, 'SUCCESS', 'the independent task still ran');
$d = http(GET => "/platform/pipeline/$f->{pipeline_id}", { token => $token })->{json};
is($d->{last_status}, 'FAILED', 'pipeline last_status FAILED');
is_deeply([ map { $_->{job_status} } @{ $d->{jobs} } ], [ 'FAILED', 'SUCCESS' ],
	  'job_status per job');
my @errs = @{ run_logs($frun, level => 'ERROR') };
ok((grep { ($_->{task_id} // '') eq "$fj[0].extract_load" &&
	   $_->{message} =~ /^task failed after [\d.]+ s: / } @errs),
   'an ERROR line of the task says it failed and why') or diag explain \@errs;
ok((grep { !defined $_->{task_id} && $_->{message} =~ /^run finished: FAILED/ } @errs),
   'and a run-level ERROR line');

# --- jdbc: no driver; a failed extract skips its qualify -------------------------------------

my $conn = http(POST => '/platform/connections', { token => $token, json => {
	name => "closed-port-$$", plugin => 'mariadb', host => '127.0.0.1', port => 1,
	database => 'src', user => 'u', password => "S3cret-$$-pw" } });
is($conn->{status}, 201, 'set-up: a connection to a closed port') or diag describe($conn);
my $cid = $conn->{json}{connection_id} // $conn->{json}{id} // $conn->{json}{data}{connection_id};
my $q = make_pipeline(name => 'exec-qualify', jobs => [
	jdbc_job(plugin => 'mariadb', input => { connection_id => $cid,
		load_type => 'incremental_with_qualify', incremental_column_name => 'id',
		incremental_column_type => 'int', primary_keys => ['id'] }),
	jdbc_job(plugin => 'oracle', input => { connection_id => $cid }),
	jdbc_job(plugin => 'sqlserver') ]);
my @qj = map { $_->{job_id} } @{ $q->{jobs} };
my $qrun = execute_run($q->{pipeline_id});
$row = wait_run($qrun, 60);
is($row->{status}, 'FAILED', 'FAILED');
$tr = task_rows($qrun);
is($tr->{"$qj[0].extract_load"}{status}, 'FAILED', 'unreachable source: extract_load FAILED');
is($tr->{"$qj[0].qualify"}{status}, 'SKIPPED', 'its qualify task SKIPPED');
like($tr->{"$qj[0].qualify"}{error}, qr/upstream task \Q$qj[0].extract_load\E did not succeed/,
     'and says why');
ok((grep { ($_->{task_id} // '') eq "$qj[0].qualify" && $_->{level} eq 'WARNING' &&
	   $_->{message} =~ /^skipped: upstream task / } @{ run_logs($qrun) }),
   'a WARNING line for the skipped task');
is($tr->{"$qj[1].extract_load"}{error}, 'driver not available: oracle', 'oracle: driver not available');
is($tr->{"$qj[2].extract_load"}{error}, 'driver not available: sqlserver', 'sqlserver too');
my $all = join "\n", map { $_->{message} } @{ run_logs($qrun) };
unlike($all, qr/S3cret-\Q$$\E-pw/, 'the source password is in no log line');
like($all, qr/driver not available: oracle/, 'the driver error is in the log');

# --- retries with backoff ------------------------------------------------------------------------

my $r = make_pipeline(name => 'exec-retry', retries => 2,
		      jobs => [ tap_job(config => { generate => 3, fail_after => 1 }) ]);
my $rrun = execute_run($r->{pipeline_id});
$row = wait_run($rrun, 90);
is($row->{status}, 'FAILED', 'a run failing every attempt ends FAILED');
is($row->{attempt}, 3, 'after 1 + 2 retries (attempt 3)');
is(scalar(runs_of($r->{pipeline_id})), 1, 'retries are attempts of the same run');
@msgs = log_messages($rrun);
is(scalar(grep { /^INFO - run claimed by .* attempt \d of 3\)$/ } @msgs), 3, 'three attempts claimed');
my @retry = grep { /^WARNING - attempt \d of 3 failed \(.*\); retrying in \d+ s$/ } @msgs;
is(scalar @retry, 2, 'two WARNING lines announce the retries');
like($retry[0] // '', qr/attempt 1 of 3 .* retrying in 1 s$/, 'first retry after the base delay (1 s)');
like($retry[1] // '', qr/attempt 2 of 3 .* retrying in 2 s$/, 'then twice as long (2 s)');
like($msgs[-1], qr/^ERROR - run finished: FAILED/, 'then the final failure');

done_testing();
