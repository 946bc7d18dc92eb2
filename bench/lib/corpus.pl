#!/usr/bin/perl
# bench/lib/corpus.pl - known-item corpora of real text found on this Debian
# machine, for the retrieval quality benchmarks.
#
#   perl bench/lib/corpus.pl NAME DOCS BODY_MAX > corpus.json
#
# DOCS is a number, or "all".  NAME may join several with "+"
# ("man1+man3+perl+debian"): their documents together, in that order.
# Prints a JSON array of {"source", "question", "text"}: text is a document
# nobody here wrote, question a one-line description of it written by its
# own author, which the text itself does not contain.  Every question is
# different from every other (case-insensitively), and DOCS documents are
# taken at an even stride, in name order, from those that qualify, so the
# set does not depend on what the first names happen to be.
#
# NAME (each from another source and other writers):
#   man1    section-1 manual pages installed by packages (commands); the
#           question is the NAME line's description ("list directory
#           contents"), the text the page without its header and NAME
#           section.  The Google Cloud CLI's thousands of generated pages
#           are left out (one product's near-duplicates).
#   man3    section-3 pages of C libraries (glibc, OpenSSL, curl, ...),
#           not the Perl ones (those are in perl); as man1.
#   perl    Perl module documentation (POD of the .pm and .pod files under
#           Perl's library directories, rendered by pod2text); the
#           question is the NAME line's description ("Perl interface to
#           the zlib compression library").
#   debian  descriptions of the installed Debian packages (dpkg's status
#           file): the question is the synopsis line, the text the long
#           description.  Short documents, mostly one snippet each.
#   gcide   not technical: entries of the Collaborative International
#           Dictionary of English (Webster's 1913 and its editors;
#           Debian's dict-gcide), each a headword's every entry; the
#           question is WordNet's gloss of the word's most used sense
#           (Princeton's writers; Debian's wordnet-base), without its
#           examples, and never naming the word.  Words WordNet saw in
#           its tagged texts, at most 1500 at an even stride.
#
# Texts are cut to BODY_MAX characters at a line end.
use strict;
use warnings;

use JSON::PP;

my ($name, $ndocs, $body_max) = @ARGV;
die "usage: corpus.pl man1|man3|perl|debian|gcide[+...] DOCS BODY_MAX\n"
	unless defined $body_max && $ndocs =~ /^([1-9][0-9]*|all)$/ && $body_max =~ /^[1-9][0-9]*$/;

my %build = (man1 => sub { man_pages(1, 1500) }, man3 => sub { man_pages(3, 700) },
	perl => \&perl_modules, debian => \&debian_packages, gcide => \&gcide_entries);
my @parts = split /\+/, $name;
$build{$_} or die "corpus.pl: unknown corpus '$_'\n" for @parts;

my (%seen_q, @docs);
for my $d (map { $build{$_}->() } @parts) {
	my $q = $d->{question};
	$q =~ s/\s+/ /g;
	$q =~ s/^ | $//g;
	my @w = $q =~ /(\w+)/g;
	next if @w < 3 || length $q > 900 || $seen_q{ lc $q }++;
	my $body = $d->{text};
	$body =~ s/^\s+//;
	$body =~ s/[ \t]+/ /g;
	$body =~ s/\n{3,}/\n\n/g;
	next if length $body < $d->{min_len};
	if (length $body > $body_max) {
		my $cut = rindex($body, "\n", $body_max);
		$body = substr($body, 0, $cut > $body_max / 2 ? $cut : $body_max);
	}
	push @docs, { source => $d->{source}, question => $q, text => $body };
}
$ndocs = @docs if $ndocs eq 'all';
die "corpus.pl: only " . scalar(@docs) . " $name documents qualified\n" if @docs < $ndocs;
@docs = @docs[ map { int($_ * @docs / $ndocs) } 0 .. $ndocs - 1 ];
binmode STDOUT;
print JSON::PP->new->utf8->canonical->encode(\@docs), "\n";
printf STDERR "corpus %s: %d documents\n", $name, scalar @docs;

# --- manual pages -----------------------------------------------------------------

sub render_man {
	my ($file) = @_;
	local $ENV{MANWIDTH} = 200;
	local $ENV{MANROFFOPT} = '-rHY=0';
	my $q = $file =~ s/'/'\\''/gr;
	my $text = `man -l -P cat '$q' 2>/dev/null | col -bx`;
	utf8::decode($text);
	return $text;
}

# Pages a package installed (dpkg's file lists), but not the Google Cloud
# CLI's, in section $sec proper (3, not 3pm or 3perl), of more than $min
# bytes compressed (smaller ones are mostly stubs pointing to another page).
sub man_pages {
	my ($sec, $min) = @_;
	my %packaged;
	for my $list (glob '/var/lib/dpkg/info/*.list') {
		next if $list =~ m{/google-cloud-[^/]*\.list$};
		open my $fh, '<', $list or next;
		while (<$fh>) {
			chomp;
			$packaged{$_} = 1 if m{^/usr/share/man/man$sec/[^/]+\.$sec\.gz$};
		}
	}
	my @files = sort grep { $packaged{$_} && -f $_ && !-l $_ && -s $_ > $min }
		glob "/usr/share/man/man$sec/*.$sec.gz";
	my @out;
	for my $file (@files) {
		my @lines = split /\n/, render_man($file);
		shift @lines while @lines && $lines[0] !~ /^NAME\s*$/;
		next unless @lines;
		shift @lines;
		my $nl = '';
		$nl .= ' ' . shift @lines while @lines && $lines[0] =~ /\S/;
		my ($desc) = $nl =~ /\s[-\x{2010}\x{2013}\x{2014}\x{2212}]+\s+(.+)$/ or next;
		# help2man's stand-in says nothing about the program
		next if $desc =~ /^\s*manual page for/i;
		pop @lines while @lines && $lines[-1] !~ /\S/;
		pop @lines if @lines && $lines[-1] =~ /\S\s{5,}\S/;    # the footer line
		(my $source = $file) =~ s{.*/}{};
		$source =~ s/\.gz$//;
		push @out, { source => $source, question => $desc, text => join("\n", @lines),
			min_len => 400 };
	}
	return @out;
}

