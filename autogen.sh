#!/bin/sh
# Generate configure and Makefile.in (scripts/dev build does this by itself).
set -e
cd "$(dirname "$0")"
mkdir -p m4
exec autoreconf -fi
