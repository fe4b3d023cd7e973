#!/usr/bin/env python3
"""Writes hostile audio files — specs/hardening.md §Tests.

Each file is an ordinary fixture with one field made absurd: extreme integers
in container and codec headers (Ogg granules, WebM cluster times, MP4 sample
tables and timescales, FLAC STREAMINFO, OpusHead, WAV fmt), non-numbers in
numeric tags (BPM, ReplayGain), huge declared lengths, files of zeros, and
seeded byte mutations (flips, truncations, duplicated chunks, extreme integers
written at random offsets). Deterministic: the same files every run.

    hostile_files.py FIXTURES_DIR OUT_DIR [--mutations N] [--big]

Writes OUT_DIR/<name> and OUT_DIR/manifest.json: a list of
{"name", "class", "checks": [...]} where checks are extra expectations the
runner (run_hostile.py) verifies beyond "no crash, no hang, bounded memory,
one categorised line per failure".
"""
import json
import os
import random
import struct
import subprocess
import sys

# --- Ogg ------------------------------------------------------------------

def _ogg_crc_table():
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table

_OGG_TABLE = _ogg_crc_table()


def ogg_crc(data):
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_TABLE[((crc >> 24) & 0xFF) ^ b]
    return crc


def ogg_pages(data):
    """(offset, length) of every page."""
    pages, i = [], 0
    while i + 27 <= len(data) and data[i:i + 4] == b"OggS":
        segments = data[i + 26]
        body = sum(data[i + 27:i + 27 + segments])
        length = 27 + segments + body
        pages.append((i, length))
        i += length
    return pages


def ogg_rewrite(data, edit):
    """Applies edit(index, page_bytearray) to every page and fixes the CRCs."""
    out = bytearray()
    pages = ogg_pages(data)
    for index, (offset, length) in enumerate(pages):
        page = bytearray(data[offset:offset + length])
        edit(index, len(pages), page)
        page[22:26] = b"\0\0\0\0"
        page[22:26] = struct.pack("<I", ogg_crc(page))
        out += page
    return bytes(out)


def set_granule(page, value):
    page[6:14] = struct.pack("<q", value)


# --- MP4 ------------------------------------------------------------------

def find_all(data, needle):
    i = data.find(needle)
    while i >= 0:
        yield i
        i = data.find(needle, i + 1)


def mp4_patch(data, box, field_offset, fmt, value):
    """Writes `value` at `field_offset` bytes into the body of every `box`
    (after its 8-byte header)."""
    out = bytearray(data)
    for i in find_all(data, box.encode()):
        at = i + 4 + field_offset
        if at + struct.calcsize(fmt) <= len(out):
            struct.pack_into(fmt, out, at, value)
    return bytes(out)


# --- Builders -------------------------------------------------------------

def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], check=True)


class Writer:
    def __init__(self, fixtures, out):
        self.fixtures = fixtures
        self.out = out
        self.entries = []

    def fixture(self, name):
        for folder in ("audio", "gapless", "bad"):
            path = os.path.join(self.fixtures, folder, name)
            if os.path.exists(path):
                return path
        raise SystemExit(f"hostile_files.py: fixture {name} missing")

    def read(self, name):
        with open(self.fixture(name), "rb") as f:
            return f.read()

    def add(self, name, data, cls, checks=()):
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(data)
        self.entries.append({"name": name, "class": cls, "checks": list(checks)})

    def add_path(self, name, cls, checks=()):
        self.entries.append({"name": name, "class": cls, "checks": list(checks)})

    def tagged(self, source, name, metadata, cls, checks=()):
        """A copy of fixture `source` with `metadata` (key=value) written by ffmpeg."""
        args = ["-i", self.fixture(source), "-map", "0:a", "-c", "copy", "-map_metadata", "-1"]
        for key, value in metadata.items():
            args += ["-metadata", f"{key}={value}"]
        if source.endswith(".mp3"):
            args += ["-id3v2_version", "4"]
        ffmpeg(*args, os.path.join(self.out, name))
        self.add_path(name, cls, checks)


