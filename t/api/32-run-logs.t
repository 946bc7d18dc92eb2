#!/usr/bin/perl
# GET /platform/pipeline/pipeline_run/{runId}/logs: every field of a line,
# the level filter (that level and above), task_id, offset and limit with
# their bounds, total_lines counting the filtered set, and the
# PipelineRunNotFound 404 for unknown, malformed and other customers' runs.
#
# Runs come from POST /platform/pipeline/execute; their log lines are SET-UP
# rows written with SQL (the runner that writes them is not part of the API).

use strict;
use warnings;

use Test::More;

use SluiceTest;

# The runs this file sets up must stay as written: sluice work's runner
# would claim and execute them, so it is stopped for the whole file.
{
	my $w = dev('work-stop');
	die "scripts/dev work-stop failed: $w->{err}\n" if $w->{exit};
}
END { local $?; dev('work-start') }

my $token = env('SLUICE_DEMO_TOKEN');
my $demo_id = env('SLUICE_DEMO_CUSTOMER_ID');
my $reader = token(customer => 'demo', permissions => 'PLATFORM.READ');

my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'logs-other',
		  '--if-missing', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'second customer exists') or diag $r->{err};
(my $other_id = $r->{out}) =~ s/\s+\z//;
my $other = token(customer => 'logs-other', permissions => 'PLATFORM.READ,PLATFORM.WRITE');

sub run_of {
	my ($tok, $customer, $name) = @_;
	my $res = http(POST => '/platform/pipeline', { token => $tok, json => {
		name => $name, description => '', cron => undef,
		jobs => [ map { { input => { connector => 'jdbc', plugin => 'mysql',
					     table_name => "t$_" },
				  output => { plugin => 'mariadb',
					      raw => { table_name => "t$_", table_schema => 'raw' } } } }
			  0, 1 ] } });
	is($res->{status}, 201, "set-up: pipeline $name") or diag describe($res);
	my $p = $res->{json}{pipeline_id};
	$res = http(POST => '/platform/pipeline/execute',
		    { token => $tok, json => { pipeline_id => $p, customer_id => $customer } });
	is($res->{status}, 200, "set-up: run of $name") or diag describe($res);
	return ($p, $res->{json}{data}{run_id});
}

my ($p, $run) = run_of($token, $demo_id, 'logs-main');
my (undef, $quiet) = run_of($token, $demo_id, 'logs-quiet');
my (undef, $foreign) = run_of($other, $other_id, 'logs-foreign');

# Set-up: 40 lines.  Levels cycle DEBUG, INFO, INFO, WARNING, ERROR; tasks
# cycle job 0, job 1, none (a run-level line).
my @levels = qw(DEBUG INFO INFO WARNING ERROR);
my @tasks = ("${p}_0.extract_load", "${p}_1.extract_load", undef);
my @lines;
for my $i (1 .. 40) {
	my $ts = sprintf('2026-05-06 07:%02d:%02d.%03d', int($i / 60), $i % 60, $i * 7);
	push @lines, { line => $i, level => $levels[($i - 1) % 5], task_id => $tasks[($i - 1) % 3],
		       ts => $ts, message => "line $i: \"quoted\" \\ tab\there" };
}
my $values = join ', ', map {
	my $m = $_->{message};
	$m =~ s/\\/\\\\/g;
	$m =~ s/'/\\'/g;
	$m =~ s/\t/\\t/g;
	sprintf("('%s', %d, '%s', '%s', %s, '%s')", $run, $_->{line}, $_->{ts}, $_->{level},
		defined $_->{task_id} ? "'$_->{task_id}'" : 'NULL', $m)
} @lines;
mysql("INSERT INTO run_logs (run_id, line_no, ts, level, task_id, message) VALUES $values");
mysql("UPDATE pipeline_runs SET log_lines = 40 WHERE id = '$run'");

sub api_line {
	my ($l) = @_;
	(my $t = $l->{ts}) =~ s/ /T/;
	return { timestamp => "${t}Z", level => $l->{level}, task_id => $l->{task_id},
		 message => $l->{message} };
}

