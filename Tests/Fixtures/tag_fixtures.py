#!/usr/bin/env python3
"""Helper for generate.sh: cover art, tagging (mutagen), byte-level fixtures.

Subcommands (all paths relative to the current directory):
  png OUT W H R G B           write a solid-colour RGB PNG (pure zlib, deterministic)
  tag AUDIO_DIR COVER_PNG     tag every TAGGED fixture in AUDIO_DIR
  id3v1 FILE                  append an ID3v1.1 tag (and nothing else) to FILE
  apev2 FILE                  write an APEv2 tag (only) to FILE
  itunsmpb FILE REF N D       write the iTunSMPB freeform atom to the edit-list-free
                              AAC FILE; P is measured from the CLI decode; REF is the
                              edit-listed twin used to check the sample alignment
  randbytes OUT N SEED        N pseudo-random bytes (Python's Mersenne Twister)
  corrupt IN OUT SEED N       copy IN to OUT and overwrite N random bytes in the middle
                              of the audio payload (FLAC frames / MPEG frames)

Requires mutagen (pip install mutagen).
"""
import base64
import random
import shutil
import struct
import subprocess
import sys
import zlib

# ---- the tag values shared by every TAGGED fixture (mirrored in build_manifest.py) ----
TITLE = "Harmonia Test Title"
ARTIST = "Harmonia Artist"
ALBUM = "Harmonia Album"
ALBUM_ARTIST = "Harmonia Album Artist"
COMPOSER = "Harmonia Composer"
GENRE = "Electronic"
DATE = "2024"
TRACK, TRACK_TOTAL = 3, 12
DISC, DISC_TOTAL = 1, 2
BPM = 120
COMMENT = "Generated test fixture"
LYRICS = "La la la\nSecond line"
LYRICS_LANG = "eng"
RG_TRACK_GAIN = "-6.50 dB"
RG_ALBUM_GAIN = "-7.25 dB"
RG_TRACK_PEAK = "0.891251"
RG_ALBUM_PEAK = "0.912011"
# Opus: R128 gains in Q7.8 relative to -23 LUFS.
R128_TRACK_GAIN = "-1792"   # -7.0 dB  -> ReplayGain reference: -2.0 dB
R128_ALBUM_GAIN = "-2048"   # -8.0 dB  -> ReplayGain reference: -3.0 dB


def die(msg):
    sys.stderr.write("tag_fixtures.py: " + msg + "\n")
    sys.exit(1)


# ---------------------------------------------------------------- PNG
def make_png(width, height, rgb):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    row = b"\x00" + bytes(rgb) * width          # filter type 0 per row
    raw = row * height
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def flac_picture(png):
    from mutagen.flac import Picture
    w, h = png_size(png)
    pic = Picture()
    pic.type = 3                 # front cover
    pic.mime = "image/png"
    pic.desc = "Cover"
    pic.width, pic.height, pic.depth, pic.colors = w, h, 24, 0
    pic.data = png
    return pic


# ---------------------------------------------------------------- tagging
def vorbis_common(f, png, replaygain):
    """Fill Vorbis comments (FLAC, Ogg Vorbis, Ogg Opus)."""
    for key in list(f.keys()):
        del f[key]
    f["TITLE"] = TITLE
    f["ARTIST"] = ARTIST
    f["ALBUM"] = ALBUM
    f["ALBUMARTIST"] = ALBUM_ARTIST
    f["COMPOSER"] = COMPOSER
    f["GENRE"] = GENRE
    f["DATE"] = DATE
    f["TRACKNUMBER"] = str(TRACK)
    f["TRACKTOTAL"] = str(TRACK_TOTAL)
    f["DISCNUMBER"] = str(DISC)
    f["DISCTOTAL"] = str(DISC_TOTAL)
    f["BPM"] = str(BPM)
    f["COMMENT"] = COMMENT
    f["LYRICS"] = LYRICS
    if replaygain == "rg":
        f["REPLAYGAIN_TRACK_GAIN"] = RG_TRACK_GAIN
        f["REPLAYGAIN_ALBUM_GAIN"] = RG_ALBUM_GAIN
        f["REPLAYGAIN_TRACK_PEAK"] = RG_TRACK_PEAK
        f["REPLAYGAIN_ALBUM_PEAK"] = RG_ALBUM_PEAK
    elif replaygain == "r128":
        f["R128_TRACK_GAIN"] = R128_TRACK_GAIN
        f["R128_ALBUM_GAIN"] = R128_ALBUM_GAIN
    if png is not None:
        # Ogg: cover art as a base64 FLAC picture block (the Xiph convention).
        f["METADATA_BLOCK_PICTURE"] = base64.b64encode(flac_picture(png).write()).decode("ascii")


