package ClusterFixture;

# Shared code of the cluster tests (t/cluster/*.t, `scripts/dev cluster
# test`): requests through one host, SQL on one node, and the cluster's
# scripts/dev pieces.  The SLUICE_* variables are those `scripts/dev cluster
# env` prints: SLUICE_URL is host a alone, SLUICE_CLUSTER_URL both hosts.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);

use SluiceTest;

our @EXPORT = qw(on_host node_sql node_status cluster_dev);

# on_host('a' | 'b' | 'both', sub { http(...) }): the code's requests go
# through that host's own nginx port (or the balanced one).
sub on_host {
	my ($host, $code) = @_;
	local $ENV{SLUICE_URL} = $host eq 'both' ? env('SLUICE_CLUSTER_URL')
		: env('SLUICE_CLUSTER_HOST_' . uc($host) . '_URL');
	return $code->();
}

# node_sql(N, $sql): rows as array refs (list) or the output (scalar), as
# root on node N's socket.
sub node_sql {
	my ($n, $sql) = @_;
	local $ENV{SLUICE_MYSQL} = env("SLUICE_CLUSTER_NODE${n}_MYSQL");
	return mysql($sql);
}

# A wsrep status variable of node N ('' when the node does not answer).
sub node_status {
	my ($n, $name) = @_;
	my $r = run_cmd([ 'sh', '-c', env("SLUICE_CLUSTER_NODE${n}_MYSQL")
		. ' --connect-timeout=3 -N -B -e "$1"', 'sh', "SHOW GLOBAL STATUS LIKE '$name'" ],
		timeout => 30);
	return '' if $r->{exit};
	my (undef, $v) = split /\t/, $r->{out} // '';
	$v //= '';
	$v =~ s/\s+\z//;
	return $v;
}

# cluster_dev('node-kill', 3): scripts/dev cluster ... -> run_cmd result.
sub cluster_dev {
	my (@args) = @_;
	return run_cmd([ env('SLUICE_DEV'), 'cluster', @args ], timeout => 300);
}

1;
