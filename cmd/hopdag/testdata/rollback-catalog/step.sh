#!/bin/sh
# step.sh OUT SECONDS: the upgrade of one exec component, for the tests and
# the README. hopdag sets HOPDAG_COMPONENT and HOPDAG_VERSION. It works for
# SECONDS, then writes OUT/<component> holding the version, and logs its
# start and end in OUT/runs.log. A second copy of the same component
# running at the same time is what the tests look for: it is logged in
# OUT/OVERLAP and fails (flock(1), from util-linux, holds the lock).
set -eu
out=$1 seconds=$2
name=$HOPDAG_COMPONENT version=$HOPDAG_VERSION
mkdir -p "$out"
# The lock is on file descriptor 9, which every process of the command
# inherits: it is free again only once they have all exited.
exec 9>>"$out/$name.lock"
if ! flock -n 9; then
  echo "overlap: $name $version" >>"$out/OVERLAP"
  exit 1
fi
# Stopped (SIGTERM), it says so. Its stdout and stderr are pipes to the
# hopdag that started it; once that hopdag is gone, writing there must not
# kill it before it has logged its stop.
trap '' PIPE
trap 'echo "stopped $name $version" >>"$out/runs.log"; exit 143' TERM INT
echo "start $name $version" >>"$out/runs.log"
sleep "$seconds"
printf '%s\n' "$version" >"$out/$name.tmp"
mv "$out/$name.tmp" "$out/$name"
echo "end $name $version" >>"$out/runs.log"
