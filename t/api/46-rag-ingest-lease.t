#!/usr/bin/perl
# One dataset is ingested by one process at a time, across hosts and Galera
# nodes: the ingestion holds a lease row (work_leases), not a per-server
# GET_LOCK.  Here another holder's lease (a process on another host) is
# live when the ingestion starts: the ingestion waits, writes nothing while
# the other holds it, takes it once it expired, finishes, and releases it.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

my $ds = new_dataset('leased elsewhere');
my $lease = "rag_ingest:$ds";
my $other = 'elsewhere.example:4242';

is(mysql("INSERT INTO work_leases (name, process_id, item_id, expires_at) VALUES "
	 . "('$lease', '$other', 0, UTC_TIMESTAMP(3) + INTERVAL 4 SECOND)"), '',
   'another host holds the dataset\'s lease for 4 s');
my $expiry = mysql("SELECT expires_at FROM work_leases WHERE name = '$lease'");

is(add_documents($ds, [ map { { text => "Leased document $_. " . ('Words and more words. ' x 20),
				metadata => { n => $_ } } } 1 .. 3 ])->{status}, 202,
   'three documents');
ok(wait_until(15, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$ds' AND status = 'running'") == 1 }), 'the ingestion is claimed');

# Until the other lease expires: nothing is written, and it stays the other's.
my ($seen_waiting, $written_meanwhile) = (0, 0);
ok(wait_until(20, sub {
	my ($row) = mysql("SELECT (SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$ds'), "
		. "(SELECT COUNT(*) FROM work_leases WHERE name = '$lease' AND process_id = '$other' "
		. "AND expires_at > UTC_TIMESTAMP(3))");
	my ($snippets, $other_holds) = @$row;
	$seen_waiting++ if $other_holds;
	$written_meanwhile++ if $other_holds && $snippets > 0;
	!$other_holds;
}, 0.2), 'the other lease runs out');
cmp_ok($seen_waiting, '>', 0, 'the ingestion was seen waiting for it');
is($written_meanwhile, 0, 'no snippet was written while another process held the lease');

my $done = wait_dataset($ds, 60);
is($done->{status}, 'success', 'the ingestion finished once the lease was free');
is($done->{document_count}, 3, 'three documents');
is(mysql("SELECT updated_at >= '$expiry' FROM rag_datasets WHERE id = '$ds'"), 1,
   'and finished after the other lease expired');
is(mysql("SELECT attempts FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds'"), 1,
   'in its first attempt: it waited, it did not fail');
is(mysql("SELECT COUNT(*) FROM work_leases WHERE name = '$lease'"), 0, 'the lease is released');

# A second round on the same dataset takes the free lease at once.
is(add_documents($ds, [ { text => 'One more leased document.', metadata => { n => 4 } } ])->{status},
   202, 'a fourth document');
$done = wait_dataset($ds, 30);
is($done->{status}, 'success', 'ingested');
is($done->{document_count}, 4, 'four documents');
is(mysql("SELECT COUNT(*) FROM work_leases WHERE name = '$lease'"), 0, 'released again');

is(rag(DELETE => "/dataset/$ds")->{status}, 204, 'clean up');

done_testing();
