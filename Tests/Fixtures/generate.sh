#!/usr/bin/env bash
# Regenerates the audio test fixtures: audio/, bad/ and manifest.json.
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

# decoded_frames FILE CHANNELS -> frames `ffmpeg -i FILE -f f32le -` produces
decoded_frames() {
  local bytes
  bytes=$(ffmpeg -nostdin -v error -i "$1" -map 0:a:0 -f f32le - | wc -c)
  echo $(( bytes / (4 * $2) ))
}

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
