#!/usr/bin/perl
# Two handler bugs, fixed: pause and resume stop at their first refusal
# (before, a 400 went on into a FOR UPDATE transaction on an id never set,
# and the serve log said "second response refused"); a multipart file name
# sent as a Windows path keeps its backslashes, so the part after the last
# one is the name stored.

use strict;
use warnings;

use File::Temp ();
use Test::More;

use JobsFixture qw(customer_token);
use SluiceTest;

my ($tok, $cid) = customer_token('demo');
my $p = http(POST => '/platform/pipeline', { token => $tok, json => { name => 'p86',
	cron => '0 3 * * *', jobs => [ { input => { connector => 'file_storage', plugin => 'local',
	prefix => 'x/' }, output => { plugin => 'mariadb', raw => { table_schema => 'raw',
	table_name => 't86' } } } ] } })->{json};
my $pid = $p->{pipeline_id};
ok($pid, 'a scheduled pipeline');
sub paused { scalar mysql("SELECT paused FROM pipelines WHERE id = '$pid'") }

my $log = serve_log_offset();
my @bad = (
	[ 'no body, no Content-Type', undef, 415 ],
	[ 'malformed JSON', '{"customer_id":', 400 ],
	[ 'an array', '[]', 400 ],
	[ 'unknown field', { customer_id => $cid, pipeline_id => $pid, force => 1 }, 400 ],
	[ 'pipeline_id missing', { customer_id => $cid }, 400 ],
	[ 'customer_id missing', { pipeline_id => $pid }, 400 ],
	[ 'pipeline_id a number', { customer_id => $cid, pipeline_id => 86 }, 400 ],
	[ 'customer_id null', { customer_id => undef, pipeline_id => $pid }, 400 ],
	[ "another customer's id", { customer_id => '0a0a0a0a-8686-4868-8686-868686868686',
				      pipeline_id => $pid }, 403 ],
	[ 'customer_id upper case', { customer_id => uc $cid, pipeline_id => $pid }, 403 ],
	[ 'unknown pipeline', { customer_id => $cid,
				pipeline_id => '01234567_89ab_4cde_8f01_234567898686' }, 404 ],
	[ 'malformed pipeline id', { customer_id => $cid, pipeline_id => "$pid'--" }, 404 ],
);
for my $what (qw(pause resume)) {
	for my $c (@bad) {
		my ($name, $body, $status) = @$c;
		my %o = (token => $tok);
		if (ref $body) { $o{json} = $body } elsif (defined $body) {
			$o{body} = $body;
			$o{content_type} = 'application/json';
		}
		my $res = http(POST => "/platform/pipeline/$what", \%o);
		json_response_is($res, $status, undef, "$what, $name");
		ok(ref $res->{json} eq 'HASH' && length($res->{json}{detail} // ''),
		   "$what, $name: one detail");
	}
	is(paused(), 0, "$what: nothing refused changed the pipeline");
}
my @twice = grep { /second response refused/ } serve_log_since($log);
is(scalar @twice, 0, 'every refusal was the only answer') or diag join "\n", @twice;
is(http(POST => '/platform/pipeline/pause', { token => $tok, json => { customer_id => $cid,
	pipeline_id => $pid } })->{status}, 200, 'a good pause still works');
is(paused(), 1, 'and pauses');

# --- Windows paths as file names ------------------------------------------------------
my $st = token(customer => 'demo', permissions => [qw(STORAGE_EXPLORER.READ STORAGE_EXPLORER.WRITE)]);
for my $c ([ 'C:\\Users\\me\\win86.csv', 'win86.csv' ],
	   [ 'C:\\\\Users\\\\me\\\\esc86.csv', 'esc86.csv' ],          # escaped, as some clients send it
	   [ 'folder/unix86.csv', 'unix86.csv' ]) {
	my ($sent, $stored) = @$c;
	my $body = "--b86\r\nContent-Disposition: form-data; name=\"file\"; filename=\"$sent\"\r\n"
	    . "Content-Type: text/csv\r\n\r\nid\n1\n\r\n--b86--\r\n";
	my $res = http(POST => '/storage-explorer/storage/upload?folder_path=t86', { token => $st,
		body => $body, content_type => 'multipart/form-data; boundary=b86' });
	is($res->{status}, 201, "upload of '$sent'") or diag describe($res);
	is($res->{json}{files}[0]{file_name}, $stored, "stored as '$stored'");
	is($res->{json}{files}[0]{file_path}, "t86/$stored", "at t86/$stored");
}

# The same for documents uploaded to a retrieval dataset.
my $ds = http(POST => '/dataset', { basic => env('SLUICE_DEMO_BASIC'), json => { name => 'd86' } })->{json};
my $body = "--b86\r\nContent-Disposition: form-data; name=\"file\"; "
    . "filename=\"C:\\Docs\\notes86.txt\"\r\nContent-Type: text/plain\r\n\r\n"
    . "Backslashes in a path are separators.\r\n--b86--\r\n";
my $res = http(POST => "/dataset/$ds->{dataset_id}/documents", { basic => env('SLUICE_DEMO_BASIC'),
	body => $body, content_type => 'multipart/form-data; boundary=b86' });
is($res->{status}, 202, 'a document uploaded with a Windows path') or diag describe($res);
is(scalar mysql("SELECT source FROM rag_documents WHERE dataset_id = '$ds->{dataset_id}'"),
   'notes86.txt', 'its source is the last part of the path');

# --- the harness: a test file whose run adds such a line fails ------------------------
{
	my $dir = File::Temp::tempdir(CLEANUP => 1);
	open my $fh, '>', "$dir/t.t" or die;
	print {$fh} <<'T';
use strict; use warnings; use Test::More; use SluiceTest;
ok(1, 'every assertion passes');
open my $log, '>>', $ENV{SLUICE_SERVE_LOG} or die;
print {$log} qq{ts=x level=warn pid=1 msg="second response refused" status=500 first=400\n};
close $log;
done_testing();
T
	close $fh;
	open $fh, '>', "$dir/serve.log" or die;
	close $fh;
	local $ENV{SLUICE_SERVE_LOG} = "$dir/serve.log";
	my $r = run_cmd([ $^X, '-I', env('SLUICE_ROOT') . '/t/lib', "$dir/t.t" ]);
	isnt($r->{exit}, 0, 'a test that made a handler answer twice fails');
	like($r->{err}, qr/second response refused/, '... saying why');
}

http(DELETE => "/platform/pipeline/$pid", { token => $tok, headers => { customer_name => 'demo' } });
http(DELETE => "/dataset/$ds->{dataset_id}", { basic => env('SLUICE_DEMO_BASIC') });
system('rm', '-rf', env('SLUICE_VAR') . '/storage/customers/' . env('SLUICE_DEMO_CUSTOMER_ID') . '/t86');
done_testing();
