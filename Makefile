# HarmoniaCore for Linux. `make demo` and `make test` do all set-up on a fresh
# Debian/Ubuntu machine: they install missing system packages (apt-get, as root
# or through sudo), build, and run.

SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)
# Build-time libraries (FFmpeg, PulseAudio, libdbus, libcurl) and the tools
# the tests use: the ffmpeg command line is the independent reference decoder;
# the MPRIS tests start their own dbus-daemon (dbus) and drive the player with
# playerctl, gdbus (libglib2.0-bin) and dbus-monitor (dbus); the network tests
# run Tests/Network/fault_server.py (python3) with a certificate made by openssl.
# The real-time tests run twice: on PulseAudio (pulseaudio) and on PipeWire
# with WirePlumber and pipewire-pulse (pipewire-bin has pw-cli and pw-record).
# The music server (serve) stores its library with libsqlite3 (sqlite3 checks
# a killed scan's database) and is compared with real MPD and driven by its
# clients: mpd, mpc, python3-mpd (python-mpd2); files with several values
# per tag are written as taggers write them by python3-mutagen. The Snapcast output is
# tested against a private snapserver (Debian's 0.26), a recorder of what it
# serves (Tests/Snapcast, python3) and real snapclient rooms; the control bridge is run by a private snapserver, as
# snapserver runs it. The WebSocket transport is tested with python3-websockets,
# the web remote's page in headless Chromium driven by Selenium
# (chromium, chromium-driver, python3-selenium). The UPnP renderer is driven
# by async-upnp-client (Home Assistant's and Music Assistant's library), the
# slimproto player by aioslimproto (Music Assistant's server library), both from
# the package index, pinned, in a virtual environment (python3-venv) under
# .build: `make upnp-client`; squeezelite (squeezelite-pa, Debian's build that
# plays to PulseAudio) joins the slimproto player's group in its sync test; its multi-interface SSDP test makes veth
# interfaces (iproute2) in a network namespace of its own (unshare, util-linux).
# Installing (make install, make deb, make test-install): systemd-analyze
# (systemd) checks the units, dpkg-dev's dpkg-shlibdeps computes Depends,
# binutils strips, man-db's man --warnings checks the pages, lintian the package.
APT_PACKAGES := pkg-config libavformat-dev libavcodec-dev libswresample-dev libavutil-dev \
                libpulse-dev libdbus-1-dev libcurl4-openssl-dev libssl-dev ffmpeg util-linux pulseaudio pulseaudio-utils python3 \
                dbus playerctl libglib2.0-bin openssl pipewire pipewire-pulse wireplumber pipewire-bin \
                libsqlite3-dev sqlite3 mpd mpc python3-mpd python3-mutagen snapserver snapclient \
                python3-websockets python3-selenium chromium chromium-driver python3-venv iproute2 \
                systemd dpkg-dev binutils man-db lintian squeezelite-pa
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
LSAN_SUPPRESSIONS := $(CURDIR)/Tests/lsan-suppressions.txt
DEMO_FILE := Tests/Fixtures/audio/flac_s16_stereo_44k.flac
# The tests' private PulseAudio daemon (Tests/pulse-test-server.sh): its own
# folder and socket, so it never touches a desktop's server.
PULSE_DIR ?= /tmp/harmonia-pulse-$(shell id -u)-$(shell printf '%s' "$(CURDIR)" | md5sum | cut -c1-8)
WITH_PULSE = bash Tests/pulse-test-server.sh start $(PULSE_DIR) && status=0; \
	HARMONIA_PULSE_DIR=$(PULSE_DIR)

# What make runs never reports to a user's ListenBrainz account, and the
# tests keep their history, offline copies, stream cache, library and state
# under .build/test-xdg (play and serve default to $XDG_DATA_HOME and
# $XDG_STATE_HOME), never in the user's own folders.
unexport HARMONIA_LISTENBRAINZ_TOKEN
TEST_XDG := $(CURDIR)/.build/test-xdg
TEST_TARGETS := test-unit test-pipewire test-hostile test-examples test-asan test-tsan test-install vectors
$(TEST_TARGETS): export XDG_DATA_HOME = $(TEST_XDG)/data
$(TEST_TARGETS): export XDG_STATE_HOME = $(TEST_XDG)/state
# serve reads $XDG_CONFIG_HOME/harmonia-play/harmonia-play.conf when it
# exists: the tests never read the user's.
$(TEST_TARGETS): export XDG_CONFIG_HOME = $(TEST_XDG)/config

