#!/usr/bin/perl
# PUT /platform/pipeline/{id}/memory and PUT /platform/jobs/{jobId}/memory:
# the bounds of amount (1, max, max + 1, 0), the exact bodies, hyphenated
# ids answered with underscores, one transaction over the pipeline and its
# jobs, and customer isolation.

use strict;
use warnings;

use JSON::PP ();
use Test::More;

use JobsFixture;
use SluiceTest;

my $MAX = 12000;    # memory_max_mb of the test stack (the default)
my ($token) = customer_token('demo');
my ($other) = customer_token('jobs-memory-other');

my $p = seed_pipeline(token => $token, jobs => [ {}, { connector => 'singer' }, {} ]);
my $pid = $p->{pipeline_id};
my ($j0, $j1) = @{ $p->{job_ids} };

sub put_pipeline {
	my ($id, $body, $tok) = @_;
	return http(PUT => "/platform/pipeline/$id/memory",
		{ token => $tok // $token, json => $body });
}

sub put_job {
	my ($id, $body, $tok) = @_;
	return http(PUT => "/platform/jobs/$id/memory",
		{ token => $tok // $token, json => $body });
}

sub memory_of {
	my ($table, $id) = @_;
	return scalar mysql("SELECT IFNULL(memory_allocated_mb, 'NULL') FROM $table "
		. 'WHERE id = ' . sql_quote($id));
}

# --- pipeline: success at both bounds, hyphens in, underscores out ---------

for my $mb (1, 4096, $MAX) {
	my $res = put_pipeline(uuid_hyphens($pid), { amount => $mb });
	json_response_is($res, 200, undef, "pipeline memory $mb");
	is($res->{json}{status}, JSON::PP::true, "$mb: status true");
	is($res->{json}{data}{pipeline_id}, $pid, "$mb: pipeline_id with underscores");
	is($res->{json}{data}{memory_mb}, $mb, "$mb: memory_mb");
	like($res->{json}{data}{message}, qr/\b$mb MB\b/, "$mb: message names the amount");
	is_deeply([ sort keys %{ $res->{json}{data} } ],
		[qw(memory_mb message pipeline_id)], "$mb: data fields");
	is(memory_of('pipelines', $pid), $mb, "$mb: pipelines.memory_allocated_mb");
	is(memory_of('jobs', $_), $mb, "$mb: $_ memory_allocated_mb")
		for @{ $p->{job_ids} };
}

# --- pipeline: amount errors, exact body, nothing written --------------------

my $res = put_pipeline($pid, { amount => $MAX + 1 });
is($res->{status}, 400, 'max + 1: 400');
is_deeply([ sort keys %{ $res->{json} } ], [qw(message statusCode)], 'max + 1: body fields');
is($res->{json}{statusCode}, 400, 'max + 1: statusCode 400');
like($res->{json}{message}, qr/12000/, 'max + 1: message says the maximum');

for my $case (
	[ 'zero',     { amount => 0 },        qr/amount must be an integer from 1 to 12000/ ],
	[ 'negative', { amount => -5 },       qr/amount must be an integer from 1 to 12000/ ],
	[ 'missing',  {},                     qr/amount is required/ ],
	[ 'null',     { amount => undef },    qr/amount is required/ ],
	[ 'string',   { amount => '4096' },   qr/amount must be an integer/ ],
	[ 'fraction', { amount => 4096.5 },   qr/amount must be an integer/ ],
	[ 'boolean',  { amount => JSON::PP::true }, qr/amount must be an integer/ ],
	[ 'huge',     { amount => 99999999999999 }, qr/12000/ ],
	[ 'unknown field', { amount => 10, mb => 10 }, qr/\bmb is not a known field/ ],
) {
	my ($name, $body, $re) = @$case;
	$res = put_pipeline($pid, $body);
	is($res->{status}, 400, "$name: 400");
	is($res->{json}{statusCode}, 400, "$name: statusCode");
	like($res->{json}{message} // '', $re, "$name: message");
	is(memory_of('pipelines', $pid), $MAX, "$name: nothing written");
}
$res = http(PUT => "/platform/pipeline/$pid/memory", { token => $token,
	body => '[1]', content_type => 'application/json' });
is($res->{status}, 400, 'array body: 400');
is(memory_of('pipelines', $pid), $MAX, 'array body: nothing written');

# --- pipeline: unknown, malformed, another customer's ------------------------

my $notfound = { detail => { status => JSON::PP::false,
	exception_type => 'PipelineNotFound', traceback => 'Pipeline not found',
	data => undef } };
json_response_is(put_pipeline('3f9c2a10_5b7e_4d21_9a0c_12ab34cd56ef', { amount => 10 }),
	404, $notfound, 'unknown pipeline');
json_response_is(put_pipeline('not-a-uuid', { amount => 10 }), 404, $notfound,
	'malformed pipeline id');
json_response_is(put_pipeline($pid, { amount => 10 }, $other), 404, $notfound,
	"another customer's pipeline");
is(memory_of('pipelines', $pid), $MAX, "another customer's: nothing written");

# --- job --------------------------------------------------------------------

for my $mb (1, $MAX) {
	$res = put_job(uuid_hyphens($j1), { amount => $mb });
	json_response_is($res, 200, undef, "job memory $mb");
	is_deeply({ %{ $res->{json}{data} }, message => 'm' },
		{ message => 'm', pipeline_id => $pid, job_id => $j1, memory_mb => $mb },
		"$mb: data");
	is($res->{json}{status}, JSON::PP::true, "$mb: status true");
	is(memory_of('jobs', $j1), $mb, "$mb: the job's memory");
}
put_job($j1, { amount => 100 });
is(memory_of('jobs', $j0), $MAX, 'other jobs of the pipeline keep theirs');
is(memory_of('pipelines', $pid), $MAX, 'the pipeline keeps its');

$res = put_job($j1, { amount => $MAX + 1 });
is($res->{status}, 400, 'job max + 1: 400');
is_deeply([ sort keys %{ $res->{json} } ], [qw(message statusCode)], 'job max + 1: body');
like($res->{json}{message}, qr/12000/, 'job max + 1: message says the maximum');
$res = put_job($j1, { amount => 0 });
is($res->{status}, 400, 'job 0: 400');
is(memory_of('jobs', $j1), 100, 'job: nothing written by the 400s');

my $job_nf = { detail => { status => JSON::PP::false, exception_type => 'JobNotFound',
	traceback => 'Job not found', data => undef } };
json_response_is(put_job("${pid}_7", { amount => 10 }), 404, $job_nf, 'unknown job index');
json_response_is(put_job('3f9c2a10_5b7e_4d21_9a0c_12ab34cd56ef_0', { amount => 10 }),
	404, $job_nf, 'unknown job');
json_response_is(put_job("${pid}_01", { amount => 10 }), 404, $job_nf, 'malformed job id');
json_response_is(put_job($j1, { amount => 10 }, $other), 404, $job_nf,
	"another customer's job");
is(memory_of('jobs', $j1), 100, "another customer's: nothing written");

# GET shows the job's memory once it is set.
is(job_get($token, $j1)->{memory_allocated_mb}, 100, 'GET: the job shows its memory');

# --- one transaction: a failure on the jobs leaves the pipeline unchanged ---------

mysql(q{CREATE TRIGGER jobs_test_memory_fail BEFORE UPDATE ON jobs
	FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'test failure'});
$res = put_pipeline($pid, { amount => 777 });
mysql('DROP TRIGGER jobs_test_memory_fail');
json_response_is($res, 500, { detail => 'Internal Server Error' },
	'database failure on the jobs update');
is(memory_of('pipelines', $pid), $MAX, 'failure: the pipeline update rolled back');
is(memory_of('jobs', $j0), $MAX, 'failure: jobs unchanged');

# --- permissions ----------------------------------------------------------------

$res = http(PUT => "/platform/jobs/$j1/memory",
	{ token => token(permissions => 'PLATFORM.READ'), json => { amount => 5 } });
is($res->{status}, 403, 'PLATFORM.READ only: 403');
$res = http(PUT => "/platform/jobs/$j1/memory", { json => { amount => 5 } });
is($res->{status}, 401, 'no token: 401');

done_testing;
