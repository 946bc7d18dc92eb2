#!/usr/bin/perl
# Two sluice work processes share the runs: each run is claimed and
# executed exactly once (one "claimed" line, one start and one finish line
# per task, the destination table holds its rows once), and no run is left
# behind.  runner_max_runs bounds the runs one process supervises at once.

use strict;
use warnings;

use Sys::Hostname qw(hostname);
use Test::More;

use SluiceTest;
use RunnerFixture;

# Slow tasks (200 ms per record) so that runs overlap; two runs at most per
# process.
with_work_conf(runner_max_runs => 2);
# The second process names another host, as a second machine would.  (The
# table may hold rows of processes earlier tests killed: only these two
# are looked at.)
my $extra = start_extra_work(host_name => 'sluice-peer');
my $main_id = substr(hostname(), 0, 100) . ':' . work_pid();
ok(wait_until(10, sub { mysql("SELECT COUNT(*) FROM work_processes WHERE id IN "
			       . "('sluice-peer:$extra', " . sq($main_id) . ')') == 2 }),
   "both processes registered: sluice-peer:$extra (host_name) and $main_id (the system's name)")
	or diag explain [ mysql('SELECT id, host FROM work_processes') ];
is(mysql("SELECT host FROM work_processes WHERE id = 'sluice-peer:$extra'"), 'sluice-peer',
   'the second one\'s host is its host_name');

my $N = 8;
my (@runs, %table, %jobs);
for my $i (1 .. $N) {
	my $tbl = "conc_${$}_$i";
	my $p = make_pipeline(name => "conc-$i", jobs => [
		tap_job(table => $tbl, config => { generate => 5, sleep_ms => 200 }) ]);
	my $run = execute_run($p->{pipeline_id});
	push @runs, $run;
	$table{$run} = $tbl;
	$jobs{$run} = $p->{jobs}[0]{job_id};
}

# While they run: never more than runner_max_runs RUNNING per process.
my $max_seen = 0;
my $done = wait_until(120, sub {
	for (mysql("SELECT claimed_by, COUNT(*) FROM pipeline_runs WHERE status = 'RUNNING' "
		   . 'AND id IN (' . join(', ', map { sq($_) } @runs) . ') GROUP BY claimed_by')) {
		$max_seen = $_->[1] if $_->[1] > $max_seen;
	}
	mysql('SELECT COUNT(*) FROM pipeline_runs WHERE status IN (\'SUCCESS\', \'FAILED\') '
	      . 'AND id IN (' . join(', ', map { sq($_) } @runs) . ')') == $N;
}, 0.1);
ok($done, "all $N runs finished");
cmp_ok($max_seen, '<=', 2, "at most runner_max_runs (2) RUNNING per process (saw $max_seen)");

my %by;
for my $run (@runs) {
	my $row = run_row($run);
	is($row->{status}, 'SUCCESS', "run $run SUCCESS") or diag explain [ log_messages($run) ];
	is($row->{rows_loaded}, 5, 'its rows');
	$by{ $row->{claimed_by} }++;
	my @m = log_messages($run);
	my $task = "$jobs{$run}.extract_load";
	is(scalar(grep { /^INFO - run claimed by / } @m), 1, 'claimed once');
	is(scalar(grep { /^INFO \Q$task\E task started / } @m), 1, 'its task started once');
	is(scalar(grep { /^INFO \Q$task\E task finished: / } @m), 1, 'and finished once');
	is(scalar(grep { /^INFO - run finished: / } @m), 1, 'the run finished once');
	my ($claim) = grep { /run claimed by / } @m;
	like($claim, qr/claimed by \Q$row->{claimed_by}\E /, 'the claiming process is the one recorded');
	is(scalar mysql("SELECT COUNT(*), COUNT(DISTINCT id) FROM `" . wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), 'runner_t') . "`.`$table{$run}`"),
	   "5\t5", 'the destination holds the rows once');
}
is(scalar(keys %by), 2, 'both processes executed runs') or diag explain \%by;
is(scalar(grep { /^sluice-peer:\d+$/ } keys %by), 1, 'one of them the sluice-peer host\'s');

# Schedules too: due pipelines fire once each with two schedulers polling.
my @due = map { make_pipeline(name => "conc-cron-$_", cron => '0 0 1 1 *',
			      jobs => [ tap_job(config => { generate => 1 }) ])->{pipeline_id} } 1 .. 6;
mysql('UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) - INTERVAL 2 HOUR WHERE id IN ('
      . join(', ', map { sq($_) } @due) . ')');                  # set-up: all due now
ok(wait_until(30, sub { !grep { runs_of($_) < 1 } @due }), 'every due schedule made a run');
my @sruns = map { runs_of($_) } @due;
ok(wait_runs(60, @sruns), 'and they finished');
is(scalar(grep { runs_of($_) == 1 } @due), 6, 'exactly one run per pipeline');
is(scalar(grep { run_row($_)->{status} eq 'SUCCESS' } @sruns), 6, 'each SUCCESS');

stop_extra_work($extra);
ok(!proc_alive($extra), 'the second process stopped on SIGTERM');

done_testing();
