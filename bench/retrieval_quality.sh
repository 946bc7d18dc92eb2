#!/usr/bin/env bash
# bench/retrieval_quality.sh - known-item retrieval quality: sluice against
# SQLite FTS5 bm25() on the same snippets.
#
# Method
#   Corpus: CORPUS (man1, man3, perl or debian), built by bench/lib/corpus.pl
#   from text installed on this Debian machine that nobody here wrote (it
#   says how each is made); DOCS documents taken at an even stride, each
#   cut to BODY_MAX characters at a line end, kept in var/bench-data/.
#   Known item: the question is the document's own one-line description
#   (a manual page's NAME line, a module's NAME line, a package's
#   synopsis); the target is the document, which does not contain it.
#   Ingestion: one dataset on the bench instance, documents posted through
#   POST /dataset/{id}/documents with metadata {"source": "<name>", "doc": i};
#   sluice chunks and embeds them with its configured embedder.
#   Snippets: read back from MariaDB (rag_snippets), and the very same
#   snippets are loaded into two SQLite FTS5 tables: the default unicode61
#   tokenizer, and porter stemming over it.  FTS5 ranks with bm25() for the
#   question's words OR-ed together.
#   sluice: every question is asked with each of the five metrics (L2, L1,
#   max, cos, dot), with hybrid on and off, and for cos also with MMR off;
#   every other parameter is the default.  Each is asked twice: with the
#   default top_n = 3 for recall@3 (with MMR the first 3 picks of a longer
#   list need not be the 3 picks of the default answer) and with top_n = 10
#   for MRR@10.
#   Scoring: a document is found at the rank of the first of its snippets in
#   the list.  MRR@10 = mean of 1/rank (0 when not in the first 10);
#   recall@3 = share of questions whose document is among the first 3
#   snippets.
#   Target: sluice's defaults (cos, hybrid, MMR) at least 1.10 times FTS5
#   bm25() (porter) on MRR@10.
#
# Uses the bench instance (https://127.0.0.1:28443, or SLUICE_PORT): starts
# it when it is not running, and then stops it again at the end.
# Results: bench/results/retrieval_quality-<date>.txt.
#
# Environment: CORPUS (man1), DOCS (300, or all), BODY_MAX (6000
# characters), SLUICE_PORT, QUICK=1 (only the defaults and MMR off).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
CORPUS=${CORPUS:-man1}
DOCS=${DOCS:-300}
BODY_MAX=${BODY_MAX:-6000}
[[ $DOCS =~ ^([1-9][0-9]*|all)$ ]] || { echo "DOCS must be a positive number or all" >&2; exit 2; }
[[ $BODY_MAX =~ ^[1-9][0-9]*$ ]] || { echo "BODY_MAX must be a positive number" >&2; exit 2; }

export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
RESULTS=$ROOT/bench/results
OUT=$RESULTS/retrieval_quality-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
STARTED=0

cleanup() {
	if ((STARTED)); then
		"$DEV" down bench >/dev/null 2>&1 ||
			echo "bench/retrieval_quality.sh: could not stop the bench instance" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# man-db renders the pages (it brings groff-base); sqlite3 is in the stack's DEPS.
if ! command -v man >/dev/null 2>&1 || ! command -v col >/dev/null 2>&1; then
	echo "installing man-db and bsdextrautils..."
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		man-db groff-base bsdextrautils >"$TMP/apt.log" 2>&1 ||
		{ cat "$TMP/apt.log" >&2; exit 1; }
fi
command -v sqlite3 >/dev/null 2>&1 || "$DEV" deps
sqlite3 :memory: 'CREATE VIRTUAL TABLE t USING fts5(x);' ||
	{ echo "bench/retrieval_quality.sh: this sqlite3 has no FTS5" >&2; exit 1; }

eval "$("$DEV" env bench)"
code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "$SLUICE_URL/health" || true)
if [[ $code != 200 && $code != 401 ]]; then
	echo "starting the bench instance..."
	STARTED=1
	if ! "$DEV" up bench >"$TMP/up.log" 2>&1; then
		cat "$TMP/up.log" >&2
		echo "bench/retrieval_quality.sh: scripts/dev up bench failed" >&2
		exit 1
	fi
	eval "$("$DEV" env bench)"