def numeric_tags(w):
    cases = {"nan": "nan", "inf": "inf", "neginf": "-inf", "huge": "1e400",
             "beyondint": "99999999999999999999999", "negbeyond": "-99999999999999999999999"}
    for label, text in cases.items():
        for source, ext in (("flac_s16_stereo_44k.flac", "flac"), ("mp3_cbr_stereo_44k.mp3", "mp3"),
                            ("vorbis_stereo_44k.ogg", "ogg")):
            bpm_key = "TBPM" if ext == "mp3" else "BPM"
            w.tagged(source, f"tag_bpm_{label}.{ext}", {bpm_key: text}, "numeric tag", ["no_tag:bpm"])
        w.tagged("flac_s16_stereo_44k.flac", f"tag_rg_{label}.flac",
                 {"REPLAYGAIN_TRACK_GAIN": f"{text} dB", "REPLAYGAIN_ALBUM_GAIN": f"{text} dB",
                  "REPLAYGAIN_TRACK_PEAK": text, "REPLAYGAIN_ALBUM_PEAK": text,
                  "TRACKNUMBER": f"{text}/{text}", "DISCNUMBER": f"{text}/{text}", "DATE": text},
                 "numeric tag", ["no_tag:replayGainTrack", "no_tag:replayGainAlbum", "no_nan", "replaygain"])
        w.tagged("opus_stereo_48k.opus", f"tag_r128_{label}.opus",
                 {"R128_TRACK_GAIN": text, "R128_ALBUM_GAIN": text}, "numeric tag", ["no_nan", "replaygain"])
    # A gain so large it would clip everything into infinity: refused as a tag, not applied.
    w.tagged("flac_s16_stereo_44k.flac", "tag_rg_absurd_gain.flac",
             {"REPLAYGAIN_TRACK_GAIN": "+1e300 dB", "REPLAYGAIN_TRACK_PEAK": "1e-300"},
             "numeric tag", ["no_tag:replayGainTrack", "no_nan", "replaygain"])


def ogg_granules(w):
    extremes = {"min1": -(1 << 63) + 1, "max": (1 << 63) - 1, "neg2": -2, "big54": 1 << 54}
    for source, ext in (("vorbis_stereo_44k.ogg", "ogg"), ("opus_stereo_48k.opus", "opus")):
        data = w.read(source)
        for label, value in extremes.items():
            def every_audio_page(index, count, page, value=value):
                if index >= 2:
                    set_granule(page, value)
            w.add(f"ogg_granule_all_{label}.{ext}", ogg_rewrite(data, every_audio_page), "ogg granule")

            def last_page(index, count, page, value=value):
                if index == count - 1:
                    set_granule(page, value)
            w.add(f"ogg_granule_last_{label}.{ext}", ogg_rewrite(data, last_page), "ogg granule")

            def middle_jump(index, count, page, value=value):
                if index == count // 2:
                    set_granule(page, value)
            w.add(f"ogg_granule_jump_{label}.{ext}", ogg_rewrite(data, middle_jump), "ogg granule")

        def alternating(index, count, page):
            if index >= 2:
                set_granule(page, (1 << 62) if index % 2 else -(1 << 62))
        w.add(f"ogg_granule_alternating.{ext}", ogg_rewrite(data, alternating), "ogg granule")

    # OpusHead: pre-skip 65535, 255 channels, rate 0, output gain extremes.
    data = w.read("opus_stereo_48k.opus")

    def opus_head(offset, fmt, value):
        def edit(index, count, page):
            if index == 0:
                head = page.find(b"OpusHead")
                struct.pack_into(fmt, page, head + offset, value)
        return ogg_rewrite(data, edit)
    w.add("opushead_preskip_65535.opus", opus_head(10, "<H", 65535), "opus head", ["duration_not_negative"])
    w.add("opushead_channels_255.opus", opus_head(9, "<B", 255), "opus head")
    w.add("opushead_channels_0.opus", opus_head(9, "<B", 0), "opus head")
    w.add("opushead_rate_0.opus", opus_head(12, "<I", 0), "opus head")
    w.add("opushead_gain_max.opus", opus_head(16, "<h", 32767), "opus head", ["no_nan"])
    w.add("opushead_gain_min.opus", opus_head(16, "<h", -32768), "opus head", ["no_nan"])

    # Vorbis identification header: rate 1 Hz, and rate 0.
    data = w.read("vorbis_stereo_44k.ogg")

    def vorbis_rate(value, last_granule=None):
        def edit(index, count, page):
            if index == 0:
                head = page.find(b"\x01vorbis")
                struct.pack_into("<I", page, head + 12, value)
            if last_granule is not None and index == count - 1:
                set_granule(page, last_granule)
        return ogg_rewrite(data, edit)
    w.add("vorbis_rate_1hz_2p54.ogg", vorbis_rate(1, 1 << 54), "huge duration")
    w.add("vorbis_rate_0.ogg", vorbis_rate(0), "vorbis head")
    w.add("vorbis_rate_max.ogg", vorbis_rate(0xFFFFFFFF), "vorbis head")