def fixed_padding(_info):
    return 1024


def tag_flac(path, png):
    from mutagen.flac import FLAC
    f = FLAC(path)
    if f.tags is None:
        f.add_tags()
    vorbis_common(f, None, "rg")
    f.clear_pictures()
    f.add_picture(flac_picture(png))
    f.save(padding=fixed_padding)


def tag_ogg(path, png, cls, replaygain):
    f = cls(path)
    if f.tags is None:
        f.add_tags()
    vorbis_common(f, png, replaygain)
    f.save(padding=fixed_padding)


def tag_id3v24(path, png):
    from mutagen.id3 import (ID3, TIT2, TPE1, TALB, TPE2, TCOM, TCON, TDRC, TRCK,
                             TPOS, TBPM, COMM, USLT, TXXX, APIC)
    t = ID3()
    t.add(TIT2(encoding=3, text=TITLE))
    t.add(TPE1(encoding=3, text=ARTIST))
    t.add(TALB(encoding=3, text=ALBUM))
    t.add(TPE2(encoding=3, text=ALBUM_ARTIST))
    t.add(TCOM(encoding=3, text=COMPOSER))
    t.add(TCON(encoding=3, text=GENRE))
    t.add(TDRC(encoding=3, text=DATE))
    t.add(TRCK(encoding=3, text="%d/%d" % (TRACK, TRACK_TOTAL)))
    t.add(TPOS(encoding=3, text="%d/%d" % (DISC, DISC_TOTAL)))
    t.add(TBPM(encoding=3, text=str(BPM)))
    t.add(COMM(encoding=3, lang=LYRICS_LANG, desc="", text=COMMENT))
    t.add(USLT(encoding=3, lang=LYRICS_LANG, desc="", text=LYRICS))
    t.add(TXXX(encoding=3, desc="REPLAYGAIN_TRACK_GAIN", text=RG_TRACK_GAIN))
    t.add(TXXX(encoding=3, desc="REPLAYGAIN_ALBUM_GAIN", text=RG_ALBUM_GAIN))
    t.add(TXXX(encoding=3, desc="REPLAYGAIN_TRACK_PEAK", text=RG_TRACK_PEAK))
    t.add(TXXX(encoding=3, desc="REPLAYGAIN_ALBUM_PEAK", text=RG_ALBUM_PEAK))
    t.add(APIC(encoding=3, mime="image/png", type=3, desc="Cover", data=png))
    t.save(path, v1=0, v2_version=4, padding=fixed_padding)


def tag_mp4(path, png):
    from mutagen.mp4 import MP4, MP4Cover, MP4FreeForm
    m = MP4(path)
    if m.tags is None:
        m.add_tags()
    m.tags.clear()
    m["\xa9nam"] = [TITLE]
    m["\xa9ART"] = [ARTIST]
    m["\xa9alb"] = [ALBUM]
    m["aART"] = [ALBUM_ARTIST]
    m["\xa9wrt"] = [COMPOSER]
    m["\xa9gen"] = [GENRE]
    m["\xa9day"] = [DATE]
    m["trkn"] = [(TRACK, TRACK_TOTAL)]
    m["disk"] = [(DISC, DISC_TOTAL)]
    m["tmpo"] = [BPM]
    m["\xa9cmt"] = [COMMENT]
    m["\xa9lyr"] = [LYRICS]
    m["covr"] = [MP4Cover(png, imageformat=MP4Cover.FORMAT_PNG)]
    ff = "----:com.apple.iTunes:"
    m[ff + "replaygain_track_gain"] = [MP4FreeForm(RG_TRACK_GAIN.encode())]
    m[ff + "replaygain_album_gain"] = [MP4FreeForm(RG_ALBUM_GAIN.encode())]
    m[ff + "replaygain_track_peak"] = [MP4FreeForm(RG_TRACK_PEAK.encode())]
    m[ff + "replaygain_album_peak"] = [MP4FreeForm(RG_ALBUM_PEAK.encode())]
    m.save(padding=fixed_padding)


