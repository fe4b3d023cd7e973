#!/usr/bin/env bash
# make test-install (issue 39): what `make install`, `make uninstall` and
# `make deb` write, checked with the real tools: the installed file list and
# an uninstall that leaves no file; every manual page through `man --warnings`
# (groff) without a warning; the installed bash completion completing
# subcommands and options; both units as the package ships them through
# `systemd-analyze verify` (the binary they name is the package's, laid over
# /usr/bin in a private mount namespace: nothing is written to this system)
# and the system unit's `systemd-analyze security --offline=yes` exposure at
# most 2.5; the package's contents, conffile, Depends and lintian (0 errors);
# and an install, remove and purge by dpkg into a throwaway root, which must
# leave no file behind (apt-get --simulate checks Depends resolve here).
# BINARY: the harmonia-play to package (make test-install: the debug build;
# then dpkg-shlibdeps ignores the toolchain's Swift libraries, which no
# package provides, and lintian's one error for that build,
# custom-library-search-path for the toolchain's RUNPATH, is the only one
# allowed; `make deb`'s release binary links the Swift runtime in and has none).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
: "${BINARY:?BINARY: the harmonia-play to install}"
WORK=$ROOT/.build/test-install
rm -rf "$WORK" && mkdir -p "$WORK"
failures=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

# --- make install / make uninstall into DESTDIR
DEST=$WORK/dest
make --no-print-directory install DESTDIR="$DEST" BINARY="$BINARY" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; fail "make install"; }
(cd "$DEST" && find . \( -type f -o -type l \) -printf '%P %m\n' | LC_ALL=C sort) > "$WORK/installed.txt"
expected="etc/harmonia-play.conf 600
usr/local/bin/harmonia-play 755
usr/local/lib/systemd/system/harmonia-play.service 644
usr/local/lib/systemd/user/harmonia-play.service 644
usr/local/share/bash-completion/completions/harmonia-play 644
usr/local/share/fish/vendor_completions.d/harmonia-play.fish 644"
pages=$(grep -c '^usr/local/share/man/man1/harmonia-play.*\.1 644$' "$WORK/installed.txt")
check "make install: the binary, units, completions and config file ($(wc -l < "$WORK/installed.txt") files)" \
  test "$(grep -v -e '/man1/' -e '/zsh/' "$WORK/installed.txt")" = "$expected"
check "make install: zsh completion in site-functions" grep -qx 'usr/local/share/zsh/site-functions/_harmonia-play 644' "$WORK/installed.txt"
check "make install: a manual page per command ($pages), harmonia-play-serve.1 among them" \
  grep -qx 'usr/local/share/man/man1/harmonia-play-serve.1 644' "$WORK/installed.txt"
check "the unit runs the installed binary on /etc/harmonia-play.conf" \
  grep -qx 'ExecStart=/usr/local/bin/harmonia-play serve --config ${CREDENTIALS_DIRECTORY}/harmonia-play.conf' "$DEST/usr/local/lib/systemd/system/harmonia-play.service"
check "the config file has every setting commented out" bash -c "! grep -v -e '^#' -e '^\$' '$DEST/etc/harmonia-play.conf' && grep -q '^#music-dir = DIR\$' '$DEST/etc/harmonia-play.conf'"

