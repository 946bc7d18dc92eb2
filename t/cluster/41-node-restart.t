#!/usr/bin/perl
# A database node restarted under a host (node2, under host b): each of b's
# workers finds its connection dead at its next transaction and reopens it
# before anything was sent, so no request after the restart fails.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use ClusterFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $res = on_host(b => sub { http(POST => '/platform/pipeline', { token => $token, json => {
	name => "restart-$$", description => 'x', cron => undef,
	jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.t' },
		    output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } } ] } }) });
is($res->{status}, 201, 'created');
my $id = $res->{json}{pipeline_id};
my $put = sub { on_host(b => sub { http(PUT => "/platform/pipeline/$id/memory", { token => $token, json => { amount => 300 } }) })->{status} };
my %w; $w{$put->()}++ for 1 .. 12;
is_deeply(\%w, { 200 => 12 }, 'warm: every worker of b connected to node2');
is(cluster_dev('node-kill', 2)->{exit}, 0, 'node2 killed');
ok(wait_until(30, sub { node_status(1, 'wsrep_cluster_size') eq '2' }), 'two left');
is(cluster_dev('node-start', 2)->{exit}, 0, 'node2 back, Synced');
my %s; $s{$put->()}++ for 1 .. 12;
is_deeply(\%s, { 200 => 12 }, 'after the restart every transactional request through b succeeds') or diag explain \%s;
done_testing();
