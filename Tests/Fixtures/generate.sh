#!/usr/bin/env bash
# Regenerates the audio test fixtures: audio/, bad/ and manifest.json, then gapless/.
#   generate.sh            everything
#   generate.sh gapless    only gapless/ (the split-sine sets; audio/ and bad/ are left alone)
# Needs: ffmpeg + ffprobe (built with libmp3lame, libopus, libvorbis; tested with 5.1),
#        python3 with mutagen (pip install mutagen).
# Intermediate source WAVs go to .generated/ (git-ignored).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PY=${PYTHON:-python3}
command -v ffmpeg >/dev/null || { echo "generate.sh: ffmpeg not found" >&2; exit 1; }
command -v ffprobe >/dev/null || { echo "generate.sh: ffprobe not found" >&2; exit 1; }
"$PY" -c 'import mutagen' 2>/dev/null || { echo "generate.sh: python3 module mutagen missing (pip install mutagen)" >&2; exit 1; }

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
# Deterministic output: no encoder/version strings, no timestamps, no copied metadata.
BX=(-fflags +bitexact -flags:a +bitexact -map_metadata -1 -map_chapters -1)

# decoded_frames FILE CHANNELS -> frames `ffmpeg -i FILE -f f32le -` produces
decoded_frames() {
  local bytes
  bytes=$(ffmpeg -nostdin -v error -i "$1" -map 0:a:0 -f f32le - | wc -c)
  echo $(( bytes / (4 * $2) ))
}

# ---------------------------------------------------------------- gapless sets (gapless/)
# A stereo sine, split as PCM into three parts whose lengths are no multiple of any codec's
# frame (all odd), each part then encoded on its own. Played in order, the parts must give
# the unsplit sine back: the same length to the frame, no gap or step at the joins.
# Keep in sync with Tests/HarmoniaPlayTests/GaplessJoinTests.swift (it reads gapless.json).
GAPLESS_FREQS=(440 1000)     # Hz, channel 0 and 1
GAPLESS_AMPLITUDE=0.5
GAPLESS_PARTS_44100=(57331 33967 48523)   # ~1.30 s, 0.77 s, 1.10 s
GAPLESS_PARTS_48000=(62413 36971 52807)   # the same at 48 kHz (Opus)

# gapless_source RATE PART... -> gen/sine_RATE.wav (unsplit) + gen/sine_RATE_partK.wav,
# float32, cut from the one unsplit stream so the parts are its exact slices.
gapless_source() {
  local rate=$1; shift
  local total=0 n
  for n in "$@"; do total=$(( total + n )); done
  local gen=.generated/gapless
  local whole="$gen/sine_${rate}.wav"
  "${FF[@]}" -f lavfi -i "aevalsrc=exprs=${GAPLESS_AMPLITUDE}*sin(2*PI*${GAPLESS_FREQS[0]}*t)|${GAPLESS_AMPLITUDE}*sin(2*PI*${GAPLESS_FREQS[1]}*t):s=${rate}:c=stereo:d=$(( total / rate + 1 ))" \
    -af "atrim=end_sample=${total}" -c:a pcm_f32le "${BX[@]}" "$whole"
  [[ $(decoded_frames "$whole" 2) == "$total" ]] || { echo "gapless: $whole is not $total frames" >&2; exit 1; }
  local start=0 k=1
  for n in "$@"; do
    local part="$gen/sine_${rate}_part${k}.wav"
    "${FF[@]}" -i "$whole" -af "atrim=start_sample=${start}:end_sample=$(( start + n )),asetpts=N/SR/TB" \
      -c:a pcm_f32le "${BX[@]}" "$part"
    [[ $(decoded_frames "$part" 2) == "$n" ]] || { echo "gapless: $part is not $n frames" >&2; exit 1; }
    start=$(( start + n )); k=$(( k + 1 ))
  done
}