.PHONY: all deps swift upnp-client slimproto-server build release install uninstall deb demo docs test test-unit test-pipewire test-hostile test-examples test-asan test-tsan test-install vectors fuzz bench clean

all: build

# Installs only what is missing (dpkg-query), so a ready machine does no apt work.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

swift:
	@test -x "$(SWIFT)" || { echo "make: no Swift toolchain found (looked on PATH and in /opt/swift); install Swift 6 from swift.org" >&2; exit 1; }

build: deps swift
	$(SWIFT) build

# A pinned package from the package index in a virtual environment under
# .build: $(call pinned-venv,FOLDER,PACKAGE==VERSION); made once, again when
# the pin changes.
define pinned-venv
	@if [ "$$(cat $(1)/pinned 2>/dev/null)" != "$(2)" ]; then \
	  rm -rf $(1) && python3 -m venv $(1) && \
	  $(1)/bin/pip install --quiet --disable-pip-version-check "$(2)" && \
	  echo "$(2)" > $(1)/pinned; \
	fi
endef

# The UPnP tests' control point (Tests/UPnP): async-upnp-client, pinned, in
# .build/python-upnp; made once, again when the pin changes.
UPNP_CLIENT := async-upnp-client==0.49.0
UPNP_VENV := $(CURDIR)/.build/python-upnp
upnp-client: deps
	$(call pinned-venv,$(UPNP_VENV),$(UPNP_CLIENT))

# The slimproto player's server in its tests (Tests/Slimproto): aioslimproto,
# Music Assistant's slimproto server library, pinned, in
# .build/python-slimproto; made once, again when the pin changes.
SLIMPROTO_SERVER := aioslimproto==3.3.0
SLIMPROTO_VENV := $(CURDIR)/.build/python-slimproto
slimproto-server: deps
	$(call pinned-venv,$(SLIMPROTO_VENV),$(SLIMPROTO_SERVER))

# The optimised player, .build/release/harmonia-play, built the way the
# benchmarks build it (benchmarks/release-build.sh: Swift runtime linked in).
release: deps swift
	@SWIFT="$(SWIFT)" bash benchmarks/release-build.sh harmonia-play

# Installing (packaging/install.sh, README "Install"): the binary, a manual
# page per command and the bash, zsh and fish completions (all generated from
# the argument parser), the system and user units, and /etc/harmonia-play.conf
# (every setting commented out; kept when it exists). BINARY: the binary to
# install (default: the release build above, made when missing or stale).
# make uninstall removes what install wrote (the config file only unchanged).
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR ?=
BINARY ?=
INSTALL_ENV = SWIFT="$(SWIFT)" PREFIX="$(PREFIX)" SYSCONFDIR="$(SYSCONFDIR)" DESTDIR="$(DESTDIR)" BINARY="$(BINARY)"
install: deps swift
	@$(INSTALL_ENV) bash packaging/install.sh install
uninstall:
	@$(INSTALL_ENV) bash packaging/install.sh uninstall

# harmonia-play_VERSION_ARCH.deb here (packaging/make-deb.sh; its path is the
# last line): the same files for PREFIX=/usr, the binary stripped, Depends
# from dpkg-shlibdeps, /etc/harmonia-play.conf a conffile. DEB_DIR: another folder.
DEB_DIR ?= $(CURDIR)
SHLIBDEPS_FLAGS ?=
deb: deps swift
	@SWIFT="$(SWIFT)" BINARY="$(BINARY)" DEB_DIR="$(DEB_DIR)" SHLIBDEPS_FLAGS="$(SHLIBDEPS_FLAGS)" bash packaging/make-deb.sh

