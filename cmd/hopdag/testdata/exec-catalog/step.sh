#!/bin/sh
# step.sh OUT SECONDS: the upgrade of one exec component, for the tests and
# the README. hopdag sets HOPDAG_COMPONENT and HOPDAG_VERSION. It works for
# SECONDS, then writes OUT/<component> holding the version, and logs its
# start and end in OUT/runs.log. A second copy of the same component
# running at the same time is what the tests look for: it is logged in
# OUT/OVERLAP and fails.
set -eu
out=$1 seconds=$2
name=$HOPDAG_COMPONENT version=$HOPDAG_VERSION
mkdir -p "$out"
if ! mkdir "$out/$name.running" 2>/dev/null; then
  echo "overlap: $name $version" >>"$out/OVERLAP"
  exit 1
fi
trap 'rmdir "$out/$name.running"; echo "stopped $name $version" >>"$out/runs.log"; exit 143' TERM INT
echo "start $name $version" >>"$out/runs.log"
sleep "$seconds"
printf '%s\n' "$version" >"$out/$name.tmp"
mv "$out/$name.tmp" "$out/$name"
echo "end $name $version" >>"$out/runs.log"
rmdir "$out/$name.running"
