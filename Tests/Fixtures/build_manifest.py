#!/usr/bin/env python3
"""Verify the generated fixtures and write manifest.json (called by generate.sh).

Checks, failing loudly on any mismatch:
  * ffprobe's codec / sample rate / channel count / container for each fixture;
  * the number of frames `ffmpeg -i F -f f32le -` decodes (cliFrames): exactly N for
    every file except the two AAC .m4a files (the CLI keeps the AAC end padding);
  * lossless/PCM files decode to the source signal within one LSB, channel by channel;
  * lossy files decode to the source signal, aligned at cliOffset, with a sane SNR on
    every channel and each channel matching its own source channel best (catches
    channel-order and alignment bugs in the generator itself);
  * the faststart .m4a truncations still hold a complete moov, the moov-at-end one not;
  * the tags that mutagen reads back equal the values in the manifest.
"""
import array
import hashlib
import json
import math
import os
import subprocess
import sys

GEN = ".generated"

# Per-channel chirps, the same expressions generate.sh passes to aevalsrc.
CHIRPS = [(300, 200), (500, 150), (700, 100), (60, 40), (1100, 250), (1300, 50)]
AMPLITUDE = 0.4

ART = "cover.png"   # relative to GEN; the artwork embedded in every tagged file

FULL_TAGS = {
    "title": "Harmonia Test Title",
    "artist": "Harmonia Artist",
    "album": "Harmonia Album",
    "albumArtist": "Harmonia Album Artist",
    "composer": "Harmonia Composer",
    "genre": "Electronic",
    "year": 2024,
    "trackNumber": 3,
    "trackTotal": 12,
    "discNumber": 1,
    "discTotal": 2,
    "bpm": 120,
    "replayGainTrack": -6.5,
    "replayGainAlbum": -7.25,
    "replayGainTrackPeak": 0.891251,
    "replayGainAlbumPeak": 0.912011,
    "comment": "Generated test fixture",
    "lyrics": "La la la\nSecond line",
    "artworkBytes": None,   # filled in with the PNG size
}


def opus_tags():
    t = {k: v for k, v in FULL_TAGS.items()
         if k not in ("replayGainTrackPeak", "replayGainAlbumPeak")}
    # R128_TRACK_GAIN -1792 (Q7.8, -7.0 dB re -23 LUFS) -> -7.0 + 5.0 = -2.0 dB re ReplayGain
    t["replayGainTrack"] = -1792 / 256 + 5.0
    # R128_ALBUM_GAIN -2048 (-8.0 dB) -> -3.0 dB
    t["replayGainAlbum"] = -2048 / 256 + 5.0
    return t


ID3V1_TAGS = {k: FULL_TAGS[k] for k in
              ("title", "artist", "album", "year", "comment", "trackNumber", "genre")}
APEV2_TAGS = {k: FULL_TAGS[k] for k in
              ("title", "artist", "album", "year", "trackNumber", "trackTotal")}

# file, container, codec, rate, channels, frames, bitDepth, lossless, tags
FIXTURES = [
    ("wav_s16_stereo_44k.wav", "wav", "pcm_s16le", 44100, 2, 44100, 16, True, None),
    ("wav_s24_stereo_48k.wav", "wav", "pcm_s24le", 48000, 2, 24000, 24, True, None),
    ("wav_f32_mono_44k.wav", "wav", "pcm_f32le", 44100, 1, 22050, 32, True, None),
    ("aiff_s16_mono_44k.aiff", "aiff", "pcm_s16be", 44100, 1, 44100, 16, True, None),
    ("flac_s16_stereo_44k.flac", "flac", "flac", 44100, 2, 88200, 16, True, FULL_TAGS),
    ("flac_s24_stereo_96k.flac", "flac", "flac", 96000, 2, 96000, 24, True, None),
    ("flac_s16_51_48k.flac", "flac", "flac", 48000, 6, 48000, 16, True, None),
    ("mp3_cbr_stereo_44k.mp3", "mp3", "mp3", 44100, 2, 88200, 32, False, FULL_TAGS),
    ("mp3_vbr_mono_44k.mp3", "mp3", "mp3", 44100, 1, 88200, 32, False, ID3V1_TAGS),
    ("aac_stereo_44k.m4a", "mp4", "aac", 44100, 2, 132300, 32, False, FULL_TAGS),
    ("aac_itunsmpb_stereo_44k.m4a", "mp4", "aac", 44100, 2, 132300, 32, False, {}),
    ("alac_stereo_44k.m4a", "mp4", "alac", 44100, 2, 44100, 16, True, None),
    ("opus_stereo_48k.opus", "ogg", "opus", 48000, 2, 96000, 32, False, "opus"),
    ("vorbis_stereo_44k.ogg", "ogg", "vorbis", 44100, 2, 88200, 32, False, FULL_TAGS),
    ("wavpack_apev2.wv", "wv", "wavpack", 44100, 1, 22050, 16, True, APEV2_TAGS),
]