# The demo shows what the engine reads from a clip, then plays a short queue
# through PulseAudio: the first 1.5 s of the clip, then a second clip. With no
# server reachable (`pactl info` fails: a fresh or headless machine) it starts
# the tests' private daemon for the length of the demo; its sink is a null
# sink, so nothing is heard there, but the whole path runs. The play step's
# output is not piped (and not --quiet): on a terminal it shows the status
# line and takes keys (space, arrows, n/p, +/-, m, q, ?).
DEMO_PLAY := --end 1.5 $(DEMO_FILE) Tests/Fixtures/audio/opus_stereo_48k.opus
DEMO_PULSE_DIR := $(PULSE_DIR)-demo
demo: build
	@$(SWIFT) run --skip-build harmonia-play info $(DEMO_FILE)
	@$(SWIFT) run --skip-build harmonia-play info --json $(DEMO_FILE)
	@if timeout 5 pactl info >/dev/null 2>&1; then \
	  echo "make: playing through the PulseAudio server"; \
	  $(SWIFT) run --skip-build harmonia-play $(DEMO_PLAY); \
	else \
	  echo "make: no PulseAudio server reachable; starting a private one ($(DEMO_PULSE_DIR), a null sink: nothing is heard)"; \
	  bash Tests/pulse-test-server.sh start $(DEMO_PULSE_DIR) || exit 1; \
	  status=0; PULSE_SERVER=unix:$(DEMO_PULSE_DIR)/native $(SWIFT) run --skip-build harmonia-play $(DEMO_PLAY) || status=$$?; \
	  bash Tests/pulse-test-server.sh stop $(DEMO_PULSE_DIR); exit $$status; \
	fi

# The whole suite; then the FFmpeg adapter again under AddressSanitizer and
# LeakSanitizer (no leak, no use-after-free, bad inputs included), and the
# real-time path under ThreadSanitizer — each in its own build folder.
test: test-unit test-pipewire test-hostile test-examples test-asan test-tsan test-install

# Tests/Install/install_test.sh: make install and uninstall into a folder,
# the pages through man --warnings, the bash completion, both units through
# systemd-analyze verify and security --offline=yes, make deb through lintian,
# and dpkg install, remove and purge in a throwaway root. It packages the
# debug build that test-unit made, not the release build: a release build
# takes several minutes more than make test's budget has (the package's
# layout, units, pages and scripts are the same; its Depends then leave out
# the toolchain's Swift libraries, which the release binary links in).
# Under a real, booted systemd (a debootstrapped Debian 12 in qemu: apt
# install of the .deb, both units playing to mpc, reload, stop, purge):
# Tests/Install/boot_check.sh [PACKAGE.deb], a manual check (10-20 minutes,
# network for debootstrap), not part of make test.
test-install: deps swift
	$(SWIFT) build --product harmonia-play
	BINARY=$$($(SWIFT) build --show-bin-path)/harmonia-play bash Tests/Install/install_test.sh

# Hostile files (specs/hardening.md §Hostile files): Tests/Hostile/hostile_files.py
# writes ~200 files with absurd headers, tags and sizes plus seeded mutations
# of the fixtures; run_hostile.py runs info, info --json, decode and play on
# each and fails on a crash, a hang, more than 300 MB resident, or an error
# that is not one categorised line. HOSTILE_MUTATIONS=N writes N mutations
# per fixture (default 8).
HOSTILE_DIR ?= $(CURDIR)/.build/hostile
HOSTILE_MUTATIONS ?= 8
test-hostile: deps swift
	$(SWIFT) build --product harmonia-play
	rm -rf $(HOSTILE_DIR)
	python3 Tests/Hostile/hostile_files.py Tests/Fixtures $(HOSTILE_DIR) --mutations $(HOSTILE_MUTATIONS)
	python3 Tests/Hostile/run_hostile.py $$($(SWIFT) build --show-bin-path)/harmonia-play $(HOSTILE_DIR)
	rm -rf $(HOSTILE_DIR)

# DocC for HarmoniaCore and HarmoniaLinux (swift-docc-plugin), static sites
# in .build/docs/<target>, with DocC's coverage of the public symbols.
DOCS_DIR := $(CURDIR)/.build/docs
docs: deps swift
	@for target in HarmoniaCore HarmoniaLinux; do \
	  $(SWIFT) package generate-documentation --target $$target --transform-for-static-hosting \
	    --experimental-documentation-coverage --coverage-summary-level brief || exit 1; \
	  rm -rf $(DOCS_DIR)/$$target && mkdir -p $(DOCS_DIR) && \
	  cp -R .build/plugins/Swift-DocC/outputs/$$target.doccarchive $(DOCS_DIR)/$$target || exit 1; \
	done
	@echo "make docs: $(DOCS_DIR)/HarmoniaCore, $(DOCS_DIR)/HarmoniaLinux"

