#!/usr/bin/perl
# Read-your-writes across hosts: what one host has just answered 201 or 200
# for, the other host (on another Galera node) reads at once, 50 times
# over for each of a pipeline, a retrieval dataset and a question's answer.
# Without wsrep_sync_wait the second node may not have applied the write
# yet and answer 404 or the old state.  An idle cluster on loopback applies
# faster than an HTTP round trip, so node1 commits a 20,000-row UPDATE over
# and over meanwhile: node2 applies writes in order, and a read that does
# not wait for them misses (with wsrep_sync_wait=0 some 10-20 % did).

use strict;
use warnings;

use POSIX ();
use Test::More;

use SluiceTest;
use ClusterFixture;
use RagFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = sprintf '%x', $$;
my $N = 50;

# The write load on node1, in a scratch database, until the end of the file.
my $load_db = "ryw_load_$tag";
node_sql(1, "CREATE DATABASE $load_db; CREATE TABLE $load_db.t (id INT PRIMARY KEY, v INT NOT NULL);"
	. " INSERT INTO $load_db.t SELECT seq, 0 FROM $load_db.seq_1_to_20000");
my $loader = fork // die "fork: $!";
if (!$loader) {
	setpgrp(0, 0);
	{ exec 'sh', '-c', 'while ' . env('SLUICE_CLUSTER_NODE1_MYSQL')
		. qq{ -e "UPDATE $load_db.t SET v = v + 1" >/dev/null 2>&1; do :; done} }
	POSIX::_exit(127);
}
END {
	local $?;
	if ($loader) {
		kill 'KILL', -$loader;
		waitpid($loader, 0);
		eval { node_sql(1, "DROP DATABASE IF EXISTS $load_db") };
	}
}
ok(wait_until(10, sub { node_sql(1, "SELECT MAX(v) FROM $load_db.t") > 0 }), 'the write load runs');

# --- pipelines: POST through a, GET through b ----------------------------------
my $misses = 0;
for my $i (1 .. $N) {
	my $name = "ryw-$tag-$i";
	my $res = on_host(a => sub { http(POST => '/platform/pipeline', { token => $token, json => {
		name => $name, description => 'read your writes', cron => undef,
		jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.t' },
			    output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } } ] } }) });
	is($res->{status}, 201, "pipeline $i created through a") or diag(describe($res)), last;
	my $id = $res->{json}{pipeline_id};
	my $got = on_host(b => sub { http(GET => "/platform/pipeline/$id", { token => $token }) });
	$misses++ unless $got->{status} == 200 && ($got->{json}{name} // '') eq $name;
	# And a change through b is what a reads next.
	my $patch = on_host(b => sub { http(PATCH => "/platform/pipeline/$id", { token => $token,
		json => { description => "patched $i" } }) });
	$misses++ unless $patch->{status} == 200;
	my $again = on_host(a => sub { http(GET => "/platform/pipeline/$id", { token => $token }) });
	$misses++ unless ($again->{json}{description} // '') eq "patched $i";
}
is($misses, 0, "$N pipelines: b read each one a created, a read each change b made");

# --- retrieval datasets ----------------------------------------------------------
$misses = 0;
for my $i (1 .. $N) {
	my $id = on_host(a => sub { new_dataset("ryw-$tag-$i") });
	my $got = on_host(b => sub { rag(GET => "/dataset/$id") });
	$misses++ unless $got->{status} == 200 && ($got->{json}{name} // '') eq "ryw-$tag-$i";
}
is($misses, 0, "$N datasets: each created through a, read through b at once");

# --- questions: asked through a, answered through b --------------------------------
my $ds = on_host(a => sub { ready_dataset([
	{ text => 'Glaciers are rivers of ice that carve valleys in mountains.', metadata => { source => 'glacier' } },
	{ text => 'A violin has four strings and is played with a bow.', metadata => { source => 'violin' } },
	{ text => 'Bread is baked from wheat flour, water, salt and yeast.', metadata => { source => 'bread' } },
], name => "ryw-questions-$tag") });
$misses = 0;
my $wrong = 0;
for my $i (1 .. $N) {
	my $res = on_host(a => sub { ask($ds, { question => "How do glaciers shape mountains? ($i)", top_n => 1 }) });
	is($res->{status}, 200, "question $i asked through a") or diag(describe($res)), last;
	my $qid = $res->{json}{question_id};
	my $got = on_host(b => sub { answer_of($ds, $qid, 20) });
	if ($got->{status} != 200 || ($got->{json}{status} // '') ne 'success') {
		$misses++;
		diag 'question ' . $i . ': ' . describe($got) if $misses < 3;
		next;
	}
	$wrong++ unless ($got->{json}{relevant_documents}[0]{metadata}{source} // '') eq 'glacier';
}
is($misses, 0, "$N questions asked through a: b answered each (status success)");
is($wrong, 0, 'and with the right snippet');

done_testing();