CONTAINER_FORMAT = {"wav": "wav", "aiff": "aiff", "flac": "flac", "mp3": "mp3",
                    "mp4": "mov,mp4,m4a,3gp,3g2,mj2", "ogg": "ogg", "wv": "wv"}

# Files where the CLI is expected to keep the AAC end padding (cliFrames > N).
KEEPS_END_PADDING = {"aac_stereo_44k.m4a", "aac_itunsmpb_stereo_44k.m4a"}


def fail(msg):
    sys.stderr.write("build_manifest.py: FAIL: " + msg + "\n")
    sys.exit(1)


def ffprobe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                          "format=format_name:stream=codec_type,codec_name,sample_rate,channels",
                          "-of", "json", path], check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out)


def decode(path, channels):
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0",
                          "-f", "f32le", "-"], check=True, stdout=subprocess.PIPE).stdout
    if len(raw) % (4 * channels):
        fail("%s: decoded byte count %d not a multiple of %d" % (path, len(raw), 4 * channels))
    a = array.array("f")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def source(rate, channels, frames):
    path = os.path.join(GEN, "src_%d_%d_%d.wav" % (rate, channels, frames))
    a = decode(path, channels)
    if len(a) != frames * channels:
        fail("%s has %d frames, expected %d" % (path, len(a) // channels, frames))
    return a


def check_source_signal(src, rate, channels, frames):
    """The source WAV really is the documented chirp (spot check)."""
    for i in range(0, frames, 997):
        t = i / rate
        for c in range(channels):
            f0, k = CHIRPS[c]
            want = AMPLITUDE * math.sin(2 * math.pi * (f0 + k * t) * t)
            if abs(src[i * channels + c] - want) > 1e-6:
                fail("source %dHz/%dch frame %d ch %d = %f, expected %f"
                     % (rate, channels, i, c, src[i * channels + c], want))


def channel_snr(dec, src, ch, cd, cs, frames, offset, skip=0):
    """SNR (dB) of decoded channel cd against source channel cs, skipping `skip`
    frames at both ends (codec transients)."""
    sig = err = 0.0
    for i in range(skip, frames - skip):
        s = src[i * ch + cs]
        d = dec[(i + offset) * ch + cd]
        sig += s * s
        err += (d - s) * (d - s)
    return 10 * math.log10(sig / err) if err > 0 else float("inf")


def read_tags(path):
    """What mutagen reads back, normalised to the manifest's field names."""
    import mutagen
    from mutagen.apev2 import APEv2, APENoHeaderError
    out = {}
    name = os.path.basename(path)
    if name == "wavpack_apev2.wv":
        a = APEv2(path)
        out = {"title": str(a["Title"]), "artist": str(a["Artist"]), "album": str(a["Album"]),
               "year": int(str(a["Year"]))}
        n, t = str(a["Track"]).split("/")
        out["trackNumber"], out["trackTotal"] = int(n), int(t)
        return out
    f = mutagen.File(path)
    if f is None or f.tags is None:
        return out
    tags = f.tags
    cls = type(f).__name__
    if cls in ("FLAC", "OggVorbis", "OggOpus"):
        def g(k):
            return tags[k][0] if k in tags else None
        m = {"title": g("TITLE"), "artist": g("ARTIST"), "album": g("ALBUM"),
             "albumArtist": g("ALBUMARTIST"), "composer": g("COMPOSER"), "genre": g("GENRE"),
             "comment": g("COMMENT"), "lyrics": g("LYRICS")}
        out.update({k: v for k, v in m.items() if v is not None})
        for k, tk in (("year", "DATE"), ("trackNumber", "TRACKNUMBER"), ("trackTotal", "TRACKTOTAL"),
                      ("discNumber", "DISCNUMBER"), ("discTotal", "DISCTOTAL"), ("bpm", "BPM")):
            if g(tk) is not None:
                out[k] = int(g(tk))
        for k, tk in (("replayGainTrack", "REPLAYGAIN_TRACK_GAIN"),
                      ("replayGainAlbum", "REPLAYGAIN_ALBUM_GAIN"),
                      ("replayGainTrackPeak", "REPLAYGAIN_TRACK_PEAK"),
                      ("replayGainAlbumPeak", "REPLAYGAIN_ALBUM_PEAK")):
            if g(tk) is not None:
                out[k] = float(g(tk).replace(" dB", ""))
        for k, tk in (("replayGainTrack", "R128_TRACK_GAIN"), ("replayGainAlbum", "R128_ALBUM_GAIN")):
            if g(tk) is not None:
                out[k] = int(g(tk)) / 256 + 5.0
        if cls == "FLAC" and f.pictures:
            out["artworkBytes"] = len(f.pictures[0].data)
        if g("METADATA_BLOCK_PICTURE") is not None:
            import base64
            from mutagen.flac import Picture
            out["artworkBytes"] = len(Picture(base64.b64decode(g("METADATA_BLOCK_PICTURE"))).data)
    elif cls == "MP3":
        def txt(fid):
            return str(tags[fid]) if fid in tags else None
        m = {"title": txt("TIT2"), "artist": txt("TPE1"), "album": txt("TALB"),
             "albumArtist": txt("TPE2"), "composer": txt("TCOM"), "genre": txt("TCON")}
        out.update({k: v for k, v in m.items() if v is not None})
        if "TDRC" in tags:
            out["year"] = int(str(tags["TDRC"])[:4])
        for fid, kn, kt in (("TRCK", "trackNumber", "trackTotal"), ("TPOS", "discNumber", "discTotal")):
            if fid in tags:
                parts = str(tags[fid]).split("/")
                out[kn] = int(parts[0])
                if len(parts) > 1:
                    out[kt] = int(parts[1])
        if "TBPM" in tags:
            out["bpm"] = int(str(tags["TBPM"]))
        for fr in tags.getall("COMM"):
            out["comment"] = str(fr)
        for fr in tags.getall("USLT"):
            out["lyrics"] = fr.text
        for fr in tags.getall("TXXX"):
            key = {"REPLAYGAIN_TRACK_GAIN": "replayGainTrack", "REPLAYGAIN_ALBUM_GAIN": "replayGainAlbum",
                   "REPLAYGAIN_TRACK_PEAK": "replayGainTrackPeak",
                   "REPLAYGAIN_ALBUM_PEAK": "replayGainAlbumPeak"}.get(fr.desc)
            if key:
                out[key] = float(str(fr).replace(" dB", ""))
        for fr in tags.getall("APIC"):
            out["artworkBytes"] = len(fr.data)
    elif cls == "MP4":
        def s(k):
            return str(tags[k][0]) if k in tags else None
        m = {"title": s("\xa9nam"), "artist": s("\xa9ART"), "album": s("\xa9alb"),
             "albumArtist": s("aART"), "composer": s("\xa9wrt"), "genre": s("\xa9gen"),
             "comment": s("\xa9cmt"), "lyrics": s("\xa9lyr")}
        out.update({k: v for k, v in m.items() if v is not None})
        if "\xa9day" in tags:
            out["year"] = int(s("\xa9day")[:4])
        if "trkn" in tags:
            out["trackNumber"], out["trackTotal"] = tags["trkn"][0]
        if "disk" in tags:
            out["discNumber"], out["discTotal"] = tags["disk"][0]
        if "tmpo" in tags:
            out["bpm"] = tags["tmpo"][0]
        for k, fk in (("replayGainTrack", "replaygain_track_gain"), ("replayGainAlbum", "replaygain_album_gain"),
                      ("replayGainTrackPeak", "replaygain_track_peak"),
                      ("replayGainAlbumPeak", "replaygain_album_peak")):
            fk = "----:com.apple.iTunes:" + fk
            if fk in tags:
                out[k] = float(bytes(tags[fk][0]).decode().replace(" dB", ""))
        if "covr" in tags:
            out["artworkBytes"] = len(bytes(tags["covr"][0]))
    return out


def itunsmpb(path):
    from mutagen.mp4 import MP4
    v = bytes(MP4(path).tags["----:com.apple.iTunes:iTunSMPB"][0]).decode()
    f = v.split()
    return int(f[1], 16), int(f[2], 16), int(f[3], 16), v


def top_level_atoms(data):
    atoms, pos = [], 0
    while pos + 8 <= len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8].decode("latin-1")
        if size == 1:
            size = int.from_bytes(data[pos + 8:pos + 16], "big")
        elif size == 0:
            size = len(data) - pos
        atoms.append((kind, pos, size))
        if size < 8:
            break
        pos += size
    return atoms


def main():
    art = open(os.path.join(GEN, ART), "rb").read()
    art_info = {"bytes": len(art), "sha256": hashlib.sha256(art).hexdigest()}
    entries = []
    sources = {}
    print("%-30s %6s %3s %7s %9s %9s  %s" % ("file", "rate", "ch", "N", "cliFrames", "cliOffset", "check"))
    for (name, container, codec, rate, ch, frames, depth, lossless, tagset) in FIXTURES:
        path = "audio/" + name
        if not os.path.exists(path):
            fail(path + " missing")
        probe = ffprobe(path)
        astreams = [s for s in probe["streams"] if s["codec_type"] == "audio"]
        if len(astreams) != 1:
            fail("%s: %d audio streams" % (path, len(astreams)))
        s = astreams[0]
        if (s["codec_name"], int(s["sample_rate"]), s["channels"]) != (codec, rate, ch):
            fail("%s: ffprobe says %s/%s/%s" % (path, s["codec_name"], s["sample_rate"], s["channels"]))
        fmt = probe["format"]["format_name"]
        if fmt != CONTAINER_FORMAT[container]:
            fail("%s: container %s" % (path, fmt))

        if container == "mp3":
            data = open(path, "rb").read()
            start = 0
            if data[:3] == b"ID3":
                start = 10 + sum(b << (7 * (3 - i)) for i, b in enumerate(data[6:10]))
            head = data[start:start + 1024]
            want = b"Xing" if "vbr" in name else b"Info"
            if want not in head:
                fail("%s: no %s header in the first frame" % (path, want.decode()))
            if name == "mp3_vbr_mono_44k.mp3" and data[:3] == b"ID3":
                fail(path + " must not carry ID3v2")
        if container == "mp4":
            data = open(path, "rb").read()
            kinds = [a[0] for a in top_level_atoms(data)]
            if "moov" not in kinds or "mdat" not in kinds or kinds.index("moov") > kinds.index("mdat"):
                fail("%s: moov is not before mdat (faststart): %s" % (path, kinds))
            has_elst = b"elst" in data[:data.index(b"mdat")]
            if name == "aac_stereo_44k.m4a" and not has_elst:
                fail(path + ": expected an edit list")
            if name == "aac_itunsmpb_stereo_44k.m4a" and has_elst:
                fail(path + ": must not carry an edit list")
        key = (rate, ch, frames)
        if key not in sources:
            sources[key] = source(rate, ch, frames)
            check_source_signal(sources[key], rate, ch, frames)
        src = sources[key]
        dec = decode(path, ch)
        cli = len(dec) // ch
        offset = 0
        extra = {}
        if name == "aac_itunsmpb_stereo_44k.m4a":
            d, p, n, value = itunsmpb(path)
            # FFmpeg (5.1) skips the iTunSMPB priming itself, older ones did not.
            if n != frames or cli not in (n + p, d + n + p):
                fail("%s: iTunSMPB D=%d P=%d N=%d vs CLI frames %d" % (path, d, p, n, cli))
            offset = cli - n - p
        if name in KEEPS_END_PADDING:
            if cli < frames + offset:
                fail("%s: CLI decodes %d frames < N + offset" % (path, cli))
        elif cli != frames:
            fail("%s: CLI decodes %d frames, expected exactly N=%d" % (path, cli, frames))

        if lossless:
            lsb = 0.0 if depth == 32 else 1.0 / (1 << (depth - 1))
            worst = max(abs(dec[i] - src[i]) for i in range(frames * ch))
            if worst > lsb + 1e-9:
                fail("%s: lossless decode differs from the source by %g (> 1 LSB)" % (path, worst))
            check = "max|diff|=%.3g LSB" % (worst / lsb if lsb else worst)
        else:
            skip = 2048 if frames > 8192 else 0
            snrs = []
            for c in range(ch):
                own = channel_snr(dec, src, ch, c, c, frames, offset, skip)
                for o in range(ch):
                    if o != c and channel_snr(dec, src, ch, c, o, frames, offset, skip) >= own:
                        fail("%s: decoded channel %d matches source channel %d better" % (path, c, o))
                if own < 10:
                    fail("%s: channel %d SNR %.1f dB vs source (alignment broken?)" % (path, c, own))
                snrs.append(own)
            # an alignment check: shifting by 1 frame must be clearly worse
            if frames > 4096:
                shifted = channel_snr(dec, src, ch, 0, 0, frames - 1, offset + 1, skip)
                if shifted >= snrs[0]:
                    fail("%s: decode aligns better at offset+1" % path)
            check = "SNR " + "/".join("%.1f" % v for v in snrs) + " dB"
        print("%-30s %6d %3d %7d %9d %9d  %s" % (name, rate, ch, frames, cli, offset, check))

        tags = {}
        if tagset == "opus":
            tags = opus_tags()
        elif tagset:
            tags = dict(tagset)
        if "artworkBytes" in tags:
            tags["artworkBytes"] = len(art)
        got = read_tags(path)
        if name == "aac_itunsmpb_stereo_44k.m4a":
            got = {}
        for k in set(tags) | set(got):
            a, b = tags.get(k), got.get(k)
            if isinstance(a, float) and isinstance(b, float):
                if abs(a - b) > 1e-9:
                    fail("%s: tag %s = %r, manifest %r" % (path, k, b, a))
            elif a != b:
                fail("%s: tag %s = %r, manifest %r" % (path, k, b, a))

        entries.append({"file": path, "container": container, "codec": codec,
                        "sampleRate": rate, "channels": ch, "frames": frames,
                        "bitDepth": depth, "lossless": lossless,
                        "cliFrames": cli, "cliOffset": offset, "tags": tags})

    bad = []
    for name in sorted(os.listdir("bad")):
        if name.startswith("truncated_moov_at_end"):
            kind, src_file = "truncated", None
        elif name.startswith("truncated_"):
            kind, src_file = "truncated", "audio/" + name[len("truncated_"):]
        elif name.startswith("corrupt_"):
            kind = "corrupt"
            src_file = {"corrupt_mid.flac": "audio/flac_s16_stereo_44k.flac",
                        "corrupt_mid.mp3": "audio/mp3_cbr_stereo_44k.mp3",
                        "corrupt_mid.m4a": "audio/aac_stereo_44k.m4a"}[name]
        else:
            kind, src_file = {"empty.mp3": "empty", "random.bin": "random", "image.png": "image",
                              "text.mp3": "text", "video_no_audio.mp4": "video"}[name], None
        path = "bad/" + name
        data = open(path, "rb").read()
        if kind == "truncated" and src_file:
            full = open(src_file, "rb").read()
            if data != full[:len(full) * 55 // 100]:
                fail(path + " is not the first 55% of " + src_file)
        if name.startswith("truncated_") and name.endswith(".m4a"):
            atoms = top_level_atoms(data)
            moov = [a for a in atoms if a[0] == "moov"]
            has_moov = bool(moov) and moov[0][1] + moov[0][2] <= len(data)
            want_moov = name != "truncated_moov_at_end.m4a"
            if has_moov != want_moov:
                fail("%s: complete moov present=%s, expected %s" % (path, has_moov, want_moov))
        if kind == "empty" and data:
            fail(path + " not empty")
        entry = {"file": path, "kind": kind}
        if src_file:
            entry["source"] = src_file
        bad.append(entry)

    manifest = {
        "fixtures": entries,
        "bad": bad,
        "artwork": art_info,
        "signal": {
            "description": "channel c, frame i, t = i / sampleRate: "
                           "amplitude * sin(2*pi*(f0[c] + k[c]*t)*t); mono uses channel 0; "
                           "6-channel order FL FR FC LFE SL SR",
            "amplitude": AMPLITUDE,
            "f0": [c[0] for c in CHIRPS],
            "k": [c[1] for c in CHIRPS],
        },
    }
    with open("manifest.json", "w") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("manifest.json: %d fixtures, %d bad inputs, artwork %d bytes sha256 %s"
          % (len(entries), len(bad), art_info["bytes"], art_info["sha256"]))


if __name__ == "__main__":
    main()