def webm_times(w):
    path = os.path.join(w.out, "_webm_source.webm")
    ffmpeg("-i", w.fixture("opus_stereo_48k.opus"), "-map", "0:a", "-c", "copy", "-output_ts_offset", "9000000000000",
           "-f", "webm", path)
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    for label, fill in (("max", 0xFF), ("mid", 0x7F)):
        out = bytearray(data)
        for i in find_all(data, bytes.fromhex("1F43B675")):
            t = out.find(b"\xE7", i + 4, i + 16)
            if t > 0 and 0x81 <= out[t + 1] <= 0x88:
                width = out[t + 1] - 0x80
                out[t + 2:t + 2 + width] = bytes([fill] * width)
        w.add(f"webm_cluster_time_{label}.webm", bytes(out), "webm time")
    # Alternating cluster times: a jump back and forth near the edge.
    out = bytearray(data)
    for n, i in enumerate(find_all(data, bytes.fromhex("1F43B675"))):
        t = out.find(b"\xE7", i + 4, i + 16)
        if t > 0 and 0x81 <= out[t + 1] <= 0x88:
            width = out[t + 1] - 0x80
            out[t + 2:t + 2 + width] = bytes([0xFF if n % 2 else 0x00] * width)
    w.add("webm_cluster_time_alternating.webm", bytes(out), "webm time")


def mp4_tables(w):
    data = w.read("aac_stereo_44k.m4a")
    # stts: version/flags(4) count(4) then (count, delta) pairs.
    w.add("mp4_stts_overflow.m4a", mp4_patch(mp4_patch(data, "stts", 8, ">I", 0xFFFFFFFF), "stts", 12, ">I", 0xFFFFFFFF),
          "mp4 table")
    w.add("mp4_stts_count_huge.m4a", mp4_patch(data, "stts", 4, ">I", 0xFFFFFFFF), "mp4 table")
    w.add("mp4_stsz_count_huge.m4a", mp4_patch(data, "stsz", 12, ">I", 0xFFFFFFFF), "mp4 table")
    # 400 million 4-byte entries declared in a few bytes: FFmpeg allocates the table before reading it.
    w.add("mp4_stsz_count_400m.m4a", mp4_patch(data, "stsz", 12, ">I", 400_000_000), "mp4 table")
    w.add("mp4_stco_count_400m.m4a", mp4_patch(data, "stco", 4, ">I", 400_000_000), "mp4 table")
    w.add("mp4_stco_count_huge.m4a", mp4_patch(data, "stco", 4, ">I", 0xFFFFFFFF), "mp4 table")
    w.add("mp4_stsc_count_huge.m4a", mp4_patch(data, "stsc", 4, ">I", 0xFFFFFFFF), "mp4 table")
    w.add("mp4_elst_count_huge.m4a", mp4_patch(data, "elst", 4, ">I", 0xFFFFFFFF), "mp4 table")
    w.add("mp4_elst_extreme.m4a", mp4_patch(mp4_patch(data, "elst", 8, ">I", 0xFFFFFFFF), "elst", 12, ">i", 0x7FFFFFFF),
          "mp4 table")
    for scale in (0, 1, 0xFFFFFFFF):
        # mdhd v0: version/flags(4) created(4) modified(4) timescale(4) duration(4).
        w.add(f"mp4_mdhd_timescale_{scale}.m4a", mp4_patch(data, "mdhd", 12, ">I", scale), "mp4 timescale")
        w.add(f"mp4_mvhd_timescale_{scale}.m4a", mp4_patch(data, "mvhd", 12, ">I", scale), "mp4 timescale")
    w.add("mp4_mdhd_duration_max.m4a", mp4_patch(data, "mdhd", 16, ">I", 0xFFFFFFFF), "huge duration")
    w.add("mp4_mvhd_duration_max.m4a", mp4_patch(data, "mvhd", 16, ">I", 0xFFFFFFFF), "huge duration")
    smpb = w.read("aac_itunsmpb_stereo_44k.m4a")
    i = smpb.find(b" 00000000 ")
    if i >= 0:
        for label, fields in (("frames_max", "00000840 000001C0 7FFFFFFFFFFFFFFF"),
                              ("delay_max", "7FFFFFFF 000001C0 0000000000010000"),
                              ("all_f", "FFFFFFFF FFFFFFFF FFFFFFFFFFFFFFFF")):
            patched = bytearray(smpb)
            patched[i + 10:i + 10 + len(fields)] = fields.encode()
            w.add(f"mp4_itunsmpb_{label}.m4a", bytes(patched), "mp4 table")


