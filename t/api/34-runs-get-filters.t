#!/usr/bin/perl
# GET /platform/pipeline_run/{run_id} against a real run (status, timings,
# each task's status and rows equal to the rows the warehouse tables hold);
# the run listing's status, trigger, since and until filters, each alone and
# combined with limit and offset, and every bad value a 400 naming its
# parameter; another customer's run a 404 like an unknown one; and an
# unknown query parameter refused with a 400 naming it, without effect, on
# every platform route outside the connections.
#
# The runs the filters select are SET-UP rows written with SQL, finished
# ones only (SUCCESS, FAILED), so that sluice work has nothing to claim:
# their created_at is what since and until are checked against.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RunnerFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $demo_id = env('SLUICE_DEMO_CUSTOMER_ID');

my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'runs-get-other',
		  '--if-missing', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'set-up: second customer exists') or diag $r->{err};
my $other = token(customer => 'runs-get-other',
		  permissions => 'PLATFORM.READ,PLATFORM.WRITE');

sub get { http(GET => $_[0], { token => $_[1] // $token }) }

# 400 {"detail": "<param> ..."}: the parameter is named.
sub refused {
	my ($res, $param, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is($res, 400, undef, $name);
	like($res->{json}{detail} // '', qr/\b\Q$param\E\b/, "$name: names $param");
}

sub run_unknown_ok {
	my ($res, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is($res, 404, undef, $name);
	is($res->{json}{detail}{exception_type}, 'PipelineRunNotFound',
	   "$name: PipelineRunNotFound");
}

# --- GET /platform/pipeline_run/{run_id}: a real run ----------------------------------------

my $schema = 'runs_get';
my $p = make_pipeline(name => 'run-get', jobs => [
	tap_job(schema => $schema, config => { generate => 25 }),
	tap_job(schema => $schema, config => { generate => 7 }) ]);
my @jobs = map { $_->{job_id} } @{ $p->{jobs} };
my $run = execute_run($p->{pipeline_id});

# Right after execute the run is CREATED (or already claimed): no finish yet.
my $early = get("/platform/pipeline_run/$run");
json_response_is($early, 200, undef, 'GET of a fresh run');
like($early->{json}{data}{status} // '', qr/^(CREATED|RUNNING|SUCCESS)$/,
     'a fresh run is CREATED, RUNNING or already done');
iso_time_ok($early->{json}{data}{queued_at}, 'queued_at', 60);

my $row = wait_run($run, 90);
ok($row, 'the run finished') or BAIL_OUT('the runner does not run runs');
is($row->{status}, 'SUCCESS', 'the run succeeded') or diag explain [ log_messages($run) ];

my $res = get("/platform/pipeline_run/$run");
json_response_is($res, 200, undef, 'GET /platform/pipeline_run/{run_id}');
ok($res->{json}{status} && ref $res->{json}{status}, 'status is the JSON boolean true');
my $d = $res->{json}{data};
is_deeply([ sort keys %$d ], [ sort qw(run_id pipeline_id status trigger attempt
	queued_at started_at finished_at duration_ms rows_loaded error
	cancel_requested_at tasks) ], 'the run\'s fields');
is($d->{run_id}, $run, 'run_id');
is($d->{pipeline_id}, $p->{pipeline_id}, 'pipeline_id');
is($d->{status}, 'SUCCESS', 'status');
is($d->{trigger}, 'manual', 'trigger manual (POST .../execute)');
is($d->{attempt}, 1, 'attempt 1');
is($d->{rows_loaded}, 32, 'rows_loaded, the sum of the tasks');
is($d->{error}, undef, 'no error');
is($d->{cancel_requested_at}, undef, 'no cancel asked');
iso_time_ok($d->{$_}, $_, 120) for qw(queued_at started_at finished_at);

# Milliseconds since the epoch of an ISO time the API wrote.
sub ms_of {
	my ($ts) = @_;
	return scalar mysql("SELECT ROUND(UNIX_TIMESTAMP(STR_TO_DATE("
		. sq($ts) . ", '%Y-%m-%dT%H:%i:%s.%fZ')) * 1000)");
}
my ($q_ms, $s_ms, $f_ms) = map { ms_of($d->{$_}) } qw(queued_at started_at finished_at);
ok($q_ms <= $s_ms && $s_ms <= $f_ms, 'queued <= started <= finished');
is($d->{duration_ms}, $f_ms - $s_ms, 'duration_ms is finished_at - started_at');
my ($db_times) = mysql("SELECT " . join(', ', map {
	"CONCAT(LEFT(DATE_FORMAT($_, '%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z')" }
	qw(created_at started_at finished_at)) . " FROM pipeline_runs WHERE id = " . sq($run));
is_deeply([ @$d{qw(queued_at started_at finished_at)} ], $db_times,
	  'the timings are the run row\'s created_at, started_at, finished_at');

my $tasks = $d->{tasks};
is(scalar @$tasks, 2, 'one task per job');
is_deeply([ map { $_->{task_id} } @$tasks ], [ map { "$_.extract_load" } @jobs ],
	  'tasks in the graph\'s order');
for my $i (0, 1) {
	my $t = $tasks->[$i];
	my $name = "task $i";
	is_deeply([ sort keys %$t ], [ sort qw(task_id job_id kind status started_at
		finished_at duration_ms rows_loaded error) ], "$name: fields");
	is($t->{job_id}, $jobs[$i], "$name: job_id");
	is($t->{kind}, 'extract_load', "$name: kind");
	is($t->{status}, 'SUCCESS', "$name: SUCCESS");
	is($t->{error}, undef, "$name: no error");
	iso_time_ok($t->{$_}, "$name $_", 120) for qw(started_at finished_at);
	is($t->{duration_ms}, ms_of($t->{finished_at}) - ms_of($t->{started_at}),
	   "$name: duration_ms");
	my $table = $p->{jobs}[$i]{output}{raw}{table_name};
	my $wh = wh_schema($demo_id, $schema);
	my $count = mysql("SELECT COUNT(*) FROM `$wh`.`$table`");
	is($t->{rows_loaded}, $count, "$name: rows_loaded = the rows in its warehouse table");
}
is($tasks->[0]{rows_loaded}, 25, 'task 0 loaded the 25 rows its source gave');
is($tasks->[1]{rows_loaded}, 7, 'task 1 loaded the 7 rows its source gave');

# The run in the listing agrees with its own GET.
my ($listed) = grep { $_->{run_id} eq $run }
	@{ get("/platform/pipeline/$p->{pipeline_id}/pipeline_run")->{json}{data}{runs} };
is_deeply([ @$listed{qw(status trigger started_at finished_at rows_loaded)} ],
	  [ @$d{qw(status trigger started_at finished_at rows_loaded)} ],
	  'the listing shows the same run');

# --- a failed run: its error and each task's ------------------------------------------------

my $fp = make_pipeline(name => 'run-get-fail', jobs => [
	tap_job(schema => $schema, config => { generate => 10, fail_after => 3, exit_code => 7 }),
	tap_job(schema => $schema, config => { generate => 2 }) ]);
my @fjobs = map { $_->{job_id} } @{ $fp->{jobs} };
my $frun = execute_run($fp->{pipeline_id});
ok(wait_run($frun, 90), 'the failing run finished');
my $fd = get("/platform/pipeline_run/$frun")->{json}{data};
is($fd->{status}, 'FAILED', 'a failed run: FAILED');
like($fd->{error} // '', qr/^\Q$fjobs[0].extract_load\E: \S/, 'its error names the task');
is($fd->{tasks}[0]{status}, 'FAILED', 'the failing task FAILED');
like($fd->{tasks}[0]{error} // '', qr/\S/, 'with its error');
is($fd->{tasks}[1]{status}, 'SUCCESS', 'the independent task SUCCESS');
is($fd->{tasks}[1]{error}, undef, 'without an error');
my $ft = $fp->{jobs}[1]{output}{raw}{table_name};
is($fd->{tasks}[1]{rows_loaded},
   scalar mysql('SELECT COUNT(*) FROM `' . wh_schema($demo_id, $schema) . "`.`$ft`"),
   'its rows are the rows in its table');
is($fd->{rows_loaded}, $fd->{tasks}[0]{rows_loaded} + $fd->{tasks}[1]{rows_loaded},
   'the run\'s rows are the sum of its tasks\'');

# --- unknown, malformed, another customer's ----------------------------------------------------

my $unknown = 'f' x 32;
my $u = get("/platform/pipeline_run/$unknown");
run_unknown_ok($u, 'an unknown run id');
run_unknown_ok(get("/platform/pipeline_run/NOT-A-RUN"), 'a malformed run id');
run_unknown_ok(get('/platform/pipeline_run/' . uc $run), 'the run id in upper case');
my $b = get("/platform/pipeline_run/$run", $other);
run_unknown_ok($b, 'another customer\'s run');
is_deeply($b->{json}, $u->{json}, 'another customer\'s run answers as an unknown one');
is(get("/platform/pipeline_run/$run/", $token)->{status}, 200, 'a trailing slash is the same route');
is(get("/platform/pipeline_run/$run", token(customer => 'demo', permissions => 'PLATFORM.WRITE'))->{status},
   403, 'PLATFORM.READ is required');
is(http(GET => "/platform/pipeline_run/$run")->{status}, 401, 'no token: 401');
# The neighbouring routes are still theirs.
is(get("/platform/pipeline/pipeline_run/$run/logs")->{status}, 200, 'the logs route');
json_response_is(http(POST => "/platform/pipeline_run/$run/cancel", { token => $token }),
		 409, undef, 'the cancel route (a finished run: 409)');

# --- the listing's filters ------------------------------------------------------------------------

my $f = make_pipeline(name => 'run-filters', jobs => [ tap_job(schema => $schema) ]);
my $fid = $f->{pipeline_id};
# name => [status, trigger, created_at]
my %set = (
	r1 => [ 'SUCCESS', 'manual',   '2026-01-01 00:00:00.000' ],
	r2 => [ 'FAILED',  'schedule', '2026-01-02 00:00:00.000' ],
	r3 => [ 'SUCCESS', 'schedule', '2026-01-03 00:00:00.000' ],
	r4 => [ 'FAILED',  'manual',   '2026-01-04 12:00:00.500' ],
);
my %id;
for my $n (sort keys %set) {
	$id{$n} = sprintf '%08x%s', $$, substr("0" x 24 . unpack('H*', $n), -24);
	my ($st, $tr, $at) = @{ $set{$n} };
	mysql("INSERT INTO pipeline_runs (id, pipeline_id, customer_id, status, trigger_type,"
	      . " created_at, started_at, finished_at) VALUES (" . join(', ', map { sq($_) }
	      $id{$n}, $fid, $demo_id, $st, $tr, $at, $at, $at) . ")");
}
my %name_of = reverse %id;

sub listed {
	my ($query, $tok) = @_;
	my $res = get("/platform/pipeline/$fid/pipeline_run?$query", $tok);
	return $res unless $res->{status} == 200;
	return join ',', map { $name_of{ $_->{run_id} } // $_->{run_id} } @{ $res->{json}{data}{runs} };
}

my @cases = (
	[ '',                                          'r4,r3,r2,r1', 'no filter: every run, newest first' ],
	[ 'status=SUCCESS',                            'r3,r1', 'status=SUCCESS' ],
	[ 'status=FAILED',                             'r4,r2', 'status=FAILED' ],
	[ 'status=RUNNING',                            '',      'status=RUNNING: none' ],
	[ 'status=CREATED',                            '',      'status=CREATED: none' ],
	[ 'trigger=manual',                            'r4,r1', 'trigger=manual' ],
	[ 'trigger=schedule',                          'r3,r2', 'trigger=schedule' ],
	[ 'since=2026-01-02T00:00:00Z',                'r4,r3,r2', 'since is inclusive' ],
	[ 'since=2026-01-02T00:00:00.001Z',            'r4,r3', 'since one ms later' ],
	[ 'until=2026-01-03T00:00:00Z',                'r2,r1', 'until is exclusive' ],
	[ 'until=2026-01-03T00:00:00.001Z',            'r3,r2,r1', 'until one ms later' ],
	[ 'until=2026-01-03',                          'r2,r1', 'a date alone is its midnight UTC' ],
	[ 'since=2026-01-04T12:00:00.500Z',            'r4', 'milliseconds count' ],
	[ 'since=2026-01-04T12:00:00.501Z',            '', 'one ms past the newest run' ],
	[ 'since=2026-01-04T13:00:00.500%2B01:00',     'r4', 'an offset east of UTC' ],
	[ 'until=2026-01-02T19:00:00-05:00',           'r2,r1', 'an offset west of UTC' ],
	[ 'since=2026-01-02&until=2026-01-02',         '', 'since = until: an empty window' ],
	[ 'since=2026-01-02&until=2026-01-04',         'r3,r2', 'since and until' ],
	[ 'status=SUCCESS&trigger=schedule',           'r3', 'status and trigger' ],
	[ 'status=FAILED&trigger=schedule&since=2026-01-02&until=2026-01-03', 'r2', 'all four' ],
	[ 'status=SUCCESS&trigger=manual&since=2026-01-02', '', 'all selecting nothing' ],
	[ 'status=FAILED&limit=1',                     'r4', 'a filter with limit' ],
	[ 'status=FAILED&limit=1&offset=1',            'r2', 'a filter with limit and offset' ],
	[ 'status=FAILED&offset=2',                    '', 'offset past the filtered runs' ],
	[ 'trigger=schedule&since=2026-01-01&limit=1000', 'r3,r2', 'limit at its maximum' ],
);
for my $c (@cases) {
	my ($query, $want, $name) = @$c;
	my $got = listed($query);
	is(ref $got ? describe($got) : $got, $want, "filter: $name");
}

refused(get("/platform/pipeline/$fid/pipeline_run?$_->[0]"), $_->[1], "bad $_->[0]") for (
	[ 'status=success', 'status' ],     # the API renders statuses in upper case
	[ 'status=CANCELLED', 'status' ],
	[ 'status=', 'status' ],
	[ 'status=SUCCESS&status=FAILED', 'status' ],
	[ 'trigger=retry', 'trigger' ],
	[ 'trigger=MANUAL', 'trigger' ],
	[ 'trigger=', 'trigger' ],
	[ 'since=2026-13-01', 'since' ],
	[ 'since=2026-02-30T00:00:00Z', 'since' ],
	[ 'since=yesterday', 'since' ],
	[ 'since=0001-01-01T00:00:00%2B01:00', 'since' ],   # before the year 1
	[ 'since=', 'since' ],
	[ 'until=2026-01-01T24:00:00Z', 'until' ],
	[ 'until=1735689600', 'until' ],
	[ 'until=2026-01-01T00:00:00Z%00', 'until' ],
	[ 'since=' . ('2' x 5000), 'since' ],
	[ 'limit=1001', 'limit' ],
	[ 'limit=0', 'limit' ],
	[ 'offset=-1', 'offset' ],
	[ 'state=SUCCESS', 'state' ],
);
my $window = get("/platform/pipeline/$fid/pipeline_run?since=2026-01-03&until=2026-01-02");
json_response_is($window, 400, { detail => 'since must not be later than until' },
		 'since later than until');
json_response_is(get("/platform/pipeline/$fid/pipeline_run?since=2026-01-02T00:00:00.001Z"
		     . "&until=2026-01-02T00:00:00Z"), 400, undef, 'since one ms later than until');

# Another customer: the pipeline is unknown, whatever the filters.
my $ob = get("/platform/pipeline/$fid/pipeline_run?status=SUCCESS", $other);
json_response_is($ob, 404, undef, 'another customer\'s run listing');
is($ob->{json}{detail}{exception_type}, 'PipelineNotFound', 'as an unknown pipeline');
my $mine = make_pipeline(name => 'run-filters-other', token => $other, jobs => [ tap_job() ]);
is_deeply(get("/platform/pipeline/$mine->{pipeline_id}/pipeline_run?since=2000-01-01",
	     $other)->{json}{data}{runs}, [], 'the other customer\'s own pipeline has no runs');

# --- an unknown query parameter on every platform route --------------------------------------------

my $job = $jobs[0];
my $pid = $p->{pipeline_id};
my $before = mysql('SELECT COUNT(*) FROM pipelines');
my $runs_before = mysql('SELECT COUNT(*) FROM pipeline_runs');
my @routes = (
	[ GET    => '/platform/pipelines' ],
	[ POST   => '/platform/pipeline', { name => 'bogus', description => 'x', cron => undef,
					     jobs => [ tap_job() ] } ],
	[ POST   => '/platform/pipeline/pause', { customer_id => $demo_id, pipeline_id => $pid } ],
	[ POST   => '/platform/pipeline/resume', { customer_id => $demo_id, pipeline_id => $pid } ],
	[ POST   => '/platform/pipeline/execute', { customer_id => $demo_id, pipeline_id => $pid } ],
	[ GET    => "/platform/pipeline/$pid" ],
	[ DELETE => "/platform/pipeline/$pid" ],
	[ PUT    => "/platform/pipeline/$pid/memory", { amount => 600 } ],
	[ GET    => "/platform/pipeline/$pid/pipeline_run" ],
	[ GET    => "/platform/pipeline/pipeline_run/$run/logs" ],
	[ GET    => "/platform/pipeline_run/$run" ],
	[ POST   => "/platform/pipeline_run/$run/cancel" ],
	[ PUT    => "/platform/jobs/$job/memory", { amount => 600 } ],
	[ POST   => "/platform/jobs/$job/reset-state" ],
	[ POST   => "/platform/jobs/jdbc/$job/sync-mode", { target_load_type => 'full_load' } ],
	[ PATCH  => "/platform/jobs/$job/input", { connector => 'singer', column_include_list => ['a'] } ],
);
for my $rt (@routes) {
	my ($method, $path, $body) = @$rt;
	my %o = (token => $token, headers => { customer_name => 'demo' });
	$o{json} = $body if $body;
	refused(http($method => "$path?bogus=1", \%o), 'bogus', "$method $path?bogus=1");
}
is(scalar mysql('SELECT COUNT(*) FROM pipelines'), $before, 'no pipeline created or deleted');
is(scalar mysql('SELECT COUNT(*) FROM pipeline_runs'), $runs_before, 'no run created');
my ($mem) = mysql('SELECT IFNULL(memory_allocated_mb, 0) FROM jobs WHERE id = ' . sq($job));
isnt($mem->[0], 600, 'no memory set');
is(get("/platform/pipeline/$pid")->{json}{paused}, JSON::PP::false(), 'not paused');

done_testing();
