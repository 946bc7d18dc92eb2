#!/usr/bin/perl
# The scheduler in sluice work: a due cron schedule becomes a run with
# trigger `schedule` that executes; next_run_at moves to the next firing
# after now, so a schedule missed for hours runs once, not once per slot;
# paused pipelines and pipelines without cron never run by schedule; a
# firing while a run is active is skipped.  cron_timezone and retries on
# create, in the renders, and cron read in the zone.
#
# Set-up by SQL: next_run_at put in the past, so a schedule is due now
# instead of at its next minute.

use strict;
use warnings;

use Test::More;
use POSIX qw(strftime);
use Time::Local qw(timegm);

use SluiceTest;
use RunnerFixture;

my $token = env('SLUICE_DEMO_TOKEN');

sub next_run_at {
	my ($pid) = @_;
	return scalar mysql("SELECT IFNULL(DATE_FORMAT(next_run_at, '%Y-%m-%d %H:%i:%s'), 'NULL') "
		. 'FROM pipelines WHERE id = ' . sq($pid));
}

sub epoch_of {
	my ($s) = @_;
	my @f = $s =~ /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)$/ or return undef;
	return timegm($f[5], $f[4], $f[3], $f[2], $f[1] - 1, $f[0]);
}

# Absence after a scheduler pass: a probe pipeline made due now, with a yearly
# cron so that it fires once.  A tick fires the earliest next_run_at first,
# so once the probe has fired, every pipeline due before it that the
# scheduler would fire has fired too.  True when the probe's run finished.
my $probes = 0;
sub scheduler_passed {
	my $probe = make_pipeline(name => 'sched-probe-' . ++$probes, cron => '0 0 1 1 *');
	my $id = $probe->{pipeline_id};
	mysql('UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) WHERE id = ' . sq($id));
	my @runs;
	wait_until(15, sub { @runs = runs_of($id) }) or return 0;
	my $row = wait_run($runs[0], 60);
	return $row && $row->{status} eq 'SUCCESS';
}

sub validation_codes {
	my ($res) = @_;
	return [ map { "$_->{field}:$_->{error_code}" }
		 @{ $res->{json}{detail}{validation_errors} || [] } ];
}

# --- create: cron_timezone and retries --------------------------------------------

my $p = make_pipeline(name => 'sched-berlin', cron => '0 9 * * *',
		      cron_timezone => 'Europe/Berlin', retries => 2);
is($p->{cron_timezone}, 'Europe/Berlin', 'create answers cron_timezone');
is($p->{retries}, 2, 'create answers retries');
my $detail = http(GET => "/platform/pipeline/$p->{pipeline_id}", { token => $token });
is($detail->{json}{cron_timezone}, 'Europe/Berlin', 'the detail shows cron_timezone');
is($detail->{json}{retries}, 2, 'the detail shows retries');
my ($listed) = grep { $_->{pipeline_id} eq $p->{pipeline_id} }
	@{ http(GET => '/platform/pipelines', { token => $token })->{json} };
is($listed->{cron_timezone}, 'Europe/Berlin', 'the list shows cron_timezone');

# 09:00 in Berlin is 08:00 UTC in winter (CET) and 07:00 UTC in summer (CEST).
my $next = next_run_at($p->{pipeline_id});
like($next, qr/^\d{4}-\d\d-\d\d 0[78]:00:00$/, "next_run_at is 09:00 Berlin in UTC ($next)");
my $t = epoch_of($next);
cmp_ok($t, '>', time, 'next_run_at is in the future');
cmp_ok($t - time, '<=', 86400 + 3600, 'and within a day');
my ($lt_hour) = mysql("SELECT HOUR(CONVERT_TZ('$next', '+00:00', '+01:00')), "
		      . "HOUR(CONVERT_TZ('$next', '+00:00', '+02:00'))");
ok($lt_hour->[0] == 9 || $lt_hour->[1] == 9, 'it is 09:00 at one of Berlin\'s offsets');

my $plain = make_pipeline(name => 'sched-utc', cron => '0 9 * * *');
ok(!exists $plain->{cron_timezone}, 'no cron_timezone: not in the answer');
ok(!exists $plain->{retries}, 'retries 0: not in the answer');
like(next_run_at($plain->{pipeline_id}), qr/ 09:00:00$/, 'without a zone, cron is UTC');

