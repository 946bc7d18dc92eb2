#!/usr/bin/perl
# GET /platform/pipelines and GET /platform/pipeline/{id}: the list (empty,
# ordered, jobs by index, memory only when set, the bookmark from the job
# state), the detail with paused and tasks, hyphenated ids, customer
# isolation, and the list's 500 body when the database fails.

use strict;
use warnings;

use Test::More;

use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $NOT_FOUND = { detail => 'Pipeline not found' };

# A customer of its own (new on every run), so the list holds exactly what
# this file makes.
my $run = sprintf '%04x%08x', $$ & 0xffff, time & 0xffffffff;
my $cust = "0d0d0d0d-1111-4222-8333-$run";
sub jwt_for {
	my ($id, $name, @perms) = @_;
	return craft_jwt(undef, { sub => "$name\@example.com", customer_id => $id,
		customer_name => $name, permissions => [ @perms ? @perms : qw(PLATFORM.READ PLATFORM.WRITE) ],
		iat => time, exp => time + 3600 });
}
my $mine = jwt_for($cust, "reader-11-$run");
my $other = jwt_for("0e0e0e0e-1111-4222-8333-$run", "other-11-$run");

sub job {
	my (%in) = @_;
	my $mem = delete $in{memory};
	return { input => { connector => 'jdbc', plugin => 'mysql', table_name => 'shop.orders', %in },
		 output => { plugin => 'mariadb', raw => { table_name => 'orders', table_schema => 'raw' } },
		 defined $mem ? (memory_allocated_mb => $mem) : () };
}

sub create {
	my ($tok, $body) = @_;
	my $res = http(POST => '/platform/pipeline', { token => $tok, json => $body });
	is($res->{status}, 201, "create $body->{name}") or diag describe($res);
	return $res->{json};
}

# --- empty --------------------------------------------------------------------

json_response_is(http(GET => '/platform/pipelines', { token => $mine }), 200, [],
		 'a customer without pipelines: []');

# --- two pipelines --------------------------------------------------------------
# A schedule that cannot fire while the test runs: a run would change
# last_status from PENDING to RUNNING under the assertions below.

my $a = create($mine, { name => 'first', description => 'A', cron => '30 4 1 1 *', jobs => [
	job(load_type => 'incremental', incremental_column_name => 'updated_at',
	    incremental_column_type => 'datetime', column_include_list => [ 'id', 'updated_at' ]),
	job(table_name => 'shop.items', memory => 2048),
	{ input => { connector => 'singer', plugin => 'tap-mysql', table_name => 'orders' },
	  output => { plugin => 'mariadb', raw => { table_name => 'o2', table_schema => 'raw' } } },
] });
my $b = create($mine, { name => 'second', cron => undef, jobs => [ job() ] });
my $theirs = create($other, { name => 'theirs', jobs => [ job() ] });

# Set-up: a bookmark as a finished run would leave it, and a singer state.
mysql("UPDATE job_state SET incremental_column_value = '2026-11-01T00:00:00Z' "
      . "WHERE job_id = '$a->{pipeline_id}_0'");
mysql("UPDATE job_state SET state = '{\"bookmarks\":{}}' WHERE job_id = '$a->{pipeline_id}_2'");

# The listing takes page and limit only (t/api/15-pipelines-paging.t): any
# other parameter is refused by name.
json_response_is(http(GET => '/platform/pipelines?offset=10', { token => $mine }), 400,
	{ detail => 'offset is not a known query parameter' }, 'list: unknown query parameter');

my $res = http(GET => '/platform/pipelines', { token => $mine });
json_response_is($res, 200, undef, 'list');
my $list = $res->{json};
is(ref $list, 'ARRAY', 'an array');
is_deeply([ map { $_->{pipeline_id} } @$list ], [ $a->{pipeline_id}, $b->{pipeline_id} ],
	  'the caller\'s pipelines, oldest first, none of another customer');
my $la = $list->[0];
is_deeply([ sort keys %$la ],
	  [ sort qw(id pipeline_id customer_id user_id name description cron last_status jobs) ],
	  'list entry: exactly the Pipeline fields');
is_deeply({ map { $_ => $la->{$_} } qw(id pipeline_id customer_id user_id name description cron last_status) },
	  { id => $a->{id}, pipeline_id => $a->{pipeline_id}, customer_id => $cust,
	    user_id => "reader-11-$run\@example.com", name => 'first', description => 'A',
	    cron => '30 4 1 1 *', last_status => 'PENDING' }, 'list entry fields');
is_deeply([ map { $_->{job_id} } @{ $la->{jobs} } ], [ map { "$a->{pipeline_id}_$_" } 0 .. 2 ],
	  'jobs ordered by index');
is_deeply($la->{jobs}[0]{input}, {
	connector => 'jdbc', plugin => 'mysql', table_name => 'shop.orders', load_type => 'incremental',
	incremental_column_name => 'updated_at', incremental_column_type => 'datetime',
	column_include_list => [ 'id', 'updated_at' ],
	incremental_column_value => '2026-11-01T00:00:00Z' },
	'jdbc input with its settings and the bookmark from the job state');
