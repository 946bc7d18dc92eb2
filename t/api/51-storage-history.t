#!/usr/bin/perl
# GET /storage-explorer/storage/uploads/history: exact fields, the
# Pagination object and its edges, the folder_path filter, newest first,
# uploaded_by, isolation, permissions.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;

# A customer of its own, so the counts are this file's alone (re-runs start
# from a clean slate: its rows are removed first).
my ($tok, $cid) = sx_customer('st-history', sub => 'historian@example.com');
my ($other) = sx_customer('st-history-other');
mysql("DELETE FROM work_queue WHERE customer_id = '$cid'");
mysql("DELETE FROM datasets WHERE customer_id = '$cid'");
mysql("DELETE FROM uploads WHERE customer_id = '$cid'");
my $H = '/storage-explorer/storage/uploads/history';

json_response_is(sx(GET => $H, $tok), 200, {
	uploads => [],
	pagination => { current_page => 1, total_pages => 0, total_items => 0, items_per_page => 20,
			has_next => JSON::PP::false, has_previous => JSON::PP::false },
}, 'no uploads yet: empty list, total_pages 0');

# 5 uploads into "a", 2 into "b/c", 1 at the root: 8 in all, in this order.
my @ids;
for my $i (1 .. 8) {
	my $folder = $i <= 5 ? 'a' : $i <= 7 ? 'b/c' : undef;
	my @files = ([ "f$i.csv", "n\n$i\n" ]);
	push @files, [ "g$i.json", qq([{"n": $i}]) ] if $i == 2;
	my $res = upload($tok, $folder, @files);
	is($res->{status}, 201, "upload $i") or diag describe($res);
	push @ids, $res->{json}{upload_id};
}
wait_upload($_) for @ids;

my $res = sx(GET => $H, $tok);
json_response_is($res, 200, undef, 'history');
my $j = $res->{json};
is_deeply([ sort keys %$j ], [qw(pagination uploads)], 'body: uploads and pagination');
is_deeply($j->{pagination}, { current_page => 1, total_pages => 1, total_items => 8, items_per_page => 20,
			      has_next => JSON::PP::false, has_previous => JSON::PP::false },
	  'pagination of 8 items with the default limit');
is_deeply([ map { $_->{upload_id} } @{ $j->{uploads} } ], [ reverse @ids ], 'newest first');
my ($two) = grep { $_->{upload_id} eq $ids[1] } @{ $j->{uploads} };
is_deeply([ sort keys %$two ], [ sort qw(upload_id folder_path uploaded_at uploaded_by file_count
	total_size_bytes status files) ], 'entry: exactly the spec fields');
is($two->{folder_path}, 'a', 'folder_path');
is($two->{uploaded_by}, 'historian@example.com', "uploaded_by: the token's sub");
iso_time_ok($two->{uploaded_at}, 'uploaded_at', 120);
is($two->{file_count}, 2, 'file_count');
is($two->{total_size_bytes}, length("n\n2\n") + length('[{"n": 2}]'), 'total_size_bytes');
is($two->{status}, 'completed', 'status');
is_deeply($two->{files}, [ { file_name => 'f2.csv', file_size_bytes => 4, file_format => 'csv' },
			   { file_name => 'g2.json', file_size_bytes => 10, file_format => 'json' } ],
	  'files: file_name, file_size_bytes, file_format');
is($j->{uploads}[0]{folder_path}, '', 'the root upload has folder_path ""');

# --- pages -------------------------------------------------------------------------

my @pages = (
	[ 'page=1&limit=3', 1, 3, [ @ids[7, 6, 5] ], 3, 1, 0 ],
	[ 'page=2&limit=3', 2, 3, [ @ids[4, 3, 2] ], 3, 1, 1 ],
	[ 'page=3&limit=3', 3, 3, [ @ids[1, 0] ], 3, 0, 1 ],
	[ 'page=4&limit=3', 4, 3, [], 3, 0, 1 ],            # past the end
	[ 'page=99&limit=100', 99, 100, [], 1, 0, 1 ],
	[ 'page=1000000000&limit=1', 1000000000, 1, [], 8, 0, 1 ],   # the largest page
	[ 'limit=1', 1, 1, [ $ids[7] ], 8, 1, 0 ],
	[ 'limit=100', 1, 100, [ reverse @ids ], 1, 0, 0 ],
	[ 'page=8&limit=1', 8, 1, [ $ids[0] ], 8, 0, 1 ],
);
for my $p (@pages) {
	my ($q, $page, $limit, $want, $pages, $next, $prev) = @$p;
	my $r = sx(GET => "$H?$q", $tok);
	is($r->{status}, 200, "?$q: 200");
	is_deeply([ map { $_->{upload_id} } @{ $r->{json}{uploads} } ], $want, "?$q: items");
	is_deeply($r->{json}{pagination}, { current_page => $page, total_pages => $pages, total_items => 8,
		items_per_page => $limit, has_next => $next ? JSON::PP::true : JSON::PP::false,
		has_previous => $prev ? JSON::PP::true : JSON::PP::false }, "?$q: pagination");
}

