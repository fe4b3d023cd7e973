#!/usr/bin/python3
"""MP3 files with ID3v2 tags as taggers write them, for the scan's MP3 header reader.

    mp3_tag_variants.py DIR

Copies the two MP3 fixtures (LAME "Info" CBR stereo, "Xing" VBR mono) into
DIR under several tags written by mutagen (Debian's python3-mutagen): v2.4
and v2.3, every text encoding, TXXX, COMM, USLT, APIC, the v2.3 date
frames, duplicates and collisions, no padding, a numeric genre, no tag.
Prints one line per file: NAME<TAB>accept|either, "accept" where the
reader without FFmpeg must read it (the rest it may leave to FFmpeg).
Tests/HarmoniaFFmpegTests/MP3HeadersTests.swift compares every file with
FFmpeg's own header read.
"""
import os
import shutil
import sys

from mutagen.id3 import (APIC, COMM, ID3, PRIV, TALB, TBPM, TCOM, TCON, TDAT, TDRC, TIME, TIT2, TPE1,
                         TPE2, TPOS, TRCK, TXXX, TYER, USLT)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AUDIO = os.path.join(REPO, "Tests", "Fixtures", "audio")
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 2 + b"\xff\xd9"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))


def common(enc, version):
    """The frames Picard writes for one track, in text encoding `enc`."""
    frames = [
        TIT2(encoding=enc, text=["Café Ñandú"]),
        TPE1(encoding=enc, text=["Björk", "Ólafur Arnalds"] if version == 4 else ["Björk"]),
        TPE2(encoding=enc, text=["Björk"]),
        TALB(encoding=enc, text=["Duets ★ 𝄞" if enc else "Duets ÷ ×"]),
        TCOM(encoding=enc, text=["Composer"]),
        TCON(encoding=enc, text=["Electronic"]),
        TRCK(encoding=enc, text=["3/12"]),
        TPOS(encoding=enc, text=["1/2"]),
        TBPM(encoding=enc, text=["120"]),
        TXXX(encoding=enc, desc="REPLAYGAIN_TRACK_GAIN", text=["-6.50 dB"]),
        TXXX(encoding=enc, desc="REPLAYGAIN_ALBUM_GAIN", text=["-7.25 dB"]),
        TXXX(encoding=enc, desc="REPLAYGAIN_TRACK_PEAK", text=["0.891251"]),
        TXXX(encoding=enc, desc="MusicBrainz Album Id", text=["87c5dedd-371d-4a53-9f7f-80522fb7f3cb"]),
        COMM(encoding=enc, lang="eng", desc="", text=["A comment"]),
        COMM(encoding=enc, lang="eng", desc="iTunNORM", text=[" 0000 0001"]),
        USLT(encoding=enc, lang="eng", desc="", text="La la la\nSecond line"),
        APIC(encoding=enc, mime="image/jpeg", type=3, desc="Cover", data=JPEG),
    ]
    if version == 4:
        frames.append(TDRC(encoding=enc, text=["2021-05-03"]))
    else:
        frames += [TYER(encoding=enc, text=["2019"]), TDAT(encoding=enc, text=["0305"]),
                   TIME(encoding=enc, text=["1230"])]
    return frames


def variants():
    """(name, fixture, version, frames, padding, expected)."""
    out = []
    for base, fixture in (("cbr", "mp3_cbr_stereo_44k.mp3"), ("vbr", "mp3_vbr_mono_44k.mp3")):
        out += [
            (f"{base}-v24-utf8", fixture, 4, common(3, 4), 1024, "accept"),
            (f"{base}-v24-latin1", fixture, 4, common(0, 4), 1024, "accept"),
            (f"{base}-v24-utf16", fixture, 4, common(1, 4), 1024, "accept"),
            (f"{base}-v24-utf16be", fixture, 4, common(2, 4), 1024, "accept"),
            (f"{base}-v23-utf16", fixture, 3, common(1, 3), 1024, "accept"),
            (f"{base}-v23-latin1", fixture, 3, common(0, 3), 1024, "accept"),
        ]
    long_comment = COMM(encoding=3, lang="eng", desc="", text=["x" * 300])
    out += [
        # No padding: the last frame's v2.4 size is checked against the audio after it.
        ("v24-no-padding", "mp3_cbr_stereo_44k.mp3", 4, common(3, 4) + [long_comment], 0, "either"),
        ("v23-no-padding", "mp3_cbr_stereo_44k.mp3", 3, common(3, 3) + [long_comment], 0, "accept"),
        # Collisions: a TXXX named like a common key, repeated keys, an empty title.
        ("collisions", "mp3_vbr_mono_44k.mp3", 4, [
            TXXX(encoding=3, desc="title", text=["From TXXX"]), TIT2(encoding=3, text=[""]),
            TXXX(encoding=3, desc="artist", text=["First"]), TPE1(encoding=3, text=["Second"]),
            TXXX(encoding=3, desc="Dup", text=["one"]), TXXX(encoding=3, desc="dup", text=["two"]),
            COMM(encoding=3, lang="eng", desc="", text=["first"]), COMM(encoding=3, lang="fra", desc="", text=["second"]),
            USLT(encoding=3, lang="eng", desc="", text="one"), USLT(encoding=3, lang="deu", desc="v", text="two"),
            USLT(encoding=3, lang="eng", desc="", text="three"),
            TDRC(encoding=3, text=["2020"]), TXXX(encoding=3, desc="date", text=["1999"]),
        ], 64, "accept"),
        # Pictures: an unknown type is skipped; the first known one is the cover.
        ("pictures", "mp3_cbr_stereo_44k.mp3", 4, [
            TIT2(encoding=3, text=["Pictures"]),
            APIC(encoding=3, mime="image/webp", type=3, desc="", data=JPEG),
            APIC(encoding=0, mime="IMAGE/PNG", type=4, desc="back", data=PNG),
            APIC(encoding=3, mime="image/jpeg", type=3, desc="front", data=JPEG),
        ], 128, "accept"),
        ("only-txxx", "mp3_vbr_mono_44k.mp3", 3, [TXXX(encoding=1, desc="Artist", text=["Only TXXX"])], 32, "accept"),
        ("private-only", "mp3_vbr_mono_44k.mp3", 4, [PRIV(owner="owner", data=b"\x00\x01")], 32, "either"),
        ("numeric-genre", "mp3_cbr_stereo_44k.mp3", 3, [TIT2(encoding=0, text=["G"]), TCON(encoding=0, text=["(17)"])], 32, "either"),
        ("numeric-genre-2", "mp3_cbr_stereo_44k.mp3", 4, [TIT2(encoding=3, text=["G"]), TCON(encoding=3, text=["17", "Rock"])], 32, "either"),
        ("no-tag", "mp3_vbr_mono_44k.mp3", 4, [], 0, "either"),
    ]
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    for name, fixture, version, frames, padding, expected in variants():
        path = os.path.join(folder, name + ".mp3")
        shutil.copyfile(os.path.join(AUDIO, fixture), path)
        ID3(path).delete(path)
        if frames:
            tag = ID3()
            for frame in frames:
                tag.add(frame)
            tag.save(path, v2_version=version, v1=0, padding=lambda info, p=padding: p)
        print(f"{path}\t{expected}")


if __name__ == "__main__":
    main()
