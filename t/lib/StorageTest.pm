package StorageTest;

# Shared code of the storage explorer API tests (t/api/5*.t): customers and
# their tokens, multipart uploads, waiting for inference, the customer's
# directory in the storage area, and the area's error bodies.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use IO::Socket::SSL qw(SSL_VERIFY_NONE);
use Test::More ();
use Time::HiRes qw(time sleep);

use SluiceTest;

our @EXPORT = qw(
	sx_customer sx storage_dir multipart_body upload
	wait_dataset wait_upload sx_error_is dataset_of upload_status
	open_upload_stream partial_files
);

# sx_customer('name', permissions => 'A,B', sub => 'x@y'): the customer
# (made when missing) -> ($token, $customer_id).  Default permissions: both
# storage explorer ones.
sub sx_customer {
	my ($name, %o) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', $name,
			  '--if-missing', '-c', env('SLUICE_CONF') ]);
	croak "customer add $name: $r->{err}" if $r->{exit};
	my $id = mysql("SELECT id FROM customers WHERE name = '$name'");
	my $t = token(customer => $name, sub => $o{sub} // "$name\@example.com",
		      permissions => $o{permissions}
		          // 'STORAGE_EXPLORER.READ,STORAGE_EXPLORER.WRITE');
	return ($t, $id);
}

# sx($method, $path, $token, %http_opts)
sub sx {
	my ($method, $path, $token, %o) = @_;
	return http($method, $path, { token => $token, %o });
}

sub storage_dir {
	my ($cid) = @_;
	return env('SLUICE_VAR') . "/storage/customers/$cid";
}

# multipart_body($boundary, [filename, content, field, content_type], ...)
sub multipart_body {
	my ($b, @parts) = @_;
	my $body = '';
	for my $p (@parts) {
		my ($name, $content, $field, $ct) = @$p;
		$body .= "--$b\r\nContent-Disposition: form-data; name=\"" . ($field // 'file')
		    . '"' . (defined $name ? "; filename=\"$name\"" : '') . "\r\n"
		    . 'Content-Type: ' . ($ct // 'application/octet-stream') . "\r\n\r\n"
		    . $content . "\r\n";
	}
	return $body . "--$b--\r\n";
}

# upload($token, $folder_or_undef, [name, content, field], ...) -> response
sub upload {
	my ($token, $folder, @files) = @_;
	my $b = "----sluice-st-$$-" . int(rand(1e9));
	my $q = defined $folder ? '?folder_path=' . _q($folder) : '';
	return sx(POST => "/storage-explorer/storage/upload$q", $token,
		  body => multipart_body($b, @files),
		  content_type => "multipart/form-data; boundary=$b");
}

sub _q {
	my ($s) = @_;
	$s =~ s/([^A-Za-z0-9._~\/-])/sprintf('%%%02X', ord $1)/ge;
	return $s;
}

# Wait until the dataset is no longer pending / inferring -> its JSON.
sub wait_dataset {
	my ($token, $id, $timeout) = @_;
	my $ds;
	wait_until($timeout // 60, sub {
		my $res = sx(GET => "/storage-explorer/datasets/$id", $token);
		$ds = $res->{json};
		$res->{status} == 200 && $ds->{status} =~ /^(ready|failed)$/;
	}, 0.1);
	return $ds;
}

sub upload_status {
	my ($upload_id) = @_;
	return mysql("SELECT status FROM uploads WHERE id = '$upload_id'");
}

# Wait until the upload is settled -> its status.
sub wait_upload {
	my ($upload_id, $timeout) = @_;
	my $st = '';
	wait_until($timeout // 60, sub {
		$st = upload_status($upload_id);
		$st ne 'processing';
	}, 0.1);
	return $st;
}

sub dataset_of {
	my ($res, $name) = @_;
	for my $f (@{ $res->{json}{files} || [] }) {
		return $f->{dataset_id} if $f->{file_name} eq $name;
	}
	return undef;
}

# Status, JSON, and a body of exactly {"error": $code, "message": ...}
# whose message matches $msg (a string: equal; a regexp: like).
sub sx_error_is {
	my ($res, $status, $code, $msg, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $ok = Test::More::is($res->{status}, $status, "$name: status $status");
	my $j = $res->{json};
	# A 5xx body also names the request (docs/api.md, "Request ids").
	my @keys = $status >= 500 ? qw(error message request_id) : qw(error message);
	$ok = Test::More::is_deeply([ sort keys %{ $j || {} } ], \@keys,
				    "$name: body {" . join(', ', @keys) . "}") && $ok;
	$ok = Test::More::is($j->{request_id}, SluiceTest::header($res, 'x-request-id'),
			     "$name: request_id is the X-Request-Id") && $ok
		if $status >= 500;
	$ok = Test::More::is($j->{error}, $code, "$name: error $code") && $ok;
	if (ref $msg eq 'Regexp') {
		$ok = Test::More::like($j->{message} // '', $msg, "$name: message") && $ok;
	} elsif (defined $msg) {
		$ok = Test::More::is($j->{message}, $msg, "$name: message") && $ok;
	}
	Test::More::diag(describe($res)) unless $ok;
	return $ok;
}

# An upload whose body is written by the caller: open_upload_stream($token,
# $folder, $content_length, $content_type) -> a connected TLS socket with
# the request head sent.
sub open_upload_stream {
	my ($token, $folder, $length, $ct) = @_;
	my ($host, $port) = env('SLUICE_URL') =~ m{^https://([^/:]+):(\d+)} or croak 'url';
	my $s = IO::Socket::SSL->new(PeerHost => $host, PeerPort => $port,
				     SSL_verify_mode => SSL_VERIFY_NONE)
		or croak "connect: $IO::Socket::SSL::SSL_ERROR";
	my $q = defined $folder ? '?folder_path=' . _q($folder) : '';
	print {$s} "POST /storage-explorer/storage/upload$q HTTP/1.1\r\n"
	    . "Host: $host:$port\r\nAuthorization: Bearer $token\r\n"
	    . "Content-Type: $ct\r\nContent-Length: $length\r\nConnection: close\r\n\r\n"
		or croak "write: $!";
	return $s;
}

# Every .sluice-partial-* file under $dir (recursively).
sub partial_files {
	my ($dir) = @_;
	my @found;
	my @todo = ($dir);
	while (defined(my $d = shift @todo)) {
		opendir my $dh, $d or next;
		for my $e (readdir $dh) {
			next if $e eq '.' || $e eq '..';
			my $p = "$d/$e";
			push @found, $p if $e =~ /^\.sluice-partial-/;
			push @todo, $p if -d $p && !-l $p;
		}
	}
	return @found;
}

1;
