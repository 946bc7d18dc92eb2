#!/usr/bin/perl
# GET /platform/pipelines with page and limit: the storage explorer's
# Pagination object around one page of the same Pipeline objects, the page
# size at its maximum and one past it, the last page and a page past the
# end, the totals; without page and limit the spec's plain array, unchanged;
# and a customer's pages hold only that customer's pipelines.

use strict;
use warnings;

use Test::More;

use SluiceTest;

my $PER = 100;                       # the largest page
my $N = $PER + 1;                    # one more than fits on it

sub customer {
	my ($name) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', $name, '--if-missing',
			  '-c', env('SLUICE_CONF') ]);
	is($r->{exit}, 0, "set-up: customer $name") or diag $r->{err};
	return token(customer => $name, permissions => 'PLATFORM.READ,PLATFORM.WRITE');
}

my $tok = customer("paging-$$");
my $other = customer("paging-other-$$");

sub list {
	my ($query, $t) = @_;
	return http(GET => '/platform/pipelines' . (length $query ? "?$query" : ''),
		    { token => $t // $tok });
}

my @made;
for my $i (1 .. $N) {
	my $res = http(POST => '/platform/pipeline', { token => $tok, json => {
		name => "paging $i", description => 'paging', cron => undef,
		jobs => [ { input => { connector => 'jdbc', plugin => 'postgres',
				       table_name => "public.t$i" },
			    output => { plugin => 'mariadb',
					raw => { table_name => "t$i", table_schema => 'raw' } } } ] } });
	$res->{status} == 201 or BAIL_OUT('set-up: pipeline not created: ' . describe($res));
	push @made, $res->{json}{pipeline_id};
}
my $theirs = http(POST => '/platform/pipeline', { token => $other, json => {
	name => 'not yours', description => 'paging', cron => undef,
	jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.o' },
		    output => { plugin => 'mariadb',
				raw => { table_name => 'o', table_schema => 'raw' } } } ] } });
is($theirs->{status}, 201, 'set-up: the other customer\'s pipeline') or diag describe($theirs);

# --- without paging: the spec's array, whole ---------------------------------------------------

my $all = list('');
json_response_is($all, 200, undef, 'no paging parameters');
is(ref $all->{json}, 'ARRAY', 'the body is the plain array of the spec');
is_deeply([ map { $_->{pipeline_id} } @{ $all->{json} } ], \@made,
	  'every pipeline, in creation order');

sub pagination {
	my ($page, $pages, $total, $per) = @_;
	return { current_page => $page, total_pages => $pages, total_items => $total,
		 items_per_page => $per,
		 has_next => $page < $pages ? JSON::PP::true() : JSON::PP::false(),
		 has_previous => $page > 1 ? JSON::PP::true() : JSON::PP::false() };
}

sub page_ok {
	my ($query, $want_items, $want_pagination, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = list($query);
	json_response_is($res, 200, undef, $name) or return;
	is_deeply([ sort keys %{ $res->{json} } ], [ 'pagination', 'pipelines' ], "$name: fields");
	is_deeply($res->{json}{pipelines}, $want_items, "$name: the pipelines, whole objects");
	is_deeply($res->{json}{pagination}, $want_pagination, "$name: pagination");
}

my @objs = @{ $all->{json} };
page_ok("limit=$PER", [ @objs[0 .. $PER - 1] ], pagination(1, 2, $N, $PER),
	'limit at its maximum');
page_ok("page=2&limit=$PER", [ $objs[$PER] ], pagination(2, 2, $N, $PER), 'the last page');
page_ok("page=3&limit=$PER", [], pagination(3, 2, $N, $PER), 'a page past the end');
page_ok('page=1', [ @objs[0 .. 19] ], pagination(1, 6, $N, 20), 'page alone: 20 a page');
page_ok('page=6', [ $objs[100] ], pagination(6, 6, $N, 20), 'page 6 of 20s');
page_ok('limit=7&page=3', [ @objs[14 .. 20] ], pagination(3, 15, $N, 7), 'limit 7, page 3');
page_ok("limit=1&page=$N", [ $objs[-1] ], pagination($N, $N, $N, 1),
	'one a page, the last');

# Every page of 7 together is the whole list, each pipeline once.
my @walk;
for my $pg (1 .. 15) {
	push @walk, map { $_->{pipeline_id} } @{ list("limit=7&page=$pg")->{json}{pipelines} };
}
is_deeply(\@walk, \@made, 'pages of 7 walk every pipeline once, in order');

for my $bad ([ "limit=" . ($PER + 1), 'limit' ], [ 'limit=0', 'limit' ], [ 'page=0', 'page' ],
	     [ 'page=-1', 'page' ], [ 'page=x', 'page' ], [ 'limit=', 'limit' ],
	     [ 'page=1&page=2', 'page' ], [ 'page=1000000001', 'page' ],
	     [ 'offset=10', 'offset' ], [ 'per_page=10', 'per_page' ]) {
	my $res = list($bad->[0]);
	json_response_is($res, 400, undef, "?$bad->[0]");
	like($res->{json}{detail} // '', qr/\b\Q$bad->[1]\E\b/, "?$bad->[0]: names $bad->[1]");
}

# --- isolation --------------------------------------------------------------------------------

my $o = list('page=1&limit=100', $other);
json_response_is($o, 200, undef, 'the other customer\'s first page');
is_deeply([ map { $_->{pipeline_id} } @{ $o->{json}{pipelines} } ],
	  [ $theirs->{json}{pipeline_id} ], 'only its own pipeline');
is_deeply($o->{json}{pagination}, pagination(1, 1, 1, 100), 'its own totals');
my $none = customer("paging-none-$$");
my $e = list('page=1', $none);
is_deeply($e->{json}, { pipelines => [], pagination => pagination(1, 0, 0, 20) },
	  'a customer with no pipelines: an empty page, totals 0');
is_deeply(list('', $none)->{json}, [], 'and the plain listing is []');

done_testing();