# --- Perl modules -----------------------------------------------------------------

sub perl_modules {
	my @dirs = grep { -d } glob '/usr/share/perl/5.* /usr/share/perl5 /usr/lib/x86_64-linux-gnu/perl/5.* /usr/lib/x86_64-linux-gnu/perl5/5.*';
	my %files;
	for my $d (@dirs) {
		for (split /\n/, `find '$d' -type f \\( -name '*.pm' -o -name '*.pod' \\) 2>/dev/null`) {
			(my $rel = $_) =~ s{^\Q$d\E/}{};
			$files{$rel} //= $_;             # the first directory's copy of a module
		}
	}
	my @out;
	for my $rel (sort keys %files) {
		my $q = $files{$rel} =~ s/'/'\\''/gr;
		my $text = `pod2text -w 200 '$q' 2>/dev/null`;
		utf8::decode($text);
		my @lines = split /\n/, $text;
		shift @lines while @lines && $lines[0] !~ /^NAME\s*$/;
		next unless @lines;
		shift @lines;
		my $nl = '';
		$nl .= ' ' . shift @lines while @lines && $lines[0] =~ /\S/;
		my ($desc) = $nl =~ /^\s*\S+\s+-+\s+(.+)$/ or next;
		(my $source = $rel) =~ s{/}{::}g;
		$source =~ s/\.(pm|pod)$//;
		push @out, { source => $source, question => $desc, text => join("\n", @lines),
			min_len => 400 };
	}
	return @out;
}

# --- Debian package descriptions ------------------------------------------------

sub debian_packages {
	open my $fh, '<:encoding(UTF-8)', '/var/lib/dpkg/status' or die "dpkg status: $!\n";
	local $/ = '';
	my @out;
	while (my $para = <$fh>) {
		my ($pkg) = $para =~ /^Package: (\S+)/m or next;
		my ($desc, $long) = $para =~ /^Description: ([^\n]*)\n((?: [^\n]*\n?)*)/m or next;
		$long =~ s/^ \.$//mg;
		$long =~ s/^ //mg;
		push @out, { source => $pkg, question => $desc, text => $long, min_len => 200 };
	}
	return sort { $a->{source} cmp $b->{source} } @out;
}

# --- dictionary entries -----------------------------------------------------------

# WordNet's glosses of the words its tagged texts used: word => the gloss of
# its most used sense, in the part of speech it was tagged most in.
sub wordnet_glosses {
	my %best;
	for my $pos (qw(noun verb adj adv)) {
		open my $fh, '<', "/usr/share/wordnet/index.$pos" or die "wordnet $pos: $!\n";
		while (<$fh>) {
			next if /^ /;
			my @f = split;
			my ($word, $np) = ($f[0], $f[3]);
			next unless $word =~ /^[a-z]{4,}$/;
			my ($tagged, $offset) = @f[5 + $np, 6 + $np];
			next unless $tagged > 0 && (!$best{$word} || $tagged > $best{$word}[0]);
			$best{$word} = [ $tagged, $pos, $offset ];
		}
	}
	my %gloss;
	for my $pos (qw(noun verb adj adv)) {
		open my $fh, '<', "/usr/share/wordnet/data.$pos" or die "wordnet $pos: $!\n";
		for my $word (grep { $best{$_}[1] eq $pos } keys %best) {
			seek $fh, $best{$word}[2], 0;
			my ($g) = <$fh> =~ /\| (.*)$/ or next;
			$g =~ s/;?\s*".*//;            # the examples
			$gloss{$word} = $g unless $g =~ /\b\Q$word\E/i;
		}
	}
	return \%gloss;
}

sub dictd_number {
	my $n = 0;
	$n = $n * 64 + index('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', $_)
		for split //, $_[0];
	return $n;
}

sub gcide_entries {
	my $gloss = wordnet_glosses();
	my %where;
	open my $ix, '<', '/usr/share/dictd/gcide.index' or die "gcide index: $!\n";
	while (<$ix>) {
		chomp;
		my ($head, $off, $len) = split /\t/;
		push @{ $where{ lc $head } }, [ dictd_number($off), dictd_number($len) ]
			if defined $len && $gloss->{ lc $head };
	}
	my $dict = `gzip -dc /usr/share/dictd/gcide.dict.dz`;
	die "gcide: cannot read the dictionary\n" unless length $dict;
	my @words = sort keys %where;
	my $n = @words < 1500 ? @words : 1500;
	my @out;
	for my $word (@words[ map { int($_ * @words / $n) } 0 .. $n - 1 ]) {
		my $text = join "\n", map { substr($dict, $_->[0], $_->[1]) } @{ $where{$word} };
		utf8::decode($text);
		$text =~ s/^\s*\[[^\]\n]*\]\s*$//mg;      # [1913 Webster], [PJC]: editors' marks
		$text =~ s/\\[^\\\n]*\\//g;                # \Ac*cred"it\ : the syllables
		$text =~ s/ ?\([^()\n]{0,40}[?"][^()\n]{0,40}\)//g;   # (k?l"t?r): the pronunciation
		$text =~ s/[{}]//g;
		push @out, { source => $word, question => $gloss->{$word}, text => $text,
			min_len => 100 };
	}
	return @out;
}
