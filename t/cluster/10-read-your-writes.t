#!/usr/bin/perl
# Read-your-writes across hosts: what one host has just answered 201 or 200
# for, the other host (on another Galera node) reads at once, 50 times
# over for each of a pipeline, a retrieval dataset and a question's answer.
# Without wsrep_sync_wait the second node may not have applied the write
# yet and answer 404 or the old state.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use ClusterFixture;
use RagFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = sprintf '%x', $$;
my $N = 50;

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
