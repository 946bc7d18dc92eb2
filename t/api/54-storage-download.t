#!/usr/bin/perl
# GET /storage-explorer/storage/download: the bytes through nginx
# (X-Accel-Redirect) with Content-Type, Content-Disposition and
# Content-Length; 400 / 404 / 500 bodies; path escapes (../, %2e%2e/,
# absolute, backslashes, symlinks planted in the root) refused; isolation.

use strict;
use warnings;

use Test::More;
use POSIX qw(mkfifo);

use SluiceTest;
use StorageTest;

my ($tok, $cid) = sx_customer('st-download');
my ($other, $ocid) = sx_customer('st-download-other');
my $dir = storage_dir($cid);
my $DL = '/storage-explorer/storage/download?file_path=';

sub q_enc {
	my ($s) = @_;
	$s =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
	return $s;
}

sub dl { my ($path, $t) = @_; return sx(GET => $DL . q_enc($path), $t // $tok) }

my $csv = join('', map { "$_,value $_\n" } 1 .. 2000);
my $odd = "a b#c?d%e&f+g.csv";
my $res = upload($tok, 'docs', [ 'report.csv', $csv ], [ "Umsatz M\xc3\xa4rz.csv", "x\n1\n" ],
		 [ $odd, "y\n2\n" ]);
is($res->{status}, 201, 'three files uploaded') or diag describe($res);
$res = upload($other, 'docs', [ 'theirs.csv', "secret\n" ]);
is($res->{status}, 201, "another customer's file") or diag describe($res);

# --- 200 -----------------------------------------------------------------------------

$res = dl('docs/report.csv');
is($res->{status}, 200, 'download: 200');
is($res->{content}, $csv, 'the bytes of the file');
is(header($res, 'content-type'), 'application/octet-stream', 'Content-Type application/octet-stream');
is(header($res, 'content-length'), length $csv, 'Content-Length is the file size (set by nginx)');
is(header($res, 'content-disposition'), 'attachment; filename="report.csv"', 'Content-Disposition');
is(header($res, 'x-accel-redirect'), undef, 'the internal redirect is not shown to the client');

$res = sx(GET => "${DL}docs/report.csv", $tok, headers => { Range => 'bytes=0-9' });
is($res->{status}, 206, 'a Range request: 206 from nginx');
is($res->{content}, substr($csv, 0, 10), 'the bytes asked for');

$res = dl("docs/Umsatz M\xc3\xa4rz.csv");
is($res->{status}, 200, 'non-ASCII name: 200');
is($res->{content}, "x\n1\n", 'its bytes');
is(header($res, 'content-disposition'),
   q{attachment; filename="Umsatz M_rz.csv"; filename*=UTF-8''Umsatz%20M%C3%A4rz.csv},
   'filename (ASCII stand-in) and filename* (UTF-8)');

$res = dl("docs/$odd");
is($res->{status}, 200, 'a name with space # ? % & +: 200');
is($res->{content}, "y\n2\n", 'the right file (the internal URI is percent-encoded)');
is(header($res, 'content-disposition'), qq{attachment; filename="$odd"}, 'its Content-Disposition');


# The internal location is not reachable from outside.
is(http(GET => "/_protected_storage/customers/$cid/docs/report.csv")->{status}, 404,
   'the internal location answers 404 to clients');

# --- 400 --------------------------------------------------------------------------------

sx_error_is(sx(GET => '/storage-explorer/storage/download', $tok), 400, 'file_path_required',
	    'file_path is required', 'no file_path');
sx_error_is(sx(GET => $DL, $tok), 400, 'file_path_required', 'file_path is required', 'empty file_path');
my @bad = (
	[ '../st-download-other/docs/theirs.csv', "file_path must not contain '.' or '..' segments" ],
	[ "../$ocid/docs/theirs.csv", "file_path must not contain '.' or '..' segments" ],
	[ 'docs/../../../../../../etc/passwd', "file_path must not contain '.' or '..' segments" ],
	[ './docs/report.csv', "file_path must not contain '.' or '..' segments" ],
	[ '/etc/passwd', 'file_path must be relative to the storage area, not absolute' ],
	[ $dir . '/docs/report.csv', 'file_path must be relative to the storage area, not absolute' ],
	[ '..\\..\\etc\\passwd', 'file_path must not contain backslashes or control characters' ],
	[ 'docs//report.csv', "file_path must not contain empty segments ('//')" ],
	[ 'docs/.sluice-partial-0123', "file_path must not name hidden entries (a segment starting with '.')" ],
	[ "docs/caf\xe9.csv", 'file_path must be UTF-8' ],
	[ 'x' x 1025, 'file_path is too long (1024 bytes in all, 255 per segment)' ],
);
for my $b (@bad) {
	sx_error_is(dl($b->[0]), 400, 'invalid_file_path', $b->[1], 'file_path ' . substr($b->[0], 0, 40));
}
# encoded once more than usual: decoded once, still the dots
sx_error_is(sx(GET => "${DL}%2e%2e/%2e%2e/etc/passwd", $tok), 400, 'invalid_file_path',
	    "file_path must not contain '.' or '..' segments", 'file_path %2e%2e/%2e%2e/etc/passwd');
sx_error_is(sx(GET => "${DL}..%2F..%2Fetc%2Fpasswd", $tok), 400, 'invalid_file_path',
	    "file_path must not contain '.' or '..' segments", 'file_path ..%2F..%2Fetc%2Fpasswd');
sx_error_is(sx(GET => "${DL}docs%00.csv", $tok), 400, 'invalid_file_path',
	    'file_path has a malformed percent escape or a NUL character', 'file_path with %00');
sx_error_is(sx(GET => "${DL}docs/report.csv&path=x", $tok), 400, 'invalid_query',
	    'path is not a known query parameter', 'an unknown parameter is named');
sx_error_is(sx(GET => "${DL}docs/report.csv&file_path=docs/report.csv", $tok), 400, 'invalid_query',
	    'file_path is given more than once', 'file_path twice');
# the longest file_path passes the checks (and is not there); one byte more does not
my $longest = join('/', ('d' x 255) x 3, 'e' x 100);
$longest .= '/' . ('f' x (1024 - length($longest) - 1));
nf_is(dl($longest), $longest, 'a file_path of 1024 bytes: checked, then not found');
sx_error_is(dl($longest . 'f'), 400, 'invalid_file_path',
	    'file_path is too long (1024 bytes in all, 255 per segment)', 'a file_path of 1025 bytes');
sx_error_is(sx(GET => "${DL}docs/report.csv%0a", $tok), 400, 'invalid_file_path',
	    'file_path must not contain backslashes or control characters', 'file_path with a newline');

# --- 404 ---------------------------------------------------------------------------------------

sub nf_is {
	my ($res, $path, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is($res, 404, { error => 'file_not_found', file_path => $path }, $name);
}
nf_is(dl('docs/missing.csv'), 'docs/missing.csv', 'unknown file');
nf_is(dl('docs'), 'docs', 'a folder');
nf_is(dl('docs/'), 'docs/', 'a folder with a slash (file_path echoed as given)');
nf_is(dl('docs/report.csv/x'), 'docs/report.csv/x', 'below a file');
nf_is(dl('docs/theirs.csv'), 'docs/theirs.csv', "another customer's file: as unknown");
nf_is(dl('docs/report.csv', $other), 'docs/report.csv', 'and the other way round');

# symlinks planted in the customer's root, pointing out of it (or in)
unlink "$dir/passwd.csv", "$dir/etc", "$dir/theirs", "$dir/docs/alias.csv", "$dir/inside";
symlink('/etc/passwd', "$dir/passwd.csv") or die "symlink: $!";
symlink('/etc', "$dir/etc") or die "symlink: $!";
symlink(storage_dir($ocid) . '/docs', "$dir/theirs") or die "symlink: $!";
symlink('report.csv', "$dir/docs/alias.csv") or die "symlink: $!";
symlink('docs', "$dir/inside") or die "symlink: $!";
nf_is(dl('passwd.csv'), 'passwd.csv', 'a symlink to /etc/passwd');
nf_is(dl('etc/passwd'), 'etc/passwd', 'through a symlink to /etc');
nf_is(dl('theirs/theirs.csv'), 'theirs/theirs.csv', "through a symlink into another customer's root");
nf_is(dl('docs/alias.csv'), 'docs/alias.csv', 'a symlink to a file beside it: links are never followed');
nf_is(dl('inside/report.csv'), 'inside/report.csv', 'through a symlink to a folder inside');

# a customer that never uploaded has no folder yet
my ($fresh, $fcid) = sx_customer('st-download-fresh');
nf_is(dl('anything.csv', $fresh), 'anything.csv', 'a customer without a storage folder');

# --- 500 ------------------------------------------------------------------------------------------

unlink "$dir/pipe.csv";
mkfifo("$dir/pipe.csv", 0644) or die "mkfifo: $!";
sx_error_is(dl('pipe.csv'), 500, 'storage_error', 'The file cannot be read from storage',
	    'a named pipe where the file should be');
my ($broken, $bcid) = sx_customer('st-download-broken');
my $bdir = storage_dir($bcid);
system('rm', '-rf', $bdir);
open my $fh, '>', $bdir or die "$bdir: $!";
close $fh;
sx_error_is(dl('a.csv', $broken), 500, 'storage_error', 'The file cannot be read from storage',
	    "a customer whose storage folder is not a folder");
unlink $bdir;

# --- permissions -------------------------------------------------------------------------------------

is(http(GET => "${DL}docs/report.csv")->{status}, 401, 'no token: 401');
json_response_is(http(GET => "${DL}docs/report.csv",
		      { token => token(customer => 'st-download', permissions => 'STORAGE_EXPLORER.WRITE') }),
		 403, { detail => 'Missing permission STORAGE_EXPLORER.READ' }, 'WRITE only: 403');

done_testing;