def flac_streaminfo(w):
    data = w.read("flac_s16_stereo_44k.flac")
    assert data[:4] == b"fLaC"
    si = 8  # STREAMINFO body

    def patched(rate=None, channels=None, bps=None, total=None, min_block=None, max_block=None):
        b = bytearray(data)
        bits = int.from_bytes(b[si + 10:si + 18], "big")  # rate(20) ch(3) bps(5) total(36)
        r, c, p, t = bits >> 44, (bits >> 41) & 7, (bits >> 36) & 31, bits & ((1 << 36) - 1)
        r = r if rate is None else rate
        c = c if channels is None else channels
        p = p if bps is None else bps
        t = t if total is None else total
        b[si + 10:si + 18] = ((r << 44) | (c << 41) | (p << 36) | t).to_bytes(8, "big")
        if min_block is not None:
            b[si:si + 2] = min_block.to_bytes(2, "big")
        if max_block is not None:
            b[si + 2:si + 4] = max_block.to_bytes(2, "big")
        return bytes(b)
    w.add("flac_rate_0.flac", patched(rate=0), "flac streaminfo", ["not_live"])
    w.add("flac_rate_1_total_max.flac", patched(rate=1, total=(1 << 36) - 1), "huge duration")
    w.add("flac_rate_max.flac", patched(rate=(1 << 20) - 1), "flac streaminfo")
    w.add("flac_total_max.flac", patched(total=(1 << 36) - 1), "huge duration")
    w.add("flac_bps_32.flac", patched(bps=31), "flac streaminfo")
    w.add("flac_blocksize_0.flac", patched(min_block=0, max_block=0), "flac streaminfo")
    w.add("flac_channels_8.flac", patched(channels=7), "flac streaminfo")


def wav_headers(w):
    data = w.read("wav_s16_stereo_44k.wav")
    fmt = data.find(b"fmt ")
    body = fmt + 8

    def patched(**fields):
        b = bytearray(data)
        layout = {"tag": (0, "<H"), "channels": (2, "<H"), "rate": (4, "<I"), "byterate": (8, "<I"),
                  "align": (12, "<H"), "bits": (14, "<H")}
        for key, value in fields.items():
            offset, f = layout[key]
            struct.pack_into(f, b, body + offset, value)
        return bytes(b)
    w.add("wav_channels_255.wav", patched(channels=255, align=510), "wav header", ["message_mentions:255"])
    w.add("wav_channels_0.wav", patched(channels=0), "wav header")
    w.add("wav_rate_0.wav", patched(rate=0), "wav header")
    w.add("wav_rate_1.wav", patched(rate=1, byterate=4), "huge duration")
    w.add("wav_rate_max.wav", patched(rate=0xFFFFFFFF), "wav header")
    w.add("wav_align_0.wav", patched(align=0), "wav header")
    w.add("wav_bits_0.wav", patched(bits=0), "wav header")
    w.add("wav_bits_255.wav", patched(bits=255), "wav header")
    data_chunk = data.find(b"data")
    b = bytearray(data)
    struct.pack_into("<I", b, data_chunk + 4, 0xFFFFFFF0)
    w.add("wav_data_size_huge.wav", bytes(b), "wav header")
    b = bytearray(data)
    struct.pack_into("<I", b, fmt + 4, 0xFFFFFFF0)
    w.add("wav_fmt_size_huge.wav", bytes(b), "wav header")