fi

mkdir -p "$RESULTS"
mkdir -p "$ROOT/var/bench-data"
JSON=$ROOT/var/bench-data/corpus-$CORPUS-$DOCS-$BODY_MAX.json
if [[ ! -s $JSON ]]; then
	perl "$ROOT/bench/lib/corpus.pl" "$CORPUS" "$DOCS" "$BODY_MAX" >"$JSON.tmp"
	mv "$JSON.tmp" "$JSON"
fi
perl - "$TMP" "$JSON" "$CORPUS" "$BODY_MAX" "$OUT" <<'PERL'
use strict;
use warnings;

use HTTP::Tiny;
use IO::Socket::SSL qw(SSL_VERIFY_NONE);
use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time sleep);

my ($tmp, $json, $corpus, $body_max, $out) = @ARGV;
my $url = $ENV{SLUICE_URL} or die "SLUICE_URL is not set\n";
my $basic = $ENV{SLUICE_DEMO_BASIC} or die "SLUICE_DEMO_BASIC is not set\n";
my $J = JSON::PP->new->utf8->canonical;
my $ua = HTTP::Tiny->new(verify_SSL => 0, keep_alive => 1, timeout => 60,
	SSL_options => { SSL_verify_mode => SSL_VERIFY_NONE });
my %auth = (Authorization => 'Basic ' . encode_base64($basic, ''));
$| = 1;

sub api {
	my ($method, $path, $body) = @_;
	my %h = %auth;
	my %o = (headers => \%h);
	if (defined $body) {
		$h{'Content-Type'} = 'application/json';
		$o{content} = $J->encode($body);
	}
	my $r = $ua->request($method, "$url$path", \%o);
	my $j = eval { $J->decode($r->{content}) };
	return ($r->{status}, $j, $r->{content});
}

# --- corpus ------------------------------------------------------------------------

open my $cfh, '<:raw', $json or die "$json: $!\n";
my @docs = @{ JSON::PP->new->utf8->decode(do { local $/; <$cfh> }) };
close $cfh;
my $chars = 0;
$chars += length $_->{text} for @docs;
printf "corpus %s: %d documents, %.0f KiB of text\n", $corpus, scalar @docs, $chars / 1024;

# --- ingestion ---------------------------------------------------------------------

