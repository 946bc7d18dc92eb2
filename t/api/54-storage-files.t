#!/usr/bin/perl
# GET /storage-explorer/storage/files: a folder's subfolders and files in
# pages (limit at 100 and 101, page past the end, an empty folder, a folder
# that is a file); DELETE /storage-explorer/storage/files and
# DELETE /storage-explorer/datasets/{id}: the dataset row, its links (only
# with force=true while one is active) and the bytes on disk go, upload
# history stays; a second delete is a 404; another customer's file or
# dataset is a 404 and stays; path escapes and unknown parameters are 400s.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;
use TablesFixture qw(seed_dataset create_table link_dataset wait_link tag);

my $t = tag();
my ($tok, $cid) = sx_customer("st-files-$t");
my ($other, $ocid) = sx_customer("st-files-other-$t");
my ($reader) = sx_customer("st-files-$t", permissions => 'STORAGE_EXPLORER.READ');
my $dir = storage_dir($cid);
my $F = '/storage-explorer/storage/files';

sub q_enc { StorageTest::_q(@_) }

sub ls_folder {
	my ($folder, $q, $token) = @_;
	return sx(GET => "$F?folder_path=" . q_enc($folder) . ($q // ''), $token // $tok);
}
sub names { [ map { "$_->{type}:$_->{name}" } @{ $_[0]{json}{entries} } ] }

# --- a tree: docs/{a.csv, b.json, 2024/{x.csv, deep/y.csv}}, and one at the root ---------

my $res = upload($tok, 'docs', [ 'b.json', qq([{"k":1}]\n) ], [ 'a.csv', "id,v\n1,x\n" ]);
is($res->{status}, 201, 'docs: two files uploaded') or diag describe($res);
my $upload_id = $res->{json}{upload_id};
my $uploaded_at = $res->{json}{uploaded_at};
my $a_id = dataset_of($res, 'a.csv');
$res = upload($tok, 'docs/2024', [ 'x.csv', "id\n1\n" ]);
is($res->{status}, 201, 'docs/2024: one file') or diag describe($res);
$res = upload($tok, 'docs/2024/deep', [ 'y.csv', "id\n2\n" ]);
is($res->{status}, 201, 'docs/2024/deep: one file') or diag describe($res);
$res = upload($tok, undef, [ 'top.csv', "id\n3\n" ]);
is($res->{status}, 201, 'root: one file') or diag describe($res);
$res = upload($other, 'docs', [ 'a.csv', "secret\n" ]);
is($res->{status}, 201, "another customer's docs/a.csv") or diag describe($res);
my $other_id = dataset_of($res, 'a.csv');
$res = upload($other, 'keep', [ 'keep.csv', "theirs\n" ]);
is($res->{status}, 201, "another customer's keep/keep.csv") or diag describe($res);
my $odir = storage_dir($ocid);

# --- listing -------------------------------------------------------------------------------

$res = ls_folder('docs');
is($res->{status}, 200, 'docs: 200') or diag describe($res);
is($res->{json}{folder_path}, 'docs', 'folder_path echoed');
is_deeply(names($res), [ 'folder:2024', 'file:a.csv', 'file:b.json' ],
	  'subfolders first, then files, by name; deeper files are not listed');
my ($sub, $fa) = @{ $res->{json}{entries} }[0, 1];
is_deeply($sub, { type => 'folder', name => '2024', path => 'docs/2024', file_count => 2,
		  total_size_bytes => 10 }, 'a subfolder: its path, files and bytes at any depth');
is_deeply([ sort keys %$fa ], [ sort qw(type name path dataset_id file_size_bytes file_format
	dataset_status uploaded_at) ], 'a file entry: its fields');
is($fa->{path}, 'docs/a.csv', 'file path');
is($fa->{dataset_id}, $a_id, 'dataset_id');
is($fa->{file_size_bytes}, 9, 'file_size_bytes');
is($fa->{file_format}, 'csv', 'file_format');
ok(defined $uploaded_at, 'the upload answered its uploaded_at');
is($fa->{uploaded_at}, $uploaded_at, "uploaded_at is the upload's");
is_deeply($res->{json}{pagination}, { current_page => 1, total_pages => 1, total_items => 3,
	  items_per_page => 20, has_next => JSON::PP::false, has_previous => JSON::PP::false },
	  'Pagination object');

is_deeply(names(sx(GET => $F, $tok)), [ 'folder:docs', 'file:top.csv' ], 'no folder_path: the root');
is_deeply(names(ls_folder('')), [ 'folder:docs', 'file:top.csv' ], 'folder_path empty: the root');
is_deeply(names(ls_folder('docs/2024/')), [ 'folder:deep', 'file:x.csv' ], 'a trailing slash');
is_deeply(names(ls_folder('docs/2024', '', $reader)), [ 'folder:deep', 'file:x.csv' ],
	  'READ is enough to list');
is_deeply(names(ls_folder('docs', '', $other)), [ 'file:a.csv' ],
	  "another customer sees only its own");
is_deeply(ls_folder('DOCS')->{json}{entries}, [], 'folder names are case-sensitive (DOCS is not docs)');
$res = ls_folder('nowhere');
is($res->{status}, 200, 'a folder with nothing: 200');
is_deeply($res->{json}{entries}, [], 'no entries');
is_deeply($res->{json}{pagination}, { current_page => 1, total_pages => 0, total_items => 0,
	  items_per_page => 20, has_next => JSON::PP::false, has_previous => JSON::PP::false },
	  'empty: 0 pages');
mkdir "$dir/emptydir" or die "mkdir: $!";
is_deeply(ls_folder('emptydir')->{json}{entries}, [], 'an empty folder on disk: no entries');
sx_error_is(ls_folder('docs/a.csv'), 400, 'invalid_folder_path',
	    "folder_path 'docs/a.csv' is a file, not a folder", 'folder_path names a file');

# paging at the bounds: 101 files, limit 100 and 101
my @many = map { sprintf('f%03d.csv', $_) } 1 .. 101;
mysql('INSERT INTO datasets (id, customer_id, file_path, file_name, format, size_bytes, status) '
      . 'VALUES ' . join(', ', map { "(UUID(), '$cid', 'many/$_', '$_', 'csv', 1, 'ready')" } @many));
$res = ls_folder('many', '&limit=100');
is($res->{status}, 200, 'limit=100: 200');
is(scalar @{ $res->{json}{entries} }, 100, 'limit=100: 100 entries');
is($res->{json}{entries}[99]{name}, 'f100.csv', 'in name order');
is_deeply($res->{json}{pagination}, { current_page => 1, total_pages => 2, total_items => 101,
	  items_per_page => 100, has_next => JSON::PP::true, has_previous => JSON::PP::false },
	  'page 1 of 2');
$res = ls_folder('many', '&limit=100&page=2');
is_deeply(names($res), [ 'file:f101.csv' ], 'page 2: the 101st');
ok($res->{json}{pagination}{has_previous} && !$res->{json}{pagination}{has_next}, 'page 2: last');
is_deeply(ls_folder('many', '&limit=100&page=3')->{json}{entries}, [], 'past the end: empty');
is_deeply(names(ls_folder('', '&limit=2&page=1')), [ 'folder:docs', 'folder:many' ],
	  'folders page like files (limit 2, page 1)');
is_deeply(names(ls_folder('', '&limit=2&page=2')), [ 'file:top.csv' ], 'then the files');
for my $b ([ '&limit=101', 'invalid_query', 'limit must be an integer from 1 to 100' ],
	   [ '&limit=0', 'invalid_query', 'limit must be an integer from 1 to 100' ],
	   [ '&page=0', 'invalid_query', qr/^page must be an integer from 1 to / ],
	   [ '&page_size=5', 'invalid_query', 'page_size is not a known query parameter' ],
	   [ '&file_path=docs/a.csv', 'invalid_query', 'file_path is not a known query parameter' ]) {
	sx_error_is(ls_folder('docs', $b->[0]), 400, $b->[1], $b->[2], "list$b->[0]");
}
for my $b ([ '../x', "folder_path must not contain '.' or '..' segments" ],
	   [ '%2e%2e%2fetc', "folder_path must not contain '.' or '..' segments" ],
	   [ '/etc', 'folder_path must be relative to the storage area, not absolute' ]) {
	sx_error_is(sx(GET => "$F?folder_path=$b->[0]", $tok), 400, 'invalid_folder_path', $b->[1],
		    "folder_path=$b->[0]");
}
is(sx(GET => "$F?folder_path=docs", undef)->{status}, 401, 'no token: 401');

# --- DELETE a file ---------------------------------------------------------------------------

sub del_file { my ($p, $q, $token) = @_;
	       return sx(DELETE => "$F?file_path=" . q_enc($p) . ($q // ''), $token // $tok) }

ok(-f "$dir/docs/a.csv", 'docs/a.csv is on disk');
is(del_file('docs/a.csv', '', $reader)->{status}, 403, 'READ only: 403');
$res = del_file('docs/a.csv', '', $other);
is($res->{status}, 200, "another customer deletes its own docs/a.csv") or diag describe($res);
ok(-f "$dir/docs/a.csv", 'ours is still on disk');
is(sx(GET => "/storage-explorer/datasets/$a_id", $tok)->{status}, 200, 'and our dataset is there');
is(sx(DELETE => "/storage-explorer/datasets/$a_id", $other)->{status}, 404,
   "our dataset id from another customer: 404");
is(sx(GET => "/storage-explorer/datasets/$a_id", $tok)->{status}, 200, 'still there');

$res = del_file('docs/a.csv');
is($res->{status}, 200, 'delete an unlinked file: 200') or diag describe($res);
is_deeply($res->{json}, { file_path => 'docs/a.csv', dataset_id => $a_id,
	  deleted => JSON::PP::true, links_removed => 0 }, 'the answer');
ok(!-e "$dir/docs/a.csv", 'the bytes are gone from the storage area');
is(sx(GET => '/storage-explorer/storage/download?file_path=docs/a.csv', $tok)->{status}, 404,
   'download: 404');
is(sx(GET => "/storage-explorer/datasets/$a_id", $tok)->{status}, 404, 'its dataset: 404');
is_deeply(names(ls_folder('docs')), [ 'folder:2024', 'file:b.json' ], 'the listing no longer has it');
is(mysql("SELECT COUNT(*) FROM uploads WHERE id = '$upload_id'"), 1, 'the upload stays in history');
is_deeply([ map { $_->[0] . ':' . $_->[1] } mysql("SELECT file_name, IFNULL(dataset_id, 'NULL') "
	  . "FROM upload_files WHERE upload_id = '$upload_id' ORDER BY position") ],
	  [ 'b.json:' . mysql("SELECT id FROM datasets WHERE customer_id = '$cid' AND "
			      . "file_path = 'docs/b.json'"), 'a.csv:NULL' ],
	  'its files stay listed, the deleted one without a dataset');
my $hist = sx(GET => '/storage-explorer/storage/uploads/history?folder_path=docs', $tok);
ok((grep { $_->{upload_id} eq $upload_id && @{ $_->{files} } == 2 } @{ $hist->{json}{uploads} }),
   'GET history still shows both files of the upload');

$res = del_file('docs/a.csv');
is($res->{status}, 404, 'second delete: 404');
is_deeply($res->{json}, { error => 'file_not_found', file_path => 'docs/a.csv' }, '404 body');
is(del_file('docs/none.csv')->{status}, 404, 'an unknown file: 404');
is(del_file('docs/2024')->{status}, 404, 'a folder is no file: 404');

# a file left on disk without a row (a crash after the commit) goes with the same DELETE
open my $fh, '>', "$dir/docs/orphan.csv" or die $!;
print {$fh} "x\n";
close $fh;
$res = del_file('docs/orphan.csv');
is($res->{status}, 200, 'a file without a dataset: removed');
is($res->{json}{dataset_id}, undef, 'no dataset_id');
ok(!-e "$dir/docs/orphan.csv", 'orphan bytes gone');

# symlinks planted in the storage area: never followed, never removed through
symlink("$odir/keep", "$dir/evil") or die "symlink: $!";
symlink("$odir/keep/keep.csv", "$dir/docs/evil.csv") or die "symlink: $!";
is(del_file('evil/keep.csv')->{status}, 404, "a symlinked folder into another customer's: 404");
is(del_file('docs/evil.csv')->{status}, 404, "a symlink to another customer's file: 404");
ok(-f "$odir/keep/keep.csv", 'their file is intact');
ok(-l "$dir/docs/evil.csv" && -l "$dir/evil", 'the links are left as they were');
is_deeply(names(ls_folder('keep', '', $other)), [ 'file:keep.csv' ], 'and still listed for them');
unlink "$dir/docs/evil.csv", "$dir/evil";

# two deletes of one file at once: one removes it, the other finds nothing
$res = upload($tok, 'race', [ 'r.csv', "id\n1\n" ]);
is($res->{status}, 201, 'race/r.csv uploaded') or diag describe($res);
my @both = parallel_requests(clients => 2, requests => 1, method => 'DELETE',
			     path => "$F?file_path=race/r.csv", opts => { token => $tok });
is_deeply([ sort map { $_->{status} } @both ], [ 200, 404 ], 'two deletes at once: 200 and 404');
ok(!-e "$dir/race/r.csv", 'the bytes are gone');

# the second sent once the first committed and before it unlinked the bytes:
# it waits for them and finds nothing (bytes there without a row are taken
# for a file a crash left only when no removal holds them)
my $orig = conf_read();
reload_serve(conf_with($orig, storage_test_unlink_delay_ms => 2000));
$res = upload($tok, 'race', [ 's.csv', "id\n1\n" ]);
is($res->{status}, 201, 'race/s.csv uploaded') or diag describe($res);
my $s_id = dataset_of($res, 's.csv');
my $first = start_requests(clients => 1, requests => 1, method => 'DELETE',
			   path => "$F?file_path=race/s.csv", opts => { token => $tok });
ok(wait_until(10, sub { mysql("SELECT COUNT(*) FROM datasets WHERE id = '$s_id'") == 0 }),
   'the first delete committed');
ok(-f "$dir/race/s.csv", '... and its bytes are still there');
$res = del_file('race/s.csv');
my ($done) = $first->finish;
is($done->{status}, 200, 'the first delete: 200');
is($res->{status}, 404, 'the second, sent meanwhile: 404');
is_deeply($res->{json}, { error => 'file_not_found', file_path => 'race/s.csv' }, '404 body');
ok(!-e "$dir/race/s.csv", 'the bytes are gone');
reload_serve($orig);

# deleted, then uploaded again: a new dataset, listed, and its bytes there
$res = upload($tok, 'race', [ 'r.csv', "id\n2\n" ]);
is($res->{status}, 201, 'the same path uploaded again') or diag describe($res);
isnt(dataset_of($res, 'r.csv'), undef, 'with a dataset');
is_deeply(names(ls_folder('race')), [ 'file:r.csv' ], 'listed again');
ok(-f "$dir/race/r.csv", 'on disk again');

sx_error_is(sx(DELETE => $F, $tok), 400, 'file_path_required', 'file_path is required',
	    'no file_path');
for my $b ([ '../../etc/passwd', "file_path must not contain '.' or '..' segments" ],
	   [ '%2e%2e/%2e%2e/etc/passwd', "file_path must not contain '.' or '..' segments" ],
	   [ '/etc/passwd', 'file_path must be relative to the storage area, not absolute' ],
	   [ "..%2F$ocid%2Fdocs%2Fa.csv", "file_path must not contain '.' or '..' segments" ]) {
	sx_error_is(sx(DELETE => "$F?file_path=$b->[0]", $tok), 400, 'invalid_file_path', $b->[1],
		    "delete file_path=$b->[0]");
}
sx_error_is(del_file('docs/b.json', '&forced=true'), 400, 'invalid_query',
	    'forced is not a known query parameter', 'delete: an unknown parameter named');
sx_error_is(del_file('docs/b.json', '&force=yes'), 400, 'invalid_query',
	    'force must be true or false', 'force=yes');
ok(-f "$dir/docs/b.json", 'nothing removed by refused calls');

# --- linked: 409, force: 200 and the link gone ---------------------------------------------

my $csv = "id\n1\n";
my $linked = seed_dataset($cid, file_path => "linked/$t.csv", content => $csv, rows => 1,
			  columns => [ [ 'id', 'INTEGER', 0 ] ]);
my $table = create_table($tok, "files_$t", [ { name => 'id', type => 'INTEGER' } ]);
my $l = link_dataset($tok, $table->{table_id}, $linked);
is($l->{status}, 201, 'linked') or diag describe($l);
my $link = wait_link($tok, $table->{table_id}, $l->{json}{link_id});
is($link->{sync_status}, 'done', 'its load ended');
$res = del_file("linked/$t.csv");
is($res->{status}, 409, 'delete a linked file: 409');
is_deeply($res->{json}, { error => 'dataset_linked', dataset_id => $linked, active_links => 1,
	  message => 'The dataset is linked to a table: unlink it first, or delete with '
		   . 'force=true (its links go too)' }, '409 body');
ok(-f "$dir/linked/$t.csv", 'the file stays');
is(mysql("SELECT COUNT(*) FROM table_links WHERE dataset_id = '$linked'"), 1, 'the link stays');

# an inactive (unlinked) link holds nothing
is(sx(DELETE => "/storage-explorer/tables/$table->{table_id}/datasets/$linked", $tok)->{status},
   200, 'unlinked');
is(mysql("SELECT status FROM table_links WHERE dataset_id = '$linked'"), 'inactive', 'inactive');
is(sx(DELETE => "/storage-explorer/datasets/$linked?force=false", $tok)->{status}, 200,
   'only inactive links: deleted without force') ;
ok(!-e "$dir/linked/$t.csv", 'its bytes gone');
is(mysql("SELECT COUNT(*) FROM table_links WHERE dataset_id = '$linked'"), 0, 'the link went too');

my $linked2 = seed_dataset($cid, file_path => "linked/2-$t.csv", content => $csv, rows => 1,
			   columns => [ [ 'id', 'INTEGER', 0 ] ]);
$l = link_dataset($tok, $table->{table_id}, $linked2);
wait_link($tok, $table->{table_id}, $l->{json}{link_id});
$res = del_file("linked/2-$t.csv", '&force=true');
is($res->{status}, 200, 'force=true: 200') or diag describe($res);
is($res->{json}{links_removed}, 1, 'links_removed 1');
is(mysql("SELECT COUNT(*) FROM table_links WHERE id = '$l->{json}{link_id}'"), 0, 'the link is gone');
ok(!-e "$dir/linked/2-$t.csv", 'the bytes are gone');
is(scalar(@{ sx(GET => "/storage-explorer/tables/$table->{table_id}", $tok)->{json}{links} }), 0,
   'the table lists no link');

# --- DELETE a dataset ---------------------------------------------------------------------------

my $ds = seed_dataset($cid, file_path => "ds/$t.csv", content => $csv, rows => 1,
		      columns => [ [ 'id', 'INTEGER', 0 ] ]);
$l = link_dataset($tok, $table->{table_id}, $ds);
wait_link($tok, $table->{table_id}, $l->{json}{link_id});
$res = sx(DELETE => "/storage-explorer/datasets/$ds", $tok);
is($res->{status}, 409, 'dataset linked: 409');
is($res->{json}{error}, 'dataset_linked', 'dataset_linked');
sx_error_is(sx(DELETE => "/storage-explorer/datasets/$ds?cascade=true", $tok), 400, 'invalid_query',
	    'cascade is not a known query parameter', 'dataset delete: unknown parameter named');
$res = sx(DELETE => "/storage-explorer/datasets/" . uc($ds) . '?force=true', $tok);
is($res->{status}, 200, 'dataset force=true (id in any case): 200') or diag describe($res);
is_deeply($res->{json}, { file_path => "ds/$t.csv", dataset_id => $ds, deleted => JSON::PP::true,
	  links_removed => 1 }, 'the answer');
ok(!-e "$dir/ds/$t.csv", 'its file is gone too');
is(sx(GET => "/storage-explorer/datasets/$ds", $tok)->{status}, 404, 'GET: 404');
sx_error_is(sx(DELETE => "/storage-explorer/datasets/$ds", $tok), 404, 'dataset_not_found',
	    'Dataset not found', 'second delete');
is(sx(DELETE => '/storage-explorer/datasets/not-a-uuid', $tok)->{status}, 404, 'a malformed id: 404');
is(mysql("SELECT COUNT(*) FROM datasets WHERE id = '$other_id'"), 0,
   "(the other customer's own delete took its row)");
is(sx(GET => '/storage-explorer/storage/download?file_path=docs/a.csv', $other)->{status}, 404,
   "and its bytes");

done_testing();