# Manual pages: groff's warnings, as lintian asks for them.
warnings=0
for page in "$DEST"/usr/local/share/man/man1/*.1; do
  out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
  if [ -n "$out" ]; then echo "$page: $out" >&2; warnings=$((warnings + 1)); fi
done
check "man --warnings: no warning on $pages pages" test "$warnings" = 0
check "man: harmonia-play-serve(1) documents the config file" \
  bash -c "MANWIDTH=80 man -l '$DEST/usr/local/share/man/man1/harmonia-play-serve.1' 2>/dev/null | grep -q 'Config file:'"

# The bash completion as bash runs it: COMP_WORDS in, COMPREPLY out.
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
           _harmonia-play harmonia-play "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
           printf "%s\n" "${COMPREPLY[@]}"' _ "$DEST/usr/local/share/bash-completion/completions/harmonia-play" "$@"
}
check "bash completion: 'harmonia-play se' completes to serve" test "$(complete_words harmonia-play se)" = serve
check "bash completion: the subcommands" bash -c "[ \"\$(printf '%s\n' \"$(complete_words harmonia-play '' | tr '\n' ' ')\" | grep -o -w -e play -e serve -e info -e decode | sort | tr '\n' ' ')\" = 'decode info play serve ' ]"
check "bash completion: 'serve --conf' completes to --config" test "$(complete_words harmonia-play serve --conf)" = --config
check "bash completion: 'serve --passw' offers --password and --password-file" \
  test "$(complete_words harmonia-play serve --passw | sort | tr '\n' ' ')" = "--password --password-file "

make --no-print-directory uninstall DESTDIR="$DEST" >"$WORK/uninstall.log" 2>&1 || { cat "$WORK/uninstall.log" >&2; fail "make uninstall"; }
left=$(cd "$DEST" && find . \( -type f -o -type l \) -printf '%P\n')
check "make uninstall leaves no file${left:+ (left: $left)}" test -z "$left"

# --- make deb
deb=$(make --no-print-directory deb BINARY="$BINARY" DEB_DIR="$WORK" SHLIBDEPS_FLAGS=--ignore-missing-info 2>"$WORK/deb.log" | tail -n 1)
if [ ! -f "$deb" ]; then cat "$WORK/deb.log" >&2; fail "make deb"; echo "$failures failed" >&2; exit 1; fi
pass "make deb: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' | LC_ALL=C sort > "$WORK/contents.txt"
system_units=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
for path in /usr/bin/harmonia-play /etc/harmonia-play.conf "$system_units/harmonia-play.service" \
            /usr/lib/systemd/user/harmonia-play.service /usr/share/man/man1/harmonia-play.1.gz \
            /usr/share/man/man1/harmonia-play-serve.1.gz /usr/share/bash-completion/completions/harmonia-play \
            /usr/share/zsh/vendor-completions/_harmonia-play /usr/share/fish/vendor_completions.d/harmonia-play.fish \
            /usr/share/doc/harmonia-play/copyright /usr/share/doc/harmonia-play/changelog.Debian.gz; do
  grep -qx "$path" "$WORK/contents.txt" || fail "the package lacks $path"
done
check "dpkg-deb --contents: binary, config, units, pages, completions, copyright, changelog" true
check "conffiles: /etc/harmonia-play.conf" test "$(dpkg-deb --info "$deb" conffiles)" = /etc/harmonia-play.conf
depends=$(dpkg-deb --field "$deb" Depends)
check "Depends (dpkg-shlibdeps): runtime libraries only: $depends" \
  bash -c "grep -q libavcodec <<<'$depends' && ! grep -q -e '-dev' -e swift <<<'$depends'"
dpkg-deb -x "$deb" "$WORK/tree"
check "the packaged binary is stripped" bash -c "! readelf -S '$WORK/tree/usr/bin/harmonia-play' | grep -q -e '\.symtab' -e '\.debug_info'"

lintian --tag-display-limit 0 "$deb" > "$WORK/lintian.txt" 2>/dev/null
errors=$(grep '^E:' "$WORK/lintian.txt" | grep -v -e 'custom-library-search-path RUNPATH /opt/swift' || true)
[ -z "$errors" ] || echo "$errors" >&2
check "lintian: 0 errors ($(grep -c '^W:' "$WORK/lintian.txt") warnings)" test -z "$errors"

# Both units as shipped: systemd-analyze verify, with the package's binary
# laid over /usr/bin in a private mount namespace.
mkdir -p -m 0700 "$WORK/runtime"
verify_units() {
  unshare -m bash -c '
    mount --make-rprivate / && mount -t overlay overlay -o "lowerdir=$1/usr/bin:/usr/bin" /usr/bin || exit 3
    export MANPATH=$1/usr/share/man XDG_RUNTIME_DIR=$2
    systemd-analyze verify "$1$3/harmonia-play.service" && systemd-analyze --user verify "$1/usr/lib/systemd/user/harmonia-play.service"
  ' _ "$WORK/tree" "$WORK/runtime" "$system_units" > "$WORK/verify.txt" 2>&1 || { cat "$WORK/verify.txt" >&2; return 1; }
}
check "systemd-analyze verify: the system and the user unit" verify_units
systemd-analyze security --offline=yes "$WORK/tree$system_units/harmonia-play.service" > "$WORK/security.txt" 2>&1
exposure=$(sed -n 's/.*Overall exposure level for harmonia-play.service: \([0-9.]*\).*/\1/p' "$WORK/security.txt")
check "systemd-analyze security --offline=yes: exposure ${exposure:-?} <= 2.5" \
  python3 -c "import sys; sys.exit(0 if '$exposure' and float('$exposure') <= 2.5 else 1)"