# The README's programs (`// Example: NAME` blocks) built verbatim in a
# scratch package that depends on this checkout: no error, no warning, and
# the tags-only program links no libpulse.
test-examples: deps swift
	SWIFT="$(SWIFT)" bash Tests/Examples/build-readme-examples.sh $(CURDIR)

# The web remote's suites (a real browser, 100 WebSocket clients, a flooding
# client) run after the others, not beside them: they load both cores, and
# the real-time and Snapcast suites measure exact playback on real servers.
WEB_TESTS := HarmoniaWebSocketTests
test-unit: deps swift upnp-client slimproto-server
	$(SWIFT) build --build-tests
	$(WITH_PULSE) $(SWIFT) test --skip-build --skip '$(WEB_TESTS)' || status=$$?; \
	  bash Tests/pulse-test-server.sh stop $(PULSE_DIR); exit $$status
	$(SWIFT) test --skip-build --filter '$(WEB_TESTS)'

# The real-time path's tests again, on a private PipeWire + WirePlumber +
# pipewire-pulse (Tests/pipewire-test-server.sh: own runtime, config and
# state folders, own session bus, a float32 null sink from PipeWire's
# config, the PulseAudio socket at DIR/native), stopped afterwards also when
# tests fail.
PIPEWIRE_DIR ?= $(PULSE_DIR)-pipewire
REALTIME_TESTS := PulseAudio|PlaybackServicePulse|CoreFactory
test-pipewire: deps swift
	$(SWIFT) build --build-tests
	bash Tests/pipewire-test-server.sh start $(PIPEWIRE_DIR) && status=0; \
	  HARMONIA_SOUND_SERVER=pipewire HARMONIA_PULSE_DIR=$(PIPEWIRE_DIR) \
	  $(SWIFT) test --skip-build --filter '$(REALTIME_TESTS)' || status=$$?; \
	  bash Tests/pipewire-test-server.sh stop $(PIPEWIRE_DIR); exit $$status

# Under ASan: the FFmpeg adapter, the library (scanner on real files, SQLite
# store, hostile databases) and the MPD protocol's parsers and server.
# The sanitizer builds leave the web remote out (HARMONIA_WITHOUT_WEB,
# Package.swift): swift-nio-ssl's BoringSSL alone costs minutes per build.
SANITIZER_BUILD := HARMONIA_WITHOUT_WEB=1
test-asan: deps swift
	$(SANITIZER_BUILD) LSAN_OPTIONS=suppressions=$(LSAN_SUPPRESSIONS) \
	  $(SWIFT) test --sanitize=address --scratch-path .build-asan --filter 'HarmoniaFFmpegTests|HarmoniaLibraryTests|HarmoniaMPDTests'

# TSan exits non-zero (66) on any report. The sound-server suites run again
# on the private PipeWire, from the same build.
TSAN_PULSE_TESTS := PulseAudioOutputAdapterTests|PulseAudioBehaviourTests|PlaybackServicePulse
# On PipeWire the adapter's own suites: the service's timing tests on a
# sanitizer-slowed process there lost a graph cycle at a recording's start
# (a seek test, once); the service runs under TSan on PulseAudio above.
TSAN_PIPEWIRE_TESTS := PulseAudioOutputAdapterTests|PulseAudioBehaviourTests
test-tsan: deps swift
	$(WITH_PULSE) $(SANITIZER_BUILD) HARMONIA_TSAN=1 $(SWIFT) test --sanitize=thread --scratch-path .build-tsan \
	  --filter 'SPSCRingBuffer|NullAudioOutput|$(TSAN_PULSE_TESTS)|PlaybackServiceTests|QueueServiceTests|CrossfadeServiceTests|ServiceFeatureTests|ServiceOutputFailureTests|FileOutputServiceTests|SlowOpenServiceTests|HarmoniaLibraryTests|HarmoniaMPDTests|HarmoniaControlTests' || status=$$?; \
	  bash Tests/pulse-test-server.sh stop $(PULSE_DIR); [ $$status -eq 0 ] || exit $$status; \
	bash Tests/pipewire-test-server.sh start $(PIPEWIRE_DIR) && status=0; \
	  HARMONIA_SOUND_SERVER=pipewire HARMONIA_PULSE_DIR=$(PIPEWIRE_DIR) HARMONIA_TSAN=1 $(SANITIZER_BUILD) \
	  $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --skip-build --filter '$(TSAN_PIPEWIRE_TESTS)' || status=$$?; \
	  bash Tests/pipewire-test-server.sh stop $(PIPEWIRE_DIR); exit $$status