gapless_fixtures() {
  local dir=gapless gen=.generated/gapless
  rm -rf "$dir" "$gen"
  mkdir -p "$dir" "$gen"

  gapless_source 44100 "${GAPLESS_PARTS_44100[@]}"
  gapless_source 48000 "${GAPLESS_PARTS_48000[@]}"

  local k
  for k in 1 2 3; do
    local s44="$gen/sine_44100_part${k}.wav" s48="$gen/sine_48000_part${k}.wav"
    "${FF[@]}" -i "$s44" -c:a libmp3lame -b:a 96k "${BX[@]}" -write_xing 1 -id3v2_version 0 -write_id3v1 0 "$dir/mp3_part${k}.mp3"
    # 192k: ffmpeg's native AAC encoder distorts pure tones at lower rates (~0.06 peak error)
    "${FF[@]}" -i "$s44" -c:a aac -aac_pns 0 -b:a 192k "${BX[@]}" -movflags +faststart "$dir/aac_part${k}.m4a"
    "${FF[@]}" -i "$s48" -c:a libopus -b:a 64k "${BX[@]}" "$dir/opus_part${k}.opus"
    "${FF[@]}" -i "$s44" -c:a libvorbis -q:a 2 "${BX[@]}" "$dir/vorbis_part${k}.ogg"
    "${FF[@]}" -i "$s44" -c:a flac -sample_fmt s16 -compression_level 8 "${BX[@]}" "$dir/flac_part${k}.flac"
  done

  # gapless.json: the signal, and per codec the parts with their exact frames (counted in
  # the PCM parts) and what the ffmpeg command line decodes of each encoded part (cliFrames);
  # "frames" is the unsplit sine's length (checked to be the parts' sum).
  local rows=() spec codec ext rate file
  for spec in mp3:mp3:44100 aac:m4a:44100 opus:opus:48000 vorbis:ogg:44100 flac:flac:44100; do
    IFS=: read -r codec ext rate <<< "$spec"
    for k in 1 2 3; do
      file="${codec}_part${k}.${ext}"
      rows+=("$codec $rate $file $(decoded_frames "$gen/sine_${rate}_part${k}.wav" 2) $(decoded_frames "$dir/$file" 2)")
    done
  done
  printf '%s\n' "${rows[@]}" | "$PY" -c '
import json, sys
freqs, amplitude, whole44, whole48 = sys.argv[1].split(","), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sets = {}
for line in sys.stdin:
    codec, rate, file, frames, cli = line.split()
    s = sets.setdefault(codec, {"codec": codec, "sampleRate": int(rate), "channels": 2, "parts": []})
    s["parts"].append({"file": file, "frames": int(frames), "cliFrames": int(cli)})
for s in sets.values():
    s["frames"] = sum(p["frames"] for p in s["parts"])
    want = whole44 if s["sampleRate"] == 44100 else whole48
    if s["frames"] != want:
        sys.exit("gapless: %s parts sum to %d frames, the unsplit sine has %d" % (s["codec"], s["frames"], want))
signal = {"formula": "float32(amplitude * sin(2 * pi * frequency[c] * (i / sampleRate))), in double (aevalsrc)",
          "frequencies": [float(f) for f in freqs], "amplitude": amplitude}
json.dump({"signal": signal, "sets": list(sets.values())}, sys.stdout, indent=2)
print()
' "$(IFS=,; echo "${GAPLESS_FREQS[*]}")" "$GAPLESS_AMPLITUDE" \
    "$(decoded_frames "$gen/sine_44100.wav" 2)" "$(decoded_frames "$gen/sine_48000.wav" 2)" > "$dir/gapless.json"

  local total
  total=$(cat "$dir"/* | wc -c)
  echo "gapless/: $total bytes"
  if (( total > 400000 )); then
    echo "generate.sh: gapless fixtures exceed their ~400 kB budget" >&2; exit 1
  fi
}

if [[ ${1:-} == gapless ]]; then
  gapless_fixtures
  exit 0
elif [[ -n ${1:-} ]]; then
  echo "usage: generate.sh [gapless]" >&2; exit 2
fi

rm -rf audio bad .generated manifest.json
mkdir -p audio bad .generated

# ---------------------------------------------------------------- source signal
# A linear chirp per channel: not periodic, different on every channel.
# Keep in sync with CHIRPS in build_manifest.py.
CH_EXPR=(
  '0.4*sin(2*PI*(300+200*t)*t)'
  '0.4*sin(2*PI*(500+150*t)*t)'
  '0.4*sin(2*PI*(700+100*t)*t)'
  '0.4*sin(2*PI*(60+40*t)*t)'
  '0.4*sin(2*PI*(1100+250*t)*t)'
  '0.4*sin(2*PI*(1300+50*t)*t)'
)

# src RATE CHANNELS FRAMES -> prints the path of a float32 WAV with exactly FRAMES frames
src() {
  local rate=$1 ch=$2 frames=$3
  local out=".generated/src_${rate}_${ch}_${frames}.wav"
  if [[ ! -f $out ]]; then
    local exprs layout secs
    exprs=$(IFS='|'; echo "${CH_EXPR[*]:0:$ch}")
    case $ch in
      1) layout=mono ;;
      2) layout=stereo ;;
      6) layout='5.1(side)' ;;   # FLAC's native 6-channel order: FL FR FC LFE SL SR
      *) echo "src: unsupported channel count $ch" >&2; exit 1 ;;
    esac
    secs=$(( frames / rate + 1 ))
    "${FF[@]}" -f lavfi -i "aevalsrc=exprs=${exprs}:s=${rate}:c=${layout}:d=${secs}" \
      -af "atrim=end_sample=${frames}" -c:a pcm_f32le "${BX[@]}" "$out"
    local got
    got=$(decoded_frames "$out" "$ch")
    if [[ $got != "$frames" ]]; then
      echo "src: $out has $got frames, expected $frames" >&2; exit 1
    fi
  fi
  echo "$out"
}

# One float32 source WAV per (rate, channels, frames); assignments so set -e catches failures.
SRC_44100_1_22050=$(src 44100 1 22050)
SRC_44100_1_44100=$(src 44100 1 44100)
SRC_44100_1_88200=$(src 44100 1 88200)
SRC_44100_2_44100=$(src 44100 2 44100)
SRC_44100_2_88200=$(src 44100 2 88200)
SRC_44100_2_132300=$(src 44100 2 132300)
SRC_48000_2_24000=$(src 48000 2 24000)
SRC_48000_2_96000=$(src 48000 2 96000)
SRC_48000_6_48000=$(src 48000 6 48000)
SRC_96000_2_96000=$(src 96000 2 96000)

# ---------------------------------------------------------------- artwork
"$PY" tag_fixtures.py png .generated/cover.png 32 32 51 102 204   # the cover art
"$PY" tag_fixtures.py png bad/image.png 16 16 200 40 40             # a bad input

# ---------------------------------------------------------------- PCM
# wav_s24 and wav_f32 are 0.5 s (not 1.0 s) to keep audio/ + bad/ under ~2 MB.
"${FF[@]}" -i "$SRC_44100_2_44100" -c:a pcm_s16le "${BX[@]}" audio/wav_s16_stereo_44k.wav
"${FF[@]}" -i "$SRC_48000_2_24000" -c:a pcm_s24le "${BX[@]}" audio/wav_s24_stereo_48k.wav
"${FF[@]}" -i "$SRC_44100_1_22050" -c:a pcm_f32le "${BX[@]}" audio/wav_f32_mono_44k.wav
"${FF[@]}" -i "$SRC_44100_1_44100" -c:a pcm_s16be "${BX[@]}" -f aiff audio/aiff_s16_mono_44k.aiff

# ---------------------------------------------------------------- lossless
"${FF[@]}" -i "$SRC_44100_2_88200" -c:a flac -sample_fmt s16 -compression_level 8 "${BX[@]}" \
  audio/flac_s16_stereo_44k.flac
"${FF[@]}" -i "$SRC_96000_2_96000" -c:a flac -sample_fmt s32 -bits_per_raw_sample 24 \
  -compression_level 8 "${BX[@]}" audio/flac_s24_stereo_96k.flac
"${FF[@]}" -i "$SRC_48000_6_48000" -c:a flac -sample_fmt s16 -compression_level 8 "${BX[@]}" \
  audio/flac_s16_51_48k.flac
# WavPack carries APEv2 tags, which FFmpeg reads there (it does not read APE tags on MP3).
"${FF[@]}" -i "$SRC_44100_1_22050" -c:a wavpack -sample_fmt s16p "${BX[@]}" audio/wavpack_apev2.wv
"${FF[@]}" -i "$SRC_44100_2_44100" -c:a alac -sample_fmt s16p "${BX[@]}" -movflags +faststart \
  audio/alac_stereo_44k.m4a

# ---------------------------------------------------------------- lossy
# MP3: the muxer writes the Xing/Info + LAME extension (encoder delay/padding) frame;
# no ID3 from ffmpeg — tags are added below by mutagen / tag_fixtures.py.
MP3_OPTS=(-write_xing 1 -id3v2_version 0 -write_id3v1 0)
"${FF[@]}" -i "$SRC_44100_2_88200" -c:a libmp3lame -b:a 128k "${BX[@]}" "${MP3_OPTS[@]}" \
  audio/mp3_cbr_stereo_44k.mp3
"${FF[@]}" -i "$SRC_44100_1_88200" -c:a libmp3lame -q:a 4 "${BX[@]}" "${MP3_OPTS[@]}" \
  audio/mp3_vbr_mono_44k.mp3

# AAC: ffmpeg's native encoder (1024 frames priming), without perceptual noise
# substitution: PNS bands are random by the codec's definition, so no decoder
# can reproduce a straight decode's noise after a seek (specs/ports.md). The first file has the default
# edit list; the second has none and gets an iTunSMPB atom instead.
"${FF[@]}" -i "$SRC_44100_2_132300" -c:a aac -aac_pns 0 -b:a 128k "${BX[@]}" -movflags +faststart \
  audio/aac_stereo_44k.m4a
"${FF[@]}" -i "$SRC_44100_2_132300" -c:a aac -aac_pns 0 -b:a 128k "${BX[@]}" -movflags +faststart \
  -use_editlist 0 audio/aac_itunsmpb_stereo_44k.m4a
# moov at the end (no faststart), only used for a truncated bad input
"${FF[@]}" -i "$SRC_44100_2_132300" -c:a aac -aac_pns 0 -b:a 128k "${BX[@]}" .generated/aac_moov_at_end.m4a

"${FF[@]}" -i "$SRC_48000_2_96000" -c:a libopus -b:a 96k "${BX[@]}" audio/opus_stereo_48k.opus
"${FF[@]}" -i "$SRC_44100_2_88200" -c:a libvorbis -q:a 4 "${BX[@]}" audio/vorbis_stereo_44k.ogg

# ---------------------------------------------------------------- tags
"$PY" tag_fixtures.py tag audio .generated/cover.png
"$PY" tag_fixtures.py id3v1 audio/mp3_vbr_mono_44k.mp3
"$PY" tag_fixtures.py apev2 audio/wavpack_apev2.wv
"$PY" tag_fixtures.py itunsmpb audio/aac_itunsmpb_stereo_44k.m4a audio/aac_stereo_44k.m4a 132300 1024

# ---------------------------------------------------------------- bad inputs
: > bad/empty.mp3
"$PY" tag_fixtures.py randbytes bad/random.bin 4096 20240517
printf 'This is a plain text file, not an MP3.\nIt only has an .mp3 extension.\n' > bad/text.mp3
ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi -i "testsrc=size=64x64:rate=10:duration=1" \
  -an -c:v mpeg4 -q:v 10 -pix_fmt yuv420p -fflags +bitexact -flags:v +bitexact -map_metadata -1 \
  -movflags +faststart bad/video_no_audio.mp4

truncate55() {  # truncate55 IN OUT: the first 55% of IN's bytes
  local size
  size=$(wc -c < "$1")
  head -c $(( size * 55 / 100 )) "$1" > "$2"
}
for f in audio/*; do
  truncate55 "$f" "bad/truncated_$(basename "$f")"
done
truncate55 .generated/aac_moov_at_end.m4a bad/truncated_moov_at_end.m4a

"$PY" tag_fixtures.py corrupt audio/flac_s16_stereo_44k.flac bad/corrupt_mid.flac 1001 2000
"$PY" tag_fixtures.py corrupt audio/mp3_cbr_stereo_44k.mp3 bad/corrupt_mid.mp3 1002 2000
"$PY" tag_fixtures.py corrupt audio/aac_stereo_44k.m4a bad/corrupt_mid.m4a 1003 1500

# ---------------------------------------------------------------- verify + manifest
"$PY" build_manifest.py

total=$(cat audio/* bad/* | wc -c)
echo "audio/ + bad/: $total bytes"
if (( total > 2100000 )); then
  echo "generate.sh: fixtures exceed the ~2 MB budget" >&2; exit 1
fi

gapless_fixtures