my @bad = (
	[ 'page=0', 'page must be an integer from 1 to 1000000000' ],
	[ 'page=-1', 'page must be an integer from 1 to 1000000000' ],
	[ 'page=abc', 'page must be an integer' ],
	[ 'page=1.5', 'page must be an integer' ],
	[ 'page=', 'page must be an integer' ],
	[ 'page=1000000001', 'page must be an integer from 1 to 1000000000' ],
	[ 'page=99999999999', 'page must be an integer from 1 to 1000000000' ],
	[ 'limit=0', 'limit must be an integer from 1 to 100' ],
	[ 'limit=101', 'limit must be an integer from 1 to 100' ],
	[ 'limit=-5', 'limit must be an integer from 1 to 100' ],
	[ 'limit=ten', 'limit must be an integer' ],
	[ 'limit=', 'limit must be an integer' ],
	[ 'sort=newest', 'sort is not a known query parameter' ],
	[ 'page=1&page=2', 'page is given more than once' ],
	[ 'folder=a', 'folder is not a known query parameter' ],
	[ 'folder_path=../a', "folder_path must not contain '.' or '..' segments" ],
	[ 'folder_path=%2e%2e%2fa', "folder_path must not contain '.' or '..' segments" ],
	[ 'folder_path=/a', 'folder_path must be relative to the storage area, not absolute' ],
);
for my $b (@bad) {
	sx_error_is(sx(GET => "$H?$b->[0]", $tok), 400, $b->[0] =~ /^folder_path/ ? 'invalid_folder_path'
		    : 'invalid_query', $b->[1], "?$b->[0]");
}

# --- folder filter -----------------------------------------------------------------------

for my $f ([ 'a', [ @ids[4, 3, 2, 1, 0] ] ], [ 'a/', [ @ids[4, 3, 2, 1, 0] ] ],
	   [ 'b/c', [ @ids[6, 5] ] ], [ 'b', [] ], [ '', [ $ids[7] ] ], [ 'nowhere', [] ]) {
	my ($folder, $want) = @$f;
	my $n = @$want;
	my @first = @$want[0 .. ($n < 2 ? $n - 1 : 1)];
	my $r = sx(GET => "$H?folder_path=$folder&limit=2", $tok);
	is($r->{status}, 200, "folder_path=$folder: 200");
	my @got = map { $_->{upload_id} } @{ $r->{json}{uploads} };
	is_deeply(\@got, \@first, "folder_path=$folder: first page");
	is($r->{json}{pagination}{total_items}, $n, "folder_path=$folder: total_items");
	is($r->{json}{pagination}{total_pages}, int(($n + 1) / 2), "folder_path=$folder: total_pages");
}
is_deeply([ map { $_->{upload_id} } @{ sx(GET => "$H?folder_path=a&page=3&limit=2", $tok)->{json}{uploads} } ],
	  [ $ids[0] ], 'folder filter with paging');

# --- isolation and permissions ------------------------------------------------------------

my $o = sx(GET => $H, $other);
is($o->{status}, 200, 'another customer: 200');
ok(!grep({ my $u = $_->{upload_id}; grep { $_ eq $u } @ids } @{ $o->{json}{uploads} }),
   "another customer sees none of these uploads");
is(sx(GET => "$H?folder_path=a", $other)->{json}{pagination}{total_items}, 0,
   "nor counts them in a folder of the same name");
is(http(GET => $H)->{status}, 401, 'no token: 401');
json_response_is(http(GET => $H, { token => token(customer => 'st-history', permissions => 'STORAGE_EXPLORER.WRITE') }),
		 403, { detail => 'Missing permission STORAGE_EXPLORER.READ' }, 'WRITE only: 403');
is(http(GET => $H, { token => token(customer => 'st-history', permissions => 'STORAGE_EXPLORER.READ') })->{status},
   200, 'READ is enough');

done_testing;
