#!/usr/bin/perl
# A pipeline has at most 10 webhooks, also when the tenth is asked for
# through both hosts at once.  Galera certifies the rows a transaction
# wrote, not the rows it locked: a SELECT ... FOR UPDATE of the pipeline
# on node1 does not hold back a create on node2, so each create writes the
# pipeline row too, and of two creates that both saw nine, the later to
# commit fails certification, runs again and sees ten.  Without that write
# both commit (eleven), as often as the two overlap.

use strict;
use warnings;

use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);

use SluiceTest;
use ClusterFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = sprintf '%x', $$;
my $ROUNDS = 25;

sub create_hook {
	my ($pid, $n) = @_;
	return http(POST => "/platform/pipeline/$pid/webhooks", { token => $token,
		json => { url => "https://93.184.216.34/hook-$n", description => "hook $n" } });
}

my ($overs, $both_refused) = (0, 0);
for my $round (1 .. $ROUNDS) {
	my $res = on_host(a => sub { http(POST => '/platform/pipeline', { token => $token, json => {
		name => "hooks-$tag-$round", description => 'webhook limit across hosts', cron => undef,
		jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.t' },
			    output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } } ] } }) });
	is($res->{status}, 201, "round $round: a pipeline") or last;
	my $pid = $res->{json}{pipeline_id};
	my $nine = grep { on_host(a => sub { create_hook($pid, $_) })->{status} == 201 } 1 .. 9;
	is($nine, 9, "round $round: nine webhooks") or last;
	# The tenth, through a and through b at the same instant.
	my $at = time + 0.3;
	my @kids;
	for my $host (qw(a b)) {
		my $kid = fork // die "fork: $!";
		if (!$kid) {
			sleep($at - time) if $at > time;
			my $r = on_host($host => sub { create_hook($pid, "10$host") });
			POSIX::_exit($r->{status} == 201 ? 0 : $r->{status} == 409 ? 1 : 2);
		}
		push @kids, $kid;
	}
	my @codes = map { waitpid($_, 0); $? >> 8 } @kids;
	is(scalar(grep { $_ == 2 } @codes), 0, "round $round: each answered 201 or 409");
	my $count = node_sql(1, "SELECT COUNT(*) FROM webhooks WHERE pipeline_id = '$pid'");
	$overs++ if $count > 10;
	$both_refused++ if $count < 10;
	is(on_host(b => sub { http(DELETE => "/platform/pipeline/$pid", { token => $token,
		headers => { customer_name => 'demo' } }) })->{status}, 200, "round $round: deleted");
}
is($overs, 0, "no pipeline got more than 10 webhooks in $ROUNDS rounds");
is($both_refused, 0, 'and every pipeline got its tenth');

done_testing();
