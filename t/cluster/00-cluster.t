#!/usr/bin/perl
# The cluster as `scripts/dev cluster up` leaves it: three Galera nodes in
# one Primary component, all Synced, with the settings the hosts rely on;
# each host answers /health through its own port and through the balanced
# one; and both hosts' `sluice work` are registered under their host names.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use ClusterFixture;

for my $n (1 .. 3) {
	is(node_status($n, 'wsrep_cluster_size'), 3, "node$n sees 3 members");
	is(node_status($n, 'wsrep_cluster_status'), 'Primary', "node$n is in the Primary component");
	is(node_status($n, 'wsrep_local_state_comment'), 'Synced', "node$n is Synced");
	is(node_status($n, 'wsrep_ready'), 'ON', "node$n accepts queries");
	my %v = map { @$_ } node_sql($n, "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES"
		. " WHERE VARIABLE_NAME IN ('WSREP_SYNC_WAIT', 'BINLOG_FORMAT', 'INNODB_AUTOINC_LOCK_MODE', 'WSREP_SST_METHOD')");
	is_deeply(\%v, { WSREP_SYNC_WAIT => 1, BINLOG_FORMAT => 'ROW', INNODB_AUTOINC_LOCK_MODE => 2,
			 WSREP_SST_METHOD => 'rsync' }, "node$n: read-your-writes, ROW, autoinc mode 2, rsync SST");
}
# One cluster, not three: the same state UUID on every node.
my @uuid = map { node_status($_, 'wsrep_cluster_state_uuid') } 1 .. 3;
like($uuid[0], qr/^[0-9a-f-]{36}$/, 'node1 has a cluster state UUID');
is_deeply([ @uuid[1, 2] ], [ $uuid[0], $uuid[0] ], 'node2 and node3 share it');

for my $h (qw(a b both)) {
	my $res = on_host($h, sub { http(GET => '/health') });
	json_response_is($res, 200, undef, "/health through host $h");
	is($res->{json}{status}, 'healthy', "host $h is healthy");
}

# The balanced port reaches both hosts: each serve master's workers answer
# some of 20 requests (nginx round-robins the upstream).
my %by_pid;
for (1 .. 20) {
	my $res = on_host('both', sub { http(GET => '/_test/pid') });
	is($res->{status}, 200, 'GET /_test/pid through the balanced port') or last;
	$by_pid{ $res->{content} =~ /(\d+)/ ? $1 : '' }++;
}
my %host_of;
for my $h (qw(a b)) {
	my $master = do {
		local $ENV{SLUICE_SERVE_PID} = env('SLUICE_CLUSTER_HOST_' . uc($h) . '_SERVE_PID');
		master_pid();
	};
	for my $pid (keys %by_pid) {
		my $st = proc_stat($pid) or next;
		$host_of{$h} += $by_pid{$pid} if $st->{ppid} == $master;
	}
}
ok($host_of{a}, 'host a answered through the balanced port');
ok($host_of{b}, 'host b answered through the balanced port');

# Both sluice work processes heartbeat under their host names.
ok(wait_until(30, sub {
	my @hosts = map { $_->[0] } mysql("SELECT DISTINCT host FROM work_processes"
		. " WHERE heartbeat_at > NOW(3) - INTERVAL 60 SECOND ORDER BY host");
	"@hosts" eq 'sluice-a sluice-b';
}), 'work_processes: sluice-a and sluice-b are alive');

done_testing();