# The system service's environment, as the unit sets it (its Environment=
# line, %S the state folder), under ProtectSystem=strict's rule: in a private
# mount namespace the whole tree is read-only but a stand-in for
# /var/lib/harmonia-play. serve starts on a config file, scans, plays (to
# the null output), saves its state on SIGTERM (exit 143): every file it
# writes is in the state folder, and nothing fails for want of a writable place.
S=$WORK/var-lib
mkdir -p "$S/harmonia-play"
environment=$(sed -n 's/^Environment=//p' "$WORK/tree$system_units/harmonia-play.service" | sed "s|%S|$S|g")
printf 'music-dir = %s\noutput = null\nmpd-listen = 127.0.0.1:0\nlisten = off\n' "$ROOT/Tests/Fixtures/audio" > "$WORK/service.conf"
strict_service() {
  unshare -m bash -c '
    mount --make-rprivate / && mount --bind "$1" "$1" && mount -o remount,bind,ro / || exit 3
    [ -w / ] && exit 4   # the tree must be read-only here (access(2) says EROFS)
    exec env -i PATH=/usr/bin:/bin $2 "$3" serve --config "$4"
  ' _ "$S" "$environment" "$BINARY" "$WORK/service.conf" > "$WORK/service.out" 2> "$WORK/service.err" &
  local pid=$! port="" i
  for i in $(seq 1 200); do  # until it says its port (at most 20 s)
    port=$(sed -n 's/.*MPD protocol on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/service.err")
    [ -n "$port" ] || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.1
  done
  [ -n "$port" ] || { kill "$pid" 2>/dev/null; cat "$WORK/service.err" >&2; return 1; }
  mpc -q -p "$port" update --wait && mpc -q -p "$port" add / && mpc -q -p "$port" play \
    && mpc -p "$port" status | grep -q '^\[playing\]' || { kill "$pid"; cat "$WORK/service.err" >&2; return 1; }
  kill -TERM "$pid"  # unshare, bash and env exec: $pid is serve
  local status=0; wait "$pid" || status=$?
  [ "$status" = 143 ] || { echo "serve ended with $status" >&2; cat "$WORK/service.err" >&2; return 1; }
  ! grep -i -e 'read-only' -e 'cannot create' "$WORK/service.err" && [ -s "$S/harmonia-play/state.json" ] \
    && [ -s "$S/harmonia-play/library.sqlite" ]
}
check "the system unit's environment under a read-only tree: serve starts, scans, plays, saves its state in the state folder" strict_service
echo "  wrote: $(cd "$S" && find . -type f | LC_ALL=C sort | tr '\n' ' ')"

# Install, remove, purge into a throwaway root (dpkg --root; the maintainer
# scripts honour $DPKG_ROOT), as a service would have left it: state under
# /var/lib/private, the system unit enabled.
R=$WORK/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" && touch "$R/var/lib/dpkg/status"
dpkg_root() { dpkg --root="$R" --force-script-chrootless --force-depends --log=/dev/null "$@" >>"$WORK/dpkg.log" 2>&1; }
check "dpkg --root -i: installs" dpkg_root -i "$deb"
check "dpkg --root: the conffile is registered" grep -qx /etc/harmonia-play.conf "$R/var/lib/dpkg/info/harmonia-play.conffiles"
check "dpkg --root: the system unit is there" test -f "$R$system_units/harmonia-play.service"
mkdir -p "$R/var/lib/private/harmonia-play/playlists" "$R/etc/systemd/system/multi-user.target.wants"
echo state > "$R/var/lib/private/harmonia-play/state.json"
ln -s "$system_units/harmonia-play.service" "$R/etc/systemd/system/multi-user.target.wants/harmonia-play.service"
check "dpkg --root -r: removes" dpkg_root -r harmonia-play
check "after remove: the conffile stays, the binary goes" bash -c "[ -f '$R/etc/harmonia-play.conf' ] && [ ! -e '$R/usr/bin/harmonia-play' ]"
check "dpkg --root -P: purges" dpkg_root -P harmonia-play
left=$(cd "$R" && find . -path ./var/lib/dpkg -prune -o \( -type f -o -type l \) -printf '%P\n')
check "after purge: no file left (config, state, enablement)${left:+ (left: $left)}" test -z "$left"
[ "$failures" = 0 ] || cat "$WORK/dpkg.log" >&2

check "apt-get --simulate install ./package: its Depends resolve here" \
  bash -c "apt-get --simulate install '$deb' 2>&1 | grep -q '^Inst harmonia-play'"

if [ "$failures" -gt 0 ]; then echo "test-install: $failures failed" >&2; exit 1; fi
echo "test-install: all passed"
