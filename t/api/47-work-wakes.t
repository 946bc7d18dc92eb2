#!/usr/bin/perl
# A request that queues work for sluice work wakes it (util/wake.h) once
# its transaction committed: posted documents and a deleted document
# (rag_ingest), an upload and a refresh handed to sluice work
# (storage_infer), a dataset linked to a table and a link's sync
# (storage_link_load).  sluice work is stopped and this test binds its wake
# socket, so each datagram is seen as sent; a request that queues nothing
# sends none.  Then sluice work, started again, does all of it.  And sluice
# work, once it recorded a refresh's outcome, wakes the waiter where the
# refresh's request waits (this test binds that socket too, with serve
# stopped).  (How much sooner is for bench/retrieval_service.sh.)

use strict;
use warnings;

use File::Basename qw(dirname);
use File::Path qw(make_path);
use IO::Select;
use Socket qw(AF_UNIX SOCK_DGRAM pack_sockaddr_un);
use Test::More;

use SluiceTest;
use RagFixture;
use StorageTest qw(sx_customer sx upload dataset_of);
use TablesFixture qw(create_table link_dataset wait_link);

my $orig = conf_read();
my ($listen) = $orig =~ /^[ \t]*listen[ \t]*=[ \t]*(\S+)/m;
my ($wait_listen) = $orig =~ /^[ \t]*wait_listen[ \t]*=[ \t]*(\S+)/m;
my $work_wake = "$listen.work";
my $waiter_wake = ($wait_listen // "$listen.wait") . '.wake';
my ($stopped, $serve_stopped) = (0, 0);

END {
	local ($?, $@);
	eval {
		unlink $work_wake if $stopped;
		dev('work-start') if $stopped;
		unlink $waiter_wake if $serve_stopped;
		dev('serve-start') if $serve_stopped;
		reload_serve($orig) if conf_read() ne $orig;
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

# Work to wake for, set up while sluice work runs: an ingested dataset
# with a document to delete, and an uploaded file whose schema is known.
my $rag = ready_dataset([ { text => 'Salmon swim upstream to spawn.' },
			  { text => 'Granite is an igneous rock.' } ], name => 'work wakes');
my $doc = rag(GET => "/dataset/$rag/documents")->{json}{documents}[1]{document_id};
ok($doc, 'a document to delete');
my ($tok) = sx_customer('work-wakes');
my $res = upload($tok, 'wk', [ 'a.csv', "id,v\n1,x\n" ]);
is($res->{status}, 201, 'a.csv uploaded') or diag describe($res);
my $a_id = dataset_of($res, 'a.csv');
is(StorageTest::wait_dataset($tok, $a_id)->{status}, 'ready', '... and its schema inferred');
$res = upload($tok, 'wk', [ 'c.csv', "id,v\n3,z\n" ]);
is($res->{status}, 201, 'c.csv uploaded') or diag describe($res);
my $c_id = dataset_of($res, 'c.csv');
is(StorageTest::wait_dataset($tok, $c_id)->{status}, 'ready', '... and its schema inferred');
my $tid = create_table($tok, 'wakes', [ { name => 'id', type => 'INTEGER' },
					{ name => 'v', type => 'VARCHAR' } ])->{table_id};

# sluice work away; its wake socket is ours.
is(dev('work-stop')->{exit}, 0, 'sluice work stopped');
$stopped = 1;
unlink $work_wake;
socket(my $sock, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
bind($sock, pack_sockaddr_un($work_wake)) or die "bind $work_wake: $!";

# The datagrams on $sock that came within $s seconds of the first (none: []).
sub wakes_on {
	my ($sock, $s) = @_;
	my $sel = IO::Select->new($sock);
	my @got;
	while ($sel->can_read(@got ? 0.3 : $s)) {
		my $buf = '';
		defined recv($sock, $buf, 512, 0) or last;
		push @got, $buf;
	}
	return \@got;
}
sub wakes { wakes_on($sock, @_) }

$res = add_documents($rag, [ { text => 'Apples grow on trees in orchards.' } ]);
is($res->{status}, 202, 'documents posted') or diag describe($res);
is_deeply(wakes(5), [ 'rag_ingest' ], '... and sluice work woken for their ingestion');
is(mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$rag' "
	 . "AND status = 'queued'"), 1, '... which was queued');

$res = rag(DELETE => "/dataset/$rag/documents/$doc");
is($res->{status}, 202, 'a document deleted') or diag describe($res);
is_deeply(wakes(5), [ 'rag_ingest' ], '... and sluice work woken to rebuild the index');

is(rag(GET => "/dataset/$rag")->{status}, 200, 'a GET of the dataset');
is(rag(DELETE => "/dataset/$rag/documents/00000000-0000-4000-8000-000000000000")->{status},
   404, 'a delete of no document');
is_deeply(wakes(1), [], '... queue nothing and wake nothing');

$res = upload($tok, 'wk', [ 'b.csv', "id\n2\n" ]);
is($res->{status}, 201, 'b.csv uploaded') or diag describe($res);
my $b_id = dataset_of($res, 'b.csv');
is_deeply(wakes(5), [ 'storage_infer' ], '... and sluice work woken to infer its schema');

reload_serve(conf_with($orig, refresh_inline_max_bytes => 0, refresh_wait_s => 0));
$res = sx(PUT => "/storage-explorer/datasets/$a_id/refresh-schema", $tok,
	  json => { delimiter => ',' });
is($res->{status}, 202, 'a refresh handed to sluice work') or diag describe($res);
is_deeply(wakes(5), [ 'storage_infer' ], '... wakes it');
reload_serve($orig);

$res = link_dataset($tok, $tid, $c_id);
is($res->{status}, 201, 'c.csv linked to a table') or diag describe($res);
my $link = $res->{json}{link_id};
is_deeply(wakes(5), [ 'storage_link_load' ], '... and sluice work woken to load it');
$res = sx(POST => "/storage-explorer/tables/$tid/datasets/$c_id/sync", $tok);
is($res->{status}, 202, "the link's sync") or diag describe($res);
is_deeply(wakes(5), [ 'storage_link_load' ], '... wakes it too');

# sluice work back: everything that was queued gets done.
close $sock;
unlink $work_wake;
is(dev('work-start')->{exit}, 0, 'sluice work started');
$stopped = 0;
my $ds = wait_dataset($rag, 60);
is($ds->{status}, 'success', 'the dataset ingested');
is($ds->{document_count}, 2, '... with the posted document and without the deleted one');
is(StorageTest::wait_dataset($tok, $b_id)->{status}, 'ready', "b.csv's schema inferred");
ok(wait_until(60, sub {
	mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'storage_infer' AND ref_id = '$a_id' "
	      . "AND status IN ('queued', 'running')") == 0 }), 'the refresh done');
is((wait_link($tok, $tid, $link, 60) // {})->{sync_status}, 'done', 'the table loaded');

# --- sluice work wakes the waiter of a refresh it did ------------------------------------

is(dev('work-stop')->{exit}, 0, 'sluice work stopped again');
$stopped = 1;
reload_serve(conf_with($orig, refresh_inline_max_bytes => 0, refresh_wait_s => 0));
$res = sx(PUT => "/storage-explorer/datasets/$a_id/refresh-schema", $tok,
	  json => { delimiter => ',' });
is($res->{status}, 202, 'a refresh handed to sluice work') or diag describe($res);
my $item = mysql("SELECT MAX(id) FROM work_queue WHERE kind = 'storage_infer' AND "
		 . "ref_id = '$a_id' AND status = 'queued'");
like($item, qr/^\d+$/, '... queued');
is(dev('serve-stop')->{exit}, 0, 'sluice serve stopped, its waiter with it');
$serve_stopped = 1;
make_path(dirname($waiter_wake));
unlink $waiter_wake;
socket(my $wsock, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
bind($wsock, pack_sockaddr_un($waiter_wake)) or die "bind $waiter_wake: $!";
is(dev('work-start')->{exit}, 0, 'sluice work started');
$stopped = 0;
is_deeply(wakes_on($wsock, 30), [ "refresh $item" ],
	  'the refresh done, sluice work wakes its waiter, naming the item');
is(mysql("SELECT status FROM work_queue WHERE id = $item"), 'done',
   '... once its outcome is recorded');
close $wsock;
unlink $waiter_wake;
is(dev('serve-start')->{exit}, 0, 'sluice serve started');
$serve_stopped = 0;
reload_serve($orig);

done_testing();