# Pause, then resume: next_run_at is recomputed in the zone.
my $body = { customer_id => env('SLUICE_DEMO_CUSTOMER_ID'), pipeline_id => $p->{pipeline_id} };
is(http(POST => '/platform/pipeline/pause', { token => $token, json => $body })->{status}, 200, 'pause');
is(next_run_at($p->{pipeline_id}), 'NULL', 'paused: next_run_at NULL');
my $res = http(POST => '/platform/pipeline/resume', { token => $token, json => $body });
is($res->{status}, 200, 'resume');
is(next_run_at($p->{pipeline_id}), $next, 'resumed: the same 09:00 Berlin firing');
like($res->{json}{data}{next_run_at} // '', qr/T0[78]:00:00Z$/, 'resume answers it');

my @bad = (
	[ { cron_timezone => 'Mars/Olympus' }, 'cron_timezone:INVALID_TIMEZONE' ],
	[ { cron_timezone => '../../etc/passwd' }, 'cron_timezone:INVALID_TIMEZONE' ],
	[ { cron_timezone => '' }, 'cron_timezone:OUT_OF_RANGE' ],
	[ { cron_timezone => 'A' x 65 }, 'cron_timezone:OUT_OF_RANGE' ],
	[ { cron_timezone => 5 }, 'cron_timezone:INVALID_TYPE' ],
	[ { retries => 6 }, 'retries:OUT_OF_RANGE' ],
	[ { retries => -1 }, 'retries:OUT_OF_RANGE' ],
	[ { retries => '2' }, 'retries:INVALID_TYPE' ],
	[ { retries => 1.5 }, 'retries:INVALID_TYPE' ],
);
for my $b (@bad) {
	my %body = (name => 'bad', cron => '0 1 * * *', jobs => [ tap_job() ], %{ $b->[0] });
	my $r = http(POST => '/platform/pipeline', { token => $token, json => \%body });
	is($r->{status}, 400, "400: $b->[1]");
	is_deeply(validation_codes($r), [ $b->[1] ], "$b->[1]: the field and code")
		or diag describe($r);
}
is(http(POST => '/platform/pipeline', { token => $token, json => {
	name => 'ok', cron => '0 1 * * *', cron_timezone => 'America/Argentina/Buenos_Aires',
	retries => 5, jobs => [ tap_job() ] } })->{status}, 201, 'a three-part zone and retries 5');

# --- a due schedule runs once -----------------------------------------------------------

# Hourly, at the minute half an hour away: no later slot can fire while the
# test looks, so next_run_at read after the run is the firing's own, and the
# slot it names is known exactly.  (Every minute raced the next slot, which
# fires, or is skipped, at the first boundary after a slow firing.)
my $minute = (int(time / 60) + 30) % 60;
my $due = make_pipeline(name => 'sched-due', cron => "$minute * * * *", cron_timezone => 'UTC',
			jobs => [ tap_job(config => { generate => 4 }) ]);
my $pid = $due->{pipeline_id};
is(scalar(runs_of($pid)), 0, 'no run before the schedule is due');
# Set-up: due 180 hours ago, i.e. 180 missed slots.
mysql('UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) - INTERVAL 180 HOUR WHERE id = ' . sq($pid));
ok(wait_until(15, sub { runs_of($pid) >= 1 }), 'a run appears');
my ($run) = runs_of($pid);
my $row = wait_run($run, 60);
is($row->{trigger_type}, 'schedule', 'its trigger is schedule');
is($row->{status}, 'SUCCESS', 'it executes to SUCCESS') or diag explain [ log_messages($run) ];
is($row->{rows_loaded}, 4, 'rows loaded');
my $list = http(GET => "/platform/pipeline/$pid/pipeline_run", { token => $token });
is($list->{json}{data}{runs}[0]{trigger}, 'schedule', 'the run listing says schedule');
ok(scheduler_passed(), 'a later scheduler pass (probe fired and ran)');
is(scalar(runs_of($pid)), 1, 'one run for 180 missed slots');
my $fired = epoch_of(scalar mysql("SELECT DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s') "
				  . 'FROM pipeline_runs WHERE id = ' . sq($run)));
my $slot = $fired - $fired % 3600 + 60 * $minute;
$slot += 3600 if $slot <= $fired;
is(next_run_at($pid), strftime('%Y-%m-%d %H:%M:%S', gmtime $slot),
   'next_run_at is the first slot after the firing');

# --- an active run: the firing is skipped ----------------------------------------------

my $busy = make_pipeline(name => 'sched-busy', cron => '* * * * *',
			 jobs => [ tap_job(config => { generate => 1, sleep_ms => 4000 }) ]);
my $brun = execute_run($busy->{pipeline_id});
ok(wait_until(15, sub { run_row($brun)->{status} eq 'RUNNING' }), 'a manual run is RUNNING');
mysql('UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE WHERE id = '
      . sq($busy->{pipeline_id}));
ok(wait_until(10, sub { epoch_of(next_run_at($busy->{pipeline_id})) > time - 1 }),
   'the due firing was handled (next_run_at moved on)');
is(scalar(runs_of($busy->{pipeline_id})), 1, 'but no second run while one is active');
is(wait_run($brun, 60)->{status}, 'SUCCESS', 'the manual run finishes');

# --- paused, and cron null: never by schedule -------------------------------------------

my $paused = make_pipeline(name => 'sched-paused', cron => '* * * * *');
is(http(POST => '/platform/pipeline/pause', { token => $token, json => {
	customer_id => env('SLUICE_DEMO_CUSTOMER_ID'), pipeline_id => $paused->{pipeline_id} } })
   ->{status}, 200, 'paused');
my $manual = make_pipeline(name => 'sched-manual', cron => undef);
is(next_run_at($manual->{pipeline_id}), 'NULL', 'cron null: next_run_at NULL');
# Set-up: both look due (a stale next_run_at must not be enough).
mysql('UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) - INTERVAL 1 HOUR WHERE id IN ('
      . sq($paused->{pipeline_id}) . ', ' . sq($manual->{pipeline_id}) . ')');
# A pipeline made due after them proves the scheduler had its turn.
ok(scheduler_passed(), 'the scheduler ran (probe fired and ran)');
is(scalar(runs_of($paused->{pipeline_id})), 0, 'a paused pipeline never runs by schedule');
is(scalar(runs_of($manual->{pipeline_id})), 0, 'a pipeline without cron never runs by schedule');

done_testing();