sub logs {
	my ($q, $tok, $id) = @_;
	my $path = '/platform/pipeline/pipeline_run/' . ($id // $run) . '/logs';
	$path .= "?$q" if defined $q && length $q;
	return http(GET => $path, { token => $tok // $token });
}

sub expect {
	my ($q, $want, $name) = @_;
	my @w = @$want;
	my $res = logs($q);
	json_response_is($res, 200, { status => JSON::PP::true(), data => {
		run_id => $run, logs => [ map { api_line($_) } @w ],
		total_lines => scalar(@w) } }, $name);
}

# --- every line, every field ----------------------------------------------------------

my $res = logs(undef, $reader);
json_response_is($res, 200, undef, 'logs with PLATFORM.READ');
is_deeply([ sort keys %{ $res->{json}{data} } ], [ qw(logs run_id total_lines) ], 'data fields');
is($res->{json}{data}{total_lines}, 40, 'total_lines');
is_deeply($res->{json}{data}{logs}[0], api_line($lines[0]), 'the first line, field by field');
is_deeply($res->{json}{data}{logs}[2]{task_id}, undef, 'a run-level line has task_id null');
like($res->{json}{data}{logs}[0]{timestamp}, qr/^2026-05-06T07:00:01\.007Z$/,
     'timestamp is ISO 8601 UTC with milliseconds');
expect(undef, \@lines, 'all 40 lines in order (DEBUG included)');

# --- filters ---------------------------------------------------------------------------------

my @info_up = grep { $_->{level} ne 'DEBUG' } @lines;
my @warn_up = grep { $_->{level} =~ /^(WARNING|ERROR)$/ } @lines;
my @errors = grep { $_->{level} eq 'ERROR' } @lines;
expect('level=INFO', \@info_up, 'level=INFO: INFO and above');
expect('level=WARNING', \@warn_up, 'level=WARNING: WARNING and ERROR');
expect('level=ERROR', \@errors, 'level=ERROR: ERROR only');

my $t0 = $tasks[0];
my @task0 = grep { defined $_->{task_id} && $_->{task_id} eq $t0 } @lines;
expect("task_id=$t0", \@task0, 'task_id filter');
expect("task_id=$t0&level=WARNING",
       [ grep { $_->{level} =~ /^(WARNING|ERROR)$/ } @task0 ], 'task_id and level together');
expect('task_id=no.such_task', [], 'an unknown task: no lines');
my $enc = $t0 =~ s/\./%2E/r;
expect("task_id=$enc", \@task0, 'task_id percent-encoded');

# offset and limit: a page of the filtered set, total_lines still the whole set
$res = logs('level=INFO&offset=5&limit=10');
is($res->{json}{data}{total_lines}, scalar @info_up, 'total_lines counts the filtered set, not the page');
is_deeply($res->{json}{data}{logs}, [ map { api_line($_) } @info_up[5 .. 14] ], 'offset=5&limit=10');
$res = logs('offset=38');
is_deeply($res->{json}{data}{logs}, [ map { api_line($_) } @lines[38, 39] ], 'offset near the end');
$res = logs('offset=40');
is_deeply($res->{json}{data}{logs}, [], 'offset at the end: no lines');
is($res->{json}{data}{total_lines}, 40, '... and the total');
is(scalar @{ logs('limit=1')->{json}{data}{logs} }, 1, 'limit=1 (the minimum)');
is(scalar @{ logs('limit=10000')->{json}{data}{logs} }, 40, 'limit=10000 (the maximum)');
is(scalar @{ logs('offset=0')->{json}{data}{logs} }, 40, 'offset=0');

# --- bad query values: 400 naming the parameter ------------------------------------------------

my %msg = (
	level => 'level must be one of INFO, WARNING, ERROR',
	task_id => 'task_id must be 1 to 128 characters long',
	limit_type => 'limit must be an integer',
	offset_type => 'offset must be an integer',
	since => 'since is not a known query parameter',
	limit => 'limit must be an integer from 1 to 10000',
	offset => 'offset must be an integer from 0 to 1000000000',
);
for my $t ([ 'level=DEBUG', 'level' ], [ 'level=info', 'level' ], [ 'level=', 'level' ],
	   [ 'level=FATAL', 'level' ],
	   [ 'task_id=', 'task_id' ], [ 'task_id=' . ('t' x 129), 'task_id' ],
	   [ 'limit=10001', 'limit' ], [ 'limit=0', 'limit' ], [ 'limit=x', 'limit_type' ],
	   [ 'limit=-5', 'limit' ], [ 'offset=-1', 'offset' ], [ 'offset=1e3', 'offset_type' ],
	   [ 'offset=1000000001', 'offset' ], [ 'since=2026-01-01', 'since' ]) {
	json_response_is(logs($t->[0]), 400, { detail => $msg{ $t->[1] } }, "400: $t->[0]");
}
is(logs('task_id=' . ('t' x 128))->{status}, 200, 'task_id of 128 characters is fine');

# --- the default limit ------------------------------------------------------------------------------
# Set-up: 1005 lines in the quiet run.
mysql("INSERT INTO run_logs (run_id, line_no, message) SELECT '$quiet', seq, CONCAT('bulk ', seq)"
      . ' FROM seq_1_to_1005');
$res = logs(undef, undef, $quiet);
is(scalar @{ $res->{json}{data}{logs} }, 1000, 'without limit: 1000 lines');
is($res->{json}{data}{total_lines}, 1005, '... of 1005');
is($res->{json}{data}{logs}[999]{message}, 'bulk 1000', '... the first 1000');
$res = logs('offset=1000', undef, $quiet);
is_deeply([ map { $_->{message} } @{ $res->{json}{data}{logs} } ],
	  [ map { "bulk $_" } 1001 .. 1005 ], 'the rest with offset=1000');
is($res->{json}{data}{logs}[0]{level}, 'INFO', 'a line without a level reads INFO');

my (undef, $silent) = run_of($token, $demo_id, 'logs-silent');
json_response_is(logs(undef, undef, $silent), 200,
		 { status => JSON::PP::true(), data => { run_id => $silent, logs => [],
							 total_lines => 0 } },
		 'a run without lines');

# --- 404 and isolation ------------------------------------------------------------------------------

my $rnf = { detail => { status => JSON::PP::false(), exception_type => 'PipelineRunNotFound',
			traceback => 'Pipeline run not found', data => undef } };
json_response_is(logs(undef, undef, $foreign), 404, $rnf, 'another customer\'s run: 404');
json_response_is(logs('level=ERROR', undef, $foreign), 404, $rnf, '... also with a filter');
json_response_is(logs(undef, undef, '0' x 32), 404, $rnf, 'an unknown run');
json_response_is(logs(undef, undef, uc $run), 404, $rnf, 'upper-case hex is malformed');
json_response_is(logs(undef, undef, substr($run, 1)), 404, $rnf, '31 characters');
json_response_is(logs(undef, undef, "${run}0"), 404, $rnf, '33 characters');
json_response_is(logs(undef, undef, 'not-a-run'), 404, $rnf, 'not hex');
is(logs(undef, $other, $foreign)->{status}, 200, 'the owner reads its own run');
json_response_is(logs(undef, $other), 404, $rnf, 'and not the demo customer\'s');
is(http(GET => "/platform/pipeline/pipeline_run/$run/logs")->{status}, 401, 'logs need a token');

done_testing();