def cmd_tag(audio_dir, cover):
    from mutagen.oggopus import OggOpus
    from mutagen.oggvorbis import OggVorbis
    png = open(cover, "rb").read()
    tag_flac(audio_dir + "/flac_s16_stereo_44k.flac", png)
    tag_id3v24(audio_dir + "/mp3_cbr_stereo_44k.mp3", png)
    tag_mp4(audio_dir + "/aac_stereo_44k.m4a", png)
    tag_ogg(audio_dir + "/opus_stereo_48k.opus", png, OggOpus, "r128")
    tag_ogg(audio_dir + "/vorbis_stereo_44k.ogg", png, OggVorbis, "rg")


ID3V1_GENRE_ELECTRONIC = 52


def cmd_id3v1(path):
    from mutagen.id3 import ID3, ID3NoHeaderError
    data = open(path, "rb").read()
    if data[:3] == b"ID3" or data[-128:-125] == b"TAG":
        die(path + " already carries an ID3 tag")

    def field(s, n):
        b = s.encode("latin-1")
        assert len(b) <= n, s
        return b + b"\x00" * (n - len(b))
    tag = (b"TAG" + field(TITLE, 30) + field(ARTIST, 30) + field(ALBUM, 30)
           + field(DATE, 4) + field(COMMENT, 28) + b"\x00" + bytes([TRACK])
           + bytes([ID3V1_GENRE_ELECTRONIC]))
    assert len(tag) == 128
    with open(path, "ab") as f:
        f.write(tag)
    # sanity check: mutagen sees the v1 tag, and there is no ID3v2 header
    t = ID3(path)
    assert t.version[:2] == (1, 1), t.version
    assert str(t["TIT2"]) == TITLE and str(t["TCON"]) == GENRE and str(t["TRCK"]) == str(TRACK)


def cmd_apev2(path):
    from mutagen.apev2 import APEv2
    a = APEv2()
    a["Title"] = TITLE
    a["Artist"] = ARTIST
    a["Album"] = ALBUM
    a["Year"] = DATE
    a["Track"] = "%d/%d" % (TRACK, TRACK_TOTAL)
    a.save(path)


# ---------------------------------------------------------------- iTunSMPB
def decode_f32(path, channels):
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0",
                          "-f", "f32le", "-"], check=True, stdout=subprocess.PIPE).stdout
    assert len(raw) % (4 * channels) == 0
    return raw


