#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build tree into a temporary prefix and uses it the ways a
# user would: the files are there, a consumer of libc_db builds through
# pkg-config and through find_package(tdstat), the installed tdstat finds
# its installed shim, and the prefix still works after it is moved.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$1
source=$2
work=$(mktemp -d /tmp/tdstat-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "install_test: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >/dev/null

libdir=$(cd "$prefix" && ls -d lib*/ | head -n 1)
libdir=${libdir%/}
for file in bin/tdstat \
  "$libdir/libc_db.so" "$libdir/libc_db.so.1" "$libdir/libtdstat_ps.so" "$libdir/libtdshim.so" \
  include/tdstat/thread_db_stats.h include/tdstat/ps_live.h include/tdstat/region.h \
  "$libdir/pkgconfig/tdstat-agent.pc" "$libdir/pkgconfig/tdstat-ps.pc" \
  "$libdir/cmake/tdstat/tdstatConfig.cmake" "$libdir/cmake/tdstat/tdstatConfigVersion.cmake" \
  share/man/man1/tdstat.1 share/man/man7/libtdshim.7 share/man/man3/td_ta_enable_stats.3 \
  share/man/man3/td_ta_reset_stats.3 share/man/man3/td_ta_get_stats.3 \
  share/man/man3/td_ta_get_stats_ns.3; do
  [[ -e "$prefix/$file" ]] || fail "not installed: $file"
done
soname=$(objdump -p "$prefix/$libdir/libc_db.so.1" | awk '$1 == "SONAME" { print $2 }')
[[ "$soname" == libc_db.so.1 ]] || fail "libc_db SONAME is '$soname'"

# The consumer, built through pkg-config.
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
flags=$(pkg-config --cflags --libs tdstat-ps)
cc -Wall -Wextra -o "$work/consumer-pc" "$source/tests/tdstat/consumer/consumer.c" $flags \
  -Wl,-rpath,"$prefix/$libdir"
shim=$(pkg-config --variable=shim tdstat-agent)
[[ -e "$shim" ]] || fail "pkg-config's shim variable names no file: $shim"
"$work/consumer-pc" no-shim
LD_PRELOAD=$shim TDSTAT_ENABLE=1 "$work/consumer-pc" shim

# The consumer, built through find_package(tdstat).
cmake -S "$source/tests/tdstat/consumer" -B "$work/consumer-build" \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer-build" >/dev/null
shim=$(cat "$work/consumer-build/shim-path.txt")
LD_PRELOAD=$shim TDSTAT_ENABLE=1 "$work/consumer-build/consumer" shim

# The installed command finds the installed shim and libraries.
env -u TDSTAT_SHIM "$prefix/bin/tdstat" run -- true 2>"$work/summary.txt" ||
  fail "installed tdstat run failed: $(cat "$work/summary.txt")"
grep -q "Thread statistics" "$work/summary.txt" || fail "no summary: $(cat "$work/summary.txt")"

# A moved prefix: pkg-config paths follow (${pcfiledir}), tdstat finds its shim.
mv "$prefix" "$work/moved"
PKG_CONFIG_PATH=$work/moved/$libdir/pkgconfig
[[ "$(PKG_CONFIG_PATH=$PKG_CONFIG_PATH pkg-config --variable=libdir tdstat-agent)" -ef \
   "$work/moved/$libdir" ]] || fail "pkg-config libdir does not follow the moved prefix"
env -u TDSTAT_SHIM "$work/moved/bin/tdstat" run -- true 2>/dev/null ||
  fail "a moved installation cannot run"
echo "install_test: ok"