def mp3_headers(w):
    data = w.read("mp3_cbr_stereo_44k.mp3")
    # ID3v2 with the largest syncsafe size.
    if data[:3] == b"ID3":
        b = bytearray(data)
        b[6:10] = b"\x7f\x7f\x7f\x7f"
        w.add("mp3_id3_size_max.mp3", bytes(b), "mp3 header")
    for tag in (b"Xing", b"Info"):
        i = data.find(tag)
        if i >= 0:
            b = bytearray(data)
            struct.pack_into(">I", b, i + 8, 0xFFFFFFFF)  # frame count
            w.add("mp3_xing_frames_max.mp3", bytes(b), "mp3 header")
            lame = data.find(b"LAME", i)
            if lame >= 0:
                b = bytearray(data)
                b[lame + 21:lame + 24] = b"\xff\xff\xff"  # delay and padding 4095
                w.add("mp3_lame_delay_padding_max.mp3", bytes(b), "mp3 header")
            break


def big_files(w, big):
    # Sparse files of zeros: cheap on disk, huge to read.
    size = (2 << 30) if big else (256 << 20)
    for ext in ("mp3", "flac", "ogg", "m4a", "wav", "bin"):
        name = f"zeros.{ext}"
        with open(os.path.join(w.out, name), "wb") as f:
            f.truncate(size)
        w.add_path(name, "huge file", ["memory"])
    rng = random.Random(7)
    w.add("garbage_8m.mp3", bytes(rng.getrandbits(8) for _ in range(1 << 20)) * 8, "huge file", ["memory"])
    # A valid MP3 header then zeros: the demuxer must give up, not scan forever.
    head = w.read("mp3_cbr_stereo_44k.mp3")[:4096]
    path = os.path.join(w.out, "mp3_head_then_zeros.mp3")
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    w.add_path("mp3_head_then_zeros.mp3", "huge file", ["memory"])


EXTREMES = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x00",
            b"\xff\xff\xff\xff\xff\xff\xff\xff", b"\x80\x00\x00\x00\x00\x00\x00\x01", b"\x7f\xff\xff\xff\xff\xff\xff\xff"]


def mutations(w, count):
    sources = ["flac_s16_stereo_44k.flac", "mp3_cbr_stereo_44k.mp3", "mp3_vbr_mono_44k.mp3", "opus_stereo_48k.opus",
               "vorbis_stereo_44k.ogg", "aac_stereo_44k.m4a", "aac_itunsmpb_stereo_44k.m4a", "alac_stereo_44k.m4a",
               "wav_s24_stereo_48k.wav", "aiff_s16_mono_44k.aiff", "wavpack_apev2.wv"]
    rng = random.Random(1313)
    for source in sources:
        data = w.read(source)
        ext = source.rsplit(".", 1)[1]
        stem = source.rsplit(".", 1)[0]
        for n in range(count):
            b = bytearray(data)
            kind = n % 4
            # Mutate the first 4 KiB more often: that is where the headers are.
            def offset():
                return rng.randrange(min(len(b), 4096)) if rng.random() < 0.7 else rng.randrange(len(b))
            if kind == 0:
                for _ in range(rng.randint(1, 16)):
                    b[offset()] ^= 1 << rng.randrange(8)
            elif kind == 1:
                for _ in range(rng.randint(1, 4)):
                    value = rng.choice(EXTREMES)
                    at = offset()
                    b[at:at + len(value)] = value
            elif kind == 2:
                start = offset()
                length = rng.randint(1, 4096)
                b[start:start] = b[start:start + length] * rng.randint(1, 4)
            else:
                b = b[:rng.randrange(1, len(b))]
                for _ in range(rng.randint(0, 4)):
                    b[offset() % len(b)] = rng.randrange(256)
            w.add(f"mut_{stem}_{n:03d}.{ext}", bytes(b), "mutation")


def main():
    args = sys.argv[1:]
    count, big = 8, False
    if "--mutations" in args:
        i = args.index("--mutations")
        count = int(args[i + 1])
        del args[i:i + 2]
    if "--big" in args:
        big = True
        args.remove("--big")
    if len(args) != 2:
        raise SystemExit(__doc__)
    fixtures, out = args
    os.makedirs(out, exist_ok=True)
    w = Writer(fixtures, out)
    numeric_tags(w)
    ogg_granules(w)
    webm_times(w)
    mp4_tables(w)
    flac_streaminfo(w)
    wav_headers(w)
    mp3_headers(w)
    big_files(w, big)
    mutations(w, count)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(w.entries, f, indent=1)
    print(f"hostile_files.py: {len(w.entries)} files in {out}")


if __name__ == "__main__":
    main()
