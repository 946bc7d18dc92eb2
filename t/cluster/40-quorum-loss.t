#!/usr/bin/perl
# Quorum lost: with node2 and node3 killed -9, node1 is alone outside the
# primary component and answers every query 1047 ("WSREP has not yet
# prepared node for application use").  Host a (on node1) answers 503
# {"detail":"Database unavailable"} with Retry-After, never 500 and never
# an answer from the stale node; its sluice work waits as in an outage.
# Once node1 is made primary again (pc.bootstrap) and the others rejoin,
# both hosts answer again.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use ClusterFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = sprintf '%x', $$;
my $work_log = env('SLUICE_CLUSTER_HOST_A_WORK_LOG');
my $log_at = -s $work_log // 0;

sub create {
	my ($host, $name) = @_;
	return on_host($host => sub { http(POST => '/platform/pipeline', { token => $token, json => {
		name => $name, description => 'quorum test', cron => undef,
		jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.t' },
			    output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } } ] } }) });
}

is(create(a => "quorum-$tag-before")->{status}, 201, 'a pipeline before the loss');

for my $n (2, 3) {
	my $r = cluster_dev('node-kill', $n);
	is($r->{exit}, 0, "scripts/dev cluster node-kill $n") or diag $r->{err};
}
ok(wait_until(60, sub { node_status(1, 'wsrep_cluster_status') eq 'non-Primary' }),
   'node1 alone is outside the primary component');
is(node_status(1, 'wsrep_ready'), 'OFF', 'and not ready');

my ($answers, $ok503, $retry, $bad) = (0, 0, 0, 0);
ok(wait_until(30, sub {
	my $res = create(a => "quorum-$tag-during");
	$answers++;
	if ($res->{status} == 503) {
		$ok503++;
		$retry++ if (header($res, 'retry-after') // '') eq '1'
			&& ($res->{json}{detail} // '') eq 'Database unavailable';
	} else {
		$bad++;
	}
	$ok503 >= 6;
}, 0.1), 'host a answers 503 while its node has no quorum');
is($bad, 0, 'no other answer in between (no 500, no 201 from a stale node)');
is($retry, $ok503, 'each 503 is {"detail":"Database unavailable"} with Retry-After: 1');
is(on_host(a => sub { http(GET => '/health') })->{status}, 503, '/health on host a is 503');
ok(wait_until(30, sub {
	open my $fh, '<', $work_log or return 0;
	seek $fh, $log_at, 0;
	local $/;
	(<$fh> // '') =~ /database unavailable, waiting/;
}), "host a's sluice work waits, as in an outage");

# Two of three members restarted are new members: no majority of the last
# primary component comes back by itself.  The operator's step: make the
# surviving node primary again, then start the others, which join it.
is(node_sql(1, "SET GLOBAL wsrep_provider_options = 'pc.bootstrap=YES'"), '',
   'node1 bootstrapped as the primary component');
for my $n (2, 3) {
	my $r = cluster_dev('node-start', $n);
	is($r->{exit}, 0, "scripts/dev cluster node-start $n") or diag $r->{err};
}
ok(wait_until(60, sub { node_status(1, 'wsrep_cluster_status') eq 'Primary'
	&& node_status(1, 'wsrep_ready') eq 'ON' }), 'node1 is back in the primary component');
ok(wait_until(30, sub { create(a => "quorum-$tag-after")->{status} == 201 }),
   'host a writes again');
is(create(b => "quorum-$tag-after-b")->{status}, 201, 'and so does host b');
is(node_sql(3, "SELECT COUNT(*) FROM pipelines WHERE name = 'quorum-$tag-during'"), 0,
   'nothing was written while quorum was lost');
ok(wait_until(30, sub {
	open my $fh, '<', $work_log or return 0;
	seek $fh, $log_at, 0;
	local $/;
	(<$fh> // '') =~ /database back/;
}), "host a's sluice work is back");

done_testing();