# The test vectors alone (test-unit runs them too, as a Swift test).
vectors: build
	@$(SWIFT) run --skip-build harmonia-play vectors specs/vectors/*.json

# Fuzzing (Tests/Fuzz/fuzz.sh, specs/testing.md): builds harmonia-play for
# libFuzzer with AddressSanitizer into .build-fuzz and runs each target
# (decode, tags, metadata, playlist, control; FUZZ_TARGETS to choose) for FUZZ_SECONDS.
# The corpus grows in .build-fuzz/work between runs; a crash is minimised and
# kept in Tests/Fixtures/fuzz/TARGET/ (replayed by make test), and make fails.
FUZZ_SECONDS ?= 180
FUZZ_TARGETS ?=
fuzz: deps swift
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT="$(SWIFT)" bash Tests/Fuzz/fuzz.sh run $(FUZZ_TARGETS)

# Benchmarks (benchmarks/, issue 6): installs the peers and tools every part
# uses, builds release, starts a private PulseAudio server of its own (a
# separate folder from the tests'), runs each benchmarks/run-PART.sh that
# exists in order, stops the server and writes benchmarks/RESULTS.md and
# benchmarks/chart.svg (benchmarks/report.py). Old results are removed first.
# A part that fails is recorded as failed (results/PART.json, unless the script
# left one), the other parts still run, the report is still written, and make
# exits non-zero at the end.
BENCH_APT_PACKAGES := python3 mpv mpd mpc mpg123 hyperfine pulseaudio-utils time curl gmediarender gstreamer1.0-pulseaudio gstreamer1.0-plugins-good
BENCH_PARTS := decode ringbuffer scaling pipeline latency footprint footprint-pipewire underruns scan update server snapcast websocket pipewire offline upnp library-scale library-scan-playing slimproto
BENCH_PULSE_DIR := $(PULSE_DIR)-bench
bench: build
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) $(BENCH_APT_PACKAGES)"
	@$(MAKE) --no-print-directory release
	@mkdir -p benchmarks/results && rm -f benchmarks/results/*.json
	@trap 'bash Tests/pulse-test-server.sh stop $(BENCH_PULSE_DIR)' EXIT; failed=""; \
	for part in $(BENCH_PARTS); do \
	  script=benchmarks/run-$$part.sh; [ -f "$$script" ] || continue; \
	  echo "make bench: $$part ($$script)"; start=$$(date +%s); \
	  rc=0; bash Tests/pulse-test-server.sh start $(BENCH_PULSE_DIR) || rc=$$?; \
	  [ $$rc -ne 0 ] || PULSE_SERVER=unix:$(BENCH_PULSE_DIR)/native HARMONIA_PULSE_DIR=$(BENCH_PULSE_DIR) SWIFT="$(SWIFT)" \
	    bash "$$script" || rc=$$?; \
	  if [ $$rc -ne 0 ]; then \
	    failed="$$failed $$part"; echo "make bench: $$part failed (exit $$rc)" >&2; \
	    [ -s benchmarks/results/$$part.json ] || \
	      printf '{"part": "%s", "failed": "exit %s"}\n' "$$part" "$$rc" > benchmarks/results/$$part.json; \
	  fi; \
	  echo "make bench: $$part done in $$(( $$(date +%s) - start )) s"; \
	done; \
	bash Tests/pulse-test-server.sh stop $(BENCH_PULSE_DIR); \
	SWIFT="$(SWIFT)" python3 benchmarks/report.py || failed="$$failed report"; \
	if [ -n "$$failed" ]; then echo "make bench: failed:$$failed (see benchmarks/RESULTS.md)" >&2; exit 1; fi

clean:
	rm -rf .build .build-asan .build-tsan .build-fuzz
