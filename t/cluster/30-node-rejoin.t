#!/usr/bin/perl
# A database node killed -9 (node3: no host is attached to it) leaves a
# Primary component of two; both hosts keep answering, reads and writes;
# started again, node3 catches up by IST (not a whole SST: the gcache holds
# the writes it missed, and the start position is recovered from InnoDB
# after the crash) and holds what was written while it was down.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use ClusterFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = sprintf '%x', $$;
my $log = env('SLUICE_CLUSTER_NODE3_LOG');
my $log_at = -s $log // 0;

my $r = cluster_dev('node-kill', 3);
is($r->{exit}, 0, 'scripts/dev cluster node-kill 3') or diag $r->{err};
ok(wait_until(30, sub { node_status(1, 'wsrep_cluster_size') eq '2' }),
   'node1 sees two members');
is(node_status(1, 'wsrep_cluster_status'), 'Primary', 'node1 and node2 stay Primary');
is(node_status(3, 'wsrep_ready'), '', 'node3 does not answer');

# Writes through both hosts while node3 is down.
my $N = 20;
my $failed = 0;
for my $i (1 .. $N) {
	my $host = $i % 2 ? 'a' : 'b';
	my $res = on_host($host => sub { http(POST => '/platform/pipeline', { token => $token, json => {
		name => "rejoin-$tag-$i", description => 'written while node3 was down', cron => undef,
		jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.t' },
			    output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } } ] } }) });
	$failed++ unless $res->{status} == 201;
	$failed++ unless on_host($host => sub { http(GET => '/health') })->{status} == 200;
}
is($failed, 0, "$N pipelines created and /health 200 through a and b with node3 down");

$r = cluster_dev('node-start', 3);
is($r->{exit}, 0, 'scripts/dev cluster node-start 3 (returns once Synced)') or diag $r->{err};
for my $n (1 .. 3) {
	is(node_status($n, 'wsrep_cluster_size'), 3, "node$n sees 3 members again");
}
is(node_status(3, 'wsrep_local_state_comment'), 'Synced', 'node3 is Synced');

my $since = do {
	open my $fh, '<', $log or die "$log: $!";
	seek $fh, $log_at, 0;
	local $/;
	<$fh> // '';
};
like($since, qr/Receiving IST: \d+ writesets/, 'node3 received the missed writes by IST');
unlike($since, qr/rsync SST completed/, 'and not by a full SST');

is(node_sql(3, "SELECT COUNT(*) FROM pipelines WHERE name LIKE 'rejoin-$tag-%'"), $N,
   "node3 holds the $N pipelines written while it was down");
is(on_host(both => sub { http(GET => '/health') })->{status}, 200, 'the balanced port answers');

done_testing();
