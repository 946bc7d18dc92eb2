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
use RunnerFixture qw(with_work_conf);

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

# --- a lease lost mid-way -------------------------------------------------------------
# An ingestion that stalled past the lease's expiry finds, before it writes
# the index, that another process holds the lease now.  The holder takes
# every processing document, so this item is done: it must not fail, nor
# write an error on the dataset the holder is working on (on its last
# attempt that failure would fail the documents the holder is storing).
# sluice work pauses (test hook) after storing the snippets, before it
# renews the lease; the lease passes to another holder in that pause.
with_work_conf(rag_test_index_delay_ms => 2000);
my $lost = new_dataset('lease lost');
my $lost_lease = "rag_ingest:$lost";
is(add_documents($lost, [ map { { text => "Stalled document $_. " . ('Words and more. ' x 20),
				  metadata => { n => $_ } } } 1 .. 2 ])->{status}, 202, 'two documents');
ok(wait_until(30, sub { mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$lost'") > 0 },
	      0.02), 'their snippets are stored: the pause before the lease is renewed');
is(mysql("UPDATE work_leases SET process_id = '$other', item_id = 0, "
	 . "expires_at = UTC_TIMESTAMP(3) + INTERVAL 1 HOUR WHERE name = '$lost_lease'; "
	 . "SELECT ROW_COUNT()"), 1, 'another process has taken the lease');
ok(wait_until(30, sub { mysql("SELECT status FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$lost'") eq 'done' }), 'the item is done');
is(mysql("SELECT attempts FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$lost'"), 1,
   'in its first attempt, not failed and retried');
is(rag(GET => "/dataset/$lost")->{json}{status}, 'processing',
   'the dataset is left to the holder: processing');
is(mysql("SELECT COALESCE(error, 'NULL') FROM rag_datasets WHERE id = '$lost'"), 'NULL',
   'with no error written on it');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$lost' AND status = 'failed'"), 0,
   'and no document failed');
is(mysql("SELECT process_id FROM work_leases WHERE name = '$lost_lease'"), $other,
   "the holder's lease is untouched");
# The holder goes away; the next ingestion of the dataset finishes the job.
is(mysql("DELETE FROM work_leases WHERE name = '$lost_lease'; SELECT ROW_COUNT()"), 1,
   'the other holder lets go');
is(add_documents($lost, [ { text => 'A third stalled document.', metadata => { n => 3 } } ])->{status},
   202, 'a third document');
$done = wait_dataset($lost, 60);
is($done->{status}, 'success', 'the next ingestion settles the dataset');
is($done->{document_count}, 3, 'with all three documents');
is(rag(DELETE => "/dataset/$lost")->{status}, 204, 'clean up');

done_testing();
