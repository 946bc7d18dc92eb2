#!/usr/bin/perl
# POST /platform/pipeline/execute and GET /platform/pipeline/{id}/pipeline_run:
# the CREATED run and statuses, 409 while a run is active, 403 for another
# customer_id, 404 for unknown / malformed / other customers' pipelines, 400
# naming the field, all-or-nothing execute, and the listing newest first with
# its limit and offset bounds.
#
# Runs in states other than CREATED are SET-UP rows written with SQL (the
# runner that moves runs along is not part of the API); every assertion is on
# what the API answers and what the database then holds.

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
my $sub = jwt_payload($token)->{sub};
my $reader = token(customer => 'demo', permissions => 'PLATFORM.READ');

my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'runs-other',
		  '--if-missing', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'second customer exists') or diag $r->{err};
(my $other_id = $r->{out}) =~ s/\s+\z//;
my $other = token(customer => 'runs-other', permissions => 'PLATFORM.READ,PLATFORM.WRITE');

my $trigger_made = 0;
END { mysql('DROP TRIGGER IF EXISTS sluice_test_runs_fail') if $trigger_made }

sub pipeline {
	my ($tok, $name, $jobs) = @_;
	my @jobs = map {
		{ input => { connector => 'jdbc', plugin => 'postgres',
			     table_name => "public.t$_" },
		  output => { plugin => 'mariadb',
			      raw => { table_name => "t$_", table_schema => 'raw' } } }
	} 0 .. ($jobs // 2) - 1;
	my $res = http(POST => '/platform/pipeline', { token => $tok, json =>
		{ name => $name, description => 'runs test', cron => undef, jobs => \@jobs } });
	is($res->{status}, 201, "set-up: pipeline $name created") or diag describe($res);
	return $res->{json}{pipeline_id};
}

sub execute {
	my ($body, $tok) = @_;
	return http(POST => '/platform/pipeline/execute',
		    { token => $tok // $token, json => $body });
}

sub runs_of { scalar mysql("SELECT COUNT(*) FROM pipeline_runs WHERE pipeline_id = '$_[0]'") }

my $p = pipeline($token, 'runs-main');
my $q = pipeline($other, 'runs-other-customer', 1);
my $empty = pipeline($token, 'runs-never-executed', 1);

# --- execute: 200 and what it wrote ----------------------------------------------

my $res = execute({ pipeline_id => $p, customer_id => $demo_id });
json_response_is($res, 200, undef, 'execute');
my $run = $res->{json}{data}{run_id} // '';
like($run, qr/^[0-9a-f]{32}$/, 'run_id is 32 lowercase hex');
is_deeply($res->{json}, { status => JSON::PP::true(),
			  data => { run_id => $run, pipeline_id => $p, status => 'CREATED' } },
	  'execute body, field by field');
ok($res->{json}{status} && ref $res->{json}{status}, 'status is the JSON boolean true');

my ($row) = mysql("SELECT pipeline_id, customer_id, status, trigger_type, requested_by,"
		  . " started_at IS NULL, finished_at IS NULL, rows_loaded"
		  . " FROM pipeline_runs WHERE id = '$run'");
is_deeply($row, [ $p, $demo_id, 'CREATED', 'manual', $sub, 1, 1, 0 ], 'the run row');
is(mysql("SELECT last_status FROM pipelines WHERE id = '$p'"), 'CREATED',
   'pipeline last_status CREATED');
is(mysql("SELECT GROUP_CONCAT(job_status ORDER BY job_index) FROM jobs WHERE pipeline_id = '$p'"),
   'CREATED,CREATED', 'every job_status CREATED');
my $detail = http(GET => "/platform/pipeline/$p", { token => $token });
is($detail->{json}{last_status}, 'CREATED', 'the pipeline detail shows CREATED');
is_deeply([ map { $_->{job_status} } @{ $detail->{json}{jobs} || [] } ],
	  [ 'CREATED', 'CREATED' ], 'and so do its jobs');

# --- 409 while a run is CREATED or RUNNING ---------------------------------------------

my $busy = { detail => 'A run of this pipeline is already CREATED or RUNNING' };
json_response_is(execute({ pipeline_id => $p, customer_id => $demo_id }), 409, $busy,
		 'execute twice: 409');
is(runs_of($p), 1, 'no second run row');
mysql("UPDATE pipeline_runs SET status = 'RUNNING', started_at = NOW(3) WHERE id = '$run'"); # set-up
json_response_is(execute({ pipeline_id => $p, customer_id => $demo_id }), 409, $busy,
		 'execute while RUNNING: 409');
is(runs_of($p), 1, 'still one run');

# Finished (set-up): a new run may start, written with hyphens this time.
mysql("UPDATE pipeline_runs SET status = 'SUCCESS', finished_at = NOW(3), rows_loaded = 42"
      . " WHERE id = '$run'");
(my $hyphen = $p) =~ tr/_/-/;
$res = execute({ pipeline_id => uc $hyphen, customer_id => $demo_id });
json_response_is($res, 200, undef, 'execute after the run finished');
is($res->{json}{data}{pipeline_id}, $p, 'hyphenated, upper-case id answered in canonical form');
my $run2 = $res->{json}{data}{run_id};
isnt($run2, $run, 'a new run id');
is(runs_of($p), 2, 'two runs now');

# --- 403, 404, 400 ------------------------------------------------------------------------

my $before = scalar mysql('SELECT COUNT(*) FROM pipeline_runs');
json_response_is(execute({ pipeline_id => $empty, customer_id => $other_id }), 403,
		 { detail => "customer_id does not match the token's customer" },
		 'another customer_id: 403');
json_response_is(execute({ pipeline_id => $empty, customer_id => 'nobody' }), 403,
		 { detail => "customer_id does not match the token's customer" },
		 'an unknown customer_id: 403');

my $pnf = { detail => { status => JSON::PP::false(), exception_type => 'PipelineNotFound',
			traceback => 'Pipeline not found', data => undef } };
json_response_is(execute({ pipeline_id => '0f8fad5b_d9cb_469f_a165_70867728950e',
			   customer_id => $demo_id }), 404, $pnf, 'unknown pipeline: 404');
json_response_is(execute({ pipeline_id => 'not-a-pipeline', customer_id => $demo_id }),
		 404, $pnf, 'malformed pipeline id: 404');
json_response_is(execute({ pipeline_id => $q, customer_id => $demo_id }), 404, $pnf,
		 'another customer\'s pipeline: 404, as unknown');
is(runs_of($q), 0, '... and no run was made for it');

my @bad = (
	[ 'pipeline_id missing', { customer_id => $demo_id }, 'pipeline_id is required' ],
	[ 'pipeline_id a number', { pipeline_id => 7, customer_id => $demo_id },
	  'pipeline_id must be a string' ],
	[ 'pipeline_id empty', { pipeline_id => '', customer_id => $demo_id },
	  'pipeline_id must be 1 to 255 characters long' ],
	[ 'pipeline_id 256', { pipeline_id => 'p' x 256, customer_id => $demo_id },
	  'pipeline_id must be 1 to 255 characters long' ],
	[ 'customer_id missing', { pipeline_id => $p }, 'customer_id is required' ],
	[ 'customer_id null', { pipeline_id => $p, customer_id => undef },
	  'customer_id is required' ],
	[ 'customer_id 256', { pipeline_id => $p, customer_id => 'c' x 256 },
	  'customer_id must be 1 to 255 characters long' ],
	[ 'unknown field', { pipeline_id => $p, customer_id => $demo_id, force => 1 },
	  'force is not a known field' ],
);
for my $t (@bad) {
	json_response_is(execute($t->[1]), 400, { detail => $t->[2] }, "400: $t->[0]");
}
json_response_is(execute([ $p ]), 400, { detail => 'The body must be a JSON object' },
		 '400: an array body');
is(http(POST => '/platform/pipeline/execute',
	{ token => $token, body => '{"pipeline_id":', content_type => 'application/json' })
   ->{status}, 400, '400: malformed JSON');
is(execute({ pipeline_id => $p, customer_id => $demo_id }, $reader)->{status}, 403,
   'execute needs PLATFORM.WRITE');
is(http(POST => '/platform/pipeline/execute', { json => {} })->{status}, 401,
   'execute needs a token');
is(scalar mysql('SELECT COUNT(*) FROM pipeline_runs'), $before, 'no refused call made a run');

# --- all or nothing -------------------------------------------------------------------------
# Set-up: a trigger fails the last statement of the transaction (the jobs
# update); the run row and the pipeline status written before it must go too.

my $tx = pipeline($token, 'runs-transaction', 1);
# (One statement, no semicolon inside: a status the CHECK constraint refuses.)
mysql("CREATE TRIGGER sluice_test_runs_fail BEFORE UPDATE ON jobs FOR EACH ROW"
      . " SET NEW.job_status = IF(NEW.pipeline_id = '$tx', 'INJECTED', NEW.job_status)");
$trigger_made = 1;
json_response_is(execute({ pipeline_id => $tx, customer_id => $demo_id }), 500,
		 { detail => 'Internal Server Error' }, 'a failure half-way: 500');
is(runs_of($tx), 0, 'no run row is left');
is(mysql("SELECT last_status FROM pipelines WHERE id = '$tx'"), 'PENDING',
   'the pipeline status is unchanged');
mysql('DROP TRIGGER sluice_test_runs_fail');
$trigger_made = 0;
is(execute({ pipeline_id => $tx, customer_id => $demo_id })->{status}, 200,
   'and execute works once the failure is gone');

# --- concurrent executes: exactly one wins ------------------------------------------------

my $race = pipeline($token, 'runs-race', 1);
my @res = parallel_requests(clients => 8, requests => 1, method => 'POST',
			    path => '/platform/pipeline/execute',
			    opts => { token => $token,
				      json => { pipeline_id => $race, customer_id => $demo_id } });
is(scalar @res, 8, 'eight executes at once');
is(scalar(grep { $_->{status} eq '200' } @res), 1, 'exactly one is 200');
is(scalar(grep { $_->{status} eq '409' } @res), 7, 'the others are 409')
	or diag join ' ', map { $_->{status} } @res;
is(runs_of($race), 1, 'one run row');

# --- the run listing ------------------------------------------------------------------------

# Set-up: finished runs of $p in the past, plus the two from execute.
sub hex32 { join '', map { sprintf '%x', int rand 16 } 1 .. 32 }
my ($ra, $rb, $rc) = (hex32(), hex32(), hex32());
my @seed = (
	[ $ra, 'FAILED',  'schedule', '2026-01-02 03:04:05.678', '2026-01-02 03:05:00.001', 0 ],
	[ $rb, 'SUCCESS', 'manual',   '2026-02-01 00:00:00.000', '2026-02-01 00:10:00.500', 1234567 ],
	[ $rc, 'SUCCESS', 'schedule', '2026-03-01 12:00:00.250', '2026-03-01 12:30:00.000', 7 ],
);
for my $s (@seed) {
	mysql("INSERT INTO pipeline_runs (id, pipeline_id, customer_id, status, trigger_type,"
	      . " created_at, started_at, finished_at, rows_loaded) VALUES ('$s->[0]', '$p',"
	      . " '$demo_id', '$s->[1]', '$s->[2]', '$s->[3]', '$s->[3]', '$s->[4]', $s->[5])");
}
sub iso { (my $t = $_[0]) =~ s/ /T/; "${t}Z" }

$res = http(GET => "/platform/pipeline/$p/pipeline_run", { token => $reader });
json_response_is($res, 200, undef, 'list runs with PLATFORM.READ');
my $d = $res->{json}{data};
is($res->{json}{status}, JSON::PP::true(), 'status true');
is_deeply([ sort keys %{ $res->{json} } ], [ 'data', 'status' ], 'top-level fields');
is_deeply([ sort keys %$d ], [ 'pipeline_id', 'runs' ], 'data fields');
is($d->{pipeline_id}, $p, 'pipeline_id');
is_deeply([ map { $_->{run_id} } @{ $d->{runs} } ],
	  [ $run2, $run, $rc, $rb, $ra ], 'newest first');
my %by = map { $_->{run_id} => $_ } @{ $d->{runs} };
is_deeply($by{$rb}, { run_id => $rb, status => 'SUCCESS', trigger => 'manual',
			     started_at => '2026-02-01T00:00:00.000Z',
			     finished_at => '2026-02-01T00:10:00.500Z', rows_loaded => 1234567 },
	  'a finished run, field by field');
is_deeply($by{$ra}, { run_id => $ra, status => 'FAILED', trigger => 'schedule',
			     started_at => iso($seed[0][3]), finished_at => iso($seed[0][4]),
			     rows_loaded => 0 }, 'a failed scheduled run');
is_deeply($by{$run2}, { run_id => $run2, status => 'CREATED', trigger => 'manual',
			started_at => undef, finished_at => undef, rows_loaded => 0 },
	  'a CREATED run: times null');
is($by{$run}{status}, 'SUCCESS', 'the finished execute run');
iso_time_ok($by{$run}{started_at}, 'its started_at', 120);
is($by{$run}{rows_loaded}, 42, 'its rows_loaded');
like($res->{content}, qr/"rows_loaded":1234567\b/, 'rows_loaded is a JSON number');

# limit and offset
my @all = map { $_->{run_id} } @{ $d->{runs} };
sub page {
	my ($q) = @_;
	my $x = http(GET => "/platform/pipeline/$p/pipeline_run?$q", { token => $token });
	return [ map { $_->{run_id} } @{ $x->{json}{data}{runs} || [] } ];
}
is_deeply(page('limit=2'), [ @all[0, 1] ], 'limit=2');
is_deeply(page('limit=2&offset=2'), [ @all[2, 3] ], 'limit=2&offset=2');
is_deeply(page('offset=4'), [ $all[4] ], 'offset=4');
is_deeply(page('offset=5'), [], 'offset past the end: empty');
is_deeply(page('limit=1000'), \@all, 'limit=1000 (the maximum)');
is_deeply(page('limit=1'), [ $all[0] ], 'limit=1 (the minimum)');
is_deeply(page('offset=1000000000'), [], 'offset at its maximum');
my $lim = { detail => 'limit must be an integer from 1 to 1000' };
my $off = { detail => 'offset must be an integer from 0 to 1000000000' };
my $limt = { detail => 'limit must be an integer' };
my $offt = { detail => 'offset must be an integer' };
for my $t ([ 'limit=1001', $lim ], [ 'limit=0', $lim ], [ 'limit=-1', $lim ],
	   [ 'limit=ten', $limt ], [ 'limit=', $limt ], [ 'limit=1.5', $limt ],
	   [ 'offset=-1', $off ], [ 'offset=x', $offt ], [ 'offset=1000000001', $off ],
	   [ 'page=2', { detail => 'page is not a known query parameter' } ],
	   [ 'limit=2&limit=3', { detail => 'limit is given more than once' } ]) {
	json_response_is(http(GET => "/platform/pipeline/$p/pipeline_run?$t->[0]",
			      { token => $token }), 400, $t->[1], "400: $t->[0]");
}

json_response_is(http(GET => "/platform/pipeline/$empty/pipeline_run", { token => $token }),
		 200, { status => JSON::PP::true(), data => { pipeline_id => $empty, runs => [] } },
		 'a pipeline never executed: no runs');
(my $hp = $p) =~ tr/_/-/;
is(http(GET => "/platform/pipeline/$hp/pipeline_run", { token => $token })->{json}{data}{pipeline_id},
   $p, 'the listing accepts the hyphenated id');

json_response_is(http(GET => "/platform/pipeline/$q/pipeline_run", { token => $token }), 404,
		 $pnf, 'list another customer\'s runs: 404');
json_response_is(http(GET => '/platform/pipeline/0f8fad5b_d9cb_469f_a165_70867728950e/pipeline_run',
		      { token => $token }), 404, $pnf, 'list runs of an unknown pipeline');
json_response_is(http(GET => '/platform/pipeline/nope/pipeline_run', { token => $token }), 404,
		 $pnf, 'list runs of a malformed id');
is(http(GET => "/platform/pipeline/$p/pipeline_run")->{status}, 401, 'listing needs a token');
my $o = http(GET => "/platform/pipeline/$q/pipeline_run", { token => $other });
is($o->{status}, 200, 'the owner sees its own runs');
is_deeply($o->{json}{data}{runs}, [], '... none, since nothing was executed for it');

done_testing();