my ($st, $j, $raw) = api(POST => '/dataset', { name => 'quality-' . time });
die "POST /dataset: $st $raw\n" unless $st == 201 || $st == 200;
my $ds = $j->{dataset_id};
my $t0 = time;
my $retried = 0;
for (my $i = 0; $i < @docs; $i += 25) {
	my $end = $i + 24 < $#docs ? $i + 24 : $#docs;
	# A 500 is tried again (twice at most, counted in the report): the
	# documents route can meet a deadlock with the ingestion it started.
	for my $try (0 .. 2) {
		($st, $j, $raw) = api(POST => "/dataset/$ds/documents", { documents => [
			map { { text => $docs[$_]{text},
				metadata => { source => $docs[$_]{source}, doc => $_ } } } $i .. $end ] });
		last unless $st == 500;
		$retried++;
		sleep 0.2;
	}
	die "POST documents: $st $raw\n" unless $st =~ /^20[012]$/;
}
my $info;
while (1) {
	($st, $info, $raw) = api(GET => "/dataset/$ds");
	last if ($info->{status} // '') ne 'processing';
	die "ingestion took more than 900 s\n" if time - $t0 > 900;
	sleep 0.5;
}
die "ingestion ended as '$info->{status}': $raw\n" unless $info->{status} eq 'success';
my $ingest_s = time - $t0;
printf "dataset %s: %s snippets in %.1f s\n", $ds, $info->{snippet_count} // '?', $ingest_s;

# --- the same snippets in FTS5 -----------------------------------------------------

my $mysql = $ENV{SLUICE_MYSQL} or die "SLUICE_MYSQL is not set\n";
my @snip;
for (split /\n/, `$mysql -N -B -e "SELECT JSON_VALUE(metadata, '\$.doc'), HEX(page_content) FROM rag_snippets WHERE dataset_id = '$ds'"`) {
	my ($doc, $hex) = split /\t/;
	push @snip, [ $doc, pack 'H*', $hex ];
}
die "no snippets in MariaDB for $ds\n" unless @snip;
my $sq = sub { my $s = shift; $s =~ s/'/''/g; "'$s'" };
open my $sql, '>:raw', "$tmp/load.sql" or die "$tmp/load.sql: $!\n";
print {$sql} "PRAGMA journal_mode = OFF;\nBEGIN;\n";
print {$sql} "CREATE VIRTUAL TABLE plain USING fts5(body, doc UNINDEXED);\n";
print {$sql} "CREATE VIRTUAL TABLE porter USING fts5(body, doc UNINDEXED, tokenize = 'porter unicode61');\n";
for my $s (@snip) {
	print {$sql} "INSERT INTO plain VALUES (", $sq->($s->[1]), ", $s->[0]);\n";
}
print {$sql} "INSERT INTO porter SELECT body, doc FROM plain;\nCOMMIT;\n";
close $sql;
unlink "$tmp/fts.db";
system("sqlite3 '$tmp/fts.db' < '$tmp/load.sql' > /dev/null") == 0 or die "sqlite3 load failed\n";

sub fts_ranks {
	my ($table) = @_;
	open my $q, '>:raw', "$tmp/q.sql" or die;
	print {$q} ".mode tabs\n";
	for my $i (0 .. $#docs) {
		my @w = map { lc } $docs[$i]{question} =~ /(\w+)/g;
		my $match = join ' OR ', map { qq("$_") } @w;
		utf8::encode($match);
		print {$q} "SELECT $i, doc FROM $table WHERE $table MATCH ",
			$sq->($match), " ORDER BY bm25($table) LIMIT 10;\n";
	}
	close $q;
	my %lists;
	for (split /\n/, `sqlite3 '$tmp/fts.db' < '$tmp/q.sql'`) {
		my ($i, $doc) = split /\t/;
		push @{ $lists{$i} }, $doc;
	}
	return [ map { $lists{$_} || [] } 0 .. $#docs ];
}

# --- scoring -----------------------------------------------------------------------

sub score {
	my ($lists) = @_;
	my ($mrr, $r3) = (0, 0);
	for my $i (0 .. $#docs) {
		my $l = $lists->[$i];
		for my $p (0 .. ($#$l < 9 ? $#$l : 9)) {
			next unless defined $l->[$p] && $l->[$p] == $i;
			$mrr += 1 / ($p + 1);
			$r3++ if $p < 3;
			last;
		}
	}
	return ($mrr / @docs, $r3 / @docs);
}

my @rows;
for my $t ([ plain => 'FTS5 bm25 (unicode61)' ], [ porter => 'FTS5 bm25 (porter)' ]) {
	my ($m, $r) = score(fts_ranks($t->[0]));
	push @rows, { name => $t->[1], mrr => $m, r3 => $r, fts => 1 };
	printf "%-34s MRR\@10 %.3f  recall\@3 %.3f\n", $t->[1], $m, $r;
}

# --- sluice ------------------------------------------------------------------------

# Ask every question with these parameters; the target's rank in each
# answer (0 = absent) and how many were not answered.
sub ask_all {
	my (%p) = @_;
	my (@qid, @lists);
	for my $i (0 .. $#docs) {
		($st, $j, $raw) = api(POST => "/dataset/$ds/question",
			{ %p, question => $docs[$i]{question} });
		die "POST question: $st $raw\n" unless $st == 200 || $st == 201 || $st == 202;
		push @qid, $j->{question_id};
	}
	my $failed = 0;
	for my $i (0 .. $#docs) {
		($st, $j, $raw) = api(GET => "/dataset/$ds/question/$qid[$i]?wait=30");
		$failed++ unless ($j->{status} // '') eq 'success';
		push @lists, [ map { $_->{metadata}{doc} } @{ $j->{relevant_documents} || [] } ];
	}
	return (\@lists, $failed);
}

my @configs = map { my $h = $_; map { [ $_, $h, 1 ] } qw(cos L2 L1 max dot) } 1, 0;
push @configs, [ cos => 1, 0 ], [ cos => 0, 0 ];
# QUICK=1: the defaults and MMR off only, for tuning runs.
@configs = ([ cos => 1, 1 ], [ cos => 1, 0 ]) if $ENV{QUICK};
for my $c (@configs) {
	my ($metric, $hybrid, $mmr) = @$c;
	my %p = (distance_metric => $metric,
		 hybrid => $hybrid ? JSON::PP::true : JSON::PP::false,
		 maximal_marginal_relevance => $mmr ? JSON::PP::true : JSON::PP::false);
	my $c0 = time;
	my ($l3, $f3) = ask_all(%p);
	my ($l10, $f10) = ask_all(%p, top_n => 10);
	my (undef, $r) = score($l3);
	my ($m) = score($l10);
	my $name = sprintf '%s, hybrid %s%s%s', $metric, $hybrid ? 'on' : 'off',
		$mmr ? '' : ', MMR off',
		$metric eq 'cos' && $hybrid && $mmr ? ' (defaults)' : '';
	push @rows, { name => "sluice $name", mrr => $m, r3 => $r, failed => $f3 + $f10,
		default => ($metric eq 'cos' && $hybrid && $mmr) };
	printf "%-34s MRR\@10 %.3f  recall\@3 %.3f  (%d questions in %.1f s%s)\n",
		"sluice $name", $m, $r, 2 * @docs, time - $c0,
		$f3 + $f10 ? ', ' . ($f3 + $f10) . ' not answered' : '';
}

# --- report ------------------------------------------------------------------------

my ($def) = grep { $_->{default} } @rows;
my @fts = grep { $_->{fts} } @rows;
my $report = sprintf "retrieval quality, %s UTC, %s\n", scalar gmtime, `uname -n` =~ s/\n//r;
$report .= sprintf "corpus: %s (bench/lib/corpus.pl), %d documents, question = the "
	. "document's one-line description, target = the document (<= %d chars); %s snippets; "
	. "ingestion %.1f s\n",
	$corpus, scalar @docs, $body_max, $info->{snippet_count} // scalar @snip, $ingest_s;
$report .= "POST documents answered 500 $retried times (tried again)\n" if $retried;
$report .= sprintf "dataset %s, embedder %s\n\n", $ds, $info->{embedder} // 'default';
$report .= sprintf "%-40s %8s %9s\n", 'configuration', 'MRR@10', 'recall@3';
$report .= sprintf "%-40s %8.3f %9.3f%s\n", $_->{name}, $_->{mrr}, $_->{r3},
	$_->{failed} ? "  ($_->{failed} questions not answered)" : '' for @rows;
$report .= "\n";
for my $f (@fts) {
	$report .= sprintf "sluice defaults vs %s: MRR\@10 %+.3f (ratio %.3f), recall\@3 %+.3f\n",
		$f->{name}, $def->{mrr} - $f->{mrr}, $f->{mrr} > 0 ? $def->{mrr} / $f->{mrr} : 0,
		$def->{r3} - $f->{r3};
}
print "\n$report";
open my $fh, '>', $out or die "$out: $!\n";
print {$fh} $report;
close $fh;
print "saved to $out\n";

api(DELETE => "/dataset/$ds");
PERL
