#!/usr/bin/perl
# An ingestion writes the index file from the snippet rows it stored and
# kept in memory, reading back from MariaDB only the rows it did not store
# (src/retrieval/build.c).  The file must be byte for byte the one written
# from MariaDB alone (a question's rebuild of a lost file), a kept row of a
# document deleted meanwhile must stay out, and so must a deleted
# document's row that is read back.  The work log's "index file written"
# line says how many rows came from memory: a build that read everything
# back would pass the byte checks, so the counts are checked too.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;

use RagFixture;
use SluiceTest;

my $orig = conf_read();

END {
	local ($?, $@);
	eval {
		reload_stack($orig) if conf_read() ne $orig;
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

# The last "index file written" line of the dataset since $offset: its
# key=value pairs.
sub last_build {
	my ($ds, $offset) = @_;
	my ($line) = reverse grep { /msg="index file written"/ && /dataset=\Q$ds\E/ }
		work_log_since($offset);
	return {} unless defined $line;
	return { $line =~ /\b(snippets|from_memory|read_back|reads)=(\d+)/g };
}

sub rows_of { mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$_[0]'") }

# Remove the index file and have `sluice work` rebuild it from MariaDB
# (questions go there with question_inline_max_snippets = 0); the new
# file's bytes.
sub rebuilt {
	my ($ds, $question) = @_;
	unlink index_file($ds) or die "unlink: $!";
	my $off = work_log_offset();
	my $a = answer($ds, { question => $question });
	is($a->{status}, 'success', "a question after the file was removed: $question");
	my $b = last_build($ds, $off);
	is($b->{from_memory}, 0, 'its rebuild read every row from MariaDB');
	return slurp(index_file($ds));
}

sub doc {
	my ($tag, $n, $words) = @_;
	my $text = "Note $tag $n about cargo ${tag}x$n. "
		. join(' ', map { "$tag$n harbour ledger timber w$_" } 1 .. ($words // 0) / 5);
	return { text => $text, metadata => { tag => $tag, n => $n } };
}

reload_serve(conf_with($orig, question_inline_max_snippets => 0));

# --- a second batch: the first one's rows are read back, one range ------------------

my $ds = new_dataset('kept rows');
my @one = ((map { doc('alpha', $_) } 1 .. 30), doc('alpha', 'long', 1200));
my $res = add_documents($ds, \@one);
is($res->{status}, 202, 'first batch: 202');
is(wait_dataset($ds, 60)->{status}, 'success', 'first batch ingested');
my $first_rows = rows_of($ds);
cmp_ok($first_rows, '>', 31, 'the long document has several snippets');

my $off = work_log_offset();
$res = add_documents($ds, [ (map { doc('beta', $_) } 1 .. 20), doc('beta', 'long', 900) ]);
is($res->{status}, 202, 'second batch: 202');
my $after = wait_dataset($ds, 60);
is($after->{status}, 'success', 'second batch ingested');
my $b = last_build($ds, $off);
is($b->{snippets}, rows_of($ds), 'the build wrote every row of the dataset');
is($b->{from_memory}, rows_of($ds) - $first_rows, 'the second batch\'s rows came from memory');
is($b->{read_back}, $first_rows, 'the first batch\'s rows were read back');
is($b->{reads}, 1, 'in one range of the key');
is($after->{snippet_count}, rows_of($ds), 'snippet_count is the rows\'');

my $kept_file = slurp(index_file($ds));
ok(defined $kept_file && length $kept_file > 0, 'the index file is there');
my $db_file = rebuilt($ds, 'cargo betax7');
ok($kept_file eq $db_file, 'the file from kept rows is byte for byte the one from MariaDB');

# --- documents deleted while the ingestion waits to build ----------------------------

conf_write(conf_with(conf_read(), rag_test_index_delay_ms => 3000));
reload_stack(conf_read());
$off = work_log_offset();
my @three = ((map { doc('gamma', $_) } 1 .. 10), doc('gamma', 'zebraquartz', 700));
$res = add_documents($ds, \@three);
is($res->{status}, 202, 'third batch: 202');
my $gone_kept = $res->{json}{document_ids}[10];
my $gone_read = mysql("SELECT d.id FROM rag_documents d JOIN rag_snippets s ON s.document_id = d.id "
		      . "WHERE d.dataset_id = '$ds' AND s.page_content LIKE '%alphax7.%' LIMIT 1");
ok($gone_read, 'a first-batch document to delete');
# Stored (so kept), the build not yet written: the hook pauses 3 s first.
ok(wait_until(30, sub {
	mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$ds' AND status = 'processing'")
		== 0 }), 'the third batch is stored');
my $stored_rows = rows_of($ds);
is(rag(DELETE => "/dataset/$ds/documents/$gone_kept")->{status}, 202,
   'a stored third-batch document deleted');
is(rag(DELETE => "/dataset/$ds/documents/$gone_read")->{status}, 202,
   'a first-batch document deleted');
$after = wait_dataset($ds, 90);
is($after->{status}, 'success', 'the dataset settles');
my $deleted_rows = $stored_rows - rows_of($ds);
cmp_ok($deleted_rows, '>', 2, 'the two documents took their snippets along');
$b = last_build($ds, $off);
is($b->{snippets}, rows_of($ds), 'the last build wrote the rows that are left');
my $third_left = mysql("SELECT COUNT(*) FROM rag_snippets s JOIN rag_documents d "
		       . "ON d.id = s.document_id WHERE d.dataset_id = '$ds' "
		       . "AND d.metadata LIKE '%\"gamma\"%'");
is($b->{from_memory}, $third_left, 'the third batch\'s rows that are left came from memory');
is($b->{read_back}, rows_of($ds) - $third_left, 'the others were read back');
$kept_file = slurp(index_file($ds));
ok(index($kept_file, 'zebraquartz') < 0, 'the deleted kept document is not in the file');
ok(index($kept_file, 'alphax7.') < 0, 'nor the deleted first-batch one');
ok(index($kept_file, 'alphax8.') >= 0, 'a first-batch document that stayed is');
ok(index($kept_file, 'gammax3.') >= 0,
   'and a third-batch one');
conf_write($orig);
reload_stack($orig);
reload_serve(conf_with($orig, question_inline_max_snippets => 0));
$db_file = rebuilt($ds, 'cargo gammax3');
ok($kept_file eq $db_file, 'byte for byte the file MariaDB\'s rows give');
reload_serve($orig);

is(rag(DELETE => "/dataset/$ds")->{status}, 204, 'clean up');
done_testing();
