#!/usr/bin/perl
# The README's walkthrough ("Trying it with curl") pasted into a shell: every
# `$ ` line of its console blocks, with the lines a shell reads as its
# continuation (after a trailing `\` or `|`, or inside an open quote), runs in
# order in one bash (set -euo pipefail) against this stack, in a scratch
# directory.  Users paste twice, so it runs twice; each paste must succeed and
# leave what the README says: a ready dataset, its rows in the table, the
# downloaded bytes equal to the uploaded ones, a successful run, a question
# with snippets.  The README's error bodies, shown in full, must come back
# verbatim.  The `eval "$(scripts/dev env)"` line is not run: the suite has
# already exported the test instance's variables.

use strict;
use warnings;

use File::Temp qw(tempdir);
use FindBin;
use Test::More;

use SluiceTest;

my $readme = "$FindBin::Bin/../../README.md";
open my $fh, '<:raw', $readme or die "$readme: $!";
my @lines = map { s/\r?\n\z//r } <$fh>;
close $fh;

# Whether a shell would read another line before running $s.
sub incomplete {
	my ($s) = @_;
	my $q = '';
	for (my $i = 0; $i < length $s; $i++) {
		my $c = substr $s, $i, 1;
		if ($q eq "'") { $q = '' if $c eq "'"; next }
		if ($c eq '\\') { $i++; next }
		if ($q eq '"') { $q = '' if $c eq '"'; next }
		$q = $c if $c eq "'" || $c eq '"';
	}
	return 1 if $q ne '';
	return $s =~ /(?:\\|\||&&)[ \t]*\z/;
}

# The commands, and the output lines the README shows word for word: a JSON
# object with no elision, no id and no time in it.
my (@cmds, @exact, $in_console);
for (my $i = 0; $i < @lines; $i++) {
	my $l = $lines[$i];
	if ($l =~ /^```(\S*)/) {
		$in_console = !$in_console && $1 eq 'console';
		next;
	}
	next unless $in_console;
	if ($l =~ /^\$ (.*)\z/s) {
		my $cmd = $1;
		$cmd .= "\n" . $lines[++$i] while incomplete($cmd) && $i + 1 < @lines;
		push @cmds, $cmd;
	} elsif ($l =~ /^\{"/ && $l !~ /\.\.\.|\x{e2}\x{80}\x{a6}|\d{4}-\d\d-\d\dT|[0-9a-f]{8}-/) {
		push @exact, $l;
	}
}
cmp_ok(scalar @cmds, '>=', 30, 'the README has the walkthrough\'s commands');
ok(!(grep { incomplete($_) } @cmds), 'every command is complete (no open quote at the end of a block)');
cmp_ok(scalar @exact, '>=', 4, 'the README shows some answers in full');

my $token = env('SLUICE_DEMO_TOKEN');
my $basic = env('SLUICE_DEMO_BASIC');

sub paste {
	my ($n) = @_;
	my $dir = tempdir(CLEANUP => 1);
	my $vars = "$dir/vars";
	my $script = join("\n", 'set -euo pipefail', "cd '$dir'", @cmds,
		'printf "%s\n" "DS=$DS" "TID=$TID" "P=$P" "R=$R" "HB=$HB" "Q=$Q" "DIR=$PWD" >' . " '$vars'") . "\n";
	local $ENV{TMPDIR} = $dir;
	my $r = run_cmd(['bash', '-c', $script], timeout => 240);
	is($r->{exit}, 0, "paste $n: every command succeeds")
		or diag "stdout (the end):\n" . substr($r->{out}, -2000) . "\nstderr:\n$r->{err}";
	my %v = map { /^(\w+)=(.*)\z/ ? ($1, $2) : () } split /\n/, (-r $vars ? do { local (@ARGV, $/) = $vars; <> } : '');
	for my $want (@exact) {
		ok(index($r->{out}, $want) >= 0, "paste $n: the answer $want");
	}
	return %v;
}

my %seen;
for my $n (1, 2) {
	my %v = paste($n);
	ok($v{DIR} && $v{DIR} =~ m{^/}, "paste $n: worked in a scratch directory") or next;
	ok(!$seen{$v{DS}}++, "paste $n: a dataset of its own");

	my $res = http(GET => "/storage-explorer/datasets/$v{DS}", { token => $token });
	is($res->{json}{status}, 'ready', "paste $n: the upload's dataset is ready") or diag describe($res);
	is($res->{json}{schema}{row_count}, 3, "paste $n: with its 3 rows");

	$res = http(GET => "/storage-explorer/tables/$v{TID}/datasets", { token => $token });
	is($res->{json}{total_rows}, 3, "paste $n: the linked table holds the 3 rows") or diag describe($res);

	my $up = do { local (@ARGV, $/) = "$v{DIR}/orders.csv"; <> } // '';
	my $down = do { local (@ARGV, $/) = "$v{DIR}/orders-download.csv"; <> } // '';
	is(length $up, 131, "paste $n: the uploaded file is the README's 131 bytes");
	ok($down eq $up, "paste $n: the download equals the uploaded bytes");

	$res = http(GET => "/platform/pipeline/$v{P}/pipeline_run", { token => $token });
	my ($run) = grep { $_->{run_id} eq $v{R} } @{ $res->{json}{data}{runs} || [] };
	is($run && $run->{status}, 'SUCCESS', "paste $n: the run succeeded") or diag describe($res);
	is($run && $run->{rows_loaded}, 3, "paste $n: and loaded the 3 rows");

	$res = http(GET => "/dataset/$v{HB}/question/$v{Q}", { basic => $basic });
	is($res->{json}{status}, 'success', "paste $n: the question is answered") or diag describe($res);
	like($res->{json}{relevant_documents}[0]{page_content} // '', qr/^Backups run every night/,
	     "paste $n: with the snippet about backups");
}

done_testing();