def cmd_itunsmpb(path, ref, n, d):
    import array
    from mutagen.mp4 import MP4, MP4FreeForm
    n, d = int(n), int(d)
    ch = 2
    raw = decode_f32(path, ch)
    total = len(raw) // (4 * ch)
    p = total - d - n
    if p < 0:
        die("iTunSMPB: decoded %d frames < D+N = %d" % (total, d + n))
    value = " 00000000 %08X %08X %016X" % (d, p, n) + " 00000000" * 8
    m = MP4(path)
    if m.tags is None:
        m.add_tags()
    m.tags.clear()
    m["----:com.apple.iTunes:iTunSMPB"] = [MP4FreeForm(value.encode("ascii"))]
    m.save(padding=fixed_padding)
    # Verify. The CLI decode of the tagged file is either all D+N+P frames (priming
    # not skipped) or N+P frames (FFmpeg's mov demuxer reads the iTunSMPB priming
    # field and skips D frames itself - FFmpeg 5.1 does; it ignores the padding field).
    raw2 = decode_f32(path, ch)
    total2 = len(raw2) // (4 * ch)
    if total2 not in (d + n + p, n + p):
        die("iTunSMPB: after tagging the CLI decodes %d frames, expected %d or %d"
            % (total2, d + n + p, n + p))
    offset = total2 - n - p          # CLI frames that precede frame 0 of the real audio
    # frames [offset, offset+N) must equal the edit-listed twin's frames [0, N).
    a = array.array("f"); a.frombytes(raw2)
    b = array.array("f"); b.frombytes(decode_f32(ref, ch))
    if len(b) < n * ch:
        die("iTunSMPB: reference decodes too few frames")
    maxdiff = max(abs(a[offset * ch + i] - b[i]) for i in range(n * ch))
    if maxdiff > 1e-4:
        die("iTunSMPB: frames [%d, %d+N) differ from the edit-listed decode (max %g)"
            % (offset, offset, maxdiff))
    print("iTunSMPB: D=%d P=%d N=%d; CLI decode before tagging %d frames, after tagging %d "
          "(offset %d); max |diff| vs edit-listed decode = %g" % (d, p, n, total, total2, offset, maxdiff))
    print("iTunSMPB value: '%s'" % value)


# ---------------------------------------------------------------- byte-level
def cmd_randbytes(out, n, seed):
    rng = random.Random(int(seed))
    with open(out, "wb") as f:
        f.write(bytes(rng.getrandbits(8) for _ in range(int(n))))


def audio_payload_range(data, path):
    """(start, end) byte offsets of the coded audio, excluding headers/tags."""
    if data[:4] == b"fLaC":
        pos = 4
        while True:
            hdr = data[pos]
            size = int.from_bytes(data[pos + 1:pos + 4], "big")
            pos += 4 + size
            if hdr & 0x80:
                break
        return pos, len(data)
    if data[4:8] == b"ftyp":  # MP4: the mdat box's payload
        pos = 0
        while pos + 8 <= len(data):
            size = int.from_bytes(data[pos:pos + 4], "big")
            if data[pos + 4:pos + 8] == b"mdat":
                return pos + 8, pos + size
            pos += size
        raise SystemExit("corrupt: no mdat in " + path)
    # MPEG audio: skip ID3v2 at the front, the Xing/Info frame, ID3v1/APEv2 at the end
    start = 0
    if data[:3] == b"ID3":
        sz = 0
        for b in data[6:10]:
            sz = (sz << 7) | b
        start = 10 + sz + (10 if data[5] & 0x10 else 0)
    assert data[start] == 0xFF and (data[start + 1] & 0xE0) == 0xE0, path
    start += 1152  # generously past the first (Xing/Info) frame
    end = len(data)
    if data[end - 128:end - 125] == b"TAG":
        end -= 128
    return start, end


def cmd_corrupt(src, out, seed, n):
    n = int(n)
    data = bytearray(open(src, "rb").read())
    start, end = audio_payload_range(bytes(data), src)
    mid = (start + end) // 2
    lo = mid - n // 2
    assert start < lo and lo + n < end
    rng = random.Random(int(seed))
    data[lo:lo + n] = bytes(rng.getrandbits(8) for _ in range(n))
    open(out, "wb").write(bytes(data))
    print("corrupt: %s bytes [%d, %d) of %d overwritten (audio payload [%d, %d))"
          % (out, lo, lo + n, len(data), start, end))


def main(argv):
    if len(argv) < 2:
        die(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "png":
        out, w, h, r, g, b = args
        open(out, "wb").write(make_png(int(w), int(h), (int(r), int(g), int(b))))
    elif cmd == "tag":
        cmd_tag(*args)
    elif cmd == "id3v1":
        cmd_id3v1(*args)
    elif cmd == "apev2":
        cmd_apev2(*args)
    elif cmd == "itunsmpb":
        cmd_itunsmpb(*args)
    elif cmd == "randbytes":
        cmd_randbytes(*args)
    elif cmd == "corrupt":
        cmd_corrupt(*args)
    else:
        die("unknown subcommand " + cmd)


if __name__ == "__main__":
    main(sys.argv)
