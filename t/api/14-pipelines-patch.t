#!/usr/bin/perl
# PATCH /platform/pipeline/{id}: each setting changed and read back through
# GET (name, description, cron and its next firing, cron_timezone, retries,
# run_timeout_s, a job's input, output, name and memory); the bounds at max
# and max + 1 and the other refusals naming their field, with nothing
# written; the job changes refused because they would orphan the job's
# state; 409 while a run is in progress; 404 for unknown, malformed and
# another customer's ids, with nothing changed; 401/403; unknown query
# parameters.

use strict;
use warnings;

use Test::More;
use Time::Local qw(timegm_modern);

use SluiceTest;
use JobsFixture;
use RunnerFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $cid = env('SLUICE_DEMO_CUSTOMER_ID');
my $NOT_FOUND = { detail => 'Pipeline not found' };
my ($other, $other_id) = customer_token('patch-other-14');

sub patch {
	my ($id, $body, %o) = @_;
	return http(PATCH => "/platform/pipeline/$id" . ($o{query} // ''),
		    { token => $o{token} // $token, json => $body });
}

sub detail {
	my ($id) = @_;
	my $res = http(GET => "/platform/pipeline/$id", { token => $token });
	is($res->{status}, 200, "GET $id") or diag describe($res);
	return $res->{json};
}

sub next_run_at {
	my ($id) = @_;
	return scalar mysql("SELECT IFNULL(DATE_FORMAT(next_run_at, '%Y-%m-%dT%H:%i:%sZ'), 'NULL') "
			    . "FROM pipelines WHERE id = " . sql_quote($id));
}

# The next HH:MM UTC after now, as next_run_at() writes it.
sub next_utc {
	my ($h, $m) = @_;
	my @t = gmtime(time + 60);
	my $n = timegm_modern(0, $m, $h, $t[3], $t[4], $t[5] + 1900);
	$n += 86400 if $n <= time;
	my @n = gmtime($n);
	return sprintf '%04d-%02d-%02dT%02d:%02d:00Z', $n[5] + 1900, $n[4] + 1, $n[3], $h, $m;
}

# A 400 whose validation_errors hold one error on $field with $code.
sub refused {
	my ($res, $field, $code, $name) = @_;
	is($res->{status}, 400, "$name: 400") or diag describe($res);
	my $d = $res->{json}{detail} // {};
	is($d->{error}, 'ValidationError', "$name: ValidationError");
	is($d->{message}, 'Pipeline validation failed', "$name: the message");
	my @hit = grep { $_->{field} eq $field && $_->{error_code} eq $code }
		@{ $d->{validation_errors} || [] };
	ok(@hit, "$name: $code on $field") or diag explain $d;
	return $hit[0];
}

sub job {
	my ($connector, %in) = @_;
	my %base = (jdbc => { connector => 'jdbc', plugin => 'mysql', table_name => 'shop.orders' },
		    singer => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
				config => { generate => 3, note => 'kept' } },
		    file_storage => { connector => 'file_storage', plugin => 'local', prefix => 'in/' });
	my $out = delete $in{table} // "t_$connector";
	return { input => { %{ $base{$connector} }, %in },
		 output => { plugin => 'mariadb', raw => { table_name => $out, table_schema => 'raw14' } } };
}

my $created = make_pipeline(name => 'patch-14', cron => '30 4 * * *', jobs => [
	job('singer'),
	job('jdbc', load_type => 'incremental', incremental_column_name => 'updated_at',
	    incremental_column_type => 'datetime', column_include_list => [ 'id', 'updated_at' ]),
	job('jdbc', table => 't_full'),
	job('file_storage') ]);
my $p = $created->{pipeline_id};
my @j = map { $_->{job_id} } @{ $created->{jobs} };
is(next_run_at($p), next_utc(4, 30), 'set-up: next firing 04:30 UTC');

# --- the pipeline's settings, one by one -------------------------------------------------

my %changes = (name => 'renamed', description => 'now described', retries => 3,
	       run_timeout_s => 600);
for my $f (sort keys %changes) {
	my $res = patch($p, { $f => $changes{$f} });
	is($res->{status}, 200, "PATCH $f") or diag describe($res);
	my $d = detail($p);
	is($d->{$f}, $changes{$f}, "GET shows the new $f");
	is_deeply($res->{json}, $d, "the answer to PATCH $f is the pipeline as GET shows it");
}
my $d = detail($p);
is($d->{cron}, '30 4 * * *', 'fields not given stay: cron');
is($d->{name}, 'renamed', '... and the name after later PATCHes');

my $res = patch($p, { cron => '15 3 * * *' });
is($res->{status}, 200, 'PATCH cron') or diag describe($res);
is(detail($p)->{cron}, '15 3 * * *', 'GET shows the new cron');
is(next_run_at($p), next_utc(3, 15), 'the next firing moved to the new cron\'s');

$res = patch($p, { cron_timezone => 'Etc/GMT-5' });
is($res->{status}, 200, 'PATCH cron_timezone') or diag describe($res);
is(detail($p)->{cron_timezone}, 'Etc/GMT-5', 'GET shows the zone');
is(next_run_at($p), next_utc(22, 15), 'the next firing is 03:15 in UTC+5: 22:15 UTC');

$res = patch($p, { cron_timezone => undef, run_timeout_s => undef });
is($res->{status}, 200, 'null clears cron_timezone and run_timeout_s') or diag describe($res);
$d = detail($p);
ok(!exists $d->{cron_timezone}, 'cron_timezone gone: UTC');
ok(!exists $d->{run_timeout_s}, 'run_timeout_s gone: the server\'s limit');
is(next_run_at($p), next_utc(3, 15), 'back to 03:15 UTC');

$res = patch($p, { retries => 5, run_timeout_s => 604800, name => 'n' x 255 });
is($res->{status}, 200, 'retries, run_timeout_s and name at their maximum') or diag describe($res);
$d = detail($p);
is_deeply([ @$d{qw(retries run_timeout_s name)} ], [ 5, 604800, 'n' x 255 ], 'GET shows them');
$res = patch($p, { retries => 0, run_timeout_s => 5, name => 'renamed' });
is($res->{status}, 200, 'retries and run_timeout_s at their minimum') or diag describe($res);
$d = detail($p);
ok(!exists $d->{retries}, 'retries 0: not shown, as after a create without retries');
is($d->{run_timeout_s}, 5, 'run_timeout_s 5');

$res = patch($p, { cron => undef });
is($res->{status}, 200, 'cron null: manual runs only') or diag describe($res);
is(detail($p)->{cron}, undef, 'GET cron null');
is(next_run_at($p), 'NULL', 'no next firing');
is(patch($p, { cron => '30 4 * * *' })->{status}, 200, 'cron again');
is(next_run_at($p), next_utc(4, 30), 'the next firing is back');

# Paused: a new cron waits for resume.
is(http(POST => '/platform/pipeline/pause', { token => $token,
	json => { customer_id => $cid, pipeline_id => $p } })->{status}, 200, 'pause');
is(patch($p, { cron => '0 1 * * *' })->{status}, 200, 'PATCH cron of a paused pipeline');
is(next_run_at($p), 'NULL', 'paused: still no next firing');
is(http(POST => '/platform/pipeline/resume', { token => $token,
	json => { customer_id => $cid, pipeline_id => $p } })->{status}, 200, 'resume');
is(next_run_at($p), next_utc(1, 0), 'resume fires on the patched cron');

# --- refusals of the body: 400 naming the field, nothing written ----------------------------

my $before = detail($p);
my $next_before = next_run_at($p);
refused(patch($p, { retries => 6 }), 'retries', 'OUT_OF_RANGE', 'retries 6');
refused(patch($p, { retries => -1 }), 'retries', 'OUT_OF_RANGE', 'retries -1');
refused(patch($p, { run_timeout_s => 604801 }), 'run_timeout_s', 'OUT_OF_RANGE', 'run_timeout_s 604801');
refused(patch($p, { run_timeout_s => 4 }), 'run_timeout_s', 'OUT_OF_RANGE', 'run_timeout_s 4');
refused(patch($p, { name => 'n' x 256 }), 'name', 'OUT_OF_RANGE', 'name of 256');
refused(patch($p, { description => 'd' x 4097 }), 'description', 'OUT_OF_RANGE', 'description of 4097');
refused(patch($p, { retries => '2' }), 'retries', 'INVALID_TYPE', 'retries a string');
refused(patch($p, { name => undef }), 'name', 'INVALID_TYPE', 'name null');
refused(patch($p, { retries => undef }), 'retries', 'INVALID_TYPE', 'retries null');
my $e = refused(patch($p, { cron => '61 * * * *' }), 'cron', 'INVALID_CRON', 'bad cron');
like($e->{message}, qr/^cron is not valid: /, 'the cron message as at create');
refused(patch($p, { cron => '0 0 30 2 *' }), 'cron', 'INVALID_CRON', 'a cron that never fires');
refused(patch($p, { cron_timezone => 'Mars/Olympus' }), 'cron_timezone', 'INVALID_TIMEZONE',
	'unknown zone');
$e = refused(patch($p, { name => 'x', colour => 'red' }), 'colour', 'UNKNOWN_FIELD', 'unknown field');
is($e->{message}, 'colour is not a known field', 'the message names it');
refused(patch($p, { colour => 'red' }), 'colour', 'UNKNOWN_FIELD', 'only an unknown field');
refused(patch($p, {}), 'body', 'NOTHING_TO_CHANGE', 'an empty body');
refused(http(PATCH => "/platform/pipeline/$p", { token => $token, body => '[1]',
	content_type => 'application/json' }), 'body', 'INVALID_TYPE', 'a body that is not an object');
refused(patch($p, { jobs => [] }), 'jobs', 'OUT_OF_RANGE', 'jobs empty');
is_deeply(detail($p), $before, 'the refused PATCHes changed nothing');
is(next_run_at($p), $next_before, '... nor the next firing');

json_response_is(patch($p, { name => 'q' }, query => '?force=true'), 400,
		 { detail => 'force is not a known query parameter' }, 'an unknown query parameter');
is(detail($p)->{name}, 'renamed', 'not applied');

# --- a job's input and output ----------------------------------------------------------------

# Singer: a merge patch of the input; settings not named stay.
$res = patch($p, { jobs => [ { job_id => $j[0], input => { config => { generate => 7 },
	column_include_list => [ 'a', 'b' ] } } ] });
is($res->{status}, 200, 'singer job: config and column_include_list') or diag describe($res);
$d = detail($p);
is_deeply($d->{jobs}[0]{input}, { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
	config => { generate => 7, note => 'kept' }, column_include_list => [ 'a', 'b' ] },
	'GET: config merged, the list set, the rest kept');
is_deeply($res->{json}, $d, 'the answer is the pipeline as GET shows it');
$res = patch($p, { jobs => [ { job_id => uuid_hyphens($j[0]), input => { column_include_list => undef,
	config => { note => undef } } } ] });
is($res->{status}, 200, 'null removes a key (by the hyphenated job id)') or diag describe($res);
is_deeply(detail($p)->{jobs}[0]{input}, { connector => 'singer', plugin => 'tap-fixture',
	table_name => 'items', config => { generate => 7 } }, 'GET: list and config.note gone');

$res = patch($p, { jobs => [ { job_id => $j[1], name => 'orders job', memory_allocated_mb => 4096,
	input => { column_include_list => [ 'id', 'updated_at', 'total' ],
		   incremental_column_type => 'DATETIME' } } ] });
is($res->{status}, 200, 'jdbc incremental: the list, name, memory; the same column type in '
   . 'another case is no change') or diag describe($res);
$d = detail($p);
is_deeply($d->{jobs}[1]{input}{column_include_list}, [ 'id', 'updated_at', 'total' ], 'GET: the list');
is($d->{jobs}[1]{input}{incremental_column_type}, 'datetime', 'the stored spelling stays');
is($d->{jobs}[1]{memory_allocated_mb}, 4096, 'GET: memory');
is(scalar mysql('SELECT name FROM jobs WHERE id = ' . sql_quote($j[1])), 'orders job', 'the job name');
is($d->{jobs}[2]{memory_allocated_mb}, undef, 'other jobs untouched');

# A jdbc full_load job extracts everything each run: another source table or
# destination orphans nothing.
$res = patch($p, { jobs => [ { job_id => $j[2], input => { table_name => 'shop.orders_v2', plugin => 'mariadb' },
	output => { raw => { table_name => 't_full_v2' } } } ] });
is($res->{status}, 200, 'jdbc full_load: source and destination table may change') or diag describe($res);
$d = detail($p);
is($d->{jobs}[2]{input}{table_name}, 'shop.orders_v2', 'GET: table_name');
is($d->{jobs}[2]{input}{plugin}, 'mariadb', 'GET: plugin');
is_deeply($d->{jobs}[2]{output}, { plugin => 'mariadb', raw => { table_name => 't_full_v2',
	table_schema => 'raw14' } }, 'GET: output merged');

# Another connection of the caller (a rotated credential): allowed for any job.
my $conn = '0d0d0d0d-1111-4222-8333-444444444414';
mysql("INSERT IGNORE INTO connections (id, customer_id, name, plugin, host, port, database_name, "
      . "user_name, password_enc) VALUES ('$conn', " . sql_quote($cid) . ", 'conn-14', 'mysql', "
      . "'db', 3306, 'd', 'u', REPEAT('x', 40))");
$res = patch($p, { jobs => [ { job_id => $j[1], input => { connection_id => $conn } } ] });
is($res->{status}, 200, 'an incremental job moves to another connection of the caller')
	or diag describe($res);
is(detail($p)->{jobs}[1]{input}{connection_id}, $conn, 'GET: connection_id');
is(scalar mysql('SELECT connection_id FROM jobs WHERE id = ' . sql_quote($j[1])), $conn,
   'the job references it');

# Refused: what would orphan state, and what create refuses.
$before = detail($p);
my @unsafe = (
	[ 'singer table_name', { job_id => $j[0], input => { table_name => 'other' } },
	  'jobs[0].input.table_name', 'UNSAFE_CHANGE' ],
	[ 'singer plugin', { job_id => $j[0], input => { plugin => 'tap-other' } },
	  'jobs[0].input.plugin', 'UNSAFE_CHANGE' ],
	[ 'file_storage prefix', { job_id => $j[3], input => { prefix => 'elsewhere/' } },
	  'jobs[0].input.prefix', 'UNSAFE_CHANGE' ],
	[ 'singer destination', { job_id => $j[0], output => { raw => { table_name => 'moved' } } },
	  'jobs[0].output.raw.table_name', 'UNSAFE_CHANGE' ],
	[ 'incremental destination schema', { job_id => $j[1], output => { raw => { table_schema => 'raw15' } } },
	  'jobs[0].output.raw.table_schema', 'UNSAFE_CHANGE' ],
	[ 'incremental source table', { job_id => $j[1], input => { table_name => 'shop.other' } },
	  'jobs[0].input.table_name', 'UNSAFE_CHANGE' ],
	[ 'connector', { job_id => $j[2], input => { connector => 'singer', plugin => 'tap-x' } },
	  'jobs[0].input.connector', 'UNSAFE_CHANGE' ],
	[ 'load_type', { job_id => $j[1], input => { load_type => 'full_load',
	  incremental_column_name => undef, incremental_column_type => undef } },
	  'jobs[0].input.load_type', 'USE_SYNC_MODE' ],
	[ 'incremental column', { job_id => $j[1], input => { incremental_column_name => 'created_at' } },
	  'jobs[0].input.incremental_column_name', 'USE_SYNC_MODE' ],
	[ 'primary_keys', { job_id => $j[1], input => { primary_keys => [ 'id' ] } },
	  'jobs[0].input.primary_keys', 'USE_SYNC_MODE' ],
	[ 'a list without the incremental column', { job_id => $j[1], input => { column_include_list =>
	  [ 'id', 'total' ] } }, 'jobs[0].input.column_include_list', 'COLUMN_INCLUDE_RISK' ],
	[ 'the bookmark', { job_id => $j[1], input => { incremental_column_value => '2024-01-01' } },
	  'jobs[0].input.incremental_column_value', 'INVALID_FIELD' ],
	[ 'a jdbc plugin create refuses', { job_id => $j[2], input => { plugin => 'db2' } },
	  'jobs[0].input.plugin', 'INVALID_PLUGIN' ],
	[ 'a type not of the kind', { job_id => $j[1], input => { incremental_column_type => 'datetime2' } },
	  'jobs[0].input.incremental_column_type', 'INVALID_INCREMENTAL_COLUMN_TYPE' ],
	[ 'a repeated column', { job_id => $j[1], input => { column_include_list => [ 'a', 'a' ] } },
	  'jobs[0].input.column_include_list', 'INVALID_VALUE' ],
	[ 'a reserved schema', { job_id => $j[2], output => { raw => { table_schema => 'mysql' } } },
	  'jobs[0].output.raw.table_schema', 'RESERVED_SCHEMA' ],
	[ 'a prefix leaving the root', { job_id => $j[3], input => { prefix => '../x/' } },
	  'jobs[0].input.prefix', 'INVALID_VALUE' ],
	[ 'another customer\'s connection', { job_id => $j[2], input => { connection_id =>
	  '0e0e0e0e-1111-4222-8333-444444444414' } }, 'jobs[0].input.connection_id', 'UNKNOWN_CONNECTION' ],
	[ 'the output plugin', { job_id => $j[2], output => { plugin => 'snowflake' } },
	  'jobs[0].output.plugin', 'INVALID_PLUGIN' ],
	[ 'removing a required key', { job_id => $j[2], input => { table_name => undef } },
	  'jobs[0].input.table_name', 'MISSING_FIELD' ],
	[ 'memory above memory_max_mb', { job_id => $j[2], memory_allocated_mb => 12001 },
	  'jobs[0].memory_allocated_mb', 'OUT_OF_RANGE' ],
	[ 'an unknown job field', { job_id => $j[2], sync => 1 }, 'jobs[0].sync', 'UNKNOWN_FIELD' ],
	[ 'a job id of this pipeline that does not exist', { job_id => "${p}_9", name => 'x' },
	  'jobs[0].job_id', 'UNKNOWN_JOB' ],
	[ 'a job of another pipeline', { job_id => '01234567_89ab_4cde_8f01_23456789abcd_0', name => 'x' },
	  'jobs[0].job_id', 'UNKNOWN_JOB' ],
	[ 'a job without job_id', { name => 'x' }, 'jobs[0].job_id', 'MISSING_FIELD' ],
	[ 'a job with nothing to change', { job_id => $j[2] }, 'jobs[0]', 'NOTHING_TO_CHANGE' ],
);
mysql("INSERT IGNORE INTO connections (id, customer_id, name, plugin, host, port, database_name, "
      . "user_name, password_enc) VALUES ('0e0e0e0e-1111-4222-8333-444444444414', "
      . sql_quote($other_id) . ", 'other14', 'mysql', 'h', 3306, 'd', 'u', REPEAT('x', 40))");
for my $u (@unsafe) {
	my ($name, $job, $field, $code) = @$u;
	refused(patch($p, { name => 'not applied', jobs => [ $job ] }), $field, $code, $name);
}
refused(patch($p, { jobs => [ { job_id => $j[2], name => 'a' }, { job_id => $j[2], name => 'b' } ] }),
	'jobs[1].job_id', 'DUPLICATE_JOB', 'the same job twice');
is_deeply(detail($p), $before, 'none of the refused changes was written, not even the valid name');

# --- 409 while a run is in progress ------------------------------------------------------------

my $tapfile = tap_pid_file();
my $busy = make_pipeline(name => 'patch-busy', jobs => [
	tap_job(config => { generate => 100, sleep_ms => 1000, pid_file => $tapfile }) ]);
my $bp = $busy->{pipeline_id};
my $run = execute_run($bp);
ok(wait_until(30, sub { -s $tapfile }), 'set-up: the run is RUNNING');
$before = detail($bp);
json_response_is(patch($bp, { name => 'during the run', retries => 2 }), 409,
	{ detail => 'Pipeline has a run in progress; change it after the run ends, so that no run '
		    . 'works with half-changed settings' }, 'PATCH during a run: 409');
is_deeply(detail($bp), $before, 'nothing changed');
refused(patch($bp, { retries => 9 }), 'retries', 'OUT_OF_RANGE',
	'a body refused during a run is still a 400');
is(http(POST => "/platform/pipeline_run/$run/cancel", { token => $token })->{status}, 200,
   'set-up: cancel the run');
is(wait_run($run, 30)->{status}, 'FAILED', 'the run ended');
$res = patch($bp, { name => 'after the run', retries => 2 });
is($res->{status}, 200, 'PATCH after the run: 200') or diag describe($res);
is(detail($bp)->{retries}, 2, 'applied');

# --- PATCH racing execute: the run has the settings from before or after, never a mix ----------
#
# The runner's first log line says which retries the run was given
# ("attempt 1 of retries + 1").  A PATCH that won the pipeline's lock
# answers 200 and the run, created after it, has the new value; one that
# came second finds the run and answers 409, changing nothing.

my $race = make_pipeline(name => 'patch-race', jobs => [ tap_job(config => { generate => 1 }) ]);
my $rp = $race->{pipeline_id};
my $retries = 0;
for my $i (1 .. 4) {
	my $pa = start_requests(path => "/platform/pipeline/$rp", method => 'PATCH', requests => 1,
		opts => { token => $token, json => { retries => $i, run_timeout_s => 100 + $i } });
	my $ex = start_requests(path => '/platform/pipeline/execute', method => 'POST', requests => 1,
		opts => { token => $token, json => { pipeline_id => $rp, customer_id => $cid } });
	my ($pr) = $pa->finish;
	my ($er) = $ex->finish;
	is($er->{status}, 200, "round $i: execute 200") or diag explain $er;
	ok($pr->{status} == 200 || $pr->{status} == 409, "round $i: PATCH 200 or 409")
		or diag explain $pr;
	$retries = $i if $pr->{status} == 200;
	my $run = $er->{json}{data}{run_id};
	my $row = wait_run($run, 60);
	is($row && $row->{status}, 'SUCCESS', "round $i: the run ended");
	my ($claimed) = grep { /run claimed by/ } log_messages($run);
	like($claimed // '', qr/attempt 1 of \Q@{[ $retries + 1 ]}\E\)/,
	     "round $i: the run was given retries $retries (PATCH $pr->{status})");
	my $d = detail($rp);
	is_deeply([ $d->{retries} // 0, $d->{run_timeout_s} ], [ $retries, $retries ? 100 + $retries : undef ],
		  "round $i: both fields, or neither, were written");
}

# --- other customers, unknown ids, authentication ---------------------------------------------

$before = detail($p);
json_response_is(patch($p, { name => 'stolen' }, token => $other), 404, $NOT_FOUND,
		 'another customer\'s pipeline: 404');
json_response_is(patch($p, { name => 'stolen', jobs => [ { job_id => $j[0], name => 'x' } ] },
		 token => $other), 404, $NOT_FOUND, '... also with jobs');
json_response_is(patch('01234567_89ab_4cde_8f01_23456789abcd', { name => 'x' }), 404, $NOT_FOUND,
		 'unknown id: 404 the same');
json_response_is(patch('nope', { name => 'x' }), 404, $NOT_FOUND, 'malformed id: 404');
is_deeply(detail($p), $before, 'nothing changed');
$res = patch(uuid_hyphens($p), { description => 'by hyphens' });
is($res->{status}, 200, 'the hyphenated id') or diag describe($res);
is($res->{json}{pipeline_id}, $p, 'answered with the underscore id');

json_response_is(http(PATCH => "/platform/pipeline/$p", { json => { name => 'x' } }), 401, undef,
		 'without a token: 401');
json_response_is(patch($p, { name => 'x' }, token => token(customer => 'demo',
		 permissions => 'PLATFORM.READ')), 403, undef, 'without PLATFORM.WRITE: 403');
is(detail($p)->{name}, 'renamed', 'not applied');

done_testing;