ok(!exists $la->{jobs}[0]{memory_allocated_mb}, 'memory_allocated_mb absent when not set');
is($la->{jobs}[1]{memory_allocated_mb}, 2048, 'memory_allocated_mb when set');
is_deeply($la->{jobs}[2]{input}, { connector => 'singer', plugin => 'tap-mysql', table_name => 'orders' },
	  'singer input: no load_type, no state');
is_deeply($list->[1], $b, 'second entry equals its create answer');
is($list->[1]{cron}, undef, 'cron null');
is_deeply([ sort keys %{ $la->{jobs}[1] } ],
	  [ sort qw(id job_id job_status input output memory_allocated_mb) ], 'job: exactly the Job fields');

# The list of the other customer holds only its own.
$res = http(GET => '/platform/pipelines', { token => $other });
is_deeply([ map { $_->{pipeline_id} } @{ $res->{json} || [] } ], [ $theirs->{pipeline_id} ],
	  'another customer sees only its own');

# --- detail -----------------------------------------------------------------------

$res = http(GET => "/platform/pipeline/$a->{pipeline_id}", { token => $mine });
json_response_is($res, 200, undef, 'detail');
my $d = $res->{json};
is_deeply([ sort keys %$d ],
	  [ sort qw(id pipeline_id customer_id user_id name description cron last_status jobs paused tasks) ],
	  'detail: the Pipeline fields plus paused and tasks');
is_deeply({ %$d, paused => undef, tasks => undef }, { %$la, paused => undef, tasks => undef },
	  'detail agrees with the list entry');
ok(defined $d->{paused} && !$d->{paused} && JSON::PP::is_bool($d->{paused}), 'paused false (a boolean)');
my $p = $a->{pipeline_id};
is_deeply($d->{tasks}, [
	map { { task_id => "${p}_$_.extract_load", job_id => "${p}_$_", kind => 'extract_load',
		upstream_task_ids => [] } } 0 .. 2 ], 'tasks by position');

(my $hyphen = $p) =~ tr/_/-/;
$res = http(GET => "/platform/pipeline/$hyphen", { token => $mine });
json_response_is($res, 200, undef, 'detail by the hyphenated id');
is($res->{json}{pipeline_id}, $p, 'answers with the underscore id');
$res = http(GET => '/platform/pipeline/' . uc $hyphen, { token => $mine });
is($res->{json}{pipeline_id}, $p, 'upper-case hex accepted');

# Qualify task in the detail.
my $q = create($mine, { name => 'qualify', jobs => [ job(load_type => 'incremental_with_qualify',
	incremental_column_name => 'id', incremental_column_type => 'bigint', primary_keys => [ 'id' ]) ] });
$res = http(GET => "/platform/pipeline/$q->{pipeline_id}", { token => $mine });
is_deeply($res->{json}{tasks}, [
	{ task_id => "$q->{pipeline_id}_0.extract_load", job_id => "$q->{pipeline_id}_0",
	  kind => 'extract_load', upstream_task_ids => [] },
	{ task_id => "$q->{pipeline_id}_0.qualify", job_id => "$q->{pipeline_id}_0",
	  kind => 'qualify', upstream_task_ids => [ "$q->{pipeline_id}_0.extract_load" ] } ],
	'qualify task after its extract_load');

# --- unknown, malformed, another customer's: the same 404 --------------------------

for my $case ([ 'unknown', '01234567_89ab_4cde_8f01_23456789abcd' ],
	      [ 'malformed', 'not-a-pipeline' ],
	      [ 'too long', "${p}0" ],
	      [ 'job id', "${p}_0" ],
	      [ 'another customer\'s', $theirs->{pipeline_id} ]) {
	json_response_is(http(GET => "/platform/pipeline/$case->[1]", { token => $mine }), 404,
			 $NOT_FOUND, "detail of a $case->[0] id");
}
json_response_is(http(GET => "/platform/pipeline/$p", { token => $other }), 404, $NOT_FOUND,
		 'the owner\'s id asked by another customer');

# --- auth ----------------------------------------------------------------------------

json_response_is(http(GET => '/platform/pipelines'), 401, undef, 'list without a token');
json_response_is(http(GET => "/platform/pipeline/$p"), 401, undef, 'detail without a token');
my $noperm = jwt_for($cust, "reader-11-$run", 'STORAGE_EXPLORER.READ');
json_response_is(http(GET => '/platform/pipelines', { token => $noperm }), 403, undef,
		 'list without PLATFORM.READ');

# --- the list's 500 ----------------------------------------------------------------------

# Set-up: the job table goes away for a moment, so the list's second
# statement fails; it is put back whatever happens.
my $renamed = 0;
END { mysql('RENAME TABLE job_state_away TO job_state') if $renamed }
mysql('RENAME TABLE job_state TO job_state_away');
$renamed = 1;
$res = http(GET => '/platform/pipelines', { token => $mine });
mysql('RENAME TABLE job_state_away TO job_state');
$renamed = 0;
json_response_is($res, 500, { msg => 'Failed to retrieve pipelines', error => 'Database error' },
		 'list when the database fails: 500 {msg, error}');
ok(wait_until(10, sub { http(GET => '/platform/pipelines', { token => $mine })->{status} == 200 }),
   'the list works again once the table is back');

done_testing;
